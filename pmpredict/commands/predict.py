"""`pmpredict predict`: throughput, port pressure and bottleneck of an assembly kernel."""

from __future__ import annotations

import json
import os
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
    p.add_argument("files", nargs="+", metavar="FILE.s",
                   help="assembly as written by gcc/clang -S (several files: each is predicted); "
                        "- reads standard input")
    p.add_argument("--model", "-m", metavar="M",
                   help="model file or built-in name (default: skl for x86, a72 for AArch64); "
                        "host: this machine's model, measuring the kernels' forms it lacks")
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
    p.add_argument("--jsonl", action="store_true",
                   help="one JSON object per kernel per line (for many files or regions)")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="predict many kernels in N processes (default 1)")
    p.set_defaults(func=run)

# from this many kernels on, the simulation runs compiled (numba: ~0.6 s to load, then
# ~20x faster); sooner when the report includes the bottlenecks' costs (a simulation each)
COMPILED_FROM = 200
COMPILED_FROM_WITH_COSTS = 50


def _model_for(args, isa: str, path: str):
    from ..data.model_files import load_model
    from ..models import builtin_path

    spec = args.model
    if spec is None:
        spec = semantics.get(isa).default_model
        if builtin_path(spec) is None:
            raise InputError(path, f"no built-in {isa} model {spec!r} is installed; "
                                   "give one with --model FILE")
    model = load_model(spec)
    if model.isa != isa:
        raise InputError(path, f"the kernel is {isa} but model {model.name!r} is {model.isa}; "
                               "choose a matching --model (or --isa)")
    return model


def _is_host(spec) -> bool:
    from ..model import HOST_MODEL
    return spec == HOST_MODEL and not os.path.exists(spec)


def _host_model(files):
    """This machine's model with the forms of every kernel measured into it (infer.hostmodel).
    files: [(path, syntax, isa, kernels)], all x86."""
    from ..infer.hostmodel import kernel_forms, host_model
    from ..infer.measure.instantiate import HARNESS_ISA
    from .measure_progress import MeasureProgress

    forms, left_out = [], []
    for path, syntax, isa, kernels in files:
        if isa != HARNESS_ISA:
            raise InputError(path, f"the kernel is {isa}; this machine's model "
                                   f"(--model host) is measured for {HARNESS_ISA} only")
        for k in kernels:
            more, left = kernel_forms(k.instructions, syntax, isa)
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
    from ..data.model_files import check_same_isa, load_model
    from ..fallback import with_fallback

    other = load_model(spec)
    check_same_isa(model, other.isa, spec, "the fallback is")
    try:
        return with_fallback(model, other)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def _kernels(program, args):
    """The kernels of a file: the selected one, or every LLVM-MCA region (as llvm-mca)."""
    from ..asm.kernel import all_regions, select_kernel

    kernel = select_kernel(program, lines=args.lines, region=args.region)
    if kernel.how == "llvm-mca-region" and args.region is None and kernel.others \
            and len(kernel.others) > 1:
        return all_regions(program)
    return [kernel]


def run(args):
    # heavy imports (lark, the engines) only when the command runs: `pmpredict --help`
    # and the other commands stay fast
    from ..asm.parse import parse_file, parse_source
    from ..batch import render_all
    from ..files import decode_utf8
    from ..predict import Predictor
    from ..views import DEFAULT_VIEWS, render_text, to_json

    files, models = [], {}                       # files: (path, syntax, isa, kernels); models by ISA
    host = _is_host(args.model)
    if args.files.count("-") > 1:
        raise InputError("<command line>", "standard input (-) can be read once")
    for path in args.files:
        if path == "-":
            path = "<stdin>"
            text = decode_utf8(sys.stdin.buffer.read(), path)
            program = parse_source(text, path, syntax=args.syntax, isa=args.isa)
        else:
            program = parse_file(path, syntax=args.syntax, isa=args.isa)
        if program.isa not in models and not host:
            models[program.isa] = _model_for(args, program.isa, path)
        files.append((path, program.syntax, program.isa, _kernels(program, args)))
    update = None
    if host:
        model, update = _host_model(files)
        models[model.isa] = model
    count = sum(len(kernels) for *_, kernels in files)
    costs = args.json or args.jsonl or args.bottlenecks
    compiled = count >= (COMPILED_FROM_WITH_COSTS if costs else COMPILED_FROM)
    predictors = {isa: Predictor(model, allow_approx=not args.exact,
                                 fallback=_fallback_for(args.fallback, model) if args.fallback
                                 else None, compiled=compiled)
                  for isa, model in models.items()}
    extra = tuple(v for v, on in (("timeline", args.timeline), ("bottlenecks", args.bottlenecks))
                  if on)

    def render(item):
        path, syntax, isa, kernel, first = item
        rep = predictors[isa].predict(kernel, syntax, path)
        if args.strict and rep.unmatched:
            miss = rep.unmatched[0]
            raise InputError(path, f"{len(rep.unmatched)} instruction(s) not in model "
                                   f"{rep.model!r} (--strict), first: {miss.text!r} "
                                   f"[{miss.key}]", miss.line)
        if args.jsonl:
            return json.dumps(to_json(rep, extra), separators=(",", ":")) + "\n"
        if args.json:
            return to_json(rep, extra)
        return ("" if first else "\n" + "=" * 72 + "\n\n") + render_text(rep, DEFAULT_VIEWS + extra)

    items = [(path, syntax, isa, kernel, not n and not k)
             for n, (path, syntax, isa, kernels) in enumerate(files)
             for k, kernel in enumerate(kernels)]
    out = list(render_all(items, render, max(1, args.jobs)))     # every error before any output
    if args.json and not args.jsonl:
        per_file, at = [], 0
        for *_, kernels in files:
            obj = out[at]
            if len(kernels) > 1:                 # as llvm-mca: the first, then every region
                obj = dict(obj, regions=out[at:at + len(kernels)])
            if update is not None:
                obj = dict(obj, host=update.to_json())
            per_file.append(obj)
            at += len(kernels)
        print_json(per_file[0] if len(per_file) == 1 else per_file)
    else:
        if update is not None:                # --jsonl: one record per kernel, so the note goes to stderr
            if args.jsonl:
                print(f"pmpredict: {update.line()}", file=sys.stderr)
            else:
                sys.stdout.write(update.line() + "\n\n")
        sys.stdout.write("".join(out))
    return 0
