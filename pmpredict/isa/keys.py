"""Normalised form keys, the currency of form matching: one instruction as parsed ->
(mnemonic, operands), ISA-neutral. Each ISA's keys.py builds them (isa/x86/keys.py,
isa/aarch64/keys.py); the matcher (pmpredict.asm.match) compares them with form strings.

A key is (mnemonic, operands) with the mnemonic in lower-case Intel / ARM spelling
(AT&T size suffixes and aliases resolved) and the operands in Intel order as
small tuples:

    ("reg", cls, width[, name]) x86 cls G (general, + its name) V (xmm/ymm/zmm) K M X S IP;
                               AArch64 cls G (x/w) F (b/h/s/d/q) Z P
    ("vreg", "4s")             AArch64 vector register with arrangement
    ("velem", "d", lane)       AArch64 vector element `v0.d[1]`
    ("vlist", "16b", n)        AArch64 register list
    ("mem", width|None)        x86 memory operand (None: the syntax does not say)
    ("addr", base?, index?, disp|None, zero8)   x86 address of `lea` (its shape matters);
                               zero8: encoded with a displacement of 0 (an rbp or r13 base)
    ("amem", mode)             AArch64 memory: base / imm / reg / ext / pre / post
    ("imm", value|None)        immediate (None: symbolic)
    ("shift", op, amount)      AArch64 shift or extend (`lsl 3`, `sxtw`, `uxtw 2`)
    ("sym",)                   branch target, condition, system register...
    ("round",)                 AVX-512 rounding control

The same instruction written in AT&T or Intel syntax gets the same key.
"""

from __future__ import annotations

from dataclasses import dataclass, field


# --- the normalised instruction ---------------------------------------------------------

@dataclass(frozen=True)
class FormKey:
    mnemonic: str
    operands: tuple
    masked: bool = False            # AVX-512 masking / broadcast present
    # The instruction in OSACA's vocabulary (osaca_view), for models imported from foreign
    # OSACA files. Not part of equality: keys stay comparable to the PMEvo-side vocabulary.
    osaca: tuple = field(default=(), compare=False)

    def __str__(self) -> str:
        return render_key(self.mnemonic, self.operands)


_CLASS_NAMES = {"G": "r", "V": "v", "F": "f", "K": "k", "M": "mm", "X": "st", "S": "seg",
                "IP": "rip", "Z": "z", "P": "p"}
_FP_NAMES = {8: "b", 16: "h", 32: "s", 64: "d", 128: "q"}
_VECTOR_NAMES = {128: "xmm", 256: "ymm", 512: "zmm"}
_AMEM_NAMES = {"base": "[x]", "imm": "[x, imm]", "reg": "[x, x]", "ext": "[x, x, ext]",
               "pre": "[x, imm]!", "post": "[x], imm"}


def render_operand(op: tuple) -> str:
    kind = op[0]
    if kind == "reg":
        cls, width = op[1], op[2]
        if cls == "F":
            return _FP_NAMES.get(width, "f")
        if cls == "V":
            return _VECTOR_NAMES.get(width, "v")
        return f"{_CLASS_NAMES.get(cls, '?')}{width or ''}"
    if kind == "vreg":
        return f"v.{op[1]}"
    if kind == "velem":
        return f"v.{op[1]}[{op[2] if op[2] is not None else '?'}]"
    if kind == "vlist":
        return "{" + ", ".join([f"v.{op[1]}"] * op[2]) + "}"
    if kind == "mem":
        return f"m{op[1]}" if op[1] else "m"
    if kind == "addr":
        parts = []
        if op[1]:
            parts.append("base")
        if op[2]:
            parts.append("index*s")
        if op[3] is not None and (op[3] != 0 or not parts or _zero8(op)):
            parts.append("disp8" if -128 <= op[3] < 128 else "disp32")
        elif op[3] is None:
            parts.append("disp32")
        return "[" + "+".join(parts) + "]"
    if kind == "amem":
        return _AMEM_NAMES.get(op[1], "[?]")
    if kind == "imm":
        return "imm" if op[1] is None else f"imm({op[1]})"
    if kind == "imm_w":
        return f"imm{op[1]}"
    if kind == "imm_lit":
        return f"#{op[1]}"
    if kind == "fixreg":
        return op[1]
    if kind == "shift":
        return op[1] + (f" {op[2]}" if op[2] is not None else "")
    if kind == "sym":
        return "label"
    if kind == "round":
        return "{rc}"
    if kind == "osaca":
        return op[1]
    return "?"


def render_key(mnemonic: str, operands: tuple) -> str:
    return mnemonic + (" " + ", ".join(render_operand(o) for o in operands) if operands else "")


def _unique(names) -> tuple[str, ...]:
    return tuple(dict.fromkeys(filter(None, names)))


def _zero8(op: tuple) -> bool:
    """An x86 `lea` address key encoded with a displacement of 0 (its fifth field)."""
    return len(op) > 4 and bool(op[4])
