"""pmpredict: port-mapping inference (PMEvo) and basic-block throughput prediction."""

import os as _os
import sys as _sys

from pmpredict import userdirs as _userdirs

__version__ = "0.1.0"


def numba_cache_dir(package_dir: str, environ) -> str | None:
    """Where numba should keep pmpredict's compiled functions, or None for beside the sources.

    Numba caches beside the sources by default. In an installed copy that is inside
    site-packages, where files pip never recorded outlive `pip uninstall` and leave a
    `pmpredict` folder without `__init__.py`: a namespace package that shadows a later
    editable install (`cannot import name '__version__' from 'pmpredict'`). A source tree
    keeps the default, so every process of a checkout shares one cache."""
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    parts = _os.path.normpath(_os.path.abspath(package_dir)).split(_os.sep)
    if "site-packages" not in parts and "dist-packages" not in parts:
        return None
    return _os.path.join(_userdirs.cache_dir(), "numba")


# Before any module of the package imports numba, whose configuration reads the environment once.
_numba_dir = numba_cache_dir(_os.path.dirname(__file__), _os.environ)
if _numba_dir is not None:
    _os.environ["NUMBA_CACHE_DIR"] = _numba_dir
    if "numba.core.config" in _sys.modules:  # numba came first: its configuration is read
        _sys.modules["numba.core.config"].CACHE_DIR = _numba_dir
