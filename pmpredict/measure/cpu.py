"""The host CPU's identity, from /proc/cpuinfo: part of every cache key and the name of this
machine's model. Cheap to import (nothing of the harness), so finding the model costs nothing.

Hybrid CPUs (Intel Alder Lake and later: performance and efficiency cores under one model name)
list each core type's CPUs in sysfs (/sys/devices/cpu_core/cpus, /sys/devices/cpu_atom/cpus).
There the harness measures one core type only, the performance cores unless
PMPREDICT_CORE_TYPE names another, and the identity (so every cache key and the model's name)
says which.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys

from pmpredict.errors import InputError

HARNESS_ISA = "x86"          # the harness generates x86-64 code: forms of this ISA only


def harness_runs_here() -> bool:
    """Whether this host can run the harness: x86-64 Linux with a C compiler."""
    return (os.uname().machine in ("x86_64", "AMD64") and sys.platform.startswith("linux")
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
    return cpuinfo().get("model name") or os.uname().machine


def cpu_identity() -> str:
    """A string that changes when the CPU model or its exposed features change (and, on a
    hybrid CPU, with the core type measured)."""
    info = cpuinfo()
    fields = [info.get(k, "") for k in ("vendor_id", "cpu family", "model", "stepping", "model name")]
    kind = measured_core_type()
    return "|".join(fields + [" ".join(sorted(cpu_flags())), os.uname().machine]
                    + ([f"core type {kind}"] if kind else []))


SYSFS_DEVICES = "/sys/devices"
SYSFS_CPUS = "/sys/devices/system/cpu"
CORE_TYPE_ENV = "PMPREDICT_CORE_TYPE"
PERFORMANCE_CORES = "core"          # sysfs's name of Intel's performance core type


def parse_cpu_list(text: str) -> list[int]:
    """A kernel CPU list ("0-7,16,18-19") as CPU numbers."""
    cpus = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


@functools.lru_cache(maxsize=4)
def core_types(devices: str = SYSFS_DEVICES) -> dict[str, tuple[int, ...]]:
    """{core type: its CPUs} of a hybrid CPU (cpu_core, cpu_atom in sysfs); {} elsewhere."""
    types = {}
    try:
        names = os.listdir(devices)
    except OSError:
        return {}
    for name in sorted(names):
        if not name.startswith("cpu_"):
            continue
        try:
            with open(os.path.join(devices, name, "cpus")) as fh:
                cpus = parse_cpu_list(fh.read())
        except (OSError, ValueError):
            continue
        if cpus:
            types[name[len("cpu_"):]] = tuple(cpus)
    return types if len(types) > 1 else {}


def measured_core_type() -> str | None:
    """The core type the harness measures on a hybrid CPU (None elsewhere)."""
    types = core_types()
    if not types:
        return None
    wanted = os.environ.get(CORE_TYPE_ENV) or PERFORMANCE_CORES
    if wanted not in types:
        raise InputError(f"${CORE_TYPE_ENV}", f"this hybrid CPU's core types are "
                                              f"{', '.join(sorted(types))}, not {wanted!r}")
    return wanted


def measurement_cpus() -> list[int]:
    """The CPUs the harness may run on: those this process may use, of the measured core type
    on a hybrid CPU (an error when it may use none of them)."""
    allowed = sorted(os.sched_getaffinity(0))
    kind = measured_core_type()
    if kind is None:
        return allowed
    of_type = [c for c in allowed if c in core_types()[kind]]
    if not of_type:
        raise InputError(f"${CORE_TYPE_ENV}", f"this process may not run on any {kind} core "
                                              f"(allowed: {allowed})")
    return of_type


def share_a_core(cpus, system: str = SYSFS_CPUS) -> bool:
    """Whether two of `cpus` are threads of one core, as the kernel sees the topology (a
    virtual machine may hide that its vCPUs are: False then)."""
    wanted = set(cpus)
    for cpu in wanted:
        try:
            with open(os.path.join(system, f"cpu{cpu}", "topology", "thread_siblings_list")) as fh:
                siblings = set(parse_cpu_list(fh.read()))
        except (OSError, ValueError):
            continue
        if len(siblings & wanted) > 1:
            return True
    return False


def current_cpu() -> int | None:
    """The CPU this process ran on last (/proc/self/stat, field 39), None where unknown: a
    harness started unpinned starts there."""
    try:
        with open("/proc/self/stat") as fh:
            stat = fh.read()
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None
