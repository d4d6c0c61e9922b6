"""The bottleneck registry (pmpredict/predict/bottlenecks.py): one class per kind, and the
predictor, criticality and the views all go through it."""

from __future__ import annotations

import json

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.formats.model_files import load_model
from pmpredict.predict.bottlenecks import (BOTTLENECKS, BOUND_KINDS, BY_EVENT_KIND, Bounds,
                                           EventClass, Evidence, event_classes)
from pmpredict.predict.criticality import idealize
from pmpredict.predict.predictor import Predictor
from pmpredict.predict.simulation import Body, CoreLimits, simulate
from pmpredict.views import summary

LOOP = """.L2:
    vmulps (%rdi,%rax), %ymm1, %ymm2
    vaddps %ymm2, %ymm0, %ymm0
    addq $32, %rax
    cmpq %rax, %rsi
    jne .L2
"""


def report():
    program = parse(LOOP, "att")
    return Predictor(load_model("skl")).predict(select_kernel(program), "att")


def test_every_kind_has_its_own_event_kind_and_every_bound_a_key():
    assert len({b.event_kind for b in BOTTLENECKS}) == len(BOTTLENECKS)
    assert set(BY_EVENT_KIND) == {b.event_kind for b in BOTTLENECKS}
    keys = [b.key for b in BOUND_KINDS]
    assert keys == ["throughput", "loop_carried", "front_end", "memory", "split_loads",
                    "accesses"]
    assert len(set(keys)) == len(keys)


def test_a_report_has_every_bound_kind_in_its_text_and_json():
    r = report()
    assert list(r.bounds.as_dict()) == [b.key for b in BOUND_KINDS]
    line = next(x for x in summary.text(r).splitlines() if x.startswith("Bounds:"))
    for kind in BOUND_KINDS:
        # a kind without a value for this model (memory: the L1's rate not measured) is not told
        assert (kind.bound_name in line) == (getattr(r.bounds, kind.key) is not None)
    assert list(json.loads(json.dumps(summary.json(r)))["bounds"]) == [b.key for b in BOUND_KINDS]
    # the prediction is never below a bound
    assert all(v is None or r.cycles >= v - 1e-9 for v in r.bounds.values.values())
    assert Bounds.unknown().as_dict() == dict.fromkeys([b.key for b in BOUND_KINDS])


def test_events_come_by_rank_and_each_kind_idealises_its_own():
    """Chains first (the three worst), then the ports, the front end, the window; making a
    kind ideal changes only what that kind owns."""
    r = report()
    ev = Evidence(r.bounds.throughput, 1, ("A",), tuple(r.chains), 4, 4.0, 1.0, 192)
    kinds = [e.kind for e in event_classes(ev)]
    assert kinds == sorted(kinds, key=lambda k: BY_EVENT_KIND[k].event_rank)
    assert kinds[0] == "chain" and kinds[-3:] == ["ports", "front end", "window"]
    body = Body((4.0,), ((1,),), (((0, 1, 4.0),),), (1,), 1)
    core = CoreLimits(4, 192, 1.0)
    for event in event_classes(ev):
        b, c, ports = idealize(body, core, [event])
        assert (b is not body) == (event.kind == "chain")
        assert (ports != 0) == (event.kind == "ports")
        assert (c.width is None) == (event.kind == "front end")
        assert (c.window is None) == (event.kind == "window")
    # a 4-cycle chain through one instruction: 4 cycles; 1 (its port) once the chain is ideal
    assert simulate(body, core).cycles == pytest.approx(4.0)
    own = EventClass("chain", "chain through x", frozenset({(0, 0, 1)}))
    b, c, ports = idealize(body, core, [own])
    assert simulate(b, c, ideal_ports=ports).cycles == pytest.approx(1.0)


def verdict_of(body: str, model) -> str:
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    r = Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")
    assert r.cycles > max(v or 0 for v in r.bounds.values.values()) * 1.05   # unexplained
    return summary.verdict(r)


STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"


def test_a_loop_above_every_bound_names_the_window_when_it_fills():
    """A long-latency load stream in a 12-entry window: Little's law, not a bound."""
    from pmpredict.model.machine import MachineModel
    model = MachineModel("m", "x86", ("L", "A"), {LOAD: ((0b01, 1),), ADD: ((0b10, 1),)},
                         latency={LOAD: 40.0}, pipeline={"window": 12, "load_latency": 40})
    got = verdict_of("movq 8(%rdi), %rax\naddq %rbx, %rcx\n", model)
    assert "the window (12 instructions) fills" in got


def test_a_chain_that_waits_for_a_port_is_named_with_the_port():
    """Store -> load forwarding chain through memory, on the one store port three other
    stores also need: the chain's store waits for the port; their delays add up (Fields:
    independent, icost 0): 5 + 3 = 8 cycles."""
    from pmpredict.model.machine import MachineModel
    model = MachineModel("m", "x86", ("S", "L", "A"),
                         {STORE: ((0b001, 1),), LOAD: ((0b010, 1),), ADD: ((0b100, 1),)},
                         pipeline={"load_latency": 5, "store_forward_latency": 5})
    body = ("movq %rax, -296(%rbp)\nmovq -296(%rbp), %rax\naddq %rax, %rbx\n"
            "movq %rax, 88(%r13)\nmovq %rax, 96(%r13)\nmovq %rbx, 104(%r13)\n")
    got = verdict_of(body, model)
    assert got.endswith("the chain through mem, rax (4.00 cycles per iteration) and the ports S "
                        "(3.00) each add their own delay (independent: making both ideal saves "
                        "7.00)")
