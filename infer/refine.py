"""Exact coordinate moves: re-choose one uop of one form optimally, everything else fixed.

For a uop slot (form f, slot j) the move evaluates *every* port set and every
useful count (and "no uop" for the slot), re-simulating only the experiments
that contain f, and keeps the candidate that minimises

    objective = mean relative error over all experiments
              + volume_weight * (total uop count) / n_forms
              + set_weight * (number of distinct port sets in the mapping)

Sweeping all slots until no move improves is a local search with a large,
exact neighbourhood; this, not the EA, is where the accuracy comes from
(docs/BENCHMARKS.md, "infer"). An empty slot makes the same move an "add a
uop" move. The engine is pure: arrays in, arrays out, no I/O.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from pmpredict.predict.throughput import TOO_LARGE, experiment_cycles, new_workspace

from pmpredict.infer.problem import Problem, count_bound

# counts above this are never tried (a divider occupying its port 16 cycles is
# still reachable as count 16 plus another uop; see docs/INFER.md)
MAX_COUNT = 16


@njit(cache=True)
def _cycles(masks, counts, ptr, forms, mults, e, r_max, ws):
    """Cycles of experiment e under the simulator; +inf where the engine cannot solve it
    (never chosen)."""
    c, _ = experiment_cycles(masks, counts, ptr, forms, mults, e, r_max, ws)
    return np.inf if c == TOO_LARGE else c


@njit(cache=True, parallel=True)
def candidate_scores(masks, counts, f, j, cand_mask, cand_count, pen, bound, exps, ptr, forms, mults,
                     meas, r_max, inv_n, n_chunks):
    """Score (mean relative error over `exps` scaled by inv_n, plus pen[k]) of each candidate put in slot (f, j).

    Branch and bound: a candidate whose partial score already reaches the best
    score known to its chunk (initially `bound`) is abandoned and scored +inf;
    errors are non-negative, so an abandoned candidate can never be the best.
    """
    n_cand = cand_mask.shape[0]
    out = np.full(n_cand, np.inf)
    step = (n_cand + n_chunks - 1) // n_chunks
    for ch in prange(n_chunks):
        lo = ch * step
        hi = min(n_cand, lo + step)
        if lo >= hi:
            continue
        m = masks.copy()
        c = counts.copy()
        ws = new_workspace()
        best = bound
        for k in range(lo, hi):
            m[f, j] = cand_mask[k]
            c[f, j] = cand_count[k]
            s = pen[k]
            if s >= best:
                continue
            done = True
            for i in range(exps.shape[0]):
                e = exps[i]
                cyc = _cycles(m, c, ptr, forms, mults, e, r_max, ws)
                s += abs(cyc - meas[e]) / meas[e] * inv_n
                if s >= best:
                    done = False
                    break
            if done:
                out[k] = s
                best = s
    return out


@njit(cache=True)
def relative_errors(masks, counts, ptr, forms, mults, meas, r_max):
    """Relative error of every experiment under one mapping."""
    ws = new_workspace()
    n = ptr.shape[0] - 1
    out = np.empty(n, dtype=np.float64)
    for e in range(n):
        out[e] = abs(_cycles(masks, counts, ptr, forms, mults, e, r_max, ws) - meas[e]) / meas[e]
    return out


def candidates(t: float, n_ports: int, max_count: int = MAX_COUNT):
    """All (mask, count) a slot may take for a form of singleton throughput t; (0, 0) = no uop."""
    cand_mask, cand_count = [0], [0.0]
    for mask in range(1, 1 << n_ports):
        k = bin(mask).count("1")
        for c in range(1, min(count_bound(t, k), max_count) + 1):
            cand_mask.append(mask)
            cand_count.append(float(c))
    return np.asarray(cand_mask, dtype=np.int64), np.asarray(cand_count, dtype=np.float64)


class ExactRefiner:
    """Sweeps of exact slot moves over a Problem; holds the per-form candidate lists."""

    def __init__(self, problem: Problem, max_count: int = MAX_COUNT):
        self.p = problem
        t = np.where(np.isnan(problem.singleton), 1.0, problem.singleton)
        self._cands = {}                    # candidate lists, shared by forms of equal throughput
        self._t = t
        self.max_count = max_count
        self.n_chunks = max(1, get_num_threads() * 4)
        # forms that share an experiment with f: if none of them (nor f) changed, f's best move is unchanged
        neigh = [set() for _ in range(problem.n_forms)]
        for e in range(problem.n_exps):
            fs = problem.exp_forms[problem.ptr[e]:problem.ptr[e + 1]]
            for a in fs:
                neigh[a].update(int(b) for b in fs)
        self.neighbours = [np.fromiter(sorted(s), dtype=np.int64) for s in neigh]
        # shortest experiments first: the singleton rejects most candidates at once
        lengths = np.diff(problem.ptr)
        self.exps_of = [e[np.argsort(lengths[e], kind="stable")]
                        for e in (problem.experiments_of(f) for f in range(problem.n_forms))]

    def _candidates(self, f):
        key = round(float(self._t[f]), 6)
        if self._cands.get(key) is None:
            self._cands[key] = candidates(self._t[f], self.p.n_ports, self.max_count)
        return self._cands[key]

    def objective(self, masks, counts, volume_weight=0.0, set_weight=0.0) -> tuple[float, float]:
        """(objective, mean relative error) of a mapping."""
        p = self.p
        err = float(np.mean(relative_errors(masks, counts, p.ptr, p.exp_forms, p.mults, p.measured,
                                             p.r_max)))
        return err + penalty(masks, counts, volume_weight, set_weight), err

    def sweep(self, masks, counts, order, volume_weight=0.0, set_weight=0.0, dirty=None,
              should_stop=None):
        """One pass of exact moves over the forms in `order` (in place).

        dirty: bool[F] forms worth visiting (updated: a change marks the neighbours);
        returns the number of moves that changed the mapping.
        """
        p = self.p
        inv_n = 1.0 / p.n_exps
        vol_unit = volume_weight / p.n_forms
        usage = {}
        for f in range(p.n_forms):
            for j in range(masks.shape[1]):
                if counts[f, j] > 0:
                    usage[int(masks[f, j])] = usage.get(int(masks[f, j]), 0) + 1
        changed = 0
        for f in order:
            if dirty is not None and not dirty[f]:
                continue
            if should_stop is not None and should_stop():
                break
            if dirty is not None:
                dirty[f] = False
            exps = self.exps_of[f]
            cm, cc = self._candidates(f)
            slots = [j for j in range(masks.shape[1]) if counts[f, j] > 0]
            empty = [j for j in range(masks.shape[1]) if counts[f, j] <= 0]
            if empty:
                slots.append(empty[0])          # one empty slot: the "add a uop" move
            for j in slots:
                n_uops = int(np.count_nonzero(counts[f] > 0))
                old_m, old_c = int(masks[f, j]), float(counts[f, j])
                if old_c > 0:
                    usage[old_m] -= 1
                pen = vol_unit * cc
                if set_weight:
                    new_set = np.fromiter((usage.get(int(m), 0) == 0 for m in cm), dtype=bool,
                                          count=len(cm))
                    pen = pen + set_weight * (new_set & (cc > 0))
                if old_c > 0 and n_uops == 1:
                    pen[0] = np.inf             # a form keeps at least one uop
                # the current choice, scored exactly, bounds the search
                cur_pen = vol_unit * old_c + (set_weight if set_weight and old_c > 0
                                              and usage.get(old_m, 0) == 0 else 0.0)
                cur = candidate_scores(masks, counts, f, j, np.array([old_m]), np.array([old_c]),
                                       np.array([cur_pen]), np.inf, exps, p.ptr, p.exp_forms,
                                       p.mults, p.measured, p.r_max, inv_n, 1)[0]
                score = candidate_scores(masks, counts, f, j, cm, cc, pen, cur, exps, p.ptr,
                                         p.exp_forms, p.mults, p.measured, p.r_max, inv_n,
                                         self.n_chunks)
                best = int(np.argmin(score))
                if score[best] < cur - 1e-12:
                    masks[f, j] = cm[best]
                    counts[f, j] = cc[best]
                    changed += 1
                    if dirty is not None:
                        dirty[self.neighbours[f]] = True
                if counts[f, j] > 0:
                    usage[int(masks[f, j])] = usage.get(int(masks[f, j]), 0) + 1
        return changed


def penalty(masks, counts, volume_weight, set_weight) -> float:
    n_forms = masks.shape[0]
    out = volume_weight * float(counts.sum()) / n_forms
    if set_weight:
        out += set_weight * len(set(masks[counts > 0].tolist()))
    return out
