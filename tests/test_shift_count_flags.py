"""A shift by a count in a register keeps the flags when the count is 0, so the semantics has
it read them (InstructionSemantics.count_kept_flags); whether a core waits for them when the
count is not 0 is the model's `shift_count_flags` (chains.py: `test rdx, rdx; shl rdx, cl`
less `shl rdx, cl` alone). Zen 4 does not: AnICA's `test rdx, rdx; shl edx, cl` was
predicted 2.00 cycles a link where 1.00 is measured. Expected cycles are hand-computed from
the toy model's latencies."""

from __future__ import annotations


import pytest

from pmpredict.asm.parse import parse
from pmpredict.isa import semantics
from pmpredict.measure.chains import REFERENCES, reference_values
from pmpredict.model.machine import MachineModel
from pmpredict.views.summary import assumptions

from toy_kernels import predict_on

TEST = "TEST_((REG:R:G:64)),_((REG:R:G:64))"
SHL_CL = "SHL_((REG:RW:G:64)),_cl"
RCL_CL = "RCL_((REG:RW:G:64)),_cl"
TOY = MachineModel(name="toy-shift", isa="x86", ports=("A", "B", "C", "D"),
                   uops={f: ((0b1111, 1),) for f in (TEST, SHL_CL, RCL_CL)},
                   latency={TEST: 1.0, SHL_CL: 1.0, RCL_CL: 1.0})
X86 = semantics.get("x86")


def predict(body: str, **pipeline):
    return predict_on(TOY, body, **pipeline)


def _semantics(line: str):
    return X86.instruction(parse(line + "\n", "intel", "k.s").instructions[0], "intel")


def test_the_flags_a_count_of_0_would_keep_are_named_apart_from_those_a_shift_reads():
    shl = _semantics("shl rdx, cl")
    assert shl.shift_count == "rcx" and "CF" in shl.count_kept_flags and "ZF" in \
        shl.count_kept_flags
    assert shl.count_kept_flags <= {r.name for r in shl.reads}
    rcl = _semantics("rcl rdx, cl")          # rcl shifts CF in: that read is its data
    assert "CF" not in rcl.count_kept_flags and "CF" in {r.name for r in rcl.reads}
    assert _semantics("shl rdx, 3").count_kept_flags == frozenset()


def test_a_core_that_does_not_wait_has_no_flags_dependency():
    body = "test rdx, rdx\nshl rdx, cl\n"
    assert predict(body, shift_count_flags=1.0).bounds.loop_carried == pytest.approx(2.0)
    assert predict(body, shift_count_flags=0.0).bounds.loop_carried == pytest.approx(1.0)
    assert predict(body, shift_count_flags=0.0).cycles == pytest.approx(1.0)
    # rcl's carry is data: read whatever the fact says
    assert predict("test rdx, rdx\nrcl rdx, cl\n", shift_count_flags=0.0) \
        .bounds.loop_carried == pytest.approx(2.0)


def test_the_assumption_is_said_only_for_a_kernel_with_such_a_shift():
    r = predict("test rdx, rdx\nshl rdx, cl\n")
    assert r.bounds.loop_carried == pytest.approx(2.0)          # the semantics' reading
    assert "a shift by a count in a register waits for the flags before it" in \
        " ".join(assumptions(r))
    assert "shift" not in " ".join(assumptions(predict("test rdx, rdx\nshl rdx, 3\n")))
    assert "shift" not in " ".join(assumptions(predict("test rdx, rdx\nshl rdx, cl\n",
                                                       shift_count_flags=0.0)))


@pytest.mark.parametrize("link, expected", [(1.0, 0.0), (2.0, 1.0), (1.02, 0.0)])
def test_the_reference_is_the_link_less_the_shift_alone(link, expected):
    cycles = {name: 1.0 for name in REFERENCES}
    cycles["shift_count_flags"] = link
    assert reference_values(cycles)["shift_count_flags"] == pytest.approx(expected)


# --- a vector shift by its element width or more (shifted_out, shift_out_latency) -----------

VPSLLD = "VPSLLD_((REG:W:V:128)),_((REG:R:V:128)),_((IMM:8))"
VECTOR_TOY = MachineModel(name="toy-vector-shift", isa="x86", ports=("A", "B"),
                          uops={VPSLLD: ((0b11, 1),)}, latency={VPSLLD: 1.0})


def predict_vector(body: str, **pipeline):
    return predict_on(VECTOR_TOY, body, **pipeline)


def test_every_bit_shifted_out_is_named_by_the_semantics():
    assert _semantics("vpslld xmm0, xmm0, 42").shifted_out
    assert _semantics("psrlq xmm1, 64").shifted_out
    assert not _semantics("vpslld xmm0, xmm0, 31").shifted_out
    assert not _semantics("vpsrad xmm0, xmm0, 42").shifted_out       # arithmetic: sign fill
    assert not _semantics("vpsllq xmm0, xmm0, 63").shifted_out


def test_a_core_that_knows_the_result_is_0_does_not_wait_for_the_source():
    body = "vpslld xmm0, xmm0, 42\n"
    # Zen 4: the link at the form's throughput (two ports), 0.50
    broken = predict_vector(body, shift_out_latency=0.5)
    assert broken.bounds.loop_carried == pytest.approx(0.0)
    assert broken.cycles == pytest.approx(0.5)
    waits = predict_vector(body, shift_out_latency=1.0)
    assert waits.cycles == pytest.approx(1.0)
    # a shift that keeps bits waits whatever the fact
    assert predict_vector("vpslld xmm0, xmm0, 3\n", shift_out_latency=0.5).cycles == \
        pytest.approx(1.0)


def test_without_the_fact_the_shift_waits_and_it_is_said():
    r = predict_vector("vpslld xmm0, xmm0, 42\n")
    assert r.cycles == pytest.approx(1.0)
    assert "a vector shift by its element width or more waits for its source" in \
        " ".join(assumptions(r))
    assert "element width" not in " ".join(assumptions(predict_vector("vpslld xmm0, xmm0, 3\n")))
