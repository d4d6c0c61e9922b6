"""Machine models: ports and three-level port mappings.

A mapping assigns each instruction form a list of (uop, count) pairs; a uop is
the set of ports that may execute it, stored as a bitmask over the model's
port list. A two-level mapping is the case of one uop with count 1. A uop with
count n on a single non-pipelined port (a divider) occupies that port n cycles.

Native JSON (documented in docs/FORMATS.md)::

    {"format": "pmpredict-model", "version": 1, "name": "skl", "isa": "x86",
     "ports": ["0", "1", ...], "r_max": null,
     "forms": {"ADD_((REG:RW:G:64)),_((IMM:32))":
                  {"uops": [{"ports": ["0", "1", "5", "6"], "count": 1}], "latency": 1}},
     "provenance": {...}}

Optional timing facts: per form "latency_from" ({"<operand index>": cycles}),
"latency_source", "move_elimination", "idiom_ports", "idiom_breaks"; top level "pipeline"
({key: number}, keys in PIPELINE_KEYS) and "pipeline_source" ({key: text}).

Reading files (native JSON, PMEvo Mapping3, OSACA YAML, built-in names) is
pmpredict.formats.model_files.load_model; this module is the data type and its checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form
from pmpredict.isa.osaca_forms import is_foreign, parse_foreign_form_name
from pmpredict.model.facts import PIPELINE_FLAGS, PIPELINE_KEYS
from pmpredict.model.validate import (count_problem, latency_problem, name_problem,
                                      port_list_problem, r_max_problem)

if TYPE_CHECKING:
    import numpy as np

FORMAT_NAME = "pmpredict-model"
FORMAT_VERSION = 1

# MachineModel.pipeline: machine-wide timing facts, each optional, each a number >= 0, each
# declared once in model/facts.py (PIPELINE_KEYS)

# the name of this machine's model (pmpredict.host.model), measured on demand
HOST_MODEL = "host"


def abstract_port_names(n: int) -> tuple[str, ...]:
    """Labels for the ports of an inferred model: A, B, ..., Z, AA, AB, ... They name no
    hardware port (an inferred port is abstract until aligned with a reference model,
    pmpredict.predict.align), and unlike "0".."8" they cannot be mistaken for a vendor's numbers."""
    names = []
    for i in range(n):
        label, k = "", i
        while True:
            label = chr(ord("A") + k % 26) + label
            k = k // 26 - 1
            if k < 0:
                break
        names.append(label)
    return tuple(names)


@dataclass(frozen=True)
class MachineModel:
    """An immutable port mapping plus the facts needed to use it.

    uops[form] is a tuple of (port mask, count) pairs with distinct masks.
    """
    name: str
    isa: str                                  # "x86" or "aarch64"
    ports: tuple[str, ...]
    uops: dict[str, tuple[tuple[int, int], ...]]
    r_max: float | None = None                # peak instructions per cycle (front end / retire)
    # latency of each form: from its register sources to every destination (for a load:
    # address -> value); see docs/FORMATS.md
    latency: dict[str, float] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    # per source operand (form-order index) where it differs from `latency`; for a memory
    # operand: from the address registers to the destination, the load included
    operand_latency: dict[str, dict[int, float]] = field(default_factory=dict)
    # where each form's latency numbers come from ("measured on <cpu> <date>", "osaca:skx.yml",
    # "llvm-19 -mcpu=skylake", ...)
    latency_source: dict[str, str] = field(default_factory=dict)
    # forms whose register-to-register instances are eliminated at rename on this machine
    # (latency 0, no port): True; measured not eliminated: False; absent: unknown
    move_elimination: dict[str, bool] = field(default_factory=dict)
    # forms whose dependency-breaking idiom instances (xor r, r) still take a port: True;
    # take none: False; absent: unknown (the semantics' default applies)
    idiom_ports: dict[str, bool] = field(default_factory=dict)
    # forms whose instances with equal sources a core may or may not recognise as an idiom
    # (InstructionSemantics.candidate_idiom: vandnpd x, y, y; cmp r, r) that this machine
    # does: True; measured not: False; absent: unknown (taken as not recognised)
    idiom_breaks: dict[str, bool] = field(default_factory=dict)
    # machine-wide timing facts, each optional (see PIPELINE_KEYS): issue width is r_max
    pipeline: dict = field(default_factory=dict)
    # where each pipeline fact comes from (key -> "osaca:skx.yml", "llvm-mca 19.1.7 ...")
    pipeline_source: dict[str, str] = field(default_factory=dict)
    # what engines derive from the model once and keep with it (the form index, the kinds of
    # the ports' uops: pmpredict.predict.predictor); not part of the model's value. A changed
    # model (replace, with_uops) starts empty.
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        problem = structure_problem(self)
        if problem is not None:
            raise ValueError(problem)
        problem = timing_problem(self)
        if problem is not None:
            raise ValueError(problem)

    # --- queries -------------------------------------------------------------
    @property
    def forms(self) -> tuple[str, ...]:
        return tuple(self.uops)

    def port_names(self, mask: int) -> list[str]:
        return [p for i, p in enumerate(self.ports) if mask >> i & 1]

    def volume(self) -> int:
        """Total uop count over all forms (the EA's size measure)."""
        return sum(c for uops in self.uops.values() for _, c in uops)

    def form_index(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.uops)}

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(masks int64[n_forms, max_uops], counts float64[n_forms, max_uops]); count 0 = no uop."""
        # deferred: numpy (~0.1 s): the engines need the arrays, a single prediction does not
        import numpy as np
        width = max((len(u) for u in self.uops.values()), default=0) or 1
        masks = np.zeros((len(self.uops), width), dtype=np.int64)
        counts = np.zeros((len(self.uops), width), dtype=np.float64)
        for i, uops in enumerate(self.uops.values()):
            for j, (mask, count) in enumerate(uops):
                masks[i, j] = mask
                counts[i, j] = count
        return masks, counts

    def with_uops(self, uops: dict, **changes) -> "MachineModel":
        """The model with other uops (and any other field changed); the per-form timing facts
        of forms that `uops` no longer has are dropped."""
        for name in PER_FORM_FIELDS:
            if name not in changes:
                changes[name] = {f: v for f, v in getattr(self, name).items() if f in uops}
        return replace(self, uops=uops, **changes)

    def with_port_names(self, names) -> "MachineModel":
        """The same model with its ports renamed, in order (uops, as masks, are unchanged)."""
        names = tuple(str(n) for n in names)
        if len(names) != len(self.ports):
            raise ValueError(f"{len(names)} names for {len(self.ports)} ports")
        return replace(self, ports=names)

    def latency_for(self, form: str, operand: int | None = None) -> float | None:
        """Latency from source operand `operand` (None: any register source) of `form` to its
        destinations; None when the model does not know it."""
        if operand is not None:
            per = self.operand_latency.get(form)
            if per and operand in per:
                return per[operand]
        return self.latency.get(form)

    # --- native JSON -----------------------------------------------------------
    def to_json(self) -> dict:
        forms = {}
        for form, uops in self.uops.items():
            entry = {"uops": [{"ports": self.port_names(m), "count": c} for m, c in uops]}
            if form in self.latency:
                entry["latency"] = self.latency[form]
            if self.operand_latency.get(form):
                entry["latency_from"] = {str(i): lat for i, lat in
                                         sorted(self.operand_latency[form].items())}
            for key in ("latency_source",) + FORM_FLAGS:
                if form in getattr(self, key):
                    entry[key] = getattr(self, key)[form]
            forms[form] = entry
        out = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name,
               "isa": self.isa, "ports": list(self.ports), "r_max": self.r_max,
               "provenance": self.provenance}
        if self.pipeline:
            out["pipeline"] = dict(self.pipeline)
        if self.pipeline_source:
            out["pipeline_source"] = dict(self.pipeline_source)
        out["forms"] = forms
        return out


# the fields keyed by form besides uops
# the per-form facts that are true or false (the model's dicts of the same names)
FORM_FLAGS = ("move_elimination", "idiom_ports", "idiom_breaks")
PER_FORM_FIELDS = ("latency", "operand_latency", "latency_source") + FORM_FLAGS


def pipeline_problem(key, value) -> str | None:
    """Why (key, value) is not a pipeline fact (see PIPELINE_KEYS), or None."""
    if key not in PIPELINE_KEYS:
        return f"unknown pipeline key {key!r} (known: {', '.join(PIPELINE_KEYS)})"
    why = latency_problem(value)
    if why is None and key in PIPELINE_FLAGS and value not in (0, 1):
        why = f"must be 0 or 1, not {value!r}"
    return None if why is None else f"pipeline {key!r} {why}"


def operand_count(form: str, isa: str) -> int | None:
    """Operands of a form (PMEvo spelling or an imported `osaca:` name); None if unparsable."""
    try:
        if is_foreign(form):
            return len(parse_foreign_form_name(form, isa)[1])
        return len(parse_form(form, isa).operands)
    except ValueError:
        return None


def operand_index_problem(form: str, isa: str, index) -> str | None:
    """Why `index` is not a source operand index of `form` (0-based, form order), or None."""
    if not isinstance(index, int) or isinstance(index, bool):
        return f"operand index {index!r} must be an integer"
    n = operand_count(form, isa)
    if n is None:
        return "its operands cannot be counted (malformed form string)"
    if not 0 <= index < n:
        return f"operand index {index} is out of range (the form has {n} operand(s))"
    return None


def structure_problem(model: "MachineModel") -> str | None:
    """The first thing wrong with the model's name, ports, R_max, forms or uops, or None."""
    why = name_problem(model.name)
    if why:
        return f"model name {why}"
    if model.isa not in semantics.ISAS:
        return f"isa must be {' or '.join(repr(i) for i in semantics.ISAS)}, not {model.isa!r}"
    why = port_list_problem(list(model.ports)) or next(
        (f"port name {p!r} must be a string" for p in model.ports if not isinstance(p, str)), None)
    if why:
        return f"ports: {why}"
    why = r_max_problem(model.r_max)
    if why:
        return f"r_max {why}"
    if not isinstance(model.provenance, dict):
        return f"provenance must be an object, not {model.provenance!r}"
    full = (1 << len(model.ports)) - 1
    for form, uops in model.uops.items():
        why = name_problem(form)
        if why:
            return f"form name {why}"
        for mask, count in uops:
            if mask <= 0 or mask & ~full:
                return f"form {form!r}: uop port mask {mask:#x} is empty or out of range"
            why = count_problem(count)
            if why:
                return f"form {form!r}: uop count {why}"
    return None


def timing_problem(model: "MachineModel") -> str | None:
    """The first thing wrong with the model's latencies, flags or pipeline facts, or None."""
    for name in PER_FORM_FIELDS:
        stray = next((f for f in getattr(model, name) if f not in model.uops), None)
        if stray is not None:
            return f"{name}: form {stray!r} has no uops in the model"
    for form, lat in model.latency.items():
        why = latency_problem(lat)
        if why:
            return f"form {form!r}: latency {why}"
    for form, per in model.operand_latency.items():
        for index, lat in per.items():
            why = operand_index_problem(form, model.isa, index) or latency_problem(lat)
            if why:
                return f"form {form!r}: latency from operand {index!r}: {why}"
    for form, text in model.latency_source.items():
        if not isinstance(text, str):
            return f"form {form!r}: latency_source must be a string, not {text!r}"
    for name in FORM_FLAGS:
        for form, flag in getattr(model, name).items():
            if not isinstance(flag, bool):
                return f"form {form!r}: {name} must be true or false, not {flag!r}"
    for key, value in model.pipeline.items():
        why = pipeline_problem(key, value)
        if why:
            return why
    for key, text in model.pipeline_source.items():
        if key not in model.pipeline or not isinstance(text, str):
            return f"pipeline_source {key!r} must name a pipeline fact the model has, with a string"
    return None


def normalize_uops(pairs) -> tuple[tuple[int, int], ...]:
    """Merge repeated masks, order by mask: the canonical uop list of a form."""
    merged: dict[int, int] = {}
    for mask, count in pairs:
        merged[mask] = merged.get(mask, 0) + count
    return tuple(sorted(merged.items()))
