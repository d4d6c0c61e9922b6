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

import math
import os
import re

from .. import semantics
from ..errors import InputError
from ..model import PER_FORM_FIELDS, MachineModel, latency_problem, normalize_uops, pipeline_problem

FOREIGN_PREFIX = "osaca:"


# --- YAML with line numbers ------------------------------------------------------

def _load_yaml(path):
    import yaml

    # libyaml's loader when present: the shipped OSACA files are up to 1 MB
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):
        pass

    def construct_mapping(loader, node, deep=False):
        mapping = base.construct_mapping(loader, node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    try:
        with open(path, encoding="utf8") as f:
            return yaml.load(f, Loader=_Loader)
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(path, f"malformed YAML: {what}", mark.line + 1 if mark else None,
                         mark.column + 1 if mark else None) from None


def _strip_lines(obj):
    """Drop the loader's __line__ keys (for data passed through, e.g. provenance)."""
    if isinstance(obj, dict):
        return {k: _strip_lines(v) for k, v in obj.items() if k != "__line__"}
    if isinstance(obj, list):
        return [_strip_lines(v) for v in obj]
    return obj


def _line(obj):
    return obj.get("__line__") if isinstance(obj, dict) else None


# --- foreign form names ----------------------------------------------------------

def _spell(value) -> str:
    if value is None:
        return "~"
    if isinstance(value, dict):          # a register given as {name: ...} / {prefix: ...}
        return str(value.get("prefix") or value.get("name") or "*")
    return str(value)


def operand_token(op: dict) -> str:
    """One OSACA operand (a dict from the YAML) in the foreign form-name spelling."""
    cls = op.get("class")
    if cls == "register":
        if op.get("prefix") is not None:
            token = str(op["prefix"])
            if op.get("shape") is not None:
                token += "." + str(op["shape"])
            return token
        return str(op.get("name", "*"))
    if cls == "immediate":
        return f"imd:{op.get('imd', 'int')}"
    if cls == "memory":
        parts = [_spell(op.get(k)) for k in ("base", "offset", "index", "scale")]
        if op.get("pre_indexed"):
            parts.append("pre")
        if op.get("post_indexed"):
            parts.append("post")
        return "mem(" + ",".join(parts) + ")"
    if cls == "identifier":
        return "id"
    if cls == "condition":
        return f"cond:{str(op.get('ccode', '*')).upper()}"
    if cls == "flag":
        return f"flag:{op.get('name', '*')}"
    if cls == "prfop":
        return "prfop"
    return str(cls)


def foreign_form_name(mnemonic: str, operands) -> str:
    ops = ",".join(operand_token(o) for o in operands)
    return FOREIGN_PREFIX + mnemonic.lower() + (" " + ops if ops else "")


def _token_value(text: str):
    if text == "~":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def parse_foreign_form_name(form: str, isa: str) -> tuple[str, list[dict]]:
    """Inverse of foreign_form_name: (mnemonic, OSACA operand dicts)."""
    if not form.startswith(FOREIGN_PREFIX):
        raise ValueError(f"not a foreign OSACA form name: {form!r}")
    vocab = semantics.get(isa).osaca
    body = form[len(FOREIGN_PREFIX):]
    mnemonic, _, rest = body.partition(" ")
    ops = []
    for token in re.findall(r"mem\([^)]*\)|[^,]+", rest):
        if token.startswith("mem("):
            parts = token[4:-1].split(",")
            op = {"class": "memory", "base": _token_value(parts[0]), "offset": _token_value(parts[1]),
                  "index": _token_value(parts[2]), "scale": _token_value(parts[3])}
            if vocab.indexed_writeback:
                op["pre_indexed"] = "pre" in parts[4:]
                op["post_indexed"] = "post" in parts[4:]
            ops.append(op)
        elif token.startswith("imd:"):
            ops.append({"class": "immediate", "imd": token[4:]})
        elif token == "id":
            ops.append({"class": "identifier"})
        elif token.startswith("cond:"):
            ops.append({"class": "condition", "ccode": token[5:]})
        elif token.startswith("flag:"):
            ops.append({"class": "flag", "name": token[5:]})
        elif token == "prfop":
            ops.append({"class": "prfop"})
        elif vocab.register_style == "prefix":
            prefix, _, shape = token.partition(".")
            op = {"class": "register", "prefix": prefix}
            if shape:
                op["shape"] = shape
            ops.append(op)
        else:
            ops.append({"class": "register", "name": token})
    return mnemonic, ops


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
        if not isinstance(n, (int, float)) or isinstance(n, bool) or math.isnan(n) or n < 0:
            bad(f"port_pressure cycles {n!r} must be a number >= 0")
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
# OSACA top-level key -> pipeline key (see pmpredict.model.PIPELINE_KEYS)
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
    for key in ("latency_source", "move_elimination", "idiom_ports"):
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
    isa = str(data.get("isa", "")).lower()
    if isa not in semantics.ISAS:
        raise InputError(path, f"'isa' must be {' or '.join(semantics.ISAS)}, not {data.get('isa')!r}",
                         1, 1)
    ports = data.get("ports")
    if not isinstance(ports, list) or not ports:
        raise InputError(path, "'ports' must be a non-empty list of port names", 1, 1)
    ports = tuple(str(p) for p in ports)
    if len(set(ports)) != len(ports):
        raise InputError(path, "'ports' lists a port twice", 1, 1)
    if len(ports) > 62:
        raise InputError(path, "at most 62 ports are supported", 1, 1)
    index = {p: i for i, p in enumerate(ports)}
    forms = data.get("instruction_forms")
    if not isinstance(forms, list):
        raise InputError(path, "'instruction_forms' must be a list", 1, 1)

    meta = data.get("pmpredict") if isinstance(data.get("pmpredict"), dict) else {}
    source = FOREIGN_PREFIX + os.path.basename(path)
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
        operands = entry.get("operands") or []
        if not isinstance(operands, list) or not all(isinstance(o, dict) for o in operands):
            raise InputError(path, "'operands' must be a list of operand mappings", _line(entry))
        if "pmpredict_form" in entry:
            names = [str(entry["pmpredict_form"])]
        else:
            aliases = entry["name"] if isinstance(entry["name"], list) else [entry["name"]]
            names = [foreign_form_name(str(a), operands) for a in aliases]
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
    r_max = meta.get("r_max")
    if r_max is not None and (not isinstance(r_max, (int, float)) or isinstance(r_max, bool)
                              or not r_max > 0):
        raise InputError(path, f"pmpredict.r_max must be a positive number or null, not {r_max!r}",
                         _line(meta))
    name = meta.get("name") or data.get("arch_code") or os.path.splitext(os.path.basename(path))[0]
    provenance = {"source": "OSACA machine file", "file": os.path.basename(path)}
    if isinstance(meta.get("provenance"), dict):
        provenance = _strip_lines(meta["provenance"])
    if skipped:
        provenance["skipped"] = skipped
    if "pmpredict" in data:
        pipeline, pipeline_source = _own_pipeline(path, meta)
    else:
        pipeline, pipeline_source, by_class = _foreign_pipeline(data, source)
        if by_class:
            provenance["osaca_load_latency"] = by_class
    try:
        return MachineModel(name=str(name), isa=isa, ports=ports, uops=uops,
                            r_max=float(r_max) if r_max else None, provenance=provenance,
                            pipeline=pipeline, pipeline_source=pipeline_source, **timing)
    except ValueError as exc:
        raise InputError(path, str(exc)) from None
