"""Starting mappings for the local search.

`singleton_start` uses what the singleton measurements already say: a form of
reciprocal throughput t ~ 1/k runs one uop on k ports (t >= 1: count round(t)
on one port), and forms of equal throughput (within a relative tolerance)
*share* one random port set, so the search begins with few, reused port sets
as real machines have. `random_start` is the PMEvo-style baseline.
"""

from __future__ import annotations

import numpy as np

from pmpredict.infer.problem import Problem, count_bound, fallback_singleton


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


def fitted_uop(t: float, n_ports: int, max_count: int = 4) -> tuple[int, int]:
    """(count c, ports k) with c / k closest to t (relative), the smaller count on ties.

    E.g. t = 0.68 -> 2 uops on 3 ports (A72's two-thirds forms), 1.38 -> 4 on 3.
    """
    best = None
    for c in range(1, max_count + 1):
        for k in range(1, n_ports + 1):
            err = abs(c / k - t) / t
            if best is None or err < best[0] - 1e-9:
                best = (err, c, k)
    if t > max_count:                      # slow forms: one port, count round(t)
        return max(1, int(round(t))), 1
    return best[1], best[2]


def singleton_start(problem: Problem, n_slots: int, rng, share: bool = True, fit: bool = False):
    """One uop per form explaining its singleton throughput; fit=False: k = round(1/t), count 1
    (t >= 1: round(t) on one port); fit=True: the (count, ports) pair closest to t."""
    t = fallback_singleton(problem)
    masks = np.zeros((problem.n_forms, n_slots), dtype=np.int64)
    counts = np.zeros((problem.n_forms, n_slots), dtype=np.float64)
    groups = throughput_groups(t) if share else np.arange(problem.n_forms)
    chosen = {}
    for f in range(problem.n_forms):
        g = int(groups[f])
        if g not in chosen:
            if fit:
                c, k = fitted_uop(float(t[f]), problem.n_ports)
            else:
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
