"""`pmpredict predict`: throughput, port pressure and bottleneck of an assembly kernel."""

from __future__ import annotations

import sys

from .. import semantics
from ..errors import InputError
from .common import print_json


def register(sub):
    p = sub.add_parser("predict", help="predict the throughput of an assembly kernel (.s file)",
                       description="Find the kernel of an assembly file (LLVM-MCA / OSACA / IACA "
                                   "markers, or the innermost loop), match its instructions to "
                                   "a model's forms and predict cycles per iteration: the port "
                                   "bound (exact LP), the loop-carried dependency bound, the "
                                   "front end, and an out-of-order simulation; per-instruction "
                                   "port pressure and the bottleneck.")
    p.add_argument("file", metavar="FILE.s",
                   help="assembly as written by gcc/clang -S; - reads standard input")
    p.add_argument("--model", "-m", metavar="M",
                   help="model file or built-in name (default: skl for x86, a72 for AArch64)")
    p.add_argument("--fallback", metavar="F",
                   help="forms the model lacks are taken from F (an OSACA machine file, a model "
                        "file or a built-in name), its ports mapped onto the model's by "
                        "alignment (see pmpredict align)")
    p.add_argument("--isa", choices=list(semantics.ISAS), help="instruction set (default: detected)")
    p.add_argument("--syntax", choices=["att", "intel"], help="x86 syntax (default: detected)")
    p.add_argument("--lines", metavar="A-B", help="predict the instructions on lines A to B")
    p.add_argument("--region", metavar="NAME", help="predict the LLVM-MCA-BEGIN region NAME")
    p.add_argument("--strict", action="store_true",
                   help="an instruction the model has no form for is an error (exit 2)")
    p.add_argument("--exact", action="store_true",
                   help="no approximate matches (other GPR width, addressing mode, masking)")
    p.add_argument("--timeline", action="store_true",
                   help="also show the timeline of the first iterations (as llvm-mca -timeline)")
    p.add_argument("--bottlenecks", action="store_true",
                   help="also show what each bottleneck costs and how they interact (Fields)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _model_for(args, isa: str):
    from ..data.model_files import load_model
    from ..models import builtin_path

    spec = args.model
    if spec is None:
        spec = semantics.get(isa).default_model
        if builtin_path(spec) is None:
            raise InputError(args.file, f"no built-in {isa} model {spec!r} is installed; "
                                        "give one with --model FILE")
    model = load_model(spec)
    if model.isa != isa:
        raise InputError(args.file, f"the kernel is {isa} but model {model.name!r} is {model.isa}; "
                                    "choose a matching --model (or --isa)")
    return model


def _fallback_for(spec: str, model):
    from ..data.model_files import check_same_isa, load_model
    from ..fallback import with_fallback

    other = load_model(spec)
    check_same_isa(model, other.isa, spec, "the fallback is")
    try:
        return with_fallback(model, other)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def run(args):
    # heavy imports (numba, scipy, lark) only when the command runs: `pmpredict --help`
    # and the other commands stay fast
    from ..asm.kernel import all_regions, select_kernel
    from ..asm.parse import parse_file, parse_source
    from ..files import decode_utf8
    from ..predict import Predictor
    from ..views import DEFAULT_VIEWS, render_text, to_json

    if args.file == "-":
        args.file = "<stdin>"
        text = decode_utf8(sys.stdin.buffer.read(), args.file)
        program = parse_source(text, args.file, syntax=args.syntax, isa=args.isa)
    else:
        program = parse_file(args.file, syntax=args.syntax, isa=args.isa)
    model = _model_for(args, program.isa)
    kernel = select_kernel(program, lines=args.lines, region=args.region)
    kernels = [kernel]
    if kernel.how == "llvm-mca-region" and args.region is None and kernel.others \
            and len(kernel.others) > 1:
        kernels = all_regions(program)            # like llvm-mca: every region is reported
    fallback = None
    if args.fallback:
        fallback = _fallback_for(args.fallback, model)
    predictor = Predictor(model, allow_approx=not args.exact, fallback=fallback)
    reports = [predictor.predict(k, program.syntax, args.file) for k in kernels]
    if args.strict:
        for rep in reports:
            if rep.unmatched:
                first = rep.unmatched[0]
                raise InputError(args.file, f"{len(rep.unmatched)} instruction(s) not in model "
                                            f"{model.name!r} (--strict), first: {first.text!r} "
                                            f"[{first.key}]", first.line)
    extra = tuple(v for v, on in (("timeline", args.timeline), ("bottlenecks", args.bottlenecks))
                  if on)
    if args.json:
        out = to_json(reports[0], extra)
        if len(reports) > 1:
            out["regions"] = [to_json(r, extra) for r in reports]
        print_json(out)
    else:
        for i, rep in enumerate(reports):
            if i:
                sys.stdout.write("\n" + "=" * 72 + "\n\n")
            sys.stdout.write(render_text(rep, DEFAULT_VIEWS + extra))
    return 0
