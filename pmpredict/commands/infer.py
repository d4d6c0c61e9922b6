"""`pmpredict infer`: a port mapping from measured experiments (front end of pmpredict.infer).

Flags become a settings dict and calls into pmpredict.infer.job (with --measure, through the
training workflow of pmpredict.host.workflow, which measures first); the progress line and the
messages are the only things done here.
"""

from __future__ import annotations

import os
import shlex
import sys
import time

from pmpredict.errors import InputError
from pmpredict.formats.files import check_output
from pmpredict.commands.common import (emit, float_in, int_in, name_value, r_max_value,
                                       training_saver)
from pmpredict.commands.progress import ProgressDisplay
from pmpredict.commands.stopping import STOPPED, deadline_check
from pmpredict.formats.model_files import save_model


def register(sub):
    p = sub.add_parser("infer", help="infer a port mapping from measured experiments (PMEvo)",
                       description="Infer a three-level port mapping that explains measured "
                                   "throughputs. Same seed and input give the same output. "
                                   "Ctrl-C or SIGTERM stops it with a final checkpoint; "
                                   "--resume continues to the uninterrupted result.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--experiments", "-e", nargs="+", metavar="E",
                        help="measured experiment files (native JSON or PMEvo ExperimentList)")
    source.add_argument("--measure", action="store_true",
                        help="the whole pipeline on this host: measure the forms' experiments "
                             "(see --design), latencies and front end here (cached, resumable; "
                             "kept in OUT.json.measurements/), then infer (ports default to 10)")
    forms = p.add_mutually_exclusive_group()
    forms.add_argument("--forms", metavar="FILE",
                       help="with --measure: form list, one PMEvo form string a line, or a "
                            "packaged list: catalogue (the forms of 99%% of real code, the "
                            "default), host (125 forms), core (25)")
    forms.add_argument("--forms-from", nargs="+", metavar="FILE.s",
                       help="with --measure: the forms of the instructions in these assembly "
                            "files (x86 AT&T or Intel); branches, traps, stack and system "
                            "instructions are listed and left out")
    p.add_argument("--kernel-only", action="store_true",
                   help="with --forms-from: only each file's kernel, chosen as `pmpredict "
                        "predict` chooses it")
    p.add_argument("--syntax", choices=("att", "intel"),
                   help="with --forms-from: the files' syntax (default: detected)")
    p.add_argument("--design", choices=("pairs", "blockers"),
                   help="with --measure: pairs: every pair and weighted pair of forms (PMEvo, "
                        "O(n^2)); blockers: all pairs of a pilot of 32 forms, every form beside "
                        "14 of them, and random mixes of 4 forms (O(n)) (default: pairs up to "
                        "150 forms, blockers beyond)")
    p.add_argument("--no-latencies", action="store_true",
                   help="with --measure: do not measure latencies (by default the model gets "
                        "each form's measured latencies, eliminated moves and idioms)")
    p.add_argument("--ports", type=int_in(1, 16), metavar="N",
                   help="number of ports (default: the 'arch.ports' of PMEvo experiment files)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json", help="model file to write")
    # settings default to None ("not given"): pmpredict.infer.job fills in the defaults, or
    # the checkpoint's on --resume (where a given value must agree with the checkpoint)
    p.add_argument("--seed", type=int_in(0), help="random seed, >= 0 (default 0)")
    p.add_argument("--method", choices=("exact", "pmevo", "pmevo+exact"),
                   help="exact: singleton start + exact uop moves (default); pmevo: PMEvo's EA + "
                        "count local search; pmevo+exact: EA then exact moves")
    p.add_argument("--start", choices=("shared", "fitted", "singleton", "random"),
                   help="exact: starting mapping; shared: one uop on ~1/t ports, forms of equal "
                        "throughput share a port set (default); fitted: the same with the (count, "
                        "ports) ratio closest to t, e.g. 2 uops on 3 ports for t = 0.67")
    p.add_argument("--restarts", type=int_in(1, 10_000), metavar="R",
                   help="independent starts; the best by training objective wins, or with "
                        "--distill their ensemble is distilled into one mapping (default 1)")
    p.add_argument("--distill", type=int_in(0, 10_000_000), metavar="N",
                   help="with --restarts R > 1: label N synthetic experiments with the mean "
                        "prediction of the R mappings and refine one mapping on measured + "
                        "synthetic (more accurate on unseen experiments; e.g. 4000; default 0)")
    p.add_argument("--distill-sweeps", type=int_in(1, 10_000), metavar="N",
                   help="refinement sweeps on measured + synthetic (default 5)")
    p.add_argument("--population", type=int_in(2, 10_000_000), metavar="P",
                   help="EA population (default 1000)")
    p.add_argument("--generations", type=int_in(0, 1_000_000), metavar="G",
                   help="EA generations (default 40)")
    p.add_argument("--volume-weight", type=float_in(0.0, 1e6), metavar="W",
                   help="final penalty per uop per form, in relative-error units: > 0 gives a more "
                        "compact, slightly less accurate mapping (e.g. 0.005; default 0)")
    p.add_argument("--max-sweeps", type=int_in(0, 1_000_000), metavar="N",
                   help="at most N refinement sweeps per start (default 14)")
    p.add_argument("--epsilon", type=float_in(0.0, 1.0),
                   help="congruence tolerance (symmetric relative difference, default 0.05)")
    p.add_argument("--r-max", type=r_max_value, metavar="IPC",
                   help="front-end cap used in the fitness")
    p.add_argument("--time-limit", type=float_in(0.0, 1e9, low_open=True), metavar="SEC",
                   help="stop after SEC seconds and write the best mapping found so far (with "
                        "--measure the limit covers measuring too: if it runs out while "
                        "measuring, exit with status 3; the same command resumes)")
    p.add_argument("--checkpoint", metavar="CKPT",
                   help="checkpoint file (default OUT.json.ckpt), written after every step and "
                        "on Ctrl-C or SIGTERM")
    p.add_argument("--resume", metavar="CKPT",
                   help="continue from a checkpoint; options not given take the checkpoint's "
                        "values, options given must agree with them")
    p.add_argument("--name", type=name_value, help="model name (default: OUT's file name)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON on stdout (default: a line on stderr)")
    p.set_defaults(func=run)


# the settings flags, by their InferConfig / InferSettings name
SETTINGS = {"method": "method", "seed": "seed", "restarts": "restarts", "start": "start",
            "distill": "distill", "distill_sweeps": "distill_sweeps", "population": "population",
            "generations": "generations", "final_volume_weight": "volume_weight",
            "max_sweeps": "max_sweeps", "ports": "ports", "epsilon": "epsilon", "r_max": "r_max"}


def _measure_and_infer(args, infer, should_stop, display):
    """--measure: the training workflow of this machine (host/workflow.py) on the flags' forms,
    design and latencies, inferring with `infer` (the job the flags ask for); its outcome, or
    None if should_stop() ended the measuring first (the cache keeps what was measured)."""
    # deferred: measuring loads numpy and the harness, inferring numba
    from pmpredict.host.workflow import NothingRunsHere, TrainingOptions, train_here
    from pmpredict.infer.design import default_design
    from pmpredict.measure import HostError, MeasurementStopped, default_cache_dir

    forms, where = _forms_to_measure(args)
    out_dir = args.output + ".measurements"
    options = TrainingOptions(cache_dir=default_cache_dir(),
                              design=args.design or default_design(len(forms)),
                              latencies=not args.no_latencies, progress=display,
                              on_set=training_saver(out_dir), should_stop=should_stop)

    def infer_measured(measured):
        _close(display)
        for form, why in measured.training.left_out.items():
            at = "{}:{}: ".format(*where[form]) if form in where else ""
            print(f"pmpredict: left out {at}{form}: {why}", file=sys.stderr)
        inputs = [os.path.join(os.path.basename(out_dir), f"{name}.json")
                  for name in measured.training.parts()]
        return infer(measured.experiments, inputs, default_ports=measured.ports,
                     default_r_max=measured.r_max, tables=measured.tables)
    try:
        return train_here(forms, options, infer_measured).outcome
    except HostError as exc:
        raise InputError("<host>", f"cannot measure on this machine: {exc}") from None
    except MeasurementStopped as exc:
        _close(display)
        print(f"pmpredict: time limit reached while measuring ({exc.phase}); run the same "
              "command again to measure the rest (finished results are cached) and infer",
              file=sys.stderr)
        return None
    except NothingRunsHere as exc:                       # nothing to infer from
        _close(display)
        form, why = next(iter(exc.left_out.items()))
        path, line = where.get(form, (args.forms or "<forms>", None))
        raise InputError(path, f"no form could be measured on this machine; the first, "
                               f"{form}: {why}", line) from None


def _forms_to_measure(args):
    """(the forms --forms or --forms-from name, form -> (file, line) it comes from); the
    instructions --forms-from leaves out are listed on stderr."""
    # deferred: pmpredict.measure loads numpy and the harness
    from pmpredict.measure import load_form_list
    from pmpredict.measure.forms_from import forms_from_assembly

    if not args.forms_from:
        return load_form_list(args.forms or "catalogue"), {}
    picked = forms_from_assembly(args.forms_from, args.syntax, args.kernel_only)
    for left in picked.left_out:
        print(f"pmpredict: left out {left}", file=sys.stderr)
    return picked.forms, picked.where


def _close(display) -> None:
    """End the progress display's line before a message (or the inference's display)."""
    if display:
        display.close()


def _check_measure_flags(args) -> None:
    """Flags that only mean something with --measure (or --forms-from) are refused without."""
    if not args.measure:
        given = [name for name, value in (("--forms", args.forms), ("--forms-from", args.forms_from),
                                          ("--design", args.design),
                                          ("--no-latencies", args.no_latencies)) if value]
        if given:
            raise InputError("<command line>", f"{given[0]} goes with --measure")
    if not args.forms_from:
        given = [name for name, value in (("--kernel-only", args.kernel_only),
                                          ("--syntax", args.syntax)) if value]
        if given:
            raise InputError("<command line>", f"{given[0]} goes with --forms-from")


def resume_command(argv: list[str], checkpoint: str) -> str:
    """The command line that continues this run: the same arguments, --resume CKPT."""
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--resume":
            skip = True
        elif not a.startswith("--resume="):
            args.append(a)
    return "pmpredict " + shlex.join(args + ["--resume", checkpoint])


def run(args):
    """SIGTERM behaves like Ctrl-C throughout (cli.main): measuring stops cleanly (the cache
    keeps what is done), inference writes its checkpoint and best mapping; exit status 130."""
    # deferred: experiment files and checkpoints load numpy, the view lark
    from pmpredict.formats.experiments import load_many
    from pmpredict.infer.checkpoint import load_checkpoint
    from pmpredict.views import infer as view

    check_output(args.output, "model")
    ckpt_path = args.checkpoint or args.output + ".ckpt"
    check_output(ckpt_path, "checkpoint")
    _check_measure_flags(args)
    should_stop = deadline_check(args.time_limit, time.monotonic())
    display = None if args.quiet else ProgressDisplay()
    argv = getattr(args, "argv", None) or sys.argv[1:]
    infer = _inference_job(args, ckpt_path, argv, should_stop, display)
    if args.measure:
        if args.resume:
            load_checkpoint(args.resume)          # a bad checkpoint fails before measuring
        outcome = _measure_and_infer(args, infer, should_stop, display)
        if outcome is None:
            return STOPPED
    else:
        outcome = infer(load_many(args.experiments),
                        [os.path.basename(p) for p in args.experiments])
    _close(display)
    if outcome.model is not None:
        save_model(outcome.model, args.output)
    hint = resume_command(argv, ckpt_path)
    if args.json:
        emit(view, outcome, True, output=args.output, resume=hint)
    elif not args.quiet or not outcome.finished:
        sys.stderr.write(view.text(outcome, output=args.output, resume=hint))
    if outcome.interrupted is not None:
        return 130                        # Ctrl-C or SIGTERM, as everywhere in the CLI
    return 0 if outcome.model is not None else 1


def _inference_job(args, ckpt_path: str, argv: list[str], should_stop, display):
    """The inference the flags ask for, as infer(experiments, inputs, *, default_ports,
    default_r_max, tables) -> InferOutcome: the settings given over the defaults (or the
    checkpoint's with --resume), a checkpoint after every step, stopped by --time-limit,
    shown on the display; `tables` (measured latencies, front end) go into the model."""
    # deferred: the inference loads numba
    from pmpredict.infer.job import load_resume, run_job, settings_for

    requested = {key: getattr(args, flag) for key, flag in SETTINGS.items()}

    def infer(exps, inputs, *, default_ports=None, default_r_max=None, tables=()):
        resumed = load_resume(args.resume, exps) if args.resume else None
        settings = settings_for(requested, exps, resumed=resumed, resume_path=args.resume,
                                default_ports=default_ports, default_r_max=default_r_max)
        if display:
            display.plan_inference(*settings.config.steps())
        return run_job(exps, settings, inputs=inputs, checkpoint_path=ckpt_path,
                       resumed=resumed, should_stop=should_stop,
                       progress=display and display.inference,
                       name=args.name or os.path.splitext(os.path.basename(args.output))[0],
                       command="pmpredict " + shlex.join(argv), measured=list(tables))
    return infer
