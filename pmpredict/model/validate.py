"""What a number or a name read from a file or the command line may be: one set of rules.

Each `*_problem` function returns why a value is unacceptable (a phrase that completes
"<what> ..."), or None. The loaders (pmpredict.formats), the exporters and the CLI all use
these, so a value is accepted or refused the same way everywhere.

The bounds keep every later computation finite: the simulator divides by counts and cycles,
the inference takes logarithms and ratios of cycles, HiGHS fails on coefficients near 1e32,
and the exporters print numbers that their readers parse back. They are far beyond any real
machine (no instruction has a million uops or a latency of a million cycles).
"""

from __future__ import annotations

import math

MAX_PORTS = 62                 # port masks are int64 bit sets
MAX_COUNT = 1_000_000          # uops of one kind per form; instances of a form per experiment
MAX_LATENCY = 1_000_000.0      # cycles
MIN_CYCLES = 1e-6              # measured cycles of an experiment
MAX_CYCLES = 1e9
MAX_R_MAX = 1_000.0            # instructions per cycle
MIN_R_MAX = 1e-3


def is_number(value) -> bool:
    """An int or float from a file (a JSON true/false is not a number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_problem(value, low: float, high: float, *, low_open: bool = False,
                   integer: bool = False) -> str | None:
    """Why `value` is not a finite number in [low, high] ((low, high] with low_open)."""
    kind = "an integer" if integer else "a finite number"
    if not is_number(value) or (integer and not isinstance(value, int)):
        return f"must be {'an integer' if integer else 'a number'}, not {value!r}"
    if not math.isfinite(value) or value < low or (low_open and value == low) or value > high:
        lo = f"> {low:g}" if low_open else f">= {low:g}"
        return f"must be {kind} {lo} and <= {high:g}, not {value!r}"
    return None


def latency_problem(value) -> str | None:
    return number_problem(value, 0.0, MAX_LATENCY)


def count_problem(value) -> str | None:
    """A uop count or an experiment's multiplicity of a form: an integer >= 1."""
    return number_problem(value, 1, MAX_COUNT, integer=True)


def cycles_problem(value) -> str | None:
    """Measured cycles of an experiment: positive, finite, and not absurdly small or large."""
    return number_problem(value, MIN_CYCLES, MAX_CYCLES)


def r_max_problem(value) -> str | None:
    """The peak rate R_max (instructions per cycle); None (no cap) is fine."""
    if value is None:
        return None
    return number_problem(value, MIN_R_MAX, MAX_R_MAX)


def name_problem(name) -> str | None:
    """A port, form or model name: non-empty printable text (a newline or NUL in a name
    would end a line or a string of every file format pmpredict writes)."""
    if not isinstance(name, str):
        return f"must be a string, not {name!r}"
    if not name:
        return "must not be empty"
    if not name.isprintable():
        bad = next(ch for ch in name if not ch.isprintable())
        return f"must be printable text, not {name!r} (contains {bad!r})"
    return None


def port_list_problem(ports) -> str | None:
    """A model's port list: 1 to MAX_PORTS distinct names (strings, or integers as in PMEvo)."""
    if not isinstance(ports, (list, tuple)) or not ports:
        return "must be a non-empty list of port names"
    if len(ports) > MAX_PORTS:
        return f"has {len(ports)} ports; at most {MAX_PORTS} are supported"
    for p in ports:
        if isinstance(p, int) and not isinstance(p, bool):
            continue
        why = name_problem(p)
        if why:
            return f"port name {why}"
    names = [str(p) for p in ports]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        return f"lists a port twice: {twice!r}"
    return None


def json_value_problem(value, depth: int = 0) -> str | None:
    """Why `value` (read from YAML, say) cannot be written as JSON, or None: only objects with
    string keys, lists, strings, finite numbers, booleans and null."""
    if depth > 100:
        return "is nested too deeply"
    if value is None or isinstance(value, (bool, str)):
        return None
    if is_number(value):
        return None if math.isfinite(value) else f"holds {value!r}, which JSON cannot write"
    if isinstance(value, (list, tuple)):
        return next((w for w in (json_value_problem(v, depth + 1) for v in value) if w), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "has a key that is not a string"
        return next((w for w in (json_value_problem(v, depth + 1) for v in value.values()) if w),
                    None)
    return f"holds {type(value).__name__} {str(value)[:40]!r}, which JSON cannot write"
