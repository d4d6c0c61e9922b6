"""Small helpers the views share."""

from __future__ import annotations

import math
import re

from pmpredict.isa import semantics
from pmpredict.isa.base import ATOMIC, BARRIER

# a short name of each InstructionSemantics.beyond_model kind
BEYOND_MODEL_NAMES = {ATOMIC: "atomic", BARRIER: "barrier"}

_WORD = re.compile(r"[a-z][a-z0-9]*")


def number(x, digits: int = 6):
    """A JSON number rounded for stability; None for a missing or non-finite value."""
    if x is None:
        return None
    x = float(x)
    if x - x != 0.0:                         # inf - inf and nan - nan are nan
        return None
    return x if x.is_integer() else round(x, digits)      # round() is slow; whole ones abound


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def mnemonic(row) -> str:
    return row.text.split()[0] if row.text else "?"


def chain_text(report, chain) -> str:
    """`4 × addsd` or `vmulpd -> vaddpd` for the instructions of a dependency cycle."""
    names = [mnemonic(report.rows[i]) for i in chain.nodes]
    if len(names) == 1:
        return names[0]
    if len(set(names)) == 1:
        return f"{len(names)} × {names[0]}"
    return " -> ".join(names)


def resource_names(report, chain) -> str:
    """What a chain's edges carry, as the kernel spells it: `xmm0` rather than the family
    `v0`, `memory` rather than `mem`; flags as they are (ZF, CF...)."""
    isa = semantics.get(report.isa)
    words = [w for i in chain.nodes for w in _WORD.findall(report.rows[i].text.lower())]
    out = []
    for name in chain.resources:
        if name == "mem":
            out.append("memory")
            continue
        spelled = next((w for w in words if isa.register_family(w) == name), name)
        out.append(spelled)
    return ", ".join(dict.fromkeys(out))


def finite(x):
    """A JSON number as it is; None for a missing or non-finite value (JSON has no NaN)."""
    if x is None or not math.isfinite(float(x)):
        return None
    return float(x)
