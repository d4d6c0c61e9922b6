"""Latency chains (pmpredict/measure/chains.py, latency.py): what is measured, how timings are
read, what goes into a model, and, on an x86-64 host, the latencies every core shares and
those documented for this core (tests/hostcores.py)."""

from __future__ import annotations

import platform
import shutil
import sys

import pytest

from pmpredict.isa import semantics
from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.measure import default_forms
from pmpredict.measure.calibrate import cpuinfo
from pmpredict.measure.chains import (FLAGS, REFERENCES, Chain, form_timing, plan_form,
                                      reference_values)
from pmpredict.measure.latency import LatencyTable, split_latencies
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor

from hostcores import known_core

X86 = semantics.get("x86")
IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
ADDSD = "VADDSD_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:V:128))"
MULPS = "VMULPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
FMA = "VFMADD231PS_((REG:RW:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
MOV = "MOV_((REG:W:G:64)),_((REG:R:G:64))"
XOR = "XOR_((REG:RW:G:64)),_((REG:R:G:64))"
VPXOR = "VPXOR_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
CVTSI2SD = "VCVTSI2SD_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:G:64))"
CMP = "CMP_((REG:R:G:64)),_((REG:R:G:64))"
CMOV = "CMOVL_((REG:RW:G:64)),_((REG:R:G:64))"
RMW = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
VLOAD = "VMULPS_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
SUB_MEM_IMM = "SUB_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"


def chains(form):
    return {s.source: s for s in plan_form(form).sources}


def sem(line):
    return X86.instruction(parse(line, "intel").instructions[0], "intel")


# --- what is measured ------------------------------------------------------------------

def test_every_host_form_plans_chains_that_measure_that_form():
    """The first line of every chain is an instance of the form itself (its form string comes
    back through form_of), never a dependency-breaking idiom, and every source of every
    register-, memory- or flag-reading host form is covered."""
    for form in default_forms():
        plan = plan_form(form)
        for sp in plan.sources:
            for chain in sp.chains:
                first = [line for line in chain.lines
                         if X86.form_of(parse(line, "intel").instructions[0], "intel") == form]
                assert first, (form, chain.lines)
                assert not any(sem(line).idiom for line in chain.lines), chain.lines
        assert not plan.skipped, (form, plan.skipped)


def test_chains_feed_the_result_back_into_one_source():
    assert chains(IMUL)[0].chains[0].lines == ("imul rax, rbx",)
    # the other source: the RW destination rotates over four registers, the chain goes
    # through operand 1 of every instance
    rot = chains(IMUL)[1].chains[0]
    assert rot.instances == 4
    writes = [sem(line).writes[0].name for line in rot.lines]
    reads = [next(r.name for r in sem(line).reads if r.operand == 1) for line in rot.lines]
    assert reads == writes[-1:] + writes[:-1] and len(set(writes)) == 4
    assert chains(ADDSD)[1].chains[0].lines == ("vaddsd xmm0, xmm0, xmm1",)


def test_other_classes_close_the_chain_with_a_companion():
    gpr_source = chains(CVTSI2SD)[2].chains[0]
    assert gpr_source.lines == ("vcvtsi2sd xmm0, xmm1, rax", "vmovq rax, xmm0")
    assert gpr_source.companions == ("vector-to-gpr",)
    assert chains(CMP)[0].chains[0].lines == ("cmp rax, rcx", "adc rax, rbx")
    flags = chains(CMOV)[FLAGS]
    assert flags.chains[0].lines == ("add rax, rbx", "cmovl rax, rcx")
    load = chains(VLOAD)[2].chains[0]
    assert load.companions == ("vector-to-gpr", "shr", "add")
    assert load.lines[0] == "vmulps ymm0, ymm1, ymmword ptr [rax + 64]"
    assert chains(RMW)[0].kind == "rmw" and plan_form(STORE).store


def test_moves_and_idioms_are_measured_through_a_known_operation():
    move = chains(MOV)[1]
    assert move.kind == "move" and move.chains[0].companions == ("add",)
    assert move.chains[0].lines == ("add rax, rcx", "mov rbx, rax", "add rbx, rcx",
                                    "mov rax, rbx")
    idiom = plan_form(XOR).idiom
    assert idiom.kind == "zero" and idiom.chain.lines == ("imul rax, rbx", "xor rax, rax")
    assert len(idiom.with_idioms.lines) == 10 and idiom.with_nops.lines[-2:] == ("nop", "nop")
    assert plan_form(VPXOR).idiom.companion == "vmulps256"
    assert plan_form(ADD).idiom is None


# --- reading timings ---------------------------------------------------------------------

def timings(plan, values):
    """cycles for every chain of a plan, from a function of the chain."""
    return {c: values(c) for c in plan.chains()}


def test_companions_are_subtracted_and_rmw_is_read_as_the_dependency_engine_charges():
    refs = reference_values({"add": 1.0, "adc-carry": 2.0, "vector-to-gpr": 6.0, "shr": 1.0,
                             "load_latency": 4.0, "store_forward_latency": 5.0})
    assert refs["adc-carry"] == 1.0 and refs["vector-to-gpr"] == 3.0
    plan = plan_form(CVTSI2SD)
    t = form_timing(plan, timings(plan, lambda c: 7.0 if len(c.lines) == 2 else 4.0), refs)
    assert t.sources == {1: 4.0, 2: 4.0}
    plan = plan_form(RMW)
    t = form_timing(plan, timings(plan, lambda c: 6.0 if c.lines == (
        "add qword ptr [rax + 64], rbx",) else 2.0), refs)
    # chain through memory 6 = forwarding 5 + (operand latency - load latency 4)
    assert t.sources[0] == 5.0


def test_a_read_modify_write_without_a_register_source_chains_at_the_measured_link():
    """`sub qword ptr [m], 1` chained through memory, one cycle a link (Zen 4 measures that:
    the memory word is renamed), load latency 4, forwarding 1: the operand latency 4 must stay
    the memory operand's own. Read as the operation's latency, the engine would add the load
    to it and charge 1 + (4 + 4 - 4) = 5 cycles a link."""
    refs = {"load_latency": 4.0, "store_forward_latency": 1.0}
    plan = plan_form(SUB_MEM_IMM)
    t = form_timing(plan, timings(plan, lambda c: 1.0), refs)
    assert t.sources == {0: 4.0} and t.through_memory == (0,)
    model = LatencyTable("Some CPU", "2026-11-23", refs, {SUB_MEM_IMM: t}).apply(
        MachineModel("m", "x86", ("0", "1"), {SUB_MEM_IMM: ((3, 1),)}))
    assert model.latency == {SUB_MEM_IMM: 4.0}
    assert model.operand_latency == {SUB_MEM_IMM: {0: 4.0}}
    kernel = select_kernel(parse("subq $1, (%rbp)\n", "att", "k.s"))
    assert Predictor(model).predict(kernel, "att", "k.s").bounds.loop_carried == 1.0


def test_moves_idioms_and_ports_from_timings():
    refs = {"add": 1.0, "imul": 3.0}
    plan = plan_form(MOV)
    assert form_timing(plan, timings(plan, lambda c: 2.02), refs).eliminated is True
    t = form_timing(plan, timings(plan, lambda c: 4.0), refs)
    assert t.eliminated is False and t.sources == {1: 1.0}
    plan = plan_form(XOR)
    i = plan.idiom

    def run(chain_cycles, saturated, with_idioms, with_nops):
        values = {i.chain: chain_cycles, i.saturating: saturated, i.with_idioms: with_idioms,
                  i.with_nops: with_nops}
        return form_timing(plan, timings(plan, lambda c: values.get(c, 1.0)), refs)
    t = run(1.0, 2.0, 2.0, 2.0)
    assert t.idiom_breaks is True and t.idiom_ports is False
    t = run(4.0, 2.0, 2.5, 2.0)
    assert t.idiom_breaks is False and t.idiom_ports is True
    t = run(1.0, 2.0, 2.5, 2.5)                     # front end as narrow as the ports
    assert t.idiom_ports is None and "front end" in t.notes[0]


def test_latency_and_latency_from_split():
    assert split_latencies(ADD, {0: 1.0, 1: 1.0}) == (1.0, {})
    assert split_latencies(VLOAD, {1: 3.0, 2: 10.0}) == (3.0, {2: 10.0})
    assert split_latencies(LOAD, {1: 4.0}) == (4.0, {})
    assert split_latencies(CMOV, {0: 1.0, 1: 1.0, FLAGS: 2.0}) == (2.0, {0: 1.0, 1: 1.0})
    assert split_latencies(STORE, {"*": 0.0}) == (0.0, {})


def test_a_table_goes_into_a_model_that_saves_and_loads(tmp_path):
    model = MachineModel("m", "x86", ("0", "1"), {VLOAD: ((1, 1),), MOV: ((3, 1),),
                                                  XOR: ((3, 1),), IMUL: ((2, 1),)},
                         latency={IMUL: 9.0}, latency_source={IMUL: "llvm"})
    from pmpredict.measure.chains import FormTiming
    table = LatencyTable("Some CPU", "2026-11-23", {"load_latency": 4.0,
                                                    "store_forward_latency": 1.0})
    table.forms = {VLOAD: FormTiming({1: 3.0, 2: 10.0}), MOV: FormTiming({1: 0.0}, True),
                   XOR: FormTiming({0: 1.0, 1: 1.0}, idiom="zero", idiom_ports=False)}
    out = table.apply(model)
    assert out.latency == {IMUL: 9.0, VLOAD: 3.0, MOV: 0.0, XOR: 1.0}
    assert out.operand_latency == {VLOAD: {2: 10.0}}
    assert out.latency_source[VLOAD] == "measured on Some CPU 2026-11-23"
    assert out.latency_source[IMUL] == "llvm"
    assert out.move_elimination == {MOV: True} and out.idiom_ports == {XOR: False}
    assert out.pipeline == {"load_latency": 4.0, "store_forward_latency": 1.0}
    assert out.pipeline_source["load_latency"] == "measured on Some CPU 2026-11-23"
    path = tmp_path / "m.json"
    save_model(out, str(path))
    back = load_model(str(path))
    assert back.operand_latency == out.operand_latency and back.pipeline == out.pipeline
    assert back.provenance["latencies"]["references"]["load_latency"]["latency"] == 4.0


# --- on this host ---------------------------------------------------------------------------

needs_host = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")

FP_FORMS = {"addsd": ADDSD, "mulps": MULPS, "fma": FMA}


@needs_host
def test_documented_latencies_on_this_host():
    """Invariants of every recent x86-64 core, then the FP latencies documented for this
    core where tests/hostcores.py knows it (they differ: vaddsd 4 on Skylake, 3 on Zen, 2 on
    Golden Cove)."""
    from pmpredict.measure.latency import measure_latencies
    core = known_core(cpuinfo())
    forms = [IMUL, ADD, LOAD, XOR, VPXOR] + (list(FP_FORMS.values()) if core else [])
    table = measure_latencies(forms, cache_dir=None)
    got = {f: table.forms[f].sources for f in forms}
    assert got[IMUL] == {0: 3.0, 1: 3.0} and got[ADD] == {0: 1.0, 1: 1.0}
    assert 4.0 <= table.references["load_latency"] <= 5.25           # L1 load-to-use
    assert got[LOAD][1] == pytest.approx(table.references["load_latency"], abs=0.25)
    # a locked add back to back: ~6-8 cycles on Zen 2-4, ~18-20 on Skylake-family cores
    assert table.references["atomic_cycles"] >= 4.0
    assert table.pipeline()["atomic_cycles"] == table.references["atomic_cycles"]
    # zero idioms break the chain on every vendor (since Sandy Bridge and Bulldozer)
    assert table.forms[XOR].idiom_breaks and table.forms[VPXOR].idiom_breaks
    for name, expected in (core.latencies if core else {}).items():
        form = FP_FORMS[name]
        assert all(v == pytest.approx(expected, abs=0.25) for v in got[form].values()), \
            (core.name, name, got[form])


def test_references_are_ordered_so_companions_come_first():
    seen = set()
    for name, ref in REFERENCES.items():
        assert set(ref.chain.companions) <= seen, name
        seen.add(name)
    assert isinstance(REFERENCES["add"].chain, Chain)
