"""The host CPU's identity, from /proc/cpuinfo: part of every cache key and the name of this
machine's model. Cheap to import (nothing of the harness), so finding the model costs nothing."""

from __future__ import annotations

import functools
import platform
import shutil
import sys

HARNESS_ISA = "x86"          # the harness generates x86-64 code: forms of this ISA only


def harness_runs_here() -> bool:
    """Whether this host can run the harness: x86-64 Linux with a C compiler."""
    return (platform.machine() in ("x86_64", "AMD64") and sys.platform.startswith("linux")
            and bool(shutil.which("cc") or shutil.which("gcc")))


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
