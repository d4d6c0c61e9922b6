"""User-facing input errors.

Every bad input (malformed file, unknown port, asm line the grammar rejects)
raises InputError; the CLI turns it into one line
``pmpredict: error: FILE:LINE[:COL]: message`` and exit status 2.
Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class InputError(Exception):
    """A problem with user input, located as precisely as we know."""

    def __init__(self, path: str | None, message: str, line: int | None = None,
                 column: int | None = None):
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        super().__init__(self.location() + ": " + message if self.location() else message)

    def location(self) -> str:
        parts = [str(self.path) if self.path is not None else "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


def text_position(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of character offset `pos` in `text`."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def find_line(text: str, needle: str) -> int | None:
    """1-based line of the first occurrence of `needle` (to locate a JSON entry), or None."""
    pos = text.find(needle)
    if pos < 0:
        return None
    return text.count("\n", 0, pos) + 1
