"""Where ch. 6's algorithm (infer/counters.py) gets the number of uops of an experiment.

A UopCounter answers the total uops one instance of an experiment executes:

* ModelUopCounter(model): the ground-truth model's count (the sum of its forms' uop counts),
  the same for every execution;
* HostUopCounter(): this machine's PMU through Linux perf_event_open (AMD: PMCx0C1
  "Retired Uops", which Zen 3/4 document as macro-ops; Intel: UOPS_RETIRED.RETIRE_SLOTS).
  It refuses, with one line naming what is missing, where there is no PMU
  (/sys/bus/event_source/devices/cpu absent: a VM without a virtual PMU, as the machine this
  was written on) or perf_event_open fails (perf_event_paranoid, seccomp).
"""

from __future__ import annotations

import ctypes
import os
import platform

PMU_DIR = "/sys/bus/event_source/devices/cpu"
# perf_event_open's syscall number on x86-64 Linux, the only host the harness measures on
PERF_EVENT_OPEN_X86_64 = 298
PERF_TYPE_RAW = 4
PERF_FLAG_FD_CLOEXEC = 8
# raw event codes of a total-uops counter, by vendor
RAW_UOPS = {"AuthenticAMD": 0xC1, "GenuineIntel": 0x02C2}


class CounterUnavailable(Exception):
    """No uop counter here; the message is one line and names what is missing."""


class UopCounter:
    """The interface: uops(experiment) -> total uops of one instance of the multiset."""

    def describe(self) -> dict:
        raise NotImplementedError

    def uops(self, counts) -> float:
        raise NotImplementedError


class ModelUopCounter(UopCounter):
    def __init__(self, model, name: str | None = None):
        self.model = model
        self.name = name or model.name

    def describe(self) -> dict:
        return {"counter": "model", "model": self.name}

    def uops(self, counts) -> float:
        items = counts.items() if isinstance(counts, dict) else counts
        return float(sum(n * c for f, n in items for _, c in self.model.uops[f]))


class _PerfEventAttr(ctypes.Structure):
    # the leading fields of struct perf_event_attr (PERF_ATTR_SIZE_VER0 = 64 bytes)
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


def _vendor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf8") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def open_uops_counter() -> int:
    """A file descriptor counting this process's retired uops (disabled), or
    CounterUnavailable naming what is missing."""
    if not os.path.isdir(PMU_DIR):
        raise CounterUnavailable(f"no hardware performance counters: {PMU_DIR} is absent "
                                 "(a VM without a virtual PMU?); --method counters needs a "
                                 "total-uops counter")
    vendor = _vendor()
    if vendor not in RAW_UOPS:
        raise CounterUnavailable(f"no known total-uops event for CPU vendor {vendor or '?'!r}")
    number = PERF_EVENT_OPEN_X86_64 if platform.machine() == "x86_64" else None
    if number is None:
        raise CounterUnavailable(f"perf_event_open is not wired up for {platform.machine()}")
    attr = _PerfEventAttr(type=PERF_TYPE_RAW, size=ctypes.sizeof(_PerfEventAttr),
                          config=RAW_UOPS[vendor],
                          flags=(1 << 0) | (1 << 5) | (1 << 6))  # disabled, no kernel, no hv
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, ctypes.byref(attr), 0, -1, -1, PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        raise CounterUnavailable(f"perf_event_open of the uops event failed: {os.strerror(err)} "
                                 "(see /proc/sys/kernel/perf_event_paranoid)")
    return fd


class HostUopCounter(UopCounter):
    """This machine's total-uops counter. Constructing it checks that the counter opens."""

    def __init__(self):
        self.fd = open_uops_counter()
        os.close(self.fd)
        # the counter opens, but counting needs the harness to enable it around the kernel's
        # timed loop (it reads the clock only): refused here, before any work, not mid-run
        raise CounterUnavailable("this host has a uops counter, but reading it around a "
                                 "measured kernel is not built into the harness yet; use "
                                 "--oracle M.json")

    def describe(self) -> dict:
        return {"counter": "perf_event_open", "event": hex(RAW_UOPS.get(_vendor(), 0))}

    def uops(self, counts) -> float:
        # Counting needs the measurement harness to enable the counter around the kernel's
        # timed loop (the harness reads the TSC only); that is not built yet.
        raise CounterUnavailable("reading the uops counter around a measured kernel is not "
                                 "implemented in the harness yet (the counter itself opens)")
