"""`pmpredict infer` as a user runs it: SIGTERM, the printed resume command, resume checks."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from pmpredict.cli import main
from pmpredict.formats.model_files import load_model
from pmpredict.formats.experiment_files import save_experiments

from test_infer import oracle_model, oracle_training

# long enough to be stopped after its first checkpoint, short enough to finish afterwards
SLOW = ["--method", "pmevo", "--population", "3000", "--generations", "30", "--seed", "3"]


@pytest.fixture
def training(tmp_path):
    path = tmp_path / "train.json"
    save_experiments(oracle_training(oracle_model(seed=6, n_forms=16)), path)
    return path


def _run(argv, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "pmpredict", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=600, **kw)


@pytest.mark.slow
def test_sigterm_checkpoints_and_the_printed_command_resumes_exactly(training, tmp_path):
    argv = ["infer", "-e", "train.json", "--ports", "6", "-o", "out.json", *SLOW]
    proc = subprocess.Popen([sys.executable, "-m", "pmpredict", *argv], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "out.json.ckpt").exists() and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    if proc.returncode == 0:
        pytest.skip("the run finished before SIGTERM arrived (a very fast machine)")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp") or f.startswith(".")]
    interrupted = load_model(str(tmp_path / "out.json"))
    assert interrupted.provenance["complete"] is False
    hint = err.strip().splitlines()[-1].split("continue with: ", 1)[1]
    assert hint == "pmpredict " + shlex.join(argv + ["--resume", "out.json.ckpt"])
    resumed = _run(shlex.split(hint)[1:], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    full = _run(["infer", "-e", "train.json", "--ports", "6", "-o", "full.json", *SLOW], tmp_path)
    assert full.returncode == 0, full.stderr
    assert load_model(str(tmp_path / "out.json")).uops == load_model(str(tmp_path / "full.json")).uops


def test_resume_refuses_other_settings_and_other_experiments(training, tmp_path, capsys):
    out = tmp_path / "m.json"
    base = ["infer", "-e", str(training), "--ports", "6", "-o", str(out), "--seed", "7", "-q",
            "--max-sweeps", "2"]
    assert main(base) == 0
    ckpt = str(out) + ".ckpt"
    capsys.readouterr()
    # the same options, or none, continue; another value is refused with the option named
    assert main(base + ["--resume", ckpt]) == 0
    assert main(["infer", "-e", str(training), "-o", str(out), "--resume", ckpt, "-q"]) == 0
    capsys.readouterr()
    assert main(["infer", "-e", str(training), "-o", str(out), "--seed", "8", "--resume", ckpt]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seed 8 differs from this checkpoint's 7" in err
    assert main(["infer", "-e", str(training), "--ports", "5", "-o", str(out), "--resume", ckpt]) == 2
    assert "--ports 5 differs" in capsys.readouterr().err
    other = tmp_path / "other.json"
    save_experiments(oracle_training(oracle_model(seed=6, n_forms=16), seed=9), other)
    assert main(["infer", "-e", str(other), "-o", str(out), "--resume", ckpt]) == 2
    assert "other experiments" in capsys.readouterr().err


def test_infer_json_reports_what_it_wrote(training, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["infer", "-e", str(training), "--ports", "6", "-o", str(out), "--seed", "7",
                 "-q", "--json", "--max-sweeps", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    model = load_model(str(out))
    assert data["output"] == str(out) and data["forms"] == len(model.uops) == 16
    assert data["complete"] is True and data["interrupted"] is False
    assert data["training_mape"] == pytest.approx(model.provenance["training_mape"], abs=1e-4)
