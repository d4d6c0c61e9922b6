"""Reading JSON input files with errors that name the file, line and column; writing JSON.

Input is strict JSON: UTF-8, no NaN / Infinity (Python's json module accepts both, no other
reader does), and nested at most MAX_NESTING levels (Python's parser recurses: a deeper
document would raise RecursionError). Output is written atomically and never holds NaN.
"""

from __future__ import annotations

import json
import math
import os
import re
from itertools import accumulate

from pmpredict.errors import InputError, find_line, text_position
from pmpredict.formats.files import read_text, write_atomic
from pmpredict.model.validate import name_problem

# pmpredict's own formats nest 6 levels; a deeper document is not one of them
MAX_NESTING = 100
# a JSON string, or a token that matters outside strings: brackets and the non-JSON constants
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|NaN|-?Infinity')
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonDocument:
    """A parsed JSON file that remembers its text, to locate entries in errors."""

    def __init__(self, path: str, text: str, data):
        self.path = path
        self.text = text
        self.data = data

    def error(self, message: str, needle: str | None = None) -> InputError:
        """An InputError at the first line that mentions `needle` (a key or value)."""
        line = find_line(self.text, json.dumps(needle)) if isinstance(needle, str) else None
        return InputError(self.path, message, line=line)

    def name_list(self, names, where: str) -> list[str]:
        """`names` if it is a list of names (form strings), else an InputError about `where`."""
        if not isinstance(names, list):
            raise self.error(f"{where} must be a list of form strings", where.strip("'"))
        for name in names:
            why = name_problem(name)
            if why:
                raise self.error(f"{where}: a form name {why}", name)
        return names


def structure_problem(text: str) -> tuple[str, int] | None:
    """(what is wrong, offset) if the text nests deeper than MAX_NESTING or uses NaN /
    Infinity outside a string; None otherwise. A scan, no recursion: first over the text
    with its strings emptied (a model file is mostly strings), then, where that finds a
    problem, token by token for its offset."""
    bare = _STRINGS.sub('""', text)
    if "NaN" not in bare and "Infinity" not in bare and max(
            accumulate(map(_DEPTH.__getitem__, _BRACKETS.findall(bare))), default=0) <= MAX_NESTING:
        return None
    depth = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return f"nested more than {MAX_NESTING} levels deep", m.start()
        elif token in "]}":
            depth -= 1
        elif token[0] != '"':
            return f"{token} is not a JSON number (write null for a missing value)", m.start()
    return None


def parse_json(text: str, path: str) -> JsonDocument:
    problem = structure_problem(text)
    if problem:
        raise InputError(path, problem[0], *text_position(text, problem[1]))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:                         # structure_problem should have caught it
        raise InputError(path, "nested too deeply") from None
    return JsonDocument(path, text, data)


def read_json(path: str | os.PathLike) -> JsonDocument:
    path = os.fspath(path)
    return parse_json(read_text(path), path)


def finite_only(data):
    """`data` with every NaN or infinite number replaced by null (JSON has neither)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite_only(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_only(v) for v in data]
    return data


def rounded(x, digits: int):
    """A number of a JSON report: `x` as a float rounded to `digits` decimals, None kept."""
    return None if x is None else round(float(x), digits)


def dumps(data) -> str:
    """JSON text of pmpredict's output: indented, and never NaN or Infinity (null instead)."""
    return json.dumps(finite_only(data), indent=1, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, data, what: str = "output") -> None:
    """Write atomically (temp file + rename) so an interrupted write loses nothing."""
    write_atomic(path, dumps(data), what)
