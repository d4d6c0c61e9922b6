"""Uop kinds (pmpredict.predict.kinds): forms and instructions classified, uops of mixed forms
attributed, the kinds of a port, the bottleneck line of `predict`, `pmpredict models`."""

import json

import pytest

from pmpredict.isa import semantics
from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.cli import main
from pmpredict.predict.kinds import form_kinds, instruction_kinds, port_kinds
from pmpredict.model.machine import MachineModel
from pmpredict.formats.model_files import load_model
from pmpredict.predict.predictor import Predictor

MEM = "qword_ptr_[((MEM:64))_+_((MIMM:16))]"
YMEM = "ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
Y = "((REG:R:V:256))"
FORMS = {
    f"MOV_((REG:W:G:64)),_{MEM}": ("loads",),
    f"MOV_{MEM},_((REG:R:G:64))": ("stores",),
    f"VMOVUPD_((REG:W:V:256)),_{YMEM}": ("loads",),
    f"ADD_((REG:RW:G:64)),_{MEM}": ("loads", "integer ALU"),
    f"ADD_{MEM},_((IMM:8))": ("loads", "stores", "integer ALU"),
    "ADD_((REG:RW:G:64)),_((REG:R:G:64))": ("integer ALU",),
    "MOV_((REG:W:G:64)),_((REG:R:G:64))": ("integer ALU",),
    "MOVAPS_((REG:W:V:128)),_((REG:R:V:128))": ("vector ALU",),
    "IMUL_((REG:RW:G:64)),_((REG:R:G:64))": ("integer multiply",),
    f"VPADDD_((REG:W:V:256)),_{Y},_{Y}": ("vector ALU",),
    f"VADDPD_((REG:W:V:256)),_{Y},_{Y}": ("FP add",),
    f"VFMADD231PD_((REG:RW:V:256)),_{Y},_{Y}": ("FP multiply/FMA",),
    f"VMULPD_((REG:W:V:256)),_{Y},_{YMEM}": ("loads", "FP multiply/FMA"),
    f"VDIVPD_((REG:W:V:256)),_{Y},_{Y}": ("divider",),
    f"VSQRTPD_((REG:W:V:256)),_{Y}": ("divider",),
    f"VPSHUFB_((REG:W:V:256)),_{Y},_{Y}": ("shuffles",),
    f"VPERMQ_((REG:W:V:256)),_{Y},_((IMM:8))": ("shuffles",),
    "_ldr_((REG:W:G:64)),_[((REG:R:G:64)),_((IMM:9))]": ("loads",),
    "_fmla_((REG:RW:F:VEC)).4s,_((REG:R:F:VEC)).4s,_((REG:R:F:VEC)).4s": ("FP multiply/FMA",),
    "_udiv_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))": ("divider",),
    "_zip1_((REG:W:F:VEC)).4s,_((REG:R:F:VEC)).4s,_((REG:R:F:VEC)).4s": ("shuffles",),
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))": ("integer ALU",),
}


@pytest.mark.parametrize("form,kinds", list(FORMS.items()))
def test_form_kinds(form, kinds):
    assert form_kinds(form, semantics.isa_of_form(form)) == kinds


def test_imported_osaca_forms_have_no_form_kinds():
    """An `osaca:` name has no form semantics; in a kernel its instruction's kinds count."""
    assert form_kinds("osaca:cmp gpr,gpr", "x86") == ()


@pytest.mark.parametrize("text,syntax,kinds", [
    ("jne .L4", "att", ("branches",)),
    ("cmpq %r8, %rax", "att", ("integer ALU",)),
    ("vmovdqu %ymm0, (%rdi,%rax)", "att", ("stores",)),
    ("vpaddd (%rsi,%rax), %ymm2, %ymm1", "att", ("loads", "vector ALU")),
    ("vfmadd231pd ymm0, ymm1, ymmword ptr [rsi]", "intel", ("loads", "FP multiply/FMA")),
    ("fmla v0.4s, v1.4s, v2.4s", "aarch64", ("FP multiply/FMA",)),
    ("ldr q0, [x1], 16", "aarch64", ("loads",)),
    ("b.ne .L3", "aarch64", ("branches",)),
])
def test_instruction_kinds(text, syntax, kinds):
    isa = semantics.for_syntax(syntax)
    insn = parse(text, syntax).instructions[0]
    assert instruction_kinds(isa.name, isa.instruction(insn, syntax)) == kinds


LOAD = f"VMOVUPD_((REG:W:V:256)),_{YMEM}"
FMA = f"VFMADD231PD_((REG:RW:V:256)),_{Y},_{Y}"
FMA_M = f"VFMADD231PD_((REG:RW:V:256)),_{Y},_{YMEM}"
ADD = f"VADDPD_((REG:W:V:256)),_{Y},_{Y}"
STORE = f"VMOVUPD_{YMEM},_{Y}"
INC = "ADD_((REG:RW:G:64)),_((IMM:8))"
# A, B: FP; C, D: loads; E: store; F: integer
TOY = MachineModel("toy", "x86", ("A", "B", "C", "D", "E", "F"), {
    LOAD: ((0b001100, 1),), FMA: ((0b000011, 1),), FMA_M: ((0b000011, 1), (0b001100, 1)),
    ADD: ((0b000011, 1),), STORE: ((0b010000, 1), (0b001100, 1)), INC: ((0b100000, 1),)})


def test_mixed_forms_give_each_uop_its_kind():
    """The load-op FMA's two uops: one on the loads' ports (a load), one on the FP ports."""
    pk = port_kinds(TOY)
    assert pk.of_port("A") == [("FP multiply/FMA", pytest.approx(2 / 3)),
                               ("FP add", pytest.approx(1 / 3))]
    assert pk.of_port("C") == [("loads", pytest.approx(2 / 3)), ("stores", pytest.approx(1 / 3))]
    assert pk.of_port("E") == [("stores", 1.0)]
    assert pk.of_port("F") == [("integer ALU", 1.0)]


def _predict(body, model=TOY):
    text = "# OSACA-BEGIN\n" + "".join(f"\t{line}\n" for line in body) + "# OSACA-END\n"
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


def test_bottleneck_names_the_kinds_of_its_uops():
    r = _predict(["vfmadd231pd (%rsi), %ymm1, %ymm0", "vfmadd231pd %ymm2, %ymm3, %ymm4",
                  "vfmadd231pd %ymm5, %ymm6, %ymm7", "vaddpd %ymm8, %ymm9, %ymm10",
                  "addq $32, %rsi"])
    # 4 uops on {A, B}: 2 cycles; the load uop of the first FMA is not bound there
    assert r.bottleneck == ["A", "B"] and r.bounds.throughput == 2.0
    assert r.bottleneck_kinds == ["FP multiply/FMA", "FP add"]
    from pmpredict.views import render_text, to_json
    assert "Bottleneck: ports A, B (FP multiply/FMA, FP add)\n" in render_text(r)
    assert to_json(r)["bottleneck_kinds"] == ["FP multiply/FMA", "FP add"]


def test_load_bound_kernel():
    r = _predict(["vmovupd (%rsi), %ymm0", "vmovupd 32(%rsi), %ymm1", "vmovupd 64(%rsi), %ymm2",
                  "vmovupd %ymm3, (%rdi)", "vaddpd %ymm0, %ymm1, %ymm4"])
    assert r.bottleneck == ["C", "D"] and r.bottleneck_kinds == ["loads", "stores"]


def test_models_command_lists_the_kinds_of_each_port(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("skl "))
    ports = {line.split()[1]: line for line in out[start + 1:start + 10]}
    assert set(ports) == set(load_model("skl").ports)
    # skl's loads sit on B and I (docs/MODELS.md), its stores on E
    for port, kind in (("B", "loads"), ("I", "loads"), ("E", "stores")):
        assert ports[port].split(None, 2)[2].startswith(kind), ports[port]
