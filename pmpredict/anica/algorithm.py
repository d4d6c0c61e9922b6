"""Interestingness, minimisation and generalisation (sections 8.1.1 and 8.1.3).

Predictors are one callable, `evaluate(blocks) -> array (len(blocks), P)`: cycles per
iteration of each block by each predictor, NaN where a predictor failed. Predictor 0 is the
reference; a block is interesting when some other predictor differs from it by at least
`threshold` relative to the smaller of the two, and no predictor failed on it. Every call
passes a batch (all candidates of a minimisation round, all samples of a generalisation step),
because a call may go to a cluster.

Minimisation and generalisation are resumable step machines (`Minimisation`,
`Generalisation`): each `step` makes at most one evaluate call, and their state is plain data
(`to_json`), so a campaign can stop between any two calls and resume exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple, Sequence

import numpy as np

from pmpredict.anica.concrete import STANDARD_BLOCKS, ConcreteBlock
from pmpredict.anica.domain import (LIFT_ORDER, TOP, AbstractBlock, abstract,
                                    expansion_feature, expansions, same_concretisation, sample,
                                    universe)

Evaluate = Callable[[Sequence[ConcreteBlock]], np.ndarray]
DEFAULT_THRESHOLD = 0.5
DEFAULT_SAMPLES = 100
DEFAULT_ACCEPT_RATIO = 0.97
WITNESSES = 3
# a sampling round that yields fewer blocks than this share of those asked for (constraints
# too hard to meet) rejects its expansion rather than judge on a handful
MIN_SAMPLE_SHARE = 0.5


def disagreement(row) -> float:
    """The largest relative difference |c0 - cp| / min(c0, cp) of a predictor p > 0 to the
    reference predictor 0; NaN when any predictor failed (or there is nothing to compare)."""
    row = np.asarray(row, dtype=float)
    if row.size < 2 or np.isnan(row).any():
        return math.nan
    reference, others = row[0], row[1:]
    low = np.minimum(reference, others)
    diff = np.abs(others - reference)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(low > 0, diff / np.where(low > 0, low, 1.0),
                            np.where(diff > 0, np.inf, 0.0))
    return float(relative.max())


def is_interesting(cycles_row, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """Whether a block's predictions disagree by at least `threshold` (a failed block never is)."""
    d = disagreement(cycles_row)
    return not math.isnan(d) and d >= threshold


def evaluate_batch(evaluate: Evaluate, blocks: Sequence[ConcreteBlock]) -> np.ndarray:
    """evaluate(blocks) as a float array of one row per block (checked)."""
    if not blocks:
        return np.zeros((0, 0))
    rows = np.asarray(evaluate(list(blocks)), dtype=float)
    if rows.ndim != 2 or rows.shape[0] != len(blocks):
        raise ValueError(f"evaluate returned shape {rows.shape} for {len(blocks)} blocks; "
                         "expected (blocks, predictors)")
    return rows


def row_json(row) -> list:
    """A cycles row in strict JSON: None for a failed predictor."""
    return [None if math.isnan(x) else float(x) for x in np.asarray(row, dtype=float)]


def row_from(data) -> np.ndarray:
    return np.array([math.nan if x is None else x for x in data], dtype=float)


def number_json(x: float):
    """A float in strict JSON: None for NaN, "inf" / "-inf"."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def number_from(data) -> float:
    return math.nan if data is None else float(data)


class Witness(NamedTuple):
    """A concrete block and its cycles per predictor (NaN: the predictor failed); unpacks as
    `block, cycles`."""
    block: ConcreteBlock
    cycles: tuple[float, ...]

    def to_json(self) -> dict:
        return {"block": self.block.to_json(), "cycles": row_json(self.cycles)}

    @classmethod
    def from_json(cls, data: dict) -> "Witness":
        return cls(ConcreteBlock.from_json(data["block"]), tuple(row_from(data["cycles"])))


# --- minimisation --------------------------------------------------------------------------

@dataclass
class Minimisation:
    """Greedy minimisation: while some block with one instruction fewer is still interesting,
    continue with the first such (in instruction order). Each round evaluates all candidates of
    the current block in one call."""
    block: ConcreteBlock
    row: np.ndarray | None = None
    threshold: float = DEFAULT_THRESHOLD
    calls: int = 0
    done: bool = False

    def step(self, evaluate: Evaluate) -> int:
        """One round (at most one evaluate call); the number of blocks evaluated."""
        if self.done:
            return 0
        if len(self.block) <= 1:
            self.done = True
            return 0
        candidates = [self.block.without(i) for i in range(len(self.block))]
        rows = evaluate_batch(evaluate, candidates)
        self.calls += len(candidates)
        for candidate, row in zip(candidates, rows):
            if is_interesting(row, self.threshold):
                self.block, self.row = candidate, row
                break
        else:
            self.done = True
        return len(candidates)

    def to_json(self) -> dict:
        return {"block": self.block.to_json(),
                "row": None if self.row is None else row_json(self.row),
                "threshold": self.threshold, "calls": self.calls, "done": self.done}

    @classmethod
    def from_json(cls, data: dict) -> "Minimisation":
        return cls(ConcreteBlock.from_json(data["block"]),
                   None if data["row"] is None else row_from(data["row"]),
                   data["threshold"], data["calls"], data["done"])


@dataclass(frozen=True)
class MinimiseResult:
    block: ConcreteBlock
    row: np.ndarray | None            # its cycles (None if never evaluated: nothing dropped)
    calls: int                        # blocks evaluated


def minimise(block: ConcreteBlock, evaluate: Evaluate, threshold: float = DEFAULT_THRESHOLD,
             row=None) -> MinimiseResult:
    """Drop instructions one at a time while the block stays interesting."""
    job = Minimisation(block, None if row is None else np.asarray(row, dtype=float), threshold)
    while not job.done:
        job.step(evaluate)
    return MinimiseResult(job.block, job.row, job.calls)


# --- generalisation ------------------------------------------------------------------------

@dataclass
class Step:
    """One decision of a generalisation: an expansion tried (or taken for free)."""
    name: str
    accepted: bool
    interesting_ratio: float | None   # None: not sampled (it changed nothing gamma holds)
    samples: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "accepted": self.accepted,
                "interesting_ratio": self.interesting_ratio, "samples": self.samples}

    @classmethod
    def from_json(cls, data: dict) -> "Step":
        return cls(data["name"], data["accepted"], data["interesting_ratio"], data["samples"])


@dataclass(frozen=True)
class GeneralisationResult:
    abstract: AbstractBlock
    interesting_ratio: float          # of the last accepted sampling (beta's if none was)
    samples: int                      # blocks in that sampling
    mean_disagreement: float          # mean disagreement of those blocks (failed ones left out)
    calls: int                        # blocks evaluated in all
    pertinent: bool                   # whether beta(block) itself was interesting
    steps: tuple[Step, ...]
    witnesses: tuple[Witness, ...]    # interesting blocks of the last accepted sampling


@dataclass
class Generalisation:
    """Algorithm 8.2: from beta(block), try expansions in random order; take one when at least
    accept_ratio of `samples` blocks sampled from the expanded block are interesting; a
    rejected expansion is never tried again.

    An expansion that leaves gamma unchanged over the schemes (a feature already implied by
    the others) needs no sampling: the choice among available expansions is free in the
    algorithm, and these are taken only when no other expansion is left, the most specific
    feature first (LIFT_ORDER), so that a result reads in general terms ("mnemonic add"
    rather than one add form) without wasting calls. At the end an edit-distance bound is
    lowered to the least one with the same schemes. `blocks` is the block mode beta and the
    samples are of (concrete.BLOCK_MODES)."""
    origin: ConcreteBlock
    threshold: float = DEFAULT_THRESHOLD
    samples: int = DEFAULT_SAMPLES
    accept_ratio: float = DEFAULT_ACCEPT_RATIO
    current: AbstractBlock | None = None
    rejected: set = field(default_factory=set)
    started: bool = False
    done: bool = False
    pertinent: bool = False
    interesting_ratio: float = math.nan
    sampled: int = 0
    mean_disagreement: float = math.nan
    calls: int = 0
    steps: list = field(default_factory=list)
    witnesses: list = field(default_factory=list)
    blocks: str = STANDARD_BLOCKS

    def __post_init__(self):
        if self.current is None:
            self.current = abstract(self.origin, self.blocks)
        self._universe = None

    def _schemes(self, schemes):
        """The universe to sample from: `schemes`, plus the origin's own forms if it lacks
        them (else beta(origin) would represent nothing there)."""
        if self._universe is None or self._universe[0] is not schemes:
            self._universe = (schemes, universe(schemes).including(self.origin.forms))
        return self._universe[1]

    def _round(self, candidate: AbstractBlock, schemes, evaluate: Evaluate, rng):
        """Sample and evaluate one candidate: (ratio, blocks, rows); ratio 0 when too few
        blocks could be sampled."""
        blocks = sample(candidate, schemes, rng, self.samples, self.blocks)
        if len(blocks) < max(1, math.ceil(MIN_SAMPLE_SHARE * self.samples)):
            return 0.0, blocks, None
        rows = evaluate_batch(evaluate, blocks)
        self.calls += len(blocks)
        flags = [is_interesting(r, self.threshold) for r in rows]
        return sum(flags) / len(blocks), blocks, rows

    def _accept(self, ratio: float, blocks, rows) -> None:
        self.interesting_ratio, self.sampled = ratio, len(blocks)
        values = [disagreement(r) for r in rows]
        finite = [v for v in values if not math.isnan(v)]
        self.mean_disagreement = float(np.mean(finite)) if finite else math.nan
        self.witnesses = [Witness(b, tuple(float(x) for x in r)) for b, r in zip(blocks, rows)
                          if is_interesting(r, self.threshold)][:WITNESSES]

    def step(self, schemes, evaluate: Evaluate, rng) -> int:
        """Make progress up to and including one evaluate call; the blocks evaluated."""
        if self.done:
            return 0
        schemes = self._schemes(schemes)
        if not self.started:
            self.started = True
            ratio, blocks, rows = self._round(self.current, schemes, evaluate, rng)
            if rows is not None:
                self._accept(ratio, blocks, rows)
            self.pertinent = rows is not None and ratio >= self.accept_ratio
            self.steps.append(Step("beta", self.pertinent, ratio, len(blocks)))
            if not self.pertinent:
                self.done = True
            return len(blocks) if rows is not None else 0
        while True:
            available = [(n, e) for n, e in expansions(self.current) if n not in self.rejected]
            if not available:
                self._finish(schemes)
                return 0
            effective, free = [], []
            for name, expanded in available:
                same = same_concretisation(self.current, expanded, schemes)
                (free if same else effective).append((name, expanded))
            if not effective:
                name, expanded = min(free, key=lambda item: _lift_rank(item[0]))
                self.current = expanded
                self.steps.append(Step(name, True, None))
                continue
            name, expanded = effective[int(rng.integers(len(effective)))]
            ratio, blocks, rows = self._round(expanded, schemes, evaluate, rng)
            accepted = rows is not None and ratio >= self.accept_ratio
            if accepted:
                self.current = expanded
                self._accept(ratio, blocks, rows)
            else:
                self.rejected.add(name)
            self.steps.append(Step(name, accepted, ratio, len(blocks)))
            return len(blocks) if rows is not None else 0

    def _finish(self, schemes) -> None:
        """Lower each edit-distance bound to the least one representing the same schemes."""
        u = universe(schemes)
        tidy = []
        for ai in self.current.instructions:
            if ai.mnemonic is not TOP and ai.mnemonic[1] > 0:
                same = u.admitted(ai)
                base, d = ai.mnemonic
                for lower in range(d):
                    candidate = _with(ai, "mnemonic", (base, lower))
                    if u.admitted(candidate) == same:
                        ai = candidate
                        break
            tidy.append(ai)
        self.current = replace(self.current, instructions=tuple(tidy))
        self.done = True

    def result(self) -> GeneralisationResult:
        return GeneralisationResult(self.current, self.interesting_ratio, self.sampled,
                                    self.mean_disagreement, self.calls, self.pertinent,
                                    tuple(self.steps), tuple(self.witnesses))

    def to_json(self) -> dict:
        return {"origin": self.origin.to_json(), "threshold": self.threshold,
                "samples": self.samples, "accept_ratio": self.accept_ratio,
                "current": self.current.to_json(), "rejected": sorted(self.rejected),
                "started": self.started, "done": self.done, "pertinent": self.pertinent,
                "interesting_ratio": number_json(self.interesting_ratio),
                "sampled": self.sampled,
                "mean_disagreement": number_json(self.mean_disagreement),
                "calls": self.calls, "steps": [s.to_json() for s in self.steps],
                "witnesses": [w.to_json() for w in self.witnesses], "blocks": self.blocks}

    @classmethod
    def from_json(cls, data: dict) -> "Generalisation":
        return cls(ConcreteBlock.from_json(data["origin"]), data["threshold"], data["samples"],
                   data["accept_ratio"], AbstractBlock.from_json(data["current"]),
                   set(data["rejected"]), data["started"], data["done"], data["pertinent"],
                   number_from(data["interesting_ratio"]), data["sampled"],
                   number_from(data["mean_disagreement"]), data["calls"],
                   [Step.from_json(s) for s in data["steps"]],
                   [Witness.from_json(w) for w in data["witnesses"]],
                   data.get("blocks", STANDARD_BLOCKS))


def _lift_rank(name: str) -> int:
    feature = expansion_feature(name)
    return LIFT_ORDER.index(feature) if feature in LIFT_ORDER else len(LIFT_ORDER)


def _with(ai, feature: str, value):
    return replace(ai, **{feature: value})


def generalise(block: ConcreteBlock, schemes, evaluate: Evaluate, rng, *,
               threshold: float = DEFAULT_THRESHOLD, samples: int = DEFAULT_SAMPLES,
               accept_ratio: float = DEFAULT_ACCEPT_RATIO,
               blocks: str = STANDARD_BLOCKS) -> GeneralisationResult:
    """Generalise an interesting block into an abstract block (Algorithm 8.2), sampling blocks
    of block mode `blocks`."""
    job = Generalisation(block, threshold, samples, accept_ratio, blocks=blocks)
    while not job.done:
        job.step(schemes, evaluate, rng)
    return job.result()


__all__ = ["disagreement", "is_interesting", "minimise", "generalise", "Minimisation",
           "Generalisation", "MinimiseResult", "GeneralisationResult", "Witness", "Step"]
