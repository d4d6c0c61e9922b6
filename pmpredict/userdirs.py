"""Where pmpredict keeps what it computes for the user between runs."""

from __future__ import annotations

import os


def cache_dir() -> str:
    """$PMPREDICT_CACHE, else $XDG_CACHE_HOME/pmpredict, else ~/.cache/pmpredict."""
    if os.environ.get("PMPREDICT_CACHE"):
        return os.environ["PMPREDICT_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pmpredict")
