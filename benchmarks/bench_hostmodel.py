"""How long this machine's model (`pmpredict predict --model host`) takes to build and to grow.

    python3 benchmarks/bench_hostmodel.py [--skip-bootstrap] [--skip-seeded] [--twice]
    python3 benchmarks/bench_hostmodel.py --compare CACHE_A CACHE_B

Each part starts from an empty cache directory of its own (PMPREDICT_CACHE), so nothing is
reused from earlier runs:

1. **as a user runs it**: `pmpredict predict examples/mix_avx2.s --model host --json` from an
   empty cache (on a CPU a built-in model names, that model seeds this machine's; elsewhere
   the core forms are measured), then the same command again (nothing left to measure);
2. **bootstrap from the core**: the 25 core forms measured and inferred with seeding off
   (what every other CPU does on first use), then the kernels of examples/*.s (x86) one
   after the other, each measuring the forms it adds.

Prints wall times (the machine is shared: the load average before and after each part is
printed with it), the forms and experiments each step measured, and the front-end facts.

--twice: part 2 a second time, from another empty cache, and the two models compared: every
pipeline fact (equal or not, and whether a build says it is in doubt), the issue width, and
per form present in both the throughput of the form alone (the model's port bound) within
5% and the latencies equal. --compare: the same for the host models of two cache directories
(e.g. two bench_realcode.py runs from empty caches).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLE = os.path.join(ROOT, "examples", "mix_avx2.s")


def load() -> str:
    return "load %.1f/%.1f/%.1f" % os.getloadavg()


def predict_cli(path: str, cache: str) -> tuple[float, dict]:
    env = {**os.environ, "PMPREDICT_CACHE": cache}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "predict", path, "--model", "host",
                           "--json"], capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    if proc.returncode:
        raise SystemExit(f"pmpredict predict failed: {proc.stderr.strip()}")
    return wall, json.loads(proc.stdout)


def as_a_user(cache: str) -> None:
    print(f"\n1. pmpredict predict examples/mix_avx2.s --model host from an empty cache ({load()})")
    wall, out = predict_cli(EXAMPLE, cache)
    host = out["host"]
    print(f"   first run:  {wall:6.1f} s wall  ({host['created'] or 'existing model'}: "
          f"{host['bootstrap_seconds']} s; {len(host['measured'])} new forms, "
          f"{host['experiments']} experiments, {host['seconds']} s); prediction "
          f"{out['cycles']:.2f} cycles/iteration")
    wall, out = predict_cli(EXAMPLE, cache)
    print(f"   second run: {wall:6.1f} s wall  ({len(out['host']['measured'])} new forms; "
          f"{load()})")


def from_the_core(cache: str) -> dict[str, float]:
    from pmpredict.host.model import host_model
    print(f"\n2. bootstrap from the core forms, seeding off ({load()})")
    started = time.monotonic()
    model, update = host_model(cache_dir=cache, seed_builtin=False)
    print(f"   bootstrap: {time.monotonic() - started:6.1f} s wall, "
          f"{update.bootstrap_experiments} experiments, {len(model.uops)} forms; "
          f"r_max {model.r_max:g}, " + ", ".join(f"{k} {v:g}" for k, v in
                                                sorted(model.pipeline.items())))
    print(f"   ({load()})")
    predicted = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.s"))):
        if "neon" in path:
            continue
        wall, out = predict_cli(path, cache)
        host = out["host"]
        print(f"   {os.path.basename(path):20s} {wall:5.1f} s wall: {len(host['measured'])} new "
              f"forms, {host['experiments']} experiments, {host['seconds']} s measuring and "
              f"fitting; left out {len(host['left_out'])}; {out['cycles']:.2f} cycles/iteration")
        predicted[os.path.basename(path)] = out["cycles"]
    print(f"   ({load()})")
    return predicted


def compare(first: str, second: str, predicted: list[dict]) -> None:
    """The two host models in cache directories `first` and `second`, fact by fact."""
    import numpy as np
    from pmpredict.formats.model_files import load_model
    from pmpredict.predict.throughput import simulate_arrays
    from pmpredict.host.model import model_path
    models = [load_model(model_path(cache)) for cache in (first, second)]
    a, b = models
    print(f"\n3. the two builds side by side ({len(a.uops)} and {len(b.uops)} forms)")
    print(f"   issue width: {a.r_max:g} / {b.r_max:g}: {'equal' if a.r_max == b.r_max else 'DIFFER'}")
    doubts = [set((m.provenance.get("latencies") or {}).get("doubts") or {}) |
              ({"front end"} if (m.provenance.get("front_end") or {}).get("doubts") else set())
              for m in models]
    equal = 0
    keys = sorted(set(a.pipeline) | set(b.pipeline))
    for key in keys:
        x, y = a.pipeline.get(key), b.pipeline.get(key)
        same = x == y
        equal += same
        if not same:
            flag = " (in doubt in " + " and ".join(
                n for n, d in zip(("the first", "the second"), doubts) if key in d) + ")" \
                if any(key in d for d in doubts) else ""
            print(f"   {key}: {x} / {y}: DIFFER{flag}")
    print(f"   pipeline facts equal: {equal} of {len(keys)}; said in doubt: first "
          f"{sorted(doubts[0]) or 'none'}, second {sorted(doubts[1]) or 'none'}")
    common = sorted(set(a.uops) & set(b.uops))
    rates = []
    for m in models:
        index = m.form_index()
        masks, counts = m.to_arrays()
        forms = np.array([index[f] for f in common], dtype=np.int64)
        ptr = np.arange(len(common) + 1, dtype=np.int64)
        rates.append(simulate_arrays(masks, counts, ptr, forms, np.ones(len(common)), m.r_max)[0])
    rel = np.abs(rates[0] - rates[1]) / np.minimum(rates[0], rates[1])
    within = int(np.sum(rel <= 0.05))
    print(f"   forms in both: {len(common)}; throughput alone within 5%: {within} "
          f"({within / max(1, len(common)):.1%}); identical uops: "
          f"{sum(a.uops[f] == b.uops[f] for f in common)}")
    for f, r, x, y in sorted(zip(common, rel, *rates), key=lambda t: -t[1])[:5]:
        if r > 0.05:
            print(f"     {f}: {x:.3f} / {y:.3f} cycles")
    same = [k for k in predicted[0] if predicted[0][k] == predicted[1].get(k)]
    if predicted[0]:
        print(f"   the examples' predictions equal: {len(same)} of {len(predicted[0])}"
              + "".join(f"; {k} {predicted[0][k]:.2f} / {predicted[1].get(k)}"
                        for k in predicted[0] if k not in same))
    lat = [f for f in common if f in a.latency or f in b.latency]
    same_lat = [f for f in lat if a.latency.get(f) == b.latency.get(f)
                and a.operand_latency.get(f) == b.operand_latency.get(f)]
    print(f"   latencies equal: {len(same_lat)} of {len(lat)}")
    for f in [f for f in lat if f not in same_lat][:5]:
        print(f"     {f}: {a.latency.get(f)} {a.operand_latency.get(f) or ''} / "
              f"{b.latency.get(f)} {b.operand_latency.get(f) or ''}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-seeded", action="store_true", help="skip part 1")
    ap.add_argument("--skip-bootstrap", action="store_true", help="skip part 2")
    ap.add_argument("--twice", action="store_true",
                    help="part 2 twice from empty caches, then the two models compared")
    ap.add_argument("--compare", nargs=2, metavar="CACHE",
                    help="only compare the host models of two cache directories")
    args = ap.parse_args(argv)
    if args.compare:
        compare(*args.compare, [{}, {}])
        return 0
    from pmpredict.measure.cpu import cpu_name
    print(f"# bench_hostmodel: {datetime.datetime.now().isoformat(timespec='minutes')}, "
          f"{cpu_name()}, {os.cpu_count()} CPUs")
    print(f"# command: python3 benchmarks/bench_hostmodel.py {' '.join(argv or sys.argv[1:])}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_seeded:
            as_a_user(os.path.join(tmp, "user"))
        if not args.skip_bootstrap or args.twice:
            first = from_the_core(os.path.join(tmp, "core"))
        if args.twice:
            second = from_the_core(os.path.join(tmp, "core2"))
            compare(os.path.join(tmp, "core"), os.path.join(tmp, "core2"), [first, second])
    return 0


if __name__ == "__main__":
    sys.exit(main())
