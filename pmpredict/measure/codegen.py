"""C harness generation: kernels (loops of instructions as inline assembly) + the timing template.

Pure text generation, no I/O beyond reading the packaged template. Each kernel is a
function `void k(char *scratch, long iterations)` written as a top-level `__asm__`
block, so the loop has exactly the instructions we asked for and the whole register
file is ours (callee-saved registers are pushed and popped by the kernel itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from pmpredict.isa import semantics
from pmpredict.measure.instantiate import (BASE_REGISTER, COUNTER_REGISTER, HARNESS_ISA,
                                           SCRATCH_BYTES, Window, stack_delta)
from pmpredict.measure.layout import NORMAL_FILL, Layout

# Bump when the generated code or the timing method changes: it is part of the cache key.
HARNESS_VERSION = 9
# Bump when only the block loop changes (block_kernel): part of the blocks' cache key, so the
# experiments a model was inferred from stay cached. 2: drifting registers moved back. 3: a
# shift count in a register starts at 3, not 0 (layout.SHIFT_COUNT). 4: a block whose longer
# loops run slower a copy is timed at fewer copies (block.FEWER_COPIES_ROUNDS). 5: a data load
# at an offset that is not a multiple of 4 reads whole floats (layout._misaligned_data_loads).
BLOCK_LOOP_VERSION = 5

# Value of every allocatable general-purpose register at kernel entry: as large as data and
# addresses are (on an Intel Xeon with AVX-512 FP16, rorx and shlx from a register holding 37
# or 255 ran one a cycle, two from 65,535 up, as they do in blocks); odd and non-zero
# (bsf/bsr/tzcnt of zero behave differently); its low six bits 37, so a shift or rotate count
# in cl stays 37 (64-bit) or 5 (narrower).
GPR_INIT = 0x40000025
# ... but the bit offset of `bt mem, reg` (bts, btr, btc) addresses memory: small, so it stays
# inside the operand's cache line
BIT_OFFSET_INIT = 37
_BIT_TEST_MEMORY = re.compile(r"^\s*bt[src]?\s+[^,]*\[[^,]*\]\s*,\s*(\w+)\s*$", re.IGNORECASE)
_CALLEE_SAVED = ["rbx", "rbp", "r12", "r13", "r14", "r15"]
_GPR64 = semantics.get(HARNESS_ISA).register_pool("G", 64)


@dataclass(frozen=True)
class HarnessKernel:
    """One function of the harness."""
    name: str
    asm: str          # the complete top-level asm text (AT&T mode outside, as gcc expects)
    layout: Layout | None = None     # block kernels: the memory the harness maps for them


def _vector_init(width: int) -> list[str]:
    """Load 1.0f lanes from the scratch buffer into every vector register the pools use."""
    if width >= 512:
        return [f"vmovups zmm{i}, [{BASE_REGISTER}]" for i in range(16)]
    if width >= 256:
        return [f"vmovups ymm{i}, [{BASE_REGISTER}]" for i in range(16)]
    if width >= 128:
        return [f"movups xmm{i}, [{BASE_REGISTER}]" for i in range(16)]
    return []


def _function(name: str, prologue: list[str], body: list[str], loop_end: list[str],
              epilogue: list[str], vector_width: int, body_syntax: str = "intel") -> str:
    lines = [".text", ".p2align 6", f".globl {name}", f".type {name}, @function", f"{name}:",
             ".intel_syntax noprefix"]
    lines += [f"push {r}" for r in _CALLEE_SAVED]
    lines += prologue
    lines += [".p2align 6", "1:"]
    if body_syntax == "att":
        lines += [".att_syntax"] + body + [".intel_syntax noprefix"]
    else:
        lines += body
    lines += loop_end + ["jnz 1b"] + epilogue
    if vector_width >= 256:
        lines.append("vzeroupper")      # no AVX-SSE transition penalty in the C code after us
    lines += [f"pop {r}" for r in reversed(_CALLEE_SAVED)]
    lines += ["ret", ".att_syntax", f".size {name}, .-{name}"]
    return "\n".join(lines)


def _bit_offsets(lines) -> dict[str, int]:
    """{64-bit register: BIT_OFFSET_INIT} for each register a `bt* mem, reg` of the window
    takes its bit offset from."""
    isa = semantics.get(HARNESS_ISA)
    out = {}
    for line in lines:
        m = _BIT_TEST_MEMORY.match(line)
        if m and isa.register_family(m.group(1)):
            out[isa.register_family(m.group(1))] = BIT_OFFSET_INIT
    return out


def experiment_kernel(name: str, window: Window) -> HarnessKernel:
    """The kernel of one unroll variant of an experiment."""
    values = {**_bit_offsets(window.body), **dict(window.values)}
    init = [f"mov {r}, {values[r]:#x}" if r in values else f"mov {r}, {GPR_INIT:#x}"
            for r in _GPR64 + ["rbp"] if r not in (BASE_REGISTER, COUNTER_REGISTER)]
    # words in memory (divisors) before the registers: rax carries them
    words = [line for disp, word in window.words
             for line in (f"mov rax, {word:#x}", f"mov qword ptr [{BASE_REGISTER} + {disp}], rax")]
    init = _vector_init(window.vector_width) + words + init
    # pushes and pops: rsp back where it was, once per iteration (below it the stack is free)
    restore = [f"lea rsp, [rsp {'-' if window.stack_bytes > 0 else '+'} "
               f"{abs(window.stack_bytes)}]"] if window.stack_bytes else []
    # a pop before the push that balances it reads above the loop's rsp, and the push then
    # writes there: the function's saved registers and return address, unless the loop runs
    # below a headroom that the pops of one iteration cannot climb out of (8 bytes each)
    headroom = stack_headroom(window)
    enter = [f"sub rsp, {headroom}"] if headroom else []
    leave = [f"add rsp, {headroom}"] if headroom else []
    return HarnessKernel(name, _function(name, init + enter, window.body,
                                         restore + [f"dec {COUNTER_REGISTER}"], leave,
                                         window.vector_width))


def stack_headroom(window: Window) -> int:
    """Bytes of stack an experiment loop leaves above itself: 0 when no instruction of the
    window moves rsp, else at least 8 per instruction, in whole pages."""
    if not any(stack_delta(i.form) for i in window.instructions):
        return 0
    return -(-8 * len(window.instructions) // 4096) * 4096


def block_kernel(name: str, body: list[str], syntax: str, counter: str | None, vector_width: int,
                 layout: Layout, symbols: dict[str, str] | None = None,
                 copies: int = 1) -> HarnessKernel:
    """A user's basic block in a loop, with the registers and memory of `layout`; `body` is
    `copies` copies of it.

    A register the block moves by a constant every pass (layout.drift: `add $64, %rbx`,
    push, pop) is moved back by an lea once per loop iteration, so each iteration streams
    over the same addresses: with every page of a window showing one physical page, a stream
    would otherwise reach the same physical lines through new linear addresses, which an L1
    whose way predictor works on linear addresses (AMD's) pays for as a miss each time
    (measured on Zen 4: four loads and `add $64, %rbx` 2.42 cycles a pass, 1.33 kept in one
    place; a page a pass 12.9). The lea extends the register's chain once per loop iteration, which
    the difference of two unroll factors cancels.

    The block gets its own stack: rsp is saved, set to the block's stack region for the
    loop, and restored. `counter` None keeps the loop count in memory (the block uses
    every register), at the layout's page offset of a page of its own. `symbols`: original
    name -> name in this kernel of every rip-relative symbol the block addresses; each
    becomes a 4 KiB data object in a page of its own, at the page offset the layout gives
    it (64-byte aligned, so no two objects, and no object and register start, 4K-alias),
    filled as the layout says (1.0f lanes unless the block loads pointers from it).
    """
    pre = ["mov qword ptr [rip + pm_saved_rsp], rsp"]
    if counter is None:
        where = f"[rip + pm_counter + {layout.counter_offset}]"
        pre.append(f"mov qword ptr {where}, {COUNTER_REGISTER}")
        loop_end = [f"dec qword ptr {where}"]
    else:
        if counter != COUNTER_REGISTER:
            pre.append(f"mov {counter}, {COUNTER_REGISTER}")
        loop_end = [f"dec {counter}"]
    back = [f"lea {r}, [{r} - {d * copies}]" for r, d in layout.drift if r != counter]
    loop_end = back + loop_end                 # lea leaves the flags alone
    pre += _vector_init(vector_width)          # reads the scratch buffer (rdi): before the GPRs
    values = dict(layout.registers)
    pre += [f"mov {r}, {values[r]}" for r in values if r not in ("rsp", counter)]
    if "rsp" in values:
        pre.append(f"mov rsp, {values['rsp']}")
    asm = _function(name, pre, body, loop_end, ["mov rsp, qword ptr [rip + pm_saved_rsp]"],
                    vector_width, syntax)
    if symbols:
        fills, offsets = dict(layout.symbol_fill), dict(layout.symbol_offsets)
        data = [".data"]
        for k, (old, new) in enumerate(symbols.items()):
            # a symbol the layout did not see (it names no memory operand): lines of its own
            offset = offsets.get(old, (layout.counter_offset + (k + 1) * 5 * 64) % 4096)
            data += [".p2align 12", f".skip {offset}", f"{new}:", ".rept 512",
                     f".quad {fills.get(old, NORMAL_FILL):#x}", ".endr"]
        asm = "\n".join(data) + "\n" + asm
    return HarnessKernel(name, asm, layout)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '\\n"'


def template() -> str:
    return resources.files(__package__).joinpath("harness.c").read_text()


def _regions_c(i: int, layout: Layout) -> list[str]:
    """C arrays of layout i's regions and their pointer slots."""
    out = []
    for r, region in enumerate(layout.regions):
        words = ", ".join(f"{off}UL, {value:#x}UL" for off, value in region.slots) or "0"
        out.append(f"static const unsigned long pm_slots_{i}_{r}[] = {{{words}}};")
    entries = ", ".join(f"{{{g.address:#x}UL, {g.size}UL, {g.fill:#x}UL, {len(g.slots)}, "
                        f"pm_slots_{i}_{r}, {g.window[0]:#x}UL, {g.window[1]:#x}UL}}"
                        for r, g in enumerate(layout.regions))
    out.append(f"static const struct pm_region pm_regions_{i}[] = {{{entries or '{0}'}}};")
    return out


def _header() -> list[str]:
    """What the kernels file and the timing template both declare."""
    return ["/* generated by pmpredict.measure.codegen - do not edit */",
            "#define _GNU_SOURCE",
            "typedef void (*kernel_fn)(char *base, long iters);",
            "struct pm_region { unsigned long addr, bytes, fill; int nslots; "
            "const unsigned long *slots; unsigned long win_start, win_bytes; };",
            "struct pm_kernel { int index; int block; kernel_fn fn; int nregions; "
            "const struct pm_region *regions; unsigned long fault_fill; };",
            f"#define PM_SCRATCH_BYTES {SCRATCH_BYTES}",
            f"#define PM_NORMAL_FILL {NORMAL_FILL:#x}UL", ""]


def timing_source() -> str:
    """The timing template alone, with the kernel table as external symbols: compiled once
    and linked to each batch's kernels (the C part is most of a build's 0.2 s)."""
    return "\n".join(_header() + ["extern const struct pm_kernel PM_KERNELS[];",
                                  "extern const int PM_NKERNELS;", ""]) + template()


def kernels_source(kernels: list[HarnessKernel]) -> str:
    """The kernels, their memory layouts and the kernel table (PM_KERNELS, PM_NKERNELS).
    Kernels with equal layouts (the unroll variants of one block) share one region table, so
    the harness keeps their memory mapped while it alternates between them."""
    out = _header() + [
        "unsigned long pm_saved_rsp;   /* block kernels: the harness's rsp */",
        "unsigned long pm_counter[512] __attribute__((aligned(4096)));   /* a loop count in "
        "memory, at the page offset the block's layout gives it */",
        f"const int PM_NKERNELS = {len(kernels)};", ""]
    layouts: dict[Layout, int] = {}
    for k in kernels:
        out.append(f"void {k.name}(char *base, long iters);")
        out.append("__asm__(")
        out.extend("    " + _c_string(line) for line in k.asm.split("\n"))
        out.append(");")
        if k.layout is not None and k.layout not in layouts:
            layouts[k.layout] = len(layouts)
            out.extend(_regions_c(layouts[k.layout], k.layout))
    out.append("const struct pm_kernel PM_KERNELS[] = {")
    for i, k in enumerate(kernels):
        if k.layout is None:
            out.append(f"    {{{i}, 0, {k.name}, 0, 0, 0}},")
        else:
            out.append(f"    {{{i}, 1, {k.name}, {len(k.layout.regions)}, "
                       f"pm_regions_{layouts[k.layout]}, {k.layout.fault_fill:#x}UL}},")
    if not kernels:
        out.append("    {0, 0, 0, 0, 0, 0},")
    out.append("};")
    return "\n".join(out) + "\n"


def harness_source(kernels: list[HarnessKernel]) -> str:
    """The complete harness as one C file: the kernels, then the timing template."""
    timing = timing_source()
    return kernels_source(kernels) + timing[timing.index("extern const struct pm_kernel"):]
