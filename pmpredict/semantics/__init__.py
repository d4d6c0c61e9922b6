"""Instruction semantics, one module per ISA behind a small registry.

    from pmpredict import semantics
    isa = semantics.get("x86")                     # or semantics.for_syntax("att")
    s = isa.instruction(insn, "att")               # InstructionSemantics of a parsed instruction
    f = isa.form("ADD_((REG:RW:G:64)),_((REG:R:G:64))")   # FormSemantics of a form string

This package is the only place that knows what an instruction reads and writes, and the
only place that branches on the ISA: code elsewhere asks the object `get(isa)` returns.
"""

from __future__ import annotations

import importlib

from .base import (ADDRESS, ADDRESS_ONLY, DATA, FLAG, GPR, LOAD, MASK, MERGE, NO_MEMORY, OTHER,
                   READ_MODIFY_WRITE, STORE, VECTOR, FormSemantics, InstructionSemantics,
                   MemAccess, RegAccess)

ISAS = ("x86", "aarch64")
_MODULES = {"x86": ".x86", "aarch64": ".aarch64"}
_loaded: dict = {}


def get(isa: str):
    """The semantics object of an ISA ("x86" or "aarch64"); ValueError for any other."""
    obj = _loaded.get(isa)
    if obj is None:
        if isa not in _MODULES:
            raise ValueError(f"unknown ISA {isa!r} (known: {', '.join(ISAS)})")
        obj = _loaded[isa] = importlib.import_module(_MODULES[isa], __name__).SEMANTICS
    return obj


def for_syntax(syntax: str):
    """The ISA of an assembly syntax: "att" / "intel" -> x86, "aarch64" -> AArch64."""
    return get("aarch64" if syntax == "aarch64" else "x86")


__all__ = ["get", "for_syntax", "ISAS", "FormSemantics", "InstructionSemantics", "MemAccess",
           "RegAccess", "GPR", "VECTOR", "MASK", "FLAG", "OTHER", "DATA", "ADDRESS", "MERGE",
           "NO_MEMORY", "LOAD", "STORE", "READ_MODIFY_WRITE", "ADDRESS_ONLY"]
