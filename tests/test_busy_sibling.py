"""Measurements repeat while another CPU of this machine is busy.

In a small VM the other vCPU is often the SMT sibling of the harness's (here, a Zen 4 guest
with two vCPUs: a busy loop on one slows an ALU-bound canary on the other 1.8-2x). The test
starts a bounded busy process pinned to one CPU, measures each block twice with no cache and
asserts the two measurements agree within 3%, on the first try: the harness gates its samples
on a quiet canary, and a second process on the other CPU shares the busy one's CPU by time
slices, in which the sibling rests.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from contextlib import contextmanager

import pytest
from hostcores import measured_close

ON_X86_LINUX = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="host measurement needs an x86-64 Linux machine with a C compiler")

# the busy process ends by itself after this long, whatever becomes of the test
BUSY_SECONDS = 120
REPEAT = 0.03

BLOCKS = {
    "imul r64 chain (latency 3 on every recent x86)": "imul %rbx, %rax\n",
    "four independent adds": "add %rax, %rbx\nadd %rcx, %rdx\nadd %rsi, %rdi\nadd %r8, %r9\n",
    "two loads and a store": "mov (%rdi), %rax\nmov 64(%rdi), %rbx\nmov %rcx, 128(%rsi)\n",
    "vmulps ymm, four independent": "".join(f"vmulps %ymm1, %ymm2, %ymm{i}\n" for i in (3, 4, 5, 6)),
    "a load-op chain": "addq 64(%rbx), %rax\n",
}


@contextmanager
def busy_cpu():
    """A process spinning on the last CPU this process may use, for BUSY_SECONDS at most."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: there is no other CPU to load")
    code = (f"import os, time\nos.sched_setaffinity(0, {{{cpus[-1]}}})\n"
            f"end = time.monotonic() + {BUSY_SECONDS}\nwhile time.monotonic() < end:\n    pass\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        yield cpus[-1]
    finally:
        proc.kill()
        proc.wait()


def alike(one, other) -> bool:
    """Two measurements of a block agree: within REPEAT, or `one` said it did not reproduce
    (unstable: Zen 5 under a busy sibling read an FP block 7% fast once) and `other`'s figure
    lies within the range it reports, widened by REPEAT; or below it, where `one` kept samples
    while the core's other hardware thread was busy (it says its figure may be high: a Zen 3
    cloud guest read two loads and a store at 1.15 cycles in another guest's busy phase, 1.01
    in a quiet one)."""
    if abs(one.cycles - other.cycles) <= REPEAT * min(one.cycles, other.cycles):
        return True
    low, high = one.timing.range
    if one.stable or other.cycles > high * (1 + REPEAT):
        return False
    kept_busy = any(v.busy for v in one.variants)
    return kept_busy or other.cycles >= low * (1 - REPEAT)


@ON_X86_LINUX
@pytest.mark.slow
def test_blocks_measure_alike_twice_with_another_cpu_busy():
    from pmpredict.measure.block import measure_block
    with busy_cpu():
        runs = {name: [measure_block(text, "att") for _ in range(2)]
                for name, text in BLOCKS.items()}
    for name, (a, b) in runs.items():
        assert a.cycles and b.cycles, (name, a.error, b.error)
        assert alike(a, b) or alike(b, a), \
            (name, a.cycles, b.cycles, a.to_json()["variants"], b.to_json()["variants"])
    imul = runs["imul r64 chain (latency 3 on every recent x86)"]
    # latency 3 (Zen 5 reads 2.95-3.0): within 5%, or within the range of one that did not
    # reproduce
    assert all(measured_close(m, 3.0, 0.15) for m in imul), [m.cycles for m in imul]
