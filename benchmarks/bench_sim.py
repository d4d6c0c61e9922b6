"""Simulator speed: our exact engine vs the HiGHS LP, side by side in one run.

Workloads (issue #2):
  (a) the 2,000 SKL validation experiments under PMEvo's published mapping;
  (b) 10,000 random length-5 experiments over random three-level mappings with
      10 ports (~16 distinct uops per experiment);
  (c) the inference fitness loop: 1,000 random mappings of 310 forms x the
      6,000 SKL training experiments, numba-parallel on all cores.
The LP is timed on a sample (it is ~1,000x slower) and every sampled LP value is
checked against the engine. Single-threaded unless stated.

Usage: python benchmarks/bench_sim.py [--lp-sample N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pmpredict import sim  # noqa: E402
from pmpredict.data.experiments import load_experiments, load_many  # noqa: E402
from pmpredict.data.model_files import load_model  # noqa: E402

ARTIFACT = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "pmevo-artifact")
# PMEvo's C++ simulator (AVX2 build, no I/O), measured on this machine (issue #2)
PMEVO_CPP = {"a": 1.72e6, "b": 0.41e6}


def random_mapping_arrays(rng, n_forms, n_ports, max_uops, max_count):
    masks = np.zeros((n_forms, max_uops), np.int64)
    counts = np.zeros((n_forms, max_uops))
    for f in range(n_forms):
        for j in range(rng.integers(1, max_uops + 1)):
            masks[f, j] = rng.integers(1, 1 << n_ports)
            counts[f, j] = rng.integers(1, max_count + 1)
    return masks, counts


def random_experiment_arrays(rng, n_exp, n_forms, length):
    ptr = np.arange(n_exp + 1, dtype=np.int64) * length
    forms = rng.integers(0, n_forms, size=n_exp * length).astype(np.int64)
    return ptr, forms, np.ones(n_exp * length)


def best_rate(fn, n_items, repeat):
    """Items per second of CPU time (process_time), best of `repeat`.

    Single-threaded work: CPU time equals wall time on a quiet machine and is far
    less disturbed than wall time when other jobs share the two cores.
    """
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return n_items / best


def lp_rate(masks, counts, ptr, forms, mults, sample, engine_cycles, n_ports):
    t0 = time.process_time()
    for e in range(sample):
        lo, hi = ptr[e], ptr[e + 1]
        umask, umass, _ = sim.uop_masses(masks, counts, forms[lo:hi], mults[lo:hi])
        cycles = sim.lp_schedule(umask, umass, n_ports)[0]
        if abs(cycles - engine_cycles[e]) > 1e-7 * max(1.0, cycles):
            raise SystemExit(f"MISMATCH on experiment {e}: LP {cycles} vs engine {engine_cycles[e]}")
    return sample / (time.process_time() - t0)


def distinct_uops(masks, counts, ptr, forms):
    out = []
    for e in range(len(ptr) - 1):
        f = forms[ptr[e]:ptr[e + 1]]
        out.append(len({int(m) for m, c in zip(masks[f].ravel(), counts[f].ravel()) if c > 0}))
    return float(np.mean(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lp-sample", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--population", type=int, default=1000)
    args = ap.parse_args()

    import numba
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.processor() or platform.machine()}  "
          f"{os.cpu_count()} cpus  numba {numba.__version__}  numpy {np.__version__}")
    with open("/proc/cpuinfo") as fh:
        model_name = next((l.split(":", 1)[1].strip() for l in fh if l.startswith("model name")), "?")
    print(f"# cpu: {model_name}")
    numba.set_num_threads(1)
    rows = []

    # (a) SKL validation under PMEvo's mapping
    model = load_model(os.path.join(ARTIFACT, "SKL", "mapping_pmevo.json"))
    exps = load_experiments(os.path.join(ARTIFACT, "SKL", "validation_len06.json"))
    masks, counts = model.to_arrays()
    ptr, forms, mults = exps.to_arrays(model.form_index())
    sim.simulate_arrays(masks, counts, ptr, forms, mults)           # compile / load cache
    ours = best_rate(lambda: sim.simulate_arrays(masks, counts, ptr, forms, mults), len(exps), args.repeat)
    cycles, _ = sim.simulate_arrays(masks, counts, ptr, forms, mults)
    lp = lp_rate(masks, counts, ptr, forms, mults, args.lp_sample, cycles, len(model.ports))
    rows.append(("a", "SKL validation, PMEvo mapping", distinct_uops(masks, counts, ptr, forms), ours, lp))

    # (b) random 10-port three-level mappings, length-5 experiments
    rng = np.random.default_rng(2026)
    n_maps, per_map = 10, 1000
    cases = []
    for _ in range(n_maps):
        m, c = random_mapping_arrays(rng, 310, 10, max_uops=6, max_count=2)
        cases.append((m, c) + random_experiment_arrays(rng, per_map, 310, 5))

    def run_b():
        for m, c, p, f, mu in cases:
            sim.simulate_arrays(m, c, p, f, mu)
    run_b()
    ours_b = best_rate(run_b, n_maps * per_map, args.repeat)
    lp_b = 0.0
    per = max(1, args.lp_sample // n_maps)
    t_lp = 0.0
    for m, c, p, f, mu in cases:
        cyc, _ = sim.simulate_arrays(m, c, p, f, mu)
        t0 = time.process_time()
        lp_rate(m, c, p, f, mu, per, cyc, 10)
        t_lp += time.process_time() - t0
    lp_b = per * n_maps / t_lp
    d_b = float(np.mean([distinct_uops(*case[:4]) for case in cases]))
    rows.append(("b", "random 10-port 3-level, len 5", d_b, ours_b, lp_b))

    # what each solver path costs on its own (the engine picks per component)
    methods = [("enum", sim.METHOD_ENUM), ("port lattice", sim.METHOD_SOS), ("flow", sim.METHOD_FLOW),
               ("auto", sim.METHOD_AUTO)]
    per_method = {}
    for label, method in methods:
        sim.simulate_arrays(masks, counts, ptr, forms, mults, method=method)
        ra = best_rate(lambda: sim.simulate_arrays(masks, counts, ptr, forms, mults, method=method),
                       len(exps), args.repeat)
        if method == sim.METHOD_ENUM:
            rb = float("nan")      # > 16 uops per component: falls back to the LP; not comparable
        else:
            def run_m():
                for m, c, p, f, mu in cases:
                    sim.simulate_arrays(m, c, p, f, mu, method=method)
            run_m()
            rb = best_rate(run_m, n_maps * per_map, args.repeat)
        per_method[label] = (ra, rb)

    print()
    print("solver paths alone (exp/s):  " + "   ".join(
        f"{label}: a {ra:,.0f} b {rb:,.0f}" for label, (ra, rb) in per_method.items()))
    print()
    print(f"{'':2} {'workload':32} {'uops/exp':>8} {'ours exp/s':>12} {'HiGHS exp/s':>12} "
          f"{'vs LP':>8} {'vs PMEvo C++':>13}")
    for key, name, d, o, l in rows:
        print(f"{key:2} {name:32} {d:8.1f} {o:12,.0f} {l:12,.0f} {o / l:7.0f}x "
              f"{o / PMEVO_CPP[key]:12.2f}x")
    print(f"   (PMEvo C++ reference: {PMEVO_CPP['a']:,.0f}/s on (a), {PMEVO_CPP['b']:,.0f}/s on (b), "
          "measured on this machine per issue #2)")

    # (c) fitness loop: population x 6,000 SKL training experiments, all cores
    numba.set_num_threads(os.cpu_count())
    train = load_many([os.path.join(ARTIFACT, "SKL", f"train_len0{n}.json") for n in (2, 3, 4)])
    index = {f: i for i, f in enumerate(train.forms)}
    ptr, forms, mults = train.to_arrays(index)
    pop = args.population
    pm = np.zeros((pop, len(train.forms), 4), np.int64)
    pc = np.zeros((pop, len(train.forms), 4))
    for p in range(pop):
        pm[p], pc[p] = random_mapping_arrays(rng, len(train.forms), 9, max_uops=4, max_count=2)
    sim.simulate_population(pm[:2], pc[:2], ptr, forms, mults)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.simulate_population(pm, pc, ptr, forms, mults)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    work = pop * len(train)
    print(f"\n(c) fitness: {pop} mappings x {len(train)} experiments on {os.cpu_count()} threads: "
          f"{dt:.2f} s wall = {work / dt:,.0f} mapping-experiments/s "
          f"({work / dc:,.0f}/s per CPU-second, {dc / dt:.2f} cores busy)")


if __name__ == "__main__":
    main()
