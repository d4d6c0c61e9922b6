"""MachineModel -> LLVM scheduling model (TableGen), through templates/llvm_*.td.j2.

Decisions made here (the templates only lay them out):
* a ProcResource<1> per port; a ProcResGroup per distinct multi-port uop set;
* a SchedWriteRes per distinct (resources, cycles, latency, uops); a uop of
  count n on a port set is its resource with n cycles, and a resource's cycles
  *include* the cycles of every other resource of the same write that is a
  subset of it (llvm-mca subtracts member uses from enclosing groups):
  1 x {P0} + 2 x {P0,P1} is written [P0, P01] with cycles [1, 3];
* NumMicroOps = the form's uop count; Latency = the model's latency rounded up
  to a whole cycle (LLVM's Latency is an integer), or the documented default
  (flagged in a comment). A form that reads memory and has a latency from its
  memory operand gets that one (the load included, as LLVM's own load-op writes);
  the shorter latency of its register sources is lost (it would be a ReadAdvance
  on the right use operand, which needs the opcode's MC operand layout);
* MicroOpBufferSize = the pipeline's window, LoadLatency = its load latency
  (rounded up), when the model has them;
* opcodes: from llvm-mc (see opcodes.py). Forms it cannot resolve are listed
  in a comment, never guessed. When several forms resolve to one opcode
  (`add x0, x1, x2` and `add x0, x1, x2, lsl 2` are both ADDXrs), LLVM allows
  one InstRW per opcode ("Overlapping InstRW"), so the opcode gets the write of
  one representative form (common.representative: the plainest spelling, as
  compilers emit it most; among equally plain forms the slowest) and the
  others are named in a comment next to it;
* IssueWidth = ceil(R_max), or the number of ports when the model has no R_max
  (the ports, not the front end, then bound throughput).
The exporter also rejects what llvm-tblgen lets through (negative latency, an
empty write, a unit count < 1), see common.check_exportable.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form

from pmpredict.formats.files import write_atomic

from pmpredict.exporters.common import (ExportError, ExportResult, Latency, check_exportable,
                                        instruction_forms, latency_of, representative,
                                        singleton_cycles, tablegen_identifier)
from pmpredict.exporters.opcodes import Resolution, resolve_opcodes
from pmpredict.exporters.render import render_template

CYCLES_FIELD = {14: "ResourceCycles", 19: "ReleaseAtCycles"}


@dataclass(frozen=True)
class Resource:
    name: str
    mask: int
    ports: tuple[str, ...]          # TableGen names of the member units (groups only)
    comment: str


@dataclass
class Write:
    name: str
    resources: list[str]
    cycles: list[int]
    latency: int
    micro_ops: int
    latency_default: bool
    forms: list[str] = field(default_factory=list)
    opcodes: list[str] = field(default_factory=list)


@dataclass
class LlvmPlan:
    prefix: str
    model_name: str
    version: int
    cycles_field: str
    issue_width: int
    issue_comment: str
    units: list[Resource]
    groups: list[Resource]
    writes: list[Write]
    unresolved: list[tuple[str, str]]
    merged: list[tuple[str, str, list[str]]]     # (opcode, chosen form, other forms)
    micro_op_buffer: int | None                  # MicroOpBufferSize (pipeline window)
    load_latency: int | None                     # LoadLatency (pipeline load_latency)
    latency_sources: list[tuple[str, int]]       # (latency_source, bound forms using it)

    @property
    def opcodes(self) -> list[str]:
        return sorted({op for w in self.writes for op in w.opcodes})


def _camel(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    return "".join(p[:1].upper() + p[1:] for p in parts if p) or "Model"


def resource_names(prefix: str, ports) -> list[str]:
    """One TableGen identifier per port, unique after sanitising."""
    names, seen = [], set()
    for i, p in enumerate(ports):
        name = f"{prefix}Port{tablegen_identifier(p)}"
        if name in seen:
            name = f"{name}_{i}"
        seen.add(name)
        names.append(name)
    return names


def group_name(prefix: str, port_names: list[str]) -> str:
    if all(len(p) == 1 and p.isalnum() for p in port_names):
        return f"{prefix}Port{''.join(port_names)}"
    return f"{prefix}Port" + "_".join(tablegen_identifier(p) for p in port_names)


def covering_group(masks) -> int | None:
    """The mask of an extra group if two groups overlap without one containing the other.

    llvm-tblgen rejects overlapping ProcResGroups unless some group contains both
    ("no supergroup contains both"). One group over the union of all groups is
    enough: every group is a subset of it. No write uses it.
    """
    masks = sorted(set(masks))
    for i, a in enumerate(masks):
        for b in masks[i + 1:]:
            if a & b and a & b not in (a, b) and not any(c & (a | b) == (a | b) for c in masks):
                union = 0
                for m in masks:
                    union |= m
                return union
    return None


def write_cycles(uops) -> list[tuple[int, int]]:
    """(mask, cycles) per uop, a set's cycles including those of its subsets in the same write.

    `uops` is a normalized uop list (distinct masks). Ordered units first, then by size.
    """
    ordered = sorted(uops, key=lambda u: (bin(u[0]).count("1"), u[0]))
    out = []
    for mask, _ in ordered:
        total = sum(c for m, c in ordered if m & mask == m)     # m subset of mask (incl. itself)
        out.append((mask, total))
    return out


def whole_cycles(value: float) -> int:
    """LLVM's integer Latency: rounded up (a 4.5-cycle latency is 5, never 4); the rounding to
    1e-9 first keeps 3.0000000000000004 at 3."""
    return int(math.ceil(round(value, 9)))


def write_latency(model, form: str) -> Latency:
    """The latency of the form's write: from its memory operand (the load included) when the
    form reads memory and the model has that latency, else the model's latency or default."""
    per = model.operand_latency.get(form)
    if per and semantics.get(model.isa).form(form).reads_memory:
        mem = next((i for i, o in enumerate(parse_form(form, model.isa).operands)
                    if o.kind == "mem"), None)
        if mem in per:
            return Latency(float(per[mem]), True)
    return latency_of(model, form)


def _resources(model, prefix: str) -> tuple[list[Resource], list[Resource], dict[int, str]]:
    """(units, groups, resource name of each uop mask): a unit per port, a group per distinct
    multi-port uop set, and a covering group where tblgen needs one."""
    unit_names = resource_names(prefix, model.ports)
    units = [Resource(n, 1 << i, (), f"port {p}")
             for i, (n, p) in enumerate(zip(unit_names, model.ports))]
    resource_of = {u.mask: u.name for u in units}
    groups: list[Resource] = []

    def add_group(mask: int, note: str = "") -> None:
        members = [unit_names[i] for i in range(len(model.ports)) if mask >> i & 1]
        name = group_name(prefix, model.port_names(mask))
        if name in {g.name for g in groups} or name in unit_names:
            name = f"{prefix}Group{len(groups)}"
        groups.append(Resource(name, mask, tuple(members),
                               "ports " + ", ".join(model.port_names(mask)) + note))
        resource_of[mask] = name

    for uops in model.uops.values():
        for mask, _ in uops:
            if mask not in resource_of:
                add_group(mask)
    cover = covering_group(g.mask for g in groups)
    if cover is not None and cover not in resource_of:
        add_group(cover, " (used by no write: tblgen wants a supergroup of overlapping groups)")
    groups.sort(key=lambda g: (bin(g.mask).count("1"), g.mask))
    return units, groups, resource_of


def _opcodes(model, resolutions) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """(opcode -> its forms in model order, unresolved (form, why))."""
    by_opcode: dict[str, list[str]] = {}
    unresolved = []
    for form in model.forms:
        r = resolutions.get(form)
        if r is None or not r.opcode:
            unresolved.append((form, (r.error if r else None) or "not resolved"))
        elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", r.opcode):
            unresolved.append((form, f"opcode {r.opcode!r} is not a TableGen identifier"))
        else:
            by_opcode.setdefault(r.opcode, []).append(form)
    return by_opcode, unresolved


def _writes(model, prefix: str, by_opcode, resource_of) -> tuple[list[Write], list]:
    """One SchedWriteRes per distinct (resources, cycles, latency, uops); each opcode gets the
    write of its representative form. Returns (writes, merged)."""
    cycles = singleton_cycles(model)
    order = {f: i for i, f in enumerate(model.forms)}
    writes: dict[tuple, Write] = {}
    merged = []
    for opcode in sorted(by_opcode, key=lambda op: order[by_opcode[op][0]]):
        forms = by_opcode[opcode]
        form = representative(forms, cycles, order, model.isa)
        if len(forms) > 1:
            merged.append((opcode, form, [f for f in forms if f != form]))
        lat = write_latency(model, form)
        latency = whole_cycles(lat.value)
        pairs = write_cycles(model.uops[form])
        key = (tuple(resource_of[m] for m, _ in pairs), tuple(c for _, c in pairs), latency,
               sum(c for _, c in model.uops[form]), lat.measured)
        w = writes.get(key)
        if w is None:
            w = Write(f"{prefix}Write{len(writes)}", list(key[0]), list(key[1]), latency, key[3],
                      not lat.measured)
            writes[key] = w
        w.opcodes.append(opcode)
        w.forms.extend(forms)
    return list(writes.values()), merged


def _issue_width(model) -> tuple[int, str]:
    """IssueWidth and the comment that says where it comes from."""
    if model.r_max:
        issue = int(math.ceil(model.r_max - 1e-9))
        return issue, f"R_max = {model.r_max:g} instructions/cycle" + (
            "" if issue == model.r_max else " (rounded up: IssueWidth is an integer)")
    return len(model.ports), "the model has no R_max: one per port, so the ports bound throughput"


def _latency_sources(model, writes) -> list[tuple[str, int]]:
    """(latency_source, number of bound forms using it), for the header comment."""
    sources: dict[str, int] = {}
    for w in writes:
        for form in w.forms:
            if form in model.latency_source:
                text = " ".join(model.latency_source[form].split())      # one comment line
                sources[text] = sources.get(text, 0) + 1
    return sorted(sources.items())


def plan_llvm(model, version: int = 19, resolutions: dict[str, Resolution] | None = None,
              name: str | None = None) -> LlvmPlan:
    if version not in CYCLES_FIELD:
        raise ExportError(model, f"unsupported LLVM version {version} (14 or 19)")
    model = instruction_forms(model)
    check_exportable(model)
    prefix = "Pmp" + _camel(name or model.name)
    if resolutions is None:
        resolutions = resolve_opcodes(model.forms, model.isa)
    units, groups, resource_of = _resources(model, prefix)
    by_opcode, unresolved = _opcodes(model, resolutions)
    writes, merged = _writes(model, prefix, by_opcode, resource_of)
    clash = {u.name for u in units + groups} & set(by_opcode)
    if clash:
        raise ExportError(model, f"resource name(s) {sorted(clash)} clash with opcode names; "
                                 "pass another model name")
    issue, note = _issue_width(model)
    window, load = model.pipeline.get("window"), model.pipeline.get("load_latency")
    return LlvmPlan(prefix, _camel(name or model.name), version, CYCLES_FIELD[version], issue, note,
                    units, groups, writes, unresolved, merged,
                    whole_cycles(window) if window is not None else None,
                    whole_cycles(load) if load is not None else None,
                    _latency_sources(model, writes))


def _context(plan: LlvmPlan, model, source: str, complete: bool) -> dict:
    merged = {op: others for op, _, others in plan.merged}
    label = " ".join(str(model.name).split())                  # one line, for comments
    processor = re.sub(r"[^a-z0-9.-]+", "-", label.lower()).strip("-") or "model"
    return {"plan": plan, "model": model, "model_label": label,
            "source": " ".join(str(source or model.name).split()),
            "processor": f"pmpredict-{processor}", "sched_model": f"{plan.prefix}Model",
            "complete": 1 if complete else 0, "merged": merged,
            "fractional": _fractional_latencies(plan, model),
            "window_source": _pipeline_note(model, "window"),
            "load_source": _pipeline_note(model, "load_latency")}


def _fractional_latencies(plan: LlvmPlan, model) -> dict[str, str]:
    """Bound forms whose write latency is not a whole number of cycles -> the model's value."""
    out = {}
    for w in plan.writes:
        for form in w.forms:
            value = write_latency(model, form).value
            if value != whole_cycles(value):
                out[form] = f"{value:g}"
    return out


def _pipeline_note(model, key: str) -> str:
    source = model.pipeline_source.get(key)
    return f" ({' '.join(str(source).split())})" if source else ""


def render_llvm(model, version: int = 19, self_contained: bool = False, source: str = "",
                resolutions=None, name: str | None = None) -> tuple[str, LlvmPlan]:
    model = instruction_forms(model)
    plan = plan_llvm(model, version, resolutions, name)
    if not plan.writes:
        why = plan.unresolved[0][1] if plan.unresolved else "no forms"
        raise ExportError(model, f"no form of the model resolved to an LLVM opcode, nothing to "
                                 f"bind (first reason: {why})")
    ctx = _context(plan, model, source, complete=self_contained)
    sched = render_template("llvm_sched.td.j2", ctx)
    if not self_contained:
        return sched, plan
    ctx["sched"] = sched
    ctx["copy_resource"] = plan.units[0].name
    return render_template("llvm_harness.td.j2", ctx), plan


@dataclass(frozen=True)
class LlvmExportResult(ExportResult):
    opcodes: int = 0                   # opcodes bound
    writes: int = 0                    # SchedWriteRes defined
    shared: tuple = ()                 # (opcode, the form whose write it got, other forms)

    def written(self) -> str:
        return (f"{self.opcodes} opcodes bound, "
                f"{len(self.shared)} opcodes shared by several forms")

    def json_details(self) -> dict:
        return {"opcodes": self.opcodes, "writes": self.writes,
                "shared_opcodes": [{"opcode": op, "form": form, "others": list(others)}
                                   for op, form, others in self.shared]}


def export_llvm(model, path, version: int = 19, self_contained: bool = False,
                source: str = "", name: str | None = None) -> LlvmExportResult:
    text, plan = render_llvm(model, version, self_contained, source, name=name)
    write_atomic(path, text, "TableGen file")
    return LlvmExportResult(str(path), "llvm", sum(len(w.forms) for w in plan.writes),
                            tuple(f for f, _ in plan.unresolved), len(plan.opcodes),
                            len(plan.writes),
                            tuple((op, form, tuple(others)) for op, form, others in plan.merged))
