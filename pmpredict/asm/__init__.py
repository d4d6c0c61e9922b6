"""Assembly front end: Lark grammars -> statements (parse), dialect guess (detect),
kernel choice (kernel), normalised form keys (normalize), matching against a model (match).

    program = parse_file("loop.s")                 # x86 AT&T / Intel or AArch64, detected
    kernel = select_kernel(program)                # markers, regions, innermost loop, file
    key = normalize(kernel.instructions[0], program.syntax)
    FormMatcher(model.uops, model.isa).match(key)  # -> Match(form, approx, reason)
"""

from pmpredict.asm.kernel import Kernel, select_kernel
from pmpredict.asm.match import FormMatcher, Match
from pmpredict.asm.normalize import normalize
from pmpredict.isa.keys import FormKey
from pmpredict.asm.parse import Program, parse, parse_file

__all__ = ["parse", "parse_file", "Program", "select_kernel", "Kernel", "normalize", "FormKey",
           "FormMatcher", "Match"]
