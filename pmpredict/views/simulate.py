"""View of `pmpredict simulate`: one row per experiment (text), {"predictions": [...]} (JSON)."""

from __future__ import annotations

from pmpredict.views.common import finite


def json(result) -> dict:
    rows = []
    for p in result.predictions:
        row = {"index": p.index, "cycles": finite(p.cycles), "bottleneck": list(p.bottleneck)}
        if p.error:
            row["error"] = p.error
        if p.measured is not None:
            row["measured"] = finite(p.measured)
        rows.append(row)
    return {"model": result.model, "predictions": rows}


def text(result) -> str:
    lines = [f"{'#':>5} {'cycles':>8} {'measured':>9}  bottleneck"]
    for p in result.predictions:
        cycles = "-" if p.cycles is None else f"{p.cycles:.3f}"
        measured = "-" if p.measured is None else f"{p.measured:.3f}"
        what = p.error or "{" + ",".join(p.bottleneck) + "}"
        lines.append(f"{p.index:5d} {cycles:>8} {measured:>9}  {what}")
    return "\n".join(lines) + "\n"
