"""The host CPU: its identity (part of every cache key) and its current clock from the harness.

The cycle itself is measured by the harness (a chain of dependent register-register
adds, one cycle each); `host_frequency` runs the harness with no kernel and returns
the calibrated GHz, which reports record next to measured numbers.
"""

from __future__ import annotations

import functools
import platform
import shutil
import subprocess
import tempfile

from pmpredict.measure.runner import RunOptions, compile_harness


@functools.lru_cache(maxsize=1)
def cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where unavailable)."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    if info:
                        break
                    continue
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return info


def cpu_flags() -> set[str]:
    return set(cpuinfo().get("flags", "").split())


def cpu_name() -> str:
    return cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_identity() -> str:
    """A string that changes when the CPU model or its exposed features change."""
    info = cpuinfo()
    fields = [info.get(k, "") for k in ("vendor_id", "cpu family", "model", "stepping", "model name")]
    return "|".join(fields + [" ".join(sorted(cpu_flags())), platform.machine()])


def host_frequency(opts: RunOptions = RunOptions(samples=11)) -> float:
    """Core clock in GHz as the calibration loop sees it right now."""
    workdir = tempfile.mkdtemp(prefix="pmpredict-cal-")
    try:
        exe, messages = compile_harness([], workdir)
        if exe is None:
            raise RuntimeError("cannot build the measurement harness: " + messages.strip())
        out = subprocess.run(opts.harness_args(exe), capture_output=True, text=True,
                             timeout=opts.timeout_s).stdout
        for line in out.splitlines():
            if line.startswith("C "):
                return float(line.split()[1])
        raise RuntimeError("the harness printed no calibration")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
