"""x86-64: registers, AT&T and Intel spellings, form keys (keys.py) and what each instruction
reads and writes (semantics.py)."""
