"""Congruence filtering: forms that behave identically in every measurement become one class.

Forms A and B are congruent when their singleton throughputs and, for every
other form C, their pair throughputs {A:1, C:1} and {B:1, C:1} agree within a
symmetric relative difference epsilon (|x - y| / ((x + y) / 2), default 0.05);
weighted pairs are compared too where both were measured with the same
multiplicities. Missing evidence never makes forms congruent: if a pair with
some C was not measured for A or B, they stay apart. So on data without the
pair experiments (the PMEvo artifact's random multisets) every form is its own
class and nothing is lost.

Classes are built deterministically: forms in sorted order, each joins the
first existing class whose representative it is congruent with, else starts
a new class; the representative is the class's first (lexicographically
smallest) form.
"""

from __future__ import annotations

import numpy as np

from pmpredict.infer.singletons_and_pairs import singleton_throughputs


def symmetric_difference(x, y):
    return np.abs(x - y) / ((x + y) / 2.0)


def _pair_tables(experiments, index):
    """unit[F, F]: cycles of {A:1, B:1} (NaN = not measured); weighted {(a, na, b, nb): cycles}."""
    n = len(index)
    unit = np.full((n, n), np.nan)
    weighted = {}
    for e in experiments.experiments:
        if len(e.counts) != 2 or not e.cycles:
            continue
        (a, na), (b, nb) = e.counts
        if a not in index or b not in index:
            continue
        i, j = index[a], index[b]
        if na == 1 and nb == 1:
            unit[i, j] = unit[j, i] = e.cycles
        weighted[(i, na, j, nb)] = e.cycles
        weighted[(j, nb, i, na)] = e.cycles
    return unit, weighted


def congruent(i, j, t, unit, weighted_of, epsilon) -> bool:
    if not (t[i] > 0 and t[j] > 0) or symmetric_difference(t[i], t[j]) > epsilon:
        return False
    others = np.ones(len(t), dtype=bool)
    others[[i, j]] = False
    a, b = unit[i, others], unit[j, others]
    if np.isnan(a).any() or np.isnan(b).any():
        return False
    if (symmetric_difference(a, b) > epsilon).any():
        return False
    for (k, nk), cyc in weighted_of[i].items():
        other = weighted_of[j].get((k, nk))
        if k not in (i, j) and other is not None and symmetric_difference(cyc, other) > epsilon:
            return False
    return True


def congruence_classes(experiments, forms, epsilon: float = 0.05) -> dict[str, str]:
    """form -> representative form, for every form in `forms`."""
    forms = sorted(set(forms))
    index = {f: i for i, f in enumerate(forms)}
    single = singleton_throughputs(experiments)
    t = np.array([single.get(f, np.nan) for f in forms])
    unit, weighted = _pair_tables(experiments, index)
    # weighted_of[i][(other, n_other)] = cycles of {form i: 1, other: n_other}
    weighted_of = [dict() for _ in forms]
    for (i, ni, k, nk), cyc in weighted.items():
        if ni == 1:
            weighted_of[i][(k, nk)] = cyc
    reps: list[int] = []
    out = {}
    for i, f in enumerate(forms):
        for r in reps:
            if congruent(r, i, t, unit, weighted_of, epsilon):
                out[f] = forms[r]
                break
        else:
            reps.append(i)
            out[f] = f
    return out
