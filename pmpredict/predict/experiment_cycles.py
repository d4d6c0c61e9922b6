"""`simulate` as a result: the predicted cycles and bottleneck of every experiment of a set.

A front-end result object (views/simulate.py renders it); the numbers come from throughput.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pmpredict.predict.bottlenecks import FRONTEND_BOTTLENECK


@dataclass(frozen=True)
class Prediction:
    index: int
    cycles: float | None              # None: the model cannot predict it (see error)
    bottleneck: tuple[str, ...]       # port names, or ("frontend",) when R_max limits
    measured: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class SimulationResult:
    model: str
    experiments: str                  # the experiment set's source
    predictions: tuple[Prediction, ...]


def bottleneck_names(model, mask: int) -> tuple[str, ...]:
    # deferred: throughput loads numba (~0.4 s); the result types alone do not need it
    from pmpredict.predict.throughput import FRONTEND
    if mask == FRONTEND:
        return (FRONTEND_BOTTLENECK,)  # the R_max cap, not a port set, limits throughput
    return tuple(model.port_names(int(mask)))


def simulate_set(model, experiments) -> SimulationResult:
    """Every experiment of `experiments` under `model` (an unknown form: no prediction, and
    the error names it)."""
    # deferred: throughput loads numba (~0.4 s); the result types alone do not need it
    from pmpredict.predict.throughput import simulate

    cycles, bottleneck = simulate(model, experiments)
    known = set(model.uops)
    rows = []
    for i, (c, b) in enumerate(zip(cycles, bottleneck)):
        e = experiments.experiments[i]
        if math.isnan(c):
            missing = [f for f in e.forms() if f not in known]
            rows.append(Prediction(i, None, (), e.cycles,
                                   "form not in the model: " + ", ".join(missing)))
        else:
            rows.append(Prediction(i, float(c), bottleneck_names(model, b), e.cycles))
    return SimulationResult(model.name, experiments.source, tuple(rows))
