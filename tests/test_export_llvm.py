"""LLVM TableGen export checked by llvm-tblgen 14/19, llvm-exegesis 19 and llvm-mc 19."""

import json
import re
import shutil
import subprocess

import pytest

from pmpredict.cli import main
from pmpredict.exporters.llvm import export_llvm, plan_llvm, render_llvm
from pmpredict.exporters.opcodes import SHIPPED, run_llvm_mc
from pmpredict.models import builtin_names

from conftest import artifact
from export_models import model_for

SHARED = ["SKL", "ZEN", "A72"]
MODELS = SHARED + ["HOSTFORMS"] + builtin_names()


def _model(label):
    return model_for(label)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found (apt-get install llvm-14 llvm-19)")
    return path


def _tblgen(version, path):
    tblgen = _tool(f"llvm-tblgen-{version}")
    return subprocess.run([tblgen, "-gen-subtarget", "-I", f"/usr/lib/llvm-{version}/include",
                           str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version", [14, 19])
@pytest.mark.parametrize("label", MODELS)
def test_tblgen_accepts_the_self_contained_export(label, version, tmp_path):
    model = _model(label)
    out = tmp_path / "model.td"
    summary = export_llvm(model, str(out), version=version, self_contained=True)
    proc = _tblgen(version, out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    field = "ReleaseAtCycles" if version == 19 else "ResourceCycles"
    other = "ResourceCycles" if version == 19 else "ReleaseAtCycles"
    assert field in text and other not in text
    # every resolved form is bound, each opcode by exactly one InstRW
    bound = re.findall(r"InstRW<\[\w+\], \(instrs ([^)]*)\)>", text)
    opcodes = [op.strip() for group in bound for op in group.split(",")]
    assert len(opcodes) == len(set(opcodes)) == summary.opcodes + 1      # + COPY
    assert summary.skipped == ()


def _tblgen_latencies(text: str) -> dict[str, int]:
    """opcode -> the write latency in the subtarget tables llvm-tblgen generated (the tables
    an LLVM built with the model hands to llvm-mca): the sched class named after the opcodes
    of an InstRW points at an entry of <Target>WriteLatencyTable."""
    table = re.search(r"WriteLatencyTable\[\] = \{(.*?)\}; //", text, re.S).group(1)
    cycles = {int(i): int(c) for c, i in re.findall(r"\{\s*(\d+),\s*\d+\}[, ]*// #(\d+)", table)}
    out = {}
    for name, fields in re.findall(r'\{DBGFIELD\("(\w+)"\)\s*([^}]*)\}', text):
        values = [f.strip() for f in fields.split(",")]
        index, count = int(values[6]), int(values[7])
        if count == 1:
            for op in name.split("_"):
                out[op] = cycles[index]
    return out


@pytest.mark.parametrize("version", [14, 19])
def test_model_latencies_reach_llvms_scheduling_tables(version, tmp_path):
    """A latency change in the model changes what llvm-tblgen compiles the model into."""
    add = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
    add_mem = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
    base = _model("skl")
    out = tmp_path / "model.td"
    tables = []
    for lat in (4.5, 7.0):
        model = base.with_uops(base.uops, latency={add: lat, add_mem: 1.0},
                               operand_latency={add_mem: {2: 11.0}},
                               pipeline={"window": 97, "load_latency": 5.0})
        export_llvm(model, str(out), version=version, self_contained=True)
        inc = tmp_path / "model.inc"
        tblgen = _tool(f"llvm-tblgen-{version}")
        proc = subprocess.run([tblgen, "-gen-subtarget", "-I", f"/usr/lib/llvm-{version}/include",
                               str(out), "-o", str(inc)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        tables.append(inc.read_text())
    first, second = (_tblgen_latencies(t) for t in tables)
    assert first["VADDPDYrr"] == 5 and second["VADDPDYrr"] == 7        # 4.5 rounded up; changed
    assert first["VADDPDYrm"] == second["VADDPDYrm"] == 11             # the load included
    assert first["VADDPSYrr"] == 1                                     # unknown: the default
    assert re.search(r"\b97, // MicroOpBufferSize", tables[0])
    assert re.search(r"\b5, // LoadLatency", tables[0])


def test_tblgen_catches_what_the_harness_is_for(tmp_path):
    """The harness really runs LLVM's checks: an overlapping InstRW is rejected."""
    model = _model("SKL")
    text, plan = render_llvm(model, 19, self_contained=True)
    op = plan.opcodes[0]
    broken = text.replace("// The generic COPY", f"let SchedModel = {plan.prefix}Model in {{\n"
                          f"def : InstRW<[{plan.writes[0].name}], (instrs {op})>;\n}}\n// The generic COPY")
    path = tmp_path / "broken.td"
    path.write_text(broken)
    proc = _tblgen(19, path)
    assert proc.returncode != 0 and "Overlapping InstRW" in proc.stderr


def _exegesis(opcodes, isa):
    exegesis = _tool("llvm-exegesis-19")
    args = [exegesis, "-mode=latency", "-benchmark-phase=prepare-snippet",
            "-opcode-name=" + ",".join(opcodes)]
    if isa == "aarch64":
        args[1:1] = ["-mtriple=aarch64", "-mcpu=cortex-a72"]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("label", ["SKL", "A72", "HOSTFORMS"] + builtin_names())
def test_every_instrw_opcode_is_a_real_llvm_opcode(label):
    model = _model(label)
    plan = plan_llvm(model, 19)
    # one llvm-exegesis run for all opcodes of the model: it rejects the list at the first unknown
    proc = _exegesis(plan.opcodes, model.isa)
    assert "unknown opcode" not in proc.stderr and proc.returncode == 0, proc.stderr[-500:]
    bad = _exegesis(plan.opcodes[:3] + ["PMPREDICT_NOT_AN_OPCODE"], model.isa)
    assert bad.returncode != 0 and "unknown opcode PMPREDICT_NOT_AN_OPCODE" in bad.stderr


def test_shipped_opcode_table_matches_llvm_mc():
    """The shipped table is what llvm-mc 19 says today (a sample of each ISA, one run each)."""
    _tool("llvm-mc-19")
    with open(SHIPPED) as f:
        table = json.load(f)
    for isa in ("x86", "aarch64"):
        forms = sorted(table[isa])[::7]
        fresh = run_llvm_mc(forms, isa, shutil.which("llvm-mc-19"))
        assert {f: fresh[f].opcode for f in forms} == {f: table[isa][f]["opcode"] for f in forms}


def test_unresolvable_forms_are_listed_not_guessed(tmp_path, monkeypatch):
    _tool("llvm-mc-19")
    model = _model("A72")
    bogus = "_frobnicate_((REG:W:G:64)),_((REG:R:G:64))"
    uops = dict(model.uops)
    uops[bogus] = ((1, 1),)
    odd = model.with_uops(uops, name="odd")
    out = tmp_path / "odd.td"
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    summary = export_llvm(odd, str(out), self_contained=True)
    assert summary.skipped == (bogus,)
    text = out.read_text()
    assert re.search(r"//   _frobnicate_\S+  -- llvm-mc: unrecognized instruction mnemonic", text)
    assert (cache / "pmpredict" / "opcodes.json").exists()        # the user cache was written
    assert _tblgen(19, out).returncode == 0


def test_cli_export_and_rejection_of_a_broken_model(tmp_path, capsys):
    src = artifact("SKL", "mapping_pmevo.json")
    out = tmp_path / "skl.td"
    assert main(["export", src, "--format", "llvm", "-o", str(out), "--llvm-version", "14"]) == 0
    assert "ResourceCycles" in out.read_text() and "ProcessorModel" not in out.read_text()
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"format": "pmpredict-model", "version": 1, "name": "broken",
                                  "isa": "x86", "ports": ["0", "1"],
                                  "forms": {"ADD_((REG:RW:G:64)),_((IMM:32))": {"uops": []}}}))
    capsys.readouterr()
    for fmt in ("llvm", "osaca"):
        assert main(["export", str(broken), "--format", fmt, "-o", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "has no uops" in err and err.startswith("pmpredict: error:")
        assert not (tmp_path / "x").exists()
