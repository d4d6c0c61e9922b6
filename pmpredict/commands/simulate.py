"""`pmpredict simulate`: predicted cycles of every experiment under a mapping."""

from __future__ import annotations

import math

from .common import add_mapping_arguments, bottleneck_names, json_number, print_json


def register(sub):
    p = sub.add_parser("simulate", help="predict the cycles of each experiment under a mapping")
    add_mapping_arguments(p)
    p.set_defaults(func=run)


def run(args):
    from ..data.experiments import load_experiments
    from ..model import load_model
    from ..sim import simulate

    model = load_model(args.mapping)
    exps = load_experiments(args.experiments)
    cycles, bottleneck = simulate(model, exps)
    known = set(model.uops)
    rows = []
    for i, (c, b) in enumerate(zip(cycles, bottleneck)):
        row = {"index": i, "cycles": json_number(c)}
        if math.isnan(c):
            missing = [f for f in exps.experiments[i].forms() if f not in known]
            row["bottleneck"] = []
            row["error"] = "form not in the model: " + ", ".join(missing)
        else:
            row["bottleneck"] = bottleneck_names(model, b)
        measured = exps.experiments[i].cycles
        if measured is not None:
            row["measured"] = measured
        rows.append(row)
    if args.json:
        print_json({"predictions": rows})
        return 0
    print(f"{'#':>5} {'cycles':>8} {'measured':>9}  bottleneck")
    for row in rows:
        cyc = "-" if row["cycles"] is None else f"{row['cycles']:.3f}"
        meas = f"{row['measured']:.3f}" if "measured" in row else "-"
        what = row.get("error") or "{" + ",".join(row["bottleneck"]) + "}"
        print(f"{row['index']:5d} {cyc:>8} {meas:>9}  {what}")
    return 0
