"""The timeline of the first iterations, drawn as llvm-mca's -timeline draws it: per
instruction instance, D dispatch, = waiting, e executing (from issue for its latency), E the
cycle its result is there, - waiting to retire, R retired."""

from __future__ import annotations

from pmpredict.views.common import cut

# the predictor's results this view reads (predictor.STAGES and DERIVED)
READS = ("rows", "annotated", "full run")

ITERATIONS = 3
MAX_CYCLES = 100


def _instances(report, iterations):
    run = report.derived("full run")  # dispatch and issue times too (a lean run simulates again)
    if run is None:
        return []
    n = run.n
    out, seen = [], set()
    for k in range(min(iterations, run.iterations)):
        seen.clear()
        for j in range(n):
            i = report.node_rows[j]
            if i in seen:
                continue              # an address update: shown with its instruction
            seen.add(i)
            t = k * n + j
            out.append((k, i, run.dispatch[t], run.issue[t], run.result[t], run.retire[t]))
    return out


def text(report, iterations: int = ITERATIONS) -> str:
    rows = _instances(report, iterations)
    if not rows:
        return ""
    last = min(MAX_CYCLES, int(max(r[5] for r in rows)) + 1)
    tw = min(36, max(len(r.text) for r in report.rows))
    out = [f"Timeline of the first {iterations} iterations (cycles 0-{last - 1}; D dispatch, "
           "= waiting, e executing, E result, - waiting to retire, R retire):", ""]
    ruler = "".join(str(c // 10 % 10) if c % 10 == 0 else " " for c in range(last))
    out.append(f"{'[it,i]':>8}  {'':<{tw}}  {ruler}")
    for k, i, d, s, r, c in rows:
        cells = []
        for cyc in range(last):
            if cyc == int(d):
                ch = "D"
            elif cyc == int(c):
                ch = "R"
            elif cyc < d or cyc > c:
                ch = " "
            elif cyc < int(s):
                ch = "="
            elif cyc < int(r):
                ch = "e"
            elif cyc == int(r):
                ch = "E"
            else:
                ch = "-"
            cells.append(ch)
        out.append(f"[{k},{i:>2}]".rjust(8) + f"  {cut(report.rows[i].text, tw):<{tw}}  "
                   + "".join(cells).rstrip())
    return "\n".join(out) + "\n"


def json(report, iterations: int = ITERATIONS) -> dict:
    return {"timeline": [{"iteration": k, "index": i, "line": report.rows[i].line,
                          "dispatch": d, "issue": s, "result": r, "retire": c}
                         for k, i, d, s, r, c in _instances(report, iterations)]}
