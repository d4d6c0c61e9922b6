"""What the semantics tests of every ISA ask of an InstructionSemantics."""

from __future__ import annotations

from pmpredict.isa.semantics import DATA


def regs_read(s, role=DATA) -> set:
    return {a.name for a in s.reads if a.kind != "flag" and a.role == role}


def regs_written(s) -> set:
    return {a.name for a in s.writes if a.kind != "flag"}


def flags_read(s) -> set:
    return {a.name for a in s.reads if a.kind == "flag"}


def flags_written(s) -> set:
    return {a.name for a in s.writes if a.kind == "flag"}
