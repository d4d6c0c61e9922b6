"""`pmpredict predict`: throughput, port pressure and bottleneck of an assembly kernel."""

from __future__ import annotations

import sys

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.commands.common import (add_dask_arguments, float_in, int_in, open_cluster,
                                       print_json)
from pmpredict.commands.progress import ProgressDisplay


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
    p.add_argument("--measure-budget", type=float_in(0), default=None, metavar="SEC",
                   help="with --model host: seconds the forms and pairs of forms the kernels "
                        "need may take to measure (default %g; the first model of a machine, "
                        "its core, is not counted); what is left is said in each prediction "
                        "it concerns and measured by the next run" % DEFAULT_MEASURE_BUDGET)
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
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="machine-readable output")
    output.add_argument("--jsonl", action="store_true",
                        help="one JSON object per kernel per line (for many files or regions)")
    p.add_argument("--jobs", "-j", type=int_in(1, 1024), default=None, metavar="N",
                   help="predict many kernels in N processes (default 1; with --dask and no "
                        "ADDRESS, the local cluster's processes)")
    add_dask_arguments(p, "predict the kernels, output in input order,")
    p.add_argument("--service", metavar="PATH",
                   help="ask the running `pmpredict serve --socket PATH` instead (models stay "
                        "loaded there; docs/SERVICE.md)")
    p.set_defaults(func=run)

# seconds `--model host` measures the forms and pairs its kernels need, unless told otherwise
DEFAULT_MEASURE_BUDGET = 120.0


def _host_model(sources, budget_s: float | None = DEFAULT_MEASURE_BUDGET):
    """This machine's model with the forms of every kernel measured into it."""
    # deferred: predict_files loads lark and the engines, host.model ~9 ms; --help imports this
    from pmpredict.host.model import host_model
    from pmpredict.commands.predict_files import host_forms, split_variants

    forms, left_out, kernels = host_forms(sources)
    display = ProgressDisplay()
    model, update = host_model(forms, kernels=kernels, progress=display,
                               notify=lambda text: display.note(f"pmpredict: {text}"),
                               budget_s=budget_s,
                               variants=lambda model: split_variants(model, sources))
    display.close()
    update.left_out = left_out
    return model, update


def run(args):
    if args.service:
        # deferred: the client only where a service is asked
        from pmpredict.commands.service_client import predict_via_service
        return predict_via_service(args)
    # deferred: lark and the engines (predict_files), the views (lark); --help imports this
    from pmpredict.commands import predict_files as job
    from pmpredict.commands.batch import render_all, render_on_cluster
    from pmpredict.views import DEFAULT_VIEWS, jsonline, render_text, to_json

    sources = job.read_sources(args.files, syntax=args.syntax, isa=args.isa, lines=args.lines,
                               region=args.region, stdin=sys.stdin.buffer)
    update = hint = None
    if job.is_host(args.model):
        model, update = _host_model(sources, DEFAULT_MEASURE_BUDGET if args.measure_budget is None
                                    else args.measure_budget)
        models = {model.isa: model}
    elif args.model is None:
        models, hint = job.default_models(sources)
    else:
        models = job.models_for(sources, args.model)
    items = job.items(sources)
    predictors = job.predictors(models, exact=args.exact,
                                instructions=sum(len(k.instructions) for _, k, _ in items),
                                costs=args.bottlenecks,
                                fallback=args.fallback)
    extra = tuple(v for v, on in (("timeline", args.timeline), ("bottlenecks", args.bottlenecks))
                  if on)

    def render(item):
        src, kernel, first = item
        rep = predictors[src.isa].predict(kernel, src.syntax, src.path)
        if args.strict and rep.unmatched:
            miss = rep.unmatched[0]
            raise InputError(src.path, f"{len(rep.unmatched)} instruction(s) not in model "
                                       f"{rep.model!r} (--strict), first: {miss.text!r} "
                                       f"[{miss.key}]", miss.line)
        if args.jsonl:
            # the default views' record written directly (jsonline): the same bytes, cheaper
            return (jsonline.ENCODER.encode(to_json(rep, extra)) if extra
                    else jsonline.encode(rep)) + "\n"
        if args.json:
            return to_json(rep, extra)
        return ("" if first else "\n" + "=" * 72 + "\n\n") + render_text(rep, DEFAULT_VIEWS + extra)

    if args.dask is not None:
        with open_cluster(args.dask, args.jobs) as cluster:
            out = list(render_on_cluster(items, render, cluster, light=job.light_item))
    else:
        out = list(render_all(items, render, args.jobs or 1))   # every error before any output
    if args.json:
        print_json(job.per_file_json(sources, out, update.to_json() if update else None, hint))
        return 0
    # --jsonl: one record per kernel, so the notes go to stderr
    for note in ([update.line()] if update is not None else []) + ([hint] if hint else []):
        if args.jsonl:
            print(f"pmpredict: {note}", file=sys.stderr)
        else:
            sys.stdout.write(f"{note}\n\n" if update is not None else f"Hint:       {note}\n\n")
    sys.stdout.write("".join(out))
    return 0
