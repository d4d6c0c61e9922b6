"""`pmpredict measure`: time a basic block, or fill in an experiment file, on this host."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from pmpredict.errors import InputError
from pmpredict.formats.files import check_output, read_text
from pmpredict.commands.common import emit, float_in, int_in, print_json, training_saver
from pmpredict.commands.progress import ProgressDisplay
from pmpredict.commands.stopping import STOPPED, deadline_check


def register(sub):
    p = sub.add_parser("measure", help="measure throughput on this host by timing (no perf counters)",
                       description="Time a basic block (cycles per iteration of the block in a loop), "
                                   "fill in measured cycles for an experiment file, or measure "
                                   "PMEvo's training experiments for a form list.")
    p.add_argument("file", nargs="?", metavar="FILE.s", help="x86-64 basic block (AT&T or Intel)")
    p.add_argument("--syntax", choices=["att", "intel"], help="assembly syntax (default: guess)")
    p.add_argument("--lines", metavar="A-B", help="measure the instructions on these lines")
    p.add_argument("--region", metavar="NAME", help="measure this LLVM-MCA-BEGIN region")
    p.add_argument("--experiments", "-e", metavar="E", help="experiment file to measure")
    p.add_argument("--training-set", metavar="DIR",
                   help="measure PMEvo's training experiments for a form list (singletons, all "
                        "pairs, weighted pairs) into DIR/singletons.json, pairs.json, weighted.json")
    p.add_argument("--forms", metavar="FILE",
                   help="form list for --training-set (default: the packaged host list)")
    p.add_argument("-o", "--output", metavar="OUT", help="where to write the measured experiments")
    p.add_argument("--cache", metavar="DIR", help="result cache directory "
                   "(default: $PMPREDICT_CACHE or ~/.cache/pmpredict)")
    p.add_argument("--no-cache", action="store_true", help="measure everything afresh")
    p.add_argument("--samples", type=int_in(1, 1_000_000), default=None, metavar="N",
                   help="timing samples per kernel at least (default 5; more are taken, up to "
                        "24, until the fastest runs agree)")
    p.add_argument("--time-limit", type=float_in(0.0, 1e9, low_open=True), metavar="SEC",
                   help="with --experiments / --training-set: stop after SEC seconds, write "
                        "what is measured and exit with status 3; the same command resumes")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _run_options(args, default=None):
    # deferred: pmpredict.measure loads numpy and the harness; --help imports this
    from pmpredict.measure.runner import RunOptions
    default = default or RunOptions()
    if args.samples is None:
        return default
    return replace(default, samples=args.samples, max_samples=max(default.max_samples, args.samples))


def _cache(args):
    # deferred: pmpredict.measure loads numpy and the harness; --help imports this
    from pmpredict.measure import default_cache_dir
    if args.cache and os.path.exists(args.cache) and not os.path.isdir(args.cache):
        raise InputError(args.cache, "--cache must name a directory, not a file")
    return None if args.no_cache else (args.cache or default_cache_dir())


def run(args):
    # deferred: pmpredict.measure loads numpy and the harness; --help imports this
    from pmpredict.measure.runner import HostError
    try:
        return _dispatch(args)
    except HostError as exc:
        print(f"pmpredict: error: {exc}", file=sys.stderr)
        return 1


def _dispatch(args):
    _cache(args)                                  # a bad --cache fails before any work
    if args.output:
        check_output(args.output, "measured experiments")
    if args.training_set:
        if args.file or args.experiments:
            raise InputError(args.training_set, "--training-set takes no FILE.s or --experiments")
        return _run_training_set(args)
    if args.experiments:
        if args.file:
            raise InputError(args.file, "give either FILE.s or --experiments, not both")
        if not args.output:
            raise InputError(args.experiments, "--experiments needs -o OUT for the measured set")
        return _run_experiments(args)
    if not args.file:
        raise InputError(None, "nothing to measure: give FILE.s or --experiments E -o OUT")
    if args.time_limit is not None:
        raise InputError(args.file, "--time-limit goes with --experiments or --training-set")
    return _run_block(args)


def _run_block(args):
    # deferred: measuring a block loads lark, numpy and the harness, the views lark
    from pmpredict.measure.block import BLOCK_OPTIONS, LARGE_SPREAD, measure_block
    from pmpredict.views import measure as view
    text = read_text(args.file)
    result = measure_block(text, args.syntax, args.file, options=_run_options(args, BLOCK_OPTIONS),
                           line_range=args.lines, region=args.region, cache_dir=_cache(args))
    if args.json:
        print_json(view.json(result))
    else:
        sys.stdout.write(view.text(result, path=args.file, large_spread=LARGE_SPREAD))
    return 0 if result.cycles is not None else 1


def _stopped(exc, what: str) -> int:
    print(f"pmpredict: time limit reached during {exc.phase}: {what}; run the same command "
          "again to measure the rest (finished results are cached)", file=sys.stderr)
    return STOPPED


def _run_experiments(args):
    # deferred: experiment files load numpy, measuring the harness, the views lark
    from pmpredict.formats.experiment_files import load_experiments, save_experiments
    from pmpredict.measure import MeasureOptions, measure_experiment_set
    from pmpredict.measure.instantiate import HARNESS_ISA
    from pmpredict.measure.experiment_runs import MeasurementStopped
    from pmpredict.views import measure as view
    exps = load_experiments(args.experiments)
    if exps.isa != HARNESS_ISA:
        raise InputError(args.experiments, f"only {HARNESS_ISA} experiments can be measured on "
                                           f"this host (this set is {exps.isa})")
    display = ProgressDisplay() if sys.stderr.isatty() or not args.json else None
    try:
        out = measure_experiment_set(exps, cache_dir=_cache(args), progress=display,
                                     options=MeasureOptions(run=_run_options(args)),
                                     should_stop=deadline_check(args.time_limit))
    except MeasurementStopped as exc:
        if display:
            display.close()
        save_experiments(exc.partial, args.output)
        measured = sum(1 for e in exc.partial.experiments if e.cycles is not None)
        return _stopped(exc, f"{args.output} holds {measured} of {len(exc.partial)} experiments")
    if display:
        display.close()
    save_experiments(out, args.output)
    emit(view, view.SetMeasurement.of(args.output, out), args.json)
    return 0


def _run_training_set(args):
    """Singletons first (their throughputs size the weighted pairs), then pairs and weighted pairs."""
    # deferred: measuring loads numpy and the harness, the training set lark, the views lark
    from pmpredict.host.training import measure_training_set
    from pmpredict.measure import MeasureOptions, default_forms, load_form_list
    from pmpredict.measure.experiment_runs import MeasurementStopped
    from pmpredict.views import measure as view
    forms = load_form_list(args.forms) if args.forms else default_forms()
    display = ProgressDisplay()

    def report(path, exps):
        display.note(view.text(view.SetMeasurement.of(path, exps)).splitlines()[0], sys.stdout)

    try:
        training = measure_training_set(forms, cache_dir=_cache(args), progress=display,
                                        options=MeasureOptions(run=_run_options(args)),
                                        on_set=training_saver(args.training_set, report),
                                        should_stop=deadline_check(args.time_limit))
    except MeasurementStopped as exc:
        display.close()
        return _stopped(exc, f"the finished phases are in {args.training_set}")
    display.close()
    for form, why in training.left_out.items():
        print(f"  left out: {form}: {why}")
    return 0
