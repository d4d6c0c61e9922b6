"""The summary view: prediction, bounds, verdict, coverage, assumptions."""

from __future__ import annotations

from pmpredict.asm.detect import SYNTAX_NAMES
from pmpredict.model.facts import wording
from pmpredict.predict.annotate import LATENCY, Note
from pmpredict.predict.bottlenecks import BOUND_KINDS, FRONTEND_BOTTLENECK, Bounds
from pmpredict.views.common import BEYOND_MODEL_NAMES, chain_text, number, resource_names

# the predictor's results this view reads (predictor.STAGES and DERIVED; "source": the input)
READS = ("source", "matched", "annotated", "bounds", "simulated", "rows", "bottleneck",
         "criticality")

TOLERANCE = 0.02          # a bound within 2% of the prediction is what limits it


def coverage_note(report) -> str:
    n_un, total = len(report.unmatched), len(report.rows)
    n_mem = len(report.uncounted_memory)
    if report.cycles is None and n_un:
        return f"none of the {total} instructions is in the model: no prediction"
    parts = []
    if n_un:
        parts.append(f"{n_un} of {total} instructions are not in the model (no uops counted)")
    if n_mem:
        parts.append(f"the memory access of {n_mem} instruction{'s' if n_mem > 1 else ''} "
                     "is not counted (register form used)")
    beyond = report.beyond_model
    if beyond:
        kinds = dict.fromkeys(BEYOND_MODEL_NAMES.get(r.annotated.semantics.beyond_model,
                                                     "beyond the model") for r in beyond)
        parts.append(f"{len(beyond)} instruction{'s' if len(beyond) > 1 else ''} "
                     f"({' and '.join(kinds)}) cost more than the model counts (line"
                     f"{'s' if len(beyond) > 1 else ''} "
                     f"{', '.join(str(r.line) for r in beyond)})")
    n_fused = len(report.fused_unknown)
    if not parts and n_fused:
        return (f"all instructions are in the model but {n_fused} jump"
                f"{'s' if n_fused > 1 else ''} fused with one that is (counted as the pair)")
    if not parts:
        return "all instructions are in the model"
    return "lower bound: " + "; ".join(parts)


def _uses(report, fact: str) -> bool:
    """Whether the kernel has an instruction whose timing takes the pipeline fact."""
    sems = [r.annotated.semantics for r in report.rows if r.annotated]
    if fact == "atomic_cycles":
        return any(report.machine.counts(s.beyond_model) for s in sems)
    if fact.startswith("store_forward"):
        return any(s.stores for s in sems) and any(s.loads for s in sems)
    return any(s.loads for s in sems)           # load_latency


def assumptions(report) -> list[str]:
    """What the prediction assumed because the model does not say."""
    out = []
    m = report.machine
    if report.assumed_facts:
        out.append(", ".join(wording(k, v) for k, v in report.assumed_facts.items())
                   + " (not in the model)")
    if m and m.doubts:
        out.append("the model's front end as measured, in doubt (a busy machine, or a probe "
                   "whose premise fails on this core): " + "; ".join(m.doubts))
    used = [why for key, why in (m.fact_doubts.items() if m else ()) if _uses(report, key)]
    if used:
        out.append("measured, in doubt: " + "; ".join(used))
    # what was assumed for single instructions of the model, each said once with its lines
    # (a latency the model lacks, a stack sync, a merge, whether an idiom takes a port)
    notes: dict[Note, list[int]] = {}
    for r in report.assumed_latencies:
        if r.form is not None:
            for note in r.annotated.assumed:
                notes.setdefault(note, []).append(r.line)
    for note, lines in notes.items():
        where = _lines(lines)
        if note.what == LATENCY:
            n = len(lines)
            out.append(f"latency of {n} instruction{'s' if n > 1 else ''} not in the model: "
                       f"{note.value:g} assumed ({where})")
        else:
            out.append(f"{note.text} ({where})")
    out += _unmeasured(report)
    fused = report.fused_unknown
    if fused:
        out.append(f"{', '.join(r.text.split()[0] for r in fused)} (not in the model) fused with "
                   f"the instruction before: the pair counted as that one's uops (line"
                   f"{'s' if len(fused) > 1 else ''} {', '.join(str(r.line) for r in fused)})")
    unknown = [r for r in report.rows if r.annotated and not r.annotated.semantics.known]
    if unknown:
        out.append("reads/writes guessed for " + ", ".join(sorted({r.key.split()[0]
                                                                    for r in unknown})))
    return out


def _unmeasured(report) -> list[str]:
    """What a host model's measuring budget left out that this kernel's forms depend on."""
    m = report.machine
    if not m or not (m.unmeasured_forms or m.unmeasured_pairs):
        return []
    rows = [r for r in report.rows if r.form is not None]
    out, said = [], set()
    for r in rows:
        why = m.unmeasured_forms.get(r.form)
        if why and r.form not in said:
            said.add(r.form)
            out.append(f"{r.form_short or r.key}: {why} (the measuring budget ran out; "
                       f"line {r.line})")
    forms = {r.form for r in rows}
    pairs = [p for p in m.unmeasured_pairs if p <= forms]
    if pairs:
        out.append(f"{len(pairs)} pair(s) of this kernel's forms not measured together (the "
                   "measuring budget ran out): how they share ports is the model's guess")
    return out


def _lines(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:8]) + (", ..." if len(lines) > 8 else "")
    return f"line{'s' if len(lines) > 1 else ''} {shown}"


def _ports_told(report) -> str:
    if report.bottleneck == [FRONTEND_BOTTLENECK]:
        return "the ports"
    kinds = report.bottleneck_kinds
    return "ports " + ", ".join(report.bottleneck) + (f" ({', '.join(kinds)})" if kinds else "")


def _chain_told(report) -> str:
    if not report.chains:                  # no chain: a bound of 0, never the verdict's
        return "the loop-carried chain"
    c = report.chains[0]
    return f"the loop-carried chain through {resource_names(report, c)} ({chain_text(report, c)})"


def _front_end_told(report) -> str:
    slots = sum(r.annotated.slot for r in report.rows if r.annotated)
    what = f"{slots:g} instructions at {report.r_max:g} per cycle" if report.r_max else \
        "one taken branch per iteration"
    return f"the front end ({what})"


# a bound kind told in full in the verdict; a kind without an entry is told by its limit_name
_TOLD = {"throughput": _ports_told, "loop_carried": _chain_told, "front_end": _front_end_told}


def _bound_parts(report) -> list[tuple[float, str, str]]:
    """(value, name of the limit, the limit told in full) of each known bound."""
    b, parts = report.bounds, []
    if b is None:
        return parts
    for kind in BOUND_KINDS:
        value = getattr(b, kind.key)
        if value is None:
            continue
        told = _TOLD.get(kind.key, lambda r: kind.limit_name)(report)
        parts.append((value, kind.limit_name, told))
    return parts


def verdict(report) -> str:
    """One line: what limits the loop, and what the other limits would allow."""
    if report.cycles is None:
        return "no prediction"
    parts = sorted(_bound_parts(report), key=lambda p: -p[0])
    if not parts:
        return ""
    value, name, told = parts[0]
    rest = [p for p in parts[1:] if p[0] > 0]
    others = "; " + ", ".join(f"{n} would allow {v:.2f}" for v, n, _ in rest) if rest else ""
    if value >= report.cycles * (1 - TOLERANCE):
        return f"bound by {told}: {value:.2f} cycles per iteration{others}"
    # the prediction exceeds every bound: what makes up the difference is named from the
    # costs (a simulation per bottleneck and pair: computed only for such a loop)
    unexplained = (f"no single bound explains {report.cycles:.2f} cycles (the largest is {name}, "
                   f"{value:.2f})")
    crit = report.criticality
    if crit is None or not crit.cost or max(crit.cost.values()) <= 0:
        return f"{unexplained}: bottlenecks interact (see --bottlenecks)"
    return f"{unexplained}: {interaction(report, crit)}"


def interaction(report, crit) -> str:
    """What makes a loop slower than its largest bound, from Fields' costs: the window filling
    up; or the two costliest bottlenecks, by their interaction cost (independent: their delays
    add up; parallel: only fixing both gains; serial: fixing either gains most of it); else
    the costliest alone."""
    ranked = sorted((c for c in crit.classes if crit.cost.get(c.name, 0.0) > 1e-9),
                    key=lambda c: -crit.cost[c.name])
    top = ranked[0]
    cost = crit.cost[top.name]
    if top.kind == "window":
        window = report.machine.window if report.machine else None
        size = f" ({window:g} instructions)" if window else ""
        return (f"the window{size} fills: an unlimited one would save {cost:.2f} cycles per "
                "iteration")
    if len(ranked) > 1:
        other = ranked[1]
        second = crit.cost[other.name]
        icost = crit.icost.get((top.name, other.name), crit.icost.get((other.name, top.name), 0.0))
        both = cost + second + icost
        if abs(icost) <= 1e-9:
            how = f"each add their own delay (independent: making both ideal saves {both:.2f})"
        elif icost > 0:
            how = f"overlap (parallel: only making both ideal gains, {both:.2f})"
        else:
            how = f"share a delay (serial: either one ideal saves most of it; both {both:.2f})"
        return (f"the {top.name} ({cost:.2f} cycles per iteration) and the {other.name} "
                f"({second:.2f}) {how}")
    verb = "cost" if top.kind == "ports" else "costs"     # "the ports A, B cost most"
    return f"the {top.name} {verb} most ({cost:.2f} cycles per iteration)"


def text(report) -> str:
    ports = report.ports
    k = report.kernel
    span = f"lines {k.first_line}-{k.last_line}" if k.first_line is not None else "no instructions"
    out = [f"File:       {report.path} ({SYNTAX_NAMES.get(report.syntax, report.syntax)})",
           f"Model:      {report.model} ({_ports_counted(report)}"
           + (f", R_max {report.r_max:g}/cycle" if report.r_max else "") + ")",
           f"Kernel:     {k.description}, {span}, {len(report.rows)} instructions, "
           f"{report.matched} in the model", ""]
    if report.cycles is None:
        out.append("Prediction: none (no instruction of the kernel is in the model)")
    else:
        lb = "" if report.complete else " (lower bound)"
        out.append(f"Prediction: {report.cycles:.2f} cycles per iteration{lb}")
        b = report.bounds
        if b is not None:
            cp = report.critical_path.length if report.critical_path else 0.0
            told = ", ".join(filter(None, (kind.bound_text(getattr(b, kind.key))
                                           for kind in BOUND_KINDS)))
            out.append(f"Bounds:     {told}; one iteration's critical path {cp:.2f} cycles")
            out.append(f"Verdict:    {verdict(report)}")
            # the historical lines, kept for scripts that grep them
            neck = ", ".join(report.bottleneck) if report.bottleneck else "-"
            if report.bottleneck_kinds:
                neck += f" ({', '.join(report.bottleneck_kinds)})"
            ports_line = ("front end (R_max)" if report.bottleneck == [FRONTEND_BOTTLENECK]
                          else "ports " + neck)
            if b.loop_carried > max(b.throughput, b.front_end or 0.0) \
                    and b.loop_carried >= report.cycles * (1 - TOLERANCE):
                ports_line = f"the loop-carried chain (busiest: {ports_line})"
            out.append("Bottleneck: " + ports_line)
    out.append(f"Coverage:   {coverage_note(report)}")
    if report.fallback is not None:
        out.append(f"Fallback:   {fallback_note(report)}")
    for note in assumptions(report):
        out.append(f"Assumed:    {note}")
    return "\n".join(out) + "\n"


def _ports_counted(report) -> str:
    """`10 ports`, and the store-commit ports after them where the model measured them."""
    commits = report.machine.store_commits if report.machine else 0
    told = f"{len(report.ports) - commits} ports"
    if commits:
        told += (f" + {', '.join(report.ports[-commits:])}: "
                 + ("a store" if commits == 1 else f"{commits} stores") + " committed a cycle")
    return told


def fallback_note(report) -> str:
    """Which instructions came from the fallback model, how its ports were mapped."""
    fb = report.fallback
    n = sum(1 for r in report.rows if r.source == "fallback")
    a = fb.alignment
    parts = [f"{fb.name} for {n} of {len(report.rows)} instructions (+); its ports mapped onto "
             f"those of {report.model} by alignment over {len(a.pairs)} common forms"
             + (f" ({a.equal * 100:.0f}% of the uop mass equal)" if a.equal is not None else "")]
    if fb.own_ports:
        parts.append(f"its ports {', '.join(fb.own_ports)} have no counterpart: kept as ports "
                     "of their own")
    if fb.pipeline:
        parts.append(f"{', '.join(fb.pipeline)} from {fb.name}")
    return "; ".join(parts)


def _chain_json(report, c) -> dict:
    return {"cycles": number(c.ratio), "latency": number(c.latency), "iterations": c.iterations,
            "resources": list(c.resources),
            "instructions": [{"line": report.rows[i].line, "text": report.rows[i].text}
                             for i in c.nodes]}


def json(report) -> dict:
    out = {
        "cycles": number(report.cycles),
        "bottleneck": list(report.bottleneck),
        "bottleneck_kinds": list(report.bottleneck_kinds),
        "bounds": {k: number(v) for k, v in (report.bounds or Bounds.unknown()).as_dict().items()},
        "verdict": verdict(report),
        "coverage": {"matched": report.matched, "total": len(report.rows),
                     "complete": report.complete, "note": coverage_note(report)},
        "assumptions": assumptions(report),
        "kernel": report.kernel.to_json(),
        "model": report.model,
        "isa": report.isa,
        "syntax": report.syntax,
        "ports": list(report.ports),
        "port_load": {p: number(x) for p, x in report.port_load.items()},
        "file": report.path,
    }
    fb = report.fallback
    out["fallback"] = None if fb is None else dict(
        fb.summary(), instructions=sum(1 for r in report.rows if r.source == "fallback"))
    cp = report.critical_path
    out["critical_path"] = None if cp is None else {
        "cycles": number(cp.length),
        "instructions": [{"line": report.rows[i].line, "text": report.rows[i].text}
                         for i in cp.nodes]}
    chains = [_chain_json(report, c) for c in report.chains]
    out["loop_carried"] = chains[0] if chains else None
    out["loop_carried_chains"] = chains
    return out
