"""Asking the predictors of a campaign: the cache first, then the predictors themselves, in this
process or on a Dask cluster.

`Evaluator(predictors, store, runner)` is the campaign's evaluate(blocks) callable: a float64
array (blocks x predictors) of cycles, NaN where a predictor failed. Failures are kept apart,
by predictor and kind, with the blocks they happened on: a peer that crashes is a finding.

Runners: `InProcess` asks each predictor in this process; `DaskRunner` sends chunks of blocks
to the workers of a Dask cluster (a local one by default) and keeps each predictor on the
workers between calls (scattered once). A predictor that must run on this host (the hardware)
always runs here, one call at a time, and only after the cluster's work of the same call is
back: timing the hardware while the workers compute beside it would time them too.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from pmpredict.cluster import Cluster
from pmpredict.anica.predictors import INVALID, BlockPredictor, Outcome

DEFAULT_CHUNK = 32              # blocks per task on the cluster
KEPT_PER_KIND = 5               # failed blocks kept per predictor and kind, for the report


@dataclass
class FailureLog:
    """How often each predictor failed, by kind, with the first few blocks and messages."""
    counts: dict = field(default_factory=lambda: defaultdict(int))      # (label, kind) -> n
    examples: dict = field(default_factory=lambda: defaultdict(list))   # (label, kind) -> [...]

    def add(self, label: str, lines, outcome: Outcome) -> None:
        key = (label, outcome.failure)
        self.counts[key] += 1
        if len(self.examples[key]) < KEPT_PER_KIND:
            self.examples[key].append({"block": list(lines), "message": outcome.message})

    def to_json(self) -> list[dict]:
        return [{"predictor": label, "kind": kind, "count": n,
                 "examples": self.examples[(label, kind)]}
                for (label, kind), n in sorted(self.counts.items(), key=lambda kv: -kv[1])]

    @classmethod
    def from_json(cls, items) -> "FailureLog":
        log = cls()
        for item in items or ():
            key = (item["predictor"], item["kind"])
            log.counts[key] = item["count"]
            log.examples[key] = list(item["examples"])
        return log


def _predict_chunk(predictor: BlockPredictor, blocks) -> list[Outcome]:
    """A task on a worker: the predictor (kept there between tasks) on a chunk of blocks."""
    return predictor.predict(blocks)


class InProcess:
    """Every predictor in this process, in turn."""

    def start(self, predictor: BlockPredictor, blocks):
        return lambda: predictor.predict(blocks)

    def close(self) -> None:
        pass


class DaskRunner:
    """Chunks of blocks as tasks on a Dask cluster: `address` an existing scheduler, else a
    local cluster of `workers` processes (one thread each)."""

    def __init__(self, address: str | None = None, workers: int = 2,
                 chunk: int = DEFAULT_CHUNK, cluster: Cluster | None = None):
        """cluster: one already open (pmpredict.cluster.Cluster), else one is opened here."""
        self.chunk = chunk
        self.cluster = cluster or Cluster(address, workers)
        self.client = self.cluster.client
        self._scattered: dict[int, object] = {}

    def start(self, predictor: BlockPredictor, blocks):
        if id(predictor) not in self._scattered:
            self._scattered[id(predictor)] = self.client.scatter(predictor, broadcast=True)
        remote = self._scattered[id(predictor)]
        futures = [self.client.submit(_predict_chunk, remote, blocks[i:i + self.chunk],
                                      pure=False)
                   for i in range(0, len(blocks), self.chunk)]

        def collect():
            return [o for part in self.client.gather(futures) for o in part]
        return collect

    def close(self) -> None:
        self.cluster.close()


class Evaluator:
    """evaluate(blocks) -> cycles[blocks, predictors] (NaN: failed), through the cache."""

    def __init__(self, predictors: list[BlockPredictor], store=None, runner=None):
        self.predictors = predictors
        self.identities = [p.identity() for p in predictors]
        self.store = store
        self.runner = runner or InProcess()
        self.failures = FailureLog()
        self.asked = [0] * len(predictors)        # blocks each predictor was asked (not cached)
        self.cached = [0] * len(predictors)

    def __call__(self, blocks) -> np.ndarray:
        lines = [b.lines() for b in blocks]           # with the lines setting constant bases
        out = np.full((len(lines), len(self.predictors)), np.nan)
        pending = []                                 # (column, rows, collect)
        for col, (predictor, identity) in enumerate(zip(self.predictors, self.identities)):
            known = self.store.get_many(identity, lines) if self.store else [None] * len(lines)
            rows = [i for i, o in enumerate(known) if o is None]
            for i, o in enumerate(known):
                if o is not None:
                    self._record(out, i, col, lines[i], o)
            self.cached[col] += len(lines) - len(rows)
            if rows:
                runner = InProcess() if predictor.local_only else self.runner
                pending.append((col, rows, predictor.local_only,
                                runner.start(predictor, [lines[i] for i in rows])))
        # the cluster's work first, the hardware after it (see the module's docstring)
        for col, rows, _, collect in sorted(pending, key=lambda p: p[2]):
            outcomes = collect()
            self.asked[col] += len(rows)
            if self.store:
                self.store.put_many(self.identities[col], [lines[i] for i in rows], outcomes)
            for i, o in zip(rows, outcomes):
                self._record(out, i, col, lines[i], o)
        return out

    def _record(self, out, i, col, lines, outcome: Outcome) -> None:
        if outcome.cycles is not None and math.isfinite(outcome.cycles) and outcome.cycles > 0:
            out[i, col] = outcome.cycles
        else:
            self.failures.add(self.predictors[col].label, lines,
                              outcome if outcome.failure else
                              Outcome.failed(INVALID, f"answered {outcome.cycles!r}"))

    def close(self) -> None:
        self.runner.close()
        if self.store:
            self.store.close()
