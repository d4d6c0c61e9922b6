"""x86-64 general-purpose register names by width, for infer/measure/block.py only.

The register pools live in the ISA objects (pmpredict.semantics: `register_pool`,
`register_family`); this module re-exports the x86 lists under their old names for the
one module that still imports them, and goes when that module asks semantics instead.
"""

from __future__ import annotations

from .semantics.x86 import GPR_POOLS

X86_GPR64 = list(GPR_POOLS[64])
X86_GPR32 = list(GPR_POOLS[32])
X86_GPR16 = list(GPR_POOLS[16])
X86_GPR8 = list(GPR_POOLS[8])
