"""Instruction semantics, one module per ISA behind a small registry.

    from pmpredict.isa import semantics
    isa = semantics.get("x86")                     # or semantics.for_syntax("att")
    s = isa.instruction(insn, "att")               # InstructionSemantics of a parsed instruction
    f = isa.form("ADD_((REG:RW:G:64)),_((REG:R:G:64))")   # FormSemantics of a form string

This package is the only place that knows what an instruction reads and writes, and the
only place that branches on the ISA: code elsewhere asks the object `get(isa)` returns
(its attributes are listed in base.IsaSemantics: syntaxes and grammars, register pools,
byte markers, the OSACA vocabulary...).
"""

from __future__ import annotations

import importlib

from pmpredict.isa.base import (ADDRESS, ADDRESS_ONLY, DATA, FLAG, GPR, LOAD, MASK, MERGE,
                                NO_MEMORY, OTHER, READ_MODIFY_WRITE, STORE, VECTOR, FormSemantics,
                                InstructionSemantics, MemAccess, RegAccess)

ISAS = ("x86", "aarch64")
DEFAULT_ISA = "x86"        # of a form list no ISA claims entirely, and of text with no clue
_MODULES = {"x86": ".x86.semantics", "aarch64": ".aarch64.semantics"}
_loaded: dict = {}


def get(isa: str):
    """The semantics object of an ISA ("x86" or "aarch64"); ValueError for any other."""
    obj = _loaded.get(isa)
    if obj is None:
        if isa not in _MODULES:
            raise ValueError(f"unknown ISA {isa!r} (known: {', '.join(ISAS)})")
        obj = _loaded[isa] = importlib.import_module(_MODULES[isa], __package__).SEMANTICS
    return obj


def all_isas() -> list:
    """The semantics objects of every ISA, in ISAS order."""
    return [get(isa) for isa in ISAS]


def syntaxes() -> tuple[str, ...]:
    """Every assembly syntax pmpredict parses ("att", "intel", "aarch64")."""
    return tuple(s for obj in all_isas() for s in obj.syntaxes)


def for_syntax(syntax: str):
    """The ISA of an assembly syntax: "att" / "intel" -> x86, "aarch64" -> AArch64."""
    for obj in all_isas():
        if syntax in obj.syntaxes:
            return obj
    raise ValueError(f"unknown syntax {syntax!r} (known: {', '.join(syntaxes())})")


def isa_of_form(name: str) -> str:
    """The ISA a PMEvo form string belongs to, by its spelling (AArch64 forms start with `_`)."""
    return next((obj.name for obj in all_isas() if obj.owns_form(name)), DEFAULT_ISA)


def isa_of_forms(forms) -> str:
    """The ISA every form of a list belongs to; DEFAULT_ISA for an empty or mixed list."""
    forms = list(forms)
    return next((obj.name for obj in all_isas() if forms and all(obj.owns_form(f) for f in forms)),
                DEFAULT_ISA)


__all__ = ["get", "for_syntax", "all_isas", "syntaxes", "isa_of_form", "isa_of_forms", "ISAS",
           "DEFAULT_ISA", "FormSemantics", "InstructionSemantics", "MemAccess",
           "RegAccess", "GPR", "VECTOR", "MASK", "FLAG", "OTHER", "DATA", "ADDRESS", "MERGE",
           "NO_MEMORY", "LOAD", "STORE", "READ_MODIFY_WRITE", "ADDRESS_ONLY"]
