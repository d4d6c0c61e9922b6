"""AArch64: registers, addressing modes, form keys (keys.py) and what each instruction reads
and writes (semantics.py)."""
