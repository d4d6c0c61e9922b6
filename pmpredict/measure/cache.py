"""On-disk result cache keyed by content hash, so an interrupted measurement resumes.

One SQLite database per CPU in the cache directory (WAL mode), one row per result:
``key`` (a SHA-256) -> the result as JSON (``{"cycles": c or null, "error": reason or
null, ...}``). Every result is committed as soon as it is measured, so Ctrl-C, SIGTERM
or a kill loses at most the kernel in flight; SQLite's journal makes a write that is cut
short vanish instead of corrupting the file, and several processes (two measurements
sharing a cache) can write at once. The key covers what was measured (an experiment's
multiset or a block's text), the harness version, the measurement parameters and the
CPU, so any change there measures afresh. A JSON-lines cache of an earlier version
(``measure-<cpu>.jsonl``) is imported once and renamed ``.jsonl.imported``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time

from pmpredict.errors import InputError
from pmpredict.measure.codegen import BLOCK_LOOP_VERSION, HARNESS_VERSION
from pmpredict.userdirs import cache_dir

BUSY_TIMEOUT_S = 60.0        # how long a writer waits for another one to finish


def _digest(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def experiment_key(counts, cpu: str, params: dict) -> str:
    return _digest({"harness": HARNESS_VERSION, "cpu": cpu, "params": params,
                    "counts": sorted([f, int(n)] for f, n in counts)})


def block_key(syntax: str, lines, cpu: str, params: dict) -> str:
    return _digest({"harness": HARNESS_VERSION, "block_loop": BLOCK_LOOP_VERSION, "cpu": cpu,
                    "params": params, "kind": "block", "syntax": syntax, "lines": list(lines)})


class ResultCache:
    """Results of one CPU in `cache_dir`; a `None` directory disables caching."""

    def __init__(self, cache_dir: str | None, cpu: str):
        self.path = None
        self._db = None
        self._memory: dict[str, dict] = {}
        if cache_dir:
            tag = hashlib.sha256(cpu.encode()).hexdigest()[:12]
            self.path = os.path.join(cache_dir, f"measure-{tag}.sqlite")
            try:
                os.makedirs(cache_dir, exist_ok=True)
                self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                           isolation_level=None)
                self._set_wal()
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS results "
                                 "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            except (OSError, sqlite3.Error) as exc:
                # a cache that cannot be opened (a directory in its place, a damaged file, a
                # read-only disk) is the user's to fix: said in one line, not a traceback
                raise InputError(self.path, f"cannot open the measurement cache: {exc}") \
                    from None
            self._import_json_lines(os.path.join(cache_dir, f"measure-{tag}.jsonl"))

    def _set_wal(self) -> None:
        """Write-ahead logging, so readers never wait for a writer. Changing the journal mode
        returns "database is locked" at once, without SQLite's busy handler, while another
        process writes: retried here for as long as a write would wait."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _import_json_lines(self, path: str) -> None:
        if not os.path.exists(path):
            return
        rows = []
        with open(path) as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue                                   # a torn last line
                if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                    value = {k: v for k, v in entry.items() if k != "key"}
                    rows.append((entry["key"], json.dumps(value, separators=(",", ":"))))
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR IGNORE INTO results VALUES (?, ?)", rows)
        try:
            os.replace(path, path + ".imported")
        except OSError:
            pass                                               # another process imported it

    def get(self, key: str) -> dict | None:
        if self._db is None:
            return self._memory.get(key)
        row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, cycles: float | None, error: str | None = None, **extra) -> None:
        entry = {"cycles": cycles, "error": error, **extra}
        if self._db is None:
            self._memory[key] = entry
            return
        self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?)",
                         (key, json.dumps(entry, separators=(",", ":"))))

    def __len__(self) -> int:
        if self._db is None:
            return len(self._memory)
        return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def default_cache_dir() -> str:
    """The user's pmpredict cache directory (pmpredict.userdirs.cache_dir)."""
    return cache_dir()
