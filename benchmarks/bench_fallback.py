"""Does a fallback model help? pmpredict with and without `--fallback`, against measurements.

    python3 benchmarks/bench_fallback.py [--runs 3] [--model host] [--fallback FILE.yml]
                                         [--coverage skl=skx.yml,zen=zen1.yml]

The loops of bench_deps.py (gcc -O3, plain x86-64) and the x86 examples/*.s:
  * measured here with `pmpredict measure --lines A-B` RUNS times (the minimum counts);
  * predicted with --model M alone and with --model M --fallback F (default: the built-in
    `host` model of this machine and OSACA's machine file for this CPU): signed relative
    error per loop, MAPE, loops within 10%, and whether the kernel was complete;
  * for the other built-ins (--coverage, default skl with skx.yml and zen with zen1.yml),
    which are not this CPU, only how many instructions the fallback adds and how the
    prediction changes: no measurement of theirs exists here.
Prints markdown tables with the date, CPU and command.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_deps  # noqa: E402
import peers  # noqa: E402
import pmcli  # noqa: E402

EXAMPLES = ["mix_avx2.s", "triad_avx.s"]


def kernels(tmp: str) -> list[tuple[str, str]]:
    out = [(lp.name, bench_deps.compile_loop(lp, tmp)) for lp in bench_deps.LOOPS]
    root = os.path.join(HERE, "..", "examples")
    out += [(name, os.path.join(root, name)) for name in EXAMPLES]
    return out


def summary(report: dict) -> dict:
    s = pmcli.prediction_summary(report)
    rows = report.get("instructions") or []
    s["from_fallback"] = sum(1 for r in rows if r.get("source") == "fallback")
    s["total"] = len(rows)
    return s


def cell(s: dict) -> str:
    if s.get("cycles") is None:
        return "-"
    return f"{s['cycles']:.2f}" + ("" if s.get("complete") else "*")


def err(pred, measured) -> float | None:
    return bench_deps.rel_error(pred, measured)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="measurements per loop (default 3)")
    ap.add_argument("--model", default="host", help="the model of this CPU (default host)")
    ap.add_argument("--fallback", help="its fallback (default: OSACA's file for this CPU)")
    ap.add_argument("--coverage", default="skl=skx.yml,zen=zen1.yml",
                    help="MODEL=OSACA_FILE,... compared for coverage only ('' for none)")
    args = ap.parse_args(argv)
    ident = peers.host_identity()
    fallback = args.fallback or peers.osaca_machine(ident)["path"]
    data = peers.osaca_data_dir()
    others = [pair.split("=") for pair in args.coverage.split(",") if pair]
    print(f"# bench_fallback: {peers.host_label(ident)}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"# command: {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    print(f"# model {args.model}, fallback {fallback}; {args.runs} measurements per loop\n")

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fallback-") as tmp:
        for name, path in kernels(tmp):
            alone = summary(pmcli.predict(path, args.model))
            report = pmcli.predict(path, args.model, extra=("--fallback", fallback))
            with_fb = summary(report)
            span = bench_deps.kernel_lines(report)
            lines = f"{span[0]}-{span[1]}" if span else None
            measured = bench_deps.measure_runs(path, lines, args.runs)
            cover = {}
            for model, osaca_file in others:
                cover[model] = (summary(pmcli.predict(path, model)),
                                summary(pmcli.predict(path, model, extra=(
                                    "--fallback", os.path.join(data, osaca_file)))))
            rows.append((name, measured, alone, with_fb, cover))
            print(f"  {name}: measured {bench_deps.fmt(measured.get('cycles'))}",
                  file=sys.stderr)

    print(f"| kernel | measured (min) | spread | {args.model} | error | {args.model} + fallback "
          f"| error | instructions from the fallback |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    errors = {"alone": [], "fallback": []}
    for name, m, alone, fb, _ in rows:
        e1, e2 = err(alone.get("cycles"), m.get("cycles")), err(fb.get("cycles"), m.get("cycles"))
        for key, e in (("alone", e1), ("fallback", e2)):
            if e is not None:
                errors[key].append(e)
        spread = "-" if m.get("spread") is None else f"{m['spread'] * 100:.0f}%"
        print(f"| {name} | {bench_deps.fmt(m.get('cycles'))} | {spread} | {cell(alone)} | "
              f"{bench_deps.fmt_err(e1)} | {cell(fb)} | {bench_deps.fmt_err(e2)} | "
              f"{fb['from_fallback']} of {fb['total']} |")
    parts = []
    for key, es in errors.items():
        if es:
            parts.append(f"{key}: MAPE {sum(abs(e) for e in es) / len(es) * 100:.1f}%, "
                         f"within 10% {sum(abs(e) <= 0.10 for e in es)} of {len(es)}")
    print("\n`*` an instruction of the kernel is not in the model (a lower bound). " +
          "; ".join(parts) + "\n")
    for model, osaca_file in others:
        print(f"| kernel | {model} | {model} + {osaca_file} | instructions from it |")
        print("|---|---:|---:|---:|")
        complete = [0, 0]
        for name, _, _, _, cover in rows:
            alone, fb = cover[model]
            complete[0] += bool(alone.get("complete"))
            complete[1] += bool(fb.get("complete"))
            print(f"| {name} | {cell(alone)} | {cell(fb)} | {fb['from_fallback']} of "
                  f"{fb['total']} |")
        print(f"\ncomplete kernels: {complete[0]} of {len(rows)} alone, {complete[1]} with "
              f"the fallback\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
