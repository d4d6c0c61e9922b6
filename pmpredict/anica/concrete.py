"""Concrete blocks and how forms become instructions under aliasing constraints.

A ConcreteBlock is its instruction lines (Intel syntax, no prefix) and the form of each.
Instantiation follows section 8.1.5 of the dissertation, greedily: operand slots that must
alias are joined into groups; a group with a register the form fixes (the `cl` of a shift) takes
that register; the other groups, in random order, take a random value no must-not-alias
neighbour has. The register discipline keeps every block runnable by the measurement harness:

* memory operands are `[BASE + disp]`, BASE from BASE_REGISTERS, none of which any instruction
  of the block writes (a form that writes one implicitly takes it out of the block's bases);
  displacements are multiples of 64 in [0, 1280], so two memory operands alias exactly when
  they are spelt the same (the dissertation's rule for memory aliasing);
* general-purpose data operands come from DATA_REGISTERS, a small pool so that dependencies
  occur by chance; vector operands from registers 0-7 of the width the form names;
* rsp, rbp and r12-r15 never appear (the harness uses them);
* immediates are 2^(W-8) + 42 for W > 8 bits, else 42: representable in the operand, and not
  narrower, so the instance matches back to its own form.

That is the standard block mode. The memory mode (MEMORY_BLOCKS) looks for what standard blocks
cannot show: a memory data operand's displacement is one of PLACES, two at a line's start and two
3 bytes before a line's end, so that wider accesses there cross a cache line (the harness's bases
are 64-byte aligned: measure/layout.py), and few enough that two operands of a block often meet
at one place, perhaps at two widths (a store and a narrower load of it); and vector operands come
from 4 registers only, so that integer, floating-point and shuffle instructions chain through one
register by chance. Whether an access crosses a line (`crosses_line`) is a property of the
concrete operand, which instantiation can be asked to meet (`crossing`), like aliasing.

The memory mode also sets bases to constants, as compiled code sets a register to a global's
address every iteration: a base the block marks as constant (`ConcreteBlock.constant_bases`,
each base with CONSTANT_SHARE) is set at the block's top, `mov rbx, 0x680600`, a line that
predictors and users see (`lines()`) but no instruction of the block (it has no form, and the
abstract block's instructions stay the block's own). Each base has one constant
(CONSTANT_ADDRESSES). The harness maps such an address on demand, and every page it maps so
outside its windows shows one physical page (measure/layout.py, harness.c): hence the constants'
page offsets (0x200, 0x400, 0x600), apart from each other and from the harness's bases (page
offset 0, and 2048 with two). Two constants at one page offset share their bytes (measured on
Zen 4: `movzx eax, word ptr [rdi]; add eax, 1; mov word ptr [rsi], ax` with rsi, rdi =
0x600000, 0x640000: 7.3 cycles, a chain between operands spelt apart; 0.83 with these
constants), and one at a harness base's page offset 4K-aliases it (0.98 against 0.67).
Operands through a constant base keep PLACES (the constants are 64-byte aligned), so line
crossing and aliasing (spelt the same) read as through any base. Whether a memory operand's
base is set to a constant is a property of the concrete block, which instantiation can be asked
to meet (`constant`).

The block never moves a constant base (as `add rax, 2` does in compiled code): after the last
access that is a dead write (the next iteration's mov overwrites it), and between two accesses
it moves the later ones off their places, so that operands spelt apart alias and a crossing
depends on the bump; aliasing by spelling and crossing by displacement, which the domain's
constraints rest on, would no longer hold. A chain through memory needs no bump: the harness
holds its bases still too. What the constant adds is an address register the block writes
every iteration, which predictors and cores treat apart: OSACA then finds no loop-carried
dependency through memory (`add qword ptr [rbx], 1` has an LCD of 1 cycle alone, 0 after `mov
rbx, 0x680600`), and Zen 4 no longer renames the memory (`add qword ptr [rsi], r10` 1.0 cycles
alone, 3.2 after `mov rsi, 0x600200`, as after `mov rsi, rsi`).

Operand slots are numbered in form order (Intel order on x86). A slot's alias class says what
it can alias: "G" a general-purpose register (a fixed one too), "V" a vector register, "M" a
memory operand whose data is accessed. Addresses that are only computed (lea), immediates and
the registers of addresses never alias anything: no instruction of a block writes them (a
constant base is set before them all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

from pmpredict.isa import semantics
from pmpredict.isa.base import ADDRESS_ONLY, NO_MEMORY
from pmpredict.isa.forms import OperandKind, Placeholder, parse_form, split_operands
from pmpredict.predict.line_splits import crosses

DATA_REGISTERS = ("rax", "rcx", "rdx", "r8", "r9", "r10", "r11")
BASE_REGISTERS = ("rsi", "rdi", "rbx")
VECTOR_REGISTERS = tuple(f"v{i}" for i in range(8))
# the memory mode's vector pool: with 4 registers, instructions of different execution domains
# (integer vector, floating point, shuffles) chain through one register by chance
MEMORY_MODE_VECTOR_REGISTERS = VECTOR_REGISTERS[:4]
REGISTER_CLASSES = ("G", "V")            # placeholder classes blocks allocate
LINE = 64
# the measurement harness starts the three address registers 1344 bytes apart in one page
# (measure/layout.py: 64 lines spread evenly): displacements below that never make accesses
# through two registers meet, so memory operands alias exactly when they are spelt the same
DISPLACEMENTS = tuple(range(0, 1344, LINE))
# an address only computed (lea) with a 16/32-bit displacement placeholder: the matcher takes
# the narrowest lea form, so the displacement must not fit 8 bits
WIDE_DISPLACEMENTS = tuple(d for d in DISPLACEMENTS if d > 127)
# the memory mode's displacements (bytes from the base, per base): 0 and 256 start a line, 189
# and 445 end 3 bytes before one (192 - 3, 448 - 3), so an access of 4 bytes or more there
# crosses a line and none at 0 or 256 does; spaced so that accesses of up to 64 bytes at two
# places never overlap (nor reach the next base, 1344 bytes on): memory operands still alias
# exactly when they are spelt the same
PLACES = (0, 189, 256, 445)
# an access the ISA says faults unless aligned only takes the places at a line's start
ALIGNED_PLACES = tuple(p for p in PLACES if p % LINE == 0)
INTEL_HEADER = ".intel_syntax noprefix\n"

# the memory mode's constant address of each base (`mov rbx, 0x680600` at a block's top): far
# apart, 64-byte aligned, and at page offsets none of the harness's bases has (module docstring)
CONSTANT_ADDRESSES = {"rsi": 0x600200, "rdi": 0x640400, "rbx": 0x680600}
# the chance that a memory-mode block sets one of its bases to its constant
CONSTANT_SHARE = 1 / 3

# block modes: what random blocks and samples look like (see the module docstring)
STANDARD_BLOCKS, MEMORY_BLOCKS = "standard", "memory"
BLOCK_MODES = (STANDARD_BLOCKS, MEMORY_BLOCKS)

# Slot.kind
REG, FIXED, MEM, ADDR, IMM, DIV, OTHER = "reg", "fixed", "mem", "addr", "imm", "div", "other"
# alias classes
GENERAL, VECTOR, MEMORY = "G", "V", "M"

Position = tuple[int, int]               # (instruction index, operand index), both from 0
Pair = tuple[Position, Position]


@dataclass(frozen=True)
class ConcreteBlock:
    """A basic block: Intel-syntax instruction lines (no prefix) and the form of each; in the
    memory mode also the bases it sets to their constant at its top (in BASE_REGISTERS order;
    each the base of a memory operand of the block)."""
    instructions: tuple[str, ...]
    forms: tuple[str, ...]
    constant_bases: tuple[str, ...] = ()

    def __post_init__(self):
        if len(self.instructions) != len(self.forms):
            raise ValueError("a block needs one form per instruction")
        unknown = set(self.constant_bases) - set(CONSTANT_ADDRESSES)
        if unknown:
            raise ValueError(f"{sorted(unknown)[0]} has no constant address: one of "
                             f"{', '.join(CONSTANT_ADDRESSES)}")
        object.__setattr__(self, "constant_bases", tuple(
            b for b in BASE_REGISTERS if b in self.constant_bases))

    def __len__(self) -> int:
        return len(self.instructions)

    def prelude(self) -> tuple[str, ...]:
        """The lines that set the constant bases, `mov rbx, 0x680600`: the block's top."""
        return tuple(f"mov {b}, {CONSTANT_ADDRESSES[b]:#x}" for b in self.constant_bases)

    def lines(self) -> tuple[str, ...]:
        """Every line of the block as predictors and users see it: the prelude, then the
        instructions."""
        return self.prelude() + self.instructions

    def text(self) -> str:
        return INTEL_HEADER + "".join(line + "\n" for line in self.lines())

    def without(self, index: int) -> "ConcreteBlock":
        """The block with instruction `index` dropped (and the constant of a base no other
        memory operand goes through)."""
        rest = ConcreteBlock(self.instructions[:index] + self.instructions[index + 1:],
                             self.forms[:index] + self.forms[index + 1:])
        if not self.constant_bases:
            return rest
        used = set(memory_bases(rest).values())
        return ConcreteBlock(rest.instructions, rest.forms,
                             tuple(b for b in self.constant_bases if b in used))

    def to_json(self) -> dict:
        out = {"instructions": list(self.instructions), "forms": list(self.forms)}
        if self.constant_bases:              # blocks without read and write as they always did
            out["constant_bases"] = list(self.constant_bases)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "ConcreteBlock":
        return cls(tuple(data["instructions"]), tuple(data["forms"]),
                   tuple(data.get("constant_bases", ())))


@dataclass(frozen=True)
class Slot:
    """One operand of a form, as instantiation and aliasing see it."""
    kind: str                         # REG, FIXED, MEM, ADDR, IMM, DIV, OTHER
    alias_class: str | None           # GENERAL, VECTOR, MEMORY; None: aliases nothing
    reg_class: str = ""               # "G" / "V" for registers
    width: int | None = None
    family: str | None = None         # FIXED: the register the form names
    written: bool = False
    address: tuple[str, ...] = ()     # MEM / ADDR: its placeholder kinds (MEM base, DIV
                                      # index, MIMM or IMM displacement)
    displacements: tuple = (None,)    # MEM / ADDR: the displacements it may take
    aligned: bool = False             # MEM: the access faults unless naturally aligned


@dataclass(frozen=True)
class CompiledForm:
    """A form ready to instantiate: its slots and, in text order, (operand, placeholder)."""
    form: str
    isa: str
    slots: tuple[Slot, ...]
    placeholders: tuple[tuple[int, Placeholder], ...]
    writes: frozenset                 # register families it writes without an operand naming
                                      # them, or through a fixed operand (never a base)


@lru_cache(maxsize=None)
def compiled(form: str, isa: str = "x86") -> CompiledForm:
    """The slots of a form (ValueError for a form that cannot be read)."""
    obj = semantics.get(isa)
    template = parse_form(form, isa)
    fs = obj.form(template)
    access = fs.operand_access + ("",) * (len(template.operands) - len(fs.operand_access))
    data_memory = fs.memory not in (NO_MEMORY, ADDRESS_ONLY)
    slots, placeholders, writes = [], [], set(fs.implicit_writes)
    for k, op in enumerate(template.operands):
        written = "W" in access[k]
        if op.kind is OperandKind.MEM:
            kinds = tuple(ph.kind for ph in op.placeholders)
            if "MIMM" in kinds:
                disps = WIDE_DISPLACEMENTS if fs.memory == ADDRESS_ONLY else DISPLACEMENTS
            else:
                disps = tuple(immediate(ph.width) for ph in op.placeholders
                              if ph.kind == "IMM")[:1] or (None,)
            slot = Slot(MEM if data_memory else ADDR, MEMORY if data_memory else None,
                        width=op.mem_width, written=written, address=kinds,
                        displacements=disps,
                        aligned=_faults_unaligned(obj, template.mnemonic, op.mem_width))
        elif op.kind is OperandKind.REG and op.placeholders[0].kind == "DIV":
            slot = Slot(DIV, None, "G", op.placeholders[0].width)
        elif op.kind is OperandKind.REG:
            ph = op.placeholders[0]
            slot = Slot(REG, ph.reg_class if ph.reg_class in REGISTER_CLASSES else None,
                        ph.reg_class, ph.width, written=written)
        elif op.kind is OperandKind.IMM:
            slot = Slot(IMM, None, width=op.width)
        else:
            family = obj.register_family(op.text)
            if family is None:
                slot = Slot(OTHER, None)
            else:
                cls = GENERAL if family in obj.gpr_families else VECTOR
                slot = Slot(FIXED, cls, cls, None, family, written)
                if written:
                    writes.add(family)
        slots.append(slot)
        placeholders.extend((k, ph) for ph in op.placeholders)
    return CompiledForm(form, isa, tuple(slots), tuple(placeholders), frozenset(writes))


def _faults_unaligned(obj, mnemonic: str, width: int | None) -> bool:
    """Whether the ISA says an access of `width` bits by `mnemonic` faults unless aligned
    (the memory mode keeps such accesses at a line's start); an ISA that does not say: no."""
    faults = getattr(obj, "faults_unaligned", None)
    return bool(faults and faults(mnemonic, width))


def slots_of(form: str, isa: str = "x86") -> tuple[Slot, ...]:
    return compiled(form, isa).slots


def alias_class(form: str, operand: int, isa: str = "x86") -> str | None:
    """What operand `operand` of a form can alias (None: nothing, or no such operand)."""
    slots = compiled(form, isa).slots
    return slots[operand].alias_class if 0 <= operand < len(slots) else None


def immediate(width: int | None) -> int:
    """The immediate of an IMM placeholder of `width` bits (the dissertation's 2^(W-8) + 42)."""
    return 2 ** (width - 8) + 42 if width and width > 8 else 42


@lru_cache(maxsize=None)
def register_name(family: str, reg_class: str, width: int | None, isa: str = "x86") -> str:
    """The name of a register family at a width: ("rax", "G", 8) -> "al", ("v3", "V", 256) ->
    "ymm3"."""
    obj = semantics.get(isa)
    if reg_class == "G":
        index = obj.register_pool("G", 64).index(family)
        return obj.register_pool("G", width or 64)[index]
    return obj.register_pool(reg_class, width)[int(family[1:])]


# --- values of operands and aliasing -------------------------------------------------------

# a memory operand's value: (base family, index family or None, displacement or None)
_ADDRESS = re.compile(r"\[([^\]]*)\]")


def _address_value(text: str, isa: str) -> tuple | None:
    m = _ADDRESS.search(text)
    if m is None:
        return None
    obj = semantics.get(isa)
    base = index = disp = None
    for part in m.group(1).replace("-", "+-").split("+"):
        part = part.strip()
        if not part:
            continue
        if "*" in part:
            index = obj.register_family(part.split("*")[1].strip())
        elif obj.register_family(part) is not None:
            base = obj.register_family(part)
        else:
            disp = (disp or 0) + int(part, 0)
    return (base, index, disp)


def operand_values(instruction: str, form: str, isa: str = "x86") -> tuple:
    """What each operand slot of an instruction (a line of a ConcreteBlock of `form`) holds:
    a register family, a memory operand's (base, index, displacement), or None."""
    obj = semantics.get(isa)
    slots = compiled(form, isa).slots
    _, _, rest = instruction.strip().partition(" ")
    texts = split_operands(rest)
    values = []
    for k, slot in enumerate(slots):
        text = texts[k] if k < len(texts) else ""
        if slot.kind in (MEM, ADDR):
            values.append(_address_value(text, isa))
        elif slot.kind in (REG, FIXED, DIV):
            values.append(obj.register_family(text))
        else:
            values.append(None)
    return tuple(values)


def crosses_line(displacement: int | None, width: int) -> bool:
    """Whether an access of `width` bits at `displacement` from a 64-byte aligned base (and
    index: measure/layout.py) touches two cache lines."""
    return crosses(displacement or 0, width // 8, LINE)


def memory_crossings(block: ConcreteBlock, isa: str = "x86") -> dict[Position, bool]:
    """Every memory data slot of a block (with a known access width) -> whether its access
    crosses a cache line."""
    out = {}
    for i, (form, values) in enumerate(zip(block.forms, block_values(block, isa))):
        for k, slot in enumerate(compiled(form, isa).slots):
            if slot.kind == MEM and slot.width and values[k] is not None:
                out[(i, k)] = crosses_line(values[k][2], slot.width)
    return out


def memory_bases(block: ConcreteBlock, isa: str = "x86") -> dict[Position, str]:
    """Every memory data slot of a block -> its base register (family)."""
    out = {}
    for i, (form, values) in enumerate(zip(block.forms, block_values(block, isa))):
        for k, slot in enumerate(compiled(form, isa).slots):
            if slot.kind == MEM and values[k] is not None and values[k][0] is not None:
                out[(i, k)] = values[k][0]
    return out


def constant_base_slots(block: ConcreteBlock, isa: str = "x86") -> dict[Position, bool]:
    """Every memory data slot of a block -> whether the block sets its base to a constant."""
    return {p: base in block.constant_bases for p, base in memory_bases(block, isa).items()}


def block_values(block: ConcreteBlock, isa: str = "x86") -> list[tuple]:
    return [operand_values(line, form, isa) for line, form in zip(block.instructions, block.forms)]


def matching(forms: Sequence[str], a: Position, b: Position, isa: str = "x86") -> bool:
    """Whether two operand slots of a block of `forms` exist and can alias (the same alias
    class): the condition under which an aliasing constraint on them applies (eq. 8.15)."""
    if a == b or not (0 <= a[0] < len(forms) and 0 <= b[0] < len(forms)):
        return False
    ca = alias_class(forms[a[0]], a[1], isa)
    return ca is not None and ca == alias_class(forms[b[0]], b[1], isa)


def alias_pairs(forms: Sequence[str], isa: str = "x86") -> list[Pair]:
    """Every pair of matching slots of a block of `forms`, each pair ordered, in order."""
    positions = [(i, k) for i, f in enumerate(forms)
                 for k, s in enumerate(compiled(f, isa).slots) if s.alias_class is not None]
    return [(a, b) for n, a in enumerate(positions) for b in positions[n + 1:]
            if matching(forms, a, b, isa)]


# --- instantiation -------------------------------------------------------------------------

def _check_mode(mode: str) -> None:
    if mode not in BLOCK_MODES:
        raise ValueError(f"block mode {mode!r}: one of {', '.join(BLOCK_MODES)}")


def _displacements(slot: Slot, mode: str) -> tuple:
    """The displacements a memory operand may take: the memory mode's PLACES for a data
    access with a displacement to choose, else those of its form."""
    if mode == MEMORY_BLOCKS and slot.kind == MEM and "MIMM" in slot.address:
        return ALIGNED_PLACES if slot.aligned else PLACES
    return slot.displacements


def _candidates(slot: Slot, bases: tuple[str, ...], mode: str = STANDARD_BLOCKS) -> tuple:
    if slot.kind == FIXED:
        return (slot.family,)
    if slot.kind == REG:
        if slot.reg_class == GENERAL:
            return DATA_REGISTERS
        return MEMORY_MODE_VECTOR_REGISTERS if mode == MEMORY_BLOCKS else VECTOR_REGISTERS
    if slot.kind in (MEM, ADDR):
        return tuple((b, i, d) for b in (bases if "MEM" in slot.address else (None,))
                     for i in ([x for x in bases if x != b] if "DIV" in slot.address else (None,))
                     for d in _displacements(slot, mode))
    return ()


def _meeting_crossing(slot: Slot, candidates: tuple, crosses: bool | None) -> tuple:
    """The candidate addresses of a memory data slot whose access crosses a line or not, as
    asked (None: either); a slot that is not a memory data access is not bound by it."""
    if crosses is None or slot.kind != MEM or not slot.width:
        return candidates
    return tuple(v for v in candidates if crosses_line(v[2], slot.width) == crosses)


def _meeting_constant(slot: Slot, candidates: tuple, constant: frozenset,
                      wanted: bool | None) -> tuple:
    """The candidate addresses of a memory data slot whose base is one of the block's constant
    bases or not, as asked (None: either); a slot that is not a memory data access is not
    bound by it."""
    if wanted is None or slot.kind != MEM:
        return candidates
    return tuple(v for v in candidates if (v[0] in constant) == wanted)


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _draw_constant(bases: tuple[str, ...], wanted, rng) -> frozenset:
    """The bases a memory-mode block may set to their constant: each with CONSTANT_SHARE; then
    one more where a slot asks for a constant base and none was drawn, one fewer where a slot
    asks for one not constant and all were (such a draw could never meet them)."""
    draws = rng.random(len(bases))
    chosen = {b for b, x in zip(bases, draws) if x < CONSTANT_SHARE}
    wanted = set(wanted)
    if True in wanted and not chosen and bases:
        chosen.add(_pick(rng, bases))
    if False in wanted and bases and len(chosen) == len(bases):
        chosen.discard(_pick(rng, bases))
    return frozenset(chosen)


def instantiate(forms: Sequence[str], rng, must: Sequence[Pair] = (),
                must_not: Sequence[Pair] = (), isa: str = "x86", *,
                mode: str = STANDARD_BLOCKS,
                crossing: Mapping[Position, bool] | None = None,
                constant: Mapping[Position, bool] | None = None) -> ConcreteBlock | None:
    """One block of the forms, in order, in block mode `mode`, meeting the aliasing
    constraints that apply (both slots exist and match), the line-crossing ones (slot ->
    whether its access crosses a line) and the constant-base ones (slot -> whether its base is
    set to a constant; the standard mode sets none), the last two applying where the slot is a
    memory data access; None when this attempt found no values that meet them (the greedy
    choice of 8.1.5 may fail where a solution exists: callers retry)."""
    _check_mode(mode)
    crossing = crossing or {}
    constant = constant or {}
    comp = [compiled(f, isa) for f in forms]
    written = set().union(*(c.writes for c in comp)) if comp else set()
    bases = tuple(b for b in BASE_REGISTERS if b not in written)
    # union-find over the aliasable slots, joined by the must constraints that apply
    parent: dict[Position, Position] = {}

    def find(p):
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for i, c in enumerate(comp):
        for k, slot in enumerate(c.slots):
            if slot.alias_class is not None:
                parent[(i, k)] = (i, k)
    for a, b in must:
        if matching(forms, a, b, isa):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Position, list[Position]] = {}
    for p in parent:
        groups.setdefault(find(p), []).append(p)
    apart: dict[Position, set] = {g: set() for g in groups}
    for a, b in must_not:
        if matching(forms, a, b, isa):
            ga, gb = find(a), find(b)
            if ga == gb:
                return None                         # must and must-not at once
            apart[ga].add(gb)
            apart[gb].add(ga)
    settable = frozenset()                          # bases the block may set to a constant
    if mode == MEMORY_BLOCKS:
        settable = _draw_constant(bases, [w for (i, k), w in constant.items()
                                          if (i, k) in parent and comp[i].slots[k].kind == MEM],
                                  rng)
    options: dict[Position, tuple] = {}
    for g, members in groups.items():
        allowed = None
        for i, k in members:
            slot = comp[i].slots[k]
            cand = _meeting_crossing(slot, _candidates(slot, bases, mode), crossing.get((i, k)))
            cand = _meeting_constant(slot, cand, settable, constant.get((i, k)))
            if allowed is None:
                allowed = cand
            else:
                fits = set(cand)
                allowed = tuple(v for v in allowed if v in fits)
        if not allowed:
            return None
        options[g] = allowed
    fixed_first = [g for g in groups if len(options[g]) == 1]
    rest = [g for g in groups if len(options[g]) != 1]
    order = fixed_first + [rest[j] for j in rng.permutation(len(rest))]
    chosen: dict[Position, object] = {}
    for g in order:
        taken = {chosen[n] for n in apart[g] if n in chosen}
        free = [v for v in options[g] if v not in taken]
        if not free:
            return None
        chosen[g] = _pick(rng, free)
    lines = []
    for i, c in enumerate(comp):
        values = {}
        for k, slot in enumerate(c.slots):
            if (i, k) in parent:
                values[k] = chosen[find((i, k))]
            elif slot.kind == ADDR:
                options_here = _candidates(slot, bases, mode)
                if not options_here:
                    return None
                values[k] = _pick(rng, options_here)
            elif slot.kind == DIV:
                if not bases:
                    return None
                values[k] = _pick(rng, bases)
        lines.append(_render(c, values))
        if lines[-1] is None:
            return None
    used = {chosen[find(p)][0] for p in parent if comp[p[0]].slots[p[1]].kind == MEM}
    return ConcreteBlock(tuple(lines), tuple(forms),
                         tuple(b for b in BASE_REGISTERS if b in settable and b in used))


def _render(c: CompiledForm, values: dict) -> str | None:
    """The instruction text of a compiled form with its slot values."""
    parts = iter(c.placeholders)

    def fill(ph: Placeholder, _n: int) -> str:
        k, _ = next(parts)
        value = values.get(k)
        if ph.kind == "MEM":
            return register_name(value[0], "G", 64, c.isa)
        if ph.kind == "MIMM" or ph.kind == "IMM" and c.slots[k].kind in (MEM, ADDR):
            return str(value[2])
        if ph.kind == "IMM":
            return str(immediate(ph.width))
        if ph.kind == "DIV":
            if c.slots[k].kind == DIV:                   # a register operand of its own
                return register_name(value, "G", ph.width, c.isa)
            return register_name(value[1], "G", ph.width, c.isa)     # an address's index
        return register_name(value, ph.reg_class, ph.width, c.isa)

    try:
        text = parse_form(c.form, c.isa).render(fill)
    except (ValueError, IndexError, TypeError):
        return None
    head, _, rest = text.strip().partition(" ")
    return " ".join([head.lower()] + rest.split())


def random_block(schemes: Sequence, length: int, rng, attempts: int = 20,
                 isa: str = "x86", mode: str = STANDARD_BLOCKS) -> ConcreteBlock | None:
    """A block of `length` schemes drawn uniformly (with repetition), registers (and, in the
    memory mode, places and constant bases) at random."""
    for _ in range(attempts):
        forms = [schemes[int(j)].form for j in rng.integers(len(schemes), size=length)]
        block = instantiate(forms, rng, isa=isa, mode=mode)
        if block is not None:
            return block
    return None


# --- the round trip: instances match back to their forms -------------------------------------

def matched_forms(lines: Sequence[str], universe: Sequence[str], isa: str = "x86") -> list:
    """(form, InstructionSemantics) the project's parser, matcher (exact matches only, among
    `universe`) and semantics give each instruction line; form None where none matches."""
    # deferred: the assembly parser loads lark, which generating blocks does not need
    from pmpredict.asm.match import FormMatcher
    from pmpredict.asm.parse import parse
    if not lines:
        return []
    obj = semantics.get(isa)
    syntax = obj.example_syntax
    matcher = FormMatcher(list(universe), isa, allow_approx=False)
    program = parse("\n".join(lines) + "\n", syntax, "<anica>")
    out = []
    for insn in program.instructions:
        key, sem = obj.described(insn, syntax)
        out.append((matcher.match(key).form, sem))
    return out


def round_trips(forms: Sequence[str], universe: Sequence[str], isa: str = "x86",
                seed: int = 0) -> dict:
    """form -> InstructionSemantics of an instance, for the forms (of `forms`) whose instance
    parses and matches back to the form among `universe`."""
    # deferred: numpy, for the generator instantiation draws from
    import numpy as np
    rng = np.random.default_rng(seed)
    lines, made = [], []
    for f in forms:
        block = instantiate([f], rng, isa=isa)
        if block is not None:
            lines.append(block.instructions[0])
            made.append(f)
    try:
        got = matched_forms(lines, universe, isa)
    except Exception:                       # one line the parser rejects: check one by one
        got = []
        for line in lines:
            try:
                got.extend(matched_forms([line], universe, isa))
            except Exception:
                got.append((None, None))
    return {f: sem for f, (g, sem) in zip(made, got) if f == g}
