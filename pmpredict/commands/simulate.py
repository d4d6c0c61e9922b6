"""`pmpredict simulate`: predicted cycles of every experiment under a mapping."""

from __future__ import annotations

from pmpredict.commands.common import add_model_arguments, emit, load_model
from pmpredict.formats.model_files import check_same_isa


def register(sub):
    p = sub.add_parser("simulate", help="predict the cycles of each experiment under a mapping",
                       description="Predict the cycles and the bottleneck port set of every "
                                   "experiment of a file under a model (the exact optimum of "
                                   "PMEvo's throughput LP); an experiment with a form the model "
                                   "lacks has no prediction and names the form.")
    add_model_arguments(p)
    p.set_defaults(func=run)


def run(args):
    # deferred: experiments load numpy, the simulation numba, the views lark; --help imports this
    from pmpredict.formats.experiment_files import load_experiments
    from pmpredict.predict.experiment_cycles import simulate_set
    from pmpredict.views import simulate as view

    model = load_model(args.model)
    exps = load_experiments(args.experiments)
    check_same_isa(model, exps.isa, args.experiments, "the experiments are")
    result = simulate_set(model, exps)
    emit(view, result, args.json)
    return 0
