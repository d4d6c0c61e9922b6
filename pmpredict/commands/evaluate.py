"""`pmpredict evaluate`: accuracy of a mapping against measured experiments."""

from __future__ import annotations

import sys

from pmpredict.formats.files import check_output
from pmpredict.formats.model_files import check_same_isa
from pmpredict.commands.common import add_model_arguments, emit, load_model


def register(sub):
    p = sub.add_parser("evaluate", help="MAPE, Pearson, Spearman, Kendall of a mapping vs measurements",
                       description="Compare a model's predictions with the measured cycles of an "
                                   "experiment file: MAPE, Pearson, Spearman and Kendall tau-b "
                                   "over the experiments the model can predict (the others are "
                                   "skipped; -v lists them), optionally with a heat map.")
    add_model_arguments(p)
    p.add_argument("--plot", metavar="FILE.png", help="write a predicted-vs-measured heat map")
    p.add_argument("-v", "--verbose", action="store_true", help="list the skipped experiments")
    p.set_defaults(func=run)


def run(args):
    # deferred: experiments load numpy, the metrics scipy and numba, the views lark (not --help)
    from pmpredict.formats.experiment_files import load_experiments
    from pmpredict.predict.metrics import evaluate_model
    from pmpredict.views import evaluate as view

    if args.plot:
        check_output(args.plot, "plot")
    model = load_model(args.model)
    exps = load_experiments(args.experiments)
    check_same_isa(model, exps.isa, args.experiments, "the experiments are")
    ev = evaluate_model(model, exps)
    # the metrics first: a plot that fails afterwards must not hide them
    emit(view, ev, args.json, verbose=args.verbose)
    if ev.skipped and not args.verbose and not args.json:
        print(f"({ev.skipped} experiments skipped; -v lists them)", file=sys.stderr)
    if args.plot:
        sys.stdout.flush()
        # deferred: the heat map loads matplotlib (~0.2 s), only for --plot
        from pmpredict.views.plot import heatmap
        heatmap(ev.predicted, ev.measured, args.plot,
                title=f"{model.name} on {exps.source}: MAPE {ev.mape:.1f}%")
    return 0
