"""The exporters `pmpredict export --format` offers.

Adding one: a module under exporters/ that builds an `exporter.Exporter` (importing its
renderer only inside `export`, as osaca_entry.py does), and its line in EXPORTERS below.
"""

from __future__ import annotations

from pmpredict.exporters.exporter import Exporter
from pmpredict.exporters.llvm_entry import LLVM
from pmpredict.exporters.osaca_entry import OSACA

# in the order of `--format`'s choices and of the command's help
EXPORTERS: tuple[Exporter, ...] = (
    OSACA,
    LLVM,
)


# the functions below read EXPORTERS when called, so a test can replace it

def names() -> list[str]:
    return [e.name for e in EXPORTERS]


def get(name: str) -> Exporter:
    """The exporter registered as `name` (argparse has checked it is one)."""
    return next(e for e in EXPORTERS if e.name == name)
