"""The inference engine compiled ahead, in a process of its own (pmpredict.host.warm): what
it leaves in numba's cache is what a real inference loads, and it only takes idle CPU time."""

import os
import subprocess
import sys
import textwrap

import pytest

from pmpredict.host import warm
from pmpredict.measure.cpu import measurement_cpus, share_a_core

# a different problem from warm's own: the host's port count, more forms, a three-level truth,
# fitted as the host model fits new forms too
_INFER_AND_COUNT = textwrap.dedent("""
    import json
    from pmpredict.host.extend import FINAL_VOLUME_WEIGHT
    from pmpredict.host.workflow import HOST_PORTS
    from pmpredict.infer import refine
    from pmpredict.infer.pmevo import Inference, InferConfig
    from pmpredict.infer.prepare import prepare
    from pmpredict.infer.synthetic import all_experiments, random_machine
    from pmpredict.model.experiments import Experiment, ExperimentSet
    truth = random_machine(3, 6, 7, 2, r_max=4.0)
    exps = all_experiments(truth.forms, 2)
    labelled = ExperimentSet(exps.forms, tuple(Experiment(e.counts, 1.0 + e.length)
                                               for e in exps.experiments), exps.isa)
    problem = prepare(labelled, HOST_PORTS, r_max=4.0).problem
    Inference(problem, InferConfig(seed=1, final_volume_weight=FINAL_VOLUME_WEIGHT,
                                   max_sweeps=2)).run()
    print(json.dumps({f.__name__: [sum(f.stats.cache_hits.values()),
                                   sum(f.stats.cache_misses.values())]
                      for f in (refine.candidate_scores, refine.relative_errors)}))
""")


def _run(code_or_module: list[str], cache: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    return subprocess.run([sys.executable, *code_or_module], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_what_the_warm_process_compiles_a_real_inference_loads_from_the_cache(tmp_path):
    import json
    cache = str(tmp_path / "numba")
    cold = json.loads(_run(["-c", _INFER_AND_COUNT], str(tmp_path / "cold")).stdout)
    assert all(misses > 0 for _, misses in cold.values())     # the premise: it compiles
    done = _run(["-m", "pmpredict.host.warm"], cache)
    assert done.returncode == 0, done.stderr
    warmed = json.loads(_run(["-c", _INFER_AND_COUNT], cache).stdout)
    assert all(hits > 0 and misses == 0 for hits, misses in warmed.values()), warmed


def _topology(root, siblings: dict[int, str]) -> str:
    for cpu, text in siblings.items():
        (root / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (root / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(text + "\n")
    return str(root)


def test_cpus_share_a_core_where_the_kernel_lists_them_as_siblings(tmp_path):
    smt = _topology(tmp_path / "smt", {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"})
    assert share_a_core([0, 2], smt) and share_a_core([0, 1, 2, 3], smt)
    assert not share_a_core([0, 1], smt) and not share_a_core([3], smt)
    single = _topology(tmp_path / "single", {0: "0", 1: "1"})
    assert not share_a_core([0, 1], single)
    assert not share_a_core([0, 1], str(tmp_path / "none"))      # no topology: not known to


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="no SCHED_IDLE on this OS")
def test_the_warm_process_runs_only_on_idle_cpu_time_until_waited_for_and_stops():
    process = warm.start()
    if share_a_core(measurement_cpus()):
        assert process is None            # it would slow the harness on the sibling thread
        return
    assert process is not None
    try:
        assert os.sched_getscheduler(process.pid) == os.SCHED_IDLE
    finally:
        warm.stop(process)
    assert process.poll() is not None
    warm.stop(None)                       # nothing started: nothing to do
    warm.wait(None)
