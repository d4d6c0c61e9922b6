"""Ensemble distillation: one port mapping that predicts like the average of several.

Independent starts of the exact refinement fit the training experiments
about equally well (2-5% error) but disagree on experiments they never saw,
each in its own way; the mean of their predictions is much closer to held-out
measurements than any one of them (docs/BENCHMARKS.md, "infer"). A port
mapping must stay one mapping, so the members' knowledge is distilled: random
experiments shaped like the training ones (same lengths, forms drawn
uniformly with repetition) are labelled with the members' mean prediction
and appended to the measured experiments, and one mapping is refined on the
union, starting from the best member. Pure: arrays in, arrays out.
"""

from __future__ import annotations

import numpy as np

from pmpredict.predict.throughput import simulate_arrays

from pmpredict.infer.problem import Problem, with_experiments


def synthetic_experiments(problem: Problem, n: int, rng):
    """n random experiments as CSR arrays (ptr, forms, mults); lengths follow the
    problem's multi-form experiments (length 5 if it has none)."""
    sizes = np.array([problem.mults[problem.ptr[e]:problem.ptr[e + 1]].sum()
                      for e in range(problem.n_exps) if problem.ptr[e + 1] - problem.ptr[e] > 1])
    if sizes.size == 0:
        sizes = np.array([5.0])
    ptr, forms, mults = [0], [], []
    for length in rng.choice(sizes, size=n):
        picked, times = np.unique(rng.integers(0, problem.n_forms, size=int(length)), return_counts=True)
        forms.extend(picked.tolist())
        mults.extend(times.astype(float).tolist())
        ptr.append(len(forms))
    return (np.asarray(ptr, dtype=np.int64), np.asarray(forms, dtype=np.int64),
            np.asarray(mults, dtype=np.float64))


def ensemble_cycles(members, ptr, forms, mults, r_max=0.0) -> np.ndarray:
    """Mean predicted cycles of the member mappings [(masks, counts), ...]."""
    preds = [simulate_arrays(m, c, ptr, forms, mults, r_max or None)[0] for m, c in members]
    return np.mean(preds, axis=0)


def distillation_problem(problem: Problem, members, n: int, rng) -> Problem:
    """The measured experiments plus n synthetic ones labelled by the members' mean."""
    ptr, forms, mults = synthetic_experiments(problem, n, rng)
    labels = ensemble_cycles(members, ptr, forms, mults, problem.r_max)
    return with_experiments(problem, ptr, forms, mults, labels)
