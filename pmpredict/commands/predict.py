"""`pmpredict predict`: throughput, port pressure and bottleneck of an assembly kernel."""

from __future__ import annotations

import os
import sys

from .. import semantics
from ..errors import InputError
from .common import print_json


def register(sub):
    p = sub.add_parser("predict", help="predict the throughput of an assembly kernel (.s file)")
    p.add_argument("file", metavar="FILE.s", help="assembly as written by gcc/clang -S")
    p.add_argument("--model", "-m", metavar="M",
                   help="model file or built-in name (default: skl for x86, a72 for AArch64); "
                        "host: this machine's model, measuring the kernel's forms it lacks")
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
    from ..model import load_model
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


def _is_host(spec) -> bool:
    from ..model import HOST_MODEL
    return spec == HOST_MODEL and not os.path.exists(spec)


def _host_model(args, program, kernels):
    """This machine's model with the kernels' forms measured into it (infer.hostmodel)."""
    from ..infer.hostmodel import kernel_forms, host_model
    from .measure_progress import MeasureProgress

    if program.isa != "x86":
        raise InputError(args.file, f"the kernel is {program.isa}; this machine's model "
                                    "(--model host) is measured for x86-64 only")
    forms, left_out = [], []
    for k in kernels:
        more, left = kernel_forms(k.instructions, program.syntax, program.isa)
        forms += [f for f in more if f not in forms]
        left_out += left
    progress = MeasureProgress() if sys.stderr.isatty() else None
    model, update = host_model(forms, progress=progress,
                               notify=lambda text: print(f"pmpredict: {text}", file=sys.stderr))
    if progress:
        progress.done()
    update.left_out = left_out
    return model, update


def _fallback_for(spec: str, model):
    from ..fallback import with_fallback
    from ..model import load_model

    other = load_model(spec)
    if other.isa != model.isa:
        raise InputError(spec, f"the fallback is {other.isa} but model {model.name!r} is "
                               f"{model.isa}")
    try:
        return with_fallback(model, other)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def run(args):
    # heavy imports (numba, scipy, lark) only when the command runs: `pmpredict --help`
    # and the other commands stay fast
    from ..asm.kernel import all_regions, select_kernel
    from ..asm.parse import parse_file
    from ..predict import Predictor
    from ..views import DEFAULT_VIEWS, render_text, to_json

    program = parse_file(args.file, syntax=args.syntax, isa=args.isa)
    kernel = select_kernel(program, lines=args.lines, region=args.region)
    kernels = [kernel]
    if kernel.how == "llvm-mca-region" and args.region is None and kernel.others \
            and len(kernel.others) > 1:
        kernels = all_regions(program)            # like llvm-mca: every region is reported
    host = None
    if _is_host(args.model):
        model, host = _host_model(args, program, kernels)
    else:
        model = _model_for(args, program.isa)
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
        if host is not None:
            out["host"] = host.to_json()
        print_json(out)
    else:
        if host is not None:
            sys.stdout.write(host.line() + "\n\n")
        for i, rep in enumerate(reports):
            if i:
                sys.stdout.write("\n" + "=" * 72 + "\n\n")
            sys.stdout.write(render_text(rep, DEFAULT_VIEWS + extra))
    return 0
