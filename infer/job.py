"""One inference job as `pmpredict infer` runs it: settings, resume, the run, the model.

The CLI turns its flags into a dict of the settings the user gave (None: not given) and
calls `settings_for`, then `run_job`; everything in between lives here:

* settings: the InferConfig plus the port count, the congruence tolerance and R_max. A new
  run fills what was not given with the defaults (ports: what the experiment files declare,
  or `default_ports`); a resumed run takes the checkpoint's, and a setting given that
  differs from the checkpoint's is refused (the run would silently not be the one asked for);
* resume: the checkpoint must belong to the same experiments (their digest) and forms;
* the run: a checkpoint after every step and a final one when the run ends, is stopped by
  its time limit, or is interrupted (Ctrl-C, SIGTERM: KeyboardInterrupt);
* the result: the best mapping as a MachineModel with its provenance.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields

from pmpredict import __version__
from pmpredict.errors import InputError

from pmpredict.infer.checkpoint import load_checkpoint, save_checkpoint
from pmpredict.infer.pmevo import Inference, InferConfig, config_dict
from pmpredict.infer.prepare import measured_forms, prepare
from pmpredict.infer.result import mapping_to_model

MAX_PORTS = 16                     # the engines' masks and subset enumeration
DEFAULT_EPSILON = 0.05
# command-line spelling of the settings whose name differs from the InferConfig field
FLAGS = {"final_volume_weight": "--volume-weight"}


def flag(key: str) -> str:
    return FLAGS.get(key, "--" + key.replace("_", "-"))


@dataclass(frozen=True)
class InferSettings:
    """Everything that decides an inference's result besides its experiments."""
    config: InferConfig
    ports: int
    epsilon: float = DEFAULT_EPSILON
    r_max: float | None = None

    def to_json(self) -> dict:
        return {"infer": config_dict(self.config), "ports": self.ports, "epsilon": self.epsilon,
                "r_max": self.r_max}

    @classmethod
    def from_json(cls, data: dict) -> "InferSettings":
        return cls(InferConfig(**data["infer"]), int(data["ports"]), float(data["epsilon"]),
                   data["r_max"])

    def values(self) -> dict:
        """Setting name -> value, the names the CLI's `requested` dict uses."""
        out = {f.name: getattr(self.config, f.name) for f in fields(InferConfig)}
        out.update(ports=self.ports, epsilon=self.epsilon, r_max=self.r_max)
        return out


def experiments_digest(experiments) -> str:
    """A digest of what the inference reads from an experiment set (forms, counts, cycles)."""
    h = hashlib.sha256()
    for e in experiments.experiments:
        h.update(json.dumps([e.counts, e.cycles]).encode())
    return h.hexdigest()[:32]


def settings_for(requested: dict, experiments, *, resumed: dict | None = None,
                 resume_path: str | None = None, default_ports: int | None = None,
                 default_r_max: float | None = None,
                 where: str = "<command line>") -> InferSettings:
    """The settings of a run: `requested` (setting -> value, None = not given) over the
    defaults, or the checkpoint's when resuming (a different requested value is an error)."""
    given = {k: v for k, v in requested.items() if v is not None}
    if resumed is not None:
        saved = InferSettings.from_json(resumed["config"])
        values = saved.values()
        for key, value in given.items():
            if key in values and values[key] != value:
                raise InputError(resume_path, f"{flag(key)} {value} differs from this checkpoint's "
                                              f"{values[key]}: resume with the options of the "
                                              "interrupted run, or give none")
        return saved
    config_keys = {f.name for f in fields(InferConfig)}
    try:
        config = InferConfig(**{k: v for k, v in given.items() if k in config_keys})
    except ValueError as exc:
        raise InputError(where, str(exc)) from None
    ports = given.get("ports") or experiments.ports or default_ports
    if not ports:
        raise InputError(where, "the number of ports is unknown (no PMEvo 'arch.ports' in the "
                                "experiment files): pass --ports N")
    if not 1 <= ports <= MAX_PORTS:
        raise InputError(where, f"--ports must be between 1 and {MAX_PORTS}, not {ports}")
    return InferSettings(config, int(ports), given.get("epsilon", DEFAULT_EPSILON),
                         given.get("r_max", default_r_max))


def load_resume(path: str, experiments) -> dict:
    """The checkpoint at `path`, refused if it belongs to other experiments."""
    resumed = load_checkpoint(path)
    try:
        InferSettings.from_json(resumed["config"])
    except (KeyError, TypeError, ValueError):
        raise InputError(path, "a checkpoint without the settings of an inference run",
                         1, 1) from None
    digest = resumed.get("experiments")
    if digest is not None and digest != experiments_digest(experiments):
        raise InputError(path, "this checkpoint belongs to a run on other experiments (their "
                               "forms or cycles differ)")
    return resumed


@dataclass
class InferOutcome:
    model: object | None            # MachineModel; None: stopped before a first mapping existed
    training_error: float | None    # relative (0.05 = 5%)
    classes: int                    # congruence classes inferred
    elapsed: float                  # seconds, over every session of the run
    finished: bool                  # False: stopped by the time limit or interrupted
    interrupted: BaseException | None   # the KeyboardInterrupt (Ctrl-C, SIGTERM) that stopped it


def run_job(experiments, settings: InferSettings, *, inputs: list[str], checkpoint_path: str,
            resumed: dict | None = None, should_stop=None, progress=None,
            name: str = "inferred", command: str = "", measured=(),
            workers=None) -> InferOutcome:
    """Run (or continue) an inference, checkpointing to `checkpoint_path` as it goes, until
    it ends, should_stop() says so (between steps), or KeyboardInterrupt (Ctrl-C, SIGTERM).
    measured: what was measured besides the experiments (latency table, front end), each
    with .apply(model), applied to the model in order. workers: the restarts run there, at
    once (Inference.run), with the same result."""
    if not measured_forms(experiments):
        raise InputError(inputs[0] if inputs else None,
                         "no measured experiments (every 'cycles' is null)")
    prepared = prepare(experiments, settings.ports, settings.epsilon, settings.r_max)
    problem, form_of, reps = prepared.problem, prepared.form_of, prepared.representatives
    if resumed is not None and resumed["forms"] != list(reps):
        raise InputError(checkpoint_path, "this checkpoint belongs to a run on different forms")
    saved = settings.to_json()
    digest = experiments_digest(experiments)
    inference = Inference(problem, settings.config, resumed["snapshot"] if resumed else None)
    def checkpoint(snap):
        save_checkpoint(checkpoint_path, snap, saved, reps, inputs, experiments=digest)

    interrupted = None
    try:
        result = inference.run(progress=progress, on_snapshot=checkpoint, should_stop=should_stop,
                               workers=workers)
    except KeyboardInterrupt as exc:
        interrupted = exc
        result = inference.best_mapping()
    checkpoint(inference.snap)           # the last complete step: --resume continues from here
    elapsed = inference.snap.elapsed
    if result is None:
        return InferOutcome(None, None, len(reps), elapsed, False, interrupted)
    masks, counts = result
    _, train_err = inference.final_objective(masks, counts)
    finished = inference.finished()
    provenance = {
        "description": f"inferred by pmpredict infer ({settings.config.method}, seed "
                       f"{settings.config.seed}) from {', '.join(inputs)}",
        "tool": f"pmpredict {__version__} infer", "command": command,
        "inputs": list(inputs), "config": saved, "forms": len(form_of), "classes": len(reps),
        "training_mape": round(train_err * 100, 4), "elapsed_s": round(elapsed, 1),
        "complete": finished,
    }
    model = mapping_to_model(problem, masks, counts, form_of, name=name, isa=experiments.isa,
                             r_max=settings.r_max, provenance=provenance)
    for table in measured:
        model = table.apply(model)
    return InferOutcome(model, train_err, len(reps), elapsed, finished, interrupted)
