"""Latencies of the built-in models from llvm-mca 19 (benchmarks/add_llvm_latencies.py)."""

import importlib.util
import os
import shutil

import pytest

from pmpredict.isa.forms import parse_form
from pmpredict.isa.examples import example_instance
from pmpredict.model.machine import MachineModel

from pmpredict.formats.model_files import load_model

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks",
                    "add_llvm_latencies.py")
_spec = importlib.util.spec_from_file_location("add_llvm_latencies", TOOL)
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

VADD = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
VADD_MEM = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD_MEM = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
LEA = "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"
BLEND_MEM = ("VPBLENDVB_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],"
             "_((REG:R:V:256))")


def test_load_op_forms_get_a_tied_chain_instance():
    split = {f: tool.load_op_operands(parse_form(f, "x86"))
             for f in (VADD, VADD_MEM, ADD_MEM, LOAD, STORE, LEA, BLEND_MEM)}
    # (memory operand, destination, source tied to it); RW: the destination itself
    assert split == {VADD: None, VADD_MEM: (2, 0, 1), ADD_MEM: (1, 0, 0), LOAD: None,
                     STORE: None, LEA: None, BLEND_MEM: (2, 0, 1)}
    inst = example_instance(parse_form(VADD_MEM, "x86"))
    assert tool.tied_instance(inst, 0, 1) == inst.replace("ymm2", "ymm1")
    assert tool.tied_instance(inst, 0, 1).startswith("VADDPD ymm1, ymm1, ymmword ptr [rsi")


@pytest.mark.parametrize("name, cpu", [("skl", "skylake"), ("zen", "znver1"), ("a72", "cortex-a72")])
def test_builtin_models_carry_llvm_latencies_with_their_source(name, cpu):
    model = load_model(name)
    sources = set(model.latency_source.values())
    assert len(sources) == 1 and sources.pop().endswith(f" -mcpu={cpu}")
    assert all(s.startswith("llvm-mca 19.") for s in model.latency_source.values())
    # every form has a number from llvm: its latency, or its memory operand's (docs/MODELS.md)
    assert set(model.latency_source) == set(model.latency) | set(model.operand_latency)
    assert set(model.latency_source) == set(model.forms)
    for form, per in model.operand_latency.items():
        (mem,) = per
        assert parse_form(form, model.isa).operands[mem].kind == "mem"
        if form in model.latency:          # the load makes the memory path the longer one
            assert per[mem] > model.latency[form]
    assert model.pipeline["window"] > 0 and model.pipeline_source["window"] == model.latency_source[
        model.forms[0]]


def test_skl_latencies_are_llvms_skylake_numbers():
    model = load_model("skl")
    # LLVM's Skylake model: vaddpd 4, a 64-bit load 5, add r64 with a load 1 from the register
    # and 6 from the address (5 + 1), lea 1
    assert model.latency_for(VADD) == 4 and model.latency_for(LOAD) == 5
    assert model.latency_for(ADD_MEM) == 1 and model.latency_for(ADD_MEM, 1) == 6
    assert model.latency_for(VADD_MEM) == 4 and model.latency_for(VADD_MEM, 2) == 11
    assert model.latency_for(LEA) == 1


def test_the_chain_agrees_with_the_register_form():
    """Two independent llvm-mca numbers: the load-op form's register latency, measured as a
    chain, equals the register form's Latency column (LLVM's ReadAdvance is the load)."""
    mca = shutil.which("llvm-mca-19")
    if mca is None:
        pytest.skip("llvm-mca-19 not found (apt-get install llvm-19)")
    forms = {f: ((1, 1),) for f in (VADD, VADD_MEM, ADD_MEM, LOAD, STORE, LEA)}
    model = MachineModel("t", "x86", ("0",), forms)
    got = tool.llvm_latencies(model, "skylake", mca)
    assert got["latency"][VADD_MEM] == got["latency"][VADD] == 4.0
    assert got["operand_latency"] == {VADD_MEM: {2: 11.0}, ADD_MEM: {1: 6.0}}
    assert got["latency"][ADD_MEM] == 1.0 and got["latency"][LOAD] == 5.0
    assert got["unreadable"] == {} and got["window"] == 224
    # the shipped model is what the tool writes today
    skl = load_model("skl")
    assert {f: skl.latency.get(f) for f in forms} == {f: got["latency"].get(f) for f in forms}
