"""`pmpredict export`: write a model as an OSACA machine file or an LLVM scheduling model."""

from __future__ import annotations

import sys

from pmpredict.errors import InputError
from pmpredict.formats.files import check_output
from pmpredict.commands.common import emit, load_model, name_value


def register(sub):
    p = sub.add_parser("export", help="write a model as an OSACA YAML file or LLVM TableGen",
                       description="Write a model as an OSACA machine file (YAML) or an llvm-mca "
                                   "scheduling model (LLVM TableGen). Forms a format cannot "
                                   "express are listed in a comment, never guessed; a model the "
                                   "format cannot carry at all is refused before anything is "
                                   "written.")
    p.add_argument("model_arg", nargs="?", metavar="M",
                   help="model file (native JSON, PMEvo Mapping3, OSACA YAML) or built-in name")
    p.add_argument("--model", "-m", metavar="M", help="the model, as a flag (instead of M)")
    p.add_argument("--format", "-f", required=True, choices=["osaca", "llvm"], help="target format")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="file to write")
    p.add_argument("--llvm-version", type=int, choices=[14, 19], default=19,
                   help="LLVM release the TableGen targets (ResourceCycles for 14, "
                        "ReleaseAtCycles for 19; default 19)")
    p.add_argument("--self-contained", action="store_true",
                   help="llvm: wrap the model in a harness that `llvm-tblgen -gen-subtarget` checks")
    p.add_argument("--name", type=name_value,
                   help="model name in the output (default: the model's name)")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON on stdout (default: a line on stderr)")
    p.set_defaults(func=run)


def run(args):
    from pmpredict.views import export as view

    if (args.model_arg is None) == (args.model is None):
        raise InputError("<command line>", "give the model once: as M or as --model M")
    spec = args.model_arg or args.model
    check_output(args.output, "export")
    model = load_model(spec)
    if args.name:
        model = model.with_uops(model.uops, name=args.name)
    if args.format == "osaca":
        from pmpredict.exporters.osaca import export_osaca
        result = export_osaca(model, args.output, source=spec)
    else:
        from pmpredict.exporters.llvm import export_llvm
        result = export_llvm(model, args.output, version=args.llvm_version,
                             self_contained=args.self_contained, source=spec)
    if args.json:
        emit(view, result, True)
    else:
        sys.stderr.write(view.text(result))
    return 0
