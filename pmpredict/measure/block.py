"""`pmpredict measure FILE.s`: the throughput of a basic block on this host, by timing alone.

The block runs as-is (its own registers, so its own dependencies) in a loop, unrolled
u and 2u times (u copies make about 50 instructions); the cycles per copy are the
difference of the two, (T(2u) - T(u)) / u, which cancels the loop's own overhead (the
counter's dec/jnz and the loop boundary), as BHive does. Two to four harness processes
time it; the fastest counts once two agree. Registers, stack and memory follow
`layout.py`: distinct lines of one page per address register, a private stack, normal
floating-point values, loaded pointers that point somewhere mapped.

The kernel is chosen as `pmpredict predict` chooses it (pmpredict.asm.kernel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmpredict.isa import semantics
from pmpredict.asm.detect import detect_syntax
from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.isa.syntax import Instruction
from pmpredict.errors import InputError
from pmpredict.isa.base import GPR, InstructionSemantics
from pmpredict.measure.block_measurement import (BlockMeasurement, BlockTiming,
                                                 DroppedInstruction, MalformedTiming,
                                                 UnrollVariant)
from pmpredict.measure.cache import ResultCache, block_key
from pmpredict.measure.cpu import cpu_identity, cpu_name
from pmpredict.measure.codegen import block_kernel
from pmpredict.measure.instantiate import DIVIDEND, DIVISOR, HARNESS_ISA
from pmpredict.measure.layout import DivisionStart, Layout, plan_layout
from pmpredict.measure.experiment_runs import kernel_cycles
from pmpredict.measure.runner import RunOptions, Timing, check_host, reproduced, run_kernels

BLOCK_LENGTH = 50            # instructions in the shorter unroll variant; the other has twice
# the loop overhead that (T(2u) - T(u)) / u leaves out, as a check on the two variants: more
# than this (in cycles, or as a share of T(u)) means they do not differ by u copies alone
# (on a Zen 3, 280 BHive blocks implied 0.07 cycles at the median and 1.0 at the 90th
# percentile, up to 1.5 where the taken branch ends an issue group; the few above 2 read a
# 3-instruction block below the issue width's bound: a disturbed short variant)
OVERHEAD_CYCLES = 2.0
OVERHEAD_SHARE = 0.03
# ... and an overhead this far below zero is timing noise (about 1% on each variant)
NOISE_CYCLES = 1.0
NOISE_SHARE = 0.03
# a block whose longer loop runs slower a copy than the shorter one plus u copies (the overhead
# the pair implies far below zero) meets a limit of the core that the longer loop's copies
# exceed (Zen 4: a loop of up to 24 read-modify-writes of one place, each through a base it
# has just rewritten, renames every one, 1.0 cycles a link; of 25 or more none, 6.4): the
# block is timed again at half the copies, as often as this, and the fewest copies that
# differ by their copies alone give its figure (docs/MEASUREMENT.md)
FEWER_COPIES_ROUNDS = 3
# a block's figure is settled when either variant's second-fastest pass would move it at most
# this much (figure_band): two settled figures then agree within the 3% promised
FIGURE_AGREEMENT = 0.015
LARGE_SPREAD = 0.05          # the text view shows a spread above this
# Harness processes per block, on alternating CPUs where there are two: a tiny block measured
# 0.50 or 0.64 cycles per store, 0.70 or 1.10 with push/pop, depending on the process (a busy
# sibling thread of the host, presumably). The fastest counts once two passes agree; a block
# whose passes still disagree after MAX_PASSES is unstable.
PASSES = 2
# a busy process pinned to one vCPU leaves the other's passes slow and its own quiet in
# slices, and a tiny block's process state is one of two: six passes alternate CPUs thrice
MAX_PASSES = 6
# Runs of 0.1 ms: a block streaming through memory (`add $32, %rax`) maps a page per 4 KiB it
# walks, and the harness can map at most 60,000; t(2n) - t(n) still cancels the call.
# A block's processes wait up to a second each for a busy phase of another guest on the
# physical core to end (runner.RunOptions.quiet_phase_ns).
BLOCK_OPTIONS = RunOptions(target_ns=1e5, quiet_phase_ns=1e9)

# the loop counter is taken from the end of this list (registers compilers use least)
_COUNTER_CHOICES = ["rsi", "rdi", "rcx", "rdx", "r8", "r9", "r10", "r11", "rbx", "r12", "r13",
                    "r14", "r15"]
# rip-relative operands: `.LC0(%rip)` (AT&T), `[rip + .LC0]` / `.LC0[rip]` (Intel)
_RIP_SYMBOL = [re.compile(r"([A-Za-z_.$][\w.$@]*)(?=\s*(?:[+-]\s*\d+\s*)?\(%rip\))"),
               re.compile(r"(?<=\[rip\s\+\s)([A-Za-z_.$][\w.$@]*)", re.I),
               re.compile(r"(?<=\[rip\+)([A-Za-z_.$][\w.$@]*)", re.I),
               re.compile(r"([A-Za-z_.$][\w.$@]*)(?=\[rip\])", re.I)]


# --- what the block's instructions touch ----------------------------------------------
# pmpredict.isa.semantics is the one source of what an instruction reads and writes, implicit
# registers included (cqo writes rdx, rep movs uses rcx, rsi, rdi, push moves rsp...), and of
# which spellings are branches and vector registers
_ISA = semantics.get(HARNESS_ISA)


def intel_mnemonic(insn: Instruction, syntax: str) -> str:
    return _ISA.instruction(insn, syntax).mnemonic


def instruction_semantics(insn: Instruction, syntax: str) -> InstructionSemantics:
    return _ISA.instruction(insn, syntax)


def registers_touched(semantics: list[InstructionSemantics]) -> set[str]:
    """Every general-purpose register family the block reads or writes, explicitly or not."""
    return {a.name for s in semantics for a in s.reads + s.writes if a.kind == GPR}


# --- the block --------------------------------------------------------------------------

@dataclass(frozen=True)
class PreparedBlock:
    syntax: str
    instructions: tuple[Instruction, ...]
    lines: tuple[str, ...]               # the instruction texts, as written
    dropped: Instruction | None          # the trailing branch left out (the harness loops)
    counter: str | None                  # loop counter register (None: a memory counter)
    vector_width: int
    kernel: dict | None                  # how the kernel was chosen
    layout: Layout


def detect(text: str, syntax: str | None, path: str) -> str:
    if syntax in _ISA.syntaxes:
        return syntax
    if syntax not in (None, "auto"):
        raise InputError(path, f"unknown syntax {syntax!r} (use {' or '.join(_ISA.syntaxes)})")
    guess = detect_syntax(text, None, HARNESS_ISA, path)
    if guess not in _ISA.syntaxes:
        raise InputError(path, "only x86-64 blocks can be measured on this host")
    return guess


def prepare_block(text: str, syntax: str | None = None, path: str = "<input>",
                  line_range: str | None = None, region: str | None = None) -> PreparedBlock:
    """Parse, choose the kernel, refuse what cannot run in a loop, plan registers and memory."""
    syntax = detect(text, syntax, path)
    kernel = select_kernel(parse(text, syntax, path), line_range, region)
    insns = list(kernel.instructions)
    dropped = None
    if insns and _ISA.is_jump(intel_mnemonic(insns[-1], syntax)):
        dropped = insns.pop()                  # the loop's own back edge: the harness loops
    if not insns:
        raise InputError(path, "no instructions to measure", 1, 1)
    semantics = []
    for insn in insns:
        s = instruction_semantics(insn, syntax)
        if s.trap:
            what = "a deliberate trap" if s.trap in _ISA.deliberate_traps else \
                "a system instruction"
            raise InputError(path, f"'{insn.mnemonic}' is {what}: it cannot be measured in a loop",
                             insn.line, insn.column)
        if _ISA.transfers_control(s.mnemonic):
            raise InputError(path, f"'{insn.mnemonic}' inside the block: only a basic block "
                                   "(straight-line code, optionally ending in a branch) can be "
                                   "measured", insn.line, insn.column)
        semantics.append(s)
    src = text.splitlines()
    lines = tuple(i.text.strip() or src[i.line - 1].strip() for i in insns)
    width = _ISA.widest_vector_register("\n".join(lines))
    touched = registers_touched(semantics)
    free = [r for r in reversed(_COUNTER_CHOICES) if r not in touched]
    counter = free[0] if free else None
    layout = plan_layout(semantics, counter)
    return PreparedBlock(syntax, tuple(insns), lines, dropped, counter, width, kernel.to_json(),
                         layout)


def rename_symbols(body: list[str]) -> tuple[list[str], dict[str, str]]:
    """Rip-relative symbols of the block -> placeholders the harness defines as data.

    Compiler output loads constants as `.LC0(%rip)`; those labels are not part of the
    block, so each gets a private data object (and a private name, so it cannot clash
    with the harness's own labels)."""
    symbols: dict[str, str] = {}
    for line in body:
        for pattern in _RIP_SYMBOL:
            for m in pattern.finditer(line):
                symbols.setdefault(m.group(1), f"sym{len(symbols)}")
    return [_substitute(line, {s: "@@" + n for s, n in symbols.items()}) for line in body], symbols


def _substitute(line: str, names: dict[str, str]) -> str:
    for old in sorted(names, key=len, reverse=True):
        line = re.sub(r"(?<![\w.$@])" + re.escape(old) + r"(?![\w.$@])", names[old], line)
    return line


def unroll_factors(n_instructions: int) -> tuple[int, int]:
    """u and 2u: u copies of the block make about BLOCK_LENGTH instructions."""
    u = max(1, round(BLOCK_LENGTH / n_instructions))
    return u, 2 * u


def per_copy(short: tuple[int, Timing], long: tuple[int, Timing]) -> dict:
    """Cycles per copy of the block from the two unroll variants (u, T(u)) and (2u, T(2u));
    see per_copy_cycles. "spread" is the larger of the variants' spreads."""
    (u1, t1), (u2, t2) = short, long
    spread = max(t.spread or 0.0 for t in (t1, t2) if t.error is None) \
        if t1.error is None or t2.error is None else None
    return {**per_copy_cycles(u1, kernel_cycles(t1), u2, kernel_cycles(t2)), "spread": spread}


def per_copy_cycles(u1: int, c1: float | None, u2: int, c2: float | None) -> dict:
    """Cycles per copy of the block from the loop cycles of u copies (c1) and 2u (c2).

    T(copies) = c * copies + overhead: (T(2u) - T(u)) / u cancels the loop overhead. The
    overhead cannot be negative; a slightly negative one is noise, and then the line
    through the origin that fits both variants best gives c. If the variants do not
    differ by u copies alone (the overhead is far below zero or large: a variant was
    disturbed, or the longer loop runs differently), the smaller T / copies is reported
    and the method says "per-copy"."""
    out = {"method": "per-copy"}
    if c1 is None and c2 is None:
        return {**out, "cycles": None}
    if c1 is None or c2 is None:
        u, c = (u1, c1) if c2 is None else (u2, c2)
        return {**out, "cycles": c / u, "overhead": None}
    slope = (c2 - c1) / (u2 - u1)
    overhead = c1 - u1 * slope
    if 0 <= overhead <= max(OVERHEAD_CYCLES, OVERHEAD_SHARE * c1):
        return {**out, "cycles": slope, "method": "difference", "overhead": overhead}
    if -max(NOISE_CYCLES, NOISE_SHARE * c1) <= overhead < 0:
        through_origin = (u1 * c1 + u2 * c2) / (u1 * u1 + u2 * u2)
        return {**out, "cycles": through_origin, "method": "difference", "overhead": 0.0}
    return {**out, "cycles": min(c1 / u1, c2 / u2), "overhead": overhead}


def figure_band(u1: int, passes1, u2: int, passes2) -> tuple[float, float] | None:
    """(lowest, highest) cycles per copy that per_copy_cycles gives when either variant's
    fastest pass (loop cycles of one harness process) is replaced by its second fastest:
    how far the reported figure could move were one process's reading taken for another's.
    The difference method multiplies a variant's disagreement (a short variant read 2% slow
    moves (T(2u) - T(u)) / u 2% low), so each variant agreeing with itself is not enough.
    None where a variant has no pass."""
    fastest1, fastest2 = sorted(passes1)[:2], sorted(passes2)[:2]
    if not fastest1 or not fastest2:
        return None
    figures = [per_copy_cycles(u1, a, u2, b)["cycles"] for a in fastest1 for b in fastest2]
    return min(figures), max(figures)


def settled_figure(u1: int, t1: Timing, u2: int, t2: Timing) -> bool:
    """The block's figure would move by at most FIGURE_AGREEMENT were a variant's second
    fastest pass its fastest (trivially so where a variant has only one pass)."""
    band = figure_band(u1, t1.counted or t1.passes, u2, t2.counted or t2.passes)
    return band is None or band[1] - band[0] <= FIGURE_AGREEMENT * band[0]


def _unsettled_blocks(pairs: list[tuple[int, int, int, int]]):
    """run_kernels' `unsettled` for blocks timed as pairs (kernel of u copies, u, kernel of 2u
    copies, 2u): both kernels of a block whose figure is not settled, and any other kernel
    whose figure its passes do not reproduce."""
    def unsettled(timings: dict[int, Timing]) -> set[int]:
        out = {i for i, t in timings.items() if t.cycles is not None and not reproduced(t)}
        for k1, u1, k2, u2 in pairs:
            if k1 in timings and k2 in timings and \
                    not settled_figure(u1, timings[k1], u2, timings[k2]):
                out |= {k1, k2}
        return out
    return unsettled


def measure_block(text: str, syntax: str | None = None, path: str = "<input>",
                  options: RunOptions = BLOCK_OPTIONS, line_range: str | None = None,
                  region: str | None = None, cache_dir: str | None = None) -> BlockMeasurement:
    """Cycles per iteration of the block on this host, with what was measured and how.

    A block the CPU cannot run has no cycles and an error saying why. With `cache_dir`,
    results are kept under a key of the block's text, the CPU and the harness version.
    """
    block = prepare_block(text, syntax, path, line_range, region)
    check_host()
    cache = ResultCache(cache_dir, cpu_identity())
    try:
        hit = cached_block(cache, block, options)
        if hit is not None:
            return _describe(block, hit, cached=True)
        timing, = measure_blocks([block], options, cache)
    finally:
        cache.close()
    return _describe(block, timing, cached=False)


def cached_block(cache: ResultCache, block: PreparedBlock,
                 options: RunOptions) -> BlockTiming | None:
    """The cached timing of a block, or None (also for an entry this version cannot read)."""
    hit = cache.get(block_key(block.syntax, block.lines, cpu_identity(), options.cache_params()))
    if hit is None or not isinstance(hit.get("result"), dict):
        return None
    try:
        return BlockTiming.from_json(hit["result"])
    except MalformedTiming:
        return None


def measure_blocks(blocks: list[PreparedBlock], options: RunOptions = BLOCK_OPTIONS,
                   cache: ResultCache | None = None) -> list[BlockTiming]:
    """Time several prepared blocks in one harness build (a further build per round of fewer
    copies): their timings, in order; those with cycles are put in `cache`."""
    bodies = [rename_symbols(list(block.lines)) for block in blocks]
    pairs = [unroll_factors(len(body)) for body, _ in bodies]
    timed: list[dict[int, Timing]] = [{} for _ in blocks]
    todo = list(range(len(blocks)))
    for round_ in range(1 + FEWER_COPIES_ROUNDS):
        _time_pairs(blocks, bodies, pairs, timed, todo, options)
        todo = [j for j in todo if _longer_runs_slower(pairs[j], timed[j])]
        if not todo or round_ == FEWER_COPIES_ROUNDS:
            break
        for j in todo:
            half = pairs[j][0] // 2
            pairs[j] = (half, 2 * half)
    results = []
    for block, (_, symbols), pair, times in zip(blocks, bodies, pairs, timed):
        timing = _timing(pair, times, sorted(symbols))
        if cache is not None and timing.cycles is not None:
            cache.put(block_key(block.syntax, block.lines, cpu_identity(), options.cache_params()),
                      timing.cycles, None, result=timing.to_json())
        results.append(timing)
    return results


def _time_pairs(blocks, bodies, pairs, timed, todo: list[int], options: RunOptions) -> None:
    """Time the unroll pair (u, 2u) of each block in `todo` in one harness build, into
    timed[j][copies]."""
    kernels, where, kernel_pairs = [], [], []
    for j in todo:
        body, symbols = bodies[j]
        block = blocks[j]
        kernel_pairs.append((len(kernels), pairs[j][0], len(kernels) + 1, pairs[j][1]))
        for copies in pairs[j]:
            name = f"pm_b{j}_{copies}"
            names = {"@@" + new: f"{name}_{new}" for new in symbols.values()}
            own = [_substitute(line, names) for line in body]
            kernels.append(block_kernel(name, own * copies, block.syntax, block.counter,
                                        block.vector_width, block.layout,
                                        {old: names["@@" + new] for old, new in symbols.items()},
                                        copies))
            where.append((j, copies))
    timings = run_kernels(kernels, options, passes=PASSES, max_passes=MAX_PASSES,
                          unsettled=_unsettled_blocks(kernel_pairs))
    for (j, copies), timing in zip(where, timings):
        timed[j][copies] = timing


def _longer_runs_slower(pair: tuple[int, int], times: dict[int, Timing]) -> bool:
    """The pair's longer loop ran slower a copy than u copies more can explain (the overhead
    it implies far below zero), and fewer copies are left to try."""
    if pair[0] < 2 or any(times[k].error for k in pair):
        return False
    measured = per_copy(*((k, times[k]) for k in pair))
    return measured["method"] == "per-copy" and (measured.get("overhead") or 0.0) < 0


def _variant(copies: int, t: Timing) -> UnrollVariant:
    """One unroll variant's figures, per copy of the block and per loop iteration."""
    c = kernel_cycles(t)
    return UnrollVariant(unroll=copies, cycles_per_copy=None if c is None else round(c / copies, 5),
                         loop_cycles=None if c is None else round(c, 4),
                         spread=None if t.error else round(t.spread, 4), samples=t.samples,
                         confirmed=t.confirmed,
                         pass_cycles=tuple(round(p / copies, 5) for p in t.passes),
                         error=t.error or None, contended=t.contended, busy=t.busy)


def _timing(pair: tuple[int, int], times: dict[int, Timing], symbols: list[str]) -> BlockTiming:
    """The timing of one block from its unroll pair's timings (the fewest copies timed where
    longer loops ran slower a copy); every variant timed is reported."""
    measured = per_copy(*((k, times[k]) for k in pair))
    cycles = measured["cycles"]
    if measured["method"] == "per-copy" and cycles is not None:
        # no pair differed by its copies alone: the fastest a copy of any loop timed
        cycles = min(kernel_cycles(t) / k for k, t in times.items()
                     if kernel_cycles(t) is not None)
    short, long = (times[k] for k in pair)
    # stable: both variants reproduced their fastest runs within a process and across two
    # processes, closely enough that the figure they give together is settled, no sample was
    # kept while the canary said the core was shared, and they differ by the copies alone (a
    # large spread with a confirmed minimum is a busy machine, shown but not held against it)
    stable = bool(cycles is not None and measured["method"] == "difference"
                  and all(t.confirmed and not t.dirty and not t.busy and reproduced(t)
                          for t in (short, long))
                  and settled_figure(pair[0], short, pair[1], long))
    return BlockTiming(
        cycles=None if cycles is None else round(cycles, 5),
        spread=None if measured["spread"] is None else round(measured["spread"], 4),
        method=measured["method"],
        overhead=None if measured.get("overhead") is None else round(measured["overhead"], 3),
        variants=tuple(_variant(k, times[k]) for k in sorted(times)),
        symbols=tuple(symbols), stable=stable,
        error=None if cycles is not None else
        next((t.error for t in times.values() if t.error), "no usable timing"),
        unroll=pair)


def division_note(start: DivisionStart, line: int, text: str) -> str:
    """What a division of the block divides, and why (layout.py, docs/MEASUREMENT.md)."""
    head = f"line {line} '{text}'"
    if start.chained:
        kept = "" if start.dividend is None else \
            f": every iteration divides {start.dividend:#x}, a {start.quotient_bits}-bit quotient"
        return (f"{head}: its dividend is the quotient of a division before it, which a divisor "
                f"of {DIVISOR:#x} would bring down to 0 within two iterations; its divisor starts "
                f"as 1 instead (x / 1 keeps x){kept}")
    parts = []
    if start.dividend is not None:
        parts.append(f"dividend {start.dividend:#x}")
    if start.divisor is not None:
        parts.append(f"divisor {start.divisor:#x}")
    what = " and ".join(parts) if parts else "values the block computes itself"
    bits = f", a {start.quotient_bits}-bit quotient" if start.quotient_bits is not None else ""
    return (f"{head}: divides first {what}{bits} (the registers and words that feed a division "
            f"start as a typical one: a 64-bit quantity by a count, {DIVIDEND:#x} / "
            f"{DIVISOR:#x}; docs/MEASUREMENT.md)")


def _describe(block: PreparedBlock, timing: BlockTiming, cached: bool) -> BlockMeasurement:
    """The timing plus what was measured and how the block was set up."""
    dropped = () if block.dropped is None else \
        (DroppedInstruction(block.dropped.line, block.dropped.text.strip()),)
    notes = tuple(division_note(d, block.instructions[d.instruction].line,
                                block.lines[d.instruction]) for d in block.layout.divisions)
    return BlockMeasurement(
        timing=timing, instruction_count=len(block.lines), syntax=block.syntax, cpu=cpu_name(),
        loop_counter=block.counter or "memory", kernel=block.kernel, cached=cached,
        initial_registers=tuple(block.layout.registers),
        pointer_load_lines=tuple(block.instructions[i].line for i in block.layout.pointer_loads),
        dropped=dropped, notes=notes)
