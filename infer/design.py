"""Experiment designs: which experiments to measure for a form list.

* ``pairs`` (PMEvo): singletons, every pair {A:1, B:1} and the weighted pairs {A:1, B:n}.
  n(n-1) experiments for n forms: 15,134 for the 125 host forms, a million for 1,000.
* ``blockers``: the uops.info idea without performance counters. A form's port use shows
  as the slowdown it causes next to a *blocker*, a form that saturates one port set; so
  every form is measured beside a few blockers only. The blockers come from a small first
  inference:

  1. singletons of every form (as before);
  2. a *pilot*: PILOT_SIZE forms chosen for variety (operand classes, memory access,
     throughput), with all their pairs and weighted pairs, and a quick inference on them;
  3. blockers: for each port set the pilot mapping uses, the pilot form that loads it most
     purely (all its uops on that set), the sets used by most pilot forms first, at most
     MAX_BLOCKERS;
  4. every other form beside every blocker, *balanced*: {A:1, B:1} when the two take about
     as long, else the slower once and the faster n = ceil(t_slow / t_fast) times (the
     weighted pair), so both saturate their ports and a shared port shows.

  Experiments: n + P(P-1) + (n - P) b, linear in n (3,000 to 4,000 for the host forms; the
  comparison with the full design is in docs/BENCHMARKS.md, benchmarks/bench_design.py).

Engine layer: plain functions over forms, throughputs and mappings; no I/O.
"""

from __future__ import annotations

import math

from pmpredict import semantics
from pmpredict.data.experiments import Experiment

from .experiments import pair_experiments, weighted_pair_experiments

DESIGNS = ("pairs", "blockers")
PAIRS_UP_TO = 150            # forms: above, all pairs cost more than the blockers' minutes


def default_design(n_forms: int) -> str:
    """pairs (PMEvo, n^2 experiments) for a short form list, blockers (linear) beyond."""
    return "pairs" if n_forms <= PAIRS_UP_TO else "blockers"
PILOT_SIZE = 32
MAX_BLOCKERS = 14
PILOT_SWEEPS = 8             # refinement sweeps of the pilot inference (it only names port sets)


def signature(form: str) -> tuple:
    """What a form's ports are most likely to depend on, as far as the form string says:
    its memory access and the register classes and widths of its operands."""
    from pmpredict.forms import parse_form
    template = parse_form(form)
    fs = semantics.get(template.isa).form(template)
    regs = tuple(sorted({(o.reg_class, o.width or 0) for o in template.operands
                         if o.kind == "reg"}))
    return fs.memory, regs


def throughput_band(t: float) -> int:
    """Reciprocal throughputs in half-octave bands (0.25, 0.33, 0.5, 1, 1.5 ... apart)."""
    return int(math.floor(2 * math.log2(max(t, 1e-3))))


def pilot_forms(forms, throughput: dict, size: int = PILOT_SIZE) -> list[str]:
    """`size` forms for variety: one per (signature, throughput band) group in turn, the
    groups taken round robin so every signature is represented before any twice."""
    forms = [f for f in forms if throughput.get(f)]
    if len(forms) <= size:
        return list(forms)
    groups: dict[tuple, dict[int, list[str]]] = {}
    for f in forms:
        groups.setdefault(signature(f), {}).setdefault(throughput_band(throughput[f]), []).append(f)
    queues = []
    for sig in sorted(groups, key=repr):
        bands = groups[sig]
        # within a signature: bands in turn, each band's forms in list order
        order = []
        depth = max(len(v) for v in bands.values())
        for k in range(depth):
            order += [bands[b][k] for b in sorted(bands) if k < len(bands[b])]
        queues.append(order)
    chosen: list[str] = []
    k = 0
    while len(chosen) < size:
        for q in queues:
            if k < len(q) and len(chosen) < size:
                chosen.append(q[k])
        k += 1
    return [f for f in forms if f in set(chosen)]


def pilot_experiments(pilot, throughput: dict) -> list[Experiment]:
    return pair_experiments(pilot) + weighted_pair_experiments(pilot, throughput)


def choose_blockers(uops: dict, throughput: dict, limit: int = MAX_BLOCKERS) -> list[str]:
    """Blockers from a (pilot) mapping: uops[form] = ((port mask, count), ...).

    For each port set, the forms that put all their uops on it (pure) and, failing that,
    the form with the largest share of its uops there; port sets ordered by how many forms
    use them, the form with the smallest reciprocal throughput per uop (the strongest
    saturation per instance) first among equals."""
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


def balanced_pair(a: str, b: str, throughput: dict) -> Experiment:
    """{slow: 1, fast: ceil(t_slow / t_fast)} (the plain pair when that is 1)."""
    ta, tb = throughput[a], throughput[b]
    slow, fast = (a, b) if ta >= tb else (b, a)
    n = max(1, math.ceil(max(ta, tb) / min(ta, tb) - 1e-9))
    return Experiment.of({slow: 1, fast: n})


def blocker_experiments(forms, blockers, throughput: dict, done=()) -> list[Experiment]:
    """Every form beside every blocker (balanced), except pairs already in `done` (a set of
    frozensets of two forms) and a blocker beside itself."""
    seen = set(done)
    out = []
    for f in forms:
        for b in blockers:
            key = frozenset((f, b))
            if f == b or key in seen:
                continue
            seen.add(key)
            out.append(balanced_pair(f, b, throughput))
    return out


def pilot_mapping(measured, pilot, n_ports: int, seed: int = 0) -> dict:
    """A quick mapping of the pilot forms (uops per form) from their measured experiments."""
    from .pipeline import Inference, InferConfig
    from .prepare import prepare
    prepared = prepare(measured, n_ports)
    config = InferConfig(seed=seed, max_sweeps=PILOT_SWEEPS)
    masks, counts = Inference(prepared.problem, config).run()
    reps = {f: i for i, f in enumerate(prepared.problem.forms)}
    out = {}
    for f in pilot:
        i = reps.get(prepared.form_of.get(f))
        if i is None:
            continue
        out[f] = tuple((int(masks[i, j]), int(round(counts[i, j])))
                       for j in range(masks.shape[1]) if counts[i, j] > 0)
    return out


def pair_keys(experiments) -> set:
    """frozensets of the two forms of every two-form experiment."""
    return {frozenset(f for f, _ in e.counts) for e in experiments if len(e.counts) == 2}


def design_size(n: int, pilot: int = PILOT_SIZE, blockers: int = MAX_BLOCKERS) -> int:
    """Experiments of the blocker design for n forms (upper bound: weighted pairs counted
    for every pilot pair)."""
    p = min(n, pilot)
    return n + p * (p - 1) + (n - p) * blockers
