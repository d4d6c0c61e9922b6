"""`pmpredict anica`'s report: text, JSON (docs/FORMATS.md) and one self-contained HTML page.

Discoveries come ranked (most sampled blocks covered first, then the larger mean disagreement);
each shows its abstract description, how often sampled members stayed interesting, and up to
three witness blocks with every predictor's cycles (a block's lines as the predictors saw them:
a memory-mode block's `mov` setting a base to its constant first). Failures of predictors are a
finding of their own and are listed apart.
"""

from __future__ import annotations

import html as html_escape

from pmpredict.views.common import number

REPORT_FORMAT = "pmpredict-anica"
REPORT_VERSION = 1
WITNESSES = 3


def _cycles(row) -> list:
    return [number(c, 4) for c in row]


def discovery_json(d, labels: list[str], rank: int) -> dict:
    return {
        "rank": rank,
        "description": d.description,
        "forms": list(d.forms),
        "mnemonics": list(d.mnemonics),
        "interesting_ratio": number(d.interesting_ratio, 4),
        "samples": d.samples,
        "mean_disagreement": number(d.mean_disagreement, 4),
        "covered": d.covered,
        "witnesses": [{"instructions": list(block.lines()),
                       "cycles": dict(zip(labels, _cycles(row)))}
                      for block, row in d.witnesses[:WITNESSES]],
        "abstract": d.abstract.to_json(),
    }


def json(outcome) -> dict:
    labels = outcome.labels
    return {
        "format": REPORT_FORMAT, "version": REPORT_VERSION,
        "predictors": outcome.predictors,
        "reference": labels[0],
        "config": outcome.config,
        "schemes": outcome.schemes,
        "counters": outcome.counters,
        "elapsed_s": number(outcome.elapsed_s, 1),
        "ended": outcome.ended,
        "checkpoint": outcome.checkpoint,
        "discoveries": [discovery_json(d, labels, i + 1)
                        for i, d in enumerate(outcome.discoveries)],
        "failures": outcome.failures,
    }


def _fmt(c) -> str:
    return "failed" if c is None or c != c else f"{c:.2f}"


def _mode(outcome) -> str:
    """" memory-mode" for a campaign of `--blocks memory`, else nothing."""
    mode = outcome.config.get("blocks", "standard")
    return "" if mode == "standard" else f" {mode}-mode"


def text(outcome) -> str:
    labels = outcome.labels
    c = outcome.counters
    out = [f"AnICA: {labels[0]} against {', '.join(labels[1:])}",
           f"{c.get('random_blocks', 0)} random{_mode(outcome)} blocks from {outcome.schemes} "
           f"instruction forms, "
           f"{c.get('interesting', 0)} interesting (relative difference >= "
           f"{outcome.config.get('threshold')}); {c.get('calls', 0)} blocks evaluated in "
           f"{outcome.elapsed_s:.0f} s"
           + (" (interrupted)" if outcome.ended == "interrupted" else ""),
           ""]
    if not outcome.discoveries:
        out.append("No discoveries: no sampled block was interesting.")
    for i, d in enumerate(outcome.discoveries, 1):
        out.append(f"#{i}  {d.description}")
        out.append(f"    covers {d.covered} random interesting blocks; "
                   f"{d.interesting_ratio:.0%} of {d.samples} sampled members interesting; "
                   f"mean relative difference {d.mean_disagreement:.2f}")
        for block, row in d.witnesses[:WITNESSES]:
            cycles = "  ".join(f"{label} {_fmt(x)}" for label, x in zip(labels, row))
            out.append(f"    witness: {' ; '.join(block.lines())}")
            out.append(f"             {cycles}")
        out.append("")
    if outcome.failures:
        out.append("Predictor failures (not counted as disagreements):")
        for f in outcome.failures:
            first = f["examples"][0] if f["examples"] else {"block": [], "message": ""}
            out.append(f"  {f['predictor']}: {f['count']} x {f['kind']}, e.g. "
                       f"{' ; '.join(first['block'])}: {first['message']}")
    return "\n".join(out).rstrip() + "\n"


_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:64em;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin:1.6em 0 .3em}
.meta{color:#555}.disc{border:1px solid #ccd;border-radius:6px;padding:.6em 1em;margin:1em 0}
.desc{font-family:ui-monospace,monospace;background:#f3f4fa;padding:.3em .5em;border-radius:4px}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccd;padding:.2em .6em;
text-align:right}td.code{text-align:left;font-family:ui-monospace,monospace;white-space:pre}
.bar{display:inline-block;height:.7em;background:#4a6fd8;vertical-align:middle}
.fail{color:#a00}
"""


def html(outcome) -> str:
    """One page, no external fetches: styles inline, no scripts."""
    esc = html_escape.escape
    labels = outcome.labels
    c = outcome.counters
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>AnICA: {esc(labels[0])} vs {esc(', '.join(labels[1:]))}</title>",
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>Where {esc(labels[0])} and {esc(', '.join(labels[1:]))} disagree</h1>",
             f"<p class='meta'>{c.get('random_blocks', 0)} random{esc(_mode(outcome))} blocks "
             f"from {outcome.schemes} "
             f"instruction forms; {c.get('interesting', 0)} interesting (relative difference "
             f"&ge; {esc(str(outcome.config.get('threshold')))}); {c.get('calls', 0)} blocks "
             f"evaluated in {outcome.elapsed_s:.0f} s; seed {esc(str(outcome.config.get('seed')))}"
             f"{' (interrupted)' if outcome.ended == 'interrupted' else ''}.</p>"]
    if not outcome.discoveries:
        parts.append("<p>No discoveries: no sampled block was interesting.</p>")
    top = max((d.covered for d in outcome.discoveries), default=1) or 1
    for i, d in enumerate(outcome.discoveries, 1):
        parts.append(f"<div class='disc' id='d{i}'><h2>#{i}</h2>"
                     f"<p class='desc'>{esc(d.description)}</p>"
                     f"<p>covers {d.covered} random interesting blocks "
                     f"<span class='bar' style='width:{8 * d.covered / top:.2f}em'></span>; "
                     f"{d.interesting_ratio:.0%} of {d.samples} sampled members interesting; "
                     f"mean relative difference {d.mean_disagreement:.2f}</p>")
        parts.append("<table><tr><th>witness</th>" +
                     "".join(f"<th>{esc(x)}</th>" for x in labels) + "</tr>")
        for block, row in d.witnesses[:WITNESSES]:
            parts.append(f"<tr><td class='code'>{esc(chr(10).join(block.lines()))}</td>" +
                         "".join(f"<td>{esc(_fmt(x))}</td>" for x in row) + "</tr>")
        parts.append("</table></div>")
    if outcome.failures:
        parts.append("<h2>Predictor failures</h2><table><tr><th>predictor</th><th>kind</th>"
                     "<th>blocks</th><th>example</th></tr>")
        for f in outcome.failures:
            first = f["examples"][0] if f["examples"] else {"block": [], "message": ""}
            parts.append(f"<tr><td class='code'>{esc(f['predictor'])}</td><td class='fail'>"
                         f"{esc(f['kind'])}</td><td>{f['count']}</td><td class='code'>"
                         f"{esc(' ; '.join(first['block']))}\n{esc(first['message'])}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)
