"""The inference problem as flat arrays: forms, measured experiments, singleton throughputs.

Every engine of the inference (the EA, the exact refinement) works on one
`Problem`; it is built once from an ExperimentSet and never changes.

A candidate mapping is the pair of arrays the simulator reads:
    masks int64[F, U]    port mask of each uop slot of each form
    counts float64[F, U] its count; 0 = an empty slot (the form has fewer uops)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    forms: tuple[str, ...]        # the forms inferred (congruence representatives)
    n_ports: int
    ptr: np.ndarray               # int64[E+1]   experiments (CSR over form indices)
    exp_forms: np.ndarray         # int64[nnz]
    mults: np.ndarray             # float64[nnz]
    measured: np.ndarray          # float64[E]   measured cycles (all > 0)
    singleton: np.ndarray         # float64[F]   reciprocal throughput of the form alone (NaN: unknown)
    occ_ptr: np.ndarray           # int64[F+1]   inverted index: experiments that contain form f
    occ_exps: np.ndarray          # int64[...]
    r_max: float = 0.0            # 0 = no front-end cap

    @property
    def n_forms(self) -> int:
        return len(self.forms)

    @property
    def n_exps(self) -> int:
        return len(self.measured)

    def experiments_of(self, f: int) -> np.ndarray:
        return self.occ_exps[self.occ_ptr[f]:self.occ_ptr[f + 1]]


def build_problem(experiments, forms, n_ports: int, form_of=None, r_max=None) -> Problem:
    """Arrays for `forms` from the measured experiments of an ExperimentSet.

    form_of maps an input form to the form it is inferred as (congruence
    representatives); experiments that use a form outside it, or lack a
    measurement, are dropped. Singleton throughput comes from experiments of a
    single form (cycles / multiplicity; the smallest multiplicity wins).
    """
    index = {f: i for i, f in enumerate(forms)}
    form_of = form_of or {f: f for f in forms}
    ptr, eforms, mults, measured = [0], [], [], []
    singleton = np.full(len(forms), np.nan)
    single_mult = np.full(len(forms), np.inf)
    for e in experiments.experiments:
        if e.cycles is None or not e.cycles > 0:
            continue
        merged: dict[int, int] = {}
        ok = True
        for f, n in e.counts:
            rep = form_of.get(f)
            if rep is None or rep not in index:
                ok = False
                break
            merged[index[rep]] = merged.get(index[rep], 0) + n
        if not ok:
            continue
        for i in sorted(merged):
            eforms.append(i)
            mults.append(float(merged[i]))
        ptr.append(len(eforms))
        measured.append(float(e.cycles))
        if len(merged) == 1:
            (i, n), = merged.items()
            if n < single_mult[i]:
                single_mult[i] = n
                singleton[i] = e.cycles / n
    ptr = np.asarray(ptr, dtype=np.int64)
    eforms = np.asarray(eforms, dtype=np.int64)
    occ_ptr, occ_exps = _occurrences(ptr, eforms, len(forms))
    return Problem(tuple(forms), int(n_ports), ptr, eforms, np.asarray(mults, dtype=np.float64),
                   np.asarray(measured, dtype=np.float64), singleton, occ_ptr, occ_exps,
                   float(r_max or 0.0))


def _occurrences(ptr, eforms, n_forms):
    """Inverted index (occ_ptr, occ_exps): the experiments that contain each form."""
    occ = [[] for _ in range(n_forms)]
    for e in range(len(ptr) - 1):
        for t in range(ptr[e], ptr[e + 1]):
            occ[eforms[t]].append(e)
    occ_ptr = np.zeros(n_forms + 1, dtype=np.int64)
    occ_ptr[1:] = np.cumsum([len(o) for o in occ])
    occ_exps = np.asarray([e for o in occ for e in o], dtype=np.int64)
    return occ_ptr, occ_exps


def with_experiments(problem: Problem, ptr, eforms, mults, measured) -> Problem:
    """The problem with more experiments appended (CSR over the problem's form indices);
    singleton throughputs stay those of the original measurements."""
    shift = problem.ptr[-1]
    all_ptr = np.concatenate([problem.ptr, np.asarray(ptr[1:], dtype=np.int64) + shift])
    all_forms = np.concatenate([problem.exp_forms, np.asarray(eforms, dtype=np.int64)])
    occ_ptr, occ_exps = _occurrences(all_ptr, all_forms, problem.n_forms)
    return Problem(problem.forms, problem.n_ports, all_ptr, all_forms,
                   np.concatenate([problem.mults, np.asarray(mults, dtype=np.float64)]),
                   np.concatenate([problem.measured, np.asarray(measured, dtype=np.float64)]),
                   problem.singleton, occ_ptr, occ_exps, problem.r_max)


def fallback_singleton(problem: Problem) -> np.ndarray:
    """Singleton throughputs with unknown ones estimated (1 cycle: a neutral guess)."""
    t = problem.singleton.copy()
    t[np.isnan(t)] = 1.0
    return t


def count_bound(t: float, k: int) -> int:
    """Largest useful count of a uop on k ports for a form of reciprocal throughput t.

    (PMEvo: a form alone needs count / k cycles for the uop, so count <= ceil(t k).)
    """
    return max(1, int(np.ceil(t * k - 1e-9)))
