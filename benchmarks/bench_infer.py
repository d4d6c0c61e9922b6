"""Inference benchmark: wall time and held-out accuracy per architecture (PMEvo artifact data).

    python benchmarks/bench_infer.py shipped            # the built-in models on held-out data
    python benchmarks/bench_infer.py skl [--config K=V ...]
    python benchmarks/bench_infer.py cv ZEN|A72|SKL [--folds 5] [--config K=V ...]
    python benchmarks/bench_infer.py ablation [--arch SKL] [--variants a,b,...]

SKL is validated on validation_len06.json (never trained on); ZEN and A72 by
5-fold cross-validation of train_len05.json (fold seed 0; singletons always in
training). `cv SKL` cross-validates SKL's training data (train_len02-04 pooled),
so SKL settings can be chosen without looking at the validation set. PMEvo's
published mapping is scored on the same data side by side (for ZEN/A72 it was
trained on all of train_len05, so its fold scores are in-sample). Every figure
printed here is measured when the script runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from pmpredict.formats.experiment_files import load_experiments, load_many
from pmpredict.model.experiments import ExperimentSet
from pmpredict.infer.pmevo import Inference, InferConfig
from pmpredict.infer.prepare import prepare
from pmpredict.infer.result import mapping_to_model
from pmpredict.predict.metrics import evaluate_model
from pmpredict.formats.model_files import load_model

DATA = os.environ.get("PMEVO_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                 "data", "pmevo-artifact"))
PORTS = {"SKL": 9, "ZEN": 10, "A72": 7}
TRAIN = {"SKL": ["singletons.json", "train_len02.json", "train_len03.json", "train_len04.json"],
         "ZEN": ["singletons.json", "train_len05.json"], "A72": ["singletons.json", "train_len05.json"]}
FOLD_SEED = 0

# ablation: each variant adds one change to the one before (the default is "annealed");
# "compact" and "distilled" are alternatives to "restarts"
VARIANTS = {
    "pmevo": dict(method="pmevo", population=300, generations=30),
    "pmevo+exact": dict(method="pmevo+exact", population=300, generations=30, anneal_sweeps=0),
    "random-start": dict(start="random", anneal_sweeps=0),
    "singleton-start": dict(start="singleton", anneal_sweeps=0),
    "shared-start": dict(start="shared", anneal_sweeps=0),
    "annealed": dict(),
    "restarts": dict(restarts=2),
    "compact": dict(restarts=2, final_volume_weight=0.005),
    "distilled": dict(restarts=4, distill=1500),
}


def path(arch, name):
    return os.path.join(DATA, arch, name)


def infer(train: ExperimentSet, n_ports: int, config: InferConfig):
    t0 = time.monotonic()
    prepared = prepare(train, n_ports)
    masks, counts = Inference(prepared.problem, config).run()
    model = mapping_to_model(prepared.problem, masks, counts, prepared.form_of, name="bench",
                             isa=train.isa)
    return model, time.monotonic() - t0


def folds(exps: ExperimentSet, k: int):
    order = np.random.default_rng(FOLD_SEED).permutation(len(exps))
    for i in range(k):
        test = set(order[i::k].tolist())
        yield (ExperimentSet(exps.forms, tuple(e for j, e in enumerate(exps.experiments) if j not in test)),
               ExperimentSet(exps.forms, tuple(exps.experiments[j] for j in sorted(test))))


def row(label, ev, volume=None, seconds=None):
    vol = f"{volume:6d}" if volume is not None else "     -"
    sec = f"{seconds:7.0f}" if seconds is not None else "      -"
    print(f"{label:34s} MAPE {ev.mape:6.2f}%  Kendall {ev.kendall:5.3f}  Pearson {ev.pearson:5.3f}"
          f"  volume {vol}  time {sec} s", flush=True)


def parse_config(items) -> dict:
    out = {}
    for item in items or []:
        k, v = item.split("=", 1)
        out[k] = type(getattr(InferConfig(), k))(v)
    return out


def bench_skl(config: InferConfig, label="pmpredict infer"):
    train = load_many([path("SKL", f) for f in TRAIN["SKL"]])
    valid = load_experiments(path("SKL", "validation_len06.json"))
    model, sec = infer(train, PORTS["SKL"], config)
    row(label, evaluate_model(model, valid), model.volume(), sec)
    return model


def bench_cv(arch: str, config: InferConfig, k: int, label="pmpredict infer", first=None, only=None):
    singles = load_experiments(path(arch, "singletons.json"))
    data = load_many([path(arch, f) for f in TRAIN[arch] if f != "singletons.json"])
    pmevo = load_model(path(arch, "mapping_pmevo.json"))
    ours, theirs, secs, vols = [], [], [], []
    for i, (train, test) in enumerate(folds(data, k)):
        if first is not None and i >= first:
            break
        if only is not None and i not in only:
            continue
        model, sec = infer(singles.concat(train), PORTS[arch], config)
        ev = evaluate_model(model, test)
        ev_p = evaluate_model(pmevo, test)
        ours.append(ev.mape)
        theirs.append(ev_p.mape)
        secs.append(sec)
        vols.append(model.volume())
        print(f"  {arch} fold {i}: ours {ev.mape:6.2f}%  PMEvo (in-sample) {ev_p.mape:6.2f}%  "
              f"volume {model.volume()}  {sec:.0f} s", flush=True)
    print(f"{arch} {label}: {len(ours)} of {k} folds, MAPE {np.mean(ours):.2f}% (PMEvo's mapping {np.mean(theirs):.2f}%), "
          f"mean volume {np.mean(vols):.0f} (PMEvo {pmevo.volume()}), mean time {np.mean(secs):.0f} s, "
          f"max {np.max(secs):.0f} s", flush=True)


def bench_shipped():
    valid = load_experiments(path("SKL", "validation_len06.json"))
    for label, spec in [("skl (built-in)", "skl"), ("PMEvo published", path("SKL", "mapping_pmevo.json")),
                        ("uops.info", path("SKL", "mapping_uops_info.json"))]:
        m = load_model(spec)
        row(f"SKL validation_len06: {label}", evaluate_model(m, valid), m.volume(),
            m.provenance.get("elapsed_s"))
    for arch in ("ZEN", "A72"):
        data = load_experiments(path(arch, "train_len05.json"))
        for label, spec in [(f"{arch.lower()} (built-in)", arch.lower()),
                            ("PMEvo published", path(arch, "mapping_pmevo.json"))]:
            m = load_model(spec)
            row(f"{arch} train_len05 (in-sample): {label}", evaluate_model(m, data), m.volume(),
                m.provenance.get("elapsed_s"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("shipped", "skl", "cv", "ablation"))
    ap.add_argument("arch", nargs="?", default="SKL")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--first", type=int, help="run only the first N folds (quick comparisons)")
    ap.add_argument("--only", type=lambda s: {int(x) for x in s.split(",")},
                    help="run only these folds, e.g. 2,3 (to finish an interrupted cross-validation)")
    ap.add_argument("--config", nargs="*", help="InferConfig overrides, e.g. restarts=2 seed=1")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    if not os.path.isdir(DATA):
        print(f"skipped: {DATA} (the PMEvo artifact data) is absent")
        return 0
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, load average {load} "
          f"(wall times are only comparable on a quiet machine)")
    overrides = parse_config(args.config)
    if args.what == "shipped":
        bench_shipped()
    elif args.what == "skl":
        bench_skl(InferConfig(**overrides))
    elif args.what == "cv":
        bench_cv(args.arch.upper(), InferConfig(**overrides), args.folds, first=args.first,
                 only=args.only)
    else:
        for name in args.variants.split(","):
            cfg = InferConfig(**dict(VARIANTS[name], **overrides))
            if args.arch.upper() == "SKL":
                bench_skl(cfg, label=name)
            else:
                bench_cv(args.arch.upper(), cfg, args.folds, label=name, first=args.first)
    return 0


if __name__ == "__main__":
    sys.exit(main())
