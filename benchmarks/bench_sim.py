"""Simulator speed: side by side with PMEvo's C++ simulator, and against the HiGHS LP.

Workloads:
  (a) the 2,000 SKL validation experiments (validation_len06) under PMEvo's SKL mapping;
  (b) 10 random three-level 10-port mappings x 1,000 random length-5 experiments each
      (seed 2026; ~17 distinct uops per experiment);
  (c) the inference fitness loop: 1,000 random mappings of 310 forms x the 6,000 SKL
      training experiments, `simulate_population` on all cores.

Side by side on (a) and (b): PMEvo's simulator (../shared/peers/pmevo-sim, built here into
build/pmevo-sim with its build.sh) and ours read the same PMEvo JSON files (Mapping3 +
ExperimentList; (b)'s are written to build/bench_sim/). Each program runs in a process of
its own, single-threaded (NUMBA_NUM_THREADS=1 for ours), loads the files, simulates every
experiment once untimed (our numba code is compiled or loaded from its cache there; both
dump those cycles, which must agree), then times whole passes over all experiments until
at least --min-time seconds of process CPU time have passed. Both therefore EXCLUDE process
start, file loading and compilation, and include everything per pass (ours: the Python call
into numba and the result arrays). Times are process CPU time (user + sys) and user time
alone, from the child's own clocks. The two programs alternate, --rounds times; the ratio
of each round is ours / C++, and the median of those ratios is the result (other jobs on
the machine slow both programs of a round alike).

The LP is timed in-process on a sample (it is ~1,000x slower) and every sampled LP value
is checked against the engine.

Usage: python benchmarks/bench_sim.py [--rounds N] [--min-time S] [--skip-population]
       python benchmarks/bench_sim.py --child [--min-time S] [--dump FILE] MAP EXPS [MAP EXPS ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from pmpredict.predict import throughput as sim  # noqa: E402
from pmpredict.formats.experiment_files import load_experiments, load_many  # noqa: E402
from pmpredict.formats.model_files import load_model  # noqa: E402

ARTIFACT = os.path.join(ROOT, "..", "shared", "data", "pmevo-artifact")
PEER_SRC = os.path.join(ROOT, "..", "shared", "peers", "pmevo-sim")
BUILD = os.path.join(ROOT, "build")            # git-ignored
PEER_BIN = os.path.join(BUILD, "pmevo-sim", "cpp_bench")
WORK = os.path.join(BUILD, "bench_sim")


# --- workloads -----------------------------------------------------------------------

def random_mapping_arrays(rng, n_forms, n_ports, max_uops, max_count):
    masks = np.zeros((n_forms, max_uops), np.int64)
    counts = np.zeros((n_forms, max_uops))
    for f in range(n_forms):
        for j in range(rng.integers(1, max_uops + 1)):
            masks[f, j] = rng.integers(1, 1 << n_ports)
            counts[f, j] = rng.integers(1, max_count + 1)
    return masks, counts


def write_pmevo_pair(path_stem, masks, counts, n_ports, experiments):
    """Write a Mapping3 and an ExperimentList (forms f000.., ports "0".."n-1"); returns the paths."""
    forms = [f"f{i:03d}" for i in range(masks.shape[0])]
    ports = [str(p) for p in range(n_ports)]
    arch = {"kind": "Architecture", "insns": forms, "ports": ports}
    assignment = {}
    for f, name in enumerate(forms):
        uops = []
        for m, c in zip(masks[f], counts[f]):
            uops += [[str(p) for p in range(n_ports) if int(m) >> p & 1]] * int(c)
        assignment[name] = uops
    exps = [{"kind": "Experiment", "iseq": [forms[i] for i in e]} for e in experiments]
    mapping_path, exps_path = path_stem + "_mapping.json", path_stem + "_exps.json"
    with open(mapping_path, "w") as fh:
        json.dump({"kind": "Mapping3", "arch": arch, "assignment": assignment}, fh)
    with open(exps_path, "w") as fh:
        json.dump({"kind": "ExperimentList", "arch": dict(arch, name="random10"), "exps": exps}, fh)
    return mapping_path, exps_path


def workload_files():
    """{"a": [map, exps], "b": [map1, exps1, ...]}: the PMEvo JSON files both programs read."""
    skl = os.path.join(ARTIFACT, "SKL")
    files = {"a": [os.path.join(skl, "mapping_pmevo.json"), os.path.join(skl, "validation_len06.json")],
             "b": []}
    os.makedirs(WORK, exist_ok=True)
    rng = np.random.default_rng(2026)
    for k in range(10):
        masks, counts = random_mapping_arrays(rng, 310, 10, max_uops=6, max_count=2)
        experiments = rng.integers(0, 310, size=(1000, 5))
        files["b"] += write_pmevo_pair(os.path.join(WORK, f"random10_{k}"), masks, counts, 10,
                                       experiments)
    return files


def load_arrays(files):
    """[(masks, counts, ptr, forms, mults)] for each MAP EXPS pair, as simulate_arrays takes them."""
    cases = []
    for map_path, exps_path in zip(files[::2], files[1::2]):
        model = load_model(map_path)
        exps = load_experiments(exps_path)
        cases.append(model.to_arrays() + exps.to_arrays(model.form_index()))
    return cases


# --- our side of the comparison: a child process, like cpp_bench -----------------------

def child(argv):
    ap = argparse.ArgumentParser(prog="bench_sim.py --child")
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--dump")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    cases = load_arrays(args.files)
    n_exp = sum(len(c[2]) - 1 for c in cases)
    first = np.concatenate([sim.simulate_arrays(*c)[0] for c in cases])   # compiles / loads cache
    if args.dump:
        np.savetxt(args.dump, first, fmt="%.17g")
    passes = 0
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0, t0 = time.process_time(), time.perf_counter()
    while True:
        for c in cases:
            sim.simulate_arrays(*c)
        passes += 1
        c1 = time.process_time()
        if c1 - c0 >= args.min_time:
            break
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    user = r1.ru_utime - r0.ru_utime
    total = n_exp * passes
    print(json.dumps({"impl": "pmpredict", "n_exp": n_exp, "passes": passes, "user_s": user,
                      "cpu_s": c1 - c0, "wall_s": t1 - t0, "exp_per_s_user": total / user,
                      "exp_per_s_cpu": total / (c1 - c0), "exp_per_s_wall": total / (t1 - t0),
                      "minflt_per_pass": (r1.ru_minflt - r0.ru_minflt) / passes}))


def run_side(cmd, min_time, files, dump=None):
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    argv = cmd + ["--min-time", str(min_time)] + (["--dump", dump] if dump else []) + files
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def build_peer():
    """Path of PMEvo's timing driver, built if needed; None (and a message) when impossible."""
    if not os.path.isdir(PEER_SRC):
        print(f"SKIP side-by-side: {os.path.normpath(PEER_SRC)} is missing (PMEvo's simulator)")
        return None
    if shutil.which("g++") is None:
        print("SKIP side-by-side: no g++ to build PMEvo's simulator")
        return None
    sources = [os.path.join(d, f) for d, _, fs in os.walk(PEER_SRC) for f in fs]
    if not os.path.exists(PEER_BIN) or os.path.getmtime(PEER_BIN) < max(map(os.path.getmtime, sources)):
        print(f"# building {os.path.relpath(PEER_BIN, ROOT)} with {os.path.normpath(PEER_SRC)}/build.sh")
        subprocess.run(["bash", os.path.join(PEER_SRC, "build.sh"), os.path.dirname(PEER_BIN)],
                       check=True, stdout=subprocess.DEVNULL)
    return PEER_BIN


def check_agreement(key, files, peer, ours):
    """Both programs' cycles for every experiment; stops on a disagreement beyond float32 rounding."""
    a_path, b_path = os.path.join(WORK, f"{key}_cpp.txt"), os.path.join(WORK, f"{key}_ours.txt")
    run_side(peer, 0.0, files, a_path)
    run_side(ours, 0.0, files, b_path)
    cpp, mine = np.loadtxt(a_path, ndmin=1), np.loadtxt(b_path, ndmin=1)
    if cpp.shape != mine.shape:
        raise SystemExit(f"({key}) {len(cpp)} C++ results vs {len(mine)} of ours")
    rel = np.abs(cpp - mine) / np.maximum(np.abs(mine), 1e-300)
    worst = int(np.argmax(rel))
    # the C++ accumulates masses and divides in single precision: ~6e-8 relative
    if rel[worst] > 1e-6:
        raise SystemExit(f"({key}) MISMATCH on experiment {worst}: C++ {cpp[worst]} vs ours {mine[worst]}")
    return len(mine), float(rel[worst])


def side_by_side(key, files, peer, ours, rounds, min_time):
    """Alternate the two programs; returns the per-round results of each."""
    results = {"cpp": [], "ours": []}
    for r in range(rounds):
        order = [("cpp", peer), ("ours", ours)]
        if r % 2:
            order.reverse()            # neither program always runs right after the other
        for name, cmd in order:
            results[name].append(run_side(cmd, min_time, files))
        c, o = results["cpp"][-1], results["ours"][-1]
        print(f"  ({key}) round {r + 1}: C++ {c['exp_per_s_cpu']:>11,.0f}/s cpu "
              f"{c['exp_per_s_user']:>11,.0f}/s user | ours {o['exp_per_s_cpu']:>11,.0f}/s cpu "
              f"{o['exp_per_s_user']:>11,.0f}/s user | ratio cpu "
              f"{o['exp_per_s_cpu'] / c['exp_per_s_cpu']:.2f}x user "
              f"{o['exp_per_s_user'] / c['exp_per_s_user']:.2f}x   load {loadavg()}", flush=True)
    return results


# --- in-process figures: the LP, each solver path, the population ---------------------

def best_rate(fn, n_items, repeat):
    """Items per second of process CPU time, best of `repeat`."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return n_items / best


def lp_rate(cases, sample):
    """LP experiments per CPU second on the first `sample` experiments of each case, each checked."""
    n, dt = 0, 0.0
    for masks, counts, ptr, forms, mults in cases:
        engine = sim.simulate_arrays(masks, counts, ptr, forms, mults)[0]
        n_ports = int(masks.max()).bit_length()
        t0 = time.process_time()
        for e in range(min(sample, len(ptr) - 1)):
            lo, hi = ptr[e], ptr[e + 1]
            umask, umass, _ = sim.uop_masses(masks, counts, forms[lo:hi], mults[lo:hi])
            cycles = sim.lp_schedule(umask, umass, n_ports)[0]
            if abs(cycles - engine[e]) > 1e-7 * max(1.0, cycles):
                raise SystemExit(f"MISMATCH on experiment {e}: LP {cycles} vs engine {engine[e]}")
            n += 1
        dt += time.process_time() - t0
    return n / dt


def distinct_uops(cases):
    out = []
    for masks, counts, ptr, forms, _ in cases:
        for e in range(len(ptr) - 1):
            f = forms[ptr[e]:ptr[e + 1]]
            out.append(len({int(m) for m, c in zip(masks[f].ravel(), counts[f].ravel()) if c > 0}))
    return float(np.mean(out))


def solver_paths(cases, repeat, with_enum):
    """Rate of each solver path forced alone (in-process, one thread)."""
    n = sum(len(c[2]) - 1 for c in cases)
    rates = {}
    methods = [("port lattice", sim.METHOD_SOS), ("flow", sim.METHOD_FLOW), ("auto", sim.METHOD_AUTO)]
    if with_enum:        # beyond 16 uops in a component enumeration hands over to the LP
        methods.insert(0, ("enum", sim.METHOD_ENUM))
    for label, method in methods:
        def run():
            for c in cases:
                sim.simulate_arrays(*c, method=method)
        run()
        rates[label] = best_rate(run, n, repeat)
    return rates


def population(rng, n_pop):
    import numba
    numba.set_num_threads(os.cpu_count())
    train = load_many([os.path.join(ARTIFACT, "SKL", f"train_len0{n}.json") for n in (2, 3, 4)])
    ptr, forms, mults = train.to_arrays({f: i for i, f in enumerate(train.forms)})
    pm = np.zeros((n_pop, len(train.forms), 4), np.int64)
    pc = np.zeros((n_pop, len(train.forms), 4))
    for p in range(n_pop):
        pm[p], pc[p] = random_mapping_arrays(rng, len(train.forms), 9, max_uops=4, max_count=2)
    sim.simulate_population(pm[:2], pc[:2], ptr, forms, mults)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.simulate_population(pm, pc, ptr, forms, mults)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    work = n_pop * len(train)
    print(f"\n(c) fitness: {n_pop} mappings x {len(train)} experiments on {os.cpu_count()} threads: "
          f"{dt:.2f} s wall = {work / dt:,.0f} mapping-experiments/s "
          f"({work / dc:,.0f}/s per CPU-second, {dc / dt:.2f} cores busy)   load {loadavg()}")


def loadavg():
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def main():
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per workload")
    ap.add_argument("--min-time", type=float, default=2.0, help="CPU seconds per timed run")
    ap.add_argument("--lp-sample", type=int, default=300, help="LP experiments per workload")
    ap.add_argument("--repeat", type=int, default=5, help="best-of for the in-process rates")
    ap.add_argument("--population", type=int, default=1000)
    ap.add_argument("--skip-population", action="store_true")
    args = ap.parse_args()

    import numba
    with open("/proc/cpuinfo") as fh:
        model_name = next((l.split(":", 1)[1].strip() for l in fh if l.startswith("model name")), "?")
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}  cpu: {model_name}  {os.cpu_count()} cpus  "
          f"numba {numba.__version__}  numpy {np.__version__}  load {loadavg()}")
    print(f"# command: python {' '.join(sys.argv)}")

    files = workload_files()
    ours = [sys.executable, os.path.abspath(__file__), "--child"]
    peer = build_peer()
    medians = {}
    if peer is not None:
        for key in ("a", "b"):
            n, worst = check_agreement(key, files[key], [peer], ours)
            print(f"({key}) agreement: {n} experiments, max relative difference C++ vs ours {worst:.1e}")
            res = side_by_side(key, files[key], [peer], ours, args.rounds, args.min_time)
            ratio = {clock: statistics.median(o[f"exp_per_s_{clock}"] / c[f"exp_per_s_{clock}"]
                                              for c, o in zip(res["cpp"], res["ours"]))
                     for clock in ("cpu", "user")}
            med = {side: {clock: statistics.median(r[f"exp_per_s_{clock}"] for r in runs)
                          for clock in ("cpu", "user")} for side, runs in res.items()}
            faults = {side: 1000 * statistics.median(r["minflt_per_pass"] for r in runs) / runs[0]["n_exp"]
                      for side, runs in res.items()}
            medians[key] = med["ours"]["cpu"]
            print(f"  ({key}) medians: C++ {med['cpp']['cpu']:,.0f}/s cpu {med['cpp']['user']:,.0f}/s user; "
                  f"ours {med['ours']['cpu']:,.0f}/s cpu {med['ours']['user']:,.0f}/s user; "
                  f"median ratio cpu {ratio['cpu']:.2f}x user {ratio['user']:.2f}x; minor page faults "
                  f"per 1,000 experiments: C++ {faults['cpp']:.1f} ours {faults['ours']:.1f}")

    numba.set_num_threads(1)
    print()
    print(f"{'':2} {'workload':32} {'uops/exp':>8} {'ours exp/s':>12} {'HiGHS exp/s':>12} {'vs LP':>8}")
    for key, name in (("a", "SKL validation, PMEvo mapping"), ("b", "random 10-port 3-level, len 5")):
        cases = load_arrays(files[key])
        n = sum(len(c[2]) - 1 for c in cases)
        if key not in medians:        # no side-by-side run: measure ours in-process

            def run(cases=cases):
                for c in cases:
                    sim.simulate_arrays(*c)
            run()
            medians[key] = best_rate(run, n, args.repeat)
        lp = lp_rate(cases, args.lp_sample // len(cases))
        print(f"{key:2} {name:32} {distinct_uops(cases):8.1f} {medians[key]:12,.0f} {lp:12,.0f} "
              f"{medians[key] / lp:7.0f}x")
        paths = solver_paths(cases, args.repeat, with_enum=key == "a")
        print("   solver paths alone, in-process (exp/s): "
              + "   ".join(f"{label} {rate:,.0f}" for label, rate in paths.items()))

    if not args.skip_population:
        population(np.random.default_rng(2026), args.population)


if __name__ == "__main__":
    main()
