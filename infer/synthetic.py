"""Random ground-truth machines and random experiments, from a seed (tests and benchmarks).

A synthetic machine has P ports named "0".."P-1" and F forms "S00", "S01", ... . Its uops are
drawn from a pool of port sets (real machines reuse a few: ALU, vector, load, ...), each of
1..min(P, 4) ports (no real uop has more than four or five). Two kinds:

* two-level (max_uops = 1): every form is one uop;
* three-level (max_uops > 1): every form has 1..max_uops uops in total (a uop may repeat,
  i.e. have a count > 1).

With `blocking=True` (the default) every port set of the pool is also the whole of some
single-uop form, the assumption of the uops.info-style algorithm (infer/counters.py): there
is a blocking instruction for every port set a uop uses. Forms are shuffled so the blocking
ones are not simply the first.
"""

from __future__ import annotations

from itertools import combinations_with_replacement

import numpy as np

from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.model.machine import MachineModel, normalize_uops

MAX_UOP_PORTS = 4


def _port_set(rng, n_ports: int) -> int:
    size = int(rng.integers(1, min(n_ports, MAX_UOP_PORTS) + 1))
    ports = rng.choice(n_ports, size=size, replace=False)
    return int(sum(1 << int(p) for p in ports))


def random_machine(seed: int, n_ports: int = 4, n_forms: int = 8, max_uops: int = 1, *,
                   pool: int | None = None, blocking: bool = True,
                   r_max: float | None = None, name: str | None = None) -> MachineModel:
    """A random ground truth (deterministic in its arguments). pool: distinct port sets
    (default about half the forms, at least 2, at most 2^P - 1)."""
    if n_ports < 1 or n_forms < 1 or max_uops < 1:
        raise ValueError("ports, forms and max_uops must be >= 1")
    rng = np.random.default_rng([seed, n_ports, n_forms, max_uops])
    size = pool or max(2, n_forms // 2)
    size = min(size, (1 << n_ports) - 1, n_forms if blocking else size)
    sets: list[int] = []
    while len(sets) < size:
        m = _port_set(rng, n_ports)
        if m not in sets:
            sets.append(m)
    uops: list[tuple] = []
    if blocking:
        uops += [((m, 1),) for m in sets]
    while len(uops) < n_forms:
        if max_uops == 1:
            uops.append(((sets[int(rng.integers(len(sets)))], 1),))
            continue
        total = int(rng.integers(1, max_uops + 1))
        picks = [sets[int(rng.integers(len(sets)))] for _ in range(total)]
        uops.append(normalize_uops((m, 1) for m in picks))
    order = rng.permutation(n_forms)
    forms = {f"S{i:02d}": uops[int(order[i])] for i in range(n_forms)}
    return MachineModel(name or f"synthetic-{seed}", "x86", tuple(str(p) for p in range(n_ports)),
                        forms, r_max=r_max,
                        provenance={"source": "pmpredict.infer.synthetic.random_machine",
                                    "seed": seed, "max_uops": max_uops, "blocking": blocking})


def random_experiments(forms, n: int, max_length: int, seed: int,
                       min_length: int = 1) -> ExperimentSet:
    """n random multisets of min_length..max_length forms (uniform length, forms uniform
    with repetition)."""
    rng = np.random.default_rng([seed, n, max_length, 17])
    forms = list(forms)
    exps = []
    for _ in range(n):
        length = int(rng.integers(min_length, max_length + 1))
        exps.append(Experiment.of([forms[int(i)] for i in rng.integers(len(forms), size=length)]))
    return ExperimentSet(tuple(forms), tuple(exps), "x86", "random")


def all_experiments(forms, max_length: int) -> ExperimentSet:
    """Every multiset of 1..max_length forms (C(F + L, L) - 1 of them)."""
    forms = list(forms)
    exps = [Experiment.of(list(c)) for length in range(1, max_length + 1)
            for c in combinations_with_replacement(forms, length)]
    return ExperimentSet(tuple(forms), tuple(exps), "x86", "all")


def agreement(truth: MachineModel, model: MachineModel, experiments: ExperimentSet,
              tol: float = 1e-9) -> float:
    """Share of `experiments` that `model` predicts exactly as `truth` (the exact simulator;
    equal within tol relative)."""
    # deferred: the simulator loads numba
    from pmpredict.predict.throughput import simulate
    a, _ = simulate(truth, experiments)
    b, _ = simulate(model, experiments)
    same = np.abs(a - b) <= tol * np.maximum(1.0, np.abs(a))
    return float(np.mean(same)) if len(same) else 1.0
