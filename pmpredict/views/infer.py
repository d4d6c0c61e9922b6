"""View of `pmpredict infer`: what the run produced (pmpredict.infer.job.InferOutcome)."""

from __future__ import annotations

from pmpredict.views.common import finite


def json(result, output: str = "", resume: str = "") -> dict:
    model = result.model
    out = {"output": output if model is not None else None,
           "forms": len(model.uops) if model is not None else 0,
           "classes": result.classes,
           "volume": model.volume() if model is not None else None,
           "training_mape": finite(result.training_error * 100) if model is not None else None,
           "elapsed_s": round(result.elapsed, 1), "complete": result.finished,
           "interrupted": result.interrupted is not None}
    if not result.finished:
        out["resume"] = resume
    return out


def text(result, output: str = "", resume: str = "") -> str:
    if result.model is None:
        return f"stopped before a first mapping existed; continue with: {resume}\n"
    state = "done" if result.finished else f"stopped early; continue with: {resume}"
    return (f"{output}: {len(result.model.uops)} forms ({result.classes} classes), volume "
            f"{result.model.volume()}, training MAPE {result.training_error * 100:.2f}%, "
            f"{result.elapsed:.0f} s, {state}\n")


# --- cegis and counters (pmpredict.infer.online_job.OnlineOutcome) ---------------------------

_REASONS = {"unsat": "no port mapping within the bounds explains the measurements (try "
                     "--max-uops, --ports or --epsilon)",
            "stopped": "stopped by the time limit", "interrupted": "interrupted"}


def online_json(result, output: str = "", resume: str = "", explain: bool = False) -> dict:
    model = result.model
    out = {"output": output if model is not None else None, "method": result.method,
           "forms": len(model.uops) if model is not None else 0,
           "volume": model.volume() if model is not None else None,
           "experiments": result.experiments, "elapsed_s": round(result.elapsed, 1),
           "complete": result.finished, "interrupted": result.interrupted is not None,
           "reason": result.reason, "notes": list(result.notes),
           "left_out": dict(result.left_out)}
    out.update({k: v for k, v in result.details.items() if k in ("solver", "complete_up_to",
                                                                 "peak_ipc", "blocking")})
    if result.method == "counters" or explain:
        out["justifications"] = result.justifications
    if explain and model is not None:
        out["measured"] = model.provenance.get("experiments", [])
    if not result.finished and result.reason in ("stopped", "interrupted"):
        out["resume"] = resume
    return out


def online_text(result, output: str = "", resume: str = "") -> str:
    lines = [f"pmpredict: note: {n}" for n in result.notes]
    lines += [f"pmpredict: left out {f}: {why}" for f, why in result.left_out.items()]
    if result.model is None:
        if result.reason in ("stopped", "interrupted"):
            lines.append(f"stopped before a first mapping existed; continue with: {resume}")
        else:
            lines.append(f"{result.method}: {_REASONS.get(result.reason, result.reason)} "
                         f"({result.experiments} experiments)")
        return "\n".join(lines) + "\n"
    if result.finished:
        upto = result.details.get("complete_up_to")
        state = "done" + (f" (complete up to {upto} forms per experiment)" if upto else "")
    else:
        state = f"{_REASONS.get(result.reason, 'stopped')}; continue with: {resume}"
    lines.append(f"{output}: {len(result.model.uops)} forms, volume {result.model.volume()}, "
                 f"{result.method} from {result.experiments} experiments, "
                 f"{result.elapsed:.0f} s, {state}")
    return "\n".join(lines) + "\n"


def _uops_text(model, uops) -> str:
    return " + ".join(f"{c}x[{','.join(model.port_names(m))}]" for m, c in uops)


def _exp_text(exp) -> str:
    return "{" + ", ".join(f"{f}: {n}" for f, n in exp.items()) + "}"


def explain_text(result) -> str:
    """Each form's mapping and what justifies it: counters, every experiment with its
    measurement and what it establishes; cegis, the experiments the mapping rests on."""
    model = result.model
    out = []
    if result.method == "counters":
        for form, uops in model.uops.items():
            out.append(f"{form}: {_uops_text(model, uops)}")
            for j in result.justifications.get(form, []):
                exp = j.get("experiment")
                measured = j.get("measured") or {}
                what = j.get("establishes", "")
                if exp is None:
                    out.append(f"  => {what}")
                    continue
                m = f"{measured.get('cycles')} cycles"
                if measured.get("uops") is not None:
                    m += f", {measured['uops']} uops"
                if measured.get("without"):
                    w = measured["without"]
                    m += f" (alone {_exp_text(w['experiment'])}: {w['cycles']})"
                out.append(f"  {_exp_text(exp)}: {m}: {what}")
        return "\n".join(out) + "\n"
    out.append(f"{result.method}: the mapping is the one (up to indistinguishable ones) that "
               "explains these measurements:")
    for rec in model.provenance.get("experiments", []):
        out.append(f"  {_exp_text(rec['forms'])}: {rec['cycles']} cycles")
    out.append("mapping:")
    for form, uops in model.uops.items():
        out.append(f"  {form}: {_uops_text(model, uops)}")
    return "\n".join(out) + "\n"
