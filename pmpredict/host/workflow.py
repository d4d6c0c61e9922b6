"""One training workflow for this machine: measure the training set, then the front end, then infer.

`pmpredict infer --measure` and the host model's bootstrap (pmpredict/host/model.py) both run
this sequence; what differs between them is a parameter, not a copy of it:

1. the training set of the forms (host/training.py): singletons, the latencies if asked, the
   experiments of the design; every set goes through the measurement cache, so a run stopped
   by its time limit resumes where it stopped;
2. the front end (measure/frontend.py), its width floored by the fastest singleton: a busy
   sibling thread takes slots from the probes, but no form ran faster than the width allows;
3. the inference, on `ports` ports with the measured issue width capping the fitness; the
   model gets the measured latencies, then the front end.

The inference is the caller's (`infer`): the command's is a resumable job on its flags
(infer/job.py: checkpoints, --resume, progress), the host model's one run with fixed settings
(`infer_once`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from pmpredict.model.experiments import ExperimentSet

from pmpredict.host.training import TrainingSet, measure_training_set
from pmpredict.infer.job import InferOutcome
from pmpredict.infer.pmevo import Inference, InferConfig
from pmpredict.infer.prepare import prepare
from pmpredict.infer.result import mapping_to_model
from pmpredict.measure.frontend import MeasuredFrontEnd, measure_frontend, width_floor

# x86 hosts: ALU/vector ports plus load, store and divider units fit in 10 (Zen 4, Golden Cove):
# the port count this machine's models are inferred with unless told otherwise
HOST_PORTS = 10


@dataclass(frozen=True)
class TrainingOptions:
    """How to measure, and the port count to infer with."""
    cache_dir: str | None                   # the measurement cache (None: none)
    design: str = "pairs"                   # "pairs" or "blockers" (infer/design.py)
    latencies: bool = True                  # measure the forms' latencies too
    ports: int = HOST_PORTS
    progress: Callable | None = None        # progress(Progress), while measuring
    on_set: Callable | None = None          # on_set(name, result), as each phase is measured
    should_stop: Callable | None = None     # asked between kernels: MeasurementStopped if true


class NothingRunsHere(Exception):
    """No form of the training set runs on this CPU: there is nothing to infer from."""

    def __init__(self, left_out: dict):
        super().__init__("no form runs on this machine")
        self.left_out = left_out            # form -> why it cannot be measured


@dataclass
class Measured:
    """The training set and the front end, measured: what the inference reads."""
    training: TrainingSet
    front: MeasuredFrontEnd
    experiments: ExperimentSet              # the training set's phases in one set
    ports: int

    @property
    def r_max(self) -> float | None:
        """The measured issue width: it caps the fitness as it caps predictions."""
        return self.front.facts.r_max

    @property
    def tables(self) -> list:
        """What the model gets besides its uops, in this order (each has .apply(model))."""
        return [t for t in (self.training.latencies, self.front) if t is not None]

    @property
    def experiment_count(self) -> int:
        """Experiments with a measurement."""
        return sum(1 for e in self.experiments.experiments if e.cycles is not None)


@dataclass
class Trained:
    measured: Measured
    outcome: InferOutcome                   # .model: None if stopped before a first mapping

    @property
    def model(self):
        return self.outcome.model


def train_here(forms, options: TrainingOptions,
               infer: Callable[[Measured], InferOutcome]) -> Trained:
    """Measure the training set of `forms` and the front end on this machine, then
    infer(measured). MeasurementStopped if options.should_stop ends the measuring,
    NothingRunsHere if no form runs here, HostError if the harness cannot run."""
    measured = measure_here(forms, options)
    return Trained(measured, infer(measured))


def measure_here(forms, options: TrainingOptions) -> Measured:
    """The training set, then the front end (skipped when no form runs here)."""
    training = measure_training_set(forms, cache_dir=options.cache_dir,
                                    progress=options.progress, on_set=options.on_set,
                                    should_stop=options.should_stop, design=options.design,
                                    latencies=options.latencies)
    if not training.usable:
        raise NothingRunsHere(training.left_out)
    # the fastest singleton is a width the front end must reach
    front = measure_frontend(cache_dir=options.cache_dir, progress=options.progress,
                             floor=width_floor(training.singletons))
    return Measured(training, front, training.combined(), options.ports)


def infer_once(measured: Measured, *, seed: int, volume_weight: float, name: str,
               provenance: dict | None = None, display=None) -> InferOutcome:
    """One inference with fixed settings and no checkpoint (nothing to resume: the
    measurements are cached). Its training error is not computed (None). display: a progress
    display with plan_inference(steps) and inference(info) (commands.progress), or None."""
    started = time.monotonic()
    experiments = measured.experiments
    prepared = prepare(experiments, measured.ports, r_max=measured.r_max)
    config = InferConfig(seed=seed, final_volume_weight=volume_weight)
    steps = getattr(display, "plan_inference", None)
    if steps is not None:
        steps(*config.steps())
    masks, counts = Inference(prepared.problem, config).run(
        progress=getattr(display, "inference", None))
    model = mapping_to_model(prepared.problem, masks, counts, prepared.form_of, name=name,
                             isa=experiments.isa, r_max=measured.r_max, provenance=provenance)
    for table in measured.tables:
        model = table.apply(model)
    return InferOutcome(model, None, len(prepared.representatives),
                        time.monotonic() - started, True, None)
