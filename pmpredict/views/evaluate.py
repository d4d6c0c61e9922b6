"""View of `pmpredict evaluate`: the accuracy metrics of a metrics.Evaluation."""

from __future__ import annotations

from pmpredict.views.common import finite


def json(result, verbose: bool = False) -> dict:
    out = {"n": result.n, "skipped": result.skipped, "mape": finite(result.mape),
           "pearson": finite(result.pearson), "spearman": finite(result.spearman),
           "kendall": finite(result.kendall)}
    if verbose:
        out["skipped_experiments"] = [{"index": i, "reason": r} for i, r in result.skipped_reasons]
    return out


def _fixed(x, fmt: str) -> str:
    return "-" if finite(x) is None else format(x, fmt)


def text(result, verbose: bool = False) -> str:
    lines = [f"n         {result.n}",
             f"skipped   {result.skipped}",
             f"MAPE      {_fixed(result.mape, '.2f')}%",
             f"Pearson   {_fixed(result.pearson, '.4f')}",
             f"Spearman  {_fixed(result.spearman, '.4f')}",
             f"Kendall   {_fixed(result.kendall, '.4f')}  (tau-b)"]
    if verbose:
        lines += [f"skipped {i}: {reason}" for i, reason in result.skipped_reasons]
    return "\n".join(lines) + "\n"
