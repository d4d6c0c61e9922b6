"""`pmpredict infer`: a port mapping from measured experiments (front end of pmpredict.infer)."""

from __future__ import annotations

import os
import shlex
import sys
import time

from .. import __version__
from ..errors import InputError
from ..jsonio import read_json
from .measure_progress import STOPPED, MeasureProgress, deadline_check, sigterm_as_interrupt


def register(sub):
    p = sub.add_parser("infer", help="infer a port mapping from measured experiments (PMEvo)",
                       description="Infer a three-level port mapping that explains measured "
                                   "throughputs. Same seed and input give the same output.")
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
                        "O(n^2)); blockers: a pilot of 32 forms, then every form beside the "
                        "few blockers a pilot inference names (O(n)) (default: pairs up to 150 "
                        "forms, blockers beyond)")
    p.add_argument("--no-latencies", action="store_true",
                   help="with --measure: do not measure latencies (by default the model gets "
                        "each form's measured latencies, eliminated moves and idioms)")
    p.add_argument("--ports", type=int, metavar="N",
                   help="number of ports (default: the 'arch.ports' of PMEvo experiment files)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json", help="model file to write")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--method", choices=("exact", "pmevo", "pmevo+exact"), default="exact",
                   help="exact: singleton start + exact uop moves (default); pmevo: PMEvo's EA + "
                        "count local search; pmevo+exact: EA then exact moves")
    p.add_argument("--start", choices=("shared", "fitted", "singleton", "random"), default="shared",
                   help="exact: starting mapping; shared: one uop on ~1/t ports, forms of equal "
                        "throughput share a port set (default); fitted: the same with the (count, "
                        "ports) ratio closest to t, e.g. 2 uops on 3 ports for t = 0.67")
    p.add_argument("--restarts", type=int, default=1, metavar="R",
                   help="independent starts; the best by training objective wins, or with "
                        "--distill their ensemble is distilled into one mapping (default 1)")
    p.add_argument("--distill", type=int, default=0, metavar="N",
                   help="with --restarts R > 1: label N synthetic experiments with the mean "
                        "prediction of the R mappings and refine one mapping on measured + "
                        "synthetic (more accurate on unseen experiments; e.g. 4000; default 0)")
    p.add_argument("--distill-sweeps", type=int, default=5, metavar="N",
                   help="refinement sweeps on measured + synthetic (default 5)")
    p.add_argument("--population", type=int, default=1000, metavar="P", help="EA population (default 1000)")
    p.add_argument("--generations", type=int, default=40, metavar="G", help="EA generations (default 40)")
    p.add_argument("--volume-weight", type=float, default=0.0, metavar="W",
                   help="final penalty per uop per form, in relative-error units: > 0 gives a more "
                        "compact, slightly less accurate mapping (e.g. 0.005; default 0)")
    p.add_argument("--max-sweeps", type=int, default=14, metavar="N",
                   help="at most N refinement sweeps per start (default 14)")
    p.add_argument("--epsilon", type=float, default=0.05,
                   help="congruence tolerance (symmetric relative difference, default 0.05)")
    p.add_argument("--time-limit", type=float, metavar="SEC",
                   help="stop after SEC seconds and write the best mapping found so far (with "
                        "--measure the limit covers measuring too: if it runs out while "
                        "measuring, exit with status 3; the same command resumes)")
    p.add_argument("--checkpoint", metavar="CKPT",
                   help="checkpoint file (default OUT.json.ckpt), written after every step and on Ctrl-C")
    p.add_argument("--resume", metavar="CKPT",
                   help="continue from a checkpoint (its settings win over the options above)")
    p.add_argument("--name", help="model name (default: OUT's file name)")
    p.add_argument("--r-max", type=float, metavar="IPC", help="front-end cap used in the fitness")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.set_defaults(func=run)


# x86 hosts: ALU/vector ports plus load, store and divider units fit in 10 (Zen 4, Golden Cove)
HOST_PORTS = 10


def _measure_here(args, should_stop):
    """--measure: the host training set, measured now (or read back from the cache);
    None if should_stop() ended the measurement first."""
    from pmpredict.infer.host import measure_training_set
    from pmpredict.infer.design import default_design
    from pmpredict.infer.measure import HostError, default_cache_dir, load_form_list
    from pmpredict.infer.measure.measure_set import MeasurementStopped

    if args.forms_from:
        from pmpredict.infer.forms_from import forms_from_assembly
        picked = forms_from_assembly(args.forms_from, args.syntax, args.kernel_only)
        for left in picked.left_out:
            print(f"pmpredict: left out {left}", file=sys.stderr)
        forms = picked.forms
    else:
        forms = load_form_list(args.forms or "catalogue")
    out_dir = args.output + ".measurements"
    display = None if args.quiet else MeasureProgress()
    try:
        training = measure_training_set(forms, cache_dir=default_cache_dir(), progress=display,
                                        out_dir=out_dir, should_stop=should_stop,
                                        design=args.design or default_design(len(forms)),
                                        latencies=not args.no_latencies,
                                        n_ports=args.ports or HOST_PORTS, seed=args.seed)
    except HostError as exc:
        raise InputError("<host>", f"cannot measure on this machine: {exc}") from None
    except MeasurementStopped as exc:
        if display:
            display.done()
        print(f"pmpredict: time limit reached while measuring ({exc.phase}); run the same "
              "command again to measure the rest (finished results are cached) and infer",
              file=sys.stderr)
        return None
    if display:
        display.done()
    for form, why in training.left_out.items():
        print(f"pmpredict: left out {form}: {why}", file=sys.stderr)
    inputs = [os.path.join(os.path.basename(out_dir), f"{name}.json") for name in training.parts()]
    from pmpredict.infer.measure.frontend import measure_frontend
    front = measure_frontend(cache_dir=default_cache_dir())
    return training.combined(), inputs, training.latencies, front


def _ports_of(paths) -> int | None:
    """The port count a PMEvo experiment file declares (arch.ports), if any agree."""
    found = set()
    for path in paths:
        data = read_json(path).data
        arch = data.get("arch") if isinstance(data, dict) else None
        if isinstance(arch, dict) and isinstance(arch.get("ports"), list):
            found.add(len(arch["ports"]))
    return found.pop() if len(found) == 1 else None


class _Progress:
    """One status line on stderr: phase, step, training error, volume, elapsed."""

    def __init__(self, quiet: bool, restarts: int, prefix: str = ""):
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.restarts = restarts
        self.prefix = prefix            # "inference: " after a measurement phase

    def __call__(self, info):
        if self.quiet:
            return
        el = int(info["elapsed"])
        what = "generation" if info["phase"] == "ea" else "sweep"
        start = ("ensemble" if info["phase"] == "distill"
                 else f"start {info['restart'] + 1}/{self.restarts}")
        line = (f"{self.prefix}{start}  {info['phase']:8s} {what} "
                f"{info['step']:3d}  error {info['error'] * 100:6.2f}%  volume "
                f"{int(info['volume']):5d}  {el // 60:02d}:{el % 60:02d}")
        if self.tty:
            sys.stderr.write("\r" + line + "\x1b[K")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def done(self):
        if not self.quiet and self.tty:
            sys.stderr.write("\n")


def run(args):
    """SIGTERM behaves like Ctrl-C throughout: measuring stops cleanly (the cache keeps what
    is done), inference writes its checkpoint and best mapping."""
    with sigterm_as_interrupt():
        return _run(args)


def _run(args):
    from ..data.experiments import load_many
    from pmpredict.infer.checkpoint import load_checkpoint, save_checkpoint
    from pmpredict.infer.pipeline import Inference, InferConfig, config_dict
    from pmpredict.infer.prepare import measured_forms, prepare
    from pmpredict.infer.result import mapping_to_model

    started = time.monotonic()
    should_stop = deadline_check(args.time_limit, started)
    latencies = front = None
    if args.measure:
        measured = _measure_here(args, should_stop)
        if measured is None:
            return STOPPED
        exps, inputs, latencies, front = measured
    else:
        if args.forms or args.forms_from:
            raise InputError(args.forms or args.forms_from[0], "--forms and --forms-from go "
                             "with --measure")
        exps = load_many(args.experiments)
        inputs = [os.path.basename(p) for p in args.experiments]
    ckpt_path = args.checkpoint or args.output + ".ckpt"
    resumed = load_checkpoint(args.resume) if args.resume else None
    if resumed:
        config = InferConfig(**resumed["config"]["infer"])
        n_ports = int(resumed["config"]["ports"])
        epsilon = float(resumed["config"]["epsilon"])
        r_max = resumed["config"]["r_max"]
    else:
        try:
            config = InferConfig(method=args.method, seed=args.seed, restarts=args.restarts,
                                 start=args.start, distill=args.distill,
                                 distill_sweeps=args.distill_sweeps,
                                 population=args.population, generations=args.generations,
                                 final_volume_weight=args.volume_weight, max_sweeps=args.max_sweeps)
        except ValueError as exc:
            raise InputError("<command line>", str(exc)) from None
        n_ports = args.ports or (HOST_PORTS if args.measure else _ports_of(args.experiments))
        # measured here: the issue width caps the fitness as it caps predictions
        epsilon, r_max = args.epsilon, args.r_max or (front.facts.r_max if front else None)
        if not n_ports:
            raise InputError(args.experiments[0], "the number of ports is unknown: pass --ports N")
    if not 1 <= n_ports <= 16:
        raise InputError("<command line>", f"--ports must be between 1 and 16, not {n_ports}")

    if not measured_forms(exps):
        raise InputError(inputs[0], "no measured experiments (every 'cycles' is null)")
    prepared = prepare(exps, n_ports, epsilon, r_max)
    problem, form_of, reps = prepared.problem, prepared.form_of, prepared.representatives
    if resumed and resumed["forms"] != list(reps):
        raise InputError(args.resume, "this checkpoint belongs to a run on different experiments")

    saved = {"infer": config_dict(config), "ports": n_ports, "epsilon": epsilon, "r_max": r_max}
    inference = Inference(problem, config, resumed["snapshot"] if resumed else None)
    progress = _Progress(args.quiet, config.restarts, "inference: " if args.measure else "")

    def checkpoint(snap):
        save_checkpoint(ckpt_path, snap, saved, reps, inputs)

    interrupted = False
    try:
        result = inference.run(progress=progress, on_snapshot=checkpoint, should_stop=should_stop)
    except KeyboardInterrupt:
        interrupted = True
        result = inference.best_mapping()
    progress.done()
    checkpoint(inference.snap)   # the last complete step: --resume continues from here
    if result is None:
        print(f"pmpredict: stopped before a first mapping existed; resume with --resume {ckpt_path}",
              file=sys.stderr)
        return 130 if interrupted else 1
    masks, counts = result
    _, train_err = inference.final_objective(masks, counts)
    finished = inference.finished()
    provenance = {
        "description": f"inferred by pmpredict infer ({config.method}, seed {config.seed}) "
                       f"from {', '.join(inputs)}",
        "tool": f"pmpredict {__version__} infer",
        "command": "pmpredict " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "inputs": inputs, "config": saved, "forms": len(form_of), "classes": len(reps),
        "training_mape": round(train_err * 100, 4),
        "elapsed_s": round(inference.snap["elapsed"], 1), "complete": finished,
    }
    name = args.name or os.path.splitext(os.path.basename(args.output))[0]
    model = mapping_to_model(problem, masks, counts, form_of, name=name, isa=exps.isa,
                             r_max=r_max, provenance=provenance)
    if latencies is not None:
        model = latencies.apply(model)
    if front is not None:
        model = front.apply(model)
    model.save(args.output)
    state = "done" if finished else f"stopped early (resume with --resume {ckpt_path})"
    if not args.quiet:
        print(f"{args.output}: {len(model.uops)} forms ({len(reps)} classes), volume {model.volume()}, "
              f"training MAPE {train_err * 100:.2f}%, {inference.snap['elapsed']:.0f} s, {state}",
              file=sys.stderr)
    return 130 if interrupted else 0
