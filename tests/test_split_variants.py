"""Split variants (pmpredict.isa.forms.split_variant): a form whose displacement puts its access
across a cache line, measured by the host model like any form, and what the engine does with
it: a load that crosses a line on every iteration runs as its form's split variant was
measured, where the model has it; the rule of split_load_extra where it has not. The matcher
never matches an instruction to a variant, and the exporters leave variants out."""

from __future__ import annotations

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.match import FormMatcher
from pmpredict.asm.parse import parse
from pmpredict.exporters.common import instruction_forms
from pmpredict.isa import semantics
from pmpredict.isa.forms import is_split_variant, parse_form, split_base, split_variant
from pmpredict.measure.instantiate import LINE, instantiate
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor

VUCOMISS = "VUCOMISS_((REG:R:V:128)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOVDQU = "MOVDQU_((REG:W:V:128)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
RMW = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
DIV = "DIV_qword_ptr_[((MEM:64))_+_((MIMM:16))]"


def test_a_variant_is_the_form_with_a_displacement_across_a_line():
    variant = split_variant(VUCOMISS)
    assert variant == VUCOMISS.replace("MIMM", "MSPLIT") and is_split_variant(variant)
    assert split_base(variant) == VUCOMISS and split_base(VUCOMISS) == VUCOMISS
    assert split_variant(ADD) is None and split_variant(variant) is None
    assert not is_split_variant(VUCOMISS)
    # the same instruction: the semantics of the variant are its form's
    x86 = semantics.get("x86")
    assert x86.form(parse_form(variant)) == x86.form(parse_form(VUCOMISS))


@pytest.mark.parametrize("form, nbytes", [(VUCOMISS, 4), (MOVDQU, 16), (LOAD, 8), (STORE, 8)])
def test_instances_of_a_variant_cross_a_line_in_lines_of_their_own(form, nbytes):
    """Every instance's access crosses a line's end; the loads of one variant read one place
    (as a block's load of a fixed address does), its two lines no other access touches; the
    stores of a variant each have two lines of their own."""
    variant = split_variant(form)
    window = instantiate([(variant, 1), (LOAD, 1)], 40)
    places = {}
    for inst in window.instructions:
        (start,) = inst.mem_reads + inst.mem_writes
        width = nbytes if inst.form == variant else 8
        lines = frozenset(range(start // LINE, (start + width - 1) // LINE + 1))
        if inst.form == variant:
            assert start % LINE + nbytes > LINE and len(lines) == 2, inst.text
        places.setdefault(inst.form, []).append(lines)
    mine = places[variant]
    if form == STORE:
        assert len(set(mine)) == len(mine)
    else:
        assert len(set(mine)) == 1 and len(mine) > 1
    others = set().union(*places[LOAD])
    assert not set().union(*mine) & others


def test_a_division_variant_is_refused():
    with pytest.raises(ValueError, match="split variant"):
        instantiate([(split_variant(DIV), 1)], 8)


def _model(uops: dict) -> MachineModel:
    return MachineModel("toy", "x86", ("A", "B", "C", "D"), uops,
                        latency={f: 1.0 for f in uops if not is_split_variant(f)})


def _annotated(text: str, model: MachineModel):
    report = Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")
    return report, report.stage("annotated")


def test_the_matcher_never_matches_an_instruction_to_a_variant():
    model = _model({MOVDQU: ((1, 1),), split_variant(MOVDQU): ((3, 2),)})
    matcher = FormMatcher(model.uops, "x86")
    x86 = semantics.get("x86")
    for text in ("movdqu 60(%rsi), %xmm1", "movdqu 64(%rsi), %xmm1"):
        insn = parse(text + "\n", "att", "k.s").instructions[0]
        key, _ = x86.described(insn, "att")
        assert matcher.match(key).form == MOVDQU


def test_a_load_across_a_line_runs_as_its_variant_was_measured():
    # movdqu on port A; its split variant two uops on A or B (a split: 1.00 cycle alone)
    model = _model({MOVDQU: ((1, 1),), split_variant(MOVDQU): ((3, 2),)})
    report, annotation = _annotated("movdqu 60(%rsi), %xmm1\n", model)
    assert annotation.annotated[0].uops == ((3, 2),)
    assert annotation.split_variants == (split_variant(MOVDQU),)
    assert report.cycles == pytest.approx(1.0)
    notes = [n.text for n in annotation.annotated[0].assumed]
    assert any("as its form measured across a line" in t for t in notes)
    # within the line: the form's own uops, no variant wanted
    _, within = _annotated("movdqu 48(%rsi), %xmm1\n", model)
    assert within.annotated[0].uops == ((1, 1),) and within.split_variants == ()


def test_without_its_variant_a_split_load_runs_its_access_again_and_asks_for_it():
    model = _model({MOVDQU: ((1, 1),)})
    report, annotation = _annotated("movdqu 60(%rsi), %xmm1\n", model)
    assert annotation.split_variants == (split_variant(MOVDQU),)      # what the host measures
    assert annotation.annotated[0].uops == ((1, 2),)                   # split_load_extra 1
    assert report.cycles == pytest.approx(2.0)


def test_a_read_modify_write_and_a_store_keep_the_rule():
    """A variant stands for a load: a store's split, and an instruction that loads and
    stores, run as split_store_extra / split_load_extra say, and ask for no variant."""
    model = _model({RMW: ((1, 1),), split_variant(RMW): ((15, 9),),
                    STORE: ((2, 1),), split_variant(STORE): ((15, 9),)})
    # split: each runs its one uop once more (split_load_extra, split_store_extra: 1 assumed)
    for text, uops in (("addq %rax, 60(%rsi)\n", ((1, 2),)), ("movq %rax, 60(%rsi)\n", ((2, 2),))):
        _, annotation = _annotated(text, model)
        assert annotation.split_variants == ()
        assert annotation.annotated[0].uops == uops


def test_a_load_that_splits_on_some_iterations_only_wants_no_variant():
    # a pointer moving by 16 bytes: the load at +56 crosses on one iteration in four
    model = _model({LOAD: ((1, 1),), split_variant(LOAD): ((3, 4),), ADD: ((15, 1),)})
    _, annotation = _annotated("movq 56(%rsi), %rax\naddq %rbx, %rsi\n", model)
    assert annotation.split_variants == ()
    assert annotation.annotated[0].uops == ((1, 1),)


def test_exports_carry_the_instruction_forms_only():
    model = _model({MOVDQU: ((1, 1),), split_variant(MOVDQU): ((3, 2),)})
    assert set(instruction_forms(model).uops) == {MOVDQU}
    plain = _model({MOVDQU: ((1, 1),)})
    assert instruction_forms(plain) is plain
