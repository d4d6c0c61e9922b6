"""A report's default JSON (summary and instructions) as one line of text, written directly.

The same bytes as `json` encoding `views.to_json(report)` with separators (",", ":"), which
tests/test_jsonline.py checks on every example and thousands of BHive blocks. Written
directly because the instruction rows are most of a record and repeat across kernels: what
depends on an instruction's text, form and annotation alone is encoded once and reused, and
only the line, pressure, latency, marks and slack are encoded per kernel. For many kernels
(`predict --jsonl`) this halves the cost of the JSON.
"""

from __future__ import annotations

import json

from pmpredict.views import instructions, summary
from pmpredict.views.common import number

# the predictor's results this view reads: the summary's and the instruction table's
READS = tuple(dict.fromkeys(summary.READS + instructions.READS))

# the encoder of every JSON line: a report's JSON is a tree (no cycle to check for)
ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)
_encode = ENCODER.encode

# fragments already encoded, by what they depend on; bounded by the distinct instructions
# (texts, forms, uops) met, as the Predictor's own per-instruction memo is
_heads: dict[tuple, tuple[str, str]] = {}
_uops: dict[tuple, str] = {}
_tails: dict[tuple, str] = {}
_names: dict[str, str] = {}
# per-kernel values seen before (pressures, latencies, slacks), up to a bound: a corpus has
# a few thousand distinct ones
MEMO_LIMIT = 100_000
_numbers: dict = {}
_pressures: dict[tuple, str] = {}


def encode(report) -> str:
    """The report's summary and instruction rows as JSON text (no newline)."""
    head = _encode(summary.json(report))
    return f"{head[:-1]},{_rows(report)}}}"


def _name(port: str) -> str:
    s = _names.get(port)
    if s is None:
        s = _names[port] = _encode(port)
    return s


def _value(x) -> str:
    """number(x) as the encoder writes it (the same few values recur: each is written once)."""
    s = _numbers.get(x)
    if s is None:
        y = number(x)
        s = "null" if y is None else repr(y)
        if len(_numbers) < MEMO_LIMIT:
            _numbers[x] = s
    return s


def _pressure(pressure: dict) -> str:
    key = tuple(pressure.items())
    s = _pressures.get(key)
    if s is None:
        s = ",".join(f"{_name(p)}:{_value(x)}" for p, x in key)
        if len(_pressures) < MEMO_LIMIT:
            _pressures[key] = s
    return s


def _rows(report) -> str:
    """`"instructions":[...],"unmatched":[...]`, as instructions.json encodes them."""
    ports = report.ports
    out = []
    for r in report.rows:
        a = r.annotated
        heads = _heads.get((r.text, r.form, r.key))
        if heads is None:
            heads = _heads[(r.text, r.form, r.key)] = (
                f'"text":{_encode(r.text)},"form":{_encode(r.form)},"uops":',
                f',"key":{_encode(r.key)}')
        uops_key = (a.uops, ports) if a is not None else ((), ports)
        uops = _uops.get(uops_key)
        if uops is None:
            uops = _uops[uops_key] = _encode([{"ports": names, "count": count}
                                              for names, count in r.uops])
        pressure = _pressure(r.pressure)
        out.append(f'{{"line":{r.line!r},{heads[0]}{uops},"pressure":{{{pressure}}}{heads[1]},'
                   f'"latency":{_value(r.latency) if a is not None else "null"},'
                   f'"critical_path":{"true" if r.on_critical_path else "false"},'
                   f'"loop_carried":{"true" if r.on_loop_carried else "false"},'
                   f'"slack":{_value(r.slack)},{_tail(r)}}}')
    unmatched = [{"line": r.line, "text": r.text, "key": r.key, "reason": r.reason}
                 for r in report.unmatched]
    return f'"instructions":[{",".join(out)}],"unmatched":{_encode(unmatched)}'


def _tail(r) -> str:
    """The keys after "slack": what depends on the instruction's semantics, match and
    annotation, encoded once for each combination."""
    a = r.annotated
    sem = a.semantics if a is not None else None
    key = (sem.notes if sem else None, sem.beyond_model if sem else None, r.form is None,
           r.source, r.approx,
           (tuple(a.assumed), a.eliminated, a.fused, a.idiom) if a is not None else None)
    tail = _tails.get(key)
    if tail is None:
        entry = instructions.row_json(r)
        del entry["line"]
        full = _encode(entry)
        # everything after the slack ("notes" is the key after it; no later key of the row
        # has that name, and a string's quotes are escaped)
        tail = _tails[key] = full[full.rindex(',"notes":') + 1:-1]
    return tail
