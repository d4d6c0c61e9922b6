"""cegis and counters (Ritter ch. 4 and 6) against PMEvo's `exact` on random machines.

Every machine is a synthetic ground truth (pmpredict.infer.synthetic.random_machine: P
ports, F forms, 1..2 uops per form drawn from a pool of port sets, each port set also the
whole of some single-uop form). Each method asks the same oracle (the truth, cycles by the
exact simulator): cegis and counters for the experiments they choose, PMEvo for its pair
design (singletons, pairs, weighted pairs). Reported per method: the share of 2,000 random
experiments of 1..5 forms predicted exactly as the truth, the experiments measured, and the
time.

    python benchmarks/bench_infer_methods.py --acceptance [--time-limit 300]
        10 machines (seeds 1..10, 4 ports, 8 forms), `pmpredict infer --oracle T --method
        cegis --max-uops 2` and `--method counters` through the CLI: each must predict the
        2,000 experiments exactly as the truth
    python benchmarks/bench_infer_methods.py --compare [--time-limit 120]
        a grid of 4-8 ports, 6-30 forms: cegis, counters, PMEvo exact
    python benchmarks/bench_infer_methods.py --scaling [--time-limit 120]
        two-level and three-level cegis on growing machines until the time limit is hit
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from pmpredict.cli import main as cli
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.infer.cegis import CegisSettings, mapping_uops, run_cegis
from pmpredict.infer.counters import CountersSettings, run_counters
from pmpredict.infer.singletons_and_pairs import generate_experiments, singleton_throughputs
from pmpredict.infer.oracles import MeasurementLog, ModelOracle
from pmpredict.infer.pmevo import Inference, InferConfig
from pmpredict.infer.prepare import prepare
from pmpredict.infer.result import mapping_to_model
from pmpredict.infer.synthetic import agreement, random_experiments, random_machine
from pmpredict.infer.uop_counters import ModelUopCounter
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.model.machine import MachineModel

TEST_EXPERIMENTS = 2000
TEST_LENGTH = 5


def held_out(truth):
    return random_experiments(list(truth.uops), TEST_EXPERIMENTS, TEST_LENGTH, seed=12345)


def _deadline(limit):
    end = time.monotonic() + limit
    return lambda: time.monotonic() >= end


def run_cegis_method(truth, limit, max_uops=2, encoding="flow"):
    started = time.monotonic()
    r = run_cegis(ModelOracle(truth), list(truth.uops),
                  CegisSettings(len(truth.ports), max_uops=max_uops, encoding=encoding),
                  should_stop=_deadline(limit))
    seconds = time.monotonic() - started
    if r.mapping is None:
        return None, len(r.experiments), seconds, r.reason or "none"
    model = MachineModel("cegis", "x86", truth.ports, mapping_uops(r.mapping))
    return model, len(r.experiments), seconds, r.reason or "done"


def run_counters_method(truth, limit):
    started = time.monotonic()
    oracle = ModelOracle(truth)
    log = MeasurementLog()
    r = run_counters(oracle, ModelUopCounter(truth), list(truth.uops),
                     CountersSettings(len(truth.ports)), ports=truth.ports, log=log,
                     should_stop=_deadline(limit))
    seconds = time.monotonic() - started
    if not r.uops or len(r.uops) < len(truth.uops):
        return None, len(log), seconds, r.reason or "incomplete"
    return MachineModel("counters", "x86", truth.ports, r.uops), len(log), seconds, \
        r.reason or "done"


def run_pmevo_exact(truth, limit, seed=0):
    started = time.monotonic()
    oracle = ModelOracle(truth)
    forms = list(truth.uops)

    def measured(exps: ExperimentSet) -> ExperimentSet:
        cyc = oracle.cycles([e.counts for e in exps.experiments])
        return ExperimentSet(exps.forms, tuple(Experiment(e.counts, c)
                                               for e, c in zip(exps.experiments, cyc)), "x86")
    singles = measured(generate_experiments(forms, isa="x86"))
    train = measured(generate_experiments(forms, singleton_throughputs(singles), isa="x86"))
    prepared = prepare(train, len(truth.ports))
    inference = Inference(prepared.problem, InferConfig(seed=seed))
    masks, counts = inference.run(should_stop=_deadline(limit))
    model = mapping_to_model(prepared.problem, masks, counts, prepared.form_of, name="pmevo",
                             isa="x86")
    return model, len(train), time.monotonic() - started, \
        "done" if inference.finished() else "stopped"


def compare(args):
    grid = [(4, 6), (4, 12), (6, 10), (6, 16), (8, 12), (8, 20), (8, 30)]
    print(f"{'P':>2} {'F':>3} {'method':9} {'exact':>7} {'exps':>5} {'time s':>7}  status")
    for ports, forms in grid:
        truth = random_machine(100 + ports * 31 + forms, ports, forms, 2)
        test = held_out(truth)
        for name, fn in (("cegis", lambda t: run_cegis_method(t, args.time_limit)),
                         ("counters", lambda t: run_counters_method(t, args.time_limit)),
                         ("pmevo", lambda t: run_pmevo_exact(t, args.time_limit))):
            model, n, seconds, status = fn(truth)
            rate = agreement(truth, model, test) if model is not None else float("nan")
            print(f"{ports:2d} {forms:3d} {name:9} {rate * 100:6.1f}% {n:5d} {seconds:7.1f}  "
                  f"{status}", flush=True)


def scaling(args):
    print(f"{'level':5} {'P':>2} {'F':>3} {'exact':>7} {'exps':>5} {'time s':>7}  status")
    for uops in (1, 2):
        for ports in (4, 6, 8):
            for forms in (6, 8, 10, 12, 16, 20):
                truth = random_machine(7 + forms, ports, forms, uops)
                model, n, seconds, status = run_cegis_method(truth, args.time_limit, uops)
                rate = agreement(truth, model, held_out(truth)) if model else float("nan")
                level = "2" if uops == 1 else "3"
                print(f"{level:5} {ports:2d} {forms:3d} {rate * 100:6.1f}% {n:5d} "
                      f"{seconds:7.1f}  {status}", flush=True)
                if status != "done":
                    break           # larger machines of this series hit the limit too


def acceptance(args):
    """Through the CLI, as a user runs it."""
    failures = 0
    summary = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'seed':>4} {'method':9} {'exact':>7} {'exps':>5} {'time s':>7}")
        for seed in range(1, 11):
            truth = random_machine(seed, 4, 8, 2)
            path = os.path.join(tmp, f"truth{seed}.json")
            save_model(truth, path)
            test = held_out(truth)
            for method in ("cegis", "counters"):
                out = os.path.join(tmp, f"{method}{seed}.json")
                argv = ["infer", "--oracle", path, "--method", method, "-o", out, "-q",
                        "--seed", str(seed), "--time-limit", str(args.time_limit)]
                if method == "cegis":
                    argv += ["--max-uops", "2"]
                started = time.monotonic()
                code = cli(argv)
                seconds = time.monotonic() - started
                if code != 0 or not os.path.exists(out):
                    print(f"{seed:4d} {method:9} failed (exit {code})")
                    failures += 1
                    continue
                model = load_model(out)
                rate = agreement(truth, model, test)
                n = len(model.provenance["experiments"])
                complete = model.provenance["complete"]
                ok = rate == 1.0 and complete
                failures += not ok
                summary.setdefault(method, []).append((rate, n, seconds))
                print(f"{seed:4d} {method:9} {rate * 100:6.1f}% {n:5d} {seconds:7.1f}"
                      f"{'' if ok else '  FAIL'}", flush=True)
    for method, rows in summary.items():
        exact = sum(1 for r, _, _ in rows if r == 1.0)
        print(f"{method}: {exact}/{len(rows)} machines exact on {TEST_EXPERIMENTS} experiments; "
              f"experiments {min(n for _, n, _ in rows)}-{max(n for _, n, _ in rows)}, "
              f"time {min(s for _, _, s in rows):.1f}-{max(s for _, _, s in rows):.1f} s "
              f"(total {sum(s for _, _, s in rows):.0f} s)")
    print(json.dumps({"failures": failures}))
    return 1 if failures else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--acceptance", action="store_true")
    mode.add_argument("--compare", action="store_true")
    mode.add_argument("--scaling", action="store_true")
    p.add_argument("--time-limit", type=float, default=120.0,
                   help="seconds per method and machine")
    args = p.parse_args(argv)
    if args.acceptance:
        return acceptance(args)
    if args.compare:
        compare(args)
    else:
        scaling(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
