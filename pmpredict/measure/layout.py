"""Memory and register layout of a measured basic block (pure: no I/O).

A block from real code addresses memory through its registers, its stack and the
pointers it loads. To run it in a loop, every one of those addresses must be mapped,
and what the block reads there must not distort the timing:

* **Distinct addresses.** The registers the block addresses memory through (found by
  following its data flow) start on distinct cache lines of one page, spread evenly over
  it (with three of them 1344 bytes apart): no two alias, none 4K-aliases another, and
  aligned vector accesses work. The page lies in the middle of a 64 KiB region mapped
  and filled up front (displacements of either sign work), in a 256 MiB window whose
  other pages are mapped on demand, all showing one physical page of that window
  (BHive's trick): a register streaming through memory (`add $32, %rax` every
  iteration) stays in the L1 cache. Keeping the starts in one page matters: streams
  that move together then cross pages together (in separate pages, every stream pays
  its own page crossings, and the triad kernel ran at 4.0 instead of 1.5 cycles on
  Zen 4 in a VM). rsp starts in a stack region of its own: push, pop and `8(%rsp)`
  never touch the harness's stack. Registers the block does not address through start
  in a spare region (valid pointers all the same, should the analysis miss a use).
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
* **Implicit data registers** (read by the instruction without naming them and never
  part of an address: the rdx:rax dividend of div, the rcx of a rep prefix, the eax
  of cpuid) start at 0: a division cannot overflow and a repeated string operation
  does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmpredict.isa import semantics as isa_semantics
from pmpredict.isa.base import GPR, DATA, ADDRESS, InstructionSemantics
from pmpredict.measure.instantiate import HARNESS_ISA

# 1.0f in both 32-bit halves: a normal float, and as a double about 0.0078
NORMAL_FILL = 0x3F8000003F800000
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

GPR_FAMILIES = isa_semantics.get(HARNESS_ISA).gpr_families     # rax .. r15: the JSON's order


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
class Layout:
    registers: tuple[tuple[str, int], ...]       # GPR family -> initial value
    regions: tuple[Region, ...]
    fault_fill: int                              # the page mapped on demand elsewhere
    symbol_fill: tuple[tuple[str, int], ...]     # rip-relative symbol -> fill of its data object
    pointer_loads: tuple[int, ...]               # instruction indices whose loads feed addresses


def _in_page(k: int) -> int:
    """In-page offset of slot k: 5 lines apart (5 is coprime to 64: 64 distinct lines)."""
    return (5 * k % (PAGE // LINE)) * LINE


def window_start(k: int) -> int:
    return WINDOW_BASE + k * WINDOW_BYTES


def region_start(k: int) -> int:
    """The region mapped up front in window k: around the window's middle (streams can
    run either way without leaving the window)."""
    return window_start(k) + WINDOW_BYTES // 2 - REGION_BYTES // 2


# region name -> its window
WINDOWS = {"data": 0, "stack": 1, "spare": 2}


def pointer_target(rank: int) -> int:
    """The address the rank-th pointer load of a block finds in memory."""
    return POINTEE_BASE + REGION_BYTES // 2 + _in_page(rank)


def _homes(address: list[str], others: list[str]) -> dict[str, tuple[str, int]]:
    """register -> (region, offset in the region) of its initial value.

    The registers the block addresses memory through share one page of the data region,
    spread evenly over it (whole lines): distinct lines, no 4K aliasing, and streams that
    move together stay in one page (in separate pages every stream pays its own page
    crossings: the triad kernel ran at 4.0 instead of 1.5 cycles on Zen 4 in a VM).
    rsp starts in the stack region, any other register in a spare region (the data flow
    says it addresses nothing; if it does after all, it still finds memory)."""
    homes = {}
    step = max(LINE, PAGE // max(1, len(address)) // LINE * LINE)
    for i, reg in enumerate(address):
        homes[reg] = ("data", REGION_BYTES // 2 + i * step)
    homes["rsp"] = ("stack", REGION_BYTES // 2)
    for j, reg in enumerate(others):
        homes[reg] = ("spare", REGION_BYTES // 2 + _in_page(j))
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
class _Access:
    instruction: int
    base: frozenset                  # origins of the base register (empty: none / not a GPR)
    index: frozenset
    scale: int
    disp: int
    symbols: tuple[str, ...]
    base_name: str | None
    load: bool


def _step(i: int, sem: InstructionSemantics, state: dict, accesses: list) -> None:
    """Apply one instruction to the register origins, recording its memory accesses."""
    for m in sem.memory:
        if not (m.load or m.store):
            continue                       # lea computes, it does not address: its result may
        base = state.get(m.base, frozenset()) if m.base in state else frozenset()   # be an index
        index = state.get(m.index, frozenset()) if m.index in state else frozenset()
        accesses.append(_Access(i, base, index, m.scale, m.disp, m.symbols, m.base, m.load))
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
        else:
            sources = set()
            for r in data_reads:
                sources |= state.get(r.name, frozenset())
            if w.name in read_names:
                sources |= state.get(w.name, frozenset())
            if loads and w.operand is not None:
                sources.add(("addend", i, None))       # `add 8(%r14), %r15`: an offset, say
            new[w.name] = _blur(frozenset(sources))
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


def _follow(semantics: list[InstructionSemantics]) -> list[_Access]:
    """Every memory access the loop makes, over enough iterations that the register
    origins repeat (exactly, or after widening offsets that keep changing)."""
    state = {r: frozenset({("init", r, 0)}) for r in GPR_FAMILIES}
    seen, accesses = [], []
    for iteration in range(4 * ITERATIONS):
        key = frozenset((r, o) for r, o in state.items())
        if key in seen:
            break
        seen.append(key)
        start = dict(state)
        for i, sem in enumerate(semantics):
            _step(i, sem, state, accesses)
        if iteration >= ITERATIONS:
            state = _widen(start, state)
    return accesses


# --- the layout ------------------------------------------------------------------------

def plan_layout(semantics: list[InstructionSemantics], counter: str | None) -> Layout:
    """Initial registers and memory for the block whose instructions have `semantics`;
    `counter` is the loop counter register (None: the counter lives in memory)."""
    accesses = _follow(semantics)
    pointer_sites = sorted({who for a in accesses for kind, who, _ in a.base if kind == "load"})
    # words loaded as an index, or added to an address, hold 0
    index_sites = sorted(({who for a in accesses for kind, who, _ in a.index if kind != "init"}
                          | {who for a in accesses for kind, who, _ in a.base if kind == "addend"})
                         - set(pointer_sites))
    registers, homes = _initial_registers(semantics, accesses, counter)
    target = {site: pointer_target(rank) for rank, site in enumerate(pointer_sites)}
    value = {**target, **{site: 0 for site in index_sites}}
    uniform, slots, symbol_fill, fault_fill = _pointer_words(accesses, registers, homes, target,
                                                             value)
    regions = []
    for name, k in WINDOWS.items():
        if any(home == name for home, _ in homes.values()):
            regions.append(Region(region_start(k), REGION_BYTES, uniform.get(name, NORMAL_FILL),
                                  tuple(sorted(slots.get(name, {}).items())), name,
                                  (window_start(k), WINDOW_BYTES)))
    if pointer_sites:
        regions.append(Region(POINTEE_BASE, REGION_BYTES, uniform.get("pointee", NORMAL_FILL),
                              tuple(sorted(slots.get("pointee", {}).items())), "pointee"))
    return Layout(tuple(sorted(registers.items(), key=lambda kv: GPR_FAMILIES.index(kv[0]))),
                  tuple(regions), NORMAL_FILL if fault_fill is None else fault_fill,
                  tuple(sorted(symbol_fill.items())), tuple(pointer_sites))


def _initial_registers(semantics, accesses, counter):
    """(register -> initial value, register -> (region, offset)) for every register but
    the counter: index-only registers small, implicit data registers 0, the rest homes."""
    base_regs = {who for a in accesses for kind, who, _ in a.base if kind == "init"}
    index_regs = {who for a in accesses for kind, who, _ in a.index if kind == "init"}
    implicit_data = {r.name for s in semantics for r in s.reads
                     if r.kind == GPR and r.operand is None and r.role == DATA}
    explicit_or_address = {r.name for s in semantics for r in s.reads
                           if r.kind == GPR and (r.operand is not None or r.role == ADDRESS)}
    registers = {}
    for j, reg in enumerate(sorted(index_regs - base_regs)):
        registers[reg] = LINE * (j + 1)
    address, others = [], []
    for reg in GPR_FAMILIES:
        if reg in (counter, "rsp") or reg in registers:
            continue
        if reg in implicit_data and reg not in base_regs and reg not in explicit_or_address:
            registers[reg] = 0
        else:
            (address if reg in base_regs else others).append(reg)
    homes = _homes(address, others)
    for reg, (name, offset) in homes.items():
        registers[reg] = region_start(WINDOWS[name]) + offset
    return registers, homes


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
        if who not in target:
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
    return uniform, slots, symbol_fill, fault_fill
