"""Memory and register layout of a measured basic block (pure: no I/O).

A block from real code addresses memory through its registers, its stack and the
pointers it loads. To run it in a loop, every one of those addresses must be mapped,
and what the block reads there must not distort the timing:

* **Distinct addresses.** The registers the block addresses memory through (found by
  following its data flow) start on distinct cache lines of one page, spread evenly over
  it (with three of them 1344 bytes apart): no two alias, and aligned vector accesses
  work. The page lies in the middle of a 64 KiB region mapped
  and filled up front (displacements of either sign work), in a 256 MiB window whose
  other pages are mapped on demand, all showing one physical page of that window
  (BHive's trick): a register streaming through memory (`add $32, %rax` every
  iteration) stays in the L1 cache. Keeping the starts in one page matters: streams
  that move together then cross pages together (in separate pages, every stream pays
  its own page crossings; measured on Zen 4 in a VM: the triad kernel 4.0 cycles instead
  of 1.5). rsp starts in a stack region of its own: push, pop and `8(%rsp)`
  never touch the harness's stack. Registers the block does not address through start
  in a spare region (valid pointers all the same, should the analysis miss a use), whose
  words hold pointers into itself (a spare register stored where a chase then loads stays
  an address however often it is followed).
* **Distinct page offsets.** A load whose address matches an earlier store's in the low
  12 bits waits for it on most cores (4K aliasing; measured on Zen 4: a store through rsp
  and a load through rbx at the same page offset 1.44 cycles instead of 0.67). So every
  start has a cache line of the page to itself (`page_lines`): the address registers theirs
  (spread evenly, from line 0), then rsp, the pointer targets, the rip-relative data
  objects, a loop counter in memory and the spare registers the lines in between (64 lines:
  distinct for 64 starts). Regions, windows and data objects are page-aligned, so the
  line is the page offset.
* **Normal values.** Memory holds 1.0f in every 32-bit lane (its 64-bit view is a
  double near 0.0078): a normal number at every width, so floating-point work on loaded
  data takes no microcode assists.
* **Loaded pointers stay usable.** No 64-bit word can be both a normal double and a
  user-space address (canonical user addresses have their top 17 bits clear, so as a
  double their exponent is zero: subnormal). So the words a block loads *as pointers*
  are found by following the block's data flow (a load whose result reaches the base or
  index of a memory operand, through copies, lea and arithmetic, over a few
  iterations of the loop), and only those words hold pointers; every other word stays
  1.0f. Each pointer load gets its own target in a shared pointee region whose
  addresses lie below 4 GiB with a low half that reads as a float near 1.0 (a 32-bit
  view of a pointer word is a normal float, the high half 0.0); words loaded as an
  index, or added to an address (`add 8(%r14), %r15` before `96(%r15)`), hold 0. Where the address of a pointer load is not fixed (its base register
  moves every iteration), the whole region it reads from holds that pointer, and so
  does the page the harness maps on demand for addresses outside every region (the
  BHive fallback): pointer chasing keeps working, at the price of double-precision
  loads from that region seeing a subnormal.
* **Index registers** (used only as the index of an address) start at small distinct
  multiples of 64, so base + index stays inside the base's region and aligned.
* **Divisions** (div, idiv) must not fault (#DE: a zero divisor, a quotient too wide), and
  their time depends on the values (docs/MEASUREMENT.md). Following the data flow as for
  pointers, what a division's divisor is a copy of (a register at entry, or a loaded word)
  starts as DIVISOR, what its dividend's low half is a copy of as DIVIDEND, its high half
  (rdx) 0: the typical division of instantiate.py (a 27-bit quotient, a small remainder).
  A division whose dividend is an earlier division's quotient (`xor edx, edx; div rbx`
  repeated: each divides what the last one left) would divide its dividend down to 0 in
  two iterations; its divisor starts as 1 instead (x / 1 keeps x: every iteration divides
  DIVIDEND, a 47-bit quotient). A divisor the block sets itself (an immediate moved into
  the register, `mov ebx, 0x1d0135`; a word it stores before dividing by it) is the block's:
  the layout cannot make it 1, so such a division is never chained and its dividend starts
  as DIVIDEND (the latency chains of chains.py restore their dividend from quotient and
  remainder each link, with their own divisor). `divisions` says which was chosen, for the
  report.
* **Implicit data registers** (read by the instruction without naming them and never
  part of an address: the rcx of a rep prefix, the eax of cpuid, the rdx of a division)
  start at 0: a repeated string operation does nothing, a dividend's high half is 0.
* **Shift counts** in a register (`shl eax, cl`) start at their home plus SHIFT_COUNT: a
  home is line-aligned, so the count would be 0, which leaves the flags unchanged, a case
  and not the rule (measured on Zen 4: `shl eax, cl; cmovge r10, [rsi]` 36.1 cycles a loop
  with cl 0, 1.00 with cl 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from pmpredict.isa import semantics as isa_semantics
from pmpredict.isa.base import GPR, DATA, ADDRESS, InstructionSemantics
from pmpredict.measure.instantiate import DIVIDEND, DIVISOR, HARNESS_ISA

# 1.0f in both 32-bit halves: a normal float, and as a double about 0.0078
NORMAL_FILL = 0x3F8000003F800000
SHIFT_COUNT = 3                # what a shift count in a register shifts by (mod 32 and 64)
REGION_BYTES = 64 * 1024                 # mapped and filled up front, around the start
# Windows lie between 1 and 2 GiB: clear of the executable, heap and libraries, and low
# enough that arithmetic mixing several registers (hash indexing: (a & m) << 4 + b) still
# gives a canonical address, which the harness then maps on demand.
WINDOW_BASE = 1 << 30
WINDOW_BYTES = 1 << 28                   # each region's window (256 MiB)
POINTEE_BASE = 0x3F800000                # below 4 GiB; the low 32 bits of a pointer into it
                                         # read as a float near 1.0
LINE = 64
PAGE = 4096
ITERATIONS = 8                           # loop iterations followed before widening
LINES_PER_PAGE = PAGE // LINE
STRIDE = 5                               # coprime to 64: every line of the page, spread

_ISA = isa_semantics.get(HARNESS_ISA)
GPR_FAMILIES = _ISA.gpr_families         # rax .. r15: the JSON's order


@dataclass(frozen=True)
class Region:
    """Memory mapped for a block kernel at a fixed address."""
    address: int
    size: int
    fill: int                                    # 64-bit word repeated over the region
    slots: tuple[tuple[int, int], ...] = ()      # (offset, 64-bit word) written over the fill
    name: str = ""                               # "data", "stack", "spare" or "pointee"
    window: tuple[int, int] = (0, 0)             # (start, bytes): addresses outside the region
    # but inside the window are mapped on demand to a page of their own (filled with `fill`):
    # a register streaming through memory never meets another register's data there


@dataclass(frozen=True)
class DivisionStart:
    """The values a division of the block divides first (see the module docstring): its
    divisor and the low half of its dividend where they are copies of a register's initial
    value or of a loaded word (None: the block computes them), and whether its dividend is
    an earlier division's quotient (so its divisor starts as 1)."""
    instruction: int                             # its index in the block
    width: int                                   # of its divisor (bits)
    divisor: int | None
    dividend: int | None
    chained: bool

    @property
    def quotient_bits(self) -> int | None:
        """Significant bits of the first quotient (high half 0; a byte division divides ax)."""
        if self.divisor is None or self.dividend is None:
            return None
        dividend = self.dividend & ((1 << max(16, self.width)) - 1)
        divisor = self.divisor & ((1 << self.width) - 1)
        return (dividend // divisor).bit_length() if divisor else None


@dataclass(frozen=True)
class Layout:
    registers: tuple[tuple[str, int], ...]       # GPR family -> initial value
    regions: tuple[Region, ...]
    fault_fill: int                              # the page mapped on demand elsewhere
    symbol_fill: tuple[tuple[str, int], ...]     # rip-relative symbol -> fill of its data object
    pointer_loads: tuple[int, ...]               # instruction indices whose loads feed addresses
    symbol_offsets: tuple[tuple[str, int], ...] = ()   # rip-relative symbol -> page offset of
                                                 # its (page-aligned + offset) data object
    counter_offset: int = 0                      # page offset of a loop counter in memory
    divisions: tuple[DivisionStart, ...] = ()
    # registers the block moves by a constant every pass (`add $64, %rbx`, push, pop): bytes a
    # pass; the harness moves them back once per loop iteration (codegen.block_kernel)
    drift: tuple[tuple[str, int], ...] = ()


def page_lines(address: int, others: int) -> tuple[list[int], list[int]]:
    """(lines of the `address` registers' starts, lines of `others` further starts): the
    address registers spread evenly over the page from line 0 (streams that move together
    cross pages together), the others in between, STRIDE lines apart and never on a line
    taken before (until all 64 are taken; then again from the start)."""
    step = max(1, LINES_PER_PAGE // max(1, address))
    ours = [i * step for i in range(address)]
    order = [(step // 2 + STRIDE * m) % LINES_PER_PAGE for m in range(LINES_PER_PAGE)]
    taken, out = set(ours), []
    while len(out) < others:
        free = [line for line in order if line not in taken]
        if not free:
            taken = set()
            continue
        out.append(free[0])
        taken.add(free[0])
    return ours, out


def window_start(k: int) -> int:
    return WINDOW_BASE + k * WINDOW_BYTES


def region_start(k: int) -> int:
    """The region mapped up front in window k: around the window's middle (streams can
    run either way without leaving the window)."""
    return window_start(k) + WINDOW_BYTES // 2 - REGION_BYTES // 2


# region name -> its window
WINDOWS = {"data": 0, "stack": 1, "spare": 2}


@dataclass(frozen=True)
class _Offsets:
    """Page offsets (bytes) of every start of one block (page_lines)."""
    address: tuple[int, ...]
    stack: int
    targets: tuple[int, ...]
    symbols: tuple[int, ...]
    counter: int
    spare: tuple[int, ...]


def _offsets(address: int, targets: int, symbols: int, spare: int) -> _Offsets:
    ours, rest = page_lines(address, 1 + targets + symbols + 1 + spare)
    rest = [line * LINE for line in rest]
    cut = [1, 1 + targets, 1 + targets + symbols, 2 + targets + symbols]
    return _Offsets(tuple(line * LINE for line in ours), rest[0], tuple(rest[1:cut[1]]),
                    tuple(rest[cut[1]:cut[2]]), rest[cut[2]], tuple(rest[cut[3]:]))


def _homes(address: list[str], others: list[str], offsets: _Offsets) -> dict[str, tuple[str, int]]:
    """register -> (region, offset in the region) of its initial value.

    The registers the block addresses memory through share one page of the data region,
    spread evenly over it (whole lines): distinct lines, and streams that move together stay
    in one page (in separate pages every stream pays its own page crossings; measured on Zen 4
    in a VM: the triad kernel 4.0 cycles instead of 1.5). rsp starts in the stack
    region, any other register in a spare region (the data flow says it addresses nothing;
    if it does after all, it still finds memory); each at a page offset of its own."""
    homes = {}
    for reg, offset in zip(address, offsets.address):
        homes[reg] = ("data", REGION_BYTES // 2 + offset)
    homes["rsp"] = ("stack", REGION_BYTES // 2 + offsets.stack)
    for reg, offset in zip(others, offsets.spare):
        homes[reg] = ("spare", REGION_BYTES // 2 + offset)
    return homes


# --- data flow -------------------------------------------------------------------------
# An origin says where a register's value may come from: ("init", reg, offset) - the
# register's initial value plus a constant offset -, ("load", instruction, offset) - what
# that instruction loaded plus an offset - or ("addend", instruction, None) - a loaded
# value that arithmetic added in. Offset None: not a constant (moved by data).


def _shift(origins: frozenset, delta) -> frozenset:
    return frozenset((kind, who, None if off is None or delta is None else off + delta)
                     for kind, who, off in origins)


def _blur(origins: frozenset) -> frozenset:
    return _shift(origins, None)


@dataclass(frozen=True)
class _DivisionUse:
    """The origins of a division's values where it runs: its divisor (None: in memory), the
    low and high halves of its dividend."""
    instruction: int
    width: int
    divisor: frozenset | None
    low: frozenset
    high: frozenset


@dataclass(frozen=True)
class _Access:
    instruction: int
    base: frozenset                  # origins of the base register (empty: none / not a GPR)
    index: frozenset
    scale: int
    disp: int
    symbols: tuple[str, ...]
    base_name: str | None
    load: bool
    width: int | None = None          # bits, where known


def _step(i: int, sem: InstructionSemantics, state: dict, accesses: list,
          division=None, divisions: list | None = None) -> None:
    """Apply one instruction to the register origins, recording its memory accesses (and,
    for a division, the origins of its values)."""
    if division is not None and divisions is not None:
        divisor = next((r.name for r in sem.reads if r.operand == 0 and r.kind == GPR
                        and r.role == DATA), None)
        divisions.append(_DivisionUse(
            i, division.width, None if divisor is None else state.get(divisor, frozenset()),
            state.get(division.low, frozenset()),
            state.get(division.high, frozenset()) if division.high else frozenset()))
    for m in sem.memory:
        if not (m.load or m.store):
            continue                       # lea computes, it does not address: its result may
        base = state.get(m.base, frozenset()) if m.base in state else frozenset()   # be an index
        index = state.get(m.index, frozenset()) if m.index in state else frozenset()
        accesses.append(_Access(i, base, index, m.scale, m.disp, m.symbols, m.base, m.load,
                                m.width))
    gpr_writes = [w for w in sem.writes if w.kind == GPR]
    if not gpr_writes:
        return
    if sem.idiom:
        for w in gpr_writes:
            state[w.name] = frozenset()
        return
    data_reads = [r for r in sem.reads if r.kind == GPR and r.role == DATA]
    read_names = {r.name for r in sem.reads if r.kind == GPR}
    address_reads = {r.name for r in sem.reads if r.kind == GPR and r.role == ADDRESS}
    loads = [m for m in sem.memory if m.load]
    address_only = [m for m in sem.memory if not m.load and not m.store]
    new = {}
    for w in gpr_writes:
        if sem.move and len(data_reads) == 1 and w.operand is not None:
            new[w.name] = state.get(data_reads[0].name, frozenset())
        elif address_only and w.operand is not None and not loads:      # lea
            m = address_only[0]
            base = state.get(m.base, frozenset()) if m.base else frozenset()
            if m.index:
                new[w.name] = _blur(base | state.get(m.index, frozenset()))
            else:
                new[w.name] = _shift(base, m.disp)
        elif loads and w.operand is not None and w.name not in {r.name for r in data_reads}:
            new[w.name] = frozenset({("load", i, 0)})                   # a pure load
        elif w.operand is None and w.name in address_reads:
            new[w.name] = _blur(state.get(w.name, frozenset()))       # push, pop, movs: moves on
        elif sem.select and w.operand is not None:
            # a conditional move: a copy of the old value or of the source (a loaded word
            # then is a value as a pure load's, a pointer where it reaches an address)
            sources = set()
            for r in data_reads:
                sources |= state.get(r.name, frozenset())
            if loads:
                sources.add(("load", i, 0))
            new[w.name] = frozenset(sources)
        else:
            sources = set()
            for r in data_reads:
                sources |= state.get(r.name, frozenset())
            if w.name in read_names:
                sources |= state.get(w.name, frozenset())
            if loads and w.operand is not None:
                sources.add(("addend", i, None))       # `add 8(%r14), %r15`: an offset, say
            new[w.name] = _blur(frozenset(sources))
    if division is not None:                 # what the next division may find there
        new[division.low] = new.get(division.low, frozenset()) | {("quotient", i, None)}
        if division.high:
            new[division.high] = new.get(division.high, frozenset()) | {("remainder", i, None)}
    state.update(new)


def _widen(old: dict, new: dict) -> dict:
    """Origins that differ only by their offset between two loop iterations lose the offset."""
    out = {}
    for reg in set(old) | set(new):
        offsets: dict = {}
        for kind, who, off in old.get(reg, frozenset()) | new.get(reg, frozenset()):
            key = (kind, who)
            offsets[key] = off if offsets.get(key, off) == off else None
        out[reg] = frozenset((k, w, off) for (k, w), off in offsets.items())
    return out


def _follow(semantics: list[InstructionSemantics],
            divisions: list | None = None) -> tuple[list[_Access], list[_DivisionUse]]:
    """Every memory access the loop makes, over enough iterations that the register
    origins repeat (exactly, or after widening offsets that keep changing), and every
    division's values (`divisions`: each instruction's Division facts, or None)."""
    state = {r: frozenset({("init", r, 0)}) for r in GPR_FAMILIES}
    divisions = divisions or [None] * len(semantics)
    seen, accesses, uses = [], [], []
    for iteration in range(4 * ITERATIONS):
        key = frozenset((r, o) for r, o in state.items())
        if key in seen:
            break
        seen.append(key)
        start = dict(state)
        for i, sem in enumerate(semantics):
            _step(i, sem, state, accesses, divisions[i], uses)
        if iteration >= ITERATIONS:
            state = _widen(start, state)
    return accesses, uses


# --- the layout ------------------------------------------------------------------------

def plan_layout(semantics: list[InstructionSemantics], counter: str | None) -> Layout:
    """Initial registers and memory for the block whose instructions have `semantics`;
    `counter` is the loop counter register (None: the counter lives in memory)."""
    facts = [_ISA.division(s) for s in semantics]
    accesses, uses = _follow(semantics, facts)
    pointer_sites = sorted({who for a in accesses for kind, who, _ in a.base if kind == "load"})
    # words loaded as an index, or added to an address, hold 0
    index_sites = sorted(({who for a in accesses for kind, who, _ in a.index
                           if kind in ("load", "addend")}
                          | {who for a in accesses for kind, who, _ in a.base if kind == "addend"})
                         - set(pointer_sites))
    own = _own_divisors(uses, accesses)
    chained, roles, words = _division_values(uses, own)
    symbols = sorted({sym for s in semantics for m in s.memory for sym in m.symbols})
    registers, homes, offsets = _initial_registers(semantics, accesses, counter, roles,
                                                   len(pointer_sites), len(symbols))
    target = {site: POINTEE_BASE + REGION_BYTES // 2 + offset
              for site, offset in zip(pointer_sites, offsets.targets)}
    value = {**target, **{site: 0 for site in index_sites}}
    value.update({site: word for site, word in words.items() if site not in value})
    uniform, slots, symbol_fill, fault_fill = _pointer_words(accesses, registers, homes, target,
                                                             value)
    regions = []
    for name, k in WINDOWS.items():
        if any(home == name for home, _ in homes.values()):
            # the spare region (registers the walk sees address nothing) holds pointers into
            # itself: a register stored into a word that a chase then loads (`mov %r14,
            # (%rdx)` in a chase through rdx: the walk does not follow memory) stays a usable
            # address however often it is followed; nothing is meant to load data there
            fill = region_start(k) + REGION_BYTES // 2 if name == "spare" else NORMAL_FILL
            regions.append(Region(region_start(k), REGION_BYTES, uniform.get(name, fill),
                                  tuple(sorted(slots.get(name, {}).items())), name,
                                  (window_start(k), WINDOW_BYTES)))
    if pointer_sites:
        regions.append(Region(POINTEE_BASE, REGION_BYTES, uniform.get("pointee", NORMAL_FILL),
                              tuple(sorted(slots.get("pointee", {}).items())), "pointee"))
    return Layout(tuple(sorted(registers.items(), key=lambda kv: GPR_FAMILIES.index(kv[0]))),
                  tuple(regions), NORMAL_FILL if fault_fill is None else fault_fill,
                  tuple(sorted(symbol_fill.items())), tuple(pointer_sites),
                  tuple(zip(symbols, offsets.symbols)), offsets.counter,
                  _division_starts(uses, chained, registers, value, own), drift(semantics))


def drift(semantics: list[InstructionSemantics]) -> tuple[tuple[str, int], ...]:
    """(register, bytes a pass) of each register that every write of the block moves by a
    constant (InstructionSemantics.offsets), with a nonzero sum: a pointer or the stack
    streaming through memory."""
    moved: dict[str, int] = {}
    other: set[str] = set()
    for sem in semantics:
        offsets = dict(sem.offsets)
        for w in sem.writes:
            if w.kind != GPR:
                continue
            if w.name in offsets:
                moved[w.name] = moved.get(w.name, 0) + offsets[w.name]
            else:
                other.add(w.name)
    return tuple((r, d) for r, d in sorted(moved.items()) if d and r not in other)


def _division_starts(uses, chained, registers, words, own=frozenset()
                     ) -> tuple[DivisionStart, ...]:
    """What each division divides first: the initial value or loaded word its divisor and
    dividend are exact copies of (the first iteration's origins); no divisor where the block
    sets it itself (`own`)."""
    def start(origins, own_word=None):
        for kind, who, off in origins or ():
            if off is None:
                continue
            if kind == "init" and who in registers:
                return (registers[who] + off) & ((1 << 64) - 1)
            if kind == "load":
                return words.get(who, NORMAL_FILL)
        return own_word
    out = {}
    for u in uses:
        if u.instruction not in out:
            divisor = None if u.instruction in own else \
                words.get(u.instruction, NORMAL_FILL) if u.divisor is None else start(u.divisor)
            out[u.instruction] = DivisionStart(u.instruction, u.width, divisor, start(u.low),
                                               u.instruction in chained)
    return tuple(out[i] for i in sorted(out))


def _same_address(a: _Access, b: _Access) -> bool:
    """Two accesses to one fixed address: the same exact origins of base and index (no
    offset lost to arithmetic), scale, displacement and symbols."""
    exact = all(off is not None for _, _, off in a.base | a.index) and (a.base or a.symbols)
    return bool(exact) and (a.base, a.index, a.scale, a.disp, a.symbols) == \
        (b.base, b.index, b.scale, b.disp, b.symbols)


def _own_divisors(uses: list[_DivisionUse], accesses: list[_Access]) -> frozenset[int]:
    """The divisions whose divisor the block sets itself, so the layout cannot choose it: a
    register divisor that is no exact copy of a register at entry or of a loaded word (`mov
    ebx, 0x1d0135` before `div rbx`), a memory divisor the block stores to before it, at the
    same address, in the same iteration (`mov [rcx + 64], rbx` before `div qword ptr [rcx +
    64]`)."""
    own, seen = set(), set()
    for u in uses:
        if u.instruction in seen:
            continue                    # the first iteration's origins: what it starts with
        seen.add(u.instruction)
        if u.divisor is not None:
            if not any(off is not None for _, _, off in u.divisor):
                own.add(u.instruction)
            continue
        # the first iteration's accesses come first: those before the division's own load
        k = next((n for n, a in enumerate(accesses) if a.instruction == u.instruction and a.load),
                 None)
        if k is not None and any(not a.load and a.instruction < u.instruction
                                 and _same_address(a, accesses[k]) for a in accesses[:k]):
            own.add(u.instruction)
    return frozenset(own)


def _chained(uses: list[_DivisionUse], own=frozenset()) -> set[int]:
    """The divisions whose dividend is an earlier quotient and which can divide by 1: every
    quotient in their dividend comes from such a division of their own width (a quotient is
    then its dividend again) and every remainder in their high half too (a division by 1
    leaves 0: x / 1 with a nonzero high half would overflow). Mixed widths and remainders of
    other divisions keep DIVISOR, below which such a remainder stays; a division whose divisor
    the block sets itself (`own`) cannot be made to divide by 1."""
    low: dict[int, set] = {}
    high: dict[int, set] = {}
    width = {}
    for u in uses:
        low.setdefault(u.instruction, set()).update(u.low)
        high.setdefault(u.instruction, set()).update(u.high)
        width[u.instruction] = u.width
    chained = {i for i, origins in low.items()
               if i not in own and any(k == "quotient" for k, _, _ in origins)}
    while True:
        drop = {i for i in chained
                if any(k == "quotient" and (j not in chained or width[j] != width[i])
                       for k, j, _ in low[i])
                or any(k == "remainder" and j not in chained for k, j, _ in high[i])}
        if not drop:
            return chained
        chained -= drop


# what a register or a loaded word feeding a division starts as; a value that feeds two
# roles takes the first of these (a divisor must not be 0, a high half must stay below it)
_ROLES = ("divisor", "high", "dividend")


def _division_values(uses: list[_DivisionUse], own=frozenset()):
    """(chained divisions, register -> (role, value), loading instruction -> word):
    what the divisor, the dividend and its high half of each division are copies of (exact
    origins only: a value that arithmetic made is the block's own) starts as DIVISOR (1 for
    a division whose dividend is an earlier quotient), DIVIDEND and 0; `own`: the divisions
    whose divisor the block sets itself."""
    chained = _chained(uses, own)
    registers: dict[str, tuple[str, int]] = {}
    words: dict[int, tuple[str, int]] = {}

    def give(origins, role, val):
        for kind, who, off in origins:
            if off is None:
                continue
            if kind == "init":
                old = registers.get(who)
                if old is None or _ROLES.index(role) < _ROLES.index(old[0]):
                    registers[who] = (role, val - off if val - off > 0 else val)
            elif kind == "load":
                old = words.get(who)
                if old is None or _ROLES.index(role) < _ROLES.index(old[0]):
                    words[who] = (role, val)

    for u in uses:
        divisor = 1 if u.instruction in chained else DIVISOR
        # x / 1 keeps x where x fits the quotient: a byte division's ax must be below 128
        dividend = DIVIDEND & ~0xFF00 if u.instruction in chained and u.width == 8 else DIVIDEND
        if u.divisor is None:                  # in memory: the word the division loads
            old = words.get(u.instruction)
            if old is None or old[0] != "divisor":
                words[u.instruction] = ("divisor", divisor)
        else:
            give(u.divisor, "divisor", divisor)
        give(u.low, "dividend", dividend)
        give(u.high, "high", 0)
    # distinct registers, distinct values: a second divisor DIVISOR + 2, a second dividend
    # DIVIDEND + 2 (the quotients stay as wide; x / 1 must stay 1, and high halves 0)
    seen: dict[int, int] = {}
    values = {}
    for reg in GPR_FAMILIES:
        if reg in registers:
            role, val = registers[reg]
            if val > 1:
                k = seen.get(val, 0)
                seen[val] = k + 1
                val += 2 * k
            values[reg] = (role, val)
    return chained, values, {site: word for site, (_, word) in words.items()}


def _initial_registers(semantics, accesses, counter, roles, targets: int, symbols: int):
    """(register -> initial value, register -> (region, offset), page offsets) for every
    register but the counter: index-only registers small, what feeds a division its
    division value, implicit data registers 0, the rest homes."""
    base_regs = {who for a in accesses for kind, who, _ in a.base if kind == "init"}
    index_regs = {who for a in accesses for kind, who, _ in a.index if kind == "init"}
    implicit_data = {r.name for s in semantics for r in s.reads
                     if r.kind == GPR and r.operand is None and r.role == DATA}
    explicit_or_address = {r.name for s in semantics for r in s.reads
                           if r.kind == GPR and (r.operand is not None or r.role == ADDRESS)}
    registers = {}
    # a division's value that becomes an index (a remainder: a hash table's bucket) is the
    # division's: the remainder stays below DIVISOR, inside the base's window
    for j, reg in enumerate(sorted(index_regs - base_regs - set(roles))):
        registers[reg] = LINE * (j + 1)
    address, others = [], []
    for reg in GPR_FAMILIES:
        if reg in (counter, "rsp") or reg in registers:
            continue
        if reg in roles and reg not in base_regs:
            registers[reg] = roles[reg][1]
        elif reg in implicit_data and reg not in base_regs and reg not in explicit_or_address:
            registers[reg] = 0
        else:
            (address if reg in base_regs else others).append(reg)
    offsets = _offsets(len(address), targets, symbols, len(others))
    homes = _homes(address, others, offsets)
    counts = {s.shift_count for s in semantics if s.shift_count}
    for reg, (name, offset) in homes.items():
        # a shift count: line-aligned, it would shift by 0 (SHIFT_COUNT)
        registers[reg] = region_start(WINDOWS[name]) + offset + \
            (SHIFT_COUNT if reg in counts and reg not in base_regs else 0)
    return registers, homes, offsets


def _pointer_words(accesses, registers, homes, target, value):
    """Where the loads that feed addresses read: (region -> uniform fill, region -> offset ->
    word, rip-relative symbol -> fill, fill of the on-demand page elsewhere or None)."""
    uniform: dict[str, int] = {}
    slots: dict[str, dict[int, int]] = {}
    symbol_fill: dict[str, int] = {}
    fault_fill = None

    def region_of(origin) -> tuple[str, int] | None:
        kind, who, off = origin
        if kind == "init":
            if who not in homes:
                return None
            name, offset = homes[who]
            return name, (None if off is None else offset + off)
        if kind != "load" or who not in target:
            return None
        return "pointee", (None if off is None else target[who] - POINTEE_BASE + off)

    for a in accesses:
        if not a.load or a.instruction not in value:
            continue
        word = value[a.instruction]
        if a.base_name == "rip" or (not a.base and a.symbols):
            for sym in a.symbols:
                symbol_fill.setdefault(sym, word)
            continue
        if not a.base:                     # an absolute address (`table(,%rbp,8)`): on demand
            fault_fill = word if fault_fill is None else fault_fill
            continue
        fixed_index = 0
        if a.index:
            idx = [o for o in a.index if o[0] == "init" and o[1] in registers and o[2] is not None]
            fixed_index = (registers[idx[0][1]] + idx[0][2]) * a.scale \
                if len(a.index) == 1 and len(idx) == 1 and idx[0][1] not in homes else None
        for origin in a.base:
            place = region_of(origin)
            if place is None:
                continue
            name, offset = place
            if offset is None or fixed_index is None or len(a.base) > 1:
                uniform.setdefault(name, word)
                fault_fill = word if fault_fill is None else fault_fill
                continue
            at = offset + a.disp + fixed_index
            if 0 <= at and at + 8 <= REGION_BYTES:
                slots.setdefault(name, {}).setdefault(at, word)
            else:                                  # outside the region: the on-demand page
                fault_fill = word if fault_fill is None else fault_fill
    for name, at, nbytes in _misaligned_data_loads(accesses, homes, value):
        if name in uniform or name == "spare":
            continue                                # a region of pointers
        taken = slots.setdefault(name, {})
        words = range(at, at + max(8, nbytes), 8)
        if all(0 <= w and w + 8 <= REGION_BYTES for w in words) and \
                not any(w - 8 < s < w + 8 for w in words for s in taken):
            taken.update({w: NORMAL_FILL for w in words})
    return uniform, slots, symbol_fill, fault_fill


def _misaligned_data_loads(accesses, homes, value):
    """(region, offset, bytes) of each data load (not a pointer's or an index's) at a known
    offset that is not a multiple of 4. The fill's words hold 1.0f in each half, so such a
    load would read the halves of two floats, a denormal (Zen 4: `vmulss xmm0, xmm0, [rdi +
    189]` 4.21 cycles a link, 3.00 at + 188), where a program's misaligned array holds whole
    floats: the fill is written again from that offset (plan_layout)."""
    for a in accesses:
        if not a.load or a.instruction in value or a.index or len(a.base) != 1:
            continue
        (kind, who, off), = a.base
        if kind != "init" or who not in homes or off is None:
            continue
        name, start = homes[who]
        at = start + off + a.disp
        if at % 4:
            yield name, at, (a.width or 64) // 8
