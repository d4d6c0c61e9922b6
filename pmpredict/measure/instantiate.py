"""Operand allocation: an experiment (multiset of forms) -> a dependency-free instruction window.

This follows the scheme of the PMEvo dissertation (Alg. 3.1) for x86-64 forms:

* Registers of each class (general purpose "G", vector "V") are split into a
  *read pool* and a *write pool*. Read-only operands take registers from the
  read pool, which nothing in the window ever writes, so a read can never
  depend on an instruction of the window (no read-after-write dependency).
  Written (W) and read-written (RW) operands take registers from the write pool.
* Inside each pool the register is chosen least-recently-used. For read
  operands this keeps the operands of one instruction distinct (so `vpxor a, b, c`
  never turns into the zeroing idiom `vpxor a, b, b`). For written operands it
  spreads writes over the pool, so the unavoidable self-dependency of an RW
  operand (`add rax, 43` reads what the previous `add` of rax wrote) is at the
  largest possible distance: ceil(writes / pool size) links per window, far
  too few to limit throughput.
* Memory operands use one reserved base register (never written) and distinct
  cache-line displacements into a scratch buffer. Lines that are only read and
  lines that are written come from two regions in different halves of each 4 KiB
  page: no load in the window reads a line the window stores to, and loads never
  4K-alias stores. Within its line each access sits at a different (aligned)
  offset, so successive loads do not collide on one L1 bank.
* Immediates of width W are 2^(W-8) + 42 (43 for 8 bits): not 0 or 1, which
  some cores special-case, and representable in the operand.
* Integer divisions (div, idiv, every width, register or memory divisor) divide DIVIDEND
  by DIVISOR in every instance: the divisor operand is one register that holds DIVISOR and
  nothing writes (a memory divisor: lines of their own, which the kernel fills with DIVISOR
  before the loop), and right before each division `mov rax, <a register holding DIVIDEND>`
  and `xor edx, edx` (not for a byte divisor, whose dividend is ax) put the dividend back:
  the division's own rdx:rax result would otherwise feed the next one (a chain, and a
  dividend that drifts to overflow or to 0). Both are removed at rename (an eliminated move,
  a zero idiom: no execution port; measured on Zen 4: four adds and the two run at 1.00
  cycle, as four adds alone), so they cost front-end slots only; they are the window's
  `prefix` lines, not instances of the experiment.
* The loop counter and the base register are reserved and never allocated; rbp
  is allocated (the kernel saves it), rsp is not.

What a form reads and writes (the access of each operand, whether its memory operand is
loaded, stored or only addressed, the registers it uses implicitly or names literally)
comes from the form's semantics (pmpredict.isa.semantics). Registers a form uses implicitly
or literally (rax and rdx of cqo / mul r64 / div, rcx of `shl r64, cl`) are taken out of
both pools. Forms that *read flags* (adc, sbb, cmovcc, setcc, shifts by cl) still depend
on the previous flag writer of the window: a chain the allocator cannot break (none of the
host forms reads flags; a form list that adds such forms measures that chain too).

The result is a `Window`: the instruction lines plus, for every instruction,
which registers and memory lines it reads and writes, so tests can check the
no-read-after-write property structurally on the generated code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from pmpredict.isa import semantics
from pmpredict.isa.examples import example_instance
from pmpredict.isa.forms import FormTemplate, Placeholder, form_text, parse_form
from pmpredict.isa.semantics import LOAD, READ_MODIFY_WRITE, STORE
from pmpredict.measure.cpu import HARNESS_ISA

_ISA = semantics.get(HARNESS_ISA)
_GPR64 = _ISA.register_pool("G", 64)
BASE_REGISTER = "rdi"        # first argument of the kernel: the scratch buffer
COUNTER_REGISTER = "rsi"     # second argument: the iteration count
_RESERVED_GPR = {_GPR64.index(BASE_REGISTER), _GPR64.index(COUNTER_REGISTER)}
RBP_NAMES = {64: "rbp", 32: "ebp", 16: "bp", 8: "bpl"}   # general-purpose register 14
_RBP = len(_GPR64)

LINE = 64                    # cache line size in bytes
PAGE = 4096
PAGES = 8                    # displacements stay below 2^15 (forms declare MIMM:16)
LINES_PER_REGION = PAGES * (PAGE // 2 // LINE)      # 256 written lines; of the 256 read ones
LINES_PER_DIVISOR_REGION = PAGE // 2 // LINE        # the last page's 32 hold divisors (D)
SCRATCH_BYTES = PAGES * PAGE + PAGE                 # what the harness must allocate

DEFAULT_LENGTHS = (50, 32, 80)   # unrolled window sizes (instructions); the minimum is kept

# The values every integer division divides (experiments here; blocks: layout.py). A division
# raises #DE (SIGFPE) on a zero divisor or a quotient too wide for its operand, and on most
# cores its latency and throughput depend on the values (measured on Zen 4: a 64-bit div of a
# 63-bit dividend takes 7 cycles per division up to quotients of 44 bits, 8 at 48-52 bits, 9
# beyond 56; latency 9 to 17). The choice is a typical division of compiled code, a 64-bit
# quantity (a size, a sum, an offset: 47 significant bits) divided by a count (21 bits, a
# couple of million), so the quotient has 27 bits and the remainder (an index, in a hash
# table) stays small. One pair serves every width, as the low bits of each: DIVIDEND / DIVISOR
# is 0x7dee66661a2b / 0x1d0135 (64-bit: a 27-bit quotient), 0x66661a2b / 0x1d0135 (32-bit:
# 10 bits), 0x1a2b / 0x135 (16-bit: 5 bits), ax = 0x1a2b / 0x35 (8-bit: 126, which fits a
# signed byte); every part is positive as a signed number, so `xor edx, edx` (or cqo) is its
# sign extension and idiv divides the same values.
DIVIDEND = 0x00007DEE66661A2B
DIVISOR = 0x00000000001D0135

# register family -> (class, pool index)
_POOL_INDEX = {fam: ("G", i) for i, fam in enumerate(_GPR64)}
_POOL_INDEX["rbp"] = ("G", _RBP)
_POOL_INDEX.update({f"v{i}": ("V", i) for i in range(32)})


def immediate(width: int | None) -> int:
    """The immediate used for an IMM placeholder of `width` bits: 2^(W-8) + 42."""
    if not width or width <= 8:
        return 43
    return 2 ** (width - 8) + 42


def memory_access(template: FormTemplate) -> str:
    """The scratch region of a form's memory operand: "R" (loaded: the read-only lines),
    "W" (stored or read-modify-written: the written lines) or "" (no data access: lea,
    prefetch, no memory operand)."""
    kind = _ISA.form(template).memory
    return {LOAD: "R", STORE: "W", READ_MODIFY_WRITE: "W"}.get(kind, "")


def unmeasurable(form: str) -> str | None:
    """Why instances of a form cannot be repeated in a window of their own, or None.

    Control flow leaves the loop, traps and system instructions stop it; a form that moves the
    stack pointer other than as push and pop do (leave, enter) cannot be put back (pushes and
    pops are: see stack_delta), and one that writes the base or counter register implicitly
    (movs, stos through rdi and rsi) breaks the harness."""
    template = parse_form(form, HARNESS_ISA)
    fs = _ISA.form(template)
    if fs.branch:
        return "a branch: control flow cannot be repeated in a loop of its own"
    if fs.trap:
        return f"a trap or system instruction ({fs.trap})"
    moved = fs.implicit_writes & {"rsp", BASE_REGISTER, COUNTER_REGISTER}
    if "rsp" in moved and stack_delta(form) is None:
        return "moves the stack pointer other than by a push or a pop (leave, enter)"
    moved -= {"rsp"}
    if moved:
        return f"writes {sorted(moved)[0]} implicitly, which the harness reserves"
    return None


@functools.lru_cache(maxsize=None)
def stack_delta(form: str) -> int | None:
    """Bytes a form moves rsp by where it does so as push and pop do (an implicit access at
    rsp, then rsp moves past it): -8 for push r64, +8 for pop r64, 0 for a form that leaves rsp
    alone; None when it moves rsp otherwise (leave: rsp = rbp). A window of such forms gets
    rsp put back once per loop iteration (codegen), so repeated pushes do not walk off the
    stack."""
    # deferred: the parser loads lark (~0.1 s), which measuring experiments does not need
    from pmpredict.asm.parse import parse
    template = parse_form(form, HARNESS_ISA)
    if "rsp" not in _ISA.form(template).implicit_writes:
        return 0
    syntax = _ISA.example_syntax
    sem = _ISA.instruction(parse(example_instance(template), syntax).instructions[0], syntax)
    stack = [m for m in sem.memory if m.operand is None and m.base == "rsp"]
    if not stack or sem.memory and any(m.operand is None and m.base != "rsp"
                                       for m in sem.memory):
        return None
    return sum((m.width // 8) * (1 if m.load else -1) for m in stack)


def pinned_registers(template: FormTemplate) -> set[tuple[str, int]]:
    """(class, pool index) of the registers a form uses without the allocator choosing them:
    named literally (`cl` of `shl r64, cl`) or implicitly (rax, rdx of `cqo`): never allocated."""
    return {_POOL_INDEX[f] for f in _ISA.form(template).pinned_registers if f in _POOL_INDEX}


@dataclass(frozen=True)
class Instance:
    """One instruction of a window and the resources it touches."""
    form: str
    text: str                                   # Intel syntax, no prefix
    reads: frozenset = frozenset()              # {(class, index)} registers only read
    writes: frozenset = frozenset()             # {(class, index)} registers written (W or RW)
    read_writes: frozenset = frozenset()        # {(class, index)} registers read and written
    mem_reads: tuple = ()                       # displacements loaded from
    mem_writes: tuple = ()                      # displacements stored to (or RMW)
    prefix: tuple[str, ...] = ()                # lines the harness runs right before it (a
    # division's dividend put back: `mov rax, <DIVIDEND>; xor edx, edx`); not of the experiment


@dataclass(frozen=True)
class Window:
    """The unrolled loop body of one experiment."""
    instructions: tuple[Instance, ...]
    copies: int                                  # copies of the multiset in the window
    vector_width: int                            # widest vector register used (0: none)
    fixed: frozenset = frozenset()              # registers the forms use implicitly or literally
    stack_bytes: int = 0                         # how far the window moves rsp (pushes: < 0)
    values: tuple[tuple[str, int], ...] = ()     # 64-bit register -> its value at kernel entry,
                                                 # where it is not the harness's usual one
    words: tuple[tuple[int, int], ...] = ()      # (displacement, 64-bit word) the kernel stores
                                                 # before the loop (divisors in memory)

    @property
    def lines(self) -> list[str]:
        """The instructions of the experiment, one per instance."""
        return [i.text for i in self.instructions]

    @property
    def body(self) -> list[str]:
        """What the loop runs: every instance after its prefix lines."""
        return [line for i in self.instructions for line in (*i.prefix, i.text)]


def sequence_of(counts) -> list[str]:
    """One copy of the multiset, multiplicities interleaved: {A:2, B:1} -> A B A."""
    counts = [(f, n) for f, n in counts]
    out = []
    for k in range(max((n for _, n in counts), default=0)):
        out.extend(f for f, n in counts if n > k)
    return out


class _Pool:
    """Registers of one class and role, handed out least-recently-used."""

    def __init__(self, indices):
        self.indices = list(indices)
        self.last = {i: -1 - k for k, i in enumerate(reversed(self.indices))}   # lowest first
        self.clock = 0

    def take(self) -> int:
        best = min(self.indices, key=lambda i: self.last[i])
        self.clock += 1
        self.last[best] = self.clock
        return best


class _Lines:
    """Cache lines of one region, handed out round-robin (= LRU): "R" read (the first half of
    each page but the last), "W" written (the second half of each page), "D" a division's
    divisor (the first half of the last page, nothing else reads it; the kernel stores DIVISOR
    there before the loop).

    Successive accesses also move through the line (by the access width, so an aligned
    form stays aligned and no access crosses a line): loads to different lines at the
    same offset hit the same L1 bank, which costs load throughput where the L1 is banked
    (measured on Zen 4: about 15%, 0.39 instead of 0.33 cycles per load), an artefact of the
    layout rather than a property of the load ports.
    """

    def __init__(self, region: str):
        self.region = region
        self.next = 0

    def take(self, width_bits: int | None = None) -> int:
        k = self.next
        self.next += 1
        per_page = PAGE // 2 // LINE
        count = {"R": LINES_PER_REGION - LINES_PER_DIVISOR_REGION,
                 "D": LINES_PER_DIVISOR_REGION}.get(self.region, LINES_PER_REGION)
        page, line = divmod(k % count, per_page)
        if self.region == "D":
            page = PAGES - 1
        size = max(8, (width_bits or LINE * 8) // 8)  # at least 8: byte loads at offsets
        size = 1 << (size - 1).bit_length()            # 0,1,2,3 would share a bank again
        offset = (k * size) % LINE if size < LINE else 0
        return page * PAGE + (PAGE // 2 if self.region == "W" else 0) + line * LINE + offset

    def take_split(self, width_bits: int | None = None) -> int:
        """A displacement whose access of `width_bits` crosses the end of a line by half its
        bytes into the next (a split variant's: forms.split_variant); both lines are the
        region's and no other access's (two are taken)."""
        half = max(1, (width_bits or 64) // 16)
        while True:
            first, second = self.take(), self.take()
            start = first - first % LINE
            if second - second % LINE == start + LINE:
                return start + LINE - half


@dataclass(frozen=True)
class _Slot:
    """A placeholder of the form text and the access of its register (R, W, RW)."""
    placeholder: Placeholder
    access: str


def _operand_roles(template: FormTemplate):
    """Per register placeholder in text order: (class, access) with access R / W / RW."""
    roles = []
    for slot in _compiled(template.name)[1]:
        if isinstance(slot, _Slot) and slot.placeholder.kind in ("REG", "DIV"):
            ph = slot.placeholder
            roles.append(("V" if ph.reg_class == "F" else ph.reg_class, slot.access))
    return roles


@functools.lru_cache(maxsize=None)
def _names(cls: str, width: int | None) -> tuple[str, ...]:
    names = tuple(_ISA.register_pool(cls, width))
    if cls == "G":          # index 14: rbp, which the kernel saves and restores itself
        names += (RBP_NAMES[width],)
    return names


_SLOT = re.compile(r"\(\(([^()]*)\)\)")


def _slot_access(template: FormTemplate) -> list[str]:
    """Access of each placeholder in text order: a register operand's from the form's
    semantics, R for the address registers and bit offsets (DIV) and the rest."""
    access = _ISA.form(template).operand_access
    out = []
    for op, a in zip(template.operands, access):
        for ph in op.placeholders:
            out.append(a if ph.kind == "REG" and a else "R")
    return out


@functools.lru_cache(maxsize=None)
def _compiled(form: str):
    """(template, text split into literal strings and _Slots, memory access, pinned registers):
    rendering is then a join."""
    template = parse_form(form, HARNESS_ISA)
    text = form_text(form)
    access = iter(_slot_access(template))
    parts, pos = [], 0
    for m in _SLOT.finditer(text):
        parts.append(text[pos:m.start()])
        parts.append(_Slot(Placeholder.parse(m.group(1)), next(access, "R")))
        pos = m.end()
    parts.append(text[pos:])
    return template, tuple(parts), memory_access(template), frozenset(pinned_registers(template))


def _split_pools(templates: list[FormTemplate], fixed: set) -> dict[str, tuple[list, list]]:
    """Read and write pools per register class for the forms of one experiment."""
    available = {"G": [i for i in range(_RBP + 1) if i not in _RESERVED_GPR],
                 "V": list(range(16))}
    pools = {}
    for cls, regs in available.items():
        regs = [r for r in regs if (cls, r) not in fixed]
        reads = writes = 0
        widest_read = 0
        for t in templates:
            if _ISA.division(t):
                continue             # its divisor is the divisor register, not from a pool
            roles = [a for c, a in _operand_roles(t) if c == cls]
            r = sum(1 for a in roles if a == "R")
            reads += r
            writes += sum(1 for a in roles if a != "R")
            widest_read = max(widest_read, r)
        if reads == 0:
            pools[cls] = ([], regs)
        elif writes == 0:
            pools[cls] = (regs, [])
        else:
            # reads need only be distinct within one instruction; every other register
            # spreads the written operands as far apart as possible (measured on Zen 4:
            # {imul, inc, sarx} 1.12-1.18 cycles with 3 read registers and 9 write
            # registers, 1.00 with 1 and 11 - the RW chains were getting in the way)
            n_read = min(max(1, widest_read), len(regs) - 2)
            pools[cls] = (regs[:n_read], regs[n_read:])
    return pools


def instantiate(counts, length: int = DEFAULT_LENGTHS[0]) -> Window:
    """Build the window of an experiment given as (form, n) pairs, about `length` instructions."""
    return _instantiate(counts, (length,))[0]


def _instantiate(counts, lengths) -> list[Window]:
    """The windows of about each of `lengths` instructions, in order. Registers and lines are
    handed out copy after copy, so a window of k copies is the first k copies of a longer one:
    the longest is built once and each shorter one is where it stood after its copies."""
    seq = sequence_of(counts)
    if not seq:
        raise ValueError("empty experiment")
    compiled = {f: _compiled(f) for f in dict.fromkeys(seq)}
    templates = {f: c[0] for f, c in compiled.items()}
    for f in templates:
        if semantics.isa_of_form(f) != HARNESS_ISA:
            raise ValueError(f"only {HARNESS_ISA} forms can be measured on this host: {f}")
    fixed = set()
    for c in compiled.values():
        fixed |= c[3]
    divisions = {f: _ISA.division(t) for f, t in templates.items()}
    dividing = _division_registers(fixed) if any(divisions.values()) else None
    wanted = [max(1, round(length / len(seq))) for length in lengths]
    pools = _split_pools([templates[f] for f in seq],
                         fixed | {("G", i) for i in dividing or ()})
    read_pools = {c: _Pool(p[0]) for c, p in pools.items()}
    write_pools = {c: _Pool(p[1]) for c, p in pools.items()}
    lines = {"R": _Lines("R"), "W": _Lines("W"), "D": _Lines("D")}
    split_places: dict[str, int] = {}           # split variant loaded -> its one place
    vector_width = 0
    out, words = [], {}
    built: dict[int, Window] = {}
    values = () if dividing is None else (
        (_names("G", 64)[dividing[0]], DIVIDEND), (_names("G", 64)[dividing[1]], DIVISOR))
    stack = 0
    for copy in range(1, max(wanted) + 1):
        for f in seq:
            t, parts, access, _ = compiled[f]
            division = divisions[f]
            mem_width = next((o.mem_width for o in t.operands if o.kind == "mem"), None)
            reads, writes, rws, mreads, mwrites = set(), set(), set(), [], []

            def fill(ph: Placeholder, acc: str) -> str:
                nonlocal vector_width
                if ph.kind == "MEM":
                    return BASE_REGISTER
                if ph.kind == "MSPLIT":
                    if division or access == "":
                        raise ValueError(f"{f}: a split variant of a division or of an "
                                         f"address is not measured")
                    # the loads of one variant read one place, as a block's load of a fixed
                    # address does: split loads of different lines all meet in the first and
                    # last banks of a line (measured on Zen 4: an 8-byte split load 0.74
                    # cycles over many lines, 0.67 at one place, as the block measures)
                    disp = split_places.get(f) if access == "R" else None
                    if disp is None:
                        disp = split_places[f] = lines[access].take_split(mem_width)
                    (mwrites if access == "W" else mreads).append(disp)
                    return str(disp)
                if ph.kind == "MIMM":
                    if access == "":
                        return "64"
                    disp = lines["D" if division else access].take(mem_width)
                    (mwrites if access == "W" else mreads).append(disp)
                    if division:
                        words[disp - disp % 8] = DIVISOR
                    return str(disp)
                if ph.kind == "IMM":
                    return str(immediate(ph.width))
                if division and ph.kind == "REG":        # the divisor
                    reads.add(("G", dividing[1]))
                    return _names("G", ph.width)[dividing[1]]
                cls = "V" if ph.reg_class in ("V", "F") else "G"
                pool = (read_pools if acc == "R" else write_pools)[cls]
                if not pool.indices:
                    raise ValueError(f"no free {cls} register for {f}")
                idx = pool.take()
                if acc == "R":
                    reads.add((cls, idx))
                else:
                    writes.add((cls, idx))
                    if acc == "RW":
                        rws.add((cls, idx))
                if cls == "V":
                    vector_width = max(vector_width, ph.width or 128)
                return _names(cls, ph.width)[idx]

            text = "".join(p if isinstance(p, str) else fill(p.placeholder, p.access)
                           for p in parts)
            if access == "W" and not mwrites:
                # a memory operand with a fixed displacement still counts as a store
                mwrites.append(None)
            for op in t.operands:
                if op.kind == "reg" and op.reg_class in ("V", "F") and op.width:
                    vector_width = max(vector_width, op.width)
            prefix = _dividend_lines(division, dividing[0]) if division else ()
            out.append(Instance(f, " ".join(text.split()), frozenset(reads), frozenset(writes),
                                frozenset(rws), tuple(mreads), tuple(mwrites), prefix))
            stack += stack_delta(f) or 0
        if copy in wanted:
            built[copy] = Window(tuple(out), copy, vector_width, frozenset(fixed), stack, values,
                                 tuple(sorted(words.items())))
    return [built[c] for c in wanted]


def _division_registers(fixed: set) -> tuple[int, int]:
    """(register holding DIVIDEND, register holding DIVISOR), general-purpose pool indices:
    the last two free ones (rbp, r15 unless a form pins them); nothing in the window writes
    them, and no operand but a division's divisor is allocated to them."""
    free = [i for i in range(_RBP + 1) if i not in _RESERVED_GPR and ("G", i) not in fixed]
    if len(free) < 2:
        raise ValueError("no free G register for a division's dividend and divisor")
    return free[-1], free[-2]


def _dividend_lines(division, source: int) -> tuple[str, ...]:
    """The lines that put a division's dividend back before it: `mov rax, <DIVIDEND>` (an
    eliminated move) and `xor edx, edx` (a zero idiom; its high half, none for a byte
    divisor, whose dividend is ax)."""
    low = _names("G", 64)[_POOL_INDEX[division.low][1]]
    lines = (f"mov {low}, {_names('G', 64)[source]}",)
    if division.high:
        high = _names("G", 32)[_POOL_INDEX[division.high][1]]
        lines += (f"xor {high}, {high}",)
    return lines


def windows(counts, lengths=DEFAULT_LENGTHS) -> list[Window]:
    """The unroll variants of one experiment (duplicates of the same copy count dropped)."""
    return list(_windows(tuple(counts), tuple(lengths)))


@functools.lru_cache(maxsize=4096)
def _windows(counts: tuple, lengths: tuple) -> tuple[Window, ...]:
    # an experiment is instantiated to check it can be, then to measure it (and again when
    # measured a second time): some 2 ms of Python a window, as much as its timing
    seen, out = set(), []
    for w in _instantiate(counts, lengths):
        if w.copies not in seen:
            seen.add(w.copies)
            out.append(w)
    return tuple(out)
