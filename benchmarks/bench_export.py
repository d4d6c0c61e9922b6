"""Export / import speed, and OSACA's throughput with our exported file vs our prediction.

    python3 benchmarks/bench_export.py [--kernels N]
    python3 benchmarks/bench_export.py --model host --split test [--n 150 --seed 1 --seed 2]

The second form is the exported model on real code: test-split BHive blocks measured on this
machine, predicted by pmpredict with MODEL, by OSACA with MODEL exported as its machine file,
by OSACA with its own file for this CPU and by llvm-mca-19 -mcpu=native, side by side in one
run (benchmarks/bench_realcode.py does the sampling, measuring and tables; OSACA's failures and
the forms it did not find are listed per file).

Needs ../shared/data/pmevo-artifact and OSACA (pip install osaca). For each
PMEvo model (SKL, ZEN, A72) and built-in model (skl, zen, a72 when present): time of the OSACA and LLVM exports, of the import
of the OSACA file, and of OSACA loading it; then N dependency-free kernels
(experiments of the shared set whose forms OSACA can tell apart) analysed by
OSACA with our file and by our simulator: how often they agree, by how much
OSACA's port balancing overshoots, and the MAPE of both against the
measurements.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

import numpy as np

from pmpredict.formats.experiment_files import load_experiments
from pmpredict.model.experiments import ExperimentSet
from pmpredict.exporters.llvm import export_llvm
from pmpredict.exporters.opcodes import resolve_opcodes
from pmpredict.exporters.common import singleton_cycles
from pmpredict.exporters.osaca import export_osaca, osaca_order
from pmpredict.isa.osaca_forms import osaca_identity
from pmpredict.predict.metrics import mape
from pmpredict.formats.model_files import load_model
from pmpredict.predict.throughput import simulate

ARTIFACT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                         "pmevo-artifact"))
SETS = {"SKL": "validation_len06.json", "ZEN": "train_len05.json", "A72": "train_len05.json"}


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=300)
    ap.add_argument("--model", help="real code: this model and OSACA with it exported")
    args, rest = ap.parse_known_args()
    if args.model:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_realcode
        return bench_realcode.main(["--model", args.model, "--osaca-export", args.model, *rest])
    if rest:
        ap.error(f"unrecognised arguments: {' '.join(rest)}")
    if not os.path.isdir(ARTIFACT):
        print(f"shared data not found at {ARTIFACT}", file=sys.stderr)
        return 1
    warnings.simplefilter("ignore")
    from osaca.parser import ParserAArch64, ParserX86ATT
    from osaca.semantics import ArchSemantics, MachineModel, reduce_to_section

    tmp = tempfile.mkdtemp()
    print(f"{'model':5} {'osaca export':>12} {'llvm export':>11} {'import':>7} {'OSACA load':>10}"
          f" {'kernels':>7} {'agree':>6} {'max over':>8} {'mean over':>9} {'MAPE ours':>9}"
          f" {'MAPE OSACA':>10} {'ours/kernel':>11} {'OSACA/kernel':>12}")
    from pmpredict.models import builtin_names
    runs = [(label, os.path.join(ARTIFACT, label, "mapping_pmevo.json"), label) for label in SETS]
    runs += [(name, name, name.upper()) for name in builtin_names() if name.upper() in SETS]
    for label, spec, data in runs:
        exp_file = SETS[data]
        model = load_model(spec)
        yml = os.path.join(tmp, f"{label}.yml")
        _, t_osaca = timed(export_osaca, model, yml)
        _, t_llvm = timed(export_llvm, model, os.path.join(tmp, f"{label}.td"), 19, True)
        back, t_import = timed(load_model, yml)
        assert back.uops == model.uops
        mm, t_load = timed(MachineModel, path_to_yaml=yml)
        parser = ParserX86ATT() if model.isa == "x86" else ParserAArch64()
        printed = resolve_opcodes(model.forms, model.isa, use_llvm_mc=False)
        first = {}
        for f in osaca_order(model, singleton_cycles(model)):      # the order OSACA sees
            first.setdefault(repr(osaca_identity(f, model.isa)), f)
        unique = {f for f in model.forms if first[repr(osaca_identity(f, model.isa))] == f}
        exps = load_experiments(os.path.join(ARTIFACT, data, exp_file))
        picked = tuple(e for e in exps.experiments if set(e.forms()) <= unique)[:args.kernels]
        subset = ExperimentSet(exps.forms, picked, model.isa)
        (ours, _), t_ours = timed(simulate, model, subset)
        c = "#" if model.isa == "x86" else "//"
        got = []
        t0 = time.perf_counter()
        for e in picked:
            lines = [printed[f].asm for f, n in e.counts for _ in range(n)]
            text = f"{c} OSACA-BEGIN\n" + "\n".join(lines) + f"\n{c} OSACA-END\n"
            kernel = reduce_to_section(parser.parse_file(text), parser)
            sem = ArchSemantics(parser, mm)
            sem.normalize_instruction_forms(kernel)
            sem.add_semantics(kernel)
            sem.assign_optimal_throughput(kernel)
            got.append(max(ArchSemantics.get_throughput_sum(kernel)))
        t_osaca_k = (time.perf_counter() - t0) / max(1, len(picked))
        got = np.array(got)
        over = got - ours
        measured = subset.measured()
        print(f"{label:5} {t_osaca:11.2f}s {t_llvm:10.2f}s {t_import:6.2f}s {t_load:9.2f}s"
              f" {len(picked):7d} {np.mean(np.abs(over) <= 0.011):6.1%} {over.max():8.2f}"
              f" {over.mean():9.3f} {mape(ours, measured):8.1f}% {mape(got, measured):9.1f}%"
              f" {t_ours / max(1, len(picked)) * 1e6:9.0f}us {t_osaca_k * 1e3:10.1f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
