"""A vector value between kinds of operation (vector ALU, FP arithmetic, shuffles): the extra
cycles a core may take there (pipeline bypass_vector_fp, bypass_vector_shuffle,
bypass_fp_shuffle; measured by chains.py round trips) are added to every register edge that
crosses the pair. The issue's Zen 3 reduction tails (movhlps, shufps, addps, addss) ran
6.9-7.1 cycles where the forms' latencies sum to 5; on Zen 4 every pair is 0. Expected cycles
are hand-computed from the toy model's latencies."""

from __future__ import annotations


import pytest

from pmpredict.asm.parse import parse
from pmpredict.isa import semantics
from pmpredict.measure.chains import REFERENCES, reference_values
from pmpredict.model.facts import BYPASS_KEYS
from pmpredict.model.machine import MachineModel
from pmpredict.predict.kinds import bypass_domain
from pmpredict.views.summary import assumptions

from toy_kernels import predict_on

VPAND = "VPAND_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
VMULPS = "VMULPS_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
VADDPS = "VADDPS_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
VPSHUFD = "VPSHUFD_((REG:W:V:128)),_((REG:R:V:128)),_((IMM:8))"
VSHUFPS = "VSHUFPS_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128)),_((IMM:8))"
VMOVAPS = "VMOVAPS_((REG:W:V:128)),_((REG:R:V:128))"
TOY = MachineModel(name="toy-vector", isa="x86", ports=("A", "B", "C", "D"),
                   uops={f: ((0b1111, 1),) for f in (VPAND, VMULPS, VADDPS, VPSHUFD, VSHUFPS,
                                                      VMOVAPS)},
                   latency={VPAND: 1.0, VMULPS: 3.0, VADDPS: 3.0, VPSHUFD: 1.0, VSHUFPS: 1.0,
                            VMOVAPS: 1.0})


def predict(body: str, **pipeline):
    return predict_on(TOY, body, **pipeline)


@pytest.mark.parametrize("body, pair, plain", [
    ("vpand xmm0, xmm0, xmm1\nvmulps xmm0, xmm0, xmm1\n", "bypass_vector_fp", 4.0),
    ("vpand xmm0, xmm0, xmm1\nvpshufd xmm0, xmm0, 27\n", "bypass_vector_shuffle", 2.0),
    ("vaddps xmm0, xmm0, xmm1\nvshufps xmm0, xmm0, xmm0, 27\n", "bypass_fp_shuffle", 4.0),
])
def test_a_chain_between_two_domains_pays_the_bypass_each_way(body, pair, plain):
    """A loop-carried chain through two kinds crosses twice an iteration."""
    r = predict(body, **{pair: 1.0})
    assert r.cycles == pytest.approx(plain + 2.0)
    assert r.bounds.loop_carried == pytest.approx(plain + 2.0)
    # the other pairs' facts change nothing here
    others = {k: 2.0 for k in BYPASS_KEYS.values() if k != pair}
    assert predict(body, **others, **{pair: 0.0}).cycles == pytest.approx(plain)


def test_within_one_domain_and_through_data_movement_nothing_is_added():
    facts = {k: 1.0 for k in BYPASS_KEYS.values()}
    # FP add into FP multiply: one domain
    assert predict("vaddps xmm0, xmm0, xmm1\nvmulps xmm0, xmm0, xmm1\n", **facts).cycles == \
        pytest.approx(6.0)
    # a move is an operation of neither kind (a core may eliminate it): the value it passes
    # on from vpand to vmulps is not counted as crossing, vmulps's straight into vpand is
    # (1 + 1 + 3, and one crossing)
    body = "vpand xmm2, xmm0, xmm1\nvmovaps xmm3, xmm2\nvmulps xmm0, xmm3, xmm1\n"
    assert predict(body, **facts).cycles == pytest.approx(5.0 + 1.0)


def test_an_unmeasured_crossing_is_said_and_one_without_a_crossing_is_not():
    r = predict("vpand xmm0, xmm0, xmm1\nvmulps xmm0, xmm0, xmm1\n")
    assert r.cycles == pytest.approx(4.0)
    said = " ".join(assumptions(r))
    assert "a vector value between vector ALU and FP operations: no extra cycle" in said
    assert "shuffles" not in said
    quiet = predict("vaddps xmm0, xmm0, xmm1\nvmulps xmm0, xmm0, xmm1\n")
    assert "vector value" not in " ".join(assumptions(quiet))
    measured = predict("vpand xmm0, xmm0, xmm1\nvmulps xmm0, xmm0, xmm1\n", bypass_vector_fp=0)
    assert "vector value" not in " ".join(assumptions(measured))


@pytest.mark.parametrize("text, domain", [
    ("vpaddd xmm0, xmm1, xmm2", "vector ALU"), ("vpand xmm0, xmm1, xmm2", "vector ALU"),
    ("vpmulld xmm0, xmm1, xmm2", "vector ALU"), ("vaddps xmm0, xmm1, xmm2", "FP"),
    ("vfmadd231ps xmm0, xmm1, xmm2", "FP"), ("vdivpd xmm0, xmm1, xmm2", "FP"),
    ("vshufps xmm0, xmm1, xmm2, 27", "shuffles"), ("movhlps xmm0, xmm1", "shuffles"),
    ("vpshufd xmm0, xmm1, 27", "shuffles"), ("vmovaps xmm0, xmm1", None),
    ("vmovups xmm0, xmmword ptr [rsi]", None), ("add rax, rbx", None), ("imul rax, rbx", None),
])
def test_domains_come_from_the_operation_kinds(text, domain):
    x86 = semantics.get("x86")
    insn = parse(text + "\n", "intel").instructions[0]
    assert bypass_domain("x86", x86.instruction(insn, "intel")) == domain


def test_the_reference_chains_read_half_the_round_trip_less_both_self_chains():
    """A core with a cycle each way between vector ALU and FP: vpand; vmulps 6 cycles a link
    (1 + 3 + 2), each self-chain as alone; 0.5 a way snaps to 0.5, a round trip at the parts'
    sum to 0."""
    links = {"vpand128": 1.0, "vmulps128": 3.0, "vpshufd128": 1.0, "vshufps128": 1.0,
             "bypass_vector_fp": 6.0, "bypass_vector_shuffle": 3.0, "bypass_fp_shuffle": 4.02}
    values = reference_values(links)
    assert values["bypass_vector_fp"] == 1.0
    assert values["bypass_vector_shuffle"] == 0.5
    assert values["bypass_fp_shuffle"] == 0.0
    assert set(BYPASS_KEYS.values()) <= set(REFERENCES)
