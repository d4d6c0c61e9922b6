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
from pmpredict.commands.common import (add_dask_arguments, emit, float_in, int_in,
                                       load_model, name_value, open_cluster, resume_command,
                                       print_json, r_max_value,
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
                             "kept in OUT.json.measurements/), then infer (ports default to 10); "
                             "with --method cegis: measure on this host only what CEGIS asks "
                             "for, over the forms of --forms (cached)")
    source.add_argument("--oracle", metavar="M",
                        help="with --method cegis or counters (cegis is the default here): a "
                             "model file or built-in name as the ground truth, its cycles by "
                             "the exact simulator (see --oracle-noise); its forms, or those "
                             "of --forms")
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
    p.add_argument("--method", choices=("exact", "pmevo", "pmevo+exact", "cegis", "counters"),
                   help="exact: singleton start + exact uop moves (default); pmevo: PMEvo's EA + "
                        "count local search; pmevo+exact: EA then exact moves; cegis: "
                        "counter-example-guided SMT inference, asking the oracle for the "
                        "experiments it needs (Ritter ch. 4); counters: blocking instructions "
                        "and a total-uops counter, every form's uops justified by named "
                        "experiments (ch. 6; needs a uop counter: --oracle, or a PMU here)")
    p.add_argument("--oracle-noise", type=float_in(0.0, 0.5), metavar="X",
                   help="with --oracle: relative noise of its cycles, each times (1 + u), u "
                        "uniform in [-X, X], fixed per experiment by --seed (default 0)")
    p.add_argument("--max-uops", type=int_in(1, 8), metavar="N",
                   help="cegis: uops per form at most (1, the default: the two-level model; "
                        "more: three-level, slower)")
    p.add_argument("--max-length", type=int_in(2, 1000), metavar="L",
                   help="cegis, counters: ask for experiments of at most L forms (default: "
                        "any length, so the result is complete)")
    p.add_argument("--encoding", choices=("flow", "hall"),
                   help="cegis, counters: relateThroughput as the thesis' flow constraints "
                        "(flow, the default) or as every port set's bottleneck bound (hall: "
                        "2^P - 1 constraints per experiment, slower beyond 4 ports)")
    p.add_argument("--explain", action="store_true",
                   help="cegis, counters: print what justifies the mapping (counters: each "
                        "form's experiments and what each establishes; cegis: the experiments "
                        "measured)")
    p.add_argument("--start", choices=("shared", "fitted", "singleton", "random"),
                   help="exact: starting mapping; shared: one uop on ~1/t ports, forms of equal "
                        "throughput share a port set (default); fitted: the same with the (count, "
                        "ports) ratio closest to t, e.g. 2 uops on 3 ports for t = 0.67")
    p.add_argument("--restarts", type=int_in(1, 10_000), metavar="R",
                   help="independent starts; the best by training objective wins, or with "
                        "--distill their ensemble is distilled into one mapping (default 1)")
    add_dask_arguments(p, "run the restarts at once (the same result as one after the other)",
                       jobs_help="with --dask and no ADDRESS: the local cluster's processes")
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
                   help="congruence tolerance (symmetric relative difference, default 0.05); "
                        "cegis, counters: tolerance on cycles per instruction (default 0 with "
                        "an exact --oracle, else 0.02)")
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
    if args.forms and not args.measure and not args.oracle:
        raise InputError("<command line>", "--forms goes with --measure or --oracle")
    if not args.measure:
        given = [name for name, value in (("--forms-from", args.forms_from),
                                          ("--design", args.design),
                                          ("--no-latencies", args.no_latencies)) if value]
        if given:
            raise InputError("<command line>", f"{given[0]} goes with --measure")
    if not args.forms_from:
        given = [name for name, value in (("--kernel-only", args.kernel_only),
                                          ("--syntax", args.syntax)) if value]
        if given:
            raise InputError("<command line>", f"{given[0]} goes with --forms-from")


def run(args):
    """SIGTERM behaves like Ctrl-C throughout (cli.main): measuring stops cleanly (the cache
    keeps what is done), inference writes its checkpoint and best mapping; exit status 130."""
    # deferred: experiment files and checkpoints load numpy, the view lark
    from pmpredict.formats.experiment_files import load_many
    from pmpredict.infer.checkpoint import load_checkpoint
    from pmpredict.views import infer as view

    check_output(args.output, "model")
    ckpt_path = args.checkpoint or args.output + ".ckpt"
    check_output(ckpt_path, "checkpoint")
    _check_measure_flags(args)
    method = _method(args)
    _check_method_flags(args, method)
    should_stop = deadline_check(args.time_limit, time.monotonic())
    display = None if args.quiet else ProgressDisplay()
    argv = getattr(args, "argv", None) or sys.argv[1:]
    if method in ONLINE_METHODS:
        return _run_online(args, method, ckpt_path, argv, should_stop, display)
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


# --- cegis and counters: the methods that choose their own experiments ----------------------

ONLINE_METHODS = ("cegis", "counters")
# flags of the PMEvo methods only, and of the online methods only
PMEVO_ONLY = ("start", "restarts", "distill", "distill_sweeps", "population", "generations",
              "volume_weight", "max_sweeps", "dask")
ONLINE_ONLY = ("oracle_noise", "max_uops", "max_length", "encoding", "explain")


def _method(args) -> str:
    """The method asked for: --method, else a resumed checkpoint's, else cegis with --oracle
    (the only methods an oracle serves), else exact."""
    # deferred: checkpoints load numpy
    from pmpredict.infer.checkpoint import load_checkpoint

    if args.resume:
        config = load_checkpoint(args.resume).get("config") or {}
        saved = config.get("method") or (config.get("infer") or {}).get("method")
        if args.method and saved and args.method != saved and \
                (saved in ONLINE_METHODS or args.method in ONLINE_METHODS):
            raise InputError(args.resume, f"this checkpoint belongs to a --method {saved} run, "
                                          f"not --method {args.method}")
        if saved in ONLINE_METHODS:
            return saved
    if args.method:
        return args.method
    return "cegis" if args.oracle else "exact"


def _check_method_flags(args, method: str) -> None:
    """Flags of another method are refused, as is an oracle for the PMEvo methods."""
    online = method in ONLINE_METHODS
    for name in (ONLINE_ONLY if not online else PMEVO_ONLY):
        value = getattr(args, name)
        if value not in (None, False):
            which = "--method cegis or counters" if not online else \
                "--method exact, pmevo or pmevo+exact"
            raise InputError("<command line>", f"--{name.replace('_', '-')} goes with {which}")
    if args.oracle and not online:
        raise InputError("<command line>", "--oracle goes with --method cegis or counters")
    if args.jobs and args.dask is None:
        raise InputError("<command line>", "--jobs goes with --dask (the local cluster's "
                                           "processes)")
    if online and args.experiments:
        raise InputError("<command line>", f"--method {method} chooses its own experiments: "
                                           "give --oracle M or --measure, not --experiments")
    if online and args.design:
        raise InputError("<command line>", f"--design goes with the PMEvo methods (--method "
                                           f"{method} measures what it asks for)")
    if online and args.measure and not (args.forms or args.forms_from):
        raise InputError("<command line>", f"--measure with --method {method} needs --forms "
                                           "FILE or --forms-from (it does not scale to the "
                                           "catalogue)")


def _oracle(args, seed: int):
    """(ModelOracle of --oracle, its model) ; the model's forms or those of --forms."""
    # deferred: the oracle loads numpy and the simulator
    from pmpredict.infer.oracles import ModelOracle

    truth = load_model(args.oracle)
    forms = list(truth.uops)
    if args.forms:
        # deferred: form lists load the measure package
        from pmpredict.measure import load_form_list
        forms = load_form_list(args.forms)
        missing = [f for f in forms if f not in truth.uops]
        if missing:
            raise InputError(args.forms, f"form {missing[0]!r} is not in the oracle model "
                                         f"{truth.name!r}")
    return ModelOracle(truth, args.oracle_noise or 0.0, seed, name=truth.name), truth, forms


def _run_online(args, method, ckpt_path, argv, should_stop, display):
    """--method cegis|counters: the settings, the oracle (a model, or this host), the run,
    the model and its explanation."""
    # deferred: the SMT solver (z3) and the simulator load only for these methods
    from pmpredict.infer.online_job import (load_online_resume, online_settings, run_online)
    from pmpredict.infer.uop_counters import CounterUnavailable, HostUopCounter, ModelUopCounter
    from pmpredict.views import infer as view

    requested = {"n_ports": args.ports, "max_uops": args.max_uops,
                 "max_length": args.max_length, "epsilon": args.epsilon, "r_max": args.r_max,
                 "encoding": args.encoding, "seed": args.seed}
    resumed_raw = None
    if args.resume:
        # deferred: checkpoints load numpy
        from pmpredict.infer.checkpoint import load_checkpoint
        resumed_raw = load_checkpoint(args.resume)
    if args.oracle:
        probe_seed = args.seed if args.seed is not None else \
            (resumed_raw or {}).get("config", {}).get("settings", {}).get("seed", 0)
        oracle, truth, forms = _oracle(args, probe_seed)
        counter = ModelUopCounter(truth) if method == "counters" else None
        default_ports, exact, isa = len(truth.ports), not args.oracle_noise, truth.isa
        inputs = [args.oracle]
    else:
        counter = None
        if method == "counters":
            try:
                counter = HostUopCounter()
            except CounterUnavailable as exc:
                raise InputError("<host>", str(exc)) from None
        # deferred: measuring loads numpy and the harness
        from pmpredict.host.workflow import HOST_PORTS
        from pmpredict.infer.oracles import HostOracle
        from pmpredict.measure import default_cache_dir
        forms, _ = _forms_to_measure(args)
        oracle = HostOracle(default_cache_dir(), should_stop=should_stop, progress=display)
        default_ports, exact, isa = HOST_PORTS, False, "x86"
        inputs = ["<host>"]
        if args.r_max is None and resumed_raw is None:
            requested["r_max"] = _host_width(display)
    resumed = load_online_resume(args.resume, method, forms, oracle) if args.resume else None
    settings = online_settings(method, requested, exact_oracle=exact,
                               default_ports=default_ports, resumed=resumed,
                               resume_path=args.resume)
    outcome = run_online(method, oracle, forms, settings, checkpoint_path=ckpt_path,
                         counter=counter, resumed=resumed, should_stop=should_stop,
                         progress=display and display.online,
                         name=args.name or os.path.splitext(os.path.basename(args.output))[0],
                         command="pmpredict " + shlex.join(argv), isa=isa, inputs=inputs)
    _close(display)
    if outcome.model is not None:
        save_model(outcome.model, args.output)
    hint = resume_command(argv, ckpt_path)
    if args.json:
        print_json(view.online_json(outcome, output=args.output, resume=hint,
                                    explain=args.explain))
    else:
        if args.explain and outcome.model is not None:
            sys.stdout.write(view.explain_text(outcome))
        if not args.quiet or not outcome.finished:
            sys.stderr.write(view.online_text(outcome, output=args.output, resume=hint))
    if outcome.interrupted is not None:
        return 130
    return 0 if outcome.model is not None else 1


def _host_width(display):
    """This machine's issue width (the front-end probes, cached): the R_max cap (4.3)."""
    # deferred: the probes load the harness
    from pmpredict.measure import default_cache_dir
    from pmpredict.measure.frontend import measure_frontend
    from pmpredict.measure import HostError
    try:
        return measure_frontend(cache_dir=default_cache_dir(), progress=display).facts.r_max
    except HostError as exc:
        raise InputError("<host>", f"cannot measure on this machine: {exc}") from None


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
        cluster = _cluster(args) if settings.config.restarts > 1 else None
        try:
            return run_job(exps, settings, inputs=inputs, checkpoint_path=ckpt_path,
                           resumed=resumed, should_stop=should_stop,
                           progress=display and display.inference,
                           name=args.name or os.path.splitext(os.path.basename(args.output))[0],
                           command="pmpredict " + shlex.join(argv), measured=list(tables),
                           workers=cluster)
        finally:
            if cluster is not None:
                cluster.close()
    return infer


def _cluster(args):
    """The Dask cluster --dask asks for (None without it)."""
    return None if args.dask is None else open_cluster(args.dask, args.jobs)