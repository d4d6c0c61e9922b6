"""Dependency-shaped loops: measured here vs pmpredict, llvm-mca-19 and OSACA, side by side.

    python3 benchmarks/bench_deps.py [--runs 5] [--model FILE.yml] [--second-model host]
                                     [--only NAME,...] [--show-kernels] [--json OUT.json]

A dozen C loops whose steady state is set by a loop-carried chain (reductions, prefix sum,
Gauss-Seidel, pointer chase, the histogram's store->load chain) or by the ports (saxpy,
stencil, division, byte scan), compiled with `gcc -O3` for plain x86-64 (SSE2): no
-march=native, so the code and its shapes are the same on every host (the issue's
Cascade Lake reference and this Zen 4 run compare the same instructions); the AVX2 dot
product adds `-mavx2 -mfma`. For each loop:
  * the kernel is the innermost loop as `pmpredict predict` selects it (the first innermost
    loop of the file; its lines, from the report's "kernel", go to every other tool);
  * measured with `pmpredict measure --lines A-B` RUNS times: minimum (the figure the errors
    are computed against), median and spread (max - min) / min;
  * predicted by pmpredict with OSACA's machine file for this CPU (`--model .../zenN.yml`,
    the issue's acceptance criterion) and with a second model (default: the built-in
    `host` model, when it exists);
  * llvm-mca-19 -mcpu=native (Total Cycles / Iterations over 1000 iterations; its Block
    RThroughput alongside), OSACA 0.7.1 with the closest machine file (TP, LCD, CP and its
    prediction max(TP, LCD)).
Prints the figures as markdown tables (signed relative error of each tool per loop, MAPE,
and how many loops pmpredict gets within 10% wherever OSACA's max(TP, LCD) does).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers  # noqa: E402
import pmcli  # noqa: E402

BASE_FLAGS = ["-O3", "-fno-asynchronous-unwind-tables"]


@dataclass(frozen=True)
class Loop:
    name: str
    shape: str
    source: str
    flags: tuple[str, ...] = ()


LOOPS = [
    Loop("sum", "2 addsd per 2 elements on one chain (in-order reduction)",
         "double sum(const double *a, long n) {\n"
         "  double s = 0; for (long i = 0; i < n; i++) s += a[i]; return s; }\n"),
    Loop("dot_sse2", "mulpd, then 2 addsd into xmm0 (in-order reduction)",
         "double dot(const double *a, const double *b, long n) {\n"
         "  double s = 0; for (long i = 0; i < n; i++) s += a[i] * b[i]; return s; }\n"),
    Loop("dot_avx2", "vmulpd ymm, then 4 vaddsd into xmm0",
         "double dot(const double *a, const double *b, long n) {\n"
         "  double s = 0; for (long i = 0; i < n; i++) s += a[i] * b[i]; return s; }\n",
         ("-mavx2", "-mfma")),
    Loop("prefix_sum", "addsd mem into the running sum, stored back: one addsd chain",
         "void prefix(double *a, long n) { for (long i = 1; i < n; i++) a[i] += a[i - 1]; }\n"),
    Loop("saxpy", "movups, mulps, addps, movups: no chain (ports)",
         "void saxpy(float a, const float *restrict x, float *restrict y, long n) {\n"
         "  for (long i = 0; i < n; i++) y[i] += a * x[i]; }\n"),
    Loop("stencil_1d", "3-point stencil, addpd/mulpd, no chain (ports)",
         "void stencil(double *restrict b, const double *restrict a, long n) {\n"
         "  for (long i = 1; i < n - 1; i++) b[i] = 0.25 * (a[i - 1] + 2.0 * a[i] + a[i + 1]); }\n"),
    Loop("gauss_seidel", "in-place 2-D update: 3 addsd + mulsd chain through a[i-1]",
         "void gauss_seidel(double *a, long n, long m) {\n"
         "  for (long j = 1; j < m - 1; j++)\n"
         "    for (long i = 1; i < n - 1; i++)\n"
         "      a[j * n + i] = 0.25 * (a[j * n + i - 1] + a[j * n + i + 1]\n"
         "                             + a[(j - 1) * n + i] + a[(j + 1) * n + i]); }\n"),
    Loop("division", "divpd on independent elements (divider throughput)",
         "void divide(double *restrict a, const double *restrict b, const double *restrict c,\n"
         "            long n) { for (long i = 0; i < n; i++) a[i] = b[i] / c[i]; }\n"),
    Loop("pointer_chase", "mov (%rax), %rax: load-to-use latency chain",
         "struct node { struct node *next; long pad[7]; };\n"
         "struct node *chase(struct node *p, long n) {\n"
         "  for (long i = 0; i < n; i++) p = p->next; return p; }\n"),
    Loop("histogram", "addl $1, (h,a[i],4): a chain through memory when bins repeat",
         "void histogram(int *restrict h, const unsigned char *restrict a, long n) {\n"
         "  for (long i = 0; i < n; i++) h[a[i]]++; }\n"),
    # gcc turns this loop into a strlen call unless loop idioms are left alone
    Loop("byte_scan", "cmpb $0, (p) per byte: no chain but the index (ports)",
         "long length(const char *s) { long i = 0; while (s[i]) i++; return i; }\n",
         ("-fno-tree-loop-distribute-patterns",)),
    Loop("matvec", "row-major y = A x inner loop: mulpd + 2 addsd chain",
         "void matvec(double *restrict y, const double *restrict A, const double *restrict x,\n"
         "            long n, long m) {\n"
         "  for (long i = 0; i < m; i++) { double s = y[i];\n"
         "    for (long j = 0; j < n; j++) s += A[i * n + j] * x[j]; y[i] = s; } }\n"),
]


def compile_loop(loop: Loop, tmp: str) -> str:
    c_path = os.path.join(tmp, loop.name + ".c")
    s_path = os.path.join(tmp, loop.name + ".s")
    with open(c_path, "w") as fh:
        fh.write(loop.source)
    subprocess.run(["gcc", *BASE_FLAGS, *loop.flags, "-S", c_path, "-o", s_path],
                   check=True, timeout=60)
    return s_path


def kernel_lines(report: dict) -> tuple[int, int] | None:
    lines = (report.get("kernel") or {}).get("lines")
    if isinstance(lines, (list, tuple)) and len(lines) == 2:
        return int(lines[0]), int(lines[1])
    return None


def rel_error(pred, measured):
    if pred is None or measured is None or measured <= 0:
        return None
    return (pred - measured) / measured


def measure_runs(path: str, lines: str | None, runs: int) -> dict:
    values, errors, raw = [], [], []
    for _ in range(runs):
        r = pmcli.measure(path, lines)
        raw.append(r)
        if r.get("cycles") is None:
            errors.append(r.get("error"))
        else:
            values.append(float(r["cycles"]))
    if not values:
        return {"cycles": None, "error": errors[0] if errors else "not measured", "runs": raw}
    lo = min(values)
    return {"cycles": lo, "median": statistics.median(values), "spread": (max(values) - lo) / lo,
            "values": values, "runs": raw, "error": None}


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def fmt_err(e):
    return "-" if e is None else f"{e * 100:+.0f}%"


def bench_loop(loop: Loop, tmp: str, args, osaca_file: str | None) -> dict:
    path = compile_loop(loop, tmp)
    with open(path) as fh:
        text_lines = fh.read().splitlines()
    pm_main = pmcli.predict(path, osaca_file) if osaca_file else \
        {"cycles": None, "error": "no OSACA machine file for this host"}
    span = kernel_lines(pm_main)
    pm_second = pmcli.predict(path, args.second_model) if args.second_model else None
    if span is None and pm_second is not None:
        span = kernel_lines(pm_second)
    lines_opt = f"{span[0]}-{span[1]}" if span else None
    measured = measure_runs(path, lines_opt, args.runs)
    if span is None:          # no prediction said where the kernel is: the measurement did
        span = kernel_lines(next((r for r in measured["runs"] if r.get("kernel")), {}))
    kernel = text_lines[span[0] - 1:span[1]] if span else text_lines
    mca = peers.llvm_mca(kernel, args.mcpu)
    osa = peers.osaca(kernel, osaca_file or peers.osaca_machine()["code"])
    return {"name": loop.name, "shape": loop.shape, "flags": BASE_FLAGS + list(loop.flags),
            "kernel_lines": list(span) if span else None, "kernel": kernel,
            "measured": measured,
            "pmpredict": pmcli.prediction_summary(pm_main),
            "pmpredict_second": pmcli.prediction_summary(pm_second) if pm_second else None,
            "llvm_mca": mca, "osaca": osa}


def print_tables(rows, second_name, osaca_name):
    has_second = any((r["pmpredict_second"] or {}).get("cycles") is not None for r in rows)
    has_bounds = any(r["pmpredict"].get("loop_carried") is not None for r in rows)
    print(f"| loop | measured (min) | median | spread | pmpredict {osaca_name}"
          + (f" | pmpredict {second_name}" if has_second else "")
          + (" | pm TP / LCD" if has_bounds else "")
          + " | llvm-mca | mca RThru | OSACA TP | LCD | CP | OSACA max(TP,LCD) |")
    print("|---|---:|---:|---:|---:" + ("|---:" if has_second else "") + ("|---:" if has_bounds else "")
          + "|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m, pm, sec, mca, osa = (r["measured"], r["pmpredict"], r["pmpredict_second"] or {},
                                r["llvm_mca"], r["osaca"])
        cells = [r["name"], fmt(m.get("cycles")), fmt(m.get("median")),
                 "-" if m.get("spread") is None else f"{m['spread'] * 100:.1f}%",
                 fmt(pm.get("cycles")) + ("" if pm.get("complete", True) else "*")]
        if has_second:
            cells.append(fmt(sec.get("cycles")) + ("" if sec.get("complete", True) else "*"))
        if has_bounds:
            cells.append(f"{fmt(pm.get('throughput'))} / {fmt(pm.get('loop_carried'))}")
        osaca_cycles = osa.get("cycles")
        cells += [fmt(mca.get("cycles")), fmt(mca.get("block_rthroughput")),
                  fmt(osa.get("tp")), fmt(osa.get("lcd")), fmt(osa.get("cp")),
                  fmt(osaca_cycles) if osaca_cycles is not None or osa.get("tp") is None
                  else f"({fmt(max(osa['tp'], osa['lcd']))})"]
        print("| " + " | ".join(cells) + " |")
    print("\n`*` the model lacks an instruction of the kernel (a lower bound); OSACA in "
          "parentheses: an instruction is missing from its file, so `osaca` prints no result.\n")

    tools = [("pmpredict " + osaca_name, lambda r: r["pmpredict"].get("cycles"))]
    if has_second:
        tools.append(("pmpredict " + second_name, lambda r: (r["pmpredict_second"] or {}).get("cycles")))
    tools += [("llvm-mca-19", lambda r: r["llvm_mca"].get("cycles")),
              ("OSACA max(TP,LCD)", lambda r: r["osaca"].get("cycles"))]
    print("| loop | " + " | ".join(t for t, _ in tools) + " |")
    print("|---|" + "---:|" * len(tools))
    errors = {t: [] for t, _ in tools}
    for r in rows:
        cells = [r["name"]]
        for t, get in tools:
            e = rel_error(get(r), r["measured"].get("cycles"))
            if e is not None:
                errors[t].append((r["name"], e))
            cells.append(fmt_err(e))
        print("| " + " | ".join(cells) + " |")
    cells = ["**MAPE**"]
    for t, _ in tools:
        es = errors[t]
        cells.append(f"**{sum(abs(e) for _, e in es) / len(es) * 100:.1f}%** (n={len(es)})"
                     if es else "-")
    print("| " + " | ".join(cells) + " |")
    within = {t: {n for n, e in errors[t] if abs(e) <= 0.10} for t, _ in tools}
    print("| within 10% | " + " | ".join(str(len(within[t])) for t, _ in tools) + " |")
    osaca_ok = within["OSACA max(TP,LCD)"]
    pm_ok = within["pmpredict " + osaca_name]
    print(f"\nOSACA's max(TP, LCD) is within 10% of measured on {len(osaca_ok)} loops; "
          f"pmpredict ({osaca_name}) is within 10% on {len(pm_ok & osaca_ok)} of those"
          + (f" (missing: {', '.join(sorted(osaca_ok - pm_ok))})" if osaca_ok - pm_ok else "")
          + f", and on {len(pm_ok)} loops in all.")
    return {t: {"mape": (sum(abs(e) for _, e in es) / len(es) * 100) if es else None, "n": len(es),
                "within_10": sorted(within[t])} for t, es in errors.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="measurements per loop (default 5)")
    ap.add_argument("--model", help="pmpredict's main model (default: OSACA's file for this CPU)")
    ap.add_argument("--second-model", default="zen4-vm",
                    help="a second pmpredict model column (default: zen4-vm, the built-in "
                         "model of the development VM; host: this machine's, measured on "
                         "demand; '' for none)")
    ap.add_argument("--mcpu", default="native", help="llvm-mca -mcpu (default native)")
    ap.add_argument("--only", help="comma-separated loop names")
    ap.add_argument("--show-kernels", action="store_true", help="print each loop's kernel")
    ap.add_argument("--json", metavar="FILE", help="write the raw figures here")
    args = ap.parse_args(argv)

    ident = peers.host_identity()
    machine = peers.osaca_machine(ident)
    osaca_file = args.model or machine["path"]
    osaca_name = os.path.basename(osaca_file) if osaca_file else "(no model)"
    loops = LOOPS
    if args.only:
        wanted = args.only.split(",")
        loops = [lp for lp in LOOPS if lp.name in wanted]
    print(f"# bench_deps: {peers.host_label(ident)}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"# command: {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    print(f"# OSACA file: {machine['code']} ({machine['why']}); llvm-mca-19 -mcpu={args.mcpu}"
          + (f" (= {peers.llvm_mca_host_cpu()})" if args.mcpu == "native" else "")
          + f"; pmpredict models: {osaca_name}" + (f", {args.second_model}" if args.second_model else "")
          + f"; gcc {' '.join(BASE_FLAGS)}; {args.runs} measurements per loop")

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-deps-") as tmp:
        for loop in loops:
            t0 = time.time()
            r = bench_loop(loop, tmp, args, osaca_file)
            rows.append(r)
            print(f"  {loop.name}: measured {fmt(r['measured'].get('cycles'))} in "
                  f"{time.time() - t0:.0f} s", file=sys.stderr)
            if args.show_kernels:
                print(f"\n{loop.name} ({' '.join(r['flags'])}), lines {r['kernel_lines']}:")
                print("\n".join("    " + ln.strip() for ln in r["kernel"]))
                for tool in ("pmpredict", "pmpredict_second", "llvm_mca", "osaca"):
                    if r[tool] and r[tool].get("error"):
                        print(f"    [{tool}: {r[tool]['error']}]")
    print()
    summary = print_tables(rows, args.second_model, osaca_name)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": peers.host_label(ident), "host": ident, "osaca_machine": machine,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "command": sys.argv, "runs": args.runs, "loops": rows,
                       "summary": summary}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
