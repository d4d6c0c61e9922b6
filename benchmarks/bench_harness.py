"""Harness robustness: a fixed set of kernels measured quietly and next to busy processes.

    python3 benchmarks/bench_harness.py [--repeat 3] [--busy 2] [--bhive N] [--seed S]
                                        [--json OUT.json]

1. Measures every kernel below with `pmpredict measure` (the block harness, no cache),
   `--repeat` times; the median of the repeats is the kernel's figure.
2. Starts `--busy` processes spinning `while True: pass` and measures everything again.
3. Prints per kernel: the expected value where it is the same on every recent x86-64
   core, the quiet and the busy figure, their drift (busy - quiet) / quiet, and the
   largest spread the harness reported; then the largest |drift| (target: <= 3%) and
   the host-invariant checks (imul r64 latency 3 and throughput 1, add r64 latency 1),
   each within 3%, with the CPU model, the date and the load average at the start.

4. With --bhive N: N real blocks drawn (seeded) from ../shared/data/bhive/blocks.csv, read
   at run time, each measured twice (no cache, no busy processes): how many fail and why,
   the repeatability |a - b| / min(a, b) (median, 90th percentile, how many differ by more
   than 10%), how many pairs are more than 3% apart although both runs were reported stable
   (the harness promises a range and "unstable" where a block does not reproduce), the share
   reported stable and the time per measurement.

"Quietly" means without the busy processes this script starts: on a shared machine
other users' work is there in both rounds (see the load average).
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import time

from pmpredict.measure import measure_block
from pmpredict.measure.cpu import cpu_name, cpuinfo

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
BHIVE = os.path.join(HERE, "..", "..", "shared", "data", "bhive", "blocks.csv")

# name, block (AT&T), expected cycles per iteration on every recent x86-64 core (or None)
KERNELS = [
    ("imul r64 chain (latency)", "imul %rbx, %rax\n", 3.0),
    ("imul r64 x6 independent", "".join(f"imul %rbx, %{r}\n" for r in
                                        ("rax", "rcx", "rdx", "rsi", "rdi", "r8")), 6.0),
    ("add r64 chain (latency)", "add %rbx, %rax\n", 1.0),
    ("add r64 x4 independent", "add %rax, %rbx\nadd %rcx, %rdx\nadd %rsi, %rdi\nadd %r8, %r9\n",
     1.0),
    ("load x4", "mov (%rdi), %rax\nmov 8(%rdi), %rbx\nmov 16(%rdi), %rcx\nmov 24(%rdi), %rdx\n",
     None),
    ("store x4", "mov %rax, (%rdi)\nmov %rbx, 64(%rdi)\nmov %rcx, 128(%rdi)\nmov %rdx, 192(%rdi)\n",
     None),
    ("load chain (pointer chase)", "mov (%rax), %rax\n", None),
    ("vmulps ymm chain", "vmulps %ymm1, %ymm0, %ymm0\n", None),
    ("vaddps ymm chain", "vaddps %ymm1, %ymm0, %ymm0\n", None),
    ("vdivpd ymm x4 independent", "".join(f"vdivpd %ymm1, %ymm2, %ymm{i}\n" for i in (3, 4, 5, 6)),
     None),
    ("vmulpd from memory x2", "vmulpd (%rdx), %ymm2, %ymm1\nvmulpd (%rdx), %ymm2, %ymm3\n", None),
    ("examples/triad_avx.s", os.path.join(EXAMPLES, "triad_avx.s"), None),
    ("examples/mix_avx2.s", os.path.join(EXAMPLES, "mix_avx2.s"), None),
]
# host-invariant facts: (kernel, expected, what)
INVARIANTS = [("imul r64 chain (latency)", 3.0, "imul r64 latency 3"),
              ("imul r64 x6 independent", 6.0, "imul r64 throughput 1 (6 per 6 cycles)"),
              ("add r64 chain (latency)", 1.0, "add r64 latency 1")]
TOLERANCE = 0.03


def block_text(spec: str) -> str:
    if spec.endswith(".s"):
        with open(spec) as fh:
            return fh.read()
    return spec


def measure_round(repeat: int) -> dict:
    out = {}
    for name, spec, _ in KERNELS:
        runs = [measure_block(block_text(spec), "att", cache_dir=None) for _ in range(repeat)]
        cycles = [r.cycles for r in runs if r.cycles is not None]
        out[name] = {"cycles": statistics.median(cycles) if cycles else None,
                     "runs": cycles, "spread": max((r.spread or 0) for r in runs),
                     "stable": sum(bool(r.stable) for r in runs)}
    return out


def bhive_round(n: int, seed: int) -> dict:
    """n BHive blocks, each measured twice: failures, repeatability, stability, time."""
    from pmpredict.errors import InputError
    with open(BHIVE) as fh:
        rows = list(csv.DictReader(fh))
    rows = random.Random(seed).sample(rows, n)
    failures, refused, pairs, stable, seconds = collections.Counter(), collections.Counter(), [], 0, []
    apart, unflagged = [], 0
    started = time.monotonic()
    for done, row in enumerate(rows):
        if done and done % 20 == 0:         # a long round: say where it is (stderr, unbuffered)
            spent = time.monotonic() - started
            print(f"  {done}/{n} blocks, {sum(1 for d in pairs if d <= 0.03)} of {len(pairs)} "
                  f"within 3%, {spent:.0f} s, ~{spent / done * (n - done):.0f} s left",
                  file=sys.stderr, flush=True)
        text = row["asm_att"].replace(" ; ", "\n") + "\n"
        runs = []
        for _ in range(2):
            start = time.monotonic()
            try:
                result = measure_block(text, "att", cache_dir=None)
            except InputError as exc:
                refused[exc.message.split(":")[0]] += 1
                break
            seconds.append(time.monotonic() - start)
            runs.append(result)
        if len(runs) < 2:
            continue
        if any(r.cycles is None for r in runs):
            failures[next(r.error for r in runs if r.cycles is None)] += 1
            continue
        a, b = (r.cycles for r in runs)
        pairs.append(abs(a - b) / min(a, b))
        if pairs[-1] > 0.03 and all(r.stable for r in runs):
            unflagged += 1                  # apart, and neither run said it was unstable
        apart.append((pairs[-1], a, b, text.replace("\n", " ; ").strip(" ;"),
                      [r.timing.range for r in runs]))
        stable += sum(bool(r.stable) for r in runs)
    pairs.sort()
    return {"blocks": n, "measured": len(pairs), "failures": dict(failures),
            "refused": dict(refused), "median_difference": statistics.median(pairs),
            "p90_difference": pairs[int(0.9 * (len(pairs) - 1))],
            "over_10_percent": sum(1 for d in pairs if d > 0.10),
            "within_3_percent": sum(1 for d in pairs if d <= 0.03),
            "apart_unflagged": unflagged,
            "stable_share": stable / (2 * len(pairs)), "seconds_median": statistics.median(seconds),
            "furthest_apart": sorted(apart, reverse=True)[:15]}


def busy_processes(n: int, pinned: bool = False) -> list[subprocess.Popen]:
    """n processes spinning; pinned: each to the last CPU this process may use (in a 2-vCPU
    guest, the SMT sibling of the other)."""
    cpus = sorted(os.sched_getaffinity(0))
    pin = f"import os; os.sched_setaffinity(0, {{{cpus[-1]}}})\n" if pinned else ""
    return [subprocess.Popen([sys.executable, "-c", pin + "while True: pass"]) for _ in range(n)]


def kernel_rounds(args) -> tuple[dict, dict, dict, int]:
    """The fixed kernels quiet and beside --busy processes: (quiet, busy, drifts, failed checks)."""
    quiet = measure_round(args.repeat)
    procs = busy_processes(args.busy)
    try:
        busy = measure_round(args.repeat)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()

    print(f"\n{'kernel':28s} {'expected':>8s} {'quiet':>8s} {f'busy x{args.busy}':>8s} "
          f"{'drift':>7s} {'spread q/b':>11s} {'stable q/b':>10s}")
    drifts = {}
    for name, _, expected in KERNELS:
        q, b = quiet[name], busy[name]
        drift = None
        if q["cycles"] and b["cycles"]:
            drift = drifts[name] = (b["cycles"] - q["cycles"]) / q["cycles"]
        exp = f"{expected:8.2f}" if expected else f"{'':8s}"
        fmt = lambda c: f"{c:8.3f}" if c is not None else f"{'failed':>8s}"
        print(f"{name:28s} {exp} {fmt(q['cycles'])} {fmt(b['cycles'])} "
              f"{'' if drift is None else f'{drift * 100:+6.1f}%':>7s} "
              f"{q['spread'] * 100:4.0f}%/{b['spread'] * 100:3.0f}% "
              f"{q['stable']:>4d}/{b['stable']}")
    worst = max(drifts, key=lambda n: abs(drifts[n]))
    print(f"\nmax |drift|: {abs(drifts[worst]) * 100:.1f}% ({worst}); target <= "
          f"{TOLERANCE * 100:.0f}%")
    print("host-invariant checks (quiet round; within 3%):")
    failed = 0
    for name, expected, what in INVARIANTS:
        got = quiet[name]["cycles"]
        ok = got is not None and abs(got - expected) <= TOLERANCE * expected
        failed += not ok
        print(f"  {what:42s} measured {got:.3f}  {'ok' if ok else 'FAILED'}")
    return quiet, busy, drifts, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="measurements per kernel and round (0: the BHive round alone)")
    ap.add_argument("--busy", type=int, default=2, help="busy processes in the second round")
    ap.add_argument("--bhive", type=int, default=0, metavar="N",
                    help="also measure N BHive blocks twice each (repeatability)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the BHive sample")
    ap.add_argument("--bhive-load", choices=["none", "pinned", "free"], default="none",
                    help="while the BHive blocks are measured: nothing else (none), a busy "
                         "process pinned to the last CPU (pinned), or one the scheduler places "
                         "(free)")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()

    info = cpuinfo()
    load = os.getloadavg()
    print(f"pmpredict harness benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(f"CPU: {cpu_name()} (vendor {info.get('vendor_id', '?')}, family "
          f"{info.get('cpu family', '?')}, model {info.get('model', '?')}), "
          f"{os.cpu_count()} logical CPUs; load average at start {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}")
    print("command: python3 benchmarks/bench_harness.py " + " ".join(sys.argv[1:]))
    quiet, busy, drifts, failed = kernel_rounds(args) if args.repeat else ({}, {}, {}, 0)
    bhive = None
    if args.bhive:
        load_procs = busy_processes(1, args.bhive_load == "pinned") \
            if args.bhive_load != "none" else []
        try:
            bhive = bhive_round(args.bhive, args.seed)
        finally:
            for p in load_procs:
                p.terminate()
                p.wait()
        print(f"\nBHive blocks (seed {args.seed}, other load: {args.bhive_load}), each measured "
              f"twice: {bhive['measured']} of "
              f"{bhive['blocks']} measured, failures {bhive['failures'] or 'none'}, refused "
              f"{bhive['refused'] or 'none'}")
        print(f"  |a - b| / min(a, b): median {bhive['median_difference'] * 100:.2f}%, 90th "
              f"percentile {bhive['p90_difference'] * 100:.2f}%, over 10%: "
              f"{bhive['over_10_percent']} of {bhive['measured']}; within 3%: "
              f"{bhive['within_3_percent']} ({100 * bhive['within_3_percent'] / bhive['measured']:.0f}%)")
        for d, a, b, text, ranges in bhive["furthest_apart"][:10]:
            print(f"    {d * 100:5.1f}%  {a:.3f} / {b:.3f}  {text[:90]}")
        print(f"  apart by more than 3% with both runs reported stable (a promise broken): "
              f"{bhive['apart_unflagged']} of {bhive['measured']}")
        print(f"  reported stable: {bhive['stable_share'] * 100:.0f}% of the measurements; "
              f"{bhive['seconds_median']:.2f} s per measurement (median, compile included)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": cpu_name(), "load_average": load, "quiet": quiet, "busy": busy,
                       "drift": drifts, "bhive": bhive}, fh, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
