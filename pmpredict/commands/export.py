"""`pmpredict export`: write a model as an OSACA machine file or an LLVM scheduling model."""

from __future__ import annotations

import sys

from ..model import load_model


def register(sub):
    p = sub.add_parser("export", help="write a model as an OSACA YAML file or LLVM TableGen")
    p.add_argument("model", metavar="M",
                   help="model file (native JSON, PMEvo Mapping3, OSACA YAML) or built-in name")
    p.add_argument("--format", "-f", required=True, choices=["osaca", "llvm"], help="target format")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="file to write")
    p.add_argument("--llvm-version", type=int, choices=[14, 19], default=19,
                   help="LLVM release the TableGen targets (ResourceCycles for 14, "
                        "ReleaseAtCycles for 19; default 19)")
    p.add_argument("--self-contained", action="store_true",
                   help="llvm: wrap the model in a harness that `llvm-tblgen -gen-subtarget` checks")
    p.add_argument("--name", help="model name in the output (default: the model's name)")
    p.set_defaults(func=run)


def run(args):
    model = load_model(args.model)
    if args.name:
        model = model.with_uops(model.uops, name=args.name)
    if args.format == "osaca":
        from ..exporters.osaca import export_osaca
        summary = export_osaca(model, args.output, source=args.model)
        skipped = summary["unsupported"]
        print(f"wrote {args.output}: {summary['forms']} instruction forms", file=sys.stderr)
    else:
        from ..exporters.llvm import export_llvm
        summary = export_llvm(model, args.output, version=args.llvm_version,
                              self_contained=args.self_contained, source=args.model)
        skipped = summary["unresolved"]
        print(f"wrote {args.output}: {summary['opcodes']} opcodes bound, "
              f"{len(summary['merged'])} opcodes shared by several forms", file=sys.stderr)
    if skipped:
        print(f"{len(skipped)} forms not exported (listed in a comment in {args.output})",
              file=sys.stderr)
    return 0
