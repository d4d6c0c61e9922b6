"""OSACA machine files (YAML) -> MachineModel.

Two kinds of files load:

* files written by ``pmpredict export --format osaca``: every instruction form
  carries ``pmpredict_form`` (our form string) and its other timing facts as
  ``pmpredict_*`` keys, the top-level ``pmpredict`` block carries the model
  name, R_max and the pipeline facts, and defaulted latencies are marked
  ``pmpredict_latency: default``. Import restores the model exactly.
* foreign files (e.g. those shipped in ``site-packages/osaca/data``): each
  instruction form becomes a form named by :func:`foreign_form_name`::

      osaca:<mnemonic>[ <operand>,<operand>,...]      operands in the file's order

  with operands spelled ``gpr`` / ``xmm`` / ``ymm`` ... (x86 register class or
  fixed name), ``x`` / ``w`` / ``d`` / ``v.d`` ... (AArch64 prefix[.shape]),
  ``imd:int`` / ``imd:double`` (immediate), ``mem(base,offset,index,scale)``
  (``~`` = none; AArch64 adds ``,pre`` / ``,post``), ``id`` (identifier),
  ``cond:CC``, ``flag:NAME``, ``prfop``. Example: ``osaca:add imd:int,gpr``,
  ``osaca:vaddpd ymm,ymm,ymm``, ``osaca:ldr q,mem(x,imd,~,1,post)``.
  A list of aliases (``name: [jo, jno]``) gives one form per alias.

Port pressure ``[[n, ports]]`` becomes one uop of count n on the listed ports
(a string of ports is split into characters, as OSACA does). Forms whose
pressure cannot be a uop list (fractional or alternative pressures) are left
out and listed in ``provenance["skipped"]``; the first of several entries with
the same name and operands wins, single-name entries before alias lists, as
in OSACA. Latencies and pipeline facts of a foreign file carry the source
``osaca:<file name>``; see docs/EXPORT.md for the mapping of OSACA's keys.
"""

from __future__ import annotations

import os
import re

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.formats.files import read_text
from pmpredict.model.machine import (FORM_FLAGS, PER_FORM_FIELDS, MachineModel, normalize_uops,
                                     pipeline_problem)
from pmpredict.isa.osaca_forms import FOREIGN_PREFIX, foreign_entry_problem, foreign_form_name
from pmpredict.model.validate import (MAX_COUNT, json_value_problem, latency_problem, name_problem,
                                      number_problem, port_list_problem, r_max_problem)



# --- YAML with line numbers ------------------------------------------------------

# OSACA's files nest 6 levels; libyaml's composer recurses in C, and a file nested some
# 10,000 levels deep crashes the interpreter: depth and aliases are checked on the events
# (an iterative pass) before anything is composed
MAX_YAML_NESTING = 100
MAX_YAML_ALIASES = 10_000        # the shipped files use none; a "billion laughs" file uses many


def _yaml_structure(text: str, loader, path) -> None:
    # deferred: yaml (PyYAML, ~12 ms): only an OSACA file needs it, not native models
    import yaml
    depth = aliases = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_NESTING:
                mark = event.start_mark
                raise InputError(path, f"nested more than {MAX_YAML_NESTING} levels deep",
                                 mark.line + 1, mark.column + 1)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                mark = event.start_mark
                raise InputError(path, f"more than {MAX_YAML_ALIASES} aliases (*name)",
                                 mark.line + 1, mark.column + 1)


def _load_yaml(path):
    # deferred: yaml (PyYAML, ~12 ms): only an OSACA file needs it, not native models
    import yaml

    # libyaml's loader when present: the shipped OSACA files are up to 10 MB
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):
        pass

    def construct_mapping(loader, node, deep=False):
        mapping = base.construct_mapping(loader, node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    text = read_text(path)
    try:
        _yaml_structure(text, base, path)
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in what:
            # PyYAML 6.0.4's scanner stops deep flow collections itself, ahead of the events
            what = f"nested more than {MAX_YAML_NESTING} levels deep"
        else:
            what = f"malformed YAML: {what}"
        raise InputError(path, what, mark.line + 1 if mark else None,
                         mark.column + 1 if mark else None) from None
    except (ValueError, TypeError, OverflowError) as exc:   # a constructor on a bad scalar
        raise InputError(path, f"malformed YAML: {exc}") from None


def _strip_lines(obj):
    """Drop the loader's __line__ keys (for data passed through, e.g. provenance)."""
    if isinstance(obj, dict):
        return {k: _strip_lines(v) for k, v in obj.items() if k != "__line__"}
    if isinstance(obj, list):
        return [_strip_lines(v) for v in obj]
    return obj


def _line(obj):
    return obj.get("__line__") if isinstance(obj, dict) else None


# --- port pressure -------------------------------------------------------------------

class _Skip(Exception):
    """A form whose pressure is not a list of whole uops (left out, listed in provenance)."""


def _uops(path, entry, pressure, index):
    """Uops of one entry. A malformed pressure in our own export is an error; in a foreign
    file (the shipped ones have slips: snb names port 'DIV', zen2 has [1, '8', '9', '10'])
    the entry is left out, as OSACA only fails once a kernel uses it."""
    line = _line(entry)
    strict = "pmpredict_form" in entry

    def bad(message):
        if strict:
            raise InputError(path, message, line)
        raise _Skip(message)

    if pressure is None:
        raise _Skip("no port_pressure")
    if isinstance(pressure, dict):
        raise _Skip("alternative port pressures")
    if not isinstance(pressure, list):
        bad(f"port_pressure must be a list [[cycles, ports], ...], not {pressure!r}")
    pairs = []
    for item in pressure:
        if not isinstance(item, list) or len(item) != 2:
            bad(f"port_pressure entry {item!r} must be [cycles, ports]")
        n, ports = item
        if n != 0 and number_problem(n, 0, MAX_COUNT):
            bad(f"port_pressure cycles {number_problem(n, 0, MAX_COUNT)}")
        names = list(ports) if isinstance(ports, str) else ports
        if not isinstance(names, list) or not names:
            bad(f"port_pressure ports {ports!r} must be a list of port names")
        mask = 0
        for p in names:
            if str(p) not in index:
                bad(f"unknown port {p!r} in port_pressure (ports are {', '.join(index)})")
            mask |= 1 << index[str(p)]
        if n == 0:
            continue
        if n != int(n):
            raise _Skip(f"fractional port pressure {n}")
        pairs.append((mask, int(n)))
    return normalize_uops(pairs)


# --- latencies and pipeline facts -----------------------------------------------------

# OSACA's load_latency classes that mean a general-purpose register (x86, AArch64)
GENERAL_PURPOSE_CLASSES = ("gpr", "x")
# OSACA top-level key -> pipeline key (see pmpredict.model.machine.PIPELINE_KEYS)
OSACA_PIPELINE_KEYS = {"ROB_size": "window", "store_to_load_forward_latency": "store_forward_latency",
                       "p_index_latency": "address_update_latency"}


def _is_latency(value) -> bool:
    return latency_problem(value) is None


def _entry_timing(path, entry, source: str) -> dict:
    """Timing facts of one entry: {field: value} for the PER_FORM_FIELDS it has.

    Our own export: `latency` unless flagged `pmpredict_latency: default`, and the
    pmpredict_* keys, all checked (an error names the line). A foreign file: its
    `latency` when it is a number >= 0 (OSACA applies it from every source, so it is the
    form's `latency`; an explicit memory form's number includes the load), with
    latency_source "osaca:<file>".
    """
    lat = entry.get("latency")
    if "pmpredict_form" not in entry:
        return {"latency": float(lat), "latency_source": source} if _is_latency(lat) else {}
    line = _line(entry)
    facts = {}
    if lat is not None and entry.get("pmpredict_latency", "measured") != "default":
        why = latency_problem(lat)
        if why:
            raise InputError(path, f"latency {why}", line)
        facts["latency"] = float(lat)
    per = _strip_lines(entry.get("pmpredict_latency_from"))
    if per is not None:
        if not isinstance(per, dict) or not all(re.fullmatch(r"[0-9]+", str(k)) for k in per) \
                or not all(_is_latency(v) for v in per.values()):
            raise InputError(path, "pmpredict_latency_from must map operand indices to "
                                   f"latencies >= 0, not {per!r}", line)
        facts["operand_latency"] = {int(k): float(v) for k, v in per.items()}
    for key in ("latency_source",) + FORM_FLAGS:
        value = entry.get("pmpredict_" + key)
        if value is None:
            continue
        if not isinstance(value, str if key == "latency_source" else bool):
            raise InputError(path, f"pmpredict_{key} has the wrong type: {value!r}", line)
        facts[key] = value
    return facts


def _own_pipeline(path, meta) -> tuple[dict, dict]:
    """The pipeline facts of our own export: the `pmpredict` block, exactly."""
    pipeline = _strip_lines(meta.get("pipeline") or {})
    sources = _strip_lines(meta.get("pipeline_source") or {})
    if not isinstance(pipeline, dict) or not isinstance(sources, dict):
        raise InputError(path, "pmpredict.pipeline and pmpredict.pipeline_source must be "
                               "mappings", _line(meta))
    for key, value in pipeline.items():
        why = pipeline_problem(key, value)
        if why:
            raise InputError(path, f"pmpredict.{why}", _line(meta))
    return pipeline, sources


def _foreign_pipeline(data: dict, source: str) -> tuple[dict, dict, dict]:
    """(pipeline, pipeline_source, load latency per register class) of a foreign file.

    `load_latency` is per register class in OSACA; the general-purpose class's value is
    the model's load latency, the whole map is returned for the provenance (OSACA adds it
    to a register form's latency when it builds a memory form the file does not list).
    Values that are not numbers >= 0 (`ROB_size: ~`) are left out.
    """
    pipeline = {}
    for osaca_key, key in OSACA_PIPELINE_KEYS.items():
        if _is_latency(data.get(osaca_key)):
            pipeline[key] = data[osaca_key]
    by_class = data.get("load_latency")
    by_class = {str(k): v for k, v in by_class.items() if k != "__line__" and _is_latency(v)} \
        if isinstance(by_class, dict) else {}
    general = next((by_class[c] for c in GENERAL_PURPOSE_CLASSES if c in by_class), None)
    if general is not None:
        pipeline["load_latency"] = general
    return pipeline, {key: source for key in pipeline}, by_class


# --- the loader ------------------------------------------------------------------------

def load_osaca_model(path) -> MachineModel:
    """Load an OSACA machine file (ours or foreign) as a MachineModel."""
    data = _load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(path, "not an OSACA machine file: expected a YAML mapping", 1, 1)
    isa, ports = _isa_and_ports(path, data)
    forms = data.get("instruction_forms")
    if not isinstance(forms, list):
        raise InputError(path, "'instruction_forms' must be a list", 1, 1)
    meta = data.get("pmpredict") if isinstance(data.get("pmpredict"), dict) else {}
    source = FOREIGN_PREFIX + os.path.basename(path)
    uops, timing, skipped = _instruction_forms(path, forms, {p: i for i, p in enumerate(ports)},
                                               source)
    r_max = meta.get("r_max")
    why = r_max_problem(r_max)
    if why:
        raise InputError(path, f"pmpredict.r_max {why} (or null: no cap)", _line(meta))
    name = meta.get("name") or data.get("arch_code") or os.path.splitext(os.path.basename(path))[0]
    provenance = _provenance(path, meta, skipped)
    if "pmpredict" in data:
        pipeline, pipeline_source = _own_pipeline(path, meta)
    else:
        pipeline, pipeline_source, by_class = _foreign_pipeline(data, source)
        if by_class:
            provenance["osaca_load_latency"] = by_class
    try:
        return MachineModel(name=str(name), isa=isa, ports=ports, uops=uops,
                            r_max=float(r_max) if r_max is not None else None,
                            provenance=provenance,
                            pipeline=pipeline, pipeline_source=pipeline_source, **timing)
    except ValueError as exc:
        raise InputError(path, str(exc)) from None


def _isa_and_ports(path, data: dict) -> tuple[str, tuple]:
    isa = str(data.get("isa", "")).lower()
    if isa not in semantics.ISAS:
        raise InputError(path, f"'isa' must be {' or '.join(semantics.ISAS)}, not {data.get('isa')!r}",
                         1, 1)
    ports = data.get("ports")
    why = port_list_problem(ports)
    if why:
        raise InputError(path, f"'ports' {why}", 1, 1)
    return isa, tuple(str(p) for p in ports)


def _instruction_forms(path, forms: list, index: dict, source: str):
    """(form -> uops, field -> form -> value of the timing, [what was skipped and why])."""
    uops, skipped = {}, []
    timing = {name: {} for name in PER_FORM_FIELDS}
    for entry in forms:
        if not isinstance(entry, dict) or "name" not in entry:
            raise InputError(path, "an instruction form needs a 'name'", _line(entry))
    # OSACA files entries with a list of names after all the others, so where the same
    # name and operands appear twice, the single-name entry wins: do the same (our own
    # exports name each form exactly and keep their order)
    forms = sorted(forms, key=lambda entry: isinstance(entry["name"], list)
                   and "pmpredict_form" not in entry)
    for entry in forms:
        names = _entry_names(path, entry, skipped)
        try:
            form_uops = _uops(path, entry, entry.get("port_pressure"), index)
        except _Skip as why:
            skipped.extend(f"{n}: {why}" for n in names)
            continue
        facts = _entry_timing(path, entry, source)
        for name in names:
            if name in uops:
                continue                 # OSACA uses the first matching entry
            uops[name] = form_uops
            for key, value in facts.items():
                timing[key][name] = value
    return uops, timing, skipped


def _entry_names(path, entry: dict, skipped: list) -> list[str]:
    """The form names of an entry: our own export's, or one per usable foreign alias (the
    others go to `skipped` with the reason)."""
    operands = entry.get("operands") or []
    if not isinstance(operands, list) or not all(isinstance(o, dict) for o in operands):
        raise InputError(path, "'operands' must be a list of operand mappings", _line(entry))
    if "pmpredict_form" in entry:
        why = name_problem(entry["pmpredict_form"])
        if why:
            raise InputError(path, f"pmpredict_form {why}", _line(entry))
        return [entry["pmpredict_form"]]
    aliases = entry["name"] if isinstance(entry["name"], list) else [entry["name"]]
    names = []
    for alias in aliases:
        why = foreign_entry_problem(alias, operands)
        if why:
            skipped.append(f"{alias!r}: {why}")
        else:
            names.append(foreign_form_name(alias, operands))
    return names


def _provenance(path, meta: dict, skipped: list) -> dict:
    provenance = {"source": "OSACA machine file", "file": os.path.basename(path)}
    if isinstance(meta.get("provenance"), dict):
        provenance = _strip_lines(meta["provenance"])
        why = json_value_problem(provenance)
        if why:
            raise InputError(path, f"pmpredict.provenance {why}", _line(meta))
    if skipped:
        provenance["skipped"] = skipped
    return provenance
