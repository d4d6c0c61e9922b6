"""Reading JSON input files with errors that name the file, line and column."""

from __future__ import annotations

import json
import os

from .errors import InputError, find_line


class JsonDocument:
    """A parsed JSON file that remembers its text, to locate entries in errors."""

    def __init__(self, path: str, text: str, data):
        self.path = path
        self.text = text
        self.data = data

    def error(self, message: str, needle: str | None = None) -> InputError:
        """An InputError at the first line that mentions `needle` (a key or value)."""
        line = find_line(self.text, json.dumps(needle)) if needle is not None else None
        return InputError(self.path, message, line=line)


def read_json(path: str | os.PathLike) -> JsonDocument:
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg}", exc.lineno, exc.colno) from None
    return JsonDocument(path, text, data)


def write_json(path: str | os.PathLike, data) -> None:
    """Write atomically (temp file + rename) so an interrupted write loses nothing."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
