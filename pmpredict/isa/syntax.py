"""A parsed assembly statement and its operands: what the parsers (pmpredict.asm) produce and
every ISA's semantics reads. Frozen dataclasses, ISA-neutral, no imports of the project."""

from __future__ import annotations

from dataclasses import dataclass, field


# --- operands ---------------------------------------------------------------------

@dataclass(frozen=True)
class Register:
    name: str                       # lower case, no `%`: "rax", "ymm0", "x1", "v0.4s", "k1"
    lane: int | None = None         # AArch64 `v0.d[1]`
    mask: str | None = None         # AVX-512 `{k1}`
    zeroing: bool = False           # AVX-512 `{z}`


@dataclass(frozen=True)
class Immediate:
    value: int | float | None       # None when the value is symbolic
    text: str
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shift:
    """AArch64 shift or extend operand: `lsl 3`, `sxtw`, `uxtw #2`, `msl 8`."""
    op: str
    amount: int | None = None


@dataclass(frozen=True)
class Memory:
    base: str | None = None
    index: str | None = None
    scale: int = 1
    disp: int = 0                   # numeric part of the displacement / offset
    symbols: tuple[str, ...] = ()   # symbolic part of the displacement (`.LC0`, `foo@GOTPCREL`)
    segment: str | None = None
    width: int | None = None        # bits, where the syntax states it (Intel `QWORD PTR`)
    broadcast: str | None = None    # AVX-512 `{1to8}`
    mask: str | None = None
    zeroing: bool = False
    writeback: str | None = None    # AArch64: "pre" (`[x0, 16]!`) or "post" (`[x0], 16`)
    index_shift: Shift | None = None  # AArch64 `[x0, x1, lsl 3]`, `[x0, w1, sxtw 2]`
    has_disp: bool = False          # a displacement was written (even `0`)


@dataclass(frozen=True)
class Symbol:
    """A bare name: branch target, absolute address, condition code, system register."""
    name: str


@dataclass(frozen=True)
class RegisterList:
    regs: tuple[str, ...]
    lane: int | None = None


@dataclass(frozen=True)
class Rounding:
    """AVX-512 static rounding / SAE operand `{rn-sae}`."""
    mode: str


@dataclass(frozen=True)
class Indirect:
    """AT&T `*%rax`, `*(%rax)`, `*.L4(,%rax,8)`: an indirect branch target."""
    target: object


# --- statements -------------------------------------------------------------------

@dataclass(frozen=True)
class Label:
    line: int
    column: int
    name: str


@dataclass(frozen=True)
class Directive:
    line: int
    column: int
    name: str                       # ".byte", lower case
    args: str                       # raw argument text


@dataclass(frozen=True)
class Comment:
    line: int
    column: int
    text: str                       # without the comment characters, stripped


@dataclass(frozen=True)
class Instruction:
    line: int
    column: int
    mnemonic: str                   # lower case, as written (AT&T suffix kept)
    operands: tuple
    prefixes: tuple[str, ...] = ()
    text: str = field(default="", compare=False)   # the source text of the statement
