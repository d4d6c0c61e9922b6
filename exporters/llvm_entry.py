"""`--format llvm`: the LLVM TableGen exporter (llvm.py) as the export command offers it."""

from __future__ import annotations

from pmpredict.exporters.exporter import Exporter


def add_arguments(parser) -> None:
    # the releases whose TableGen field name we know (llvm.CYCLES_FIELD)
    parser.add_argument("--llvm-version", type=int, choices=[14, 19], default=19,
                        help="LLVM release the TableGen targets (ResourceCycles for 14, "
                             "ReleaseAtCycles for 19; default 19)")
    parser.add_argument("--self-contained", action="store_true",
                        help="llvm: wrap the model in a harness that `llvm-tblgen "
                             "-gen-subtarget` checks")


def export(model, path, args, source):
    # deferred: the renderer brings jinja2, the templates and the llvm-mc opcode table
    from pmpredict.exporters.llvm import export_llvm
    return export_llvm(model, path, version=args.llvm_version,
                       self_contained=args.self_contained, source=source)


LLVM = Exporter("llvm", "an llvm-mca scheduling model (LLVM TableGen)", add_arguments, export)
