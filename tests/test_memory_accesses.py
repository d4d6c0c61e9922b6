"""Loads and stores share the core's address generation (the pipeline's
memory_accesses_per_cycle; measured by the "accesses" probes): a loop's accesses take at least
their number over that many cycles, a bound beside the ports (bottlenecks.Accesses). Zen 4
(AMD EPYC family 25 model 17, 2026-12-08, `pmpredict measure`, cycles a loop): four 8-byte
loads and four stores that pair 2.67 (the loads alone 1.33, the stores 2.00); two loads and
two such stores 1.33, three and two 1.67; three load-ops and two stores 1.67; two `add [m], r`
and two loads 2.09 (six accesses: a read-modify-write two); `cmp dword ptr [rdi + 189], r8d`
(across a line) alone 0.67 (two). Expected cycles are hand-computed."""

from __future__ import annotations

import pytest

from pmpredict.model.machine import MachineModel
from pmpredict.predict.bottlenecks import Accesses, Evidence
from pmpredict.views import to_json
from pmpredict.views.summary import text as summary_text

from toy_kernels import predict_on

LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
ADD_LOAD = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD_STORE = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
CMP_LOAD = "CMP_dword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:32))"
# three load ports, two store ports, four ALUs: the ports alone let four loads and four stores
# run in 2 cycles, as their stores alone
TOY = MachineModel(name="toy-accesses", isa="x86",
                   ports=("L0", "L1", "L2", "S0", "S1", "A0", "A1", "A2", "A3"),
                   uops={LOAD: ((0b000000111, 1),), STORE: ((0b000011000, 1),),
                         ADD_LOAD: ((0b000000111, 1), (0b111100000, 1)),
                         ADD_STORE: ((0b000000111, 1), (0b000011000, 1), (0b111100000, 1)),
                         CMP_LOAD: ((0b000000111, 1), (0b111100000, 1))},
                   latency={LOAD: 4.0, STORE: 1.0, ADD_LOAD: 5.0, ADD_STORE: 6.0, CMP_LOAD: 5.0})
THREE = {"memory_accesses_per_cycle": 3}

LOADS = [f"mov {r}, qword ptr [rsi + {d}]\n"
         for r, d in zip(("r10", "r11", "r12", "r13"), (256, 512, 768, 1024))]
STORES = [f"mov qword ptr [rdi + {d}], {r}\n" for d, r in zip((8, 72, 136, 200),
                                                              ("r8", "r9", "r8", "r9"))]


@pytest.mark.parametrize("body, accesses", [
    ("".join(LOADS + STORES), 8),                          # Zen 4's probe: 2.67
    ("".join(LOADS[:3] + STORES[:2]), 5),                  # 1.67
    # a read-modify-write generates two addresses: two and two loads 2.09 on Zen 4
    ("add qword ptr [rdi + 8], r8\nadd qword ptr [rdi + 72], r9\n" + "".join(LOADS[:2]), 6),
    # a load-op one
    ("add r10, qword ptr [rsi + 256]\nadd r11, qword ptr [rsi + 512]\n" + "".join(STORES[:2]),
     4),
])
def test_loads_and_stores_take_their_number_over_the_accesses_a_cycle(body, accesses):
    # where the model does not say (or says 0: no limit seen), no bound, and nothing said of
    # the fact; the ports let the stores run in 2 cycles at most
    unsaid = predict_on(TOY, body)
    assert unsaid.bounds.throughput <= 2.0
    for r in (unsaid, predict_on(TOY, body, memory_accesses_per_cycle=0)):
        assert r.bounds.accesses is None and r.cycles == pytest.approx(unsaid.cycles)
        assert "memory_accesses_per_cycle" not in r.assumed_facts
    measured = predict_on(TOY, body, **THREE)
    assert measured.bounds.accesses == pytest.approx(accesses / 3)
    assert measured.cycles == pytest.approx(max(accesses / 3, unsaid.cycles))


def test_an_access_across_a_line_generates_as_many_addresses_as_it_runs():
    """`cmp dword ptr [rdi + 189], r8d` alone: 0.67 cycles on Zen 4, two accesses on three."""
    split = predict_on(TOY, "cmp dword ptr [rdi + 189], r8d\n", split_load_extra=1, **THREE)
    assert split.bounds.accesses == pytest.approx(2 / 3)
    within = predict_on(TOY, "cmp dword ptr [rdi + 128], r8d\n", split_load_extra=1, **THREE)
    assert within.bounds.accesses == pytest.approx(1 / 3)


def test_the_bound_is_shown_and_in_the_json():
    report = predict_on(TOY, "".join(LOADS + STORES), **THREE)
    assert "memory accesses 2.67" in summary_text(report)
    assert to_json(report)["bounds"]["accesses"] == pytest.approx(8 / 3)
    assert "accesses" not in {k for k, v in to_json(predict_on(TOY, LOADS[0]))["bounds"].items()
                              if v is not None}


def test_the_bound_reads_the_evidence():
    evidence = Evidence(1.0, 1, ("A",), accesses=7.0, access_rate=2.0)
    assert Accesses().bound(evidence) == pytest.approx(3.5)
    assert Accesses().bound(Evidence(1.0, 1, ("A",), accesses=7.0)) is None
