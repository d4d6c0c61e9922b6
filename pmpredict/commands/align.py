"""`pmpredict align`: name an inferred model's ports after a reference model's."""

from __future__ import annotations

import sys

from ..errors import InputError
from .common import print_json


def register(sub):
    p = sub.add_parser("align", help="map an inferred model's abstract ports (A, B, ...) onto "
                                     "the ports of a reference model and report how they agree")
    p.add_argument("model", metavar="M", help="model file or built-in name")
    p.add_argument("--reference", "-r", required=True, metavar="REF",
                   help="reference model: an OSACA machine file (e.g. OSACA's skx.yml), a model "
                        "file or a built-in name")
    p.add_argument("--output", "-o", metavar="OUT.json",
                   help="write the model with the reference's port names (the alignment in its "
                        "provenance)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _share(x) -> str:
    return "    -" if x is None else f"{x * 100:4.0f}%"


def render(a) -> str:
    out = [f"Alignment of {a.model} ({len(a.ports)} ports) with {a.reference} "
           f"({len(a.reference_ports)} ports) over {len(a.pairs)} of {a.forms} forms both know",
           "", "  port  ->  reference   affinity    uops   equal  contained  overlap"]
    for p in a.per_port:
        mapped = p.mapped if p.mapped is not None else "(none)"
        out.append(f"  {p.port:<5} ->  {mapped:<9} {p.affinity:9.2f} {p.mass:7.0f}   "
                   f"{_share(p.equal)}      {_share(p.contained)}    {_share(p.overlap)}")
    out.append(f"  {'all':<5}                          {a.mass:7.0f}   {_share(a.equal)}      "
               f"{_share(a.contained)}    {_share(a.overlap)}")
    out.append("")
    out.append("uops: mass of our uops on the common forms that may use the port; equal / "
               "contained / overlap: share of it whose port set, renamed, equals / lies inside / "
               "shares a port with a uop of the reference's form.")
    same = "-" if a.same_count is None else f"{a.same_count * 100:.0f}%"
    out.append(f"Uops per form: {a.mass:.0f} here, {a.reference_mass:.0f} in the reference; "
               f"equal uop count on {same} of the common forms.")
    if a.unmatched:
        out.append("Our ports without a counterpart (they keep their names): "
                   + ", ".join(a.unmatched))
    if a.reference_unmatched:
        out.append("Reference ports without a counterpart: " + ", ".join(a.reference_unmatched))
    return "\n".join(out) + "\n"


def run(args):
    from ..align import align, aligned_model
    from ..model import load_model

    model = load_model(args.model)
    reference = load_model(args.reference)
    if model.isa != reference.isa:
        raise InputError(args.reference, f"the reference is {reference.isa} but model "
                                         f"{model.name!r} is {model.isa}")
    alignment = align(model, reference)
    if not alignment.pairs:
        raise InputError(args.reference, f"no instruction form of {model.name!r} is in the "
                                         "reference: nothing to align on")
    if args.output:
        aligned_model(model, alignment).save(args.output)
    if args.json:
        print_json(alignment.to_json())
    else:
        sys.stdout.write(render(alignment))
        if args.output:
            sys.stdout.write(f"Wrote {args.output} (ports {', '.join(alignment.aligned_names())})\n")
    return 0
