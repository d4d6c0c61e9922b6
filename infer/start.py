"""Starting mappings for the local search.

`singleton_start` uses what the singleton measurements already say: a form of
reciprocal throughput t ~ 1/k runs one uop on k ports (t >= 1: count round(t)
on one port), and forms of equal throughput (within a relative tolerance)
*share* one random port set, so the search begins with few, reused port sets
as real machines have. `random_start` is the PMEvo-style baseline.
"""

from __future__ import annotations

import numpy as np

from .problem import Problem, count_bound, fallback_singleton


def _random_mask(rng, n_ports: int, k: int) -> int:
    ports = rng.choice(n_ports, size=k, replace=False)
    return int(sum(1 << int(p) for p in ports))


def throughput_groups(t: np.ndarray, rel_tol: float = 0.05) -> np.ndarray:
    """Group id per form: sorted throughputs chained while neighbours differ by < rel_tol."""
    order = np.argsort(t, kind="stable")
    group = np.zeros(len(t), dtype=np.int64)
    g = 0
    for a, b in zip(order[:-1], order[1:]):
        group[a] = g
        if t[b] > t[a] * (1 + rel_tol):
            g += 1
    if len(t):
        group[order[-1]] = g
    return group


def singleton_start(problem: Problem, n_slots: int, rng, share: bool = True):
    t = fallback_singleton(problem)
    masks = np.zeros((problem.n_forms, n_slots), dtype=np.int64)
    counts = np.zeros((problem.n_forms, n_slots), dtype=np.float64)
    groups = throughput_groups(t) if share else np.arange(problem.n_forms)
    chosen = {}
    for f in range(problem.n_forms):
        g = int(groups[f])
        if g not in chosen:
            k = int(np.clip(round(1.0 / t[f]), 1, problem.n_ports)) if t[f] < 1 else 1
            c = max(1, int(round(t[f] * k)))
            chosen[g] = (_random_mask(rng, problem.n_ports, k), float(c))
        masks[f, 0], counts[f, 0] = chosen[g]
    return masks, counts


def random_start(problem: Problem, n_slots: int, rng):
    """PMEvo's initialisation: 1..n_slots uops per form, random port sets, counts up to ceil(t |u|)."""
    t = fallback_singleton(problem)
    masks = np.zeros((problem.n_forms, n_slots), dtype=np.int64)
    counts = np.zeros((problem.n_forms, n_slots), dtype=np.float64)
    full = (1 << problem.n_ports) - 1
    for f in range(problem.n_forms):
        for j in range(int(rng.integers(1, n_slots + 1))):
            m = int(rng.integers(1, full + 1))
            masks[f, j] = m
            counts[f, j] = float(rng.integers(1, count_bound(t[f], bin(m).count("1")) + 1))
    return masks, counts
