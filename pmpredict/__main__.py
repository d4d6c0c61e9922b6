import sys

from pmpredict.cli import main

sys.exit(main())
