"""`pmpredict evaluate`: accuracy of a mapping against measured experiments."""

from __future__ import annotations

import sys

from .common import add_mapping_arguments, json_number, print_json


def register(sub):
    p = sub.add_parser("evaluate", help="MAPE, Pearson, Spearman, Kendall of a mapping vs measurements")
    add_mapping_arguments(p)
    p.add_argument("--plot", metavar="FILE.png", help="write a predicted-vs-measured heat map")
    p.add_argument("-v", "--verbose", action="store_true", help="list the skipped experiments")
    p.set_defaults(func=run)


def run(args):
    from ..data.experiments import load_experiments
    from ..metrics import evaluate_model
    from ..model import load_model

    model = load_model(args.mapping)
    exps = load_experiments(args.experiments)
    ev = evaluate_model(model, exps)
    if args.plot:
        from ..plot import heatmap
        heatmap(ev.predicted, ev.measured, args.plot,
                title=f"{model.name} on {exps.source}: MAPE {ev.mape:.1f}%")
    if args.json:
        out = {k: json_number(v) if k != "n" and k != "skipped" else v for k, v in ev.to_json().items()}
        if args.verbose:
            out["skipped_experiments"] = [{"index": i, "reason": r} for i, r in ev.skipped_reasons]
        print_json(out)
    else:
        print(f"n         {ev.n}")
        print(f"skipped   {ev.skipped}")
        print(f"MAPE      {ev.mape:.2f}%")
        print(f"Pearson   {ev.pearson:.4f}")
        print(f"Spearman  {ev.spearman:.4f}")
        print(f"Kendall   {ev.kendall:.4f}  (tau-b)")
        if ev.skipped and not args.verbose:
            print(f"({ev.skipped} experiments skipped; -v lists them)", file=sys.stderr)
    if args.verbose and not args.json:
        for i, reason in ev.skipped_reasons:
            print(f"skipped {i}: {reason}")
    return 0
