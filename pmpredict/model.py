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
"latency_source", "move_elimination", "idiom_ports"; top level "pipeline"
({key: number}, keys in PIPELINE_KEYS) and "pipeline_source" ({key: text}).

The PMEvo artifact's ``Mapping3`` files load too (each inner port list is one
uop occurrence; repeats become counts).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace

from . import semantics
from .errors import InputError
from .jsonio import JsonDocument, read_json, write_json

FORMAT_NAME = "pmpredict-model"
FORMAT_VERSION = 1

# MachineModel.pipeline: machine-wide timing facts (each optional, each a number >= 0)
PIPELINE_KEYS = {
    "window": "reorder-buffer entries (instructions in flight)",
    "load_latency": "L1 load-to-use latency, cycles (address ready -> value ready)",
    "store_forward_latency": "store -> load of the same address, cycles (data ready -> value ready)",
    "taken_branch": "front-end cycles a taken loop branch costs at least per iteration",
    "macro_fusion": "1 if cmp/test/add/sub/and/inc/dec + jcc fuse into one uop, else 0",
    "address_update_latency": "cycles from a base register to its write-back update (AArch64 "
                              "pre/post-index, push/pop, string ops)",
    "load_op_slots": "front-end slots of a load-op (add r, [base + disp]): 1 micro-fused, "
                     "2 unlaminated",
    "indexed_load_op_slots": "front-end slots of a load-op with an index register "
                             "(add r, [base + index + disp])",
}
# pipeline keys whose value is a yes/no fact: 0 or 1
PIPELINE_FLAGS = {"macro_fusion"}


def abstract_port_names(n: int) -> tuple[str, ...]:
    """Labels for the ports of an inferred model: A, B, ..., Z, AA, AB, ... They name no
    hardware port (an inferred port is abstract until aligned with a reference model,
    pmpredict.align), and unlike "0".."8" they cannot be mistaken for a vendor's numbers."""
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
    # machine-wide timing facts, each optional (see PIPELINE_KEYS): issue width is r_max
    pipeline: dict = field(default_factory=dict)
    # where each pipeline fact comes from (key -> "osaca:skx.yml", "llvm-mca 19.1.7 ...")
    pipeline_source: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if len(set(self.ports)) != len(self.ports):
            raise ValueError("duplicate port names")
        if len(self.ports) > 62:
            raise ValueError("at most 62 ports are supported")
        if self.r_max is not None and not self.r_max > 0:
            raise ValueError("r_max must be positive")
        full = (1 << len(self.ports)) - 1
        for form, uops in self.uops.items():
            for mask, count in uops:
                if mask <= 0 or mask & ~full:
                    raise ValueError(f"form {form!r}: uop port mask {mask:#x} is empty or out of range")
                if count < 1:
                    raise ValueError(f"form {form!r}: uop count {count} must be >= 1")
        problem = timing_problem(self)
        if problem is not None:
            raise ValueError(problem)

    # --- queries -------------------------------------------------------------
    @property
    def forms(self) -> tuple[str, ...]:
        return tuple(self.uops)

    def port_names(self, mask: int) -> list[str]:
        return [p for i, p in enumerate(self.ports) if mask >> i & 1]

    def mask_of(self, names) -> int:
        index = {p: i for i, p in enumerate(self.ports)}
        mask = 0
        for n in names:
            mask |= 1 << index[n]
        return mask

    def volume(self) -> int:
        """Total uop count over all forms (the EA's size measure)."""
        return sum(c for uops in self.uops.values() for _, c in uops)

    def form_index(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.uops)}

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(masks int64[n_forms, max_uops], counts float64[n_forms, max_uops]); count 0 = no uop."""
        import numpy as np          # the engines need it; a single prediction does not
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
            for key in ("latency_source", "move_elimination", "idiom_ports"):
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

    def save(self, path) -> None:
        write_json(path, self.to_json())


# the fields keyed by form besides uops
PER_FORM_FIELDS = ("latency", "operand_latency", "latency_source", "move_elimination",
                   "idiom_ports")


def latency_problem(value) -> str | None:
    """Why `value` is not a latency (a finite number >= 0), or None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"must be a number, not {value!r}"
    if not math.isfinite(value) or value < 0:
        return f"must be a finite number >= 0, not {value!r}"
    return None


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
    from .data.osaca import FOREIGN_PREFIX, parse_foreign_form_name
    from .forms import parse_form
    try:
        if form.startswith(FOREIGN_PREFIX):
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
    for name in ("move_elimination", "idiom_ports"):
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


# --- loading -------------------------------------------------------------------

def _port_mask(doc: JsonDocument, form: str, names, index: dict[str, int]) -> int:
    if not isinstance(names, list) or not names:
        raise doc.error(f"form {form!r}: a uop needs a non-empty list of ports", form)
    mask = 0
    for p in names:
        if str(p) not in index:
            raise doc.error(f"form {form!r}: unknown port {p!r} (ports are {', '.join(index)})", form)
        mask |= 1 << index[str(p)]
    return mask


def _ports(doc: JsonDocument, ports) -> tuple[str, ...]:
    if not isinstance(ports, list) or not ports or not all(isinstance(p, (str, int)) for p in ports):
        raise doc.error("'ports' must be a non-empty list of port names", "ports")
    names = tuple(str(p) for p in ports)
    if len(set(names)) != len(names):
        raise doc.error("'ports' lists a port twice", "ports")
    if len(names) > 62:
        raise doc.error("at most 62 ports are supported", "ports")
    return names


def _from_mapping3(doc: JsonDocument, name: str) -> MachineModel:
    data = doc.data
    arch = data.get("arch")
    if not isinstance(arch, dict):
        raise doc.error("Mapping3 without an 'arch' object", "kind")
    ports = _ports(doc, arch.get("ports"))
    index = {p: i for i, p in enumerate(ports)}
    insns = arch.get("insns")
    if not isinstance(insns, list):
        raise doc.error("'arch' needs an 'insns' list", "arch")
    known = set(insns)
    assignment = data.get("assignment")
    if not isinstance(assignment, dict):
        raise doc.error("Mapping3 without an 'assignment' object", "kind")
    uops = {}
    for form, uop_list in assignment.items():
        if form not in known:
            raise doc.error(f"form {form!r} is not in the architecture's 'insns'", form)
        if not isinstance(uop_list, list):
            raise doc.error(f"form {form!r}: expected a list of uops", form)
        uops[form] = normalize_uops((_port_mask(doc, form, u, index), 1) for u in uop_list)
    return MachineModel(name=name, isa=semantics.isa_of_forms(insns), ports=ports, uops=uops,
                        provenance={"source": "PMEvo Mapping3", "file": os.path.basename(doc.path)})


def _from_native(doc: JsonDocument) -> MachineModel:
    data = doc.data
    if data.get("version") != FORMAT_VERSION:
        raise doc.error(f"unsupported model format version {data.get('version')!r} "
                        f"(this pmpredict reads version {FORMAT_VERSION})", "version")
    ports = _ports(doc, data.get("ports"))
    index = {p: i for i, p in enumerate(ports)}
    forms = data.get("forms")
    if not isinstance(forms, dict):
        raise doc.error("'forms' must be an object mapping form -> {uops: [...]}", "forms")
    uops = {}
    timing = {name: {} for name in PER_FORM_FIELDS}
    for form, entry in forms.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("uops"), list):
            raise doc.error(f"form {form!r}: expected {{\"uops\": [...]}}", form)
        pairs = []
        for u in entry["uops"]:
            if not isinstance(u, dict):
                raise doc.error(f"form {form!r}: a uop must be {{\"ports\": [...], \"count\": n}}", form)
            count = u.get("count", 1)
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise doc.error(f"form {form!r}: uop count must be an integer >= 1, not {count!r}", form)
            pairs.append((_port_mask(doc, form, u.get("ports"), index), count))
        uops[form] = normalize_uops(pairs)
    isa = data.get("isa") or semantics.isa_of_forms(uops)
    if isa not in semantics.ISAS:
        raise doc.error(f"'isa' must be {' or '.join(repr(i) for i in semantics.ISAS)}, not {isa!r}",
                        "isa")
    for form, entry in forms.items():
        _form_timing(doc, form, entry, isa, timing)
    pipeline, pipeline_source = _pipeline(doc, data)
    r_max = data.get("r_max")
    if r_max is not None and (not isinstance(r_max, (int, float)) or isinstance(r_max, bool) or r_max <= 0):
        raise doc.error(f"'r_max' must be a positive number or null, not {r_max!r}", "r_max")
    return MachineModel(name=str(data.get("name") or os.path.splitext(os.path.basename(doc.path))[0]),
                        isa=isa, ports=ports, uops=uops, r_max=float(r_max) if r_max else None,
                        provenance=dict(data.get("provenance") or {}), pipeline=pipeline,
                        pipeline_source=pipeline_source, **timing)


def _form_timing(doc: JsonDocument, form: str, entry: dict, isa: str, timing: dict) -> None:
    """Read one form's optional latency, latency_from, latency_source and flags into `timing`."""
    if entry.get("latency") is not None:
        why = latency_problem(entry["latency"])
        if why:
            raise doc.error(f"form {form!r}: latency {why}", form)
        timing["latency"][form] = float(entry["latency"])
    per = entry.get("latency_from")
    if per is not None:
        if not isinstance(per, dict):
            raise doc.error(f"form {form!r}: latency_from must be an object "
                            "{\"<operand index>\": latency}", form)
        out = {}
        for key, lat in per.items():
            index = int(key) if re.fullmatch(r"[0-9]+", key) else key
            why = operand_index_problem(form, isa, index) or latency_problem(lat)
            if why:
                raise doc.error(f"form {form!r}: latency_from {key!r}: {why}", form)
            out[index] = float(lat)
        if out:
            timing["operand_latency"][form] = out
    if "latency_source" in entry:
        if not isinstance(entry["latency_source"], str):
            raise doc.error(f"form {form!r}: latency_source must be a string, "
                            f"not {entry['latency_source']!r}", form)
        timing["latency_source"][form] = entry["latency_source"]
    for key in ("move_elimination", "idiom_ports"):
        if key in entry:
            if not isinstance(entry[key], bool):
                raise doc.error(f"form {form!r}: {key} must be true or false, not {entry[key]!r}",
                                form)
            timing[key][form] = entry[key]


def _pipeline(doc: JsonDocument, data: dict) -> tuple[dict, dict]:
    pipeline = data.get("pipeline") or {}
    if not isinstance(pipeline, dict):
        raise doc.error("'pipeline' must be an object {key: number}", "pipeline")
    for key, value in pipeline.items():
        why = pipeline_problem(key, value)
        if why:
            raise doc.error(why, key)
    sources = data.get("pipeline_source") or {}
    if not isinstance(sources, dict):
        raise doc.error("'pipeline_source' must be an object {key: text}", "pipeline_source")
    for key, text in sources.items():
        if key not in pipeline:
            raise doc.error(f"pipeline_source names {key!r}, which 'pipeline' does not have",
                            "pipeline_source")
        if not isinstance(text, str):
            raise doc.error(f"pipeline_source {key!r} must be a string, not {text!r}",
                            "pipeline_source")
    return dict(pipeline), dict(sources)


# the name of this machine's model (pmpredict.infer.hostmodel), measured on demand
HOST_MODEL = "host"


def load_model(spec: str) -> MachineModel:
    """Load a model from a path (native JSON, PMEvo Mapping3, OSACA YAML) or a built-in name;
    "host" is this machine's model as far as it has been measured."""
    from .models import builtin_path
    path = spec
    if spec == HOST_MODEL and not os.path.exists(spec):
        from .infer.hostmodel import load_cached
        model = load_cached()
        if model is None:
            raise InputError(spec, "this machine's model has not been measured yet: "
                                   "`pmpredict predict FILE.s --model host` measures it")
        return model
    if not os.path.exists(spec):
        builtin = builtin_path(spec)
        if builtin is None:
            raise InputError(spec, "no such file, and not a built-in model (see `pmpredict models`)")
        path = builtin
    if path.endswith((".yml", ".yaml")):
        from .data.osaca import load_osaca_model
        return load_osaca_model(path)
    doc = read_json(path)
    if not isinstance(doc.data, dict):
        raise InputError(path, "expected a JSON object (a model)", 1, 1)
    name = os.path.splitext(os.path.basename(path))[0]
    if doc.data.get("kind") == "Mapping3":
        return _from_mapping3(doc, name)
    if doc.data.get("format") == FORMAT_NAME:
        return _from_native(doc)
    if doc.data.get("kind") == "ExperimentList" or doc.data.get("format") == "pmpredict-experiments":
        raise InputError(path, "this is an experiment file, not a model", 1, 1)
    raise InputError(path, f"not a model: expected \"format\": \"{FORMAT_NAME}\" or a PMEvo "
                           "\"kind\": \"Mapping3\"", 1, 1)
