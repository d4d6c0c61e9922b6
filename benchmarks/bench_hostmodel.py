"""How long this machine's model (`pmpredict predict --model host`) takes to build and to grow.

    python3 benchmarks/bench_hostmodel.py [--skip-bootstrap] [--skip-seeded]

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


def from_the_core(cache: str) -> None:
    from pmpredict.host.model import host_model
    print(f"\n2. bootstrap from the core forms, seeding off ({load()})")
    started = time.monotonic()
    model, update = host_model(cache_dir=cache, seed_builtin=False)
    print(f"   bootstrap: {time.monotonic() - started:6.1f} s wall, "
          f"{update.bootstrap_experiments} experiments, {len(model.uops)} forms; "
          f"r_max {model.r_max:g}, " + ", ".join(f"{k} {v:g}" for k, v in
                                                sorted(model.pipeline.items())))
    print(f"   ({load()})")
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.s"))):
        if "neon" in path:
            continue
        wall, out = predict_cli(path, cache)
        host = out["host"]
        print(f"   {os.path.basename(path):20s} {wall:5.1f} s wall: {len(host['measured'])} new "
              f"forms, {host['experiments']} experiments, {host['seconds']} s measuring and "
              f"fitting; left out {len(host['left_out'])}; {out['cycles']:.2f} cycles/iteration")
    print(f"   ({load()})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-seeded", action="store_true", help="skip part 1")
    ap.add_argument("--skip-bootstrap", action="store_true", help="skip part 2")
    args = ap.parse_args(argv)
    from pmpredict.measure.cpu import cpu_name
    print(f"# bench_hostmodel: {datetime.datetime.now().isoformat(timespec='minutes')}, "
          f"{cpu_name()}, {os.cpu_count()} CPUs")
    print(f"# command: python3 benchmarks/bench_hostmodel.py {' '.join(argv or sys.argv[1:])}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_seeded:
            as_a_user(os.path.join(tmp, "user"))
        if not args.skip_bootstrap:
            from_the_core(os.path.join(tmp, "core"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
