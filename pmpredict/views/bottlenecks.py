"""The bottleneck view: Fields' cost of each bottleneck, the interaction costs of the
costliest pairs, and the composition of the simulated run's critical path.

cost(e)      cycles per iteration saved when e is ideal (a chain with latency 0, a port group
             without limit, an unlimited front end or window)
icost(a, b)  cost(a and b) - cost(a) - cost(b): > 0 parallel (fix both to gain), < 0 serial
             (fixing one gains most of it), 0 independent
"""

from __future__ import annotations

from pmpredict.views.common import number

# the predictor's results this view reads (predictor.STAGES and DERIVED)
READS = ("simulated", "criticality")


def text(report) -> str:
    crit = report.criticality
    if crit is None or report.cycles is None:
        return ""
    out = [f"Bottlenecks (simulated {crit.base:.2f} cycles per iteration; cost = cycles saved "
           "if ideal):", ""]
    width = max([10] + [len(c.name) for c in crit.classes])
    out.append(f"  {'what':<{width}}  {'cost':>6}")
    for c in sorted(crit.classes, key=lambda c: -crit.cost.get(c.name, 0.0)):
        out.append(f"  {c.name:<{width}}  {crit.cost.get(c.name, 0.0):6.2f}")
    if crit.icost:
        out.append("")
        out.append("Interactions: icost(a, b) = cost(a and b) - cost(a) - cost(b)")
        for (a, b), v in sorted(crit.icost.items(), key=lambda kv: -abs(kv[1])):
            kind = "parallel" if v > 1e-9 else "serial" if v < -1e-9 else "independent"
            out.append(f"  {a} + {b}: {v:+.2f} ({kind})")
    if crit.path_share:
        out.append("")
        parts = ", ".join(f"{k} {v * 100:.0f}%" for k, v in
                          sorted(crit.path_share.items(), key=lambda kv: -kv[1]))
        out.append(f"Critical path of the run: {parts}")
    return "\n".join(out) + "\n"


def json(report) -> dict:
    """Fields' costs: a simulation per bottleneck and pair, so only on request (--bottlenecks)."""
    crit = report.criticality
    if crit is None:
        return {"bottlenecks": [], "interactions": [], "critical_path_share": {}}
    return {"bottlenecks": [
                {"name": c.name, "kind": c.kind, "cost": number(crit.cost.get(c.name, 0.0))}
                for c in sorted(crit.classes, key=lambda c: -crit.cost.get(c.name, 0.0))],
            "interactions": [{"a": a, "b": b, "icost": number(v)}
                             for (a, b), v in crit.icost.items()],
            "critical_path_share": {k: number(v) for k, v in crit.path_share.items()}}
