"""Where the online methods (cegis, counters) get their measurements: an oracle answers the
reciprocal throughput of the experiments it is asked for; a log keeps every answer.

* ModelOracle(model, noise, rng): a model as ground truth, cycles by the exact bottleneck
  simulator (pmpredict.predict.throughput), optionally times (1 + u), u uniform in
  [-noise, noise]. The noise of an experiment depends only on the oracle's seed and the
  experiment, not on the order of the questions, so a resumed run hears what an
  uninterrupted one heard.
* HostOracle(...): this machine, through pmpredict.measure (the measurement cache: asking
  again costs nothing, a stopped run loses nothing).

An experiment is a tuple of (form, count) pairs sorted by form (Experiment.counts).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from pmpredict.model.experiments import Experiment, ExperimentSet


class OracleError(Exception):
    """The oracle cannot answer (a form this host cannot run, the harness fails): one line."""


class OnlineRunStopped(Exception):
    """should_stop() ended an online inference run (cegis, counters; its deadline) between or
    during measurements or solving."""


def canonical(counts) -> tuple[tuple[str, int], ...]:
    """An experiment as sorted (form, count) pairs, counts > 0; from a dict or pairs."""
    items = counts.items() if isinstance(counts, dict) else counts
    merged: dict[str, int] = {}
    for f, n in items:
        if int(n) > 0:
            merged[f] = merged.get(f, 0) + int(n)
    return tuple(sorted(merged.items()))


class Oracle:
    """The interface: `describe()` for provenance, `cycles(experiments)` answers a batch
    (None: could not be measured, with `errors[experiment]` saying why)."""

    def describe(self) -> dict:
        raise NotImplementedError

    def cycles(self, experiments) -> list[float | None]:
        raise NotImplementedError


class ModelOracle(Oracle):
    def __init__(self, model, noise: float = 0.0, rng=None, name: str | None = None):
        if not 0.0 <= noise < 1.0:
            raise ValueError(f"noise must be in [0, 1), not {noise}")
        self.model = model
        self.noise = float(noise)
        if rng is None:
            rng = np.random.default_rng(0)
        elif isinstance(rng, (int, np.integer)):
            rng = np.random.default_rng(int(rng))
        self._base = int(rng.integers(0, 2**63 - 1))
        self.name = name or model.name
        self.errors: dict = {}

    def describe(self) -> dict:
        return {"oracle": "model", "model": self.name, "noise": self.noise}

    def _factor(self, exp) -> float:
        if not self.noise:
            return 1.0
        digest = hashlib.sha256(json.dumps([self._base, list(exp)]).encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return 1.0 + float(rng.uniform(-self.noise, self.noise))

    def cycles(self, experiments) -> list[float | None]:
        # deferred: the simulator loads numba
        from pmpredict.predict.throughput import simulate
        exps = [canonical(e) for e in experiments]
        unknown = [f for e in exps for f, _ in e if f not in self.model.uops]
        if unknown:
            raise OracleError(f"form {unknown[0]!r} is not in the oracle model {self.name!r}")
        if not exps:
            return []
        cyc, _ = simulate(self.model, ExperimentSet((), tuple(Experiment(e) for e in exps)))
        return [float(c) * self._factor(e) for c, e in zip(cyc, exps)]


class HostOracle(Oracle):
    """Cycles measured on this host by pmpredict.measure, through its cache."""

    def __init__(self, cache_dir: str | None, *, should_stop=None, progress=None):
        self.cache_dir = cache_dir
        self.should_stop = should_stop
        self.progress = progress
        self.errors: dict = {}

    def describe(self) -> dict:
        # deferred: the CPU identity reads /proc through the measure package
        from pmpredict.measure.cpu import cpu_identity
        return {"oracle": "host", "cpu": cpu_identity()}

    def cycles(self, experiments) -> list[float | None]:
        # deferred: measuring loads numpy and the harness
        from pmpredict.measure import HostError, MeasurementStopped, measure_experiment_set
        exps = [canonical(e) for e in experiments]
        if not exps:
            return []
        forms = tuple(sorted({f for e in exps for f, _ in e}))
        todo = ExperimentSet(forms, tuple(Experiment(e) for e in exps), "x86", "pmpredict infer")
        try:
            done = measure_experiment_set(todo, cache_dir=self.cache_dir, progress=self.progress,
                                          should_stop=self.should_stop, phase="cegis")
        except HostError as exc:
            raise OracleError(f"cannot measure on this machine: {exc}") from None
        except MeasurementStopped:
            raise OnlineRunStopped() from None
        out = []
        for e, m in zip(exps, done.experiments):
            if m.cycles is None:
                self.errors[e] = m.other.get("error") or "not measured"
            out.append(m.cycles)
        return out


class MeasurementLog:
    """Every experiment measured in a run, in order, with its cycles (and uops where a
    counter was read): the provenance of the result, the checkpoint, and a cache (an
    experiment is never measured twice)."""

    def __init__(self, records=()):
        self.records: dict[tuple, dict] = {}
        for r in records:
            self.records[canonical(r["forms"])] = dict(r)

    def get(self, exp):
        return self.records.get(canonical(exp))

    def add(self, exp, cycles, **extra) -> dict:
        key = canonical(exp)
        rec = self.records.get(key)
        if rec is None:
            rec = {"forms": dict(key), "cycles": cycles}
            self.records[key] = rec
        rec.update({k: v for k, v in extra.items() if v is not None})
        return rec

    def measure(self, oracle: Oracle, experiments) -> list[float | None]:
        """Cycles of each experiment, from the log or (the rest in one batch) the oracle."""
        keys = [canonical(e) for e in experiments]
        missing = list(dict.fromkeys(k for k in keys if k not in self.records))
        if missing:
            for k, c in zip(missing, oracle.cycles(missing)):
                self.add(k, None if c is None else round(float(c), 9))
        return [self.records[k]["cycles"] for k in keys]

    def to_json(self) -> list[dict]:
        return [dict(r) for r in self.records.values()]

    def __len__(self) -> int:
        return len(self.records)
