"""Idioms only some cores recognise (InstructionSemantics.candidate_idiom; the model's
idiom_breaks, measured per form by the latency chains): `vandnpd x, y, y` (~y & y is 0) and
`cmp r, r` (constant flags). Zen 4 (AMD EPYC family 25 model 17, 2026-12-08) recognises both
(`vandnpd xmm1, xmm0, xmm0` and `cmp rax, rax` alone 0.17 cycles a loop, six a cycle as it
dispatches, where a port would allow four; `vandnpd xmm2, xmm2, xmm2` 0.17 where a chain of
it would be 1.00: AnICA campaign 12 #6, #7, #10, #18) but not `andn rax, rbx, rbx` (a port
and its chain kept). Expected cycles are hand-computed."""

from __future__ import annotations

import platform
import shutil
import sys
from dataclasses import replace

import pytest

from pmpredict.asm.parse import parse
from pmpredict.isa import semantics
from pmpredict.measure.chains import form_timing, plan_form
from pmpredict.model.machine import MachineModel
from pmpredict.views.summary import assumptions

from settling import fastest_block
from toy_kernels import predict_on

X86 = semantics.get("x86")
VANDNPD = "VANDNPD_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
CMP = "CMP_((REG:R:G:64)),_((REG:R:G:64))"
ANDN = "ANDN_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))"
# one vector port, one ALU; six instructions a cycle
TOY = MachineModel(name="toy-idioms", isa="x86", ports=("V", "A"), r_max=6.0,
                   uops={VANDNPD: ((0b01, 1),), CMP: ((0b10, 1),), ANDN: ((0b10, 1),)},
                   latency={VANDNPD: 1.0, CMP: 1.0, ANDN: 1.0})


def sem(line: str):
    return X86.instruction(parse(line + "\n", "intel").instructions[0], "intel")


@pytest.mark.parametrize("line, candidate", [
    ("vandnpd xmm1, xmm0, xmm0", "zero"), ("andnps xmm1, xmm1", "zero"),
    ("vpandn ymm1, ymm2, ymm2", "zero"), ("andn rax, rbx, rbx", "zero"),
    ("cmp rax, rax", "zero"), ("cmp eax, eax", "zero"),
    ("vandnpd xmm1, xmm0, xmm2", None), ("cmp rax, rbx", None),
    ("cmp al, al", "zero"), ("cmp cx, cx", "zero"),   # no register written: no merge
    ("xor al, al", None),                   # an 8-bit write merges: no idiom
])
def test_which_instructions_are_candidates(line, candidate):
    s = sem(line)
    assert s.candidate_idiom == candidate and s.idiom is None
    assert s.reads                          # kept: whether they count is the core's


def _with(breaks, ports) -> MachineModel:
    return replace(TOY, idiom_breaks={VANDNPD: breaks, CMP: breaks},
                   idiom_ports={} if ports is None else {VANDNPD: ports, CMP: ports})


@pytest.mark.parametrize("breaks, ports, chain, alone", [
    (True, False, 0.0, 1 / 6),    # Zen 4: no chain, no port, as wide as it dispatches
    (True, True, 0.0, 1.0),       # recognised, but on its port
    (False, None, 1.0, 1.0),      # not recognised: its chain and its port
    (None, None, 1.0, 1.0),       # not measured: as not recognised, and said
])
def test_a_candidate_runs_as_the_model_says_the_core_does(breaks, ports, chain, alone):
    model = TOY if breaks is None else _with(breaks, ports)
    chained = predict_on(model, "vandnpd xmm2, xmm2, xmm2\n")
    assert chained.bounds.loop_carried == pytest.approx(chain)
    assert chained.cycles == pytest.approx(max(chain, alone))
    compare = predict_on(model, "cmp rax, rax\n")
    assert compare.cycles == pytest.approx(alone)
    said = "zero idiom on some cores: not measured, assumed not recognised"
    assert (said in " ".join(assumptions(chained))) == (breaks is None)
    # a recognised one is shown as an idiom
    assert (chained.rows[0].annotated.idiom == "zero") == bool(breaks)


def test_different_sources_are_no_idiom_whatever_the_model_says():
    model = _with(True, False)
    assert predict_on(model, "vandnpd xmm2, xmm2, xmm3\n").bounds.loop_carried == 1.0
    assert predict_on(model, "cmp rax, rbx\n").cycles == pytest.approx(1.0)


def test_a_candidate_is_measured_through_its_chain_or_by_its_port():
    """vandnpd: a chain of a known operation through it, as the universal idioms; cmp writes
    no register, so no chain shows it: recognised where it takes no port."""
    plan = plan_form(VANDNPD)
    assert plan.idiom.candidate and plan.idiom.chain is not None
    assert plan.idiom.chain.lines[-1] == "vandnpd xmm0, xmm0, xmm0"
    cmp = plan_form(CMP).idiom
    assert cmp.candidate and cmp.chain is None
    assert sem(cmp.with_idioms.lines[-1]).candidate_idiom == "zero"
    refs = {"add": 1.0, "imul": 3.0}

    def run(saturated, with_idioms, with_nops):
        values = {cmp.saturating: saturated, cmp.with_idioms: with_idioms,
                  cmp.with_nops: with_nops}
        return form_timing(plan_form(CMP), {c: values.get(c, 1.0)
                                            for c in plan_form(CMP).chains()}, refs)
    t = run(2.0, 2.0, 2.0)                          # two more cost nothing: no port
    assert (t.idiom_ports, t.idiom_breaks, t.candidate) == (False, True, True)
    t = run(2.0, 2.5, 2.0)                          # as much as two more instances: a port
    assert (t.idiom_ports, t.idiom_breaks) == (True, False)
    t = run(2.0, 2.5, 2.5)                          # the front end as narrow: unsaid
    assert t.idiom_ports is None and t.idiom_breaks is None


ON_X86_LINUX = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="host measurement needs an x86-64 Linux machine with a C compiler")


@ON_X86_LINUX
@pytest.mark.slow
def test_what_the_chains_read_shows_in_the_idiom_timed_by_itself(tmp_path):
    """By a second path (the idiom with other registers, AT&T, timed as a block that chains
    it through its own register): where the latency chains read that the core recognises
    `vandnpd x, y, y`, the block runs under half a cycle (Zen 4: 0.17); where they read it
    does not, at least 0.9 of its latency a copy."""
    from pmpredict.measure.latency import measure_latencies
    table = measure_latencies([VANDNPD], cache_dir=str(tmp_path))
    timing = table.forms[VANDNPD]
    if timing.idiom_breaks is None:
        pytest.skip("the chain through the idiom gave no reading (a busy machine)")
    cycles = fastest_block("vandnpd %xmm5, %xmm5, %xmm5\n")
    if cycles is None:
        pytest.skip("the block did not reproduce in three tries (a busy machine)")
    if timing.idiom_breaks:
        assert cycles < 0.5, cycles
    else:
        assert cycles >= 0.9 * max(timing.sources.values()), (timing, cycles)
