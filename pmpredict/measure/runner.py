"""Compile a harness with the system C compiler and run it, surviving whatever the kernels do.

A kernel that dies (SIGILL for an instruction this CPU lacks, SIGSEGV, ...) or hangs is
normally caught inside the harness, which reports it and goes on. If the whole process dies
or stops answering anyway, the kernel it was running is marked failed and the remaining
kernels run in a fresh process. If the C file does not compile (a form the assembler
rejects), the kernel list is bisected to find the culprits.
"""

from __future__ import annotations

import hashlib
import os
import platform
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from pmpredict.measure.codegen import HarnessKernel, harness_source, kernels_source, timing_source
from pmpredict.measure.canary_history import remembered_reference
from pmpredict.measure.cpu import core_types, cpu_identity, measurement_cpus
from pmpredict.userdirs import cache_dir

CC_FLAGS = ["-O1", "-w"]


# `steady` = (t(2n) - t(n)) / n is used when the short and the long run agree this closely;
# otherwise they ran in different steady states and the long run alone is the better figure.
AGREEMENT = 0.01


class Failure(str, Enum):
    """Why an experiment has no cycles: the prefix of its error text (the text is what the
    cache and the experiment files keep)."""
    UNSUPPORTED = "SIGILL"                    # this CPU lacks the instruction
    NOT_ASSEMBLED = "does not assemble"
    NOT_INSTANTIATED = "cannot instantiate"   # no operands can be allocated for it
    TIMEOUT = "timeout"
    CRASH = "crash"
    OTHER = ""

    @classmethod
    def of(cls, error: str | None) -> "Failure | None":
        if not error:
            return None
        return next((f for f in cls if f.value and error.startswith(f.value)), cls.OTHER)

    @property
    def permanent(self) -> bool:
        """Measuring again cannot help (a transient failure is measured again next time)."""
        return self in (Failure.UNSUPPORTED, Failure.NOT_ASSEMBLED, Failure.NOT_INSTANTIATED)

    def error(self, detail) -> str:
        return f"{self.value}: {detail}"


@dataclass(frozen=True)
class Timing:
    """Cycles per loop iteration of one kernel (or why there is none); see harness.c."""
    steady: float | None = None      # (t(2n) - t(n)) / n from the fastest runs
    short: float | None = None       # fastest t(n) / n
    long: float | None = None        # fastest t(2n) / 2n
    spread: float | None = None      # (median - fastest) / fastest of the t(2n) runs
    iterations: int = 0
    ghz: float | None = None         # the clock the harness calibrated (cycles per ns)
    error: str | None = None
    dirty: int = 0                   # runs kept although every attempt was interrupted
    samples: int = 0                 # samples taken (calibration, n and 2n runs each)
    confirmed: bool = True           # the fastest runs were reproduced within the budget
    contended: int = 0               # samples taken again: the canary ran slow (a busy sibling)
    busy: int = 0                    # samples kept although the canary ran slow
    passes: tuple = ()               # cycles of each harness process (run_kernels passes > 1)
    counted: tuple = ()              # ... of those the figure was chosen from: the processes
    #                                  that kept no busy sample, where there are any

    @property
    def cycles(self) -> float | None:
        """The kernel's cycles per iteration (None if it failed)."""
        if self.error or self.long is None or not self.long > 0:
            return None
        if self.steady is not None and self.steady > 0 and \
                abs(self.short - self.long) <= AGREEMENT * self.long:
            return self.steady
        return self.long


@dataclass(frozen=True)
class RunOptions:
    """How the harness times a kernel. The defaults are sized to the clock, not to a habit:
    a run of 50 us is some 180,000 cycles, a thousand times the cost of the clock reads around
    it, and (t(2n) - t(n)) / n cancels the call and the warm-up; the calibration chains and the
    canary run 10 us each. LEGACY_RUN_OPTIONS are the sizes used before (runs 10x longer,
    a canary tolerance of 15%), kept so benchmarks/bench_harness_speed.py can time both."""
    target_ns: float = 5e4        # duration of the shorter timed run
    samples: int = 3              # samples per kernel at least (fastest counts)
    max_samples: int = 24         # ... and at most, until the fastest runs are reproduced
    cpu: int = -1                 # core to pin to (-1: the one the harness starts on)
    alarm_s: int = 10             # in-harness per-kernel time limit
    timeout_s: float = 60.0       # silence after which the process is killed
    cal_ns: float = 1e4           # one run of each calibration chain
    canary_ns: float = 1e4        # one canary run (before and after every sample)
    canary_slower: float = 0.05   # a canary this much slower than the quietest: a busy sibling
    quiet_wait_ns: float = 2e6    # before a sample, wait this long at most for a quiet canary
    # the canary's quiet time per add over the calibration's, as another process measured it
    # (0: none; run_kernels probes every CPU for it): not a parameter of the value
    canary_reference: float = 0.0
    # when the gate finds no quiet moment, wait on for a busy phase of the sibling to end,
    # this long at most in all, per process (harness.c, wait_for_quiet; 0: never)
    quiet_phase_ns: float = 0.0

    def cache_params(self) -> dict:
        """What changes a measurement's value (part of every cache key)."""
        return {"target_ns": self.target_ns, "samples": self.samples,
                "max_samples": self.max_samples, "cal_ns": self.cal_ns,
                "canary_ns": self.canary_ns, "canary_slower": self.canary_slower,
                "quiet_wait_ns": self.quiet_wait_ns,
                # only where set: an experiment's key does not name a wait it never makes
                **({"quiet_phase_ns": self.quiet_phase_ns} if self.quiet_phase_ns else {})}

    def harness_args(self, exe: str, indices=()) -> list[str]:
        """The command line of a harness binary (see harness.c) for these options. On a hybrid
        CPU a harness not pinned elsewhere is pinned to a CPU of the measured core type (it
        would stay on whichever core it started on)."""
        cpu = self.cpu if self.cpu >= 0 or not core_types() else measurement_cpus()[0]
        return [exe, repr(self.target_ns), str(self.samples), str(max(self.samples,
                self.max_samples)), str(cpu), str(self.alarm_s), repr(self.cal_ns),
                repr(self.canary_ns), repr(self.canary_slower), repr(self.quiet_wait_ns),
                repr(self.canary_reference), repr(self.quiet_phase_ns), *map(str, indices)]


# the harness as it was sized until 2026-12-02 (0.36-0.43 s an experiment): for side-by-side
# benchmarks only
LEGACY_RUN_OPTIONS = RunOptions(target_ns=5e5, samples=5, max_samples=24, cal_ns=5e4,
                                canary_ns=2.5e4, canary_slower=0.15, quiet_wait_ns=0.0)


class HostError(RuntimeError):
    """This machine cannot run the harness (not x86-64 Linux, no C compiler)."""


def check_host() -> None:
    if platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        raise HostError(f"measurement needs an x86-64 Linux host (this is {platform.machine()} "
                        f"{sys.platform})")
    compiler()


def compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    raise HostError("no C compiler found (set CC or install gcc)")


def compile_harness(kernels: list[HarnessKernel], workdir: str) -> tuple[str | None, str]:
    """Build the harness binary; (path or None, compiler messages). The timing code is
    compiled once (timing_object) and linked to each batch's kernels."""
    src = os.path.join(workdir, "kernels.c")
    exe = os.path.join(workdir, "harness")
    with open(src, "w") as fh:
        fh.write(kernels_source(kernels))
    timing = timing_object()
    inputs = [src, timing] if timing else [src]
    if timing is None:                      # no place to keep it: one file, as before
        with open(src, "w") as fh:
            fh.write(harness_source(kernels))
    proc = subprocess.run([compiler(), *CC_FLAGS, "-o", exe, *inputs], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return None, proc.stderr
    return exe, ""


def timing_object() -> str | None:
    """The timing template compiled to an object file, kept in the user's cache directory under
    a digest of its source, the compiler and the flags (None where it cannot be built or kept).
    Written to a temporary name and renamed: processes building it at once do no harm."""
    source = timing_source()
    cc = shutil.which(compiler()) or compiler()
    try:
        stamp = os.stat(cc).st_mtime_ns
    except OSError:
        stamp = 0
    digest = hashlib.sha256("\0".join([source, cc, str(stamp), *CC_FLAGS]).encode()).hexdigest()
    folder = os.path.join(cache_dir(), "harness")
    path = os.path.join(folder, f"timing-{digest[:16]}.o")
    if os.path.exists(path):
        return path
    try:
        os.makedirs(folder, exist_ok=True)
        work = tempfile.mkdtemp(prefix="timing-", dir=folder)
    except OSError:
        return None
    try:
        src = os.path.join(work, "timing.c")
        with open(src, "w") as fh:
            fh.write(source)
        obj = os.path.join(work, "timing.o")
        proc = subprocess.run([compiler(), *CC_FLAGS, "-c", "-o", obj, src], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            return None
        os.replace(obj, path)
        return path
    except OSError:
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def first_error(messages: str) -> str:
    for line in messages.splitlines():
        if "undefined reference" in line:          # a symbol the block names (e.g. .LC0(%rip))
            return "undefined symbol: " + line.split("undefined reference to", 1)[-1].strip(" `'")
    for line in messages.splitlines():
        if "Error:" in line or "error:" in line:
            return line.split("Error:", 1)[-1].split("error:", 1)[-1].strip()
    return messages.strip().splitlines()[-1] if messages.strip() else "compilation failed"


_FAILURES = {
    "SIGILL": "SIGILL: instruction not supported by this CPU (or illegal here)",
    "timeout": "timeout",
    "pages": "crash: SIGSEGV: the code walks through more memory than the harness maps "
             "(60,000 pages); measure a block whose addresses repeat",
    "layout": "the block's memory regions cannot be mapped at their fixed addresses",
}


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _current_kernel_file(exe: str) -> str:
    """A file of one int32 (-1) that the harness maps and writes the running kernel's index to."""
    path = exe + ".current"
    with open(path, "wb") as fh:
        fh.write(struct.pack("<i", -1))
    return path


def _read_current(path: str, indices: list[int], results: dict) -> int | None:
    """The kernel the harness was running when it stopped (None: none, or one with a result)."""
    try:
        with open(path, "rb") as fh:
            current, = struct.unpack("<i", fh.read(4))
    except (OSError, struct.error):
        return None
    return current if current in indices and current not in results else None


def _run_binary(exe: str, indices: list[int], opts: RunOptions, results: dict, on_result) -> list[int]:
    """Run the harness on `indices`; fill results; return the indices still to run."""
    current_path = _current_kernel_file(exe)
    proc = subprocess.Popen(opts.harness_args(exe, indices), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1,
                            env={**os.environ, "PM_CURRENT_KERNEL": current_path})
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        deadline = time.monotonic() + opts.timeout_s
        while True:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                proc.kill()
                proc.wait()
                current = _read_current(current_path, indices, results)
                if current is not None:
                    results[current] = Timing(error=Failure.TIMEOUT.value)
                    on_result(current)
                break
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                current = _read_current(current_path, indices, results)
                if current is not None:
                    results[current] = Timing(error=Failure.CRASH.error(_signal_name(proc.returncode)))
                    on_result(current)
                break
            deadline = time.monotonic() + opts.timeout_s
            parts = line.split()
            if not parts:
                continue
            tag = parts[0]
            if tag == "R":
                i = int(parts[1])
                steady, short, long_, spread = (float(x) for x in parts[2:6])
                results[i] = Timing(steady, short, long_, spread, int(parts[6]), ghz=float(parts[7]),
                                    dirty=int(parts[8]), samples=int(parts[9]),
                                    confirmed=parts[10] == "1", contended=int(parts[11]),
                                    busy=int(parts[12]))
                on_result(i)
            elif tag == "F":
                i = int(parts[1])
                reason = parts[2]
                results[i] = Timing(error=_FAILURES.get(reason, Failure.CRASH.error(reason)))
                on_result(i)
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return [i for i in indices if i not in results]


def run_kernels(kernels: list[HarnessKernel], opts: RunOptions = RunOptions(), on_result=None,
                passes: int = 1, max_passes: int | None = None,
                unsettled: Callable[[dict[int, Timing]], set[int]] | None = None) -> list[Timing]:
    """Time every kernel; the result list is parallel to `kernels`.

    `on_result(i, timing)` is called as soon as kernel i is done (to save progress).
    With `passes` > 1 the compiled harness runs that many times, each process pinned to
    the next CPU this process may use (unless opts.cpu pins them all), and each kernel
    keeps its fastest pass (`Timing.passes` lists them all): a state that one process
    or one CPU got stuck in (a busy sibling thread on the host, say) shows as a
    disagreement instead of as the result. Kernels whose two fastest passes differ by
    more than PASS_AGREEMENT get more passes, up to `max_passes`; or, with `unsettled`, the
    kernels it names when given each kernel's timing so far (kernel index -> Timing): a
    figure computed from several kernels (a block's two unroll variants) can need their
    passes to agree more closely than each alone.
    """
    results: dict[int, Timing] = {}
    workdir = tempfile.mkdtemp(prefix="pmpredict-measure-")
    try:
        _run_group(list(range(len(kernels))), kernels, opts, results, on_result, workdir,
                   (passes, max(passes, max_passes or passes)), unsettled or _disagreeing)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return [results[i] for i in range(len(kernels))]


# the two fastest passes of a kernel agree this closely: its minimum is reproduced (within
# the 3% two measurements of a block should agree by)
PASS_AGREEMENT = 0.02


def _fastest(timings: list[Timing]) -> Timing:
    """The fastest pass, of those that kept no busy sample where there are any: beside a busy
    sibling the dependent calibration chain slows by a few per cent too, and a latency chain
    timed there came out fastest for the wrong reason (imul's chain 2.92 cycles)."""
    good = [t for t in timings if t.cycles is not None]
    if not good:
        return timings[0]
    pool = sorted([t for t in good if not t.busy] or good, key=lambda t: t.cycles)
    return replace(pool[0], passes=tuple(t.cycles for t in good),
                   counted=tuple(t.cycles for t in pool))


def passes_agree(t: Timing) -> bool:
    """The two fastest passes a kernel's figure was chosen from agree (trivially so with a
    single pass)."""
    best = sorted(t.counted or t.passes)[:2]
    return len(best) < 2 or best[1] <= (1 + PASS_AGREEMENT) * best[0]


def reproduced(t: Timing) -> bool:
    """Two passes the figure was chosen from agree: one quiet pass beside busy ones is not
    reproduced (a Zen 3 beside a busy guest read four adds 2% below their bound so)."""
    return len(t.counted or t.passes) >= 2 and passes_agree(t)


def _disagreeing(timings: dict[int, Timing]) -> set[int]:
    """The kernels with a figure whose passes do not reproduce it."""
    return {i for i, t in timings.items() if t.cycles is not None and not reproduced(t)}


def _run_pass(exe, kernels: list[int], opts: RunOptions, done) -> None:
    """Run the harness on `kernels` (a new process for what a crash left over);
    done(j, timing) for each."""
    local: dict[int, Timing] = {}
    todo = list(kernels)
    while todo:
        left = _run_binary(exe, todo, opts, local, lambda j: done(j, local[j]))
        if len(left) == len(todo):          # died before running anything: give up on these
            for j in left:
                local[j] = Timing(error="the harness did not start (calibration failed)")
                done(j, local[j])
            left = []
        todo = left


def canary_reference(exe: str, opts: RunOptions) -> float:
    """The quietest canary (time per add over the calibration's) of a calibration-only run of
    the harness on each CPU measurements may use (0.0: not found). A busy process pinned to
    one vCPU leaves the other's canary slow from its first run on; the vCPU it runs on is
    quiet in the slices it gives the harness: the probe there gives the quiet rate. Another
    guest busy on the physical core for seconds fools every probe of the moment, so the
    reference is never slower than the quiet rate remembered for this CPU (canary_history)."""
    if opts.canary_reference > 0 or opts.cpu >= 0 or opts.quiet_wait_ns <= 0:
        return opts.canary_reference            # given, pinned by the caller, or no gate
    best = 0.0
    for cpu in measurement_cpus()[:4]:
        try:
            out = subprocess.run(replace(opts, cpu=cpu).harness_args(exe, [-1]),
                                 capture_output=True, text=True, timeout=opts.timeout_s)
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "C":
                try:
                    rate = float(parts[2])           # adds per cycle
                except ValueError:
                    continue
                if rate > 0 and (best == 0.0 or 1.0 / rate < best):
                    best = 1.0 / rate
    return remembered_reference(best, cache_dir(), cpu_identity(), opts.canary_slower)


def _run_group(indices, kernels, opts, results, on_result, workdir, passes=(1, 1),
               unsettled=_disagreeing) -> None:
    sub = [kernels[i] for i in indices]
    exe, messages = compile_harness(sub, workdir)
    if exe is not None and len(measurement_cpus()) > 1:
        opts = replace(opts, canary_reference=canary_reference(exe, opts))
    if exe is None:
        if len(indices) == 1:
            results[indices[0]] = Timing(error=Failure.NOT_ASSEMBLED.error(first_error(messages)))
            if on_result:
                on_result(indices[0], results[indices[0]])
            return
        half = len(indices) // 2
        _run_group(indices[:half], kernels, opts, results, on_result, workdir, passes, unsettled)
        _run_group(indices[half:], kernels, opts, results, on_result, workdir, passes, unsettled)
        return

    def done(j, timing):
        results[indices[j]] = timing
        if on_result:
            on_result(indices[j], timing)

    least, most = passes
    if most <= 1:
        _run_pass(exe, range(len(sub)), opts, done)
        return
    cpus = measurement_cpus() if opts.cpu < 0 else [opts.cpu]
    per_kernel: dict[int, list[Timing]] = {j: [] for j in range(len(sub))}
    todo = list(range(len(sub)))
    for p in range(most):
        _run_pass(exe, todo, replace(opts, cpu=cpus[p % len(cpus)]),
                  lambda j, t: per_kernel[j].append(t))
        if p + 1 >= least:
            open_ = unsettled({indices[j]: _fastest(per_kernel[j]) for j in per_kernel})
            todo = [j for j in per_kernel if indices[j] in open_]
            if not todo:
                break
    for j in range(len(sub)):
        done(j, _fastest(per_kernel[j]))


def check_assembles(lines: list[str], syntax: str = "intel") -> list[str | None]:
    """Assemble each instruction line once; the assembler's complaint per line (None: fine)."""
    if not lines:
        return []
    workdir = tempfile.mkdtemp(prefix="pmpredict-as-")
    try:
        src = os.path.join(workdir, "check.s")
        header = [".intel_syntax noprefix" if syntax == "intel" else ".att_syntax", ".text"]
        with open(src, "w") as fh:
            fh.write("\n".join(header + lines) + "\n")
        proc = subprocess.run([compiler(), "-c", "-x", "assembler", "-o",
                               os.path.join(workdir, "check.o"), src],
                              capture_output=True, text=True)
        errors: list[str | None] = [None] * len(lines)
        if proc.returncode == 0:
            return errors
        located = False
        for msg in proc.stderr.splitlines():
            # "check.s:12: Error: ..." (gas) or "check.s:12:5: error: ..." (clang)
            head, _, rest = msg.partition(": ")
            parts = head.rsplit("check.s:", 1)
            if len(parts) != 2:
                continue
            try:
                line_no = int(parts[1].split(":")[0])
            except ValueError:
                continue
            k = line_no - len(header) - 1
            if 0 <= k < len(lines) and errors[k] is None:
                errors[k] = rest.split("Error:", 1)[-1].split("error:", 1)[-1].strip() or rest
                located = True
        if not located:
            errors = [first_error(proc.stderr)] * len(lines)
        return errors
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
