"""What each instruction set is: one module per ISA behind one registry (semantics.py).

The only place that branches on the ISA: registers, branches, widths, what an instruction
reads and writes. Code elsewhere asks `semantics.get(isa)` (pmpredict.isa.semantics).
"""
