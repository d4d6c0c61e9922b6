"""From measured experiments to the inference problem: congruence classes, then arrays.

One entry point for every caller (the CLI, benchmarks, tests), so they infer
on the same representatives and the result maps back the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmpredict.infer.congruence import congruence_classes
from pmpredict.infer.problem import Problem, build_problem


@dataclass(frozen=True)
class Prepared:
    problem: Problem            # over the class representatives
    form_of: dict[str, str]     # every measured form -> its representative
    representatives: list[str]  # sorted; the problem's form order


def measured_forms(experiments) -> list[str]:
    """Forms that occur in at least one experiment with a measured cycle count, sorted."""
    return sorted({f for e in experiments.experiments if e.cycles for f, _ in e.counts})


def prepare(experiments, n_ports: int, epsilon: float = 0.05, r_max=None) -> Prepared:
    """Congruence-filter the measured forms and build the problem on their representatives."""
    form_of = congruence_classes(experiments, measured_forms(experiments), epsilon)
    reps = sorted(set(form_of.values()))
    return Prepared(build_problem(experiments, reps, n_ports, form_of, r_max), form_of, reps)
