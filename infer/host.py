"""The host half of the PMEvo pipeline: the training experiments for a form list, measured here.

Singletons first (their throughputs size the weighted pairs and tell which
forms this CPU runs at all), then all pairs and the weighted pairs of the
usable forms. Every set goes through the measurement cache, so an
interrupted run resumes where it stopped and `pmpredict measure
--training-set` and `pmpredict infer --measure` share their measurements.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pmpredict import semantics
from pmpredict.data.experiments import ExperimentSet
from pmpredict.errors import InputError, find_line
from pmpredict.files import read_text

from .experiments import (pair_experiments, singleton_experiments, singleton_throughputs,
                          weighted_pair_experiments)


# x86 hosts: ALU/vector ports plus load, store and divider units fit in 10 (Zen 4, Golden Cove):
# the port count `pmpredict infer --measure` infers with unless told otherwise
HOST_PORTS = 10


@dataclass
class TrainingSet:
    singletons: ExperimentSet
    pairs: ExperimentSet
    weighted: ExperimentSet
    left_out: dict            # form -> why it was dropped (its singleton failed: SIGILL, crash...)

    def parts(self) -> dict[str, ExperimentSet]:
        return {"singletons": self.singletons, "pairs": self.pairs, "weighted": self.weighted}

    def combined(self) -> ExperimentSet:
        return self.singletons.concat(self.pairs).concat(self.weighted)


def measure_training_set(forms, *, cache_dir, options=None, progress=None, out_dir=None,
                         report=None, should_stop=None) -> TrainingSet:
    """Measure singletons, pairs and weighted pairs of `forms` on this host.

    out_dir: if given, each set is also written there as <name>.json as soon as it is done.
    report(path, experiment_set): called after each set is measured (for the CLI's summary).
    progress(Progress): after every experiment; its `plan` lists the three phases with their
    sizes (pairs and weighted pairs estimated until the singletons are measured).
    should_stop(): asked between kernels; MeasurementStopped (with the phase) if it says yes.
    """
    from dataclasses import replace

    from .measure import MeasureOptions, measure_experiment_set
    from .measure.instantiate import HARNESS_ISA

    options = options or MeasureOptions()
    forms = list(dict.fromkeys(forms))
    n_pairs = len(forms) * (len(forms) - 1) // 2
    plan = {"singletons": len(forms), "pairs": n_pairs, "weighted": n_pairs}

    def measure(name, exps, usable):
        plan[name] = len(exps)
        sub = ExperimentSet(tuple(usable), tuple(exps), HARNESS_ISA,
                            f"pmpredict host training set ({name})")
        on_progress = (lambda p: progress(replace(p, plan=tuple(plan.items())))) if progress else None
        out = measure_experiment_set(sub, cache_dir=cache_dir, progress=on_progress, options=options,
                                     should_stop=should_stop, phase=name)
        path = None
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, f"{name}.json")
            out.save(path)
        if report:
            report(path or name, out)
        return out

    single = measure("singletons", singleton_experiments(forms), forms)
    throughput = singleton_throughputs(single)
    usable = [f for f in forms if throughput.get(f)]       # forms this CPU runs (no SIGILL)
    left_out = {}
    for f in forms:
        if f not in throughput:
            err = next((e.other.get("error") for e in single.experiments if e.forms() == [f]), "")
            left_out[f] = err or "no measurement"
    pairs = pair_experiments(usable)
    weighted = weighted_pair_experiments(usable, throughput)
    plan.update(pairs=len(pairs), weighted=len(weighted))
    pairs = measure("pairs", pairs, usable)
    weighted = measure("weighted", weighted, usable)
    return TrainingSet(single, pairs, weighted, left_out)


def read_form_list(path: str) -> list[str]:
    """The forms of a form-list file (UTF-8, one form string a line), each one a form the
    semantics know (a line of junk is an error, not a form to measure)."""
    from .measure.host_forms import parse_form_list
    text = read_text(path)
    forms = parse_form_list(text, path)
    if not forms:
        raise InputError(path, "no forms in the list", 1, 1)
    for form in forms:
        if not semantics.get(semantics.isa_of_form(form)).form(form).known:
            raise InputError(path, f"{form!r} is not an instruction form pmpredict knows",
                             find_line(text, form))
    return forms
