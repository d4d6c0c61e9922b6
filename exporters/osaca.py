"""MachineModel -> OSACA machine file (YAML), through templates/osaca.yml.j2.

Decisions made here (the template only lays them out):
* name: the bare mnemonic (no GAS size suffix; OSACA strips the suffix of the
  kernel's `addq` when looking up, and a suffixed name loses OSACA's ISA
  read/write semantics). movzx/movsx/movsxd take their AT&T stems
  (movzb/movzw, movsb/movsw, movsl), which is what OSACA's lookup reaches.
* operands: OSACA classes in AT&T order on x86 (the reverse of the Intel order
  of our form strings); AArch64 in source order, with shift / extend words
  folded or split exactly as OSACA's AArch64 parser does (see _aarch64_literal).
* memory operands: as pmpredict matches them. One with a width (every x86 form but lea)
  fits any address (`base/offset/index/scale: "*"`); lea keeps its base and index and takes
  any scale, and any displacement where the model has no lea of that shape with the other
  (_any_address). Spelled as the forms' own `[base + disp]`, 71 of 300 real blocks went
  unknown in OSACA.
* `lock`: OSACA reads `lock cmpxchgl %edx, (%rdi)` as the mnemonic `lock` with the name as
  an identifier operand; each read-modify-write memory form also gets a `lock` entry of that
  shape, with the model's atomic_cycles as its latency (_locked_entry).
* port_pressure: one `[count, [ports...]]` per uop, always in list form (a
  string of port names would be split into characters).
* throughput: the exact simulator's singleton cycles (never 0).
* latency: the model's (from the register sources; OSACA keeps one per form
  and applies it from every source) where known; otherwise DEFAULT_LATENCY (+
  DEFAULT_LOAD_LATENCY for a memory read), flagged with a comment and
  `pmpredict_latency: default` so that import does not take it as measured.
* load_latency (one value for every register class), store_to_load_forward_latency
  and ROB_size: the model's pipeline facts (load_latency falls back to the plain
  load form's latency, then the default; the others are left out when unknown).
* load/store defaults: the port pressure of the model's cheapest pure load and
  pure store forms (OSACA adds them to register forms used with memory
  operands that have no explicit memory form).
* `pmpredict_form` (+ `pmpredict_latency_from`, `_latency_source`,
  `_move_elimination`, `_idiom_ports`, `_idiom_breaks` where the form has them) on every entry
  and a top-level `pmpredict` block (name, R_max, provenance, pipeline facts
  and their sources) make export -> import exact. OSACA ignores them.
Several of our forms can share one OSACA key (e.g. `add $imm8` and `add $imm32`
on a byte / dword / qword memory operand, or AArch64 `add x0, x1, x2` and
`add x0, x1, x2, lsl 2`: OSACA's parser folds the shift into the register):
all are written, the representative one first (common.representative: the
plainest spelling, then the slowest), as OSACA uses the first it finds. Import
therefore returns the forms in file order, which can differ from the model's
order (order has no effect on any prediction).
"""

from __future__ import annotations

import json
import math
import re

from pmpredict.isa import semantics
from pmpredict.formats.osaca import OSACA_PIPELINE_KEYS
from pmpredict.isa.forms import parse_form, split_operands
from pmpredict.model.machine import FORM_FLAGS
from pmpredict.isa.osaca_forms import WILD, UnsupportedForm, is_foreign, osaca_identity

from pmpredict.formats.files import write_atomic

from pmpredict.exporters.common import (DEFAULT_LATENCY, DEFAULT_LOAD_LATENCY, ExportResult,
                                        check_exportable, instruction_forms, latency_of,
                                        representative, singleton_cycles)
from pmpredict.exporters.opcodes import resolve_opcodes
from pmpredict.exporters.render import render_template

OSACA_VERSION = "0.7.1"


def printed_alias(form: str, isa: str, asm: str | None, n_operands: int) -> str | None:
    """The mnemonic an assembler prints for the form (`mov` for `ins`/`umov`/`dup`, `mvn` for
    `not`...), when it differs from ours and keeps the operand count: an extra OSACA name so
    that compiler output finds the entry. Only where the ISA's printing has such aliases
    (AArch64; x86 printing adds size suffixes)."""
    if not semantics.get(isa).osaca.printed_aliases or not asm:
        return None
    mnemonic, _, rest = asm.strip().partition(" ")
    ours = parse_form(form, isa).mnemonic
    if mnemonic.lower() == ours or not re.fullmatch(r"[a-z][a-z0-9.]*", mnemonic.lower()):
        return None
    return mnemonic.lower() if len(split_operands(rest)) == n_operands else None



# --- the document -----------------------------------------------------------------------

def port_pressure(model, uops) -> list:
    return [[count, model.port_names(mask)] for mask, count in uops]


def _cheapest(model, forms):
    forms = list(forms)
    if not forms:
        return None
    return min(forms, key=lambda f: (not _plain_move(f, model.isa), sum(c for _, c in model.uops[f]),
                                     forms.index(f)))


def _plain_move(form: str, isa: str) -> bool:
    """mov/ldr/str of a 64-bit general-purpose register: the load/store the defaults describe."""
    t = parse_form(form, isa)
    regs = [o for o in t.operands if o.kind == "reg"]
    return (t.mnemonic in ("mov", "ldr", "str") and len(regs) == 1 and regs[0].reg_class == "G"
            and regs[0].width == 64)


def _forms_where(model, semantic, shape) -> list[str]:
    """The model's own (not foreign) forms whose FormSemantics pass `semantic` and whose
    parsed template passes shape(isa semantics, template)."""
    isa = semantics.get(model.isa)
    return [form for form in model.forms if not is_foreign(form)
            and semantic(isa.form(form)) and shape(isa, parse_form(form, model.isa))]


def pure_load_forms(model) -> list[str]:
    """Forms that only load: a register destination and one memory source."""
    return _forms_where(model, lambda sem: sem.reads_memory, lambda isa, t: (
        len(t.operands) == 2 and t.operands[0].kind == "reg" and t.operands[1].kind == "mem"
        and re.fullmatch(isa.osaca.pure_load, t.mnemonic)))


def pure_store_forms(model) -> list[str]:
    """Forms that only store (no memory read) a register."""
    return _forms_where(model, lambda sem: sem.pure_store,
                        lambda isa, t: any(o.kind == "reg" for o in t.operands))


def osaca_order(model, cycles) -> list[str]:
    """Forms in the order they are written: model order, except that among forms sharing an
    OSACA name + operand classes (which OSACA cannot tell apart: it uses the first) the
    representative one (common.representative) comes first."""
    groups: dict[str, list[str]] = {}
    for form in model.forms:
        try:
            key = repr(osaca_identity(form, model.isa))
        except (UnsupportedForm, ValueError):
            key = "unsupported " + form
        groups.setdefault(key, []).append(form)
    order = {f: i for i, f in enumerate(model.forms)}
    out = []
    for forms in groups.values():
        first = representative(forms, cycles, order, model.isa) if len(forms) > 1 else forms[0]
        out.append(first)
        out.extend(f for f in forms if f != first)
    return out


def yaml_number(value) -> str:
    """A number as YAML reads it back exactly: PyYAML (YAML 1.1) takes `1e-05` for a string,
    so a float's exponent gets a mantissa with a point (`1.0e-05`)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return json.dumps(value)
    if not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def _flow(value) -> str:
    """A value in YAML flow style, laid out as JSON (strings JSON-quoted), numbers exact."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return yaml_number(value)
    return json.dumps(value)


def osaca_context(model, source: str = "") -> dict:
    """Everything the template prints, decided and formatted."""
    model = instruction_forms(model)
    check_exportable(model)
    tp = singleton_cycles(model)
    # printed spellings from the opcode table (shipped / cached; llvm-mc is not run here)
    printed = resolve_opcodes(model.forms, model.isa, use_llvm_mc=False) \
        if semantics.get(model.isa).osaca.printed_aliases else {}
    entries, unsupported = _entries(model, tp, printed)
    load = _cheapest(model, pure_load_forms(model))
    store = _cheapest(model, pure_store_forms(model))
    load_latency, load_latency_from = _load_latency(model, load)
    return {
        "source": " ".join(str(source or model.name).split()),       # one comment line
        "osaca_version": OSACA_VERSION,
        "micro_architecture": _flow(str(model.provenance.get("description") or model.name)),
        "arch_code": _flow(model.name),
        "isa": model.isa,
        "ports": _flow(list(model.ports)),
        "r_max": model.r_max,
        "load_latency": _flow({k: load_latency
                               for k in semantics.get(model.isa).osaca.load_latency_keys}),
        "load_latency_from": load_latency_from,
        "pipeline_keys": [(osaca_key, yaml_number(model.pipeline[key]))
                          for osaca_key, key in OSACA_PIPELINE_KEYS.items() if key in model.pipeline],
        "missing_pipeline_keys": [osaca_key for osaca_key, key in OSACA_PIPELINE_KEYS.items()
                                  if key not in model.pipeline],
        "load_form": load,
        "load_pressure": _flow(port_pressure(model, model.uops[load]) if load else []),
        "store_form": store,
        "store_pressure": _flow(port_pressure(model, model.uops[store]) if store else []),
        "default_latency": DEFAULT_LATENCY,
        "default_load_latency": DEFAULT_LOAD_LATENCY,
        "meta": _meta(model),
        "entries": entries,
        "unsupported": unsupported,
    }


def _entries(model, tp: dict, printed: dict) -> tuple[list, list]:
    """(the template's entry of every form OSACA can name, [form  (why not)] of the others)."""
    entries, unsupported = [], []
    addresses = _lea_addresses(model)
    for form in osaca_order(model, tp):
        try:
            name, operands = osaca_identity(form, model.isa)
        except (UnsupportedForm, ValueError) as why:
            unsupported.append(" ".join(f"{form}  ({why})".split()))
            continue
        lat = latency_of(model, form)
        names = [name]
        if form in printed and not is_foreign(form):
            alias = printed_alias(form, model.isa, printed[form].asm,
                                  len(parse_form(form, model.isa).operands))
            if alias and alias != name:
                names.append(alias)
        entries.append({
            "form": form,
            "name": _flow(name if len(names) == 1 else names),     # quoted: any mnemonic
            "operands": [_flow(o) for o in _any_address(operands, form, model.isa, addresses)],
            "latency": yaml_number(lat.value),
            "latency_default": not lat.measured,
            "facts": _entry_facts(model, form),
            "port_pressure": _flow(port_pressure(model, model.uops[form])),
            "throughput": yaml_number(float(tp[form])),
            "uops": sum(c for _, c in model.uops[form]),
            "form_json": _flow(form),
        })
        locked = _locked_entry(model, form, operands, entries[-1])
        if locked:
            entries.append(locked)
    return entries, unsupported


def _locked_entry(model, form: str, operands: list[dict], entry: dict) -> dict | None:
    """OSACA's parser reads `lock cmpxchgl %edx, (%rdi)` as the mnemonic `lock` with the
    instruction's name as a first, identifier operand: an entry of that shape for each
    read-modify-write memory form, so a locked instruction is found (with its form's port
    pressure, and the model's measured atomic_cycles as its latency: locked operations run
    one after another). OSACA cannot tell `lock cmpxchg` from `lock xadd` of the same operands:
    the first such entry serves both."""
    isa = semantics.get(model.isa)
    if is_foreign(form) or not isa.osaca.lock_prefix or "atomic_cycles" not in model.pipeline:
        return None
    sem = isa.form(form)
    if not (sem.reads_memory and sem.writes_memory):
        return None
    return {**entry, "name": _flow(isa.osaca.lock_prefix),
            "operands": [_flow({"class": "identifier"})] + entry["operands"],
            "latency": yaml_number(float(model.pipeline["atomic_cycles"])),
            "latency_default": False, "facts": [("pmpredict_locked", "true")] + entry["facts"]}


def _any_address(operands: list[dict], form: str, isa: str, addresses: set) -> list[dict]:
    """Memory operands as pmpredict matches them (asm/match). One that says how wide its access
    is (every x86 form but lea's address) fits any address: base, offset, index and scale
    written as OSACA's wildcard (spelled as the form's own `[base + disp]`, OSACA found no
    entry for `movq %r14, (%rdx)` or `movups %xmm0, (%rcx,%rdx)`). An address (lea) keeps
    whether it has a base and an index, which cost differently, takes any scale (PMEvo's `2*`
    index stands for every scale), and any displacement or none where the model has no lea of
    the same shape with the other (`leaq (%r11,%rbp), %rdx` made OSACA raise). `addresses`:
    the (base, index, displacement) shapes of the model's lea forms."""
    memory = _memory_template(form, isa)
    if memory is None:
        return operands
    out = []
    for o in operands:
        if o.get("class") != "memory":
            out.append(o)
        elif memory.mem_width:
            out.append({**o, "base": WILD, "offset": WILD, "index": WILD, "scale": WILD})
        else:
            base, index, disp = _address_shape(o)
            alone = (base, index, not disp) not in addresses
            out.append({**o, "scale": WILD, **({"offset": WILD} if alone else {})})
    return out


def _address_shape(operand: dict) -> tuple[bool, bool, bool]:
    return (operand.get("base") is not None, operand.get("index") is not None,
            operand.get("offset") is not None)


def _memory_template(form: str, isa: str):
    """The memory operand of one of our own forms, where the ISA's forms spell memory by its
    address (x86), else None."""
    if is_foreign(form) or semantics.get(isa).memory_operands_by_mode:
        return None
    return next((o for o in parse_form(form, isa).operands if o.kind == "mem"), None)


def _lea_addresses(model) -> set:
    """The (base, index, displacement) shapes of the model's address (lea) forms."""
    shapes = set()
    for form in model.forms:
        memory = _memory_template(form, model.isa)
        if memory is not None and not memory.mem_width:
            try:
                _, operands = osaca_identity(form, model.isa)
            except (UnsupportedForm, ValueError):
                continue
            shapes |= {_address_shape(o) for o in operands if o.get("class") == "memory"}
    return shapes


def _meta(model) -> str:
    """The `pmpredict:` block that makes the file load back as the same model."""
    meta = {"format": "pmpredict-osaca", "version": 1, "name": model.name, "r_max": model.r_max,
            "provenance": model.provenance}
    if model.pipeline:
        meta["pipeline"] = model.pipeline
    if model.pipeline_source:
        meta["pipeline_source"] = model.pipeline_source
    return _flow(meta).replace("instruction_forms:", "instruction_forms\\u003a")


def _load_latency(model, load) -> tuple[float, str]:
    """OSACA's load_latency (one value for every register class) and where it comes from."""
    if "load_latency" in model.pipeline:
        return float(model.pipeline["load_latency"]), "the model's pipeline load_latency"
    if load is not None:
        lat = latency_of(model, load)
        if lat.measured:
            return lat.value, f"the latency of {load}"
    return DEFAULT_LOAD_LATENCY, "default, not measured"


def _entry_facts(model, form) -> list[tuple[str, str]]:
    """The form's timing facts OSACA has no key for, as (pmpredict_* key, YAML value)."""
    out = []
    if model.operand_latency.get(form):
        out.append(("pmpredict_latency_from", _flow({str(i): float(v) for i, v in sorted(
            model.operand_latency[form].items())})))
    if form in model.latency_source:
        out.append(("pmpredict_latency_source", _flow(model.latency_source[form])))
    for key in FORM_FLAGS:
        if form in getattr(model, key):
            out.append(("pmpredict_" + key, _flow(getattr(model, key)[form])))
    return out


def render_osaca(model, source: str = "") -> str:
    return render_template("osaca.yml.j2", osaca_context(model, source))


def export_osaca(model, path, source: str = "") -> ExportResult:
    """Write the OSACA file; returns what was written (forms, unsupported forms)."""
    ctx = osaca_context(model, source)
    text = render_template("osaca.yml.j2", ctx)
    write_atomic(path, text, "OSACA file")
    forms = len({e["form"] for e in ctx["entries"]})        # a locked entry repeats its form
    return ExportResult(str(path), "osaca", forms, tuple(ctx["unsupported"]))
