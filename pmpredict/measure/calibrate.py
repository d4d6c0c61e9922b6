"""The host CPU's current clock, from the harness (its identity: cpu.py, re-exported here).

The cycle itself is measured by the harness (a chain of dependent register-register
adds, one cycle each); `host_frequency` runs the harness with no kernel and returns
the calibrated GHz, which reports record next to measured numbers; `host_calibration` also
the canary's rate (the throughput-bound kernel next to every sample that tells a busy sibling
hardware thread).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile

from pmpredict.measure.runner import RunOptions, compile_harness


def host_frequency(opts: RunOptions = RunOptions(samples=11)) -> float:
    """Core clock in GHz as the calibration loop sees it right now."""
    return host_calibration(opts)[0]


def host_calibration(opts: RunOptions = RunOptions(samples=11)) -> tuple[float, float]:
    """(core clock in GHz, the canary's adds per cycle when the core was quietest): the
    harness's C line. The canary is throughput-bound (harness.c): a busy sibling hardware
    thread slows it, the calibration chain hardly."""
    workdir = tempfile.mkdtemp(prefix="pmpredict-cal-")
    try:
        exe, messages = compile_harness([], workdir)
        if exe is None:
            raise RuntimeError("cannot build the measurement harness: " + messages.strip())
        out = subprocess.run(opts.harness_args(exe), capture_output=True, text=True,
                             timeout=opts.timeout_s).stdout
        for line in out.splitlines():
            if line.startswith("C "):
                _, ghz, canary = line.split()
                return float(ghz), float(canary)
        raise RuntimeError("the harness printed no calibration")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
