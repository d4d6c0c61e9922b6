"""Accesses across a cache line (predict/line_splits.py, the pipeline's split_load_extra and
split_store_extra): where the engine finds them, every base taken as line-aligned, and what
they cost, on synthetic facts; expected cycles are hand-computed. Measured on Zen 4 (AMD EPYC,
family 25 model 17, 2026-12-07, `pmpredict measure`): four 8-byte loads at [base + 60] in lines
of their own 2.00 cycles a copy where at [base + 56] 1.00 (three load ports); two 16-byte
stores at [base + 56] 4.00, at [base + 48] 2.00; the BHive block of test_bhive_split below
2.00."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.model.machine import MachineModel
from pmpredict.predict.line_splits import LINE_SPLIT, _split_share
from pmpredict.predict.predictor import Predictor
from pmpredict.views import to_json

LOAD64 = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
LOAD128 = "MOVDQU_((REG:W:V:128)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE128 = "MOVDQU_xmmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:128))"
ADD_LOAD = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD = "ADD_((REG:RW:G:64)),_((IMM:8))"
PXOR = "PXOR_((REG:RW:V:128)),_((REG:R:V:128))"
# ports: L0 L1 (loads), S (stores), A (integer ALU), V (vector ALU)
L, S, A, V = 0b00011, 0b00100, 0b01000, 0b10000
MODEL = MachineModel(name="splits", isa="x86", ports=("L0", "L1", "S", "A", "V"),
                     uops={LOAD64: ((L, 1),), LOAD128: ((L, 1),), STORE128: ((S, 1),),
                           ADD_LOAD: ((L, 1), (A, 1)), ADD: ((A, 1),), PXOR: ((V, 1),)},
                     pipeline={"split_load_extra": 1, "split_store_extra": 1})
NO_COST = replace(MODEL, pipeline={"split_load_extra": 0, "split_store_extra": 0})
UNSAID = replace(MODEL, pipeline={})


def predict(body: str, model=MODEL):
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


FOUR_LOADS = "".join(f"movq {d}(%rsi), %r{8 + k}\n" for k, d in enumerate((0, 192, 384, 576)))


@pytest.mark.parametrize("shift, expected", [
    (0, 2.0),          # within lines: four loads on two ports
    (56, 2.0),         # [base + 56], 8 bytes: the line's last 8
    (60, 4.0),         # across: each load twice
    (-4, 4.0),         # [base - 4]: the previous line's last 4 and this one's first 4
])
def test_a_load_across_a_line_runs_twice(shift, expected):
    body = "".join(f"movq {d + shift}(%rsi), %r{8 + k}\n"
                   for k, d in enumerate((0, 192, 384, 576)))
    assert predict(body).cycles == pytest.approx(expected)
    assert predict(body, NO_COST).cycles == pytest.approx(2.0)


def test_a_store_across_a_line_runs_twice():
    body = "movdqu %xmm0, 56(%rdi)\nmovdqu %xmm1, 248(%rdi)\n"
    assert predict(body).cycles == pytest.approx(4.0)
    assert predict(body.replace("56(", "48(").replace("248(", "240(")).cycles == \
        pytest.approx(2.0)


def test_a_load_op_across_a_line_repeats_its_load_not_its_operation():
    # two load-ops: loads 2 on L0/L1, adds 2 on A; split, the loads 4 on L0/L1 (2 cycles)
    # and the adds still 2 on A (2 cycles): 2.0; repeating the whole form would say 4.0
    body = "addq 60(%rsi), %r8\naddq 252(%rsi), %r9\n"
    assert predict(body).cycles == pytest.approx(2.0)
    three = body + "addq 444(%rsi), %r10\n"        # loads 6 on two ports: 3.0; adds 3 on A
    assert predict(three).cycles == pytest.approx(3.0)
    assert predict(three, NO_COST).cycles == pytest.approx(3.0)


def test_the_bhive_split_block():
    """`movdqu -76(%rsi), %xmm1; movdqu -76(%rdi), %xmm2; ... pxor; ptest` (BHive, tuning
    split): both loads cross a line (-76 is 52 bytes into a line: 52 + 16 > 64), 2.00 cycles
    measured on Zen 4, 1.00 before the rule."""
    body = "movdqu -76(%rsi), %xmm1\nmovdqu -76(%rdi), %xmm2\npxor %xmm1, %xmm2\n"
    assert predict(body).cycles == pytest.approx(2.0)
    assert predict(body, NO_COST).cycles == pytest.approx(1.0)
    assert predict(body.replace("-76", "-80")).cycles == pytest.approx(1.0)   # 48 + 16 = 64


def test_the_prediction_says_what_it_took_for_the_base():
    report = predict("movdqu 60(%rsi), %xmm1\n")
    assumed = " ".join(n.text for r in report.rows if r.annotated for n in r.annotated.assumed)
    assert "crosses a 64-byte line" in assumed and "64-byte aligned" in assumed
    out = to_json(report)
    assert any("crosses a 64-byte line" in a for i in out["instructions"]
               for a in i.get("assumed", ()))
    # a model that did not measure the cost: the cost is assumed, and said
    unsaid = predict("movdqu 60(%rsi), %xmm1\n", UNSAID)
    assert dict(unsaid.assumed_facts).get("split_load_extra") == 1
    # an aligned access says nothing of splits
    aligned = predict("movdqu 48(%rsi), %xmm1\n", UNSAID)
    assert "split_load_extra" not in dict(aligned.assumed_facts)
    assert not any(n.what == LINE_SPLIT for r in aligned.rows if r.annotated
                   for n in r.annotated.assumed)


def test_a_pointer_moving_by_whole_lines_splits_every_iteration_or_never():
    body = "movdqu 60(%rsi), %xmm1\naddq $64, %rsi\n"
    assert predict(body).cycles == pytest.approx(1.0)     # loads 2 on two ports; add 1 on A
    body2 = "movdqu 60(%rsi), %xmm1\nmovdqu 124(%rsi), %xmm2\nmovdqu 188(%rsi), %xmm3\n" \
            "addq $128, %rsi\n"
    assert predict(body2).cycles == pytest.approx(3.0)    # six load uops on two ports


def test_a_pointer_moving_by_less_splits_on_some_iterations_and_says_so():
    # 16 bytes at a pointer moving 8 a step: the offsets 0, 8, ... 56 repeat; at 56 it splits
    assert _split_share(0, 16, 8, 64) == pytest.approx(1 / 8)
    assert _split_share(0, 16, 16, 64) == 0.0
    assert _split_share(60, 8, 0, 64) == 1.0 and _split_share(56, 8, 0, 64) == 0.0
    assert _split_share(4, 8, 1, 64) == pytest.approx(7 / 64)
    report = predict("movdqu (%rsi), %xmm1\naddq $8, %rsi\n")
    assert report.cycles == pytest.approx(1.0)            # not counted
    notes = [n.text for r in report.rows if r.annotated for n in r.annotated.assumed]
    assert any("on 12% of the iterations" in t and "not counted" in t for t in notes)


STORE64 = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
STORE256 = "VMOVDQU_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256))"
SUB_LINE = replace(MODEL, uops={**MODEL.uops, STORE64: ((S, 1),), STORE256: ((S, 1),)},
                   pipeline={**MODEL.pipeline, "store_split_bytes": 32})


def test_a_store_across_the_block_it_splits_at_runs_twice():
    """Zen 4 (2026-12-07): `mov qword ptr [rbx + 28], r8` alone 2.00 cycles, at + 24 0.50;
    `vmovdqu ymmword ptr [rbx + 16], ymm0` 2.00, at + 32 1.00; a load at + 28 as at + 24."""
    assert predict("movq %r8, 28(%rbx)\n", SUB_LINE).cycles == pytest.approx(2.0)
    assert predict("movq %r8, 24(%rbx)\n", SUB_LINE).cycles == pytest.approx(1.0)
    assert predict("vmovdqu %ymm0, 16(%rbx)\n", SUB_LINE).cycles == pytest.approx(2.0)
    assert predict("vmovdqu %ymm0, 32(%rbx)\n", SUB_LINE).cycles == pytest.approx(1.0)
    # a load is not a store: it splits at the line only
    assert predict(FOUR_LOADS.replace("(%rsi)", "").replace("movq 0", "movq 28(%rsi)")
                   .replace("movq 192", "movq 220(%rsi)").replace("movq 384", "movq 412(%rsi)")
                   .replace("movq 576", "movq 604(%rsi)"), SUB_LINE).cycles == \
        pytest.approx(2.0)
    # a core that splits at the line: the same store runs once
    at_line = replace(SUB_LINE, pipeline={**SUB_LINE.pipeline, "store_split_bytes": 64})
    assert predict("movq %r8, 28(%rbx)\n", at_line).cycles == pytest.approx(1.0)


def test_a_store_split_at_a_block_says_so_and_an_unmeasured_block_is_assumed():
    report = predict("movq %r8, 28(%rbx)\n", SUB_LINE)
    notes = [n.text for r in report.rows if r.annotated for n in r.annotated.assumed]
    assert any("crosses a 32-byte block" in t for t in notes), notes
    unsaid = predict("movq %r8, 28(%rbx)\n", replace(SUB_LINE, pipeline=MODEL.pipeline))
    assert unsaid.cycles == pytest.approx(1.0)
    assert dict(unsaid.assumed_facts).get("store_split_bytes") == 64
    # where no store crosses a block inside a line, the fact is not read
    aligned = predict("movq %r8, 24(%rbx)\n", replace(SUB_LINE, pipeline=MODEL.pipeline))
    assert "store_split_bytes" not in dict(aligned.assumed_facts)
