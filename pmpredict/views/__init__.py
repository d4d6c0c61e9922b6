"""Views of a predict.Report, each rendering text and JSON (as llvm-mca's views do).

    summary       cycles, the three bounds, the verdict, coverage, what was assumed
    instructions  per instruction: port pressure (one optimal schedule), latency, critical
                  path (CP) and loop-carried chain (LCD) marks, slack   (OSACA-style table)
    timeline      dispatch / execute / retire of the first iterations   (llvm-mca -timeline)
    bottlenecks   what each bottleneck costs and how they interact      (Fields' criticality)

Each view of a Report names the predictor's results it reads in READS (stages and derived
results: predict/predictor.py's STAGES and DERIVED); one asks for a result by name,
report.stage(name) or report.derived(name), or reads the Report's attributes, which read them.
"""

from __future__ import annotations

from pmpredict.views import bottlenecks, instructions, summary, timeline

VIEWS = {"summary": summary, "instructions": instructions, "timeline": timeline,
         "bottlenecks": bottlenecks}
DEFAULT_VIEWS = ("summary", "instructions")


def render_text(report, views=DEFAULT_VIEWS) -> str:
    parts = [VIEWS[name].text(report) for name in views]
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def to_json(report, views=()) -> dict:
    """The report as JSON: summary and instructions always (the stable keys), the others on
    request."""
    out = {}
    for name in dict.fromkeys(("summary", "instructions") + tuple(views)):
        out.update(VIEWS[name].json(report))
    return out
