"""Instructions (as parsed) -> normalised form keys (pmpredict.isa.keys), by the ISA of the
syntax (each ISA's keys.py knows its rules).

A key is (mnemonic, operands) with the mnemonic in lower-case Intel / ARM spelling
(AT&T size suffixes and aliases resolved) and the operands in Intel order as
small tuples:

    ("reg", cls, width[, name]) x86 cls G (general, + its name) V (xmm/ymm/zmm) K M X S IP;
                               AArch64 cls G (x/w) F (b/h/s/d/q) Z P
    ("vreg", "4s")             AArch64 vector register with arrangement
    ("velem", "d", lane)       AArch64 vector element `v0.d[1]`
    ("vlist", "16b", n)        AArch64 register list
    ("mem", width|None)        x86 memory operand (None: the syntax does not say)
    ("addr", base?, index?, disp|None)   x86 address of `lea` (its shape matters)
    ("amem", mode)             AArch64 memory: base / imm / reg / ext / pre / post
    ("imm", value|None)        immediate (None: symbolic)
    ("shift", op, amount)      AArch64 shift or extend (`lsl 3`, `sxtw`, `uxtw 2`)
    ("sym",)                   branch target, condition, system register...
    ("round",)                 AVX-512 rounding control

The same instruction written in AT&T or Intel syntax gets the same key.
"""

from __future__ import annotations

from pmpredict.isa import semantics
from pmpredict.isa.keys import FormKey
from pmpredict.isa.syntax import Instruction



def normalize(insn: Instruction, syntax: str) -> FormKey:
    """The FormKey of a parsed instruction (the ISA of the syntax chooses the rules)."""
    return semantics.for_syntax(syntax).form_key(insn, syntax)
