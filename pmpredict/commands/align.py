"""`pmpredict align`: name an inferred model's ports after a reference model's."""

from __future__ import annotations

from pmpredict.errors import InputError
from pmpredict.formats.files import check_output
from pmpredict.commands.common import emit, load_model
from pmpredict.formats.model_files import check_same_isa, save_model


def register(sub):
    p = sub.add_parser("align", help="map an inferred model's abstract ports (A, B, ...) onto "
                                     "the ports of a reference model and report how they agree",
                       description="Map an inferred model's abstract ports onto a reference "
                                   "model's ports by an exact linear assignment over the forms "
                                   "both know; report per port how their uops agree, and with -o "
                                   "write the model with the reference's port names.")
    p.add_argument("model", metavar="M", help="model file or built-in name")
    p.add_argument("--reference", "-r", required=True, metavar="REF",
                   help="reference model: an OSACA machine file (e.g. OSACA's skx.yml), a model "
                        "file or a built-in name")
    p.add_argument("--output", "-o", metavar="OUT.json",
                   help="write the model with the reference's port names (the alignment in its "
                        "provenance)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args):
    # deferred: the alignment loads numpy, lark and scipy, the views lark; --help imports this
    from pmpredict.predict.align import align, aligned_model
    from pmpredict.views import align as view

    if args.output:
        check_output(args.output, "aligned model")
    model = load_model(args.model)
    reference = load_model(args.reference)
    check_same_isa(model, reference.isa, args.reference, "the reference is")
    alignment = align(model, reference)
    if not alignment.pairs:
        raise InputError(args.reference, f"no instruction form of {model.name!r} is in the "
                                         "reference: nothing to align on")
    if args.output:
        save_model(aligned_model(model, alignment), args.output)
    emit(view, alignment, args.json, output=args.output)
    return 0
