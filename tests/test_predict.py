"""`pmpredict predict`: known values on a toy model, pressure from the LP, JSON/text, options."""

import json
import os
from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.cli import main
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor
from pmpredict.formats.model_files import save_model

ADD = "ADD_((REG:RW:G:64)),_((IMM:8))"
SUB = "SUB_((REG:RW:G:64)),_((IMM:8))"
SHL = "SHL_((REG:RW:G:64)),_((IMM:8))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
ADD_MEM = "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"

# DESIGN.md's known values: mul -> {P1}, add, sub -> {P1, P2}, store -> {P3}
TOY = MachineModel(name="toy", isa="x86", ports=("P1", "P2", "P3"),
                   uops={ADD: ((0b011, 1),), SUB: ((0b011, 1),), SHL: ((0b001, 1),),
                         STORE: ((0b100, 1),), ADD_MEM: ((0b011, 1), (0b100, 2))})

KERNEL = """\
# OSACA-BEGIN
\taddq $1, %rax
\tsubq $2, %rbx
\tshlq $3, %rcx
\tmovq %rdx, (%rdi)
\tcmpq %rax, %rbx
# OSACA-END
"""


def predict(text, model=TOY, syntax="att", **kw):
    program = parse(text, syntax, "k.s")
    return Predictor(model).predict(select_kernel(program, **kw), syntax, "k.s")


def test_known_value_and_pressure_split():
    r = predict(KERNEL)
    assert r.cycles == pytest.approx(1.5)
    assert r.bottleneck == ["P1", "P2"]
    rows = {row.text: row for row in r.rows}
    assert rows["shlq $3, %rcx"].pressure == pytest.approx({"P1": 1.0})
    # the {P1,P2} uop mass 2 is scheduled 0.5 on P1 and 1.5 on P2 (unique optimum),
    # and split evenly between add and sub
    assert rows["addq $1, %rax"].pressure == pytest.approx({"P1": 0.25, "P2": 0.75})
    assert rows["subq $2, %rbx"].pressure == pytest.approx({"P1": 0.25, "P2": 0.75})
    assert rows["movq %rdx, (%rdi)"].pressure == pytest.approx({"P3": 1.0})
    assert r.port_load == pytest.approx({"P1": 1.5, "P2": 1.5, "P3": 1.0})
    assert [u.text for u in r.unmatched] == ["cmpq %rax, %rbx"]
    assert not r.complete and r.matched == 4


def test_multi_uop_form_pressure_sums_to_its_uops():
    r = predict("\taddq $1, 8(%rdi)\n\taddq $1, 16(%rdi)\n\tshlq $1, %rax\n")
    assert r.bounds.throughput == pytest.approx(4.0)  # 2 x 2 cycles on P3
    assert r.bottleneck == ["P3"]
    # but rdi never changes: each add reads what it stored an iteration ago, through store
    # forwarding (5 assumed) plus the add (1 assumed): 6 cycles per iteration
    assert r.bounds.loop_carried == pytest.approx(6.0) and r.cycles == pytest.approx(6.0)
    assert r.chains[0].resources == ("mem",)
    for row in r.rows:
        total = sum(c for _, c in row.uops)
        assert sum(row.pressure.values()) == pytest.approx(total)
    assert sum(r.port_load.values()) == pytest.approx(3 + 2 * 2)


def test_r_max_counts_every_instruction():
    capped = TOY.with_uops(TOY.uops, r_max=1.0)
    r = predict(KERNEL, capped)
    assert r.cycles == pytest.approx(5.0)             # 5 instructions at 1 per cycle, matched or not
    assert r.bottleneck == ["frontend"]


def test_nothing_matched_gives_no_prediction():
    r = predict("\tcmpq %rax, %rbx\n\tjne .L1\n")
    assert r.cycles is None and len(r.unmatched) == 2


def write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def toy_model_file(tmp_path):
    path = tmp_path / "toy.json"
    save_model(TOY, str(path))
    return str(path)


def test_cli_json_shape(tmp_path, capsys):
    f = write(tmp_path, "k.s", KERNEL)
    assert main(["predict", f, "--model", toy_model_file(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cycles"] == pytest.approx(1.5) and out["bottleneck"] == ["P1", "P2"]
    assert [i["line"] for i in out["instructions"]] == [2, 3, 4, 5, 6]
    first = out["instructions"][0]
    assert set(first) >= {"line", "text", "form", "uops", "pressure"}
    assert first["form"] == ADD and first["uops"] == [{"ports": ["P1", "P2"], "count": 1}]
    assert first["pressure"] == pytest.approx({"P1": 0.25, "P2": 0.75})
    assert out["unmatched"] == [{"line": 6, "text": "cmpq %rax, %rbx", "key": "cmp r64, r64",
                                 "reason": "the model has no `cmp` form"}]
    assert out["instructions"][4]["form"] is None
    assert out["coverage"]["complete"] is False and out["kernel"]["how"] == "osaca-markers"
    assert out["isa"] == "x86" and out["syntax"] == "att"


def test_cli_text_table(tmp_path, capsys):
    f = write(tmp_path, "k.s", KERNEL)
    assert main(["predict", f, "--model", toy_model_file(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Prediction: 1.50 cycles per iteration (lower bound)" in out
    assert "Bottleneck: ports P1, P2" in out
    assert "between the OSACA-BEGIN/END comments" in out
    assert "    6  cmpq %rax, %rbx" in out


def test_cli_strict_and_errors(tmp_path, capsys):
    model = toy_model_file(tmp_path)
    f = write(tmp_path, "k.s", KERNEL)
    assert main(["predict", f, "--model", model, "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pmpredict: error: {f}:6: 1 instruction(s) not in model 'toy'")
    a64 = write(tmp_path, "a.s", "\tadd x0, x0, 1\n")
    assert main(["predict", a64, "--model", model]) == 2
    assert "the kernel is aarch64 but model 'toy' is x86" in capsys.readouterr().err
    assert main(["predict", f, "--model", model, "--region", "nope"]) == 2
    assert "no LLVM-MCA region named 'nope'" in capsys.readouterr().err


def test_cli_default_model_missing(tmp_path, capsys, monkeypatch):
    import pmpredict.models
    monkeypatch.setattr(pmpredict.models, "builtin_path", lambda name: None)
    f = write(tmp_path, "k.s", KERNEL)
    assert main(["predict", f]) == 2
    assert "no built-in x86 model 'skl' is installed; give one with --model FILE" in capsys.readouterr().err


def test_cli_reports_every_llvm_mca_region(tmp_path, capsys):
    text = ("# LLVM-MCA-BEGIN a\n\taddq $1, %rax\n# LLVM-MCA-END a\n"
            "# LLVM-MCA-BEGIN b\n\tshlq $1, %rax\n\tshlq $1, %rbx\n# LLVM-MCA-END b\n")
    f = write(tmp_path, "k.s", text)
    model = toy_model_file(tmp_path)
    assert main(["predict", f, "--model", model, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # region a: one add, 0.5 cycles of ports but a chain through rax of 1 cycle
    assert out["cycles"] == pytest.approx(1.0)
    assert out["bounds"] == pytest.approx({"throughput": 0.5, "loop_carried": 1.0,
                                           "front_end": None, "memory": None,
                                           "split_loads": None, "accesses": None})
    assert [r["cycles"] for r in out["regions"]] == pytest.approx([1.0, 2.0])
    assert main(["predict", f, "--model", model, "--json", "--region", "b"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] == pytest.approx(2.0)


def test_a_fused_jump_the_model_lacks_is_covered_by_its_pair():
    """cmp + jne fuse into one uop where the model says pairs fuse (macro_fusion 1): the pair
    runs as cmp's uops, so a model without a jne form still predicts the loop in full, and
    says what it assumed. Without fusion the jump is a missing form (a lower bound)."""
    from dataclasses import replace
    cmp = "CMP_((REG:R:G:64)),_((REG:R:G:64))"
    loop = "\t.L1:\n\taddq $1, %rax\n\tcmpq %rax, %rbx\n\tjne .L1\n"
    fusing = replace(TOY.with_uops({**TOY.uops, cmp: ((0b011, 1),)}),
                     pipeline={"macro_fusion": 1})
    r = predict(loop, fusing)
    assert r.complete and not r.unmatched and [x.text for x in r.fused_unknown] == ["jne .L1"]
    assert r.bounds.throughput == pytest.approx(1.0)     # add and the pair on {P1, P2}
    assert r.matched == 2
    r = predict(loop, replace(fusing, pipeline={"macro_fusion": 0}))
    assert not r.complete and [x.text for x in r.unmatched] == ["jne .L1"]
    r = predict(loop, TOY.with_uops(TOY.uops, pipeline={"macro_fusion": 1}))
    assert {x.text for x in r.unmatched} == {"cmpq %rax, %rbx", "jne .L1"}   # nothing to stand for it
    from pmpredict.views.instructions import text
    assert [ln for ln in text(r).splitlines() if "jne .L1" in ln][0].count("X not in the model")


def test_an_atomic_read_modify_write_makes_the_prediction_a_lower_bound(tmp_path, capsys):
    """`lock addq $1, (%rdi)` matches the plain add-to-memory form (the model has no other):
    the prediction counts it, and says it is a lower bound (measured on Zen 4: a locked
    read-modify-write loop takes ~7 cycles where the plain one takes ~1-2)."""
    plain = predict("# OSACA-BEGIN\n\taddq $1, (%rdi)\n\taddq $8, %rdi\n# OSACA-END\n")
    locked = predict("# OSACA-BEGIN\n\tlock addq $1, (%rdi)\n\taddq $8, %rdi\n# OSACA-END\n")
    assert locked.rows[0].form == plain.rows[0].form == ADD_MEM
    assert locked.cycles == plain.cycles                      # the same numbers counted
    assert plain.complete and not plain.beyond_model
    assert not locked.complete and [r.line for r in locked.beyond_model] == [2]
    f = write(tmp_path, "k.s", "# OSACA-BEGIN\n\tlock addq $1, (%rdi)\n\taddq $8, %rdi\n"
                               "# OSACA-END\n")
    assert main(["predict", f, "--model", toy_model_file(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["coverage"]["complete"] is False
    assert "1 instruction (atomic) cost more than the model counts (line 2)" in \
        out["coverage"]["note"]
    assert out["instructions"][0]["beyond_model"] == "an atomic read-modify-write"
    assert out["instructions"][0]["notes"] == ["locked: an atomic read-modify-write"]
    assert out["instructions"][1]["beyond_model"] == "" and out["instructions"][1]["notes"] == []
    assert main(["predict", f, "--model", toy_model_file(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "(lower bound)" in text and "(atomic: costs more)" in text
    assert "Notes:\n    2  lock addq $1, (%rdi)   locked: an atomic read-modify-write" in text


def test_the_other_regions_listed_are_the_others(tmp_path, capsys):
    one = write(tmp_path, "one.s", "# LLVM-MCA-BEGIN a\n\taddq $1, %rax\n# LLVM-MCA-END a\n")
    assert main(["predict", one, "--model", toy_model_file(tmp_path)]) == 0
    assert "Other regions" not in capsys.readouterr().out
    two = write(tmp_path, "two.s", "# LLVM-MCA-BEGIN a\n\taddq $1, %rax\n# LLVM-MCA-END a\n"
                                   "# LLVM-MCA-BEGIN b\n\tsubq $2, %rbx\n# LLVM-MCA-END b\n")
    assert main(["predict", two, "--model", toy_model_file(tmp_path), "--region", "a"]) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Other regions")]
    assert listed == ["Other regions: b (5-5)  (choose with --lines A-B or --region NAME)"]


def test_with_the_measured_cost_of_an_atomic_atomics_run_one_after_another(capsys):
    """atomic_cycles (measured: a locked add back to back) chains every atomic of the loop
    to the one before it; the prediction is then complete, not a lower bound."""
    measured = replace(TOY, **{"pipeline": {"atomic_cycles": 6.5}})
    one = predict("# OSACA-BEGIN\n\tlock addq $1, (%rdi)\n\taddq $1, %rax\n# OSACA-END\n",
                  model=measured)
    assert one.bounds.loop_carried == 6.5 and one.chains[0].resources == ("atomics",)
    assert one.complete and not one.beyond_model
    assert 6.5 <= one.cycles <= 7.0          # uops start on whole cycles: 7 in the simulation
    two = predict("# OSACA-BEGIN\n\tlock addq $1, (%rdi)\n\tlock addq $1, 64(%rdi)\n"
                  "# OSACA-END\n", model=measured)
    assert two.bounds.loop_carried == 13.0 and two.chains[0].nodes == (0, 1)
    plain = predict("# OSACA-BEGIN\n\taddq $1, (%rdi)\n\taddq $1, 64(%rdi)\n# OSACA-END\n",
                    model=measured)
    assert all(c.resources != ("atomics",) for c in plain.chains)
    from pmpredict.views import render_text
    assert "(atomic: 6.5 cycles, one after another)" in render_text(one)


MFENCE = "MFENCE"


def test_a_barrier_with_a_measured_latency_waits_for_the_one_before():
    """A barrier (mfence) whose form has a measured latency (its time back to back,
    measure/chains.py BARRIER) chains to the barrier before it; the prediction is complete.
    Without one it is counted as its form's uops alone, a lower bound (Zen 4: mfence 58.1
    cycles a loop, `mfence; mfence` 116.3)."""
    plain = replace(TOY, uops={**TOY.uops, MFENCE: ((0b001, 1),)})
    measured = replace(plain, latency={MFENCE: 58.0})
    body = "# OSACA-BEGIN\n\tmfence\n\taddq $1, %rax\n\tmfence\n# OSACA-END\n"
    two = predict(body, model=measured)
    assert two.cycles == pytest.approx(116.0) and two.complete
    assert two.chains[0].resources == ("barriers",)
    from pmpredict.views import render_text
    assert "(barrier: 58 cycles, one after another)" in render_text(two)
    unknown = predict(body, model=plain)
    assert unknown.cycles < 3 and not unknown.complete
    assert [r.line for r in unknown.beyond_model] == [2, 4]


def test_the_default_is_this_machines_model_once_measured(tmp_path, capsys, monkeypatch):
    """Without --model, on a host the harness runs on: a built-in with a hint on how to get
    this machine's model (first line of the text, `hint` in JSON) until it exists, then this
    machine's model, no hint. Elsewhere (or for another ISA): the built-in, no hint."""
    from pmpredict.commands import predict_files
    from pmpredict.formats.model_files import load_model, save_model
    from pmpredict.host.model import model_path
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(predict_files, "harness_runs_here", lambda: True)
    f = write(tmp_path, "k.s", KERNEL)
    assert main(["predict", f]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Hint:       this machine has no model yet: `--model host` measures")
    assert "\nModel:      skl " in out
    assert main(["predict", f, "--json"]) == 0
    assert "--model host" in json.loads(capsys.readouterr().out)["hint"]
    # a measured model of this machine (a built-in standing in, with the host facts)
    host = load_model("zen4-vm")
    facts = {"created": "2026-11-27", "bootstrap": {"how": "test", "seconds": 0.0},
             "extensions": [], "left_out": {}}
    os.makedirs(os.path.dirname(model_path()), exist_ok=True)
    save_model(replace(host, name="host", provenance={**host.provenance, "host": facts}),
               model_path())
    assert main(["predict", f, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["model"] == "host" and "hint" not in got
    monkeypatch.setattr(predict_files, "harness_runs_here", lambda: False)
    assert main(["predict", f, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["model"] == "skl" and "hint" not in got


def test_each_assumption_is_said_as_what_it_is():
    """A latency the model lacks and a stack sync are different assumptions: each is listed
    as itself with its lines (the stack sync was once reported as an assumed latency)."""
    from pmpredict.views.summary import assumptions
    push = "PUSH_((REG:R:G:64))"
    sub = "SUB_((REG:RW:G:64)),_((IMM:8))"
    add = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
    model = MachineModel(name="t", isa="x86", ports=("0", "1"),
                         uops={push: ((0b01, 1),), sub: ((0b10, 1),), add: ((0b10, 1),)},
                         latency={push: 1.0, sub: 1.0})
    text = "# OSACA-BEGIN\npushq %rax\nsubq $8, %rsp\naddq %rbx, %rcx\n# OSACA-END\n"
    report = Predictor(model).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")
    notes = assumptions(report)
    assert "stack sync: 1 cycle on rsp (line 2)" in notes
    assert "latency of 1 instruction not in the model: 1 assumed (line 4)" in notes
