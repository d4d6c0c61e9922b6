"""Instruction schemes: the forms AnICA may put into a block, with the features its abstract
domain constrains (Table 8.1 of the dissertation).

A scheme is a form string (PMEvo spelling) plus features read off the form and the ISA's
semantics: the mnemonic, a coarse category (the operation's uop kind), the ISA extension
(from the register classes and widths), how it uses memory, the width of its memory access and
the kinds of its operands. `schemes_for` keeps the forms that can be instantiated as a
standalone loop body: no control flow, no stack, no traps, no integer division (random
dividends fault), nothing that needs registers the measurement harness reserves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pmpredict.anica.concrete import (BASE_REGISTERS, DATA_REGISTERS, REGISTER_CLASSES,
                                      VECTOR_REGISTERS, round_trips)
from pmpredict.isa import semantics
from pmpredict.isa.base import (ADDRESS_ONLY, BARRIER, BRANCHES, DIVIDER, FP_ADD, FP_MULTIPLY,
                                INT_ALU, INT_MULTIPLY, LOAD, LOADS, NO_MEMORY,
                                READ_MODIFY_WRITE, SHUFFLES, STORE, STORES, VECTOR_ALU)
from pmpredict.isa.forms import OperandKind, parse_form
from pmpredict.measure.instantiate import HARNESS_ISA, unmeasurable
from pmpredict.predict.kinds import form_kinds

# Scheme.memory
MEMORY_NONE, MEMORY_LOAD, MEMORY_STORE, MEMORY_LOAD_STORE, MEMORY_ADDRESS = (
    "none", "load", "store", "load+store", "address")
_MEMORY_NAMES = {NO_MEMORY: MEMORY_NONE, LOAD: MEMORY_LOAD, STORE: MEMORY_STORE,
                 READ_MODIFY_WRITE: MEMORY_LOAD_STORE, ADDRESS_ONLY: MEMORY_ADDRESS}

# the category of a scheme: the kind of its operation's uops, in short words
_CATEGORY_NAMES = {INT_ALU: "integer", VECTOR_ALU: "vector", INT_MULTIPLY: "integer multiply",
                   FP_ADD: "fp add", FP_MULTIPLY: "fp multiply", DIVIDER: "divide",
                   SHUFFLES: "shuffle"}

# A form that needs a register outside the pools of concrete.py (rsp, rbp, r12-r15: the
# measurement harness's) is no scheme.
_USABLE = frozenset(DATA_REGISTERS + BASE_REGISTERS + VECTOR_REGISTERS)


@dataclass(frozen=True)
class Scheme:
    """One instruction form with the features the abstract domain looks at."""
    form: str
    mnemonic: str                     # lower case
    category: str                     # "integer", "vector", "fp add", "load", "store"...
    extension: str                    # "base", "sse", "avx", "avx512"
    memory: str                       # "none", "load", "store", "load+store", "address"
    mem_width: int | None             # bits of the memory data access; None without one
    operands: tuple[str, ...]         # operand kinds in form order: "REG:G:64", "IMM:8",
                                      # "MEM:256", "ADDR" (lea), "FIXED:cl"


def _operand_kind(op) -> str:
    if op.kind is OperandKind.REG:
        ph = op.placeholders[0]
        return f"REG:{ph.reg_class}:{ph.width}"
    if op.kind is OperandKind.IMM:
        return f"IMM:{op.width}" if op.placeholders else f"IMM:{op.text}"
    if op.kind is OperandKind.MEM:
        return f"MEM:{op.mem_width}" if op.mem_width else "ADDR"
    return f"FIXED:{op.text}"


def _category(kinds: tuple[str, ...]) -> str:
    operation = [k for k in kinds if k not in (LOADS, STORES, BRANCHES)]
    if operation:
        return _CATEGORY_NAMES.get(operation[0], operation[0])
    if LOADS in kinds and STORES in kinds:
        return "load+store"
    return "load" if LOADS in kinds else "store" if STORES in kinds else "other"


def _extension(template) -> str:
    """The ISA extension, from the vector registers and memory widths a form uses: 512 bits is
    AVX-512, a vector form spelt with the VEX/EVEX `v` is AVX, any other vector form SSE."""
    vector_widths = [op.width or 0 for op in template.operands
                     if op.kind is OperandKind.REG and op.reg_class == "V"]
    if not vector_widths:
        return "base"
    widest = max(vector_widths + [op.mem_width or 0 for op in template.operands
                                  if op.kind is OperandKind.MEM])
    if widest >= 512:
        return "avx512"
    return "avx" if template.mnemonic.startswith("v") else "sse"


@lru_cache(maxsize=None)
def scheme_of(form: str, isa: str = "x86") -> Scheme:
    """The scheme of a form string (its features); ValueError for a form that cannot be read."""
    template = parse_form(form, isa)
    fs = semantics.get(isa).form(template)
    memory = _MEMORY_NAMES.get(fs.memory, MEMORY_NONE)
    mem_width = None
    if memory in (MEMORY_LOAD, MEMORY_STORE, MEMORY_LOAD_STORE):
        mem_width = next((op.mem_width for op in template.operands
                          if op.kind is OperandKind.MEM), None)
    return Scheme(form=form, mnemonic=template.mnemonic, category=_category(form_kinds(form, isa)),
                  extension=_extension(template), memory=memory, mem_width=mem_width,
                  operands=tuple(_operand_kind(op) for op in template.operands))


def excluded_because(form: str, isa: str = "x86") -> str | None:
    """Why a form cannot be a scheme (a standalone loop body), or None."""
    obj = semantics.get(isa)
    if not obj.owns_form(form):
        return f"not a form of {isa}"
    try:
        template = parse_form(form, isa)
    except ValueError as exc:
        return f"cannot be read: {exc}"
    fs = obj.form(template)
    if not fs.known:
        return "its semantics are unknown"
    if fs.branch:
        return "a branch, call or return"
    if fs.trap:
        return f"a trap or system instruction ({fs.trap})"
    if obj.stack_engine_register in fs.pinned_registers:
        return "uses the stack pointer"
    outside = fs.pinned_registers - _USABLE
    if outside:
        return f"uses {sorted(outside)[0]}, outside the registers blocks are made of"
    if getattr(obj, "division", None) is not None and obj.division(template) is not None:
        return "an integer division: random operands fault"
    for op in template.operands:
        for ph in op.placeholders:
            if ph.kind == "REG" and ph.reg_class not in REGISTER_CLASSES:
                return f"a register of class {ph.reg_class}, which blocks do not use"
            if ph.kind in ("REG", "DIV"):
                try:
                    obj.register_pool(ph.reg_class or "G", ph.width)
                except ValueError:
                    return f"no registers of class {ph.reg_class} and width {ph.width}"
        if (op.kind is OperandKind.MEM and fs.memory not in (NO_MEMORY, ADDRESS_ONLY)
                and not any(ph.kind == "MEM" for ph in op.placeholders)):
            return "accesses memory at a fixed address"
        if op.kind is OperandKind.LITERAL:
            family = obj.register_family(op.text)
            if family is None or family not in _USABLE:
                return f"the literal operand {op.text!r}"
    if isa == HARNESS_ISA:           # the harness's own rules, where it could run the form
        why = unmeasurable(form)
        if why:
            return why
    return None


def schemes_for(forms, isa: str = "x86") -> list[Scheme]:
    """The schemes of the forms that can be instantiated as a standalone loop body, sorted by
    form string. A form whose instance does not match back to itself among `forms` (the
    project's parser and matcher) is left out too: a predictor would see another form."""
    forms = sorted(set(forms))
    kept = [f for f in forms if excluded_because(f, isa) is None]
    good = round_trips(kept, forms, isa)
    return [scheme_of(f, isa) for f in kept if f in good and _runs_alone(good[f])]


def _runs_alone(sem) -> bool:
    """What an instance shows that its form does not: a barrier (cpuid, lfence: serialising)
    or a register outside the pools."""
    return sem.beyond_model != BARRIER and sem.branch is None and sem.trap is None \
        and sem.registers() <= _USABLE
