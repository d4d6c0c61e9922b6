"""The L1's bytes a cycle for loads and stores together (pipeline memory_bytes_per_cycle, the
streams probes): a bound of its own where a core measured one, beside the ports. The issue's
Zen 3 daxpy (16 loads and 8 stores of 32 bytes) ran 13.3 cycles where its forms' ports allow
8: 58 bytes a cycle. Expected cycles are hand-computed: two load ports, one store port."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.model.machine import MachineModel
from pmpredict.predict.bottlenecks import bytes_moved
from pmpredict.predict.deps import MemRef, Node
from pmpredict.predict.predictor import Predictor
from pmpredict.views import render_text, to_json
from pmpredict.views.summary import verdict

LOAD = "VMOVUPD_((REG:W:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE = "VMOVUPD_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256))"
LOAD8 = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
TWO_LOADS_ONE_STORE = MachineModel(
    name="two-loads-one-store", isa="x86", ports=("A", "B", "S"),
    uops={LOAD: ((0b011, 1),), LOAD8: ((0b011, 1),), STORE: ((0b100, 1),)})

# four groups of two 32-byte loads and a 32-byte store: 384 bytes, 4 cycles on the ports
DAXPY = "".join(f"vmovupd {64 * k}(%rsi), %ymm{2 * k}\nvmovupd {64 * k + 32}(%rsi), "
                f"%ymm{2 * k + 1}\nvmovupd %ymm{8 + k}, {64 * k}(%rdi)\n" for k in range(4))


def predict(body: str, rate=None):
    pipeline = {} if rate is None else {"memory_bytes_per_cycle": rate}
    model = replace(TWO_LOADS_ONE_STORE, pipeline=pipeline)
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


@pytest.mark.parametrize("rate, expected", [
    (None, 4.0),            # not measured: the ports
    (0, 4.0),               # measured, no limit beyond the ports
    (96, 4.0),              # 384 bytes at 96 a cycle: as the ports
    (58, 384 / 58),         # the Zen 3: 6.62
])
def test_loads_and_stores_of_32_bytes_take_at_least_their_bytes_over_the_l1_rate(rate, expected):
    r = predict(DAXPY, rate)
    assert r.bounds.throughput == pytest.approx(4.0)
    assert r.cycles == pytest.approx(expected)
    assert r.bounds.memory == (pytest.approx(384 / rate) if rate else None)
    bounds_line = next(x for x in render_text(r).splitlines() if x.startswith("Bounds:"))
    assert ("L1 bandwidth" in bounds_line) == bool(rate)
    assert to_json(r)["bounds"]["memory"] == (pytest.approx(384 / rate, abs=0.01) if rate
                                              else None)
    if rate == 58:
        assert verdict(r).startswith("bound by the L1's bytes a cycle: 6.62")


def test_scalar_loads_stay_on_their_ports_under_the_same_rate():
    """Eight 8-byte loads: 64 bytes, 1.1 cycles at 58 a cycle, under the ports' 4."""
    body = "".join(f"movq {8 * k}(%rsi), %r{8 + k}\n" for k in range(8))
    r = predict(body, 58)
    assert r.cycles == pytest.approx(4.0) and r.bounds.memory == pytest.approx(64 / 58)


def test_a_read_modify_write_moves_its_bytes_twice():
    ref = MemRef(("rsi", None, 1, 8, ()), ("rsi",), 64, load=True, store=True)
    load = MemRef(("rsi", None, 1, 16, ()), ("rsi",), 256, load=True, store=False)
    unknown = MemRef(("rsi", None, 1, 24, ()), ("rsi",), None, load=True, store=False)
    assert bytes_moved([Node((), (), (ref,)), Node((), (), (load, unknown))]) == 16 + 32
