"""Compile the inference engine into numba's cache, from a tiny synthetic problem.

A fresh install has no compiled code: the first host model on a new core spent about 7 s of its
minute compiling (an Intel Xeon guest, 2026-12-03: 13.2 s for the inference from cached
measurements, 6.2 s once compiled). The host model's bootstrap starts this module as a process
of its own at the lowest priority (start) and waits for it (wait) before its own inference,
so the compiling runs while the harness measures, on a CPU the harness is not using at the
time. Only the cache files are shared: each function compiled for the argument types the
real inference passes, which the tiny problem's arrays have too.

    python -m pmpredict.host.warm        # compile (a no-op once cached)
"""

from __future__ import annotations

import os
import subprocess
import sys

# the host model infers on this many ports (host/workflow.HOST_PORTS): the candidate lists
# differ in size, not in type, so any count compiles the same code
_PORTS = 4


def compile_engine() -> None:
    """Run each numba function of the inference and the fitting once, on a problem of five
    forms: a no-op where numba's cache already has them."""
    # deferred: loading numba is what the caller of start() avoids
    from pmpredict.host.extend import FINAL_VOLUME_WEIGHT
    from pmpredict.infer.pmevo import Inference, InferConfig
    from pmpredict.infer.prepare import prepare
    from pmpredict.infer.synthetic import all_experiments
    from pmpredict.model.experiments import Experiment, ExperimentSet

    forms = tuple(f"W{i}" for i in range(5))
    unlabelled = all_experiments(forms, 2)
    # any cycles compile the same code: these need no simulator (which the inference does not
    # call, and which would be compiled for nothing)
    labelled = ExperimentSet(forms, tuple(Experiment(e.counts, 0.5 * e.length + 0.25 * i % 1)
                                          for i, e in enumerate(unlabelled.experiments)),
                             unlabelled.isa)
    problem = prepare(labelled, _PORTS, r_max=4.0).problem
    config = InferConfig(seed=0, final_volume_weight=FINAL_VOLUME_WEIGHT, max_sweeps=2)
    Inference(problem, config).run()


def start() -> subprocess.Popen | None:
    """compile_engine in a process of its own, scheduled only when a CPU would idle
    (SCHED_IDLE): the harness's processes always come first. None where it cannot start, and
    where two CPUs the harness uses are threads of one core: a compile on the one would slow
    what the harness times on the other (it waits for quiet phases, and the front-end probes
    read half the width), so there the inference compiles when it runs, as without this."""
    # deferred: the measurement layer is only loaded where a model is measured
    from pmpredict.measure.cpu import measurement_cpus, share_a_core
    if share_a_core(measurement_cpus()):
        return None
    def idle():
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            os.nice(19)
    try:
        return subprocess.Popen([sys.executable, "-m", "pmpredict.host.warm"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, preexec_fn=idle)
    except OSError:
        return None


def wait(process: subprocess.Popen | None) -> None:
    """Wait for a started compile to finish (its work is in the cache then); a compile that
    failed leaves the caller to compile for itself, as without it."""
    if process is None or process.poll() is not None:
        return
    try:
        # the normal policy now: the caller has stopped measuring and waits for it
        os.sched_setscheduler(process.pid, os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        pass
    process.wait()


def stop(process: subprocess.Popen | None) -> None:
    """End a compile still running (the caller stopped or failed before it needed it)."""
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


if __name__ == "__main__":
    compile_engine()
