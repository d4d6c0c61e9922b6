"""Model files -> MachineModel: native JSON, the PMEvo artifact's Mapping3, OSACA YAML
(data/osaca.py), or a built-in name (pmpredict/models/).

Native JSON is documented in docs/FORMATS.md and in pmpredict.model.machine; a Mapping3 file's
inner port lists are uop occurrences (repeats become counts).
"""

from __future__ import annotations

import os
import re
from typing import Callable

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.formats import prepared
from pmpredict.formats.jsonio import JsonDocument, read_json, write_json
from pmpredict.formats.osaca import load_osaca_model
from pmpredict.model.machine import (FORM_FLAGS, FORMAT_NAME, FORMAT_VERSION, HOST_MODEL,
                                     PER_FORM_FIELDS,
                                     MachineModel, normalize_uops, operand_index_problem,
                                     pipeline_problem)
from pmpredict.models import builtin_path
from pmpredict.model.validate import (count_problem, latency_problem, port_list_problem,
                                      r_max_problem)


def _port_mask(doc: JsonDocument, form: str, names, index: dict[str, int]) -> int:
    if not isinstance(names, list) or not names:
        raise doc.error(f"form {form!r}: a uop needs a non-empty list of ports", form)
    mask = 0
    for p in names:
        if not isinstance(p, (str, int)) or isinstance(p, bool) or str(p) not in index:
            raise doc.error(f"form {form!r}: unknown port {p!r} (ports are {', '.join(index)})", form)
        mask |= 1 << index[str(p)]
    return mask


def _ports(doc: JsonDocument, ports) -> tuple[str, ...]:
    why = port_list_problem(ports)
    if why:
        raise doc.error(f"'ports' {why}", "ports")
    return tuple(str(p) for p in ports)


def _model(doc: JsonDocument, **fields) -> MachineModel:
    try:
        return MachineModel(**fields)
    except ValueError as exc:
        raise doc.error(str(exc)) from None


def _from_mapping3(doc: JsonDocument, name: str) -> MachineModel:
    data = doc.data
    arch = data.get("arch")
    if not isinstance(arch, dict):
        raise doc.error("Mapping3 without an 'arch' object", "kind")
    ports = _ports(doc, arch.get("ports"))
    index = {p: i for i, p in enumerate(ports)}
    insns = doc.name_list(arch.get("insns"), "'arch.insns'")
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
    return _model(doc, name=name, isa=semantics.isa_of_forms(insns), ports=ports, uops=uops,
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
            why = count_problem(count)
            if why:
                raise doc.error(f"form {form!r}: uop count {why}", form)
            pairs.append((_port_mask(doc, form, u.get("ports"), index), count))
        uops[form] = normalize_uops(pairs)
    isa = data.get("isa") or semantics.isa_of_forms(uops)
    if not isinstance(isa, str) or isa not in semantics.ISAS:
        raise doc.error(f"'isa' must be {' or '.join(repr(i) for i in semantics.ISAS)}, not {isa!r}",
                        "isa")
    for form, entry in forms.items():
        _form_timing(doc, form, entry, isa, timing)
    pipeline, pipeline_source = _pipeline(doc, data)
    r_max = data.get("r_max")
    why = r_max_problem(r_max)
    if why:
        raise doc.error(f"'r_max' {why} (or null: no cap)", "r_max")
    name = data.get("name") or os.path.splitext(os.path.basename(doc.path))[0]
    if not isinstance(name, str):
        raise doc.error(f"'name' must be a string, not {name!r}", "name")
    provenance = data.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise doc.error(f"'provenance' must be an object, not {provenance!r}", "provenance")
    return _model(doc, name=name, isa=isa, ports=ports, uops=uops,
                  r_max=float(r_max) if r_max is not None else None,
                  provenance=dict(provenance), pipeline=pipeline,
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
    for key in FORM_FLAGS:
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


def save_model(model: MachineModel, path) -> None:
    """Write a model as native JSON (atomically)."""
    write_json(path, model.to_json())


def load_model(spec: str, host: Callable[[], MachineModel | None] | None = None) -> MachineModel:
    """Load a model from a path (native JSON, PMEvo Mapping3, OSACA YAML) or a built-in name;
    "host" is this machine's model as far as it has been measured, which `host` returns (the
    caller's resolver, pmpredict.host.model.load_cached; None where nothing is measured yet).
    Without a resolver "host" is a file name like any other."""
    path = spec
    if spec == HOST_MODEL and host is not None and not os.path.exists(spec):
        model = host()
        if model is None:
            raise InputError(spec, "this machine's model has not been measured yet: "
                                   "`pmpredict predict FILE.s --model host` measures it")
        return model
    if not os.path.exists(spec):
        builtin = builtin_path(spec)
        if builtin is None:
            raise InputError(spec, "no such file, and not a built-in model (see `pmpredict models`)")
        path = builtin
    model = prepared.load(path)
    if model is None:
        model = prepared.note_source(_read_model(path), path)
    return model


def _read_model(path: str) -> MachineModel:
    """The model in the file at `path`, read and checked."""
    if path.endswith((".yml", ".yaml")):
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


def check_same_isa(model: MachineModel, isa: str, path, what: str) -> None:
    """InputError at `path` unless `what` ("the experiments are", "the reference is"...) is
    of the model's ISA."""
    if model.isa != isa:
        raise InputError(path, f"{what} {isa} but model {model.name!r} is {model.isa}")
