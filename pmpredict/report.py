"""Renderers of a predict.Report: JSON (DESIGN.md shape) and a text table for people."""

from __future__ import annotations

from .asm.detect import SYNTAX_NAMES


def _r(x: float) -> float:
    return round(float(x), 6)


def coverage_note(report) -> str:
    n_un, total = len(report.unmatched), len(report.rows)
    n_mem = len(report.uncounted_memory)
    if report.cycles is None and n_un:
        return f"none of the {total} instructions is in the model: no prediction"
    parts = []
    if n_un:
        parts.append(f"{n_un} of {total} instructions are not in the model and are not counted")
    if n_mem:
        parts.append(f"the memory access of {n_mem} instruction{'s' if n_mem > 1 else ''} "
                     "is not counted (register form used)")
    if not parts:
        return "all instructions are in the model"
    return "lower bound: " + "; ".join(parts)


def to_json(report) -> dict:
    rows = []
    for r in report.rows:
        entry = {"line": r.line, "text": r.text, "form": r.form,
                 "uops": [{"ports": ports, "count": count} for ports, count in r.uops],
                 "pressure": {p: _r(x) for p, x in r.pressure.items()},
                 "key": r.key}
        if r.form is not None:
            entry["match"] = "approximate" if r.approx else "exact"
            if r.approx:
                entry["approx"] = list(r.approx)
        rows.append(entry)
    return {
        "cycles": None if report.cycles is None else _r(report.cycles),
        "bottleneck": list(report.bottleneck),
        "instructions": rows,
        "unmatched": [{"line": r.line, "text": r.text, "key": r.key, "reason": r.reason}
                      for r in report.unmatched],
        "coverage": {"matched": report.matched, "total": len(report.rows),
                     "complete": report.complete, "note": coverage_note(report)},
        "kernel": report.kernel.to_json(),
        "model": report.model,
        "isa": report.isa,
        "syntax": report.syntax,
        "ports": list(report.ports),
        "port_load": {p: _r(x) for p, x in report.port_load.items()},
        "file": report.path,
    }


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def render_text(report) -> str:
    ports = list(report.ports)
    cw = max([5] + [len(p) for p in ports])
    tw = min(44, max([11] + [len(r.text) for r in report.rows]))
    k = report.kernel
    span = f"lines {k.first_line}-{k.last_line}" if k.first_line is not None else "no instructions"
    out = [f"File:    {report.path} ({SYNTAX_NAMES.get(report.syntax, report.syntax)})",
           f"Model:   {report.model} ({len(ports)} ports"
           + (f", R_max {report.r_max:g}/cycle" if report.r_max else "") + ")",
           f"Kernel:  {k.description}, {span}, {len(report.rows)} instructions, "
           f"{report.matched} in the model",
           "",
           "Port pressure in cycles per iteration (from an optimal schedule):",
           ""]
    head = f"{'Line':>5}  {'Instruction':<{tw}}  " + " ".join(f"{p:>{cw}}" for p in ports) + "   Form"
    out.append(head)
    out.append("-" * len(head))
    for r in report.rows:
        cells = " ".join(f"{r.pressure[p]:>{cw}.2f}" if r.pressure.get(p) else " " * cw for p in ports)
        if r.form is None:
            tag = "X not in the model"
        else:
            tag = r.form_short + (" ~" if r.approx else "")
        out.append(f"{r.line:>5}  {_cut(r.text, tw):<{tw}}  {cells}   {tag}")
    out.append("-" * len(head))
    total = " ".join(f"{report.port_load.get(p, 0.0):>{cw}.2f}" for p in ports)
    out.append(f"{'':>5}  {'Total':<{tw}}  {total}")
    out.append("")
    if report.cycles is None:
        out.append("Throughput: no prediction (no instruction of the kernel is in the model)")
    else:
        lb = "" if report.complete else " (lower bound)"
        out.append(f"Throughput: {report.cycles:.2f} cycles per iteration{lb}")
        neck = ", ".join(report.bottleneck) if report.bottleneck else "-"
        out.append("Bottleneck: " + ("front end (R_max)" if report.bottleneck == ["frontend"]
                                     else "ports " + neck))
    out.append(f"Coverage:   {coverage_note(report)}")
    if report.unmatched:
        out.append("")
        out.append("Not in the model (not counted):")
        for r in report.unmatched:
            out.append(f"{r.line:>5}  {r.text}   [{r.key}] {r.reason}")
    approx = [r for r in report.rows if r.approx]
    if approx:
        out.append("")
        out.append("Approximate matches (~):")
        for r in approx:
            out.append(f"{r.line:>5}  {r.text}   -> {r.form_short}: {'; '.join(r.approx)}")
    if k.others:
        out.append("")
        what = "regions" if k.how == "llvm-mca-region" else "innermost loops"
        listed = ", ".join(f"{o.get('name') or o.get('label')} ({o['lines'][0]}-{o['lines'][1]})"
                           for o in k.others if o.get("lines") and o["lines"][0] is not None)
        out.append(f"Other {what}: {listed}  (choose with --lines A-B"
                   + (" or --region NAME)" if k.how == "llvm-mca-region" else ")"))
    return "\n".join(out) + "\n"
