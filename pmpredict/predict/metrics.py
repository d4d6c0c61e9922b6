"""Accuracy of predictions against measurements: MAPE, Pearson, Spearman, Kendall tau-b."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats


def mape(predicted, measured) -> float:
    """Mean absolute percentage error, in percent, relative to the measurement."""
    predicted = np.asarray(predicted, float)
    measured = np.asarray(measured, float)
    return float(np.mean(np.abs(predicted - measured) / measured) * 100.0)


def _corr(fn, a, b) -> float:
    if len(a) < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")      # undefined for constant inputs; say so rather than guess
    return float(fn(a, b)[0])


def pearson(a, b) -> float:
    return _corr(stats.pearsonr, np.asarray(a, float), np.asarray(b, float))


def spearman(a, b) -> float:
    return _corr(stats.spearmanr, np.asarray(a, float), np.asarray(b, float))


def kendall_tau_b(a, b) -> float:
    return _corr(lambda x, y: stats.kendalltau(x, y, variant="b"), np.asarray(a, float),
                 np.asarray(b, float))


@dataclass
class Evaluation:
    n: int
    skipped: int
    mape: float
    pearson: float
    spearman: float
    kendall: float
    skipped_reasons: list = field(default_factory=list)   # (index, reason)
    predicted: np.ndarray | None = None
    measured: np.ndarray | None = None

    def to_json(self) -> dict:
        return {"n": self.n, "skipped": self.skipped, "mape": self.mape, "pearson": self.pearson,
                "spearman": self.spearman, "kendall": self.kendall}


def evaluate_predictions(predicted, measured, unknown_reason=None) -> Evaluation:
    """Compare predicted against measured cycles; NaN on either side is skipped, with the reason.

    unknown_reason(i) names why prediction i is missing (e.g. the form the model lacks).
    """
    predicted = np.asarray(predicted, float)
    measured = np.asarray(measured, float)
    reasons = []
    for i in np.flatnonzero(np.isnan(measured) | np.isnan(predicted)):
        if np.isnan(measured[i]):
            reasons.append((int(i), "no measured cycles"))
        else:
            reasons.append((int(i), unknown_reason(int(i)) if unknown_reason else "no prediction"))
    ok = ~(np.isnan(measured) | np.isnan(predicted))
    p, m = predicted[ok], measured[ok]
    if len(p) == 0:
        nan = float("nan")
        return Evaluation(0, len(reasons), nan, nan, nan, nan, reasons, p, m)
    return Evaluation(len(p), len(reasons), mape(p, m), pearson(p, m), spearman(p, m),
                      kendall_tau_b(p, m), reasons, p, m)


def evaluate_model(model, experiments) -> Evaluation:
    """Simulate every experiment under the model and compare with its measured cycles."""
    # deferred: throughput loads numba (~0.4 s); the metrics (mape, pearson...) do not need it
    from pmpredict.predict.throughput import simulate

    cycles, _ = simulate(model, experiments)
    known = set(model.uops)

    def reason(i):
        missing = [f for f in experiments.experiments[i].forms() if f not in known]
        return "form not in the model: " + ", ".join(missing)

    return evaluate_predictions(cycles, experiments.measured(), reason)
