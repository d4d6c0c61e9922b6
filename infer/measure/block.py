"""`pmpredict measure FILE.s`: the throughput of a basic block on this host, by timing alone.

The block runs as-is (its own registers, so its own dependencies) in a loop, unrolled to
about 50 and 100 instructions; every general-purpose register except rsp and the loop
counter starts out pointing at the same address, and the harness maps a page wherever
the block touches unmapped memory (BHive's approach), so memory operands just work.
Vector registers start as 1.0f in every lane.

Parsing is deliberately thin: pmpredict.asm's grammars when they are there (located
errors), otherwise a plain strip of comments, labels and directives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import InputError
from ...registers import X86_GPR8, X86_GPR16, X86_GPR32, X86_GPR64
from .calibrate import cpu_name
from .codegen import block_kernel
from .runner import RunOptions, check_host, run_kernels
from .measure_set import kernel_cycles

BLOCK_LENGTHS = (50, 100)

_FAMILY = {}
for _regs in (X86_GPR64, X86_GPR32, X86_GPR16, X86_GPR8):
    for _i, _r in enumerate(_regs):
        _FAMILY[_r] = X86_GPR64[_i]
_FAMILY.update({"ah": "rax", "bh": "rbx", "ch": "rcx", "dh": "rdx", "rbp": "rbp", "ebp": "rbp",
                "bp": "rbp", "bpl": "rbp", "rsp": "rsp", "esp": "rsp", "sp": "rsp", "spl": "rsp"})
_WORD = re.compile(r"[a-z][a-z0-9]*")
_VECTOR = re.compile(r"\b([xyz])mm\d+\b")
# the loop counter is taken from the end of this list (registers compilers use least)
_COUNTER_CHOICES = ["rsi", "rdi", "rcx", "rdx", "r8", "r9", "r10", "r11", "rbx", "r12", "r13",
                    "r14", "r15"]
# rip-relative operands: `.LC0(%rip)` (AT&T), `[rip + .LC0]` / `.LC0[rip]` (Intel)
_RIP_SYMBOL = [re.compile(r"([A-Za-z_.$][\w.$@]*)(?=\s*(?:[+-]\s*\d+\s*)?\(%rip\))"),
               re.compile(r"(?<=\[rip\s\+\s)([A-Za-z_.$][\w.$@]*)", re.I),
               re.compile(r"(?<=\[rip\+)([A-Za-z_.$][\w.$@]*)", re.I),
               re.compile(r"([A-Za-z_.$][\w.$@]*)(?=\[rip\])", re.I)]
_CONTROL = re.compile(r"^(call|ret|syscall|sysenter|int|int3|iret|iretq|hlt|loop\w*|jmp\w*|j[a-z]+)$")


@dataclass(frozen=True)
class BlockLine:
    line: int
    text: str
    mnemonic: str


def _strip_simple(text: str, syntax: str) -> list[BlockLine]:
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0] if syntax == "att" else raw.split(";", 1)[0].split("#", 1)[0]
        line = line.split("//", 1)[0].strip()
        while True:                            # labels, possibly several, before a statement
            m = re.match(r"^[A-Za-z_.$][\w.$]*:\s*", line)
            if not m:
                break
            line = line[m.end():]
        if not line or line.startswith("."):
            continue
        out.append(BlockLine(number, line, line.split()[0].lower()))
    return out


def _statements(text: str, syntax: str, path: str, lines: str | None = None,
                region: str | None = None) -> tuple[list[BlockLine], dict | None]:
    """The kernel's instructions (the same choice `pmpredict predict` makes: markers, an
    LLVM-MCA region, the innermost loop, else the whole file) and how it was chosen."""
    try:
        from ...asm.parse import parse
    except ImportError:
        return _strip_simple(text, syntax), None
    program = parse(text, syntax, path)
    try:
        from ...asm.kernel import select_kernel
    except ImportError:
        from ...asm.parse import Instruction
        chosen, how = [s for s in program.statements if isinstance(s, Instruction)], None
    else:
        kernel = select_kernel(program, lines, region)
        chosen, how = kernel.instructions, kernel.to_json()
    src = text.splitlines()
    return [BlockLine(s.line, s.text.strip() or src[s.line - 1].strip(), s.mnemonic.lower())
            for s in chosen], how


def detect(text: str, syntax: str | None, path: str) -> str:
    if syntax in ("att", "intel"):
        return syntax
    if syntax not in (None, "auto"):
        raise InputError(path, f"unknown syntax {syntax!r} (use att or intel)")
    try:
        from ...asm.detect import detect_syntax
        guess = detect_syntax(text, None, "x86", path)
    except ImportError:
        guess = "intel" if re.search(r"\.intel_syntax|\bptr\b", text, re.I) else "att"
    if guess not in ("att", "intel"):
        raise InputError(path, "only x86-64 blocks can be measured on this host")
    return guess


def prepare_block(text: str, syntax: str | None = None, path: str = "<input>",
                  line_range: str | None = None, region: str | None = None):
    """(syntax, body lines, dropped trailing branch or None, counter register, vector width,
    how the kernel was chosen)."""
    syntax = detect(text, syntax, path)
    lines, how = _statements(text, syntax, path, line_range, region)
    dropped = None
    if lines and _CONTROL.match(lines[-1].mnemonic) and lines[-1].mnemonic.startswith(("j", "loop")):
        dropped = lines.pop()                  # the loop's own back edge: the harness loops
    if not lines:
        raise InputError(path, "no instructions to measure", 1, 1)
    for bl in lines:
        if _CONTROL.match(bl.mnemonic):
            raise InputError(path, f"'{bl.mnemonic}' inside the block: only a basic block "
                                   "(straight-line code, optionally ending in a branch) can be "
                                   "measured", bl.line, 1)
    used = set()
    width = 0
    for bl in lines:
        low = bl.text.lower()
        for word in _WORD.findall(low):
            if word in _FAMILY:
                used.add(_FAMILY[word])
        for m in _VECTOR.finditer(low):
            width = max(width, {"x": 128, "y": 256, "z": 512}[m.group(1)])
    free = [r for r in reversed(_COUNTER_CHOICES) if r not in used]
    if not free:
        raise InputError(path, "the block uses every general-purpose register: no register "
                               "is left for the loop counter", lines[0].line, 1)
    return syntax, lines, dropped, free[0], width, how


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


def measure_block(text: str, syntax: str | None = None, path: str = "<input>",
                  options: RunOptions = RunOptions(), lengths=BLOCK_LENGTHS,
                  line_range: str | None = None, region: str | None = None) -> dict:
    """Cycles per iteration of the block on this host: {"cycles": c, ...}.

    A block the CPU cannot run gives {"cycles": None, "error": why}.
    """
    syntax, lines, dropped, counter, width, how = prepare_block(text, syntax, path, line_range,
                                                                region)
    check_host()
    body, symbols = rename_symbols([bl.text for bl in lines])
    kernels, copies_list = [], []
    for n in lengths:
        copies = max(1, round(n / len(body)))
        if copies in copies_list:
            continue
        copies_list.append(copies)
        names = {"@@" + new: f"pm_block{copies}_{new}" for new in symbols.values()}
        own = [_substitute(line, names) for line in body]
        kernels.append(block_kernel(f"pm_block{copies}", own * copies, syntax, counter, width,
                                    tuple(names.values())))
    timings = run_kernels(kernels, options)
    variants, errors = [], []
    for copies, t in zip(copies_list, timings):
        c = kernel_cycles(t)
        if c is None:
            errors.append(t.error or "no usable timing")
        else:
            variants.append({"unroll": copies, "cycles": round(c / copies, 5)})
    result = {"cycles": min(v["cycles"] for v in variants) if variants else None,
              "instructions": len(body), "syntax": syntax, "variants": variants,
              "loop_counter": counter, "cpu": cpu_name()}
    if how is not None:
        result["kernel"] = how
    if symbols:
        result["symbols"] = sorted(symbols)          # given 4 KiB of 1.0f each
    if dropped is not None:
        result["dropped"] = [{"line": dropped.line, "text": dropped.text}]
    if result["cycles"] is None:
        result["error"] = errors[0] if errors else "no usable timing"
    return result
