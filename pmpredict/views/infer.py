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
