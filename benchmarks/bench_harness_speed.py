"""The timing harness, old sizes against new, side by side in one run: experiments per second and
whether the two give the same cycles.

    python3 benchmarks/bench_harness_speed.py [--n 500] [--seed 1] [--batch 40] [--baseline]
                                              [--old-cache DIR] [--json OUT.json]

Draws `--n` experiments (seeded) of the kinds a host model measures, over the packaged host
forms (measure/forms_host.txt): singletons, plain pairs and throughput-balanced pairs. Each
batch of `--batch` experiments is measured with the legacy run options
(`runner.LEGACY_RUN_OPTIONS`: runs of 0.5 ms, five samples at least, a canary tolerance of 15%)
and right after with today's (`runner.RunOptions()`), alternately, so both see the same machine.
Nothing is cached, except with `--old-cache DIR`: the legacy results are kept there (a second
run of the script then times only the new harness against them).

Prints, per harness: experiments measured, seconds, experiments per second, the median and 90th
percentile of one experiment's cost (a batch's time over its experiments); then the agreement:
|new - old| / old per experiment, the share within 2% and within 5%, and the worst ten.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import time

from pmpredict.measure import measure_experiment_set
from pmpredict.measure.cpu import cpu_name
from pmpredict.measure.experiment_runs import MeasureOptions
from pmpredict.measure.host_forms import packaged_forms
from pmpredict.measure.runner import LEGACY_RUN_OPTIONS, RunOptions
from pmpredict.model.experiments import Experiment, ExperimentSet

OLD = MeasureOptions(run=LEGACY_RUN_OPTIONS)
NEW = MeasureOptions(run=RunOptions())


def draw(n: int, seed: int) -> list[Experiment]:
    """Singletons, pairs and weighted pairs (1-4 copies of the second form), distinct."""
    forms = packaged_forms("host")
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        kind = rng.random()
        if kind < 0.1:
            counts = {rng.choice(forms): 1}
        else:
            a, b = rng.sample(forms, 2)
            counts = {a: 1, b: 1 if kind < 0.55 else rng.randint(2, 4)}
        key = tuple(sorted(counts.items()))
        if key not in seen:
            seen.add(key)
            out.append(Experiment.of(counts))
    return out


def measure(exps, options, cache_dir):
    forms = tuple(dict.fromkeys(f for e in exps for f, _ in e.counts))
    started = time.monotonic()
    done = measure_experiment_set(ExperimentSet(forms, tuple(exps), "x86", "bench"),
                                  cache_dir=cache_dir, options=options)
    return [e.cycles for e in done.experiments], time.monotonic() - started


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--old-cache", help="keep the legacy harness's results here")
    ap.add_argument("--baseline", action="store_true",
                    help="also measure every batch a second time with the legacy options: how "
                         "well today's harness agrees with itself on this machine now")
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    exps = draw(args.n, args.seed)
    old, new, again = [], [], []
    cost = {"old": [], "new": []}
    seconds = {"old": 0.0, "new": 0.0}
    for start in range(0, len(exps), args.batch):
        chunk = exps[start:start + args.batch]
        for name, options, cache, out in (("old", OLD, args.old_cache, old),
                                          ("new", NEW, None, new)):
            cycles, took = measure(chunk, options, cache)
            out += cycles
            seconds[name] += took
            cost[name].append(took / len(chunk))
        if args.baseline:
            again += measure(chunk, OLD, None)[0]
        print(f"  {start + len(chunk)}/{len(exps)}: old {seconds['old']:.1f} s, "
              f"new {seconds['new']:.1f} s", file=sys.stderr, flush=True)

    print(f"harness speed, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{cpu_name()}, load average {os.getloadavg()[0]:.2f}")
    print("command: python3 benchmarks/bench_harness_speed.py " + " ".join(argv or sys.argv[1:]))
    report = {}
    for name in ("old", "new"):
        measured = sum(1 for c in (old if name == "old" else new) if c is not None)
        per = sorted(cost[name])
        report[name] = {"experiments": measured, "seconds": round(seconds[name], 2),
                        "per_second": round(len(exps) / seconds[name], 2),
                        "median_cost_s": round(statistics.median(per), 4),
                        "p90_cost_s": round(per[int(0.9 * (len(per) - 1))], 4)}
        r = report[name]
        print(f"{name}: {r['experiments']} measured in {r['seconds']} s: {r['per_second']} "
              f"experiments/s; one experiment {r['median_cost_s'] * 1000:.1f} ms "
              f"(median of batches), p90 {r['p90_cost_s'] * 1000:.1f} ms")
    print(f"speed-up: {report['new']['per_second'] / report['old']['per_second']:.1f}x")
    def agreement(first, second, what):
        both = [(e, a, b) for e, a, b in zip(exps, first, second) if a and b]
        rel = sorted(((abs(b - a) / a, e, a, b) for e, a, b in both), key=lambda t: -t[0])
        within2 = sum(1 for r, *_ in rel if r <= 0.02)
        within5 = sum(1 for r, *_ in rel if r <= 0.05)
        print(f"{what}, on {len(rel)} experiments both measured: {within2} within 2% "
              f"({100 * within2 / max(1, len(rel)):.1f}%), {within5} within 5% "
              f"({100 * within5 / max(1, len(rel)):.1f}%); new lower in "
              f"{sum(1 for _, _, a, b in rel if b < a)}")
        return rel, within2, within5

    rel, within2, within5 = agreement(old, new, "new against old")
    if args.baseline:
        _, self2, self5 = agreement(old, again, "old against itself (a second legacy run)")
        report.update(old_self_within_2pct=self2, old_self_within_5pct=self5)
    print("largest differences (old -> new cycles):")
    for r, e, a, b in rel[:10]:
        print(f"  {100 * r:5.1f}%  {a:.3f} -> {b:.3f}  "
              + " + ".join(f"{n} x {f}" for f, n in e.counts))
    report.update(n=len(exps), seed=args.seed, within_2pct=within2, within_5pct=within5,
                  compared=len(rel), cpu=cpu_name())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
