"""New forms into an existing port mapping: the existing forms' uops stay as they are.

Engine layer (arrays and form strings in, uops out; no I/O). A model that knows some forms
learns more without inferring everything again:

1. each new form is measured alone (its reciprocal throughput) and beside every *blocker* of
   the model, balanced (design.balanced_pair): the blockers are the forms that saturate one
   port set each (blockers_of, over the model's own uops), so a port set the new form shares
   with a blocker shows as a slowdown;
2. the exact slot moves (refine.py) fit the new forms only, every other form fixed at the
   model's uops, on the problem of the new forms' experiments; the penalties relax as in a
   full inference (a new port set costs a little at first, so a new form takes the port sets
   the model already uses unless the timings say otherwise);
3. the blockers cannot tell which part of a blocker's port set a new form takes (two 256-bit
   loads on two of three load ports: any two fit the pairs with a three-port load), so new
   forms that share ports in the fit are measured beside each other and beside the model's
   forms of the same kernels (overlap_experiments), and fitted again from the first fit: two
   builds of one machine's model then agree on how the forms of a kernel contend, not only
   on each form alone;
4. a model grown over many runs still holds pairs no experiment saw: forms added in different
   runs were measured beside the blockers of their time, so two integer ALU forms can sit on
   two different four-port sets (Zen 4: `test r64, r64` and `mov r32, imm32` 0.25 cycles
   each, 0.50 together, predicted 0.33). Every pair of forms a kernel uses together
   (kernel_pairs) is measured once; where the model is off by more than PAIR_TOLERANCE, the
   extension forms of those pairs are fitted again (refit) on their singletons, blocker pairs
   and the kernel pairs measured with them, now and by earlier checks (earlier_pairs), the
   other forms fixed (a fit on this check's pairs alone gave Zen 4's `mov r32, m32` an ALU
   uop: with `test r32, r32` 0.43 cycles predicted, 0.33 measured by an earlier check); each
   form then takes the closest of its uops in two fits (per_form), and the result is kept
   only where it is closer on those experiments. A pair still off after that has a form the
   fit could not move (a core form): that form is fitted again too (partners_to_fit), with
   the core's own training experiments of it besides (Zen 4: `vmovq r64, xmm` beside `shl
   r32, imm8` 1.50 cycles a pair, 1.20 predicted however shl moved, 1.50 after; tuning split,
   300 blocks: kernel pairs still off 73 -> 54, MAPE 4.2% both).

A model inferred from pairs knows its forms' port sets; the fit puts a new form among them.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass

import numpy as np

from pmpredict.infer.design import balanced_pair
from pmpredict.isa.forms import is_split_variant
from pmpredict.infer.pmevo import InferConfig
from pmpredict.infer.problem import build_problem
from pmpredict.infer.refine import ExactRefiner, relative_errors
from pmpredict.predict.port_bound import optimum

SLOTS = 4
OVERLAP_PAIRS = 3                # pairs of new forms measured together, per new form at most
# a pair of forms one kernel uses that the model predicts this far off (relative) is fitted
# again (Zen 4, 1,158 pairs of 300 BHive blocks: 320 off by more where the ports are to
# blame, 44 after the fit)
PAIR_TOLERANCE = 0.10
# new pairs one kernel gives at most (a kernel of ten forms has 45 pairs; a long one would
# otherwise take hours to measure), and one call measures at most (about five minutes; the
# rest are measured by the calls after it: a pair is remembered only once measured)
PAIRS_PER_KERNEL = 45
PAIRS_PER_CALL = 2000
# kernel pairs of a form to fit again that earlier checks measured, taken into its fit at
# most (measured again: from the measurement cache where the pair's balance is unchanged)
EARLIER_PAIRS_PER_FORM = 30
# the final penalty per uop of the host model's inferences, a little toward fewer uops: every
# extension's fit here and the bootstrap's inference (host/model.py; docs/MEASUREMENT.md)
FINAL_VOLUME_WEIGHT = 0.005


def model_throughput(uops: dict, r_max: float | None = None) -> dict[str, float]:
    """Reciprocal throughput of each form alone under its uops (and the issue width)."""
    out = {}
    for form, pairs in uops.items():
        mass: dict[int, int] = {}
        for mask, count in pairs:
            mass[mask] = mass.get(mask, 0) + count
        cycles = float(optimum(mass)[0]) if mass else 0.0
        out[form] = max(cycles, 1.0 / r_max if r_max else 0.0)
    return out


def blockers_of(uops: dict, throughput: dict, limit: int = 14) -> list[str]:
    """The model's blockers, from uops[form] = ((port mask, count), ...): for each port set,
    the form that puts the largest share (over half) of its uops on it, port sets ordered by
    how many forms use them; among equals the form with the smallest reciprocal throughput
    per uop (the strongest saturation per instance)."""
    users: dict[int, int] = {}
    for f, us in uops.items():
        for mask in {m for m, _ in us}:
            users[mask] = users.get(mask, 0) + 1
    chosen: list[str] = []
    for mask in sorted(users, key=lambda m: (-users[m], m)):
        best = None
        for f, us in sorted(uops.items()):
            total = sum(c for _, c in us)
            share = sum(c for m, c in us if m == mask) / total if total else 0.0
            if share <= 0.5:
                continue
            key = (-share, throughput.get(f, math.inf) / max(total, 1), f)
            if best is None or key < best[0]:
                best = (key, f)
        if best is not None and best[1] not in chosen:
            chosen.append(best[1])
        if len(chosen) >= limit:
            break
    return chosen


def extension_experiments(new_forms, blockers, throughput: dict):
    """Every new form beside every blocker, balanced by throughput."""
    return [balanced_pair(f, b, throughput) for f in new_forms for b in blockers if f != b]


def budget_order(experiments, new_forms, throughput: dict) -> list:
    """Experiments of new forms beside blockers in the order a budget should measure them:
    round robin over the new forms (each gets its first experiments before any gets its last),
    each form's blockers nearest its own throughput first: a blocker on the same port set as
    the form runs at a similar rate, and that is the pair that decides where its uops go."""
    def distance(e):
        rates = [throughput.get(f) for f, _ in e.counts]
        rates = [r for r in rates if r]
        return abs(math.log(max(rates) / min(rates))) if len(rates) == 2 else 0.0

    new = set(new_forms)
    per_form: dict[str, list] = {}
    for e in experiments:
        owner = next((f for f, _ in e.counts if f in new), e.counts[0][0])
        per_form.setdefault(owner, []).append(e)
    queues = [sorted(es, key=distance) for es in per_form.values()]
    out = []
    for k in range(max((len(q) for q in queues), default=0)):
        out += [q[k] for q in queues if k < len(q)]
    return out


def overlap_experiments(new_uops: dict, throughput: dict, limit: int, beside: dict | None = None):
    """Balanced pairs of new forms whose fitted uops share a port, and of a new form with a
    form of `beside` (form -> uops: the model's forms the same kernels use) sharing one, the
    narrowest port unions first (the most contention-sensitive), at most `limit`."""
    ports = {f: _union(us) for f, us in {**(beside or {}), **new_uops}.items()}
    new = sorted(new_uops)
    pairs = list(itertools.combinations(new, 2))
    pairs += [(a, b) for a in new for b in sorted(beside or ()) if b not in new_uops]
    pairs = [p for p in pairs if ports[p[0]] & ports[p[1]]]
    pairs.sort(key=lambda p: ((ports[p[0]] | ports[p[1]]).bit_count(), p))
    return [balanced_pair(a, b, throughput) for a, b in pairs[:limit]]


def _union(uops) -> int:
    out = 0
    for mask, _ in uops:
        out |= int(mask)
    return out


@dataclass
class Fit:
    uops: dict                      # new form -> ((mask, count), ...)
    error: dict                     # new form -> mean relative error over its experiments
    experiments: int                # measured experiments the fit used


def fit_new_forms(fixed: dict, n_ports: int, measured, new_forms, *, r_max: float | None = None,
                  seed: int = 0, max_sweeps: int = 10, start: dict | None = None) -> Fit:
    """Uops for `new_forms` from the measured experiments (an ExperimentSet: their singletons
    and their pairs with forms of `fixed`); fixed[form] = uops of a form that does not move;
    start[form]: the uops a new form's fit starts from (an earlier fit, on fewer experiments),
    else one uop explaining its singleton."""
    new_forms = [f for f in dict.fromkeys(new_forms) if f not in fixed]
    used = {f for e in measured.experiments if e.cycles for f, _ in e.counts}
    forms = [f for f in new_forms if f in used] + sorted(f for f in used if f in fixed)
    problem = build_problem(measured, forms, n_ports, None, r_max)
    usable = [i for i, f in enumerate(forms) if f not in fixed and
              not np.isnan(problem.singleton[i])]
    slots = max([SLOTS] + [len(fixed[f]) for f in forms if f in fixed])
    masks = np.zeros((len(forms), slots), dtype=np.int64)
    counts = np.zeros((len(forms), slots), dtype=np.float64)
    for i, f in enumerate(forms):
        if f in fixed:
            for j, (mask, count) in enumerate(fixed[f]):
                masks[i, j], counts[i, j] = mask, count
    rng = np.random.default_rng(seed)
    for i in usable:
        masks[i, 0], counts[i, 0] = _start(float(problem.singleton[i]), n_ports, rng)
        begun = (start or {}).get(forms[i], ())[:slots]
        for j, (mask, count) in enumerate(begun):
            masks[i, j], counts[i, j] = mask, count
    if usable:
        refiner = ExactRefiner(problem)
        config = InferConfig(final_volume_weight=FINAL_VOLUME_WEIGHT)
        order_rng = np.random.default_rng([seed, 7])
        for sweep in range(max_sweeps):
            order = np.asarray(order_rng.permutation(usable), dtype=np.int64)
            changed = refiner.sweep(masks, counts, order, *config.weights(sweep))
            if changed == 0 and sweep >= config.anneal_sweeps:
                break
    errors = relative_errors(masks, counts, problem.ptr, problem.exp_forms, problem.mults,
                             problem.measured, problem.r_max)
    out, error = {}, {}
    for i in usable:
        f = forms[i]
        out[f] = tuple(sorted((int(masks[i, j]), int(round(counts[i, j])))
                              for j in range(slots) if counts[i, j] > 0))
        mine = problem.experiments_of(i)
        error[f] = float(np.mean(errors[mine])) if len(mine) else 0.0
    return Fit(out, error, problem.n_exps)


def _start(t: float, n_ports: int, rng) -> tuple[int, float]:
    """One uop explaining the singleton: 1/t ports (t < 1), else count round(t) on one."""
    k = int(np.clip(round(1.0 / t), 1, n_ports)) if t < 1 else 1
    count = max(1, int(round(t * k)))
    ports = rng.choice(n_ports, size=k, replace=False)
    return int(sum(1 << int(p) for p in ports)), float(count)


# --- the pairs of forms the kernels use together ---------------------------------------------

def kernel_pairs(kernels, known: dict, movable, checked=frozenset(),
                 per_kernel: int = PAIRS_PER_KERNEL) -> list[tuple[str, str]]:
    """Distinct pairs (a, b), a < b, of forms one kernel uses together (kernels: lists of
    forms), both in the model (`known`: form -> uops), at least one of them `movable` (fitted
    into the model by an extension), not in `checked` (pair_digest of pairs measured before);
    in order of first use. A kernel gives at most `per_kernel` new pairs (its pairs grow as
    the square of its forms): first those whose forms share a port in the model (how they
    contend is the mapping's to get right), then the others."""
    out: dict[tuple[str, str], None] = {}
    for forms in kernels:
        mine = sorted({f for f in forms if f in known})
        pairs = [(a, b) for a, b in itertools.combinations(mine, 2)
                 if (a in movable or b in movable) and (a, b) not in out
                 and pair_digest(a, b) not in checked]
        pairs.sort(key=lambda p: not _union(known[p[0]]) & _union(known[p[1]]))   # stable
        out.update(dict.fromkeys(pairs[:per_kernel]))
    return list(out)


def earlier_pairs(forms, known: dict, checked, per_form: int = EARLIER_PAIRS_PER_FORM
                  ) -> list[tuple[str, str]]:
    """Pairs (a, b), a < b, of a form of `forms` and another form of the model (`known`) that
    earlier checks measured (pair_digest in `checked`): at most `per_form` a form, those whose
    forms share a port in the model first."""
    out: dict[tuple[str, str], None] = {}
    for f in forms:
        mine = [(min(f, g), max(f, g)) for g in known if g != f and pair_digest(f, g) in checked]
        mine = [p for p in mine if p not in out]
        mine.sort(key=lambda p: not _union(known[p[0]]) & _union(known[p[1]]))   # stable
        out.update(dict.fromkeys(mine[:per_form]))
    return list(out)


def pair_digest(a: str, b: str) -> str:
    """A short, order-free name of a pair of forms (what a model remembers as checked)."""
    return hashlib.sha1("\n".join(sorted((a, b))).encode()).hexdigest()[:12]


def predicted_cycles(uops: dict, counts, r_max: float | None = None) -> float:
    """The model's reciprocal throughput of an experiment ((form, count) pairs): the port
    bound, at least the issue width's."""
    return max(_port_cycles(uops, counts), _front_end_cycles(counts, r_max))


def _port_cycles(uops: dict, counts) -> float:
    mass: dict[int, float] = {}
    for form, n in counts:
        for mask, count in uops[form]:
            mass[mask] = mass.get(mask, 0) + count * n
    return float(optimum(mass)[0]) if mass else 0.0


def _front_end_cycles(counts, r_max: float | None) -> float:
    return sum(n for _, n in counts) / r_max if r_max else 0.0


def mispredicted(uops: dict, experiments, r_max: float | None = None,
                 tolerance: float = PAIR_TOLERANCE) -> list:
    """The measured experiments (all forms in `uops`) the model predicts more than
    `tolerance` (relative) off, where its port mapping is to blame: not an experiment that
    runs faster than the issue width the model gives it (Zen 4: `add r64, imm8` and two
    `nop` 0.34 cycles, a nop sharing the slot before it; no port mapping makes three
    instructions at six a cycle take less than 0.5)."""
    out = []
    for e in experiments:
        if not e.cycles or not all(f in uops for f, _ in e.counts):
            continue
        ports, front = _port_cycles(uops, e.counts), _front_end_cycles(e.counts, r_max)
        model = max(ports, front)
        if abs(model - e.cycles) <= tolerance * e.cycles:
            continue
        if e.cycles < model and front >= ports:
            continue                                  # the front end's, not the ports'
        out.append(e)
    return out


def partners_to_fit(still_wrong, fitted) -> list[str]:
    """The forms of kernel pairs still mispredicted (experiments) after `fitted` were fitted
    again, besides those: the other form of each pair (a core form, or an extension form no
    kernel pair had put off before), to be fitted in turn. Never a split variant (measured
    alone, used for its kernel's load only)."""
    return sorted({f for e in still_wrong for f, _ in e.counts
                   if f not in set(fitted) and not is_split_variant(f)})


def mean_error(uops: dict, experiments, r_max: float | None = None) -> float:
    """Mean relative error of the model over the measured experiments it has every form of."""
    errors = [abs(predicted_cycles(uops, e.counts, r_max) - e.cycles) / e.cycles
              for e in experiments if e.cycles and all(f in uops for f, _ in e.counts)]
    return float(np.mean(errors)) if errors else 0.0


def refit(uops: dict, n_ports: int, measured, forms, *, r_max: float | None = None) -> dict:
    """New uops for `forms` (form -> uops, the forms that moved) fitted again on `measured`,
    every other form fixed: from their current uops, and afresh (the slot moves stop in a
    local optimum: Zen 4's `cmp r64, m64` kept a load uop on an ALU port from its current
    uops). The closer of the two fits is the start; then each form in turn takes whichever
    of its uops (current, or in either fit) makes its own experiments closest (per_form): a
    joint fit trades forms against each other, and of dozens of forms one fit gets some
    right and the other fit others (Zen 4, built afresh: `cmp m64, r64` with its load on
    ports C, F, I, J in the fit kept, on the loads' A, C, I in the other). Nothing where the
    result is not closer on `measured` (mean relative error)."""
    fixed = {f: u for f, u in uops.items() if f not in forms}
    before = mean_error(uops, measured.experiments, r_max)
    best, best_error = dict(uops), before
    candidates = {f: [tuple(uops[f])] for f in forms}
    for start in ({f: uops[f] for f in forms}, None):
        fit = fit_new_forms(fixed, n_ports, measured, forms, r_max=r_max, start=start)
        for f, u in fit.uops.items():
            if tuple(u) not in candidates[f]:
                candidates[f].append(tuple(u))
        error = mean_error({**uops, **fit.uops}, measured.experiments, r_max)
        if error < best_error:
            best, best_error = {**uops, **fit.uops}, error
    chosen = per_form(best, candidates, measured.experiments, r_max)
    if mean_error(chosen, measured.experiments, r_max) >= before:
        return {}
    return {f: chosen[f] for f in forms if tuple(chosen[f]) != tuple(uops[f])}


# a form's singleton is its most direct measurement: a candidate that misses it by more than
# this share is taken only where every candidate does (Zen 4: a kernel-pair refit left `movdqu
# xmm, m128` at 0.33 cycles alone, measured 0.50, for a closer fit of its pairs)
SINGLETON_SLACK = 0.1


def per_form(uops: dict, candidates: dict, experiments, r_max: float | None = None,
             passes: int = 3) -> dict:
    """`uops` with each form of `candidates` (form -> its possible uops) on the candidate
    that makes the experiments it is in closest (mean relative error), of those that keep the
    form's own singleton within SINGLETON_SLACK where any does; the others as they are at
    that moment; in turn, until a pass changes nothing (at most `passes`)."""
    out = dict(uops)
    mine: dict[str, list] = {}
    for e in experiments:
        if e.cycles:
            for f, _ in e.counts:
                if f in candidates:
                    mine.setdefault(f, []).append(e)
    for _ in range(passes):
        changed = False
        for f, options in candidates.items():
            exps = [e for e in mine.get(f, ()) if all(g in out for g, _ in e.counts)]
            if len(options) < 2 or not exps:
                continue
            error = {u: mean_error({**out, f: u}, exps, r_max) for u in options}
            alone = [e for e in exps if len(e.counts) == 1]
            kept = [u for u in options if mean_error({**out, f: u}, alone, r_max)
                    <= SINGLETON_SLACK] or options
            pick = min(kept, key=error.__getitem__)
            current = tuple(out[f])
            if pick != current and (error[pick] < error[current] - 1e-12 or current not in kept):
                out[f], changed = pick, True
        if not changed:
            break
    return out
