"""One concrete instruction of a form: for name lookups (llvm-mc) and smoke tests."""

from __future__ import annotations

from pmpredict.isa import semantics
from pmpredict.isa.forms import FormTemplate, Placeholder


def example_instance(template: FormTemplate) -> str:
    """One concrete instruction of a form (Intel syntax on x86), registers taken in order.

    Enough for a name lookup (llvm-mc) or a smoke test; the measurement harness
    has its own dependency-free allocation. The instance matches back to its form
    (pmpredict.asm.match), which is what `semantics.get(isa).form_of` guarantees. Memory operands use the ISA's
    example_base_register (rsi, x0) as base; general-purpose operands avoid index 0
    of each pool (rax, x0) and the base register's family.
    """
    isa = semantics.get(template.isa)
    base = isa.example_base_register
    used: dict[tuple, int] = {}
    # an address that is only computed (x86 `lea`): its displacement placeholder stands for the
    # disp32 shape, so the example needs a displacement that does not fit 8 bits
    displacement = "1000" if isa.form(template).memory == semantics.ADDRESS_ONLY else "64"

    def fill(ph: Placeholder, _i: int) -> str:
        if ph.kind == "MEM":
            return base
        if ph.kind == "MIMM":
            return displacement
        if ph.kind == "MSPLIT":          # across a line from an aligned base (forms.split_variant)
            return "60"
        if ph.kind == "IMM":
            return str(2 ** (ph.width - 8) + 42) if ph.width and ph.width > 8 else "42"
        cls = ph.reg_class if ph.kind == "REG" else "G"
        pool = isa.register_pool(cls, ph.width)
        if cls == "G":
            pool = [r for i, r in enumerate(pool) if i != 0 and
                    isa.register_family(r) != isa.register_family(base)]
        n = used.get((cls, ph.width), 0)
        used[(cls, ph.width)] = n + 1
        return pool[(n + 1) % len(pool)]

    return template.render(fill)
