"""Small helpers the views share."""

from __future__ import annotations

import math


def number(x, digits: int = 6):
    """A JSON number rounded for stability; None for a missing or non-finite value."""
    if x is None or not math.isfinite(float(x)):
        return None
    return round(float(x), digits)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def mnemonic(row) -> str:
    return row.text.split()[0] if row.text else "?"


def chain_text(report, chain) -> str:
    """`4 × addsd` or `vmulpd -> vaddpd` for the instructions of a dependency cycle."""
    names = [mnemonic(report.rows[i]) for i in chain.nodes]
    if len(set(names)) == 1:
        return f"{len(names)} × {names[0]}"
    return " -> ".join(names)


def finite(x):
    """A JSON number as it is; None for a missing or non-finite value (JSON has no NaN)."""
    if x is None or not math.isfinite(float(x)):
        return None
    return float(x)
