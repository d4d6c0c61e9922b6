"""The form list of `pmpredict infer --measure --forms-from FILE.s`: every instruction of
the files (or of their kernels) as its form string, those that cannot be measured on their
own left out with the reason.

The conversion instruction -> form string is the ISA semantics' (`semantics.get(isa).form_of`),
so the model written for these forms matches the same instructions again in `pmpredict
predict`; whether a form can be repeated in a window of its own is the harness's question
(`measure.instantiate.unmeasurable`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pmpredict.isa import semantics
from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse_file
from pmpredict.errors import InputError
from pmpredict.measure.instantiate import HARNESS_ISA, unmeasurable


@dataclass(frozen=True)
class LeftOut:
    path: str
    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}: {self.reason}"


@dataclass
class AsmForms:
    forms: list[str] = field(default_factory=list)          # in order of first appearance
    left_out: list[LeftOut] = field(default_factory=list)
    where: dict[str, tuple[str, int]] = field(default_factory=dict)   # form -> first (path, line)


def forms_from_assembly(paths, syntax: str | None = None, kernel_only: bool = False) -> AsmForms:
    """The forms of the instructions in `paths` (x86: AT&T or Intel, detected unless `syntax`
    says); with kernel_only, of each file's kernel as `pmpredict predict` chooses it."""
    out = AsmForms()
    for path in paths:
        program = parse_file(path, syntax)
        isa = semantics.get(program.isa)
        if isa.name != HARNESS_ISA:
            raise InputError(path, f"only {HARNESS_ISA} instructions can be measured on this host")
        insns = select_kernel(program).instructions if kernel_only else program.instructions
        for insn in insns:
            text = insn.text.strip() or insn.mnemonic
            form, why = instruction_form(isa, insn, program.syntax)
            if form is None:
                out.left_out.append(LeftOut(path, insn.line, text, why))
                continue
            if form not in out.where:
                out.where[form] = (path, insn.line)
                out.forms.append(form)
    if not out.forms:
        raise InputError(paths[0], "no instruction that can be measured on its own")
    return out


def instruction_form(isa, insn, syntax: str) -> tuple[str | None, str | None]:
    """(form, None) for an instruction that can be measured on its own; (None, why) else."""
    try:
        form = isa.form_of(insn, syntax)
    except ValueError as exc:
        return None, _instruction_reason(isa, insn, syntax) or str(exc)
    why = unmeasurable(form)
    return (None, why) if why else (form, None)


def _instruction_reason(isa, insn, syntax: str) -> str | None:
    """Why an instruction has no form, when its semantics already say (a branch, a trap)."""
    s = isa.instruction(insn, syntax)
    if s.branch:
        return "a branch: control flow cannot be repeated in a loop of its own"
    if s.trap:
        return f"a trap or system instruction ({s.trap})"
    return None
