"""Partial register writes: what a merge costs (predict/annotate.py) and how it is measured
(measure/chains.py, latency.py).

`movb 24(%rsi), %cl` in a loop writes cl and keeps the rest of rcx: the semantics read the old
rcx (role MERGE), so each iteration waits for the last one's rcx. The load does not: its
address is constant, it starts before the old value is there, and only the merge waits for it.
Zen 4 runs the loop at 1.0 cycle an iteration (Raptor Cove at 1.5), not at the load latency
+ 1. A model's latency of the destination operand is that merge (measured by a chain through
it); without one, a load into part of a register merges in ASSUMED merge_latency (stated), and
an instruction that computes the new bits itself keeps its latency (the merge is that
operation: Zen 4 measures `imul cx, dx, 3` at 4 cycles from the old rcx, as from dx)."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.formats.model_files import save_model
from pmpredict.isa import semantics
from pmpredict.measure.chains import form_timing, plan_form
from pmpredict.measure.latency import LatencyTable, split_latencies
from pmpredict.model.defaults import ASSUMED
from pmpredict.model.machine import MachineModel
from pmpredict.predict.annotate import MERGE_NOTE, annotate
from pmpredict.predict.predictor import Predictor

MEM = "[((MEM:64))_+_((MIMM:16))]"
MOV8 = f"MOV_((REG:W:G:8)),_byte_ptr_{MEM}"
MOV16 = f"MOV_((REG:W:G:16)),_word_ptr_{MEM}"
MOVZX = f"MOVZX_((REG:W:G:32)),_byte_ptr_{MEM}"
MOV_RR8 = "MOV_((REG:W:G:8)),_((REG:R:G:8))"
ADD8 = "ADD_((REG:RW:G:8)),_((REG:R:G:8))"
SETE = "SETE_((REG:W:G:8))"
MOV_RI8 = "MOV_((REG:W:G:8)),_((IMM:8))"
IMUL16 = "IMUL_((REG:W:G:16)),_((REG:R:G:16)),_((IMM:8))"
LOADS = 0b111                       # three load ports

MODEL = MachineModel(
    "loads", "x86", ("0", "1", "2"),
    {MOV8: ((LOADS, 1),), MOV16: ((LOADS, 1),), MOVZX: ((LOADS, 1),), IMUL16: ((1, 1),)},
    latency={MOV8: 5.0, MOV16: 5.0, MOVZX: 5.0, IMUL16: 3.0}, pipeline={"load_latency": 5})


def predict(text: str, model=MODEL):
    return Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


def merge_notes(report) -> list[str]:
    return [n.text for row in report.rows for n in row.annotated.assumed
            if n.what == MERGE_NOTE]


# --- prediction ------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["movb 24(%rsi), %cl", "movw 24(%rsi), %cx"])
def test_a_load_into_part_of_a_register_chains_at_the_merge_not_the_load(line):
    r = predict(line + "\n")
    assert r.bounds.loop_carried == ASSUMED["merge_latency"] == 1.0     # not 5, not 6
    assert r.cycles == 1.0 and r.chains[0].resources == ("rcx",)
    assert merge_notes(r) == ["merge: 1 cycle from the old rcx"]
    # the load's own latency is still the address -> value latency
    mov = r.rows[0].annotated.node
    assert [s.latency for s in mov.reads if s.resource == "rsi"] == [5.0]


@pytest.mark.parametrize("form, line", [(MOV8, "movb 24(%rsi), %cl"),
                                        (MOV16, "movw 24(%rsi), %cx")])
def test_a_measured_merge_is_the_model_latency_of_the_destination_operand(form, line):
    model = replace(MODEL, **{"operand_latency": {form: {0: 2.0}}})
    r = predict(line + "\n", model)
    assert r.bounds.loop_carried == 2.0 and not merge_notes(r)


def test_a_zero_extending_load_has_no_chain():
    r = predict("movzbl 24(%rsi), %ecx\n")
    assert r.chains == [] or all(c.latency == 0 for c in r.chains)
    assert r.bounds.loop_carried == 0.0 and r.cycles == pytest.approx(1 / 3)


def test_a_merge_that_is_the_operation_keeps_its_latency():
    """imul cx, dx, 3 computes the new bits itself: the merge is the multiply (Zen 4: 4
    cycles from the old rcx, as from dx); the model's latency stays, nothing assumed."""
    r = predict("imulw $3, %dx, %cx\n")
    assert r.bounds.loop_carried == 3.0 and not merge_notes(r)


def test_aarch64_a_load_into_a_lane_merges_an_insert_is_the_operation():
    """ld1 {v0.s}[1], [x0]: the load starts before the old v0 is there (the merge latency);
    ins v0.d[1], v1.d[0] is one operation that takes the old v0 as an input (its latency)."""
    a64 = semantics.get("aarch64")
    lines = ["ld1 {v0.s}[1], [x0]", "ins v0.d[1], v1.d[0]", "movk x0, #1, lsl #16"]
    sems = [a64.instruction(parse(t, "aarch64").instructions[0], "aarch64") for t in lines]
    forms = ["ld1-lane", "ins", "movk"]
    model = MachineModel("a", "aarch64", ("0", "1"), {f: ((1, 1),) for f in forms},
                         latency={"ld1-lane": 8.0, "ins": 3.0, "movk": 1.0},
                         pipeline={"load_latency": 4})
    out, _, _ = annotate(forms, sems, model)

    def latency_from(a, name):
        return [s.latency for s in a.node.reads if s.resource == name]
    assert latency_from(out[0], "v0") == [1.0] and latency_from(out[0], "x0") == [8.0]
    assert [n.text for n in out[0].assumed] == ["merge: 1 cycle from the old v0"]
    assert latency_from(out[1], "v0") == [3.0] and out[1].assumed == ()
    # movk reads its destination as data (it is the operation): no merge
    assert latency_from(out[2], "x0") == [1.0] and out[2].assumed == ()


# --- measurement: the plan and how it goes into a model ---------------------------------------

def chains(form):
    return {s.source: s for s in plan_form(form).sources}


def test_a_merging_destination_gets_a_chain_of_the_form_alone():
    merge = chains(MOV8)[0]
    assert merge.kind == "merge" and merge.chains[0].lines == ("mov al, byte ptr [rbx + 64]",)
    assert chains(MOV16)[0].chains[0].lines == ("mov ax, word ptr [rbx + 64]",)
    assert chains(MOV_RR8)[0].chains[0].lines == ("mov al, bl",)
    assert chains(SETE)[0].chains[0].lines == ("sete al",)
    assert chains(MOV_RI8)[0].chains[0].lines == ("mov al, 3",)
    assert chains(IMUL16)[0].chains[0].lines == ("imul ax, bx, 3",)
    # the load's own chain (address -> value) is still planned
    assert chains(MOV8)[1].kind == "load"
    # a destination that is also read: its merge is the data path, the register chain
    assert [s.kind for s in plan_form(ADD8).sources] == ["register", "register"]
    assert chains(ADD8)[0].chains[0].lines == ("add al, bl",)
    # a zero-extending destination does not merge
    assert list(chains(MOVZX)) == [1]


def test_a_merge_is_an_operand_latency_never_the_form_latency():
    assert split_latencies(MOV8, {1: 5.0, 0: 1.0}) == (5.0, {0: 1.0})
    assert split_latencies(MOV_RR8, {1: 1.0, 0: 1.0}) == (1.0, {0: 1.0})
    assert split_latencies(MOV_RI8, {0: 1.0}) == (1.0, {0: 1.0})
    assert split_latencies(SETE, {0: 1.0, "flags": 1.0}) == (1.0, {0: 1.0})
    assert split_latencies(IMUL16, {1: 4.0, 0: 4.0}) == (4.0, {0: 4.0})
    plan = plan_form(MOV8)
    t = form_timing(plan, {c: 1.0 if len(c.lines) == 1 else 7.0 for c in plan.chains()},
                    {"shr": 1.0, "add": 1.0})
    assert t.sources == {1: 5.0, 0: 1.0}
    model = LatencyTable("Some CPU", "2026-11-27", {"load_latency": 4.0}, {MOV8: t}).apply(MODEL)
    assert model.latency[MOV8] == 5.0 and model.operand_latency[MOV8] == {0: 1.0}
    r = predict("movb 24(%rsi), %cl\n", model)
    assert r.bounds.loop_carried == 1.0 and not merge_notes(r)


# --- on this host ------------------------------------------------------------------------------

needs_host = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")

LOOP = "movb 24(%rsi), %cl\n"


def fastest(measure, tries=3):
    return min(measure() for _ in range(tries))


@needs_host
def test_the_merge_chain_measures_what_the_loop_runs_at(tmp_path):
    """Two paths to one number on any x86-64 core: the chain planned for `mov r8, m8`'s
    destination, and the harness's own measurement of the loop `movb 24(%rsi), %cl`; then
    `pmpredict predict` with a model carrying the measured merge against `pmpredict measure`."""
    # deferred: the harness (compiles and runs C)
    from pmpredict.measure import measure_block
    from pmpredict.measure.latency import measure_latencies
    table = measure_latencies([MOV8], cache_dir=None)
    merge = table.forms[MOV8].sources[0]
    loop = fastest(lambda: measure_block(LOOP, "att", cache_dir=None).cycles)
    assert abs(merge - loop) <= 1.0, (merge, loop)
    # the merge is not the load: well below the address -> value latency
    assert merge < table.forms[MOV8].sources[1]

    model = table.apply(MachineModel("merge", "x86", ("0", "1", "2"), {MOV8: ((LOADS, 1),)}))
    assert model.operand_latency[MOV8] == {0: merge}
    path, src = tmp_path / "m.json", tmp_path / "loop.s"
    save_model(model, str(path))
    src.write_text(LOOP)

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "pmpredict", *args, "--json"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["cycles"]
    predicted = cli("predict", str(src), "--model", str(path))
    measured = fastest(lambda: cli("measure", str(src), "--no-cache"))
    assert predicted == pytest.approx(measured, rel=0.15), (predicted, measured)
