"""Measure an experiment set on this host: instantiate, generate, run, combine, cache.

The reported cycles of an experiment are for one instance of its multiset in steady
state: every unroll variant (window of about 32 / 50 / 80 instructions) is timed, its
cycles per loop iteration divided by the number of copies of the multiset in the
window, and the minimum over the variants is kept (noise on a busy machine only ever
adds time; a variant can only be slowed by an artefact, never sped up).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.isa.forms import parse_form
from pmpredict.measure.cache import ResultCache, experiment_key
from pmpredict.measure.cpu import cpu_identity, current_cpu, measurement_cpus
from pmpredict.measure.codegen import experiment_kernel
from pmpredict.measure.instantiate import DEFAULT_LENGTHS, HARNESS_ISA, instantiate, windows
from pmpredict.measure.runner import (Failure, RunOptions, Timing, check_assembles, check_host,
                                      run_kernels)

# experiments per harness binary: each binary costs a compile, a canary reference and its
# process starts (the 325 core pairs on a Zen 3 guest: 12-16 s in batches of 40, 10 s in 160)
BATCH = 160


@dataclass(frozen=True)
class MeasureOptions:
    run: RunOptions = RunOptions()
    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    batch: int = BATCH

    def cache_params(self) -> dict:
        return {**self.run.cache_params(), "lengths": list(self.lengths)}


@dataclass(frozen=True)
class Progress:
    """Where a measurement stands; handed to the `progress` callback after every experiment."""
    phase: str            # what is being measured: "experiments", "singletons", "pairs", ...
    done: int             # experiments of this phase finished (from the cache included)
    total: int            # experiments in this phase
    cached: int           # of `done`, found in the cache
    elapsed: float        # seconds this phase has been measuring
    plan: tuple = ()      # ((phase, experiments), ...) of a multi-phase job, estimates for the
                          # phases not yet started (empty: this phase is the whole job)


class MeasurementStopped(Exception):
    """`should_stop()` asked to stop: `partial` is the set with what was measured so far
    (the rest has cycles None and error "not measured"); the cache keeps it for a rerun."""

    def __init__(self, partial: ExperimentSet, phase: str):
        super().__init__(f"measurement stopped during {phase}")
        self.partial = partial
        self.phase = phase


def kernel_cycles(t: Timing) -> float | None:
    """Cycles per loop iteration from one kernel's timing (None: failed)."""
    c = t.cycles
    return c if c is not None and math.isfinite(c) else None


def combine(variants: list[tuple[int, Timing]]) -> tuple[float | None, str | None]:
    """(cycles per multiset instance, error) from the unroll variants (copies, timing)."""
    errors = [t.error for _, t in variants if t.error]
    permanent = [e for e in errors if Failure.of(e).permanent]
    if permanent:
        return None, permanent[0]
    # where some timings kept no busy sample, those alone (beside a busy sibling the
    # calibration slows too, and a latency-bound kernel would come out fast)
    quiet = [(copies, t) for copies, t in variants if not t.busy and kernel_cycles(t) is not None]
    per_instance = [c / copies for copies, t in (quiet or variants)
                    if (c := kernel_cycles(t)) is not None]
    if not per_instance:
        return None, errors[0] if errors else "no usable timing"
    return min(per_instance), None


# variants of one experiment that differ by more than this were disturbed (or caught two
# different steady states): the experiment is measured a second time, the minimum kept
VARIANT_SPREAD = 0.10


def suspicious(variants: list[tuple[int, Timing]]) -> bool:
    """Worth a second measurement: a run was kept although always interrupted or while the
    canary said the core was shared, or the unroll variants disagree."""
    if any(t.dirty or t.busy for _, t in variants):
        return True
    per = [c / copies for copies, t in variants if (c := kernel_cycles(t)) is not None]
    return len(per) > 1 and max(per) > (1 + VARIANT_SPREAD) * min(per)


def _form_errors(forms) -> dict[str, str]:
    """Forms the assembler rejects (or that cannot be instantiated), with the reason."""
    bad, lines, owners = {}, [], []
    for f in forms:
        try:
            parse_form(f, HARNESS_ISA)
            w = instantiate([(f, 1)], 1)
        except ValueError as exc:
            bad[f] = Failure.NOT_INSTANTIATED.error(exc)
            continue
        lines.append(w.lines[0])
        owners.append(f)
    for f, err in zip(owners, check_assembles(lines)):
        if err:
            bad[f] = Failure.NOT_ASSEMBLED.error(err)
    return bad


def _window_error(counts, lengths) -> str | None:
    """Why forms that instantiate alone cannot share a window, or None (vzeroall pins every
    vector register: a form that needs one has none left)."""
    try:
        windows(counts, lengths)
    except ValueError as exc:
        return Failure.NOT_INSTANTIATED.error(exc)
    return None


def measure_experiment_set(experiments: ExperimentSet, *, cache_dir: str | None,
                           progress=None, options: MeasureOptions = MeasureOptions(),
                           should_stop=None, phase: str = "experiments") -> ExperimentSet:
    """The set with `cycles` filled in by timing on this host.

    A failed experiment keeps cycles=None and other["error"] says why (SIGILL:
    unsupported instruction, does not assemble, crash, timeout). Results are cached
    in `cache_dir` (None: no cache) under a content hash, so a rerun after an
    interruption only measures what is missing. `progress(Progress)` is called after
    each experiment. `should_stop()` is asked after every kernel: when it says yes, the
    harness is stopped and MeasurementStopped carries what was measured.
    """
    if experiments.isa not in (HARNESS_ISA, "", None):
        raise ValueError(f"only {HARNESS_ISA} experiments can be measured here, not {experiments.isa}")
    check_host()
    cpu = cpu_identity()
    params = options.cache_params()
    cache = ResultCache(cache_dir, cpu)
    keys = [experiment_key(e.counts, cpu, params) for e in experiments.experiments]
    results, pending = _from_cache(cache, keys, experiments.experiments)
    total = len(set(keys))
    cached = total - len(pending)
    done = cached
    started = time.monotonic()

    def report() -> None:
        if progress:
            progress(Progress(phase, done, total, cached, time.monotonic() - started))

    def stop_now() -> None:
        if should_stop is not None and should_stop():
            cache.close()
            raise MeasurementStopped(_filled(experiments, keys, results), phase)

    report()
    stop_now()
    for k, why in _unmeasurable(pending, options.lengths).items():
        results[k] = (None, why)
        cache.put(k, None, why)
        del pending[k]
        done += 1
    order = list(pending)

    def finish(k: str, variants: list) -> None:
        nonlocal done
        cycles, error = combine(variants)
        if cycles is not None:
            cycles = round(cycles, 5)
        results[k] = (cycles, error)
        # transient failures (timeouts, crashes) are measured again next time
        if cycles is not None or Failure.of(error).permanent:
            cache.put(k, cycles, error)
        done += 1
        report()

    try:
        for start in range(0, len(order), options.batch):
            stop_now()
            _measure_batch(order[start:start + options.batch], pending, options, finish, stop_now)
    finally:
        cache.close()
    return _filled(experiments, keys, results)


def _from_cache(cache: ResultCache, keys: list[str], experiments) -> tuple[dict, dict]:
    """(key -> (cycles, error) of what the cache holds, key -> Experiment still to measure)."""
    results: dict[str, tuple[float | None, str | None]] = {}
    for k in keys:
        hit = cache.get(k)
        if hit is not None:
            results[k] = (hit.get("cycles"), hit.get("error"))
    pending: dict[str, Experiment] = {}
    for k, e in zip(keys, experiments):
        if k not in results and k not in pending:
            pending[k] = e
    return results, pending


def _unmeasurable(pending: dict, lengths) -> dict[str, str]:
    """key -> why, for the experiments that cannot be measured: a form that does not
    instantiate or assemble, or forms that cannot share a window."""
    bad_forms = _form_errors({f for e in pending.values() for f in e.forms()})
    out = {}
    for k, e in pending.items():
        wrong = [f for f in e.forms() if f in bad_forms]
        why = bad_forms[wrong[0]] if wrong else _window_error(e.counts, lengths)
        if why:
            out[k] = why
    return out


def _retry_options(run: RunOptions) -> RunOptions:
    """The second measurement of a disturbed experiment runs on another CPU where there is one:
    a process busy on one vCPU (often the SMT sibling of the other, in a small VM) shares it
    with the harness by time slices, and in its slices the sibling rests."""
    if run.cpu >= 0:
        return run
    cpus = measurement_cpus()
    if len(cpus) < 2:
        return run
    here = current_cpu()
    return replace(run, cpu=next((c for c in cpus if c != here), cpus[-1]))


def _measure_batch(chunk: list[str], pending: dict, options: MeasureOptions, finish,
                   stop_now) -> None:
    """Measure the experiments `chunk` (cache keys) in one harness binary; those whose unroll
    variants look disturbed are measured once more at the end (on another CPU where there is
    one), the minimum kept."""
    collected: dict[str, list] = {k: [] for k in chunk}
    retry: list[str] = []
    for attempt in (0, 1):
        todo = chunk if attempt == 0 else retry
        if not todo:
            break
        kernels, owner = [], []
        for j, k in enumerate(todo):
            for w in windows(pending[k].counts, options.lengths):
                kernels.append(experiment_kernel(f"pm_e{j}_c{w.copies}", w))
                owner.append((k, w.copies))
        expected = {k: sum(1 for o, _ in owner if o == k) for k in todo}
        got = {k: 0 for k in todo}

        def on_result(i: int, timing: Timing, attempt=attempt, owner=owner,
                      expected=expected, got=got) -> None:
            k, copies = owner[i]
            collected[k].append((copies, timing))
            got[k] += 1
            if got[k] == expected[k]:
                if attempt == 0 and suspicious(collected[k]):
                    retry.append(k)          # measured once more at the end of the batch
                else:
                    finish(k, collected[k])
            stop_now()

        run_kernels(kernels, options.run if attempt == 0 else _retry_options(options.run),
                    on_result)


def _filled(experiments: ExperimentSet, keys: list[str], results: dict) -> ExperimentSet:
    out = []
    for k, e in zip(keys, experiments.experiments):
        cycles, error = results.get(k, (None, "not measured"))
        other = {key: v for key, v in e.other.items() if key != "error"}
        if error:
            other["error"] = error
        out.append(replace(e, cycles=cycles, other=other))
    return ExperimentSet(experiments.forms, tuple(out), "x86", experiments.source)
