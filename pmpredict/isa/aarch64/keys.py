"""AArch64 instructions as parsed -> form keys: register classes and widths, addressing
modes, post-index folding, and the operands as OSACA's parser sees them."""

from __future__ import annotations

import re

from pmpredict.isa.keys import FormKey, _unique
from pmpredict.isa.syntax import (Immediate, Instruction, Memory, Register, RegisterList, Shift,
                                  Symbol)



_A64_FP_WIDTH = {"b": 8, "h": 16, "s": 32, "d": 64, "q": 128}


def aarch64_register(reg: Register) -> tuple:
    name = reg.name
    if name.startswith("v") and "." in name:
        arr = name.split(".", 1)[1]
        if reg.lane is not None or not arr[:1].isdigit():
            return ("velem", arr[-1], reg.lane)
        return ("vreg", arr)
    if name[0] in "xw" and (name[1:].isdigit() or name[1:] == "zr"):
        return ("reg", "G", 64 if name[0] == "x" else 32)
    if name in ("sp", "lr", "fp"):
        return ("reg", "G", 64)
    if name == "wsp":
        return ("reg", "G", 32)
    if name[0] in _A64_FP_WIDTH and name[1:].isdigit():
        return ("reg", "F", _A64_FP_WIDTH[name[0]])
    if name.startswith("z"):
        return ("reg", "Z", None)
    if name.startswith("p"):
        return ("reg", "P", None)
    return ("reg", "?", None)


# --- AArch64 -----------------------------------------------------------------------------

_A64_COND = set("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al nv".split())


def aarch64_mnemonic(m: str) -> str:
    if m.startswith("b") and len(m) == 3 and m[1:] in _A64_COND:
        return "b." + m[1:]                          # gcc `bne` == clang `b.ne`
    return m


def _a64_memory(op: Memory) -> tuple:
    if op.writeback == "pre":
        return ("amem", "pre")
    if op.writeback == "post":
        return ("amem", "post")
    if op.index is not None:
        return ("amem", "ext" if op.index_shift is not None else "reg")
    return ("amem", "imm" if op.has_disp else "base")


def _a64_operand(op) -> tuple:
    if isinstance(op, Register):
        return aarch64_register(op)
    if isinstance(op, Immediate):
        return ("imm", op.value if not op.symbols else None)
    if isinstance(op, Memory):
        return _a64_memory(op)
    if isinstance(op, Shift):
        return ("shift", op.op, op.amount)
    if isinstance(op, RegisterList):
        first = aarch64_register(Register(op.regs[0]))
        arr = first[1] if first[0] in ("vreg", "velem") else "?"
        return ("vlist", arr, len(op.regs))
    if isinstance(op, Symbol):
        return ("sym",)
    return ("?",)


def fold_post_index(operands) -> tuple[list, list]:
    """Post-index `[x0], 16` / `[x0], x2` -> one memory operand with write-back; the
    increment (register name or constant) kept aside, by operand."""
    ops, increments = list(operands), [None] * len(operands)
    for i in range(len(ops) - 1):
        if isinstance(ops[i], Memory) and ops[i].writeback is None and i + 2 == len(ops) \
                and isinstance(ops[i + 1], (Immediate, Register)):
            m = ops[i]
            ops[i] = Memory(base=m.base, index=m.index, disp=m.disp, symbols=m.symbols,
                            writeback="post", index_shift=m.index_shift, has_disp=m.has_disp)
            if isinstance(ops[i + 1], Register):
                increments[i] = ops[i + 1].name
            elif isinstance(ops[i + 1].value, int):
                increments[i] = ops[i + 1].value        # `[x0], 16`: the constant added
            del ops[i + 1]
            del increments[i + 1]
            break
    return ops, increments


def normalize_aarch64(insn: Instruction) -> FormKey:
    ops, _ = fold_post_index(insn.operands)
    mnemonic = aarch64_mnemonic(insn.mnemonic)
    return FormKey(mnemonic, tuple(_a64_operand(o) for o in ops),
                   osaca=osaca_view_aarch64(insn.mnemonic, mnemonic, ops))


# --- the OSACA view ----------------------------------------------------------------------
#
# Foreign OSACA forms (pmpredict.formats.osaca) are matched the way OSACA matches them, on
# the operands as OSACA's parser sees them: in the file's order (AT&T on x86, so Intel
# operands are reversed), x86 registers by name without digits (`xmm`, `cl`) and class,
# AArch64 registers by prefix and element shape, register lists flattened, memory as
# (base, offset, index, scale, pre, post). The view is (mnemonics to look up, operands):
#
#   ("r", name, cls)            x86 register: name without digits, class as in x86_register
#   ("r", prefix, shape)        AArch64 register (`v0.4s` -> "v", "s"; `x1` -> "x", None)
#   ("i", "int"|"double")       immediate with a value
#   ("id",)                     label / symbol (also a symbolic AArch64 immediate)
#   ("cond", "EQ")              AArch64 condition
#   ("prfop",)                  AArch64 prefetch operation
#   ("m", base, offset, index, scale, pre, post)
#        base/index: "gpr" (x86) or the AArch64 prefix, None when absent;
#        offset: None, "imd", "imd0" (x86 displacement written as 0), "id" (symbolic)

# AArch64 shifts/extends that OSACA's parser folds into the preceding register
_A64_FOLDED = {"lsl", "lsr", "asr", "ror", "sxtw", "uxtw", "uxtb"}
_A64_PRFOP = re.compile(r"p(?:ld|st|li)l[123](?:keep|strm)$")


def _osaca_a64_register(name: str) -> tuple:
    if name in ("sp", "lr", "fp", "xzr"):
        return ("r", "x", None)
    if name in ("wsp", "wzr"):
        return ("r", "w", None)
    reg, _, arr = name.partition(".")
    prefix = reg.rstrip("0123456789")
    return ("r", prefix, arr.lstrip("0123456789") or None)


def _osaca_a64_memory(op: Memory, post: bool) -> tuple:
    if op.symbols:
        offset = "id"
    elif op.has_disp and not post:
        offset = "imd"
    else:
        offset = None
    index = _osaca_a64_register(op.index)[1] if op.index else None
    amount = op.index_shift.amount if op.index_shift is not None else None
    return ("m", _osaca_a64_register(op.base)[1] if op.base else None, offset, index,
            (1 << amount) if amount else 1, op.writeback == "pre", post or op.writeback == "post")


def osaca_view_aarch64(raw: str, mnemonic: str, ops) -> tuple:
    """`ops` with a post-index already folded into the memory operand (writeback "post")."""
    out = []
    for op in ops:
        if isinstance(op, Register):
            out.append(_osaca_a64_register(op.name))
        elif isinstance(op, RegisterList):
            out.extend(_osaca_a64_register(r) for r in op.regs)
        elif isinstance(op, Immediate):
            if op.symbols or op.value is None:
                out.append(("id",))
            else:
                out.append(("i", "double" if isinstance(op.value, float) else "int"))
        elif isinstance(op, Memory):
            out.append(_osaca_a64_memory(op, op.writeback == "post"))
        elif isinstance(op, Shift):
            if op.op not in _A64_FOLDED:
                out.append(("id",))
                if op.amount is not None:
                    out.append(("i", "int"))
        elif isinstance(op, Symbol):
            name = op.name.lower()
            if name in _A64_COND:
                out.append(("cond", name.upper()))
            elif _A64_PRFOP.match(name):
                out.append(("prfop",))
            else:
                out.append(("id",))
        else:
            out.append(("?",))
    return _unique([mnemonic, raw]), tuple(out)
