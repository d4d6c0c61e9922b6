"""The experiment harness of an older checkout against this one, side by side in one run.

    git worktree add /tmp/old 4f8752b
    (cd /tmp/old && ln -s ../infer pmpredict/infer && ln -s ../exporters pmpredict/exporters \
        && ln -s ../grammars pmpredict/grammars)        # its packages, as the install maps them
    python3 benchmarks/bench_harness_commits.py --old-tree /tmp/old [--n 40] [--rounds 2]

Each round draws `--n` random pairs of the packaged host forms (seeded by the round) and
measures them, with no cache, first by the old tree's pmpredict, then by this one's, then by
this one's again (each in a process of its own, the tree on PYTHONPATH): seconds per
experiment, harness compile included, how far apart the two trees' cycles are, and how far
apart this tree's two runs are (the noise floor any agreement between trees is read against).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
FORMS = os.path.join(TREE, "pmpredict", "measure", "forms_host.txt")


def child(seed: int, n: int) -> None:
    from pmpredict.measure import measure_experiment_set
    from pmpredict.model.experiments import Experiment, ExperimentSet
    with open(FORMS) as fh:
        forms = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    rng = random.Random(seed)
    exps = [Experiment.of(dict.fromkeys(rng.sample(forms, 2), 1)) for _ in range(n)]
    names = tuple(dict.fromkeys(f for e in exps for f in e.forms()))
    t = time.monotonic()
    out = measure_experiment_set(ExperimentSet(names, tuple(exps), "x86", "bench"), cache_dir=None)
    print(json.dumps({"seconds": time.monotonic() - t, "cycles": [e.cycles for e in out.experiments]}))


def run(tree: str, seed: int, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(seed),
                           "--n", str(n)], env=env, cwd="/", capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-tree", help="a checkout of the older commit (see above)")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child(args.child, args.n)
        return 0
    if not args.old_tree:
        ap.error("--old-tree is required")
    print(f"harness of {args.old_tree} against {TREE}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.2f}")
    diffs, floor, seconds = [], [], {"old": 0.0, "new": 0.0}
    for rnd in range(1, args.rounds + 1):
        old, new = run(args.old_tree, rnd, args.n), run(TREE, rnd, args.n)
        again = run(TREE, rnd, args.n)          # the same experiments: how far runs part anyway
        for name, r in (("old", old), ("new", new)):
            seconds[name] += r["seconds"]
            print(f"round {rnd} {name}: {r['seconds']:.2f} s, {r['seconds'] / args.n * 1000:.1f} ms "
                  f"an experiment")
        print(f"round {rnd}: {old['seconds'] / new['seconds']:.1f}x")
        diffs += [(b - a) / a for a, b in zip(old["cycles"], new["cycles"]) if a and b]
        floor += [(b - a) / a for a, b in zip(new["cycles"], again["cycles"]) if a and b]
    print(f"all rounds: old {seconds['old']:.2f} s, new {seconds['new']:.2f} s: "
          f"{seconds['old'] / seconds['new']:.1f}x")
    for name, d in (("new against old", diffs), ("new against new (the noise floor)", floor)):
        if d:
            within = lambda tol: sum(abs(x) <= tol for x in d)     # noqa: E731
            print(f"{name}: {within(0.02)} of {len(d)} within 2%, {within(0.05)} within 5%; "
                  f"median {statistics.median(d) * 100:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
