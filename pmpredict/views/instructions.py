"""The instruction table: port pressure of one optimal schedule, then latency, critical path
(CP), loop-carried chain (LCD) and slack per instruction, as OSACA prints them."""

from __future__ import annotations

from pmpredict.predict.annotate import LATENCY, LOAD_LATENCY
from pmpredict.views.common import BEYOND_MODEL_NAMES, cut, number

# the predictor's results this view reads (predictor.STAGES and DERIVED; "source": the input)
READS = ("source", "bounds", "rows")


def _flags(row) -> str:
    """What the table says of an instruction beyond its form (an atomic or a barrier is
    counted where the model measured what it costs: annotate.Annotated.ordered)."""
    a = row.annotated
    if a is None:
        return ""
    if a.eliminated:
        return "eliminated move"
    if a.idiom:
        return f"{a.idiom} idiom"
    if a.fused:
        return "fused with the previous"
    beyond = a.semantics.beyond_model
    if not beyond:
        return ""
    name = BEYOND_MODEL_NAMES.get(beyond, "beyond the model")
    if a.ordered is not None:
        return f"{name}: {a.ordered:g} cycles, one after another"
    return f"{name}: costs more"


def text(report) -> str:
    ports = list(report.ports)
    cw = max([4] + [len(p) for p in ports])
    tw = min(40, max([11] + [len(r.text) for r in report.rows]))
    out = ["Per instruction: port pressure in cycles per iteration (one optimal schedule),",
           "latency, on the critical path (CP) / the worst loop-carried chain (LCD), slack:", ""]
    head = (f"{'Line':>5}  {'Instruction':<{tw}}  " + " ".join(f"{p:>{cw}}" for p in ports)
            + "   Lat  CP LCD  Slack  Form")
    out.append(head)
    out.append("-" * len(head))
    covered = {id(r) for r in report.fused_unknown}      # a fused jump its pair stands for
    for r in report.rows:
        cells = " ".join(f"{r.pressure[p]:>{cw}.2f}" if r.pressure.get(p) else " " * cw
                         for p in ports)
        lat = f"{r.latency:5.1f}" if r.annotated else "    -"
        cp = " X" if r.on_critical_path else "  "
        lcd = "  X" if r.on_loop_carried else "   "
        slack = f"{r.slack:6.1f}" if r.slack is not None else "     -"
        if r.form is None:
            tag = "not in the model" if id(r) in covered else "X not in the model"
        else:
            tag = r.form_short + (" ~" if r.approx else "") + \
                (" +" if r.source == "fallback" else "")
        extra = _flags(r)
        if extra:
            tag += f" ({extra})"
        if r.annotated and r.annotated.assumed and r.form is not None:
            latency = any(n.what in (LATENCY, LOAD_LATENCY) for n in r.annotated.assumed)
            tag += " [latency assumed]" if latency else " [assumed]"
        out.append(f"{r.line:>5}  {cut(r.text, tw):<{tw}}  {cells}  {lat} {cp} {lcd} {slack}  {tag}")
    out.append("-" * len(head))
    total = " ".join(f"{report.port_load.get(p, 0.0):>{cw}.2f}" for p in ports)
    out.append(f"{'':>5}  {'Total':<{tw}}  {total}")
    if report.unmatched:
        out.append("")
        out.append("Not in the model (no uops counted):")
        for r in report.unmatched:
            out.append(f"{r.line:>5}  {r.text}   [{r.key}] {r.reason}")
    noted = [r for r in report.rows if r.annotated and r.annotated.semantics.notes]
    if noted:
        out.append("")
        out.append("Notes:")
        for r in noted:
            out.append(f"{r.line:>5}  {r.text}   {'; '.join(r.annotated.semantics.notes)}")
    taken = [r for r in report.rows if r.source == "fallback"]
    if taken:
        out.append("")
        out.append(f"From the fallback model {report.fallback.name} (+, its ports mapped onto "
                   f"those of {report.model}): lines {', '.join(str(r.line) for r in taken)}")
    approx = [r for r in report.rows if r.approx]
    if approx:
        out.append("")
        out.append("Approximate matches (~):")
        for r in approx:
            out.append(f"{r.line:>5}  {r.text}   -> {r.form_short}: {'; '.join(r.approx)}")
    k = report.kernel
    # the candidates (JSON `others`) include the kernel itself: the text lists the rest
    others = [o for o in k.others if o.get("lines") and o["lines"][0] is not None
              and list(o["lines"]) != [k.first_line, k.last_line]]
    if others:
        out.append("")
        what = "regions" if k.how == "llvm-mca-region" else "innermost loops"
        listed = ", ".join(f"{o.get('name') or o.get('label')} ({o['lines'][0]}-{o['lines'][1]})"
                           for o in others)
        out.append(f"Other {what}: {listed}  (choose with --lines A-B"
                   + (" or --region NAME)" if k.how == "llvm-mca-region" else ")"))
    return "\n".join(out) + "\n"


def json(report) -> dict:
    return {"instructions": [row_json(r) for r in report.rows],
            "unmatched": [{"line": r.line, "text": r.text, "key": r.key, "reason": r.reason}
                          for r in report.unmatched]}


def row_json(r) -> dict:
    """One instruction row's JSON (views/jsonline.py writes the same text directly)."""
    sem = r.annotated.semantics if r.annotated else None
    entry = {"line": r.line, "text": r.text, "form": r.form,
             "uops": [{"ports": ports, "count": count} for ports, count in r.uops],
             "pressure": {p: number(x) for p, x in r.pressure.items()},
             "key": r.key,
             "latency": number(r.latency) if sem else None,
             "critical_path": r.on_critical_path, "loop_carried": r.on_loop_carried,
             "slack": number(r.slack),
             "notes": list(sem.notes) if sem and sem.notes else [],
             "beyond_model": sem.beyond_model if sem else ""}
    if r.form is not None:
        entry["source"] = r.source
        entry["match"] = "approximate" if r.approx else "exact"
        if r.approx:
            entry["approx"] = list(r.approx)
    a = r.annotated
    if a is not None:
        if a.assumed:
            entry["assumed"] = [n.text for n in a.assumed]
        for flag in ("eliminated", "fused"):
            if getattr(a, flag):
                entry[flag] = True
        if a.idiom:
            entry["idiom"] = a.idiom
    return entry
