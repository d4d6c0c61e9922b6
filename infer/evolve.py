"""PMEvo's evolutionary algorithm over three-level port mappings (PLDI 2020, section 4.3).

A population of mappings (uops as port masks, counts bounded by ceil(t |u|));
each generation recombines random parent pairs by splitting every form's uop
multiset between two children, mutates a few uops, and keeps the best `mu` of
parents + children ((mu+lambda) selection). Fitness = mean relative error
normalised by the generation's worst + volume_weight x volume normalised the
same way. Afterwards a greedy local search adjusts uop counts by +-1.

All the state lives in `EAState` (arrays + a numpy Generator) so the driver
can checkpoint between generations and resume bit-for-bit. Measured on its
own the EA reaches far worse accuracy than the exact moves of refine.py
(docs/BENCHMARKS.md, "infer"); it stays available as `--method pmevo`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmpredict.predict.throughput import simulate_population

from pmpredict.infer.problem import Problem, count_bound, fallback_singleton
from pmpredict.infer.refine import candidate_scores
from pmpredict.infer.start import random_start


@dataclass
class EAState:
    masks: np.ndarray      # int64[P, F, U]
    counts: np.ndarray     # float64[P, F, U]
    error: np.ndarray      # float64[P]  mean relative error of each individual
    generation: int
    rng: np.random.Generator


def population_errors(problem: Problem, masks, counts) -> np.ndarray:
    cycles = simulate_population(masks, counts, problem.ptr, problem.exp_forms, problem.mults,
                                 problem.r_max or None)
    return np.mean(np.abs(cycles - problem.measured) / problem.measured, axis=1)


def fitness(error, volume, volume_weight) -> np.ndarray:
    """Lower is better; both terms normalised by the generation's maximum."""
    return error / max(error.max(), 1e-300) + volume_weight * volume / max(volume.max(), 1e-300)


def init_population(problem: Problem, size: int, n_slots: int, rng) -> EAState:
    masks = np.zeros((size, problem.n_forms, n_slots), dtype=np.int64)
    counts = np.zeros((size, problem.n_forms, n_slots), dtype=np.float64)
    for i in range(size):
        masks[i], counts[i] = random_start(problem, n_slots, rng)
    return EAState(masks, counts, population_errors(problem, masks, counts), 0, rng)


def _compact(masks, counts, take):
    """Keep the slots where take & count > 0, packed to the front; width U = masks.shape[-1] // 2."""
    keep = take & (counts > 0)
    order = np.argsort(~keep, axis=-1, kind="stable")
    width = masks.shape[-1] // 2
    m = np.take_along_axis(masks, order, -1)[..., :width]
    c = np.take_along_axis(counts, order, -1)[..., :width]
    k = np.take_along_axis(keep, order, -1)[..., :width]
    return np.where(k, m, 0), np.where(k, c, 0.0)


def recombine(masks_a, counts_a, masks_b, counts_b, rng):
    """Two children: each uop of each form of either parent goes to one child at random."""
    m = np.concatenate([masks_a, masks_b], axis=-1)
    c = np.concatenate([counts_a, counts_b], axis=-1)
    side = rng.random(m.shape) < 0.5
    m1, c1 = _compact(m, c, side)
    m2, c2 = _compact(m, c, ~side)
    # a form left without uops inherits parent a's (child 1) or parent b's (child 2) uops
    empty1 = ~(c1 > 0).any(axis=-1)
    empty2 = ~(c2 > 0).any(axis=-1)
    m1[empty1], c1[empty1] = masks_a[empty1], counts_a[empty1]
    m2[empty2], c2[empty2] = masks_b[empty2], counts_b[empty2]
    return m1, c1, m2, c2


def mutate(problem: Problem, masks, counts, rng, rate: float):
    """Flip one random port of a random uop in about `rate` of the forms of each child."""
    hit = (rng.random(masks.shape[:-1]) < rate) & (counts[..., 0] > 0)
    child, form = np.nonzero(hit)
    for i, f in zip(child, form):
        slots = np.flatnonzero(counts[i, f] > 0)
        j = int(rng.choice(slots))
        new = int(masks[i, f, j]) ^ (1 << int(rng.integers(problem.n_ports)))
        if new:
            masks[i, f, j] = new
            t = fallback_singleton(problem)[f]
            counts[i, f, j] = min(counts[i, f, j], count_bound(t, bin(new).count("1")))


def generation(problem: Problem, state: EAState, volume_weight: float, mutation_rate: float):
    """One (mu+lambda) step with lambda = mu (in place)."""
    rng = state.rng
    size = state.masks.shape[0]
    pairs = rng.integers(0, size, size=(size // 2 + size % 2, 2))
    m1, c1, m2, c2 = recombine(state.masks[pairs[:, 0]], state.counts[pairs[:, 0]],
                               state.masks[pairs[:, 1]], state.counts[pairs[:, 1]], rng)
    cm = np.concatenate([m1, m2])[:size]
    cc = np.concatenate([c1, c2])[:size]
    mutate(problem, cm, cc, rng, mutation_rate)
    child_err = population_errors(problem, cm, cc)
    masks = np.concatenate([state.masks, cm])
    counts = np.concatenate([state.counts, cc])
    err = np.concatenate([state.error, child_err])
    fit = fitness(err, counts.sum(axis=(1, 2)), volume_weight)
    keep = np.argsort(fit, kind="stable")[:size]
    state.masks, state.counts, state.error = masks[keep], counts[keep], err[keep]
    state.generation += 1


def best_individual(state: EAState, volume_weight: float) -> int:
    fit = fitness(state.error, state.counts.sum(axis=(1, 2)), volume_weight)
    return int(np.argmin(fit))


def local_search_counts(problem: Problem, masks, counts, n_chunks: int = 1, max_passes: int = 10):
    """PMEvo's final step: greedily move uop counts by +-1 while the error drops (in place)."""
    t = fallback_singleton(problem)
    inv_n = 1.0 / problem.n_exps
    for _ in range(max_passes):
        improved = False
        for f in range(problem.n_forms):
            exps = problem.experiments_of(f)
            for j in np.flatnonzero(counts[f] > 0):
                m, c = int(masks[f, j]), float(counts[f, j])
                hi = count_bound(t[f], bin(m).count("1"))
                cand = np.array([x for x in (c - 1, c + 1) if 1 <= x <= max(hi, c)], dtype=np.float64)
                if not len(cand):
                    continue
                cur = candidate_scores(masks, counts, f, j, np.array([m]), np.array([c]),
                                       np.zeros(1), np.inf, exps, problem.ptr, problem.exp_forms,
                                       problem.mults, problem.measured, problem.r_max, inv_n, 1)[0]
                score = candidate_scores(masks, counts, f, j, np.full(len(cand), m), cand,
                                         np.zeros(len(cand)), cur, exps, problem.ptr,
                                         problem.exp_forms, problem.mults, problem.measured,
                                         problem.r_max, inv_n, n_chunks)
                k = int(np.argmin(score))
                if score[k] < cur - 1e-12:
                    counts[f, j] = cand[k]
                    improved = True
        if not improved:
            break
