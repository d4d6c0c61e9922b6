"""Decisions shared by the exporters: validation, singleton throughput, latency defaults.

Front-end layer: turns a MachineModel into the plain facts the renderers need.
Nothing here knows about a target format's syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmpredict.isa import semantics
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.errors import InputError
from pmpredict.isa.forms import is_split_variant, parse_form
from pmpredict.model.machine import structure_problem, timing_problem

# Latency of a form the model has no measurement for. PMEvo infers port usage
# from throughput alone, so most models carry no latency; these defaults keep
# the exported files usable and every defaulted value is flagged in the output.
DEFAULT_LATENCY = 1.0
# added for a form that reads memory (an L1 hit on the cores we model: 4-5 cycles)
DEFAULT_LOAD_LATENCY = 4.0


class ExportError(InputError):
    """The model cannot be expressed in the target format (one line, exit status 2)."""

    def __init__(self, model, message: str):
        super().__init__(model_source(model), message)


def model_source(model) -> str:
    prov = model.provenance or {}
    return str(prov.get("file") or prov.get("path") or f"model {model.name!r}")


def instruction_forms(model):
    """The model without its split variants (pmpredict.isa.forms.split_variant: what a form
    runs when its load crosses a line, measured by the host model): no other tool has such a
    form, so the exports carry the instruction forms only."""
    if not any(is_split_variant(f) for f in model.uops):
        return model
    return model.with_uops({f: u for f, u in model.uops.items() if not is_split_variant(f)})


def check_exportable(model) -> None:
    """Reject what no target format can express, with the offending form named.

    llvm-tblgen accepts a negative latency, an empty write and a unit count < 1
    silently, and OSACA drops an instruction with throughput 0 from its sums:
    catch all of them here, before anything is written.
    """
    if not model.uops:
        raise ExportError(model, "the model has no instruction forms")
    for form, uops in model.uops.items():
        if not uops:
            raise ExportError(model, f"form {form!r} has no uops (an empty write list cannot be "
                                     "exported: give it at least one uop)")
    why = structure_problem(model) or timing_problem(model)      # the model's own checks, again:
    if why:                                                      # a model built around them
        raise ExportError(model, why)


def singleton_cycles(model) -> dict[str, float]:
    """Reciprocal throughput of each form alone, from the exact simulator (never 0)."""
    # deferred: throughput loads numba (~0.4 s): a model check_exportable refuses fails fast
    from pmpredict.predict.throughput import simulate
    forms = model.forms
    exps = ExperimentSet(forms, tuple(Experiment.of([f]) for f in forms), model.isa, "singletons")
    cycles, _ = simulate(model, exps)
    return {f: float(c) for f, c in zip(forms, cycles)}


@dataclass(frozen=True)
class Latency:
    value: float
    measured: bool           # False: DEFAULT_LATENCY (+ DEFAULT_LOAD_LATENCY), flagged in output


def latency_of(model, form: str) -> Latency:
    """The model's latency of a form, or the default (+ a load's latency if the form's
    semantics say it reads memory: loads, read-modify-write, compare with memory)."""
    if form in model.latency:
        return Latency(float(model.latency[form]), True)
    extra = DEFAULT_LOAD_LATENCY if semantics.get(model.isa).form(form).reads_memory else 0.0
    return Latency(DEFAULT_LATENCY + extra, False)


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote (views/export.py renders it). A format with more to say subclasses
    it (llvm.LlvmExportResult), so that the view never asks which format it is."""
    path: str
    format: str                        # the exporter's --format name
    forms: int                         # forms written (osaca) / bound to an opcode (llvm)
    skipped: tuple[str, ...]           # forms not exported (listed in a comment in the file)

    def written(self) -> str:
        """What the text line says was written, after `wrote PATH: `."""
        return f"{self.forms} instruction forms"

    def json_details(self) -> dict:
        """The format's own JSON keys, after output, format, forms and skipped."""
        return {}


def plainness(form: str, isa: str) -> tuple[int, int]:
    """(literal words such as shifts/extends, operands): smaller is the plainer spelling."""
    try:
        t = parse_form(form, isa)
    except ValueError:
        return (99, 99)
    return (sum(1 for o in t.operands if o.kind == "literal"), len(t.operands))


def representative(forms, cycles: dict[str, float], order: dict[str, int], isa: str) -> str:
    """The form that speaks for several forms a target format cannot tell apart.

    LLVM binds one write per opcode (`add x0, x1, x2` and `add x0, x1, x2, lsl 2` are both
    ADDXrs), OSACA uses the first entry with a given name and operand classes (its parser
    folds the shift into the register). The plainest form wins, because compilers emit it
    most (no shift / extend word, then fewest operands); among equally plain forms the
    slowest (largest singleton cycles), then the first in model order.
    """
    return min(forms, key=lambda f: (plainness(f, isa), -cycles[f], order[f]))


def tablegen_identifier(text: str) -> str:
    """A TableGen-safe identifier fragment (letters, digits, underscore)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return out or "_"
