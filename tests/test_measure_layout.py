"""The set-up of a measured block, checked without running it: which registers it touches,
the loop counter, refused instructions, initial register values and memory contents.

These are pure (parsing and planning only) and run on any host.
"""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest

from pmpredict.errors import InputError
from pmpredict.measure.block import (division_note, instruction_semantics, prepare_block,
                                    registers_touched)
from pmpredict.measure.instantiate import DIVIDEND, DIVISOR
from pmpredict.measure.layout import (NORMAL_FILL, POINTEE_BASE, REGION_BYTES, SHIFT_COUNT,
                                      GPR_FAMILIES, WINDOW_BYTES, page_lines)
from pmpredict.asm.parse import parse


def touched(text: str, syntax: str = "att") -> set[str]:
    return registers_touched([instruction_semantics(i, syntax)
                              for i in parse(text, syntax, "t.s").instructions])


@pytest.mark.parametrize("text, expected", [
    ("cqto\n", {"rax", "rdx"}),
    ("idivq %rbx\n", {"rax", "rbx", "rdx"}),
    ("mulq %rbx\n", {"rax", "rbx", "rdx"}),
    ("imulq %rbx, %rcx\n", {"rbx", "rcx"}),                 # two operands: nothing implicit
    ("shlq %cl, %rax\n", {"rax", "rcx"}),
    ("rep stosq\n", {"rax", "rcx", "rdi"}),
    ("movsb\n", {"rsi", "rdi"}),
    ("push %rbx\n", {"rbx", "rsp"}),
    ("pop %rbx\n", {"rbx", "rsp"}),
    ("cpuid\n", {"rax", "rbx", "rcx", "rdx"}),
    ("rdtsc\n", {"rax", "rdx"}),
    ("mov 8(%rsp), %rax\n", {"rax", "rsp"}),
    ("vmulpd (%rdx,%rax,8), %ymm2, %ymm1\n", {"rax", "rdx"}),
    ("mulx rax, rbx, rcx\n", {"rax", "rbx", "rcx", "rdx"}),
])
def test_registers_touched(text, expected):
    syntax = "intel" if "," in text and "%" not in text else "att"
    assert touched(text, syntax) == expected


def test_counter_avoids_implicit_registers():
    """r8-r15 and rbx named, cqto writes rdx: the old choice (rdx) would be clobbered."""
    text = ("add %r8, %r9\nadd %r10, %r11\nadd %r12, %r13\nadd %r14, %r15\nmov %rbx, %rax\n"
            "cqto\nidivq %rbx\n")
    block = prepare_block(text, "att")
    assert block.counter not in touched(text) and block.counter is not None
    assert block.counter in ("rsi", "rdi", "rcx")


def test_memory_counter_when_every_register_is_used():
    names = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
             "r13", "r14", "r15"]
    text = "".join(f"add %{a}, %{b}\n" for a, b in zip(names, names[1:] + names[:1]))
    block = prepare_block(text, "att")
    assert block.counter is None                        # dec qword ptr [rip + pm_counter]
    from pmpredict.measure.codegen import block_kernel
    kernel = block_kernel("k", list(block.lines), "att", None, 0, block.layout)
    assert f"dec qword ptr [rip + pm_counter + {block.layout.counter_offset}]" in kernel.asm


@pytest.mark.parametrize("text, what", [
    ("add %rax, %rbx\nud2\n", "deliberate trap"),
    ("int3\n", "deliberate trap"),
    ("add %rax, %rbx\nsyscall\n", "system instruction"),
    ("hlt\n", "system instruction"),
    ("mov %cr0, %rax\n", "system instruction"),
    ("int $0x80\n", "system instruction"),
    ("wrmsr\n", "system instruction"),
])
def test_traps_and_system_instructions_are_refused(text, what):
    with pytest.raises(InputError) as err:
        prepare_block(text, "att", "b.s")
    line = text.count("\n", 0, text.index(text.strip().splitlines()[-1])) + 1
    assert str(err.value).startswith(f"b.s:{line}:1: ")
    assert what in str(err.value)


def address_registers(text, syntax="att"):
    block = prepare_block(text, syntax)
    return block, dict(block.layout.registers)


def test_address_registers_start_on_distinct_lines_of_one_page():
    """No two registers alias, share a line, or 4K-alias; each is 64-byte aligned (aligned
    vector loads work); they share one page, spread evenly over it (streams that move
    together cross pages together), inside a region mapped around them."""
    block, regs = address_registers("mov %al, (%rbx)\nmov (%rcx), %rdx\nvmovaps (%rsi), %ymm0\n")
    bases = [regs[r] for r in ("rbx", "rcx", "rsi")]
    assert len({v // 4096 for v in bases}) == 1
    assert sorted(b - min(bases) for b in bases) == [0, 1344, 2688]      # 4096 / 3, in lines
    assert all(v % 64 == 0 for v in bases)
    data = next(g for g in block.layout.regions if g.name == "data")
    assert all(data.address + 4096 <= v and v + 8192 <= data.address + data.size for v in bases)
    assert data.window[0] <= data.address and data.address + data.size <= sum(data.window)
    # registers the block does not address through get valid memory elsewhere
    spare = next(g for g in block.layout.regions if g.name == "spare")
    assert spare.address <= regs["r8"] < spare.address + spare.size
    assert regs["rax"] // 4096 != regs["rbx"] // 4096 and regs["rdx"] not in bases


def test_stack_operands_use_a_region_of_their_own():
    block, regs = address_registers("mov %rax, 0x8(%rsp)\nmov 0x58(%rsp), %rbx\npush %rcx\n"
                                    "pop %rdx\n")
    stack = next(g for g in block.layout.regions if g.name == "stack")
    data = next(g for g in block.layout.regions if g.name == "data" or g.name == "spare")
    assert stack.window != data.window
    assert stack.address < regs["rsp"] - 0x100 and regs["rsp"] + 0x100 < stack.address + stack.size
    from pmpredict.measure.codegen import block_kernel
    asm = block_kernel("k", list(block.lines), "att", block.counter, 0, block.layout).asm
    lines = asm.split("\n")
    # the harness's rsp is saved before the block's is set, and restored after the loop
    assert lines.index("mov qword ptr [rip + pm_saved_rsp], rsp") < lines.index(
        f"mov rsp, {regs['rsp']}") < lines.index("jnz 1b") < lines.index(
        "mov rsp, qword ptr [rip + pm_saved_rsp]")


def test_index_registers_start_small_and_implicit_data_at_zero():
    _, regs = address_registers("vmulpd (%rdx,%rax), %ymm2, %ymm1\nvaddpd (%rsi,%rax), %ymm1, "
                                "%ymm1\naddq $32, %rax\n")
    assert regs["rax"] == 64 and regs["rdx"] >= 1 << 30 and regs["rsi"] - regs["rdx"] == 2048
    _, regs = address_registers("cqto\nidivq %rbx\n")
    assert regs["rax"] == DIVIDEND and regs["rbx"] == 1     # x / 1 keeps x: no overflow
    _, regs = address_registers("rep stosq\n")
    assert regs["rcx"] == 0                                # nothing to repeat: no hang


@pytest.mark.parametrize("text, count", [
    ("shll %cl, %eax\ncmovgeq (%rsi), %r10\n", "rcx"),
    ("shrdq %cl, %rbx, %rax\n", "rcx"),
    ("rorl %cl, %r9d\nsete %r8b\n", "rcx"),
])
def test_a_shift_count_in_a_register_is_not_zero(text, count):
    """A line-aligned home would shift by 0, which leaves the flags unchanged (Zen 4: `shl
    eax, cl; cmovge` 36 cycles a loop with cl 0, 1.00 with 3): the count starts at 3, for
    32- and 64-bit shifts alike; an address register keeps its aligned home."""
    _, regs = address_registers(text)
    assert regs[count] % 32 == SHIFT_COUNT and regs[count] % 64 == SHIFT_COUNT
    _, regs = address_registers("shlq %cl, %rax\nmovq 8(%rcx), %rbx\n")
    assert regs["rcx"] % 64 == 0                          # an address: its home, aligned
    _, regs = address_registers("shlq $3, %rax\naddq %rcx, %rbx\n")
    assert regs["rcx"] % 64 == 0                          # no shift count: as before


def is_normal_or_zero(bits: int, width: int) -> bool:
    exponent_bits = {32: 8, 64: 11}[width]
    exponent = (bits >> (width - 1 - exponent_bits)) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << (width - 1 - exponent_bits)) - 1)
    return exponent != 0 or mantissa == 0


def test_memory_holds_normal_numbers_at_every_width():
    assert struct.unpack("<2f", NORMAL_FILL.to_bytes(8, "little")) == (1.0, 1.0)
    assert struct.unpack("<d", NORMAL_FILL.to_bytes(8, "little"))[0] == pytest.approx(0.0078125)
    for width in (32, 64):
        assert is_normal_or_zero(NORMAL_FILL & ((1 << width) - 1), width)
    block, _ = address_registers(open("examples/triad_avx.s").read())
    # every region the block loads from (the spare one is addressed by nothing: it holds
    # pointers into itself, test_a_spare_register_stored_where_a_chase_loads_stays_an_address)
    assert all(g.fill == NORMAL_FILL and not g.slots for g in block.layout.regions
               if g.name != "spare")
    assert block.layout.fault_fill == NORMAL_FILL


def test_pointer_chasing_gets_pointers_only_where_they_are_loaded():
    """`mov (%rax), %rax`: the word it loads holds an address (below 4 GiB, so a 32-bit
    load works too) whose halves read as normal floats; the words it does not load keep
    1.0f, so a double loaded elsewhere in the region is normal."""
    block, regs = address_registers("mov 16(%rbx), %rcx\nvaddpd 32(%rbx), %ymm0, %ymm0\n"
                                    "vaddpd (%rcx), %ymm1, %ymm1\nmov 8(%rcx), %rbx\n")
    layout = block.layout
    assert [block.lines[i] for i in layout.pointer_loads] == ["mov 16(%rbx), %rcx",
                                                               "mov 8(%rcx), %rbx"]
    rbx = next(g for g in layout.regions if g.name == "data")
    (offset, pointer), = rbx.slots                     # only `16(%rbx)` holds a pointer
    assert rbx.address + offset == regs["rbx"] + 16 and rbx.fill == NORMAL_FILL
    pointee = next(g for g in layout.regions if g.name == "pointee")
    assert pointee.address == POINTEE_BASE and pointer < 1 << 32
    assert pointee.address < pointer < pointee.address + REGION_BYTES
    # the pointee region: 8(%rcx) holds the next rbx, 16(next rbx) the next rcx (the chase
    # goes on, each load with a target of its own); (%rcx) stays 1.0f
    slots = dict(pointee.slots)
    second = slots[pointer - POINTEE_BASE + 8]
    assert second != pointer and POINTEE_BASE < second < POINTEE_BASE + REGION_BYTES
    assert slots == {pointer - POINTEE_BASE + 8: second, second - POINTEE_BASE + 16: pointer}
    assert pointee.fill == NORMAL_FILL
    low, high = pointer & 0xFFFFFFFF, pointer >> 32
    assert is_normal_or_zero(low, 32) and is_normal_or_zero(high, 32)


def test_a_misaligned_data_load_reads_whole_floats():
    """The fill holds 1.0f in each half of a word; a load at an offset that is not a multiple
    of 4 would read the halves of two floats, a denormal (Zen 4: `vmulss xmm0, xmm0, [rdi +
    189]` 4.21 cycles a link where at + 188 it is 3.00). The fill is written again from such
    a load's offset, for every byte it reads; aligned loads and pointer regions keep theirs."""
    block = prepare_block("vmulss xmm0, xmm0, dword ptr [rdi + 189]\n"
                          "vmovdqu ymm1, ymmword ptr [rsi + 445]\n"
                          "mov rax, qword ptr [rbx + 8]\nmov rcx, qword ptr [rdx + 12]\n", "intel")
    regs, data = dict(block.layout.registers), \
        next(g for g in block.layout.regions if g.name == "data")
    memory = bytearray(struct.pack("<Q", data.fill) * (REGION_BYTES // 8))
    for offset, word in data.slots:
        memory[offset:offset + 8] = struct.pack("<Q", word)

    def floats(register: str, disp: int, count: int) -> list[float]:
        at = regs[register] - data.address + disp
        return list(struct.unpack_from(f"<{count}f", memory, at))
    assert floats("rdi", 189, 1) == [1.0]
    assert floats("rsi", 445, 8) == [1.0] * 8               # every lane of the ymm load
    assert {o for o, _ in data.slots} == {regs["rdi"] - data.address + 189} | \
        {regs["rsi"] - data.address + 445 + 8 * k for k in range(4)}   # 8 and 12: aligned
    chase, _ = address_registers("mov 3(%rax), %rax\n")            # a pointer's region
    assert all(word != NORMAL_FILL for g in chase.layout.regions for _, word in g.slots)


def test_a_chase_through_a_moving_register_fills_its_region_with_pointers():
    block, _ = address_registers("mov (%rax), %rbx\nadd $8, %rax\nmov (%rbx), %rcx\n")
    rax = next(g for g in block.layout.regions if g.name == "data")
    assert POINTEE_BASE < rax.fill < POINTEE_BASE + REGION_BYTES       # every word a pointer
    assert block.layout.fault_fill == rax.fill                          # and beyond the region


def test_every_register_family_is_known():
    assert set(GPR_FAMILIES) == {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"} | {
        f"r{i}" for i in range(8, 16)}


def test_per_copy_cycles_cancel_the_loop_overhead():
    """T(u) = c u + overhead: the difference of the variants gives c exactly; a slightly
    negative overhead is noise (fit through the origin); a large one means the variants
    did not differ by u copies alone (the smaller T / copies, flagged "per-copy")."""
    from pmpredict.measure.block import per_copy
    from pmpredict.measure.runner import Timing

    def variants(t1, t2, u=12):
        return (u, Timing(t1, t1, t1, 0.01)), (2 * u, Timing(t2, t2, t2, 0.02))
    four_adds = per_copy(*variants(12.25, 24.25))          # Zen 4: dec/jnz takes an ALU slot
    assert four_adds == {"cycles": 1.0, "method": "difference", "overhead": 0.25, "spread": 0.02}
    noisy = per_copy(*variants(11.9, 24.1))
    assert noisy["method"] == "difference" and noisy["overhead"] == 0.0
    assert noisy["cycles"] == pytest.approx((12 * 11.9 + 24 * 24.1) / (12 ** 2 + 24 ** 2))
    odd = per_copy(*variants(12.0, 40.0))
    assert odd["method"] == "per-copy" and odd["cycles"] == 1.0
    failed = per_copy((12, Timing(error="SIGILL: x")), (24, Timing(24.0, 24.0, 24.0, 0.0)))
    assert failed["cycles"] == 1.0 and failed["method"] == "per-copy"


def test_a_block_whose_longer_loops_run_slower_a_copy_is_timed_at_fewer_copies(monkeypatch):
    """Zen 4 renames up to 24 read-modify-writes of one place through a base each has just
    rewritten (`mov rdi, 0x640400; add qword ptr [rdi + 192], 1`), 1.0 cycles a link, and none
    of 25 or more: 3.3 a copy at 25 copies, 6.4 at 50. Such a block is timed again at half the
    copies until a pair differs by its copies alone, and that pair gives the figure; a block
    whose loops all run alike is timed once."""
    import pmpredict.measure.block as block_module
    from pmpredict.measure.runner import Timing

    def loop_cycles(copies: int, limit: int) -> float:          # the dec/jnz: 0.5 a loop
        return copies * (1.0 if copies <= limit else min(6.4, 2.26 * (copies - limit) + 1)) + 0.5

    builds, limits = [], {"pm_b0": 24, "pm_b1": 99}     # per block: copies it renames

    def run_kernels(kernels, options, **_):
        builds.append([k.name for k in kernels])
        out = []
        for k in kernels:
            block, copies = k.name.rsplit("_", 1)
            c = loop_cycles(int(copies), limits[block])
            out.append(Timing(c, c, c, 0.0, samples=3, confirmed=True, passes=(c, c),
                              counted=(c, c)))
        return out
    monkeypatch.setattr(block_module, "run_kernels", run_kernels)
    rebased = prepare_block("mov rdi, 0x640400\nadd qword ptr [rdi + 192], 1\n", "intel")
    plain = prepare_block("add rax, rbx\nadd rcx, rbx\n", "intel")
    first, second = block_module.measure_blocks([rebased, plain])
    assert (first.cycles, first.method, first.pair, first.fewer_copies) == \
        (1.0, "difference", (12, 24), True)
    assert [v.unroll for v in first.variants] == [12, 24, 25, 50] and first.stable
    assert (second.cycles, second.pair, second.fewer_copies) == (1.0, (25, 50), False)
    assert builds == [["pm_b0_25", "pm_b0_50", "pm_b1_25", "pm_b1_50"], ["pm_b0_12", "pm_b0_24"]]
    # no pair within the rounds differs by its copies alone: the fastest a copy of any loop
    monkeypatch.setattr(block_module, "FEWER_COPIES_ROUNDS", 1)
    limits["pm_b0"] = 23
    only, = block_module.measure_blocks([rebased])
    assert (only.pair, only.method, only.stable) == ((12, 24), "per-copy", False)
    assert only.cycles == pytest.approx(min(loop_cycles(k, 23) / k for k in (12, 24, 25, 50)),
                                        abs=1e-5)


def test_a_block_figure_is_settled_only_when_a_second_pass_would_not_move_it():
    """(T(2u) - T(u)) / u doubles a variant's disagreement: a short variant whose second
    process read it 3% slow moves the figure 3% (a Zen 3 beside a busy guest read two loads
    and a store 0.967, then 0.998), though each variant agrees with itself within 2%. Such a
    block gets more passes, and is not called stable until its figure is settled."""
    from pmpredict.measure.block import _unsettled_blocks, figure_band, settled_figure
    from pmpredict.measure.runner import PASS_AGREEMENT, Timing

    def passes(*loop_cycles):
        return Timing(loop_cycles[0], loop_cycles[0], loop_cycles[0], 0.0,
                      passes=loop_cycles, counted=loop_cycles)
    low, high = figure_band(17, [17.0, 17.5], 34, [34.0, 34.05])
    # T(2u)'s second pass with T(u)'s first: an overhead just below zero, fit through the origin
    assert high == pytest.approx((17 * 17.0 + 34 * 34.05) / (17 ** 2 + 34 ** 2))
    assert low == pytest.approx((34.0 - 17.5) / 17)     # T(u)'s second pass: 3% lower
    assert 17.5 / 17 - 1 < PASS_AGREEMENT * 2           # each variant agrees with itself
    assert not settled_figure(17, passes(17.0, 17.5), 34, passes(34.0, 34.05))
    assert settled_figure(17, passes(17.0, 17.05), 34, passes(34.0, 34.05))
    assert settled_figure(17, passes(17.0), 34, passes(34.0, 34.05))   # one pass: nothing to say
    unsettled = _unsettled_blocks([(0, 17, 1, 34)])     # kernels 2 and 3 time no block
    assert unsettled({0: passes(17.0, 17.5), 1: passes(34.0, 34.05),
                      2: passes(8.0, 8.01), 3: passes(16.0, 17.0)}) == {0, 1, 3}
    assert unsettled({0: passes(17.0, 17.05), 1: passes(34.0, 34.05)}) == set()


def test_a_block_measurement_keeps_the_json_of_the_dict_it_replaced():
    """BlockTiming is what the cache keeps (and reads back unchanged); BlockMeasurement's
    JSON is `pmpredict measure --json`, keys in their documented order, the optional ones
    (symbols, error, pointer_loads, dropped) only when there is something to say."""
    import json
    from pmpredict.measure import BlockTiming
    from pmpredict.measure.block import _describe, _timing
    from pmpredict.measure.runner import Timing
    block = prepare_block(".L1:\nvmulps .LC0(%rip), %ymm0, %ymm0\nmov (%rax), %rax\njne .L1\n",
                          "att")
    fine = Timing(25.5, 25.5, 25.5, 0.01, samples=7, passes=(25.5, 25.6))
    timing = _timing((25, 50), {25: fine, 50: Timing(50.5, 50.5, 50.5, 0.02, samples=9)},
                     [".LC0"])
    assert list(timing.to_json()) == ["cycles", "spread", "method", "overhead", "variants",
                                      "symbols", "stable", "unroll"]
    assert BlockTiming.from_json(json.loads(json.dumps(timing.to_json()))) == timing
    measured = _describe(block, timing, cached=True)
    data = measured.to_json()
    assert list(data) == ["cycles", "spread", "stable", "range", "instructions", "syntax", "cpu",
                          "loop_counter", "kernel", "method", "overhead", "variants", "unroll",
                          "symbols", "cached", "registers", "pointer_loads", "dropped"]
    assert (data["cycles"], data["method"], data["overhead"]) == (1.0, "difference", 0.5)
    assert data["range"] == [1.0, 1.024]          # the figure and every pass of every variant
    assert data["variants"][0] == {"unroll": 25, "cycles": 1.02, "loop_cycles": 25.5,
                                   "spread": 0.01, "samples": 7, "confirmed": True,
                                   "passes": [1.02, 1.024]}
    assert data["dropped"] == [{"line": 4, "text": "jne .L1"}] and data["pointer_loads"] == [3]
    assert data["instructions"] == measured.instruction_count == 2
    assert data["registers"]["rax"] == hex(dict(measured.initial_registers)["rax"])
    failed = _describe(prepare_block("add %rax, %rbx\n", "att"),
                       _timing((50, 100), dict.fromkeys((50, 100), Timing(error="crash: SIGSEGV")),
                               []), cached=False)
    assert failed.cycles is None and failed.error == "crash: SIGSEGV"
    assert list(failed.to_json())[-5:] == ["variants", "unroll", "error", "cached", "registers"]
    assert failed.variants[0].to_json()["error"] == "crash: SIGSEGV"


# --- distinct page offsets ----------------------------------------------------------------

def test_every_start_has_a_page_offset_of_its_own():
    """rsp, every address register, every pointer target, every rip-relative data object, a
    loop counter in memory and the spare registers start on distinct lines of a page (no
    store through one 4K-aliases a load through another), each 64-byte aligned; the
    address registers still share one page, spread evenly from line 0."""
    text = ("mov %rax, 8(%rsp)\nmov (%rbx), %rcx\nvaddpd (%rcx), %ymm0, %ymm0\n"
            "mov 16(%rdx), %rsi\nmov %r8, (%rsi)\nvmulps .LC0(%rip), %ymm1, %ymm1\n"
            "vaddps .LC1(%rip), %ymm1, %ymm1\nmov %r9, (%rdi)\npush %r10\npop %r11\n")
    block = prepare_block(text, "att")
    layout, regs = block.layout, dict(block.layout.registers)
    address = [regs[r] for r in ("rbx", "rdx", "rdi")]
    assert len({a // 4096 for a in address}) == 1 and min(a % 4096 for a in address) == 0
    pointee = next(g for g in layout.regions if g.name == "pointee")
    targets = [word for region in layout.regions for _, word in region.slots
               if pointee.address <= word < pointee.address + pointee.size]
    assert len(targets) == len(layout.pointer_loads) == 2
    spare = [v for r, v in regs.items() if r not in ("rbx", "rdx", "rdi", "rsp")
             and 1 << 30 <= v]
    starts = address + [regs["rsp"]] + targets + spare
    offsets = [a % 4096 for a in starts] + [o for _, o in layout.symbol_offsets] + \
        [layout.counter_offset]
    assert len(layout.symbol_offsets) == 2
    assert all(o % 64 == 0 for o in offsets)
    assert len(set(offsets)) == len(offsets), sorted(offsets)
    # regions and windows are page-aligned: the offset in the region is the page offset
    assert all(g.address % 4096 == 0 and g.window[0] % 4096 == 0 for g in layout.regions)


def test_page_lines_are_distinct_while_there_are_lines():
    for address in (0, 1, 3, 7, 15):
        for others in (0, 1, 10, 64 - address):
            ours, rest = page_lines(address, others)
            assert len(set(ours + rest)) == address + others
            assert all(0 <= line < 64 for line in ours + rest)
            assert ours == [i * (64 // max(1, address)) for i in range(address)]
    ours, rest = page_lines(3, 70)                          # more than a page: lines again
    assert len(rest) == 70 and len(set(rest)) == 64 - 3


def test_symbols_and_a_memory_counter_go_to_their_page_offsets():
    from pmpredict.measure.codegen import block_kernel
    names = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
             "r13", "r14", "r15"]
    text = "".join(f"add %{a}, %{b}\n" for a, b in zip(names, names[1:] + names[:1])) + \
        "vmulps .LC0(%rip), %ymm1, %ymm1\n"
    block = prepare_block(text, "att")
    assert block.counter is None
    offsets = dict(block.layout.symbol_offsets)
    asm = block_kernel("k", list(block.lines), "att", None, 256, block.layout,
                       {".LC0": "k_sym0"}).asm
    assert f".p2align 12\n.skip {offsets['.LC0']}\nk_sym0:" in asm
    assert f"dec qword ptr [rip + pm_counter + {block.layout.counter_offset}]" in asm
    assert offsets[".LC0"] != block.layout.counter_offset


# --- divisions ---------------------------------------------------------------------------

def division_layout(text):
    block = prepare_block(text, "att")
    return block, dict(block.layout.registers), {d.instruction: d for d in block.layout.divisions}


def test_what_feeds_a_division_starts_as_a_typical_division():
    """The divisor (a register at entry or a loaded word) starts as DIVISOR, the dividend as
    DIVIDEND, its high half as 0; a value feeding the divisor and the dividend is the divisor."""
    _, regs, starts = division_layout("mov %rcx, %rax\nxor %edx, %edx\ndivq %rbx\n")
    assert (regs["rcx"], regs["rbx"]) == (DIVIDEND, DIVISOR)
    assert (starts[2].dividend, starts[2].divisor, starts[2].chained) == (DIVIDEND, DIVISOR, False)
    assert starts[2].quotient_bits == 27
    _, regs, starts = division_layout("movq %rbx, %rax\ncqto\nidivq %rbx\n")
    assert regs["rbx"] == DIVISOR and starts[2].quotient_bits == 1
    # two divisors, two dividends: distinct registers, distinct values, the same quotients
    _, regs, _ = division_layout("mov %rcx, %rax\nxor %edx, %edx\ndivq %rbx\n"
                                 "mov %r8, %rax\nxor %edx, %edx\ndivq %r9\n")
    assert {regs["rbx"], regs["r9"]} == {DIVISOR, DIVISOR + 2}
    assert {regs["rcx"], regs["r8"]} == {DIVIDEND, DIVIDEND + 2}
    # loaded: the words the division reads
    block, regs, starts = division_layout("mov 8(%rsi), %rcx\nmov (%rsi), %rax\n"
                                          "mov 16(%rsi), %rdx\ndivw %cx\ndivl 24(%rsi)\n")
    data = next(g for g in block.layout.regions if g.name == "data")
    words = {data.address + offset - regs["rsi"]: word for offset, word in data.slots}
    assert words == {0: DIVIDEND, 8: DIVISOR, 16: 0, 24: DIVISOR}
    assert starts[3].divisor == DIVISOR and starts[3].quotient_bits == 5
    # divl divides divw's quotient, dx its remainder: not by 1 (edx:eax / 1 would overflow)
    assert not starts[4].chained and starts[4].divisor == DIVISOR


def test_a_chained_dividend_is_divided_by_one():
    """`xor edx, edx; div rbx` divides what the last one left: with DIVISOR the dividend would
    be 0 after two iterations; x / 1 keeps x, so every iteration divides DIVIDEND. A byte
    division's ax stays below 128 (its quotient must fit a signed byte)."""
    for text in ("xorl %edx, %edx\ndivq %rbx\n", "cqto\nidivq %rbx\n", "divq %rbx\n",
                 "idivl %ebx\n", "divw %bx\n"):
        _, regs, starts = division_layout(text)
        (start,) = starts.values()
        assert start.chained and regs["rbx"] == 1 and regs["rax"] == DIVIDEND, text
    _, regs, starts = division_layout("idivb %bl\n")
    assert regs["rbx"] == 1 and regs["rax"] & 0xFFFF < 128 and starts[0].chained
    _, regs, starts = division_layout("divb (%rsi)\nadd $8, %rsi\n")
    assert regs["rax"] & 0xFFFF < 128 and starts[0].divisor == 1


def test_a_divisor_the_block_sets_itself_is_its_own():
    """A divisor moved in as an immediate, or stored by the block before the division loads
    it, is the block's: the layout cannot make it 1, so the division is not chained even
    though its dividend comes from a quotient, and it divides DIVIDEND (a byte division: ax
    uncut, 0x1a2b). A store to another address leaves the divisor the layout's (chained)."""
    restore = "imulq %rbx, %rax\naddq %rdx, %rax\nxorl %edx, %edx\n"
    for text in ("movl $0x1d0135, %ebx\ndivq %rbx\n" + restore,
                 "movl $7, %ebx\nxorl %edx, %edx\ndivq %rbx\n",
                 "movl $0x1d0135, %ebx\nmovq %rbx, 64(%rcx)\ndivq 64(%rcx)\n" + restore):
        block, regs, starts = division_layout(text)
        (start,) = starts.values()
        assert not start.chained and start.divisor is None, text
        assert regs["rax"] == DIVIDEND and regs["rdx"] == 0, text
        assert "x / 1" not in division_note(start, 1, "div")
    _, regs, starts = division_layout("movl $0x1d0135, %ebx\nmovq %rbx, 64(%rcx)\n"
                                      "divb 64(%rcx)\nmovzbl %ah, %esi\nmulb %bl\n"
                                      "addq %rsi, %rax\n")
    assert not starts[2].chained and regs["rax"] & 0xFFFF == 0x1A2B
    _, regs, starts = division_layout("movq %rbx, 72(%rcx)\nxorl %edx, %edx\ndivq 64(%rcx)\n")
    assert starts[2].chained and starts[2].divisor == 1


def test_a_remainder_used_as_an_index_stays_in_its_window():
    """A hash table: `hash % buckets` indexes the table. The remainder is below DIVISOR, so the
    address stays inside the table register's window (mapped on demand)."""
    block, regs, starts = division_layout("xor %edx, %edx\nmov %r8, %rax\ndivq (%rsi)\n"
                                          "mov (%rdi,%rdx,8), %r9\n")
    assert regs["r8"] == DIVIDEND and starts[2].divisor == DIVISOR
    data = next(g for g in block.layout.regions if g.name == "data")
    assert data.window[0] <= regs["rdi"] and regs["rdi"] + 8 * DIVISOR < sum(data.window)
    assert 8 * DIVISOR < WINDOW_BYTES // 2
    assert DIVIDEND % DIVISOR < DIVISOR


def test_division_notes_say_what_was_divided():
    from pmpredict.measure.block import _describe, _timing
    from pmpredict.measure.runner import Timing
    t = Timing(25.5, 25.5, 25.5, 0.01, samples=7)
    timing = _timing((25, 50), {25: t, 50: Timing(50.5, 50.5, 50.5, 0.02, samples=9)}, [])
    chained = _describe(prepare_block("xorl %edx, %edx\ndivq %rbx\n", "att"), timing, False)
    (note,) = chained.to_json()["notes"]
    assert note.startswith("line 2 'divq %rbx'") and "x / 1 keeps x" in note
    assert f"{DIVIDEND:#x}, a 47-bit quotient" in note
    typical = _describe(prepare_block("movq %rbx, %rax\ncqto\nidivq %rbx\n", "att"), timing,
                        False)
    (note,) = typical.to_json()["notes"]
    assert f"dividend {DIVISOR:#x} and divisor {DIVISOR:#x}, a 1-bit quotient" in note
    assert list(typical.to_json())[-1] == "notes"
    assert "notes" not in _describe(prepare_block("add %rax, %rbx\n", "att"), timing,
                                    False).to_json()


def test_the_text_view_shows_the_notes():
    """`notes` is a field of every BlockMeasurement (empty: no key in the JSON, no line in the
    text); the text view prints each note as a `Note:` line after the rest."""
    from pmpredict.measure.block import _describe, _timing
    from pmpredict.measure.block_measurement import BlockMeasurement
    from pmpredict.measure.runner import Timing
    from pmpredict.views import measure as view
    timing = _timing((25, 50), {25: Timing(25.5, 25.5, 25.5, 0.01, samples=7),
                                50: Timing(50.5, 50.5, 50.5, 0.02, samples=9)}, [])
    plain = _describe(prepare_block("add %rax, %rbx\njmp .L1\n", "att"), timing, False)
    assert type(plain) is BlockMeasurement and plain.notes == ()
    text = view.text(plain, path="k.s")
    assert "Note" not in text and text.splitlines()[-1].startswith("  (line 2: 'jmp .L1'")
    noted = _describe(prepare_block("xorl %edx, %edx\ndivq %rbx\n", "att"), timing, False)
    assert type(noted) is BlockMeasurement and len(noted.notes) == 1
    lines = view.text(noted, path="k.s").splitlines()
    assert lines[:-1] == view.text(replace(noted, notes=()), path="k.s").splitlines()
    assert lines[-1] == f"  Note: {noted.notes[0]}"
    assert view.json(noted)["notes"] == list(noted.notes)


def test_a_conditional_move_from_memory_into_an_address_register_loads_a_pointer():
    """`cmovge 16(%r8), %r13` then `24(%r13)`: the cmov copies the loaded word (or keeps r13),
    never adds it, so the word is a pointer, as a plain load's would be (a BHive block that
    chased through a cmov crashed the harness with SIGSEGV when the word held 0, read as an
    addend); an add of a loaded word to an address register still reads 0 there."""
    block, _ = address_registers("mov %r13, %r8\ntest %eax, %eax\nmov 24(%r13), %rdx\n"
                                 "mov %rdx, %r13\ncmovge 16(%r8), %r13\ntest %r13, %r13\n")
    lines = [block.lines[i] for i in block.layout.pointer_loads]
    assert lines == ["mov 24(%r13), %rdx", "cmovge 16(%r8), %r13"]
    for region in block.layout.regions:
        for _, word in region.slots:
            assert POINTEE_BASE <= word < POINTEE_BASE + REGION_BYTES
    added, _ = address_registers("add 8(%r14), %r15\nmov 96(%r15), %rax\n")
    data = next(g for g in added.layout.regions if g.name == "data")
    assert 0 in dict(data.slots).values() and not added.layout.pointer_loads


def test_a_spare_register_stored_where_a_chase_loads_stays_an_address():
    """`mov (%rdx), %rax ; mov %r14, (%rdx)` with rax the next rdx: the chase loads back the
    r14 it stored (the walk does not follow memory), then follows it into the spare region;
    every word there is a pointer into the spare region itself, so the chase never leaves
    mapped memory (a BHive block that crashed the harness with SIGSEGV now measures)."""
    block, regs = address_registers("mov %rax, %rdx\nlea 64(%rsp), %rdi\nmov (%rdx), %rax\n"
                                    "mov %r14, (%rdx)\nmov $2, %edx\nmov %rax, (%rdi)\n")
    spare = next(g for g in block.layout.regions if g.name == "spare")
    assert spare.address <= regs["r14"] < spare.address + REGION_BYTES
    assert spare.address <= spare.fill < spare.address + REGION_BYTES and not spare.slots


@pytest.mark.parametrize("text, drift", [
    ("movq (%rbx), %rax\naddq $64, %rbx\n", (("rbx", 64),)),
    ("popq %rbx\npopq %rcx\n", (("rsp", 16),)),
    ("leaq 8(%rdi), %rdi\nsubq $2, %rdi\n", (("rdi", 6),)),
    ("pushq %rbx\naddq $8, %rsp\n", ()),                 # back where it was: nothing to undo
    ("movq (%rbx), %rbx\n", ()),                         # a chase: not a constant
    ("addq $8, %rbx\nmovq %rax, %rbx\n", ()),            # also written otherwise
])
def test_registers_moved_by_a_constant_every_pass_are_known(text, drift):
    block, _ = address_registers(text)
    assert block.layout.drift == drift


def test_the_block_loop_moves_drifting_registers_back_once_per_iteration():
    """Each loop iteration of the harness streams over the same addresses: an lea per
    drifting register, by the copies' whole drift, before the loop branch."""
    from pmpredict.measure.codegen import block_kernel
    block, _ = address_registers("movq (%rbx), %rax\naddq $64, %rbx\npopq %rcx\n")
    kernel = block_kernel("k", list(block.lines) * 3, "att", block.counter, 0, block.layout,
                          copies=3)
    loop = kernel.asm[kernel.asm.index("1:"):kernel.asm.index("jnz 1b")]
    assert "lea rbx, [rbx - 192]" in loop and "lea rsp, [rsp - 24]" in loop
