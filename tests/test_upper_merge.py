"""A legacy-SSE write of an xmm register while the upper halves are dirty (predict/annotate.py,
the pipeline's sse_upper_merge): where a core keeps the register's upper half, the write merges
into the old register and waits for it. Synthetic facts; expected cycles hand-computed.
Measured on Zen 4 (AMD EPYC, family 25 model 17, 2026-12-07, `pmpredict measure`): `vaddps
%ymm1, %ymm1, %ymm1; movdqu (%rsi), %xmm1` 4.00 cycles a loop (vaddps 3 + the merge 1); with
`vaddps %xmm1, ...` (VEX.128) 0.50, with `addps` (no AVX) 0.50, with `vzeroupper` between
1.00; `vaddps %ymm2, ...; addps %xmm3, %xmm1; movdqu (%rsi), %xmm1` 4.00 (the state is
global: a 256-bit write of another register dirties it)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor

VADDPS256 = "VADDPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
VADDPS128 = "VADDPS_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
ADDPS = "ADDPS_((REG:RW:V:128)),_((REG:R:V:128))"
LOAD128 = "MOVDQU_((REG:W:V:128)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]"
LOAD128_NODISP = "MOVDQU_((REG:W:V:128)),_xmmword_ptr_[((MEM:64))]"
VZEROUPPER = "VZEROUPPER"
# ports: L0 L1 (loads), F0 F1 (vector)
L, F = 0b0011, 0b1100
MODEL = MachineModel(name="upper", isa="x86", ports=("L0", "L1", "F0", "F1"),
                     uops={VADDPS256: ((F, 1),), VADDPS128: ((F, 1),), ADDPS: ((F, 1),),
                           LOAD128: ((L, 1),), LOAD128_NODISP: ((L, 1),), VZEROUPPER: ((F, 1),)},
                     latency={VADDPS256: 3.0, VADDPS128: 3.0, ADDPS: 3.0, LOAD128: 5.0,
                              LOAD128_NODISP: 5.0, VZEROUPPER: 1.0},
                     pipeline={"sse_upper_merge": 1})
KEEPS_LOW = replace(MODEL, pipeline={"sse_upper_merge": 0})
UNSAID = replace(MODEL, pipeline={})


def predict(body: str, model=MODEL):
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


DIRTY = "vaddps %ymm1, %ymm1, %ymm1\nmovdqu 64(%rsi), %xmm1\n"


def test_a_legacy_load_after_a_256_bit_write_waits_for_the_old_register():
    # vaddps (3) -> the load's merge (1) -> vaddps: 4 cycles a loop
    assert predict(DIRTY).cycles == pytest.approx(4.0)
    # a core that does not merge: vaddps's own chain is broken by the load each iteration
    assert predict(DIRTY, KEEPS_LOW).cycles == pytest.approx(0.5)


@pytest.mark.parametrize("body", [
    "vaddps %xmm1, %xmm1, %xmm1\nmovdqu 64(%rsi), %xmm1\n",     # VEX.128: upper halves clean
    "addps %xmm1, %xmm1\nmovdqu 64(%rsi), %xmm1\n",             # no AVX at all
    "vaddps %ymm1, %ymm1, %ymm1\nvzeroupper\nmovdqu 64(%rsi), %xmm1\n",
])
def test_no_merge_where_the_upper_halves_are_clean(body):
    assert predict(body).cycles < 2.0


def test_the_dirty_state_is_global_and_carried_around_the_loop():
    # another register's 256-bit write dirties the state; addps reads xmm1 already (3), the
    # load merges into it (1): 4 cycles a loop
    body = "vaddps %ymm2, %ymm2, %ymm2\naddps %xmm3, %xmm1\nmovdqu 64(%rsi), %xmm1\n"
    assert predict(body).cycles == pytest.approx(4.0)
    # the 256-bit write after the load in program order dirties it for the next iteration
    after = "movdqu 64(%rsi), %xmm1\naddps %xmm3, %xmm1\nvaddps %ymm2, %ymm2, %ymm2\n"
    assert predict(after).cycles == pytest.approx(4.0)
    # vzeroupper after the 256-bit write, before the load: clean again
    cleaned = "movdqu 64(%rsi), %xmm1\naddps %xmm3, %xmm1\nvaddps %ymm2, %ymm2, %ymm2\n" \
              "vzeroupper\n"
    assert predict(cleaned).cycles < 4.0


def test_an_unmeasured_core_is_taken_as_not_merging_and_says_so():
    report = predict(DIRTY, UNSAID)
    assert report.cycles == pytest.approx(0.5)
    assert dict(report.assumed_facts).get("sse_upper_merge") == 0
    # where nothing is dirty the fact is not read
    clean = predict("addps %xmm1, %xmm1\nmovdqu 64(%rsi), %xmm1\n", UNSAID)
    assert "sse_upper_merge" not in dict(clean.assumed_facts)
