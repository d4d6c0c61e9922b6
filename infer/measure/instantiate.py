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
* The loop counter and the base register are reserved and never allocated; rbp
  is allocated (the kernel saves it), rsp is not.

The result is a `Window`: the instruction lines plus, for every instruction,
which registers and memory lines it reads and writes, so tests can check the
no-read-after-write property structurally on the generated code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ...forms import FormTemplate, Placeholder, form_text, parse_form
from ...registers import X86_GPR64, registers

BASE_REGISTER = "rdi"        # first argument of the kernel: the scratch buffer
COUNTER_REGISTER = "rsi"     # second argument: the iteration count
_RESERVED_GPR = {X86_GPR64.index(BASE_REGISTER), X86_GPR64.index(COUNTER_REGISTER)}
RBP_NAMES = {64: "rbp", 32: "ebp", 16: "bp", 8: "bpl"}   # general-purpose register 14

LINE = 64                    # cache line size in bytes
PAGE = 4096
PAGES = 8                    # displacements stay below 2^15 (forms declare MIMM:16)
LINES_PER_REGION = PAGES * (PAGE // 2 // LINE)      # 256 read lines and 256 written lines
SCRATCH_BYTES = PAGES * PAGE + PAGE                 # what the harness must allocate

DEFAULT_LENGTHS = (50, 32, 80)   # unrolled window sizes (instructions); the minimum is kept

# Mnemonics whose first (memory) operand is only read; for every other form a
# memory first operand is a store or read-modify-write.
_READ_ONLY_FIRST = {"cmp", "test", "bt", "prefetcht0", "prefetcht1", "prefetcht2", "prefetchnta",
                    "ptest", "vptest", "vtestps", "vtestpd", "ucomiss", "ucomisd", "vucomiss",
                    "vucomisd", "comiss", "comisd", "vcomiss", "vcomisd"}

_GPR_NAMES = {}
for _width in (64, 32, 16, 8):
    for _i, _name in enumerate(registers("x86", "G", _width)):
        _GPR_NAMES[_name] = _i
_GPR_NAMES.update({"rbp": 14, "ebp": 14, "bp": 14, "bpl": 14})
_VEC_NAME = re.compile(r"\b([xyz]mm)([0-9]|[12][0-9]|3[01])\b")
_WORD = re.compile(r"\b[a-z][a-z0-9]*\b")


def immediate(width: int | None) -> int:
    """The immediate used for an IMM placeholder of `width` bits: 2^(W-8) + 42."""
    if not width or width <= 8:
        return 43
    return 2 ** (width - 8) + 42


def memory_access(template: FormTemplate) -> str:
    """"" (no memory access), "R" (load) or "W" (store or read-modify-write) of a form."""
    mems = [o for o in template.operands if o.kind == "mem"]
    if not mems or template.mnemonic == "lea" or template.mnemonic.startswith("prefetch"):
        return ""
    first = template.operands[0]
    if first.kind == "mem" and template.mnemonic not in _READ_ONLY_FIRST:
        return "W"
    return "R"


def fixed_registers(template: FormTemplate) -> set[tuple[str, int]]:
    """Registers spelled out literally in a form (e.g. `cl` of `shl r64, cl`): never allocated."""
    out = set()
    for op in template.operands:
        if op.placeholders and op.kind != "literal":
            text = re.sub(r"\(\([^()]*\)\)", " ", op.text)
        else:
            text = op.text
        for word in _WORD.findall(text.lower()):
            if word in _GPR_NAMES:
                out.add(("G", _GPR_NAMES[word]))
        for m in _VEC_NAME.finditer(text.lower()):
            out.add(("V", int(m.group(2))))
    return out


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


@dataclass(frozen=True)
class Window:
    """The unrolled loop body of one experiment."""
    instructions: tuple[Instance, ...]
    copies: int                                  # copies of the multiset in the window
    vector_width: int                            # widest vector register used (0: none)
    fixed: frozenset = frozenset()              # literal registers the forms use

    @property
    def lines(self) -> list[str]:
        return [i.text for i in self.instructions]


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
    """Cache lines of one region (read or written), handed out round-robin (= LRU).

    Successive accesses also move through the line (by the access width, so an aligned
    form stays aligned and no access crosses a line): loads to different lines at the
    same offset hit the same L1 bank, which on AMD Zen 4 costs about 15% of the load
    throughput (measured: 0.39 instead of 0.33 cycles per load), an artefact of the
    layout rather than a property of the load ports.
    """

    def __init__(self, written: bool):
        self.written = written
        self.next = 0

    def take(self, width_bits: int | None = None) -> int:
        k = self.next
        self.next += 1
        page, line = divmod(k % LINES_PER_REGION, PAGE // 2 // LINE)
        size = max(8, (width_bits or LINE * 8) // 8)  # at least 8: byte loads at offsets
        size = 1 << (size - 1).bit_length()            # 0,1,2,3 would share a bank again
        offset = (k * size) % LINE if size < LINE else 0
        return page * PAGE + (PAGE // 2 if self.written else 0) + line * LINE + offset


def _operand_roles(template: FormTemplate):
    """Per register placeholder in text order: (class, access) with access R / W / RW."""
    roles = []
    for ph in _placeholders(template):
        if ph.kind == "REG":
            roles.append((ph.reg_class if ph.reg_class != "F" else "V", ph.access or "R"))
        elif ph.kind == "DIV":
            roles.append(("G", "R"))
    return roles


def _placeholders(template: FormTemplate) -> list[Placeholder]:
    return [p for p in _compiled(template.name)[1] if isinstance(p, Placeholder)]


@functools.lru_cache(maxsize=None)
def _names(cls: str, width: int | None) -> tuple[str, ...]:
    names = tuple(registers("x86", cls, width))
    if cls == "G":          # index 14: rbp, which the kernel saves and restores itself
        names += (RBP_NAMES[width],)
    return names


_SLOT = re.compile(r"\(\(([^()]*)\)\)")


@functools.lru_cache(maxsize=None)
def _compiled(form: str):
    """(template, text split into literal strings and Placeholders): rendering is then a join."""
    template = parse_form(form, "x86")
    text = form_text(form)
    parts, pos = [], 0
    for m in _SLOT.finditer(text):
        parts.append(text[pos:m.start()])
        parts.append(Placeholder.parse(m.group(1)))
        pos = m.end()
    parts.append(text[pos:])
    return template, tuple(parts), memory_access(template), frozenset(fixed_registers(template))


def _split_pools(templates: list[FormTemplate], fixed: set) -> dict[str, tuple[list, list]]:
    """Read and write pools per register class for the forms of one experiment."""
    available = {"G": [i for i in range(len(X86_GPR64) + 1) if i not in _RESERVED_GPR],
                 "V": list(range(16))}
    pools = {}
    for cls, regs in available.items():
        regs = [r for r in regs if (cls, r) not in fixed]
        reads = writes = 0
        widest_read = 0
        for t in templates:
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
    seq = sequence_of(counts)
    if not seq:
        raise ValueError("empty experiment")
    compiled = {f: _compiled(f) for f in dict.fromkeys(seq)}
    templates = {f: c[0] for f, c in compiled.items()}
    for f in templates:
        if f.startswith("_"):
            raise ValueError(f"only x86-64 forms can be measured on this host: {f}")
    fixed = set()
    for c in compiled.values():
        fixed |= c[3]
    copies = max(1, round(length / len(seq)))
    pools = _split_pools([templates[f] for f in seq], fixed)
    read_pools = {c: _Pool(p[0]) for c, p in pools.items()}
    write_pools = {c: _Pool(p[1]) for c, p in pools.items()}
    lines = {"R": _Lines(False), "W": _Lines(True)}
    vector_width = 0
    out = []
    for _ in range(copies):
        for f in seq:
            t, parts, access, _ = compiled[f]
            mem_width = next((o.mem_width for o in t.operands if o.kind == "mem"), None)
            reads, writes, rws, mreads, mwrites = set(), set(), set(), [], []

            def fill(ph: Placeholder, _i: int) -> str:
                nonlocal vector_width
                if ph.kind == "MEM":
                    return BASE_REGISTER
                if ph.kind == "MIMM":
                    if access == "":
                        return "64"
                    disp = lines[access].take(mem_width)
                    (mwrites if access == "W" else mreads).append(disp)
                    return str(disp)
                if ph.kind == "IMM":
                    return str(immediate(ph.width))
                cls = "V" if ph.reg_class in ("V", "F") else "G"
                acc = ph.access if ph.kind == "REG" else "R"
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

            text = "".join(p if isinstance(p, str) else fill(p, 0) for p in parts)
            if access == "W" and not mwrites:
                # a memory operand with a fixed displacement still counts as a store
                mwrites.append(None)
            for op in t.operands:
                if op.kind == "reg" and op.reg_class in ("V", "F") and op.width:
                    vector_width = max(vector_width, op.width)
            out.append(Instance(f, " ".join(text.split()), frozenset(reads), frozenset(writes),
                                frozenset(rws), tuple(mreads), tuple(mwrites)))
    return Window(tuple(out), copies, vector_width, frozenset(fixed))


def windows(counts, lengths=DEFAULT_LENGTHS) -> list[Window]:
    """The unroll variants of one experiment (duplicates of the same copy count dropped)."""
    seen, out = set(), []
    for n in lengths:
        w = instantiate(counts, n)
        if w.copies not in seen:
            seen.add(w.copies)
            out.append(w)
    return out
