"""Long measurements: the result cache under concurrent writers and kills, the progress
line, --time-limit and SIGTERM (stop cleanly, keep what is measured, resume)."""

from __future__ import annotations

import io
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from pmpredict.commands.progress import ProgressDisplay, duration
from pmpredict.formats.experiment_files import load_experiments, save_experiments
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.measure.cache import ResultCache
from pmpredict.measure.experiment_runs import Progress

needs_host = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")

CPU = "test-cpu"
WRITER = textwrap.dedent("""
    import sys
    from pmpredict.measure.cache import ResultCache
    cache = ResultCache(sys.argv[1], "test-cpu")
    tag, n = sys.argv[2], int(sys.argv[3])
    for i in range(n):
        cache.put(f"{tag}-{i}", float(i), None, note="x" * 200)
        if i == 0:
            print("started", flush=True)
    print("done", flush=True)
""")


def writer(cache_dir, tag, n):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(cache_dir), tag, str(n)],
                            stdout=subprocess.PIPE, text=True)


def test_cache_two_concurrent_writers(tmp_path):
    procs = [writer(tmp_path, tag, 400) for tag in ("a", "b")]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.split() == ["started", "done"]
    cache = ResultCache(str(tmp_path), CPU)
    assert len(cache) == 800
    assert cache.get("a-399") == {"cycles": 399.0, "error": None, "note": "x" * 200}
    assert cache.get("b-0")["cycles"] == 0.0


def test_cache_survives_a_writer_killed_mid_write(tmp_path):
    victim = writer(tmp_path, "k", 10 ** 6)
    survivor = writer(tmp_path, "s", 300)
    assert victim.stdout.readline().strip() == "started"
    time.sleep(0.3)
    victim.kill()                                  # SIGKILL: no chance to finish a write
    victim.wait()
    out, _ = survivor.communicate(timeout=120)
    assert out.split() == ["started", "done"]
    db = sqlite3.connect(next(str(p) for p in tmp_path.glob("measure-*.sqlite")))
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    cache = ResultCache(str(tmp_path), CPU)
    assert all(cache.get(f"s-{i}")["cycles"] == float(i) for i in range(300))
    killed = db.execute("SELECT COUNT(*) FROM results WHERE key LIKE 'k-%'").fetchone()[0]
    assert killed >= 1 and all(cache.get(f"k-{i}")["cycles"] == float(i) for i in range(killed))


def test_json_lines_cache_is_imported_once(tmp_path):
    import hashlib
    tag = hashlib.sha256(CPU.encode()).hexdigest()[:12]
    old = tmp_path / f"measure-{tag}.jsonl"
    old.write_text('{"key":"k1","cycles":1.5,"error":null}\n'
                   '{"key":"k2","cycles":null,"error":"SIGILL: x"}\n{"key":"k3","cyc')   # torn
    cache = ResultCache(str(tmp_path), CPU)
    assert cache.get("k1") == {"cycles": 1.5, "error": None}
    assert cache.get("k2")["error"] == "SIGILL: x" and cache.get("k3") is None
    assert not old.exists() and (tmp_path / f"measure-{tag}.jsonl.imported").exists()
    cache.put("k1", 2.0)
    assert ResultCache(str(tmp_path), CPU).get("k1")["cycles"] == 2.0     # not imported again


def test_progress_line_names_the_phase_and_a_total_eta():
    out = io.StringIO()
    show = ProgressDisplay(out, interval=0)
    plan = (("singletons", 10), ("pairs", 45), ("weighted", 40))
    show(Progress("singletons", 0, 10, 0, 0.0, plan))
    show(Progress("singletons", 10, 10, 4, 6.0, plan))        # 6 measured in 6 s: 1 s each
    show(Progress("pairs", 5, 45, 0, 5.0, plan))              # 11 measured in 11 s
    lines = out.getvalue().splitlines()
    assert lines[0] == "measure singletons (1/3): 0/10"
    assert lines[1] == "measure singletons (1/3): 10/10 (4 cached), eta 1m25s for all phases"
    assert lines[2] == "measure pairs (2/3): 5/45, eta 1m20s for all phases"     # 40 + 40 left
    single = io.StringIO()
    ProgressDisplay(single, interval=0)(Progress("experiments", 3, 12, 0, 6.0))
    assert single.getvalue() == "measure experiments: 3/12, eta 18s\n"
    assert duration(3725) == "1h02m"


def experiment_file(path, n):
    """n distinct experiments over four cheap forms."""
    forms = ["ADD_((REG:RW:G:64)),_((REG:R:G:64))", "IMUL_((REG:RW:G:64)),_((REG:R:G:64))",
             "XOR_((REG:RW:G:64)),_((REG:R:G:64))", "SHL_((REG:RW:G:64)),_((IMM:8))"]
    exps = []
    for i in range(n):
        counts = {forms[j]: 1 + (i >> (2 * j)) % 4 for j in range(4)}
        exps.append(Experiment.of(counts))
    save_experiments(ExperimentSet(tuple(forms), tuple(exps), "x86", "test"), path)


def run_measure(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "pmpredict", "measure", *map(str, args)],
                          capture_output=True, text=True, env=env, **kw)


@needs_host
def test_should_stop_keeps_what_is_measured_and_a_rerun_resumes(tmp_path):
    """Stop once the first experiment is done: the partial set has it, the rest is "not
    measured", and the rerun takes everything measured from the cache."""
    from pmpredict.measure import MeasureOptions, MeasurementStopped, measure_experiment_set
    experiment_file(tmp_path / "e.json", 6)
    exps = load_experiments(str(tmp_path / "e.json"))
    events = []
    options = MeasureOptions(batch=3)                   # two harness runs of three experiments
    with pytest.raises(MeasurementStopped) as stop:
        measure_experiment_set(exps, cache_dir=str(tmp_path / "cache"), progress=events.append,
                               options=options, should_stop=lambda: events[-1].done >= 1)
    partial = stop.value.partial
    done = [e for e in partial.experiments if e.cycles is not None]
    assert 1 <= len(done) <= 3 and stop.value.phase == "experiments"
    assert {e.other["error"] for e in partial.experiments if e.cycles is None} == {"not measured"}
    again = []
    full = measure_experiment_set(exps, cache_dir=str(tmp_path / "cache"), progress=again.append,
                                  options=options)
    assert again[0].cached == len(done) and again[-1].done == 6
    assert all(e.cycles for e in full.experiments)
    assert [e.cycles for e in full.experiments if e.counts in {d.counts for d in done}] == \
        [e.cycles for e in done]


@needs_host
def test_cli_time_limit_writes_and_exits_3(tmp_path):
    e, out, cache = tmp_path / "e.json", tmp_path / "out.json", tmp_path / "cache"
    experiment_file(e, 4)
    first = run_measure("--experiments", e, "-o", out, "--cache", cache, "--time-limit", 0.001)
    assert first.returncode == 3, first.stderr
    assert first.stderr.strip().splitlines()[-1] == (
        f"pmpredict: time limit reached during experiments: {out} holds 0 of 4 experiments; "
        "run the same command again to measure the rest (finished results are cached)")
    assert [x.cycles for x in load_experiments(str(out)).experiments] == [None] * 4
    second = run_measure("--experiments", e, "-o", out, "--cache", cache)
    assert second.returncode == 0, second.stderr
    assert all(x.cycles for x in load_experiments(str(out)).experiments)


@needs_host
@pytest.mark.slow
def test_sigterm_stops_cleanly(tmp_path):
    e, out, cache, tmp = tmp_path / "e.json", tmp_path / "out.json", tmp_path / "cache", \
        tmp_path / "tmp"
    tmp.mkdir()
    experiment_file(e, 256)     # every distinct one: the run takes seconds on the fastest core
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "pmpredict", "measure", "--experiments", str(e),
                             "-o", str(out), "--cache", str(cache)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp.glob("pmpredict-measure-*")):
        time.sleep(0.05)                     # the harness is built and running
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert list(tmp.iterdir()) == []                        # temporary directories removed
    db = sqlite3.connect(next(str(p) for p in cache.glob("measure-*.sqlite")))
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    kept = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    again = run_measure("--experiments", e, "-o", out, "--cache", cache, env=env)
    assert again.returncode == 0
    final = again.stderr.strip().splitlines()[-1]
    assert final == "measure experiments: 256/256" + (f" ({kept} cached)" if kept else "")
    assert all(x.cycles for x in load_experiments(str(out)).experiments)


def test_failures_are_told_apart_by_kind_and_only_permanent_ones_are_kept():
    from pmpredict.measure.experiment_runs import combine
    from pmpredict.measure.runner import Failure, Timing
    sigill = "SIGILL: instruction not supported by this CPU (or illegal here)"
    assert Failure.of(sigill) is Failure.UNSUPPORTED and Failure.UNSUPPORTED.permanent
    assert Failure.of("does not assemble: bad operand") is Failure.NOT_ASSEMBLED
    assert Failure.of("crash: SIGSEGV") is Failure.CRASH and not Failure.CRASH.permanent
    assert Failure.of("timeout") is Failure.TIMEOUT and not Failure.TIMEOUT.permanent
    assert Failure.of("something else") is Failure.OTHER and Failure.of(None) is None
    # a permanent failure of one unroll variant decides, whatever the others did
    assert combine([(1, Timing(error="timeout")), (2, Timing(error=sigill))]) == (None, sigill)
    assert combine([(1, Timing(error="timeout")), (2, Timing(steady=3.0, short=3.0, long=3.0))]) \
        == (1.5, None)
