"""Instructions (as parsed) -> normalised form keys, the currency of form matching: the
vocabulary is pmpredict.isa.keys's, the rules each ISA's keys.py (chosen by the syntax). The
same instruction written in AT&T or Intel syntax gets the same key."""

from __future__ import annotations

from pmpredict.isa import semantics
from pmpredict.isa.keys import FormKey
from pmpredict.isa.syntax import Instruction



def normalize(insn: Instruction, syntax: str) -> FormKey:
    """The FormKey of a parsed instruction (the ISA of the syntax chooses the rules)."""
    return semantics.for_syntax(syntax).form_key(insn, syntax)
