"""`pmpredict anica`: where throughput predictors disagree, with each other and with this
machine (AnICA, Ritter's dissertation ch. 8), generalised into classes of blocks.

Flags become predictors (pmpredict.anica.predictors), a result cache and a runner (Dask or this
process), and a campaign run to its budget with its checkpoints (pmpredict.anica.checkpointed);
where the checkpoint goes, the progress line and the views are the only things done here.
"""

from __future__ import annotations

import os
import sys
import time

from pmpredict.commands.common import float_in, int_in, open_cluster, resume_command
from pmpredict.errors import InputError
from pmpredict.formats.files import check_output

DEFAULT_BUDGET_S = 600.0
CHECKPOINT_EVERY_S = 30.0        # a campaign killed outright loses at most this much


def register(sub):
    p = sub.add_parser(
        "anica", help="find classes of blocks on which throughput predictors disagree (AnICA)",
        description="Random basic blocks are given to every predictor; a block on which the "
                    "first predictor and another differ by the threshold or more is minimised "
                    "and generalised into an abstract block (a class of blocks, each still "
                    "interesting when sampled). Same seed, same answers: same discoveries. "
                    "Ctrl-C or SIGTERM stops with a checkpoint that --resume continues.")
    p.add_argument("--predictor", "-p", action="append", required=True, metavar="SPEC",
                   help="a predictor, two or more, the first the reference: pmpredict:MODEL "
                        "(built-in name, model file, host), llvm-mca[-VERSION]:CPU, osaca:ARCH, "
                        "measure (this host's hardware)")
    p.add_argument("--forms", metavar="MODEL|FILE",
                   help="the instruction forms blocks are made of: a model (its forms) or a "
                        "form list, one PMEvo form a line (default: the first pmpredict "
                        "predictor's model, else skl)")
    p.add_argument("--threshold", type=float_in(0.0, 1e6, low_open=True), default=0.5,
                   help="interesting: |a - b| / min(a, b) >= this between the first predictor "
                        "and another (default 0.5)")
    p.add_argument("--min-length", type=int_in(1, 64), default=1, metavar="N",
                   help="shortest random block (default 1)")
    p.add_argument("--max-length", type=int_in(1, 64), default=5, metavar="N",
                   help="longest random block (default 5)")
    p.add_argument("--samples", type=int_in(1, 100_000), default=100, metavar="N",
                   help="blocks sampled to accept a generalisation step (default 100)")
    p.add_argument("--accept", type=float_in(0.0, 1.0, low_open=True), default=0.97,
                   metavar="RATIO",
                   help="share of sampled blocks that must stay interesting (default 0.97)")
    p.add_argument("--batch", type=int_in(1, 100_000), default=64, metavar="N",
                   help="random blocks per round (default 64)")
    # concrete.BLOCK_MODES, spelt out: parsing the command line loads no campaign code
    p.add_argument("--blocks", choices=("standard", "memory"), default="standard",
                   help="memory: accesses that cross cache lines, one place at two widths, "
                        "bases set to constant addresses, 4 vector registers to chain domains "
                        "(default standard)")
    p.add_argument("--budget-s", type=float_in(0.0, 1e9, low_open=True), metavar="SEC",
                   help=f"stop after SEC seconds (default {DEFAULT_BUDGET_S:g} without "
                        "--budget-calls)")
    p.add_argument("--budget-calls", type=int_in(1), metavar="N",
                   help="stop after N blocks evaluated (each by every predictor)")
    p.add_argument("--seed", type=int_in(0), default=0, help="random seed (default 0)")
    p.add_argument("--timeout", type=float_in(0.0, 1e6, low_open=True), default=60.0,
                   metavar="SEC", help="per block and predictor call (default 60)")
    p.add_argument("--checkpoint", metavar="FILE",
                   help=f"campaign state, written every {CHECKPOINT_EVERY_S:g} s and when stopped "
                        "(default: in the cache directory, named by the campaign's settings)")
    p.add_argument("--resume", metavar="FILE", help="continue a campaign from its checkpoint")
    p.add_argument("--cache", metavar="FILE.sqlite",
                   help="the predictors' answers (default: anica.sqlite in pmpredict's cache "
                        "directory)")
    p.add_argument("--no-cache", action="store_true", help="ask every predictor every time")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run predictor calls on this Dask scheduler (tcp://host:port)")
    where.add_argument("--workers", type=int_in(0, 1024), metavar="N",
                       help="a local Dask cluster of N worker processes (default: one per CPU); "
                            "0: every call in this process")
    p.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    p.add_argument("--html", metavar="FILE.html", help="also write the report as one HTML page")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.set_defaults(func=run)


def _schemes(args, predictors):
    """The instruction schemes: the forms of --forms (a model or a form list), else of the
    first pmpredict predictor's model, else of skl."""
    # deferred: the form tables and the model loaders, when a campaign starts
    from pmpredict.anica.predictors import PmpredictPredictor
    from pmpredict.anica.schemes import schemes_for
    from pmpredict.commands.common import load_model
    spec = args.forms
    if spec is None:
        first = next((p for p in predictors if isinstance(p, PmpredictPredictor)), None)
        forms = list(first.model().uops) if first else list(load_model("skl").uops)
    elif spec.endswith(".txt") or (os.path.exists(spec) and not spec.endswith(".json")
                                   and not spec.endswith((".yml", ".yaml"))):
        # deferred: form lists are read by the measurement package
        from pmpredict.measure import load_form_list
        forms = load_form_list(spec)
    else:
        forms = list(load_model(spec).uops)
    schemes = schemes_for(forms, "x86")
    if not schemes:
        raise InputError(spec or "<forms>", "none of these forms can make a block")
    return schemes


def _measure_split_variants(predictors, schemes, quiet: bool) -> None:
    """Memory blocks put loads across lines: where a pmpredict predictor is this machine's
    model, the split variants of every loading form the blocks use (isa.forms.split_variant)
    are measured into it first, as `predict --model host` does for its kernels (known ones
    are not measured again)."""
    # deferred: the host model and the harness, when a memory campaign predicts with host
    from pmpredict.anica.predictors import PmpredictPredictor
    from pmpredict.commands.progress import ProgressDisplay
    from pmpredict.host.model import host_model
    from pmpredict.isa.forms import split_variant
    host = [p for p in predictors if isinstance(p, PmpredictPredictor) and p.model_spec == "host"]
    if not host:
        return
    variants = [v for v in (split_variant(s.form) for s in schemes if s.memory == "load") if v]
    if not variants:
        return
    display = None if quiet else ProgressDisplay()
    try:
        host_model(variants=lambda model: [variants], progress=display,
                   notify=(lambda text: display.note(f"pmpredict: {text}")) if display else None)
    finally:
        if display:
            display.close()
    for p in host:                 # read before (the schemes' forms): read again with them
        p.reload()


def _settings_digest(args) -> str:
    # deferred: hashing only to name the default checkpoint
    import hashlib
    settings = (args.predictor, args.forms, args.threshold, args.min_length, args.max_length,
                args.samples, args.accept, args.batch, args.seed)
    if args.blocks != "standard":              # standard campaigns keep their older names
        settings += (args.blocks,)
    key = repr(settings)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def run(args):
    # deferred: the campaign (numpy), the predictors and the views, when a campaign runs
    from pmpredict.anica.campaign import CampaignConfig
    from pmpredict.anica.checkpointed import run_checkpointed
    from pmpredict.anica.executor import DaskRunner, InProcess
    from pmpredict.anica.outcome import load_checkpoint
    from pmpredict.anica.predictors import parse_spec
    from pmpredict.anica.store import AnswerStore
    from pmpredict.commands.progress import duration
    from pmpredict.formats.jsonio import dumps
    from pmpredict.userdirs import cache_dir
    from pmpredict.views import anica as view

    if len(args.predictor) < 2:
        raise InputError("<command line>", "give two or more --predictor (the first is the "
                                           "reference)")
    if args.min_length > args.max_length:
        raise InputError("<command line>", "--min-length is above --max-length")
    if args.html:
        check_output(args.html, "HTML report")
    budget_s = args.budget_s or (None if args.budget_calls else DEFAULT_BUDGET_S)
    checkpoint = args.checkpoint or args.resume
    if checkpoint is None:                     # the default, in a folder of the cache
        checkpoint = os.path.join(cache_dir(), "anica", f"campaign-{_settings_digest(args)}.json")
        try:
            os.makedirs(os.path.dirname(checkpoint), exist_ok=True)
        except OSError as exc:
            raise InputError(checkpoint, f"cannot write the checkpoint: {exc.strerror}") from None
    check_output(checkpoint, "checkpoint")
    saved = load_checkpoint(args.resume) if args.resume else None

    predictors = [parse_spec(s, args.timeout) for s in args.predictor]
    schemes = _schemes(args, predictors)
    if args.blocks == "memory":
        _measure_split_variants(predictors, schemes, args.quiet)
    config = CampaignConfig(threshold=args.threshold, min_length=args.min_length,
                            max_length=args.max_length, samples=args.samples,
                            accept_ratio=args.accept, batch=args.batch, seed=args.seed,
                            blocks=args.blocks)
    if saved is not None:
        _check_resumable(args.resume, saved, config)
    store = None if args.no_cache else AnswerStore(
        args.cache or os.path.join(cache_dir(), "anica.sqlite"))
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    runner = DaskRunner(cluster=open_cluster(args.scheduler, workers)) \
        if args.scheduler or workers > 0 else InProcess()
    outcome, how = run_checkpointed(
        predictors, store, runner, schemes, config, saved=saved, checkpoint=checkpoint,
        budget_s=budget_s, budget_calls=args.budget_calls,
        checkpoint_every_s=CHECKPOINT_EVERY_S,
        progress_for=None if args.quiet else
        (lambda spent: _Progress(budget_s, args.budget_calls, spent)))
    if args.html:
        # deferred: the HTML page's writer
        from pmpredict.formats.files import write_atomic
        write_atomic(args.html, view.html(outcome), "HTML report")
    if args.json:
        sys.stdout.write(dumps(view.json(outcome)) + "\n")
    else:
        sys.stdout.write(view.text(outcome))
    if how == "interrupted":
        argv = getattr(args, "argv", None) or sys.argv[1:]
        print(f"pmpredict: stopped after {duration(outcome.elapsed_s)}; to continue: "
              f"{resume_command(argv, checkpoint)}", file=sys.stderr)
        return 130
    return 0


def _check_resumable(path: str, saved: dict, config) -> None:
    """InputError unless the checkpoint is of a campaign with these settings (one from before
    block modes is a standard one) that this version can resume."""
    # deferred: the campaign's configuration, when resuming
    from pmpredict.anica.campaign import CampaignConfig, state_problem
    try:
        theirs = CampaignConfig.from_json(saved["campaign"]["config"])
    except (KeyError, TypeError, ValueError):
        raise InputError(path, "the checkpoint's campaign settings cannot be read") from None
    if theirs.blocks != config.blocks:
        raise InputError(path, f"this checkpoint is of a campaign with --blocks {theirs.blocks}, "
                               f"not {config.blocks}: give the same flags as its first run")
    problem = state_problem(saved["campaign"])
    if problem:
        raise InputError(path, problem)
    if theirs != config:
        raise InputError(path, "this checkpoint is of a campaign with other settings: "
                               "give the same flags as its first run")


class _Progress:
    """The campaign's progress line: phase, calls, discoveries and the time left of the
    budget (the budget is the campaign's total, so the time left is its ETA)."""

    def __init__(self, budget_s, budget_calls, spent: float, stream=None, interval: float = 10.0):
        self.budget_s, self.budget_calls = budget_s, budget_calls
        self.spent = spent
        self.start = time.monotonic()
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self.last = 0.0
        self.open = False

    def __call__(self, phase: str, calls: int, counters: dict) -> None:
        # deferred: the duration format, shared with the other progress displays
        from pmpredict.commands.progress import duration
        now = time.monotonic()
        if not self.tty and now - self.last < self.interval:
            return
        self.last = now
        elapsed = self.spent + now - self.start
        left = []
        if self.budget_s is not None:
            left.append(max(0.0, self.budget_s - elapsed))
        if self.budget_calls and calls:
            left.append(max(0, self.budget_calls - calls) * elapsed / calls)
        eta = f", ETA {duration(min(left))}" if left else ""
        line = (f"anica {phase}: {calls} blocks evaluated, {counters.get('interesting', 0)} "
                f"interesting, {counters.get('discoveries', 0)} discoveries, "
                f"{duration(elapsed)} elapsed{eta}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            self.open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.open = False
