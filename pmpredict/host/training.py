"""The host half of the PMEvo pipeline: the training experiments for a form list, measured here.

Singletons first (their throughputs size the weighted pairs and tell which forms this CPU
runs at all), then, if asked, the latencies of the usable forms (pmpredict/measure/latency.py),
then the experiments of the design (infer/design.py): all pairs and the weighted pairs
("pairs", PMEvo), or a pilot, every form beside a few blockers and random mixes
("blockers"). Every set goes through the measurement cache, so an interrupted run resumes
where it stopped and `pmpredict measure --training-set` and `pmpredict infer --measure`
share their measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pmpredict.model.experiments import ExperimentSet

from pmpredict.infer import design as designs
from pmpredict.infer.singletons_and_pairs import (singleton_experiments, singleton_failures,
                                                  singleton_throughputs)
from pmpredict.measure import MeasureOptions, measure_experiment_set
from pmpredict.measure.instantiate import HARNESS_ISA
from pmpredict.measure.latency import measure_latencies


@dataclass
class TrainingSet:
    sets: dict[str, ExperimentSet]           # phase -> measured set, in measuring order
    left_out: dict                           # form -> why it was dropped (its singleton failed)
    latencies: object = None                 # measure.latency.LatencyTable, if measured
    design: str = "pairs"
    blockers: list = field(default_factory=list)
    usable: list = field(default_factory=list)     # the forms this CPU runs, in the given order

    @property
    def singletons(self) -> ExperimentSet:
        return self.sets["singletons"]

    def parts(self) -> dict[str, ExperimentSet]:
        return dict(self.sets)

    def combined(self) -> ExperimentSet:
        sets = list(self.sets.values())
        out = sets[0]
        for s in sets[1:]:
            out = out.concat(s)
        return out


def measure_training_set(forms, *, cache_dir, options=None, progress=None, on_set=None,
                         should_stop=None, design: str = "pairs",
                         latencies: bool = False) -> TrainingSet:
    """Measure the training experiments of `forms` on this host.

    on_set(name, result): called as soon as each phase is done, with its ExperimentSet (or,
    for "latencies", the LatencyTable): the front end saves it and reports (no I/O here).
    progress(Progress): after every experiment; its `plan` lists the phases with their
    sizes (estimates until the singletons are measured).
    should_stop(): asked between kernels; MeasurementStopped (with the phase) if it says yes.
    design: "pairs" or "blockers" (infer/design.py).
    """
    if design not in designs.DESIGNS:
        raise ValueError(f"unknown design {design!r} (known: {', '.join(designs.DESIGNS)})")
    options = options or MeasureOptions()
    forms = list(dict.fromkeys(forms))
    plan = {"singletons": len(forms)}
    if latencies:
        plan["latencies"] = 2 * len(forms)
    plan.update(_design_plan(design, len(forms)))

    def with_plan(p):
        return replace(p, plan=tuple(plan.items()))
    on_progress = (lambda p: progress(with_plan(p))) if progress else None

    def measure(name, exps, usable):
        plan[name] = len(exps)
        sub = ExperimentSet(tuple(usable), tuple(exps), HARNESS_ISA,
                            f"pmpredict host training set ({name})")
        out = measure_experiment_set(sub, cache_dir=cache_dir, progress=on_progress,
                                     options=options, should_stop=should_stop, phase=name)
        if on_set:
            on_set(name, out)
        return out

    sets = {"singletons": measure("singletons", singleton_experiments(forms), forms)}
    throughput = singleton_throughputs(sets["singletons"])
    usable = [f for f in forms if throughput.get(f)]       # forms this CPU runs (no SIGILL)
    left_out = singleton_failures(sets["singletons"], forms)
    if not usable:                       # nothing this CPU runs: nothing more to measure
        return TrainingSet(sets, left_out, None, design)
    plan.update(_design_plan(design, len(usable)))
    table = None
    if latencies:
        table = measure_latencies(usable, cache_dir=cache_dir, progress=on_progress,
                                  should_stop=should_stop, phase="latencies")
        if on_set:
            on_set("latencies", table)
    more, blockers = designs.design_sets(design, usable, throughput, measure)
    sets.update(more)
    return TrainingSet(sets, left_out, table, design, blockers, usable)


def _design_plan(design: str, n: int) -> dict:
    """Estimated experiments per phase of a design, for the progress line's ETA."""
    if design == "pairs":
        return {"pairs": n * (n - 1) // 2, "weighted": n * (n - 1) // 2}
    return designs.design_size(n)
