"""`pmpredict infer --measure`: the whole PMEvo pipeline on this host, end to end (small form list)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from pmpredict.formats.experiment_files import load_experiments
from pmpredict.formats.model_files import load_model

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="host measurement needs an x86-64 Linux machine with a C compiler")

IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
UD2 = "UD2"


def test_infer_measure_end_to_end(tmp_path, imul_cycles):
    forms = tmp_path / "forms.txt"
    forms.write_text(f"{IMUL}\n{ADD}\n{UD2}\n")
    out = tmp_path / "host.json"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "infer", "--measure", "--forms", str(forms),
                           "--ports", "4", "-o", str(out), "--seed", "1", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"left out {UD2}: SIGILL" in proc.stderr            # unsupported, reported, not fatal
    model = load_model(str(out))
    assert set(model.uops) == {IMUL, ADD}
    # the measurements are kept beside the model and drive it: imul as the block path measured
    # it on this host (exact values: test_measure_host)
    single = load_experiments(str(tmp_path / "host.json.measurements" / "singletons.json"))
    measured = {e.forms()[0]: e.cycles for e in single.experiments if e.cycles}
    assert measured[IMUL] == pytest.approx(imul_cycles, rel=0.15)
    exps = load_experiments(str(tmp_path / "host.json.measurements" / "pairs.json"))
    from pmpredict.predict.throughput import simulate
    predicted, _ = simulate(model, exps)
    assert predicted[0] == pytest.approx(exps.experiments[0].cycles, rel=0.15)
    provenance = json.loads(out.read_text())["provenance"]
    assert provenance["command"].startswith("pmpredict infer --measure")
    # the front end is measured too: every recent x86 core issues 4 or more a cycle and
    # fuses cmp + jcc (docs/HOST.md)
    assert model.r_max >= 4 and model.pipeline["macro_fusion"] == 1
    assert "front_end" in provenance


def test_infer_measure_time_limit_covers_measuring(tmp_path):
    """The limit runs out while measuring: no model, status 3, what was measured is cached
    (the same command resumes)."""
    forms = tmp_path / "forms.txt"
    forms.write_text(f"{IMUL}\n{ADD}\n")
    out = tmp_path / "host.json"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "infer", "--measure", "--forms",
                           str(forms), "--ports", "4", "-o", str(out), "--time-limit", "0.01"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 3, proc.stderr
    assert "time limit reached while measuring (singletons)" in proc.stderr
    assert not out.exists() and "Traceback" not in proc.stderr


def test_infer_needs_experiments_or_measure(capsys):
    from pmpredict.cli import main
    assert main(["infer", "-o", "x.json"]) == 2                 # one line, as every bad input
    err = capsys.readouterr().err
    assert "one of the arguments --experiments/-e --measure --oracle is required" in err
    assert err.startswith("pmpredict: error: <command line>: ") and err.count("\n") == 1


@pytest.mark.parametrize("flags, message", [
    (["-e", "x.json", "--design", "pairs"], "--design goes with --measure"),
    (["-e", "x.json", "--no-latencies"], "--no-latencies goes with --measure"),
    (["-e", "x.json", "--forms", "core"], "--forms goes with --measure or --oracle"),
    (["--measure", "--forms", "core", "--kernel-only"], "--kernel-only goes with --forms-from"),
    (["--measure", "--syntax", "att"], "--syntax goes with --forms-from")])
def test_flags_of_measuring_are_refused_elsewhere(tmp_path, capsys, flags, message):
    from pmpredict.cli import main
    assert main(["infer", *flags, "-o", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err == f"pmpredict: error: <command line>: {message}\n"


def test_forms_from_where_nothing_assembles_is_one_located_error(tmp_path):
    """Every form of the file fails to assemble: one error at its line, nothing inferred
    from empty phases (the assembler refuses the forms before the harness runs)."""
    src = tmp_path / "junk.s"
    src.write_text("\taddq\t%rax, %rbx, %rcx, %rdx\n")
    out = tmp_path / "out.json"
    env = {**os.environ, "PMPREDICT_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "infer", "--measure",
                           "--forms-from", str(src), "-o", str(out), "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"pmpredict: error: {src}:1: no form could be measured")
    assert "does not assemble" in proc.stderr and proc.stderr.count("\n") == 1
    assert not out.exists()
    assert os.listdir(str(out) + ".measurements") == ["singletons.json"]
