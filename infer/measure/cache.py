"""On-disk result cache keyed by content hash, so an interrupted measurement resumes.

One append-only JSON-lines file per CPU in the cache directory; each line is
``{"key": sha256, "cycles": c or null, "error": reason or null}``. A line is
flushed as soon as its experiment is measured, so Ctrl-C loses at most the
experiment in flight. A torn last line (killed mid-write) is ignored on load.
The key covers the experiment's multiset, the harness version, the measurement
parameters and the CPU, so any change there measures afresh.
"""

from __future__ import annotations

import hashlib
import json
import os

from .codegen import HARNESS_VERSION


def experiment_key(counts, cpu: str, params: dict) -> str:
    payload = json.dumps({"harness": HARNESS_VERSION, "cpu": cpu, "params": params,
                          "counts": sorted([f, int(n)] for f, n in counts)},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class ResultCache:
    """Results of one CPU in `cache_dir`; `None` directory disables caching."""

    def __init__(self, cache_dir: str | None, cpu: str):
        self.entries: dict[str, dict] = {}
        self.path = None
        if cache_dir:
            os.makedirs(cache_dir, exist_ok=True)
            tag = hashlib.sha256(cpu.encode()).hexdigest()[:12]
            self.path = os.path.join(cache_dir, f"measure-{tag}.jsonl")
            self._load()

    def _load(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path) as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                    self.entries[entry["key"]] = entry

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def put(self, key: str, cycles: float | None, error: str | None = None, **extra) -> None:
        entry = {"key": key, "cycles": cycles, "error": error, **extra}
        self.entries[key] = entry
        if self.path:
            with open(self.path, "a") as fh:
                fh.write(json.dumps(entry, separators=(",", ":")) + "\n")


def default_cache_dir() -> str:
    """$PMPREDICT_CACHE, else $XDG_CACHE_HOME/pmpredict, else ~/.cache/pmpredict."""
    if os.environ.get("PMPREDICT_CACHE"):
        return os.environ["PMPREDICT_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pmpredict")
