"""The front end as measured model properties: the probes (pmpredict/measure/probes.py) read by
hand-computed timings, the engine using them (load-op slots, macro-fusion), and, on an x86-64
host, facts true of every recent x86 core (Intel since Sandy Bridge, AMD since Zen)."""

from __future__ import annotations

import platform
import shutil
import sys

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.measure.frontend import width_floor
from pmpredict.measure.probes import (FUSION_SUBJECTS, MAX_LOOP_BODY, doubts, probes,
                                      read_frontend, snap_width)
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor
from pmpredict.views import render_text, summary

ON_X86_LINUX = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="host measurement needs an x86-64 Linux machine with a C compiler")


def skylake_like_timings(fused=("cmp", "test", "add", "sub", "and", "inc", "dec")) -> dict:
    """Cycles of every probe on a core 4 slots wide (on paper): each probe is front-end bound,
    slots / 4; fused pairs take one slot, an indexed load-op two, a loop iteration >= 1."""
    cycles = {"width: zero idioms (general-purpose)": 2.0, "width: zero idioms (vector)": 2.0,
              "width: eliminated moves": 2.5, "width: mix": 2.08, "nops": 2.0,
              "slots: register": 3.5, "slots: load-op": 3.5, "slots: indexed load-op": 4.0,
              "stores: one block": 4.0, "stores: distinct lines": 4.0}      # a store a cycle
    for name, _, _ in FUSION_SUBJECTS:
        # two subjects, each with six fillers and a jump: 14 slots fused, 16 apart
        cycles[f"fusion {name}: adjacent"] = 3.5 if name in fused else 4.0
        cycles[f"fusion {name}: apart"] = 4.0
    for k in range(MAX_LOOP_BODY + 1):
        cycles[f"loop: {k} idioms"] = max(1.0, (k + 1) / 4)
    return cycles


def test_every_probe_has_a_name_the_reader_knows():
    names = [p.name for p in probes()]
    assert len(names) == len(set(names))
    assert set(skylake_like_timings()) == set(names)


def test_a_four_wide_core_read_from_its_timings():
    front = read_frontend(skylake_like_timings())
    assert front.r_max == 4.0                              # 8 idioms in 2 cycles
    assert front.pipeline == {"macro_fusion": 1, "load_op_slots": 1, "indexed_load_op_slots": 2,
                              "paired_stores": 0, "taken_branch": 1.0}
    assert front.details["instructions_per_cycle"]["width: eliminated moves"] == 3.2
    assert front.details["loop_cycles_per_iteration"]["7"] == 2.0
    assert front.missing == []


def test_no_fusion_and_a_missing_probe():
    cycles = skylake_like_timings(fused=("add",))
    del cycles["slots: indexed load-op"]
    front = read_frontend(cycles)
    assert front.pipeline["macro_fusion"] == 0             # cmp + jne: no slot saved
    assert front.details["macro_fusion"]["add"] is True and not front.details["macro_fusion"]["test"]
    assert "indexed_load_op_slots" not in front.pipeline
    assert front.missing == ["slots: indexed load-op"]


def test_cmp_and_test_are_one_fact_read_twice():
    """Noise slowed one adjacent probe: cmp saves 0.4 of a slot (below the threshold, 0.5),
    test 1.0. Every core fusing one fuses the other, so both are read from the mean (0.7):
    fused; the doubt that asks for another round stays."""
    cycles = skylake_like_timings()
    slot = 0.25
    cycles["fusion cmp: adjacent"] = 4.0 - 2 * 0.4 * slot
    front = read_frontend(cycles)
    assert front.details["macro_fusion_slots_saved"]["cmp"] == pytest.approx(0.4)
    assert front.details["macro_fusion"]["cmp"] and front.details["macro_fusion"]["test"]
    assert front.pipeline["macro_fusion"] == 1
    assert "cmp and test read differently for macro-fusion" in doubts(front)
    cycles["fusion test: adjacent"] = 4.0 - 2 * 0.5 * slot           # mean 0.45: not fused
    assert read_frontend(cycles).pipeline["macro_fusion"] == 0


def test_widths_snap_to_integers_within_three_percent():
    assert snap_width(5.9) == 6.0 and snap_width(6.15) == 6.0 and snap_width(5.5) == 5.5
    assert read_frontend({}).r_max is None


def test_a_busy_sibling_thread_is_caught_by_the_floor():
    """A sibling thread running flat out halves the slots this thread gets: every probe takes
    twice as long. Four adds per cycle measured alone prove a width of at least 4."""
    slowed = {name: 2 * c for name, c in skylake_like_timings().items()}
    assert read_frontend(slowed).r_max == 2.0                      # what the probes alone say
    front = read_frontend(slowed, floor=3.98)
    assert front.r_max == 4.0 and front.details["width_from"] == "floor"
    assert doubts(front, 3.98) == [
        "the width probes (2.00 per cycle) are below the floor (3.98)",
        "a loop iteration takes 2.0 cycles"]
    clean = read_frontend(skylake_like_timings(), floor=3.98)
    assert clean.r_max == 4.0 and "width_from" not in clean.details
    assert doubts(clean, 3.98) == [] and doubts(clean) == []
    partial = dict(skylake_like_timings(), nops=None)
    assert doubts(read_frontend(partial)) == ["no number for nops"]
    noisy = dict(skylake_like_timings(), **{"fusion test: adjacent": 4.0})   # test not fused
    assert doubts(read_frontend(noisy)) == ["cmp and test read differently for macro-fusion"]


def test_the_floor_is_the_fastest_singleton_but_nops():
    from pmpredict.model.experiments import Experiment, ExperimentSet
    add, imul, nop = ADD_IMM, "IMUL_((REG:RW:G:64)),_((REG:R:G:64))", "NOP"
    singles = ExperimentSet((add, imul, nop), (Experiment.of({add: 1}, 0.2502),
                                               Experiment.of({imul: 1}, 1.0),
                                               Experiment.of({nop: 1}, 1 / 12),
                                               Experiment.of({"UD2": 1}, None)))
    assert width_floor(singles) == 4.0                             # 3.997 adds a cycle
    fast = ExperimentSet((add,), (Experiment.of({add: 1}, 0.16),))    # 6.25: a hair fast
    assert width_floor(fast) == 6.0


def test_a_doubtful_reading_is_measured_again_keeping_each_probes_fastest(monkeypatch, tmp_path):
    """Round 1 on a busy core (everything twice as slow, one probe lost), round 2 clean but
    for one probe still slow: the reading takes each probe's fastest time and stops doubting."""
    from pmpredict.measure import frontend
    clean = skylake_like_timings()
    rounds = [{**{n: 2 * c for n, c in clean.items()}, "nops": None},
              {**clean, "width: mix": 4.0}]
    calls = []

    def timed(cache, options, use_cache, report=None):
        calls.append(use_cache)
        return dict(rounds[len(calls) - 1])
    monkeypatch.setattr(frontend, "_measure_probes", timed)
    monkeypatch.setattr(frontend, "check_host", lambda: None)
    front = frontend.measure_frontend(cache_dir=str(tmp_path), floor=3.98).facts
    assert calls == [True, False]                   # the cache first, then timed afresh
    assert front.r_max == 4.0 and front.pipeline["taken_branch"] == 1.0
    assert front.details["rounds"] == 2 and "doubts" not in front.details
    assert front.details["instructions_per_cycle"]["width: mix"] == 2.0     # 8 in 4 cycles
    assert front.missing == []


# --- the engine uses them ----------------------------------------------------------------------

LOAD_OP = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
CMP = "CMP_((REG:R:G:64)),_((REG:R:G:64))"
ADD_IMM = "ADD_((REG:RW:G:64)),_((IMM:8))"
# 8 ports: 0-3 ALU, 4-7 loads; nothing is port bound below 1 cycle in these kernels
WIDE = MachineModel(name="wide", isa="x86", ports=tuple("01234567"),
                    uops={LOAD_OP: ((0b00001111, 1), (0b11110000, 1)), CMP: ((0b1111, 1),),
                          ADD_IMM: ((0b1111, 1),)},
                    r_max=4.0, pipeline={"taken_branch": 1.0})


def front_end(body, model):
    text = "# OSACA-BEGIN\n" + "".join(f"\t{line}\n" for line in body) + "# OSACA-END\n"
    report = Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")
    return report.bounds.front_end, report


def test_an_unlaminated_indexed_load_op_takes_two_slots():
    indexed = [f"addq 8(%rdi,%rsi), %{r}" for r in ("rax", "rbx", "rcx", "rdx")]
    based = [f"addq {8 * k}(%rdi), %{r}" for k, r in enumerate(("rax", "rbx", "rcx", "rdx"))]
    unlaminated = MachineModel(**{**WIDE.__dict__, "pipeline": {
        "taken_branch": 1.0, "load_op_slots": 1, "indexed_load_op_slots": 2}})
    assert front_end(indexed, WIDE)[0] == 1.0              # default: one slot each, 4 / 4
    assert front_end(indexed, unlaminated)[0] == 2.0       # 8 slots / 4
    assert front_end(based, unlaminated)[0] == 1.0


def test_a_jump_the_model_lacks_still_fuses():
    """cmp + jne with no jne form: one slot for the pair (the cmp's uops), not two."""
    narrow = MachineModel(**{**WIDE.__dict__, "r_max": 1.0})
    bound, report = front_end(["addq $1, %rax", "cmpq %rbx, %rax", "jne .L1"], narrow)
    assert bound == 2.0
    jump = report.rows[2].annotated
    assert jump.fused and jump.slot == 0 and report.rows[1].annotated.uops == ((0b1111, 1),)
    off = MachineModel(**{**narrow.__dict__, "pipeline": {"macro_fusion": 0}})
    assert front_end(["addq $1, %rax", "cmpq %rbx, %rax", "jne .L1"], off)[0] == 3.0


def test_a_reading_still_in_doubt_is_said_with_every_prediction(monkeypatch, tmp_path):
    """Every round reads loop iterations at 1.5 cycles (a disturbed measurement no round
    mended): the model keeps the reading, and each prediction with it says it is in doubt."""
    from pmpredict.measure import frontend
    slow_loops = {**skylake_like_timings(),
                  **{f"loop: {k} idioms": 1.5 for k in range(MAX_LOOP_BODY + 1)}}
    monkeypatch.setattr(frontend, "_measure_probes", lambda *a, **k: dict(slow_loops))
    monkeypatch.setattr(frontend, "check_host", lambda: None)
    measured = frontend.measure_frontend(cache_dir=str(tmp_path), rounds=2)
    assert measured.facts.pipeline["taken_branch"] == 1.5
    assert measured.facts.details["doubts"] == ["a loop iteration takes 1.5 cycles"]
    model = measured.apply(WIDE)
    _, report = front_end(["addq $1, %rax", "cmpq %rbx, %rax", "jne .L1"], model)
    doubt = ("the model's front end as measured, in doubt (the machine was busy?): "
             "a loop iteration takes 1.5 cycles")
    assert doubt in summary.assumptions(report)
    assert "in doubt" in render_text(report)
    _, clean = front_end(["addq $1, %rax", "cmpq %rbx, %rax", "jne .L1"], WIDE)
    assert not any("in doubt" in note for note in summary.assumptions(clean))


# --- on this host ----------------------------------------------------------------------------------

@pytest.fixture
def measured(tmp_path):
    """Measured afresh for each test (about a second), so a re-run measures again."""
    from pmpredict.measure.frontend import measure_frontend
    return measure_frontend(cache_dir=str(tmp_path / "frontend"))


@ON_X86_LINUX
@pytest.mark.slow
def test_facts_of_every_recent_x86_core(measured):
    front = measured.facts
    assert not front.missing
    assert 4 <= front.r_max <= 8                  # 4 (Skylake, Cascade Lake) .. 6 (Zen 4, Golden Cove)
    assert front.pipeline["macro_fusion"] == 1    # cmp + jcc: fused since Core 2 and Zen 1
    assert front.details["macro_fusion"]["test"]
    assert front.pipeline["load_op_slots"] == 1   # add r64, [base + disp]: micro-fused everywhere
    # zero idioms take a rename slot and no port: they run at the full width
    ipc = front.details["instructions_per_cycle"]
    assert ipc["width: zero idioms (vector)"] >= 0.95 * front.r_max
    # a loop iteration costs at least a cycle (one taken branch per cycle at most), and its k
    # idioms and the fused dec/jnz take one slot each
    loops = front.details["loop_cycles_per_iteration"]
    assert front.pipeline["taken_branch"] >= 1.0 and loops["0"] >= 0.97
    for k, cycles in loops.items():
        assert cycles >= 0.95 * (int(k) + 1) / front.r_max


@ON_X86_LINUX
@pytest.mark.slow
def test_the_measured_front_end_goes_into_a_model(measured):
    model = measured.apply(WIDE)
    assert model.r_max == measured.facts.r_max
    assert model.pipeline["macro_fusion"] == 1 and model.pipeline["load_op_slots"] == 1
    assert model.pipeline_source["taken_branch"] == measured.source
    assert "loop_cycles_per_iteration" in model.provenance["front_end"]
