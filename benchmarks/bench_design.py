"""Experiment designs on live hardware: all pairs (PMEvo) against blockers (infer/design.py).

    python3 benchmarks/bench_design.py [--forms FILE] [--heldout 200] [--seed 7]
                                       [--cost-sample 120] [--extrapolate 1000]
                                       [--skip-synthetic | --synthetic-only] [--json OUT]

1. Measures (through the measurement cache, so a rerun measures nothing) the host forms'
   singletons, all pairs and weighted pairs (design "pairs"), and the blocker design (its
   pilot and blocker experiments are pairs and weighted pairs too, so they come from the
   same cache: both designs see identical measurements of the experiments they share; its
   mixes are measured once and cached too).
2. Measures held-out random experiments, `--heldout` of length 4 and as many of length 5
   (seeds --seed and --seed + 1), never used in training.
3. Cost: times `--cost-sample` fresh random pairs and the latency chains of 12 forms with
   the cache off (wall time, and the CPU time of this process, the harness and the compiler).
4. Infers a mapping from each design (the settings of `pmpredict infer --measure`: 10 ports,
   the measured issue width) and prints the experiments, the measuring time (experiments x
   cost), the inference time and the MAPE / Kendall tau on the held-out experiments.
5. Unless --skip-synthetic: the blocker design's inference on `--extrapolate` synthetic
   forms (each gets the uops of a random form of the built-in zen4-vm, experiments
   simulated with 2% noise), measured, not extrapolated; with the costs of step 3, the
   whole pipeline for that many forms on this host.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import resource
import sys
import time
from dataclasses import replace

import numpy as np

from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.infer import design as designs
from pmpredict.infer.singletons_and_pairs import singleton_experiments, singleton_throughputs
from pmpredict.host.training import measure_training_set
from pmpredict.measure import (default_cache_dir, default_forms, load_form_list,
                               measure_experiment_set)
from pmpredict.measure.cpu import cpu_name
from pmpredict.infer.pmevo import Inference, InferConfig
from pmpredict.infer.prepare import prepare
from pmpredict.infer.result import mapping_to_model
from pmpredict.predict.metrics import evaluate_model
from pmpredict.formats.model_files import load_model
from pmpredict.model.machine import MachineModel

PORTS = 10


def random_experiments(forms, n, length, seed) -> list[Experiment]:
    rng = random.Random(seed)
    return [Experiment.of([rng.choice(forms) for _ in range(length)]) for _ in range(n)]


def infer(train: ExperimentSet, seed: int, r_max=None) -> tuple[MachineModel, float, float]:
    """(model, wall seconds, CPU seconds) with the settings of `pmpredict infer --measure`
    (10 ports, the measured issue width r_max, every other setting its default)."""
    wall, cpu = time.monotonic(), time.process_time()
    prepared = prepare(train, PORTS, r_max=r_max)
    masks, counts = Inference(prepared.problem, InferConfig(seed=seed)).run()
    model = mapping_to_model(prepared.problem, masks, counts, prepared.form_of, name="m",
                             isa="x86", r_max=r_max)
    return model, time.monotonic() - wall, time.process_time() - cpu


def score(model, heldout) -> dict:
    ev = evaluate_model(model, heldout)
    return {"mape": ev.mape, "kendall": ev.kendall, "n": ev.n}


def cpu_now() -> float:
    """CPU seconds of this process and its finished children (the harness, the compiler)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + r.ru_utime + r.ru_stime


def measure_cost(forms, n: int, seed: int) -> dict:
    """Seconds per experiment (wall; CPU of this process, harness and compiler) of fresh
    random pairs, the cache off."""
    rng = random.Random(seed)
    exps = [Experiment.of({a: 1, b: 1}) for a, b in
            (rng.sample(forms, 2) for _ in range(n))]
    wall, cpu = time.monotonic(), cpu_now()
    measure_experiment_set(ExperimentSet(tuple(forms), tuple(exps), "x86", "cost"), cache_dir=None)
    return {"experiments": n, "wall_s": (time.monotonic() - wall) / n,
            "cpu_s": (cpu_now() - cpu) / n}


def latency_cost(forms, n: int, seed: int) -> dict:
    """Seconds per form of the latency chains (cache off), reference chains included."""
    from pmpredict.measure.latency import measure_latencies
    sample = random.Random(seed).sample(forms, n)
    wall, cpu = time.monotonic(), cpu_now()
    measure_latencies(sample, cache_dir=None)
    return {"forms": n, "wall_s": (time.monotonic() - wall) / n,
            "cpu_s": (cpu_now() - cpu) / n}


def synthetic_inference(n_forms: int, host: MachineModel, seed: int) -> dict:
    """The blocker design on n_forms synthetic forms (each gets the uops of a random form of
    the built-in model `host`), "measured" by simulation with 2% noise: experiments,
    inference time and held-out MAPE against the simulated truth."""
    from pmpredict.predict.throughput import simulate
    rng = np.random.default_rng(seed)
    host_forms = list(host.uops)
    names = [f"F{i}" for i in range(n_forms)]
    truth = MachineModel("truth", "x86", host.ports,
                         {f: host.uops[host_forms[rng.integers(len(host_forms))]] for f in names})

    def measure(name, exps, forms):
        s = ExperimentSet(tuple(forms), tuple(exps), "x86", name)
        cycles, _ = simulate(truth, s)
        return ExperimentSet(s.forms, tuple(replace(e, cycles=float(c) * (1 + rng.normal(0, 0.02)))
                                            for e, c in zip(s.experiments, cycles)), "x86", name)
    single = measure("singletons", singleton_experiments(names), names)
    throughput = singleton_throughputs(single)
    sets, blockers = designs.design_sets("blockers", names, throughput, measure)
    train = single
    for s in sets.values():
        train = train.concat(s)
    model, infer_s, infer_cpu = infer(train, seed)
    heldout = measure("heldout", random_experiments(names, 300, 5, seed + 1), names)
    return {"forms": n_forms, "experiments": len(train), "blockers": len(blockers),
            "inference_s": infer_s, "inference_cpu_s": infer_cpu,
            **score(model, heldout)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--forms", help="form list (default: the packaged host forms)")
    ap.add_argument("--heldout", type=int, default=200, help="held-out experiments per length")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cost-sample", type=int, default=120)
    ap.add_argument("--extrapolate", type=int, default=1000)
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--synthetic-only", action="store_true",
                    help="only the inference on the synthetic machine (no measuring)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "cpu": cpu_name(), "command": "python3 " + " ".join(sys.argv),
           "load_start": os.getloadavg()}
    print(f"# {out['date']}  {out['cpu']}  {out['command']}  load average "
          f"{out['load_start'][0]:.1f}")
    if not args.synthetic_only:
        compare_designs(args, out)
    if not args.skip_synthetic:
        n = args.extrapolate
        syn = synthetic_inference(n, load_model("zen4-vm"), args.seed)
        out["synthetic"] = syn
        print(f"{n} synthetic forms (uops of random zen4-vm forms, simulated with 2% noise), "
              f"blocker design: {syn['experiments']} experiments ({syn['experiments'] / n:.1f} "
              f"per form), inference {syn['inference_s']:.0f} s wall, "
              f"{syn['inference_cpu_s']:.0f} s CPU; held-out MAPE {syn['mape']:.2f}% "
              f"(300 random length-5 experiments against the simulated truth)")
        if "cost" in out:
            cost, lat = out["cost"], out["latency_cost"]
            for what in ("wall_s", "cpu_s"):
                measuring = syn["experiments"] * cost[what] + n * lat[what]
                inference = syn["inference_s" if what == "wall_s" else "inference_cpu_s"]
                print(f"  {n} forms on this host ({what[:-2]}): measuring {measuring / 60:.1f} min "
                      f"(experiments x cost + forms x latency cost) + inference "
                      f"{inference / 60:.1f} min = {(measuring + inference) / 60:.1f} min")
    out["load_end"] = os.getloadavg()
    print(f"# load average at the end {out['load_end'][0]:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


def compare_designs(args, out: dict) -> None:
    """Both designs of the same forms, measured here (through the cache), inferred with the
    settings of `pmpredict infer --measure`, scored on the same held-out experiments."""
    from pmpredict.measure.frontend import measure_frontend
    forms = load_form_list(args.forms) if args.forms else default_forms()
    cache = default_cache_dir()
    r_max = measure_frontend(cache_dir=cache).facts.r_max
    out.update(forms=len(forms), r_max=r_max)
    results = {}
    for name in designs.DESIGNS:
        t = measure_training_set(forms, cache_dir=cache, design=name)
        train = t.combined()
        results[name] = {"experiments": len(train), "sets": {k: len(v) for k, v in t.sets.items()},
                         "blockers": t.blockers, "train": train}
    usable = sorted({f for e in results["pairs"]["train"].experiments if e.cycles
                     for f, _ in e.counts})
    heldout_exps = (random_experiments(usable, args.heldout, 4, args.seed)
                    + random_experiments(usable, args.heldout, 5, args.seed + 1))
    heldout = measure_experiment_set(ExperimentSet(tuple(usable), tuple(heldout_exps), "x86",
                                                   "held-out"), cache_dir=cache)
    cost = measure_cost(usable, args.cost_sample, args.seed)
    lat = latency_cost(usable, 12, args.seed)
    out["cost"], out["latency_cost"] = cost, lat
    print(f"{len(forms)} forms, {len(usable)} usable; held-out: {len(heldout)} random experiments "
          f"of length 4 and 5 (seeds {args.seed}, {args.seed + 1}), never used in training")
    print(f"cost: {cost['wall_s'] * 1000:.0f} ms per experiment wall, {cost['cpu_s'] * 1000:.0f} "
          f"ms CPU ({cost['experiments']} fresh pairs, cache off); latencies {lat['wall_s']:.2f} s "
          f"per form wall, {lat['cpu_s']:.2f} s CPU ({lat['forms']} forms)")
    print(f"{'design':9s} {'experiments':>11s} {'measuring (wall/CPU)':>21s} "
          f"{'inference (wall/CPU)':>21s} {'MAPE':>7s} {'tau':>6s}")
    for name, r in results.items():
        model, wall, cpu = infer(r.pop("train"), args.seed, r_max)
        r.update(measuring_s=r["experiments"] * cost["wall_s"],
                 measuring_cpu_s=r["experiments"] * cost["cpu_s"],
                 inference_s=wall, inference_cpu_s=cpu, **score(model, heldout))
        print(f"{name:9s} {r['experiments']:11d} {r['measuring_s'] / 60:9.1f} / "
              f"{r['measuring_cpu_s'] / 60:4.1f} min {wall / 60:9.1f} / {cpu / 60:4.1f} min "
              f"{r['mape']:6.2f}% {r['kendall']:6.3f}   {r['sets']}", flush=True)
    print(f"blockers: {', '.join(results['blockers']['blockers'])}")
    loss = results["blockers"]["mape"] - results["pairs"]["mape"]
    print(f"MAPE loss of the blocker design: {loss:+.2f} points with "
          f"{results['pairs']['experiments'] / results['blockers']['experiments']:.1f}x fewer "
          "experiments")
    out["designs"] = results


if __name__ == "__main__":
    main()
