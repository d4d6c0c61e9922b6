"""A vector load across a cache line runs alone in its cycle on some cores (the pipeline's
split_load_alone, vector_loads_per_cycle; measured by the "vector splits" probes): the
loop's vector loads then take a cycle per split one and ceil(k / per_cycle) per run of k
others between two of them, a bound beside the ports (bottlenecks.SplitLoads). Zen 4
(2026-12-07): `vmovdqu xmm0, [rsi + 120]` 1.00 cycles a loop, `movss` 0.50, the two 2.00,
the split with two `movss` 2.00, with three 3.00, where any port mapping allows at most the
sum. Expected cycles are hand-computed."""

from __future__ import annotations


import pytest

from pmpredict.measure.probes import probes, read_frontend
from pmpredict.model.machine import MachineModel
from pmpredict.views.summary import text as summary_text

from toy_kernels import predict_on

MOVDQU = "VMOVDQU_((REG:W:V:128)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOVSS = "MOVSS_((REG:W:V:128)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOV = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
VUCOMISS = "VUCOMISS_((REG:R:V:128)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"
# two load ports: a vector load 0.50 a cycle, a split one (twice its access) 1.00
TOY = MachineModel(name="toy-loads", isa="x86", ports=("L0", "L1", "A"),
                   uops={MOVDQU: ((0b011, 1),), MOVSS: ((0b011, 1),), MOV: ((0b011, 1),),
                         VUCOMISS: ((0b011, 1), (0b100, 1))},
                   latency={MOVDQU: 5.0, MOVSS: 5.0, MOV: 4.0, VUCOMISS: 5.0})
ALONE = {"split_load_alone": 1, "vector_loads_per_cycle": 2, "split_load_extra": 1}


def predict(body: str, **pipeline):
    return predict_on(TOY, body, **pipeline)


SPLIT = "vmovdqu xmm0, xmmword ptr [rsi + 120]\n"


@pytest.mark.parametrize("singles, expected", [(0, 1.0), (1, 2.0), (2, 2.0), (3, 3.0)])
def test_the_vector_loads_after_a_split_wait_for_the_next_cycle(singles, expected):
    body = SPLIT + "".join(f"movss xmm{k + 1}, dword ptr [rdi + {64 * k}]\n"
                           for k in range(singles))
    r = predict(body, **ALONE)
    assert r.bounds.split_loads == pytest.approx(expected)
    assert r.cycles == pytest.approx(max(expected, r.bounds.throughput))
    # without the fact: the ports alone (the split's access twice, on two load ports)
    plain = predict(body, split_load_extra=1)
    assert plain.bounds.split_loads is None
    assert plain.cycles == pytest.approx((2 + singles) / 2)


def test_two_splits_a_cycle_each_and_general_purpose_loads_apart():
    two = predict(SPLIT + "vmovdqu xmm1, xmmword ptr [rdi + 120]\n", **ALONE)
    assert two.bounds.split_loads == pytest.approx(2.0)
    # a general-purpose load is no vector load: the bound counts the split alone
    beside = predict(SPLIT + "mov rax, qword ptr [rdi]\n", **ALONE)
    assert beside.bounds.split_loads == pytest.approx(1.0)
    # a compare of a vector register with memory loads for a vector unit (it writes flags):
    # AnICA's `vucomiss xmm1, [rbx + 445]; vmovss xmm1, [rsi + 189]`, 2.00 measured on Zen 4
    compare = predict(SPLIT + "vucomiss xmm1, dword ptr [rdi]\n", **ALONE)
    assert compare.bounds.split_loads == pytest.approx(2.0)
    # no load crosses a line: no bound
    assert predict("vmovdqu xmm0, xmmword ptr [rsi + 64]\nmovss xmm1, dword ptr [rdi]\n",
                   **ALONE).bounds.split_loads is None


def test_the_bound_is_named_in_the_bounds_line():
    r = predict(SPLIT + "movss xmm1, dword ptr [rdi]\n", **ALONE)
    bounds = next(x for x in summary_text(r).splitlines() if x.startswith("Bounds:"))
    assert "vector loads across a line 2.00" in bounds


def _cycles(split, singles, both):
    cycles = {p.name: None for p in probes()}
    cycles.update({"vector splits: a load across a line": split,
                   "vector splits: two single loads": singles,
                   "vector splits: the split and a single load": both})
    return read_frontend(cycles)


def test_the_probes_read_a_split_alone_only_beyond_its_parts():
    zen4 = _cycles(1.0, 1.0, 2.0)
    assert (zen4.pipeline["split_load_alone"], zen4.pipeline["vector_loads_per_cycle"]) == (1, 2)
    ports = _cycles(1.0, 1.0, 1.5)              # as the ports allow: no rule
    assert ports.pipeline["split_load_alone"] == 0
    three = _cycles(1.0, 0.67, 1.34)            # three single loads a cycle
    assert three.pipeline["vector_loads_per_cycle"] == 3
    assert "vector splits" not in zen4.suspect_families
    assert "vector splits" in _cycles(1.0, 1.0, 1.72).suspect_families   # near the threshold
