"""Accuracy on live hardware: the host model vs llvm-mca-19 and OSACA on fresh experiments.

    python3 benchmarks/bench_host.py [--model zen4-vm] [--n 300] [--repeat 200] [--seed 7]
                                     [--json OUT.json]

1. Draws N random length-5 multisets over the host forms (forms may repeat; seeded).
2. Measures them live on this machine (no cache: every number is fresh).
3. Predicts them with the host model (pmpredict's exact simulator), with
   llvm-mca-19 -mcpu=sapphirerapids (and -mcpu=znver4, the host's real core, for
   reference), and with OSACA 0.7.1 --arch SPR (and ZEN4) through OSACA's Python API
   (the analysis `osaca --arch SPR` prints; a CLI spot check is included).
   llvm-mca gets the very window that was timed (about 50 instructions, the harness's
   registers), simulated for 100 iterations; OSACA gets one copy of the multiset (its
   throughput analysis ignores dependencies, as the window has none).
4. Prints MAPE, Pearson, Kendall tau-b per predictor on the same experiments.
5. Repeatability: measures the first R experiments a second time; the median and 90th
   percentile of |a - b| / min(a, b).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.commands.progress import ProgressDisplay
from pmpredict.measure import default_forms, load_form_list, measure_experiment_set
from pmpredict.measure.calibrate import host_frequency
from pmpredict.measure.cpu import cpu_name
from pmpredict.measure.instantiate import instantiate, sequence_of
from pmpredict.predict.metrics import evaluate_predictions

LLVM_MCA = "llvm-mca-19"
LLVM_MC = "llvm-mc-19"


def random_experiments(forms, n, length, seed) -> ExperimentSet:
    rng = random.Random(seed)
    exps = tuple(Experiment.of([rng.choice(forms) for _ in range(length)]) for _ in range(n))
    return ExperimentSet(tuple(forms), exps, "x86", f"random-len{length}-seed{seed}")


def predict_model(model_spec, exps):
    from pmpredict.formats.model_files import load_model
    from pmpredict.predict.throughput import simulate
    model = load_model(model_spec)
    cycles, _ = simulate(model, exps)
    return np.asarray(cycles, float), model


def predict_llvm_mca(exps, mcpu):
    """Cycles per multiset instance: the measured window, 100 iterations, one region each."""
    if not shutil.which(LLVM_MCA):
        return None
    parts = [".intel_syntax noprefix"]
    copies = []
    for i, e in enumerate(exps.experiments):
        w = instantiate(e.counts)
        copies.append(w.copies)
        parts += [f"# LLVM-MCA-BEGIN e{i}", *w.lines, f"# LLVM-MCA-END e{i}"]
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as fh:
        fh.write("\n".join(parts) + "\n")
        path = fh.name
    try:
        out = subprocess.run([LLVM_MCA, f"-mcpu={mcpu}", "-iterations=100", "-summary-view",
                              "-instruction-info=false", "-resource-pressure=false", path],
                             capture_output=True, text=True)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        print(f"llvm-mca -mcpu={mcpu} failed: {out.stderr.strip()[:300]}", file=sys.stderr)
        return None
    totals = {}
    for m in re.finditer(r"Code Region - e(\d+)\s+Iterations:\s+(\d+).*?Total Cycles:\s+(\d+)",
                         out.stdout, re.S):
        totals[int(m.group(1))] = int(m.group(3)) / int(m.group(2))
    return np.array([totals.get(i, np.nan) / copies[i] for i in range(len(exps))])


def att_lines(intel_lines):
    """Intel -> AT&T spelling through llvm-mc (OSACA's x86 data is keyed on AT&T)."""
    src = ".intel_syntax noprefix\n" + "\n".join(intel_lines) + "\n"
    out = subprocess.run([LLVM_MC, "-output-asm-variant=0"], input=src, capture_output=True,
                         text=True, check=True).stdout
    lines = [ln.split("#", 1)[0].strip() for ln in out.splitlines()]     # "# imm = 0x..." notes
    lines = [ln for ln in lines if ln and not ln.startswith(".")]
    assert len(lines) == len(intel_lines), "llvm-mc printed a different number of lines"
    return [" ".join(ln.split()) for ln in lines]


def osaca_kernels(exps):
    """One copy of each multiset, AT&T, with the harness's registers."""
    intel, spans = [], []
    for e in exps.experiments:
        w = instantiate(e.counts, len(sequence_of(e.counts)))
        spans.append((len(intel), len(intel) + len(w.lines)))
        intel += w.lines
    att = att_lines(intel)
    return [att[a:b] for a, b in spans]


def predict_osaca(kernels, arch):
    """(cycles, experiments with an instruction OSACA does not know, experiments it fails on).

    Unknown instructions count as 0 cycles, as OSACA itself does; a kernel on which OSACA
    raises (its ZEN4 file names a port that is not in its port list) gets NaN: skipped."""
    try:
        from osaca.parser import ParserX86ATT
        from osaca.semantics import ArchSemantics, MachineModel, reduce_to_section
    except ImportError:
        return None, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mm = MachineModel(arch=arch)
        parser = ParserX86ATT()
        out, unknown, failed = [], 0, 0
        for lines in kernels:
            text = "# OSACA-BEGIN\n" + "\n".join(lines) + "\n# OSACA-END\n"
            try:
                kernel = reduce_to_section(parser.parse_file(text), parser)
                sem = ArchSemantics(parser, mm)
                sem.normalize_instruction_forms(kernel)
                sem.add_semantics(kernel)
                sem.assign_optimal_throughput(kernel)
            except Exception:           # an OSACA bug on this kernel
                failed += 1
                out.append(np.nan)
                continue
            if any("tp_unknown" in str(i.flags).lower() for i in kernel):
                unknown += 1
            out.append(max(ArchSemantics.get_throughput_sum(kernel), default=0.0))
    return np.array(out, float), unknown, failed


def osaca_cli(lines, arch):
    """`osaca --arch ARCH` on one kernel: the largest port-pressure sum it prints (spot check)."""
    if not shutil.which("osaca"):
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.s")
        with open(path, "w") as fh:
            fh.write("# OSACA-BEGIN\n" + "\n".join(lines) + "\n# OSACA-END\n")
        out = subprocess.run(["osaca", "--arch", arch, "--ignore-unknown", path],
                             capture_output=True, text=True, env={**os.environ, "HOME": d}).stdout
    # the sums line under the port-pressure table: port columns, then CP and LCD
    report = out.split("Combined Analysis Report", 1)[-1]
    for line in report.splitlines():
        if re.fullmatch(r"\s*[\d.]+(\s+[\d.]+)+\s*", line):
            numbers = [float(x) for x in line.split()]
            return max(numbers[:-2]) if len(numbers) > 2 else max(numbers)
    return None


def row(name, pred, measured):
    ev = evaluate_predictions(pred, measured)
    return {"predictor": name, "n": ev.n, "skipped": ev.skipped, "mape": ev.mape,
            "pearson": ev.pearson, "kendall": ev.kendall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="zen4-vm",
                    help="host model (built-in name or file; default zen4-vm, the development "
                         "VM's; host: this machine's, measured on demand)")
    ap.add_argument("--forms", help="form list (default: the packaged host list)")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--length", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=200, help="experiments measured twice")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="write all numbers (and the measured set) here")
    args = ap.parse_args(argv)

    forms = load_form_list(args.forms) if args.forms else default_forms()
    exps = random_experiments(forms, args.n, args.length, args.seed)
    print(f"# bench_host: {cpu_name()}, {host_frequency():.3f} GHz (calibrated), "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {args.n} random length-{args.length} experiments over {len(forms)} forms, seed {args.seed}")

    t0 = time.time()
    measured_set = measure_experiment_set(exps, cache_dir=None, progress=ProgressDisplay())
    t_measure = time.time() - t0
    measured = measured_set.measured()
    failed = int(np.isnan(measured).sum())
    print(f"measured live in {t_measure:.0f} s ({t_measure / args.n * 1000:.0f} ms per experiment), "
          f"{failed} failed")

    rows = []
    try:
        pred, model = predict_model(args.model, exps)
        rows.append(row(f"pmpredict {args.model} model", pred, measured))
    except Exception as exc:       # the host model may not exist yet: say so, go on
        print(f"host model {args.model!r} unavailable: {exc}")
    for mcpu in ("sapphirerapids", "znver4"):
        p = predict_llvm_mca(exps, mcpu)
        if p is not None:
            rows.append(row(f"llvm-mca-19 -mcpu={mcpu}", p, measured))
    kernels = osaca_kernels(exps)
    for arch in ("SPR", "ZEN4"):
        p, unknown, failed = predict_osaca(kernels, arch)
        if p is not None:
            r = row(f"OSACA 0.7.1 --arch {arch}", p, measured)
            r["unknown"], r["osaca_failed"] = unknown, failed
            rows.append(r)
            if unknown:
                print(f"  OSACA {arch}: {unknown} of {len(p)} experiments contain an instruction "
                      "OSACA does not know (counted as 0 cycles, as OSACA does)")
            if failed:
                print(f"  OSACA {arch}: raised an error on {failed} experiments (skipped)")
    spot = osaca_cli(kernels[0], "SPR")
    if spot is not None:
        api = predict_osaca(kernels[:1], "SPR")[0][0]
        print(f"  OSACA CLI spot check (experiment 0): CLI {spot} vs API {api:.2f}")

    print()
    print(f"{'predictor':40} {'n':>4} {'MAPE':>8} {'Pearson':>8} {'Kendall':>8}")
    for r in rows:
        print(f"{r['predictor']:40} {r['n']:4d} {r['mape']:7.1f}% {r['pearson']:8.3f} {r['kendall']:8.3f}")

    rep = None
    if args.repeat:
        k = min(args.repeat, args.n)
        sub = ExperimentSet(exps.forms, exps.experiments[:k], "x86", exps.source)
        t0 = time.time()
        again = measure_experiment_set(sub, cache_dir=None, progress=ProgressDisplay()).measured()
        a, b = measured[:k], again
        ok = ~(np.isnan(a) | np.isnan(b))
        d = np.abs(a[ok] - b[ok]) / np.minimum(a[ok], b[ok])
        rep = {"n": int(ok.sum()), "median": float(np.median(d)), "p90": float(np.percentile(d, 90)),
               "max": float(d.max()), "seconds": time.time() - t0}
        print(f"\nrepeatability over {rep['n']} experiments measured twice: median difference "
              f"{rep['median'] * 100:.2f}%, 90th percentile {rep['p90'] * 100:.2f}%, "
              f"max {rep['max'] * 100:.1f}%")

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": cpu_name(), "n": args.n, "seed": args.seed, "rows": rows,
                       "repeatability": rep, "measure_seconds": t_measure,
                       "experiments": measured_set.to_json()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
