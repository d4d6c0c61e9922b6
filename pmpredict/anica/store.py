"""The result cache of AnICA campaigns: each predictor's answer for each block, in SQLite.

A key is (what the answer depends on, the block's text): the predictor's identity (tool version,
model contents, CPU) and the instruction lines, both as digests. Answers of a predictor that
changed are not read back: its identity differs. Only the campaign's own process writes.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3

from pmpredict.anica.predictors import Outcome
from pmpredict.errors import InputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    predictor TEXT NOT NULL,
    block TEXT NOT NULL,
    cycles REAL,
    failure TEXT,
    message TEXT,
    PRIMARY KEY (predictor, block)
)"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def block_digest(lines) -> str:
    return _digest("\n".join(lines))


class AnswerStore:
    """get_many / put_many of Outcomes by (predictor identity, block lines)."""

    def __init__(self, path: str):
        self.path = path
        try:
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            self.db = sqlite3.connect(path)
            self.db.execute(_SCHEMA)
            self.db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise InputError(path, f"cannot open the result cache: {exc}") from None

    def get_many(self, identity: str, blocks) -> list[Outcome | None]:
        who = _digest(identity)
        out = []
        for lines in blocks:
            row = self.db.execute("SELECT cycles, failure, message FROM answers "
                                  "WHERE predictor = ? AND block = ?",
                                  (who, block_digest(lines))).fetchone()
            out.append(None if row is None else Outcome(row[0], row[1], row[2] or ""))
        return out

    def put_many(self, identity: str, blocks, outcomes) -> None:
        who = _digest(identity)
        rows = [(who, block_digest(lines), o.cycles, o.failure, o.message)
                for lines, o in zip(blocks, outcomes)
                if o.failure != "timeout"]          # a timeout may pass another time
        try:
            self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)", rows)
            self.db.commit()
        except sqlite3.Error as exc:
            raise InputError(self.path, f"cannot write the result cache: {exc}") from None

    def close(self) -> None:
        self.db.close()
