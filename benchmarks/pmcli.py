"""pmpredict's command line (`predict --json`, `measure --json`) run on a file, for the benchmarks.

The benchmarks go through the CLI's JSON (the stable contract) rather than the library, so
they pick up a new prediction engine or measurement harness unchanged; every key is read
with .get. The interpreter is the one running the benchmark (a worktree's .venv measures
and predicts with that tree). Failures give {"cycles": None, "error": why}.
"""

from __future__ import annotations

import json
import subprocess
import sys

PREDICT_TIMEOUT = 300       # seconds (a first run compiles numba code)
MEASURE_TIMEOUT = 600
BATCH_TIMEOUT = 4 * 3600    # many kernels at once, with --model host measuring their forms


def _run(args: list[str], timeout: int) -> dict:
    cmd = [sys.executable, "-m", "pmpredict", *args, "--json"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"cycles": None, "error": f"timeout after {timeout} s"}
    try:
        data = json.loads(out.stdout) if out.stdout.strip() else {}
    except json.JSONDecodeError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if out.returncode != 0 or data.get("cycles") is None:
        lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
        why = data.get("error") or (lines[-1] if lines else f"exit status {out.returncode}")
        return {**data, "cycles": None, "error": str(why)[:300]}
    return data


def predict(path: str, model: str | None = None, lines: str | None = None,
            extra: tuple[str, ...] = ()) -> dict:
    args = ["predict", path]
    if model:
        args += ["--model", model]
    if lines:
        args += ["--lines", lines]
    return _run(args + list(extra), PREDICT_TIMEOUT)


def measure(path: str, lines: str | None = None, cached: bool = True) -> dict:
    args = ["measure", path]
    if lines:
        args += ["--lines", lines]
    if not cached:
        args.append("--no-cache")
    return _run(args, MEASURE_TIMEOUT)


def predict_many(paths: list[str], model: str | None = None, extra: tuple[str, ...] = (),
                 timeout: int = BATCH_TIMEOUT) -> tuple[dict, list[str], float]:
    """Every file in one `predict --jsonl` call (with `--model host`: one extension of this
    machine's model measures every file's missing forms together).

    Returns ({path: report or {"cycles": None, "error": why}}, the notes pmpredict printed on
    stderr, seconds). A file the CLI rejects (exit 2, `pmpredict: error: FILE:...`) gets that
    error and the call is repeated without it, so one bad block costs one file, not the batch."""
    import time
    out, notes, todo = {}, [], list(paths)
    started = time.monotonic()
    while todo:
        cmd = [sys.executable, "-m", "pmpredict", "predict", *todo, "--jsonl"]
        cmd += ["--model", model] if model else []
        try:
            run = subprocess.run(cmd + list(extra), capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            out.update({p: {"cycles": None, "error": f"timeout after {timeout} s"} for p in todo})
            break
        lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
        if run.returncode == 0:
            reports = [json.loads(ln) for ln in run.stdout.splitlines() if ln.strip()]
            if len(reports) != len(todo):           # a file with several regions: one each
                raise RuntimeError(f"{len(reports)} reports for {len(todo)} files")
            out.update(zip(todo, reports))
            notes += lines
            break
        bad = next((p for ln in lines for p in todo if ln.startswith(f"pmpredict: error: {p}:")),
                   None)
        if bad is None:                               # not one file's fault: every file fails
            why = lines[-1] if lines else f"exit status {run.returncode}"
            out.update({p: {"cycles": None, "error": why[:300]} for p in todo})
            break
        out[bad] = {"cycles": None, "error": next(ln for ln in lines if bad in ln)[:300]}
        todo.remove(bad)
    return {p: out[p] for p in paths}, notes, time.monotonic() - started


def prediction_summary(report: dict) -> dict:
    """The figures a benchmark keeps from a `predict --json` report (missing keys -> None)."""
    bounds = report.get("bounds") if isinstance(report.get("bounds"), dict) else {}
    coverage = report.get("coverage") if isinstance(report.get("coverage"), dict) else {}
    unmatched = report.get("unmatched") or []
    complete = coverage.get("complete")
    if complete is None and report.get("cycles") is not None:
        complete = not unmatched
    return {"cycles": report.get("cycles"), "error": report.get("error"),
            "model": report.get("model"),
            "throughput": bounds.get("throughput"), "loop_carried": bounds.get("loop_carried"),
            "front_end": bounds.get("front_end"), "complete": complete,
            "unmatched": [u.get("text") for u in unmatched if isinstance(u, dict)],
            "coverage_note": coverage.get("note")}
