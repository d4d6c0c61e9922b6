"""Experiment generation for a set of forms (PMEvo section 4.1).

Singletons {A: 1}; all unordered pairs {A: 1, B: 1}; and, once singleton
throughputs t are known, weighted pairs {A: 1, B: n} with n = ceil(t(A) / t(B))
for t(A) > t(B), so that the faster form B issues about as much work as A and
a port the two share shows up as a slowdown. The result is an ExperimentSet
with unmeasured cycles (null), ready for the host measurement harness.
"""

from __future__ import annotations

import math
from itertools import combinations

from pmpredict.isa import semantics
from pmpredict.model.experiments import Experiment, ExperimentSet


def singleton_experiments(forms) -> list[Experiment]:
    return [Experiment.of({f: 1}) for f in forms]


def pair_experiments(forms) -> list[Experiment]:
    return [Experiment.of({a: 1, b: 1}) for a, b in combinations(forms, 2)]


def weighted_pair_experiments(forms, throughput: dict) -> list[Experiment]:
    """{A: 1, B: ceil(t(A)/t(B))} for t(A) > t(B) and n > 1 (n = 1 is the plain pair)."""
    out = []
    for a, b in combinations(forms, 2):
        ta, tb = throughput.get(a), throughput.get(b)
        if not ta or not tb or ta == tb:
            continue
        slow, fast = (a, b) if ta > tb else (b, a)
        n = math.ceil(max(ta, tb) / min(ta, tb) - 1e-9)
        if n > 1:
            out.append(Experiment.of({slow: 1, fast: n}))
    return out


def generate_experiments(forms, throughput: dict | None = None, isa: str | None = None) -> ExperimentSet:
    """Singletons + pairs (+ weighted pairs when singleton throughputs are given), in a fixed order."""
    forms = list(dict.fromkeys(forms))
    exps = singleton_experiments(forms) + pair_experiments(forms)
    if throughput:
        exps += weighted_pair_experiments(forms, throughput)
    return ExperimentSet(tuple(forms), tuple(exps), isa or semantics.isa_of_forms(forms),
                         "pmpredict infer")


def singleton_throughputs(experiments) -> dict:
    """Measured reciprocal throughput of each form from its singleton experiments."""
    out = {}
    for e in experiments.experiments:
        if len(e.counts) == 1 and e.cycles:
            (f, n), = e.counts
            out.setdefault(f, e.cycles / n)
    return out


def singleton_failures(experiments, forms) -> dict:
    """form -> why it has no singleton throughput (its experiment's error), for the forms of
    `forms` that have none."""
    measured = singleton_throughputs(experiments)
    return {f: next((e.other.get("error") for e in experiments.experiments
                     if e.forms() == [f]), None) or "no measurement"
            for f in forms if f not in measured}
