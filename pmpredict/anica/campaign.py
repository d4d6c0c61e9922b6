"""An AnICA campaign (Algorithm 8.1): random blocks, the interesting ones minimised and
generalised into discoveries, as a resumable state machine.

Each round samples a batch of random blocks (lengths uniform in [min_length, max_length],
schemes uniform, of the configured block mode: concrete.BLOCK_MODES) and evaluates them in one
call. Each interesting block, in batch order: if a discovery covers it (Definition 8.7), it
counts for the first such discovery; otherwise it is minimised; if a discovery covers the
minimised block, that one counts it; otherwise it is generalised and becomes a discovery, and
older discoveries the new one covers are dropped, their counts added to it.

`run` does one unit of work at a time (a round, a minimisation round, a generalisation step:
each at most one evaluate call) and asks `should_stop` before each, so a campaign stops between
calls, also in the middle of a generalisation. `state()` is plain JSON (the configuration, the
random generator's state, the discoveries, the counters and the work in progress), and a
campaign built from it continues exactly: with the same evaluate results it ends with the same
discoveries as one that never stopped.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from pmpredict.anica.algorithm import (Evaluate, Generalisation, Minimisation, Witness,
                                       evaluate_batch, is_interesting, number_from,
                                       number_json, row_from, row_json)
from pmpredict.anica.concrete import BLOCK_MODES, STANDARD_BLOCKS, ConcreteBlock, random_block
from pmpredict.anica.domain import AbstractBlock, abstract, covers, describe, universe
from pmpredict.anica.schemes import Scheme

# 2: memory-mode blocks may set their bases to constants, so a memory-mode campaign of version 1
# made other blocks and classes and is not resumed; a standard one reads as before
STATE_VERSION = 2
SAMPLE, MINIMISE, GENERALISE = "sample", "minimise", "generalise"


@dataclass(frozen=True)
class CampaignConfig:
    threshold: float = 0.5
    min_length: int = 1
    max_length: int = 5
    samples: int = 100                # blocks sampled per generalisation step
    accept_ratio: float = 0.97
    batch: int = 64                   # random blocks per round
    seed: int = 0
    blocks: str = STANDARD_BLOCKS     # the block mode: part of the campaign's identity

    def __post_init__(self):
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError("block lengths need 1 <= min_length <= max_length")
        if self.samples < 1 or self.batch < 1:
            raise ValueError("samples and batch must be positive")
        if self.blocks not in BLOCK_MODES:
            raise ValueError(f"block mode {self.blocks!r}: one of {', '.join(BLOCK_MODES)}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "CampaignConfig":
        return cls(**data)             # a checkpoint from before block modes: standard


@dataclass
class Discovery:
    """An abstract block found interesting, with what justifies it."""
    abstract: AbstractBlock
    description: str
    forms: tuple[str, ...]            # the schemes its instructions admit (all positions)
    mnemonics: tuple[str, ...]
    interesting_ratio: float          # of the last accepted sampling of its generalisation
    samples: int
    mean_disagreement: float
    witnesses: tuple[Witness, ...]    # up to 3: the minimised block, then sampled ones
    covered: int = 1                  # random interesting blocks counted for it
    pertinent: bool = True            # beta of its block was interesting (else: the block's
                                      # own abstraction, not generalised)

    def to_json(self) -> dict:
        return {"abstract": self.abstract.to_json(), "description": self.description,
                "forms": list(self.forms), "mnemonics": list(self.mnemonics),
                "interesting_ratio": number_json(self.interesting_ratio),
                "samples": self.samples,
                "mean_disagreement": number_json(self.mean_disagreement),
                "witnesses": [w.to_json() for w in self.witnesses], "covered": self.covered,
                "pertinent": self.pertinent}

    @classmethod
    def from_json(cls, data: dict) -> "Discovery":
        return cls(AbstractBlock.from_json(data["abstract"]), data["description"],
                   tuple(data["forms"]), tuple(data["mnemonics"]),
                   number_from(data["interesting_ratio"]), data["samples"],
                   number_from(data["mean_disagreement"]),
                   tuple(Witness.from_json(w) for w in data["witnesses"]), data["covered"],
                   data["pertinent"])


def state_problem(state: dict) -> str | None:
    """Why this version cannot resume a saved campaign state, or None."""
    version = state.get("version")
    if version == STATE_VERSION:
        return None
    if version == 1:
        blocks = (state.get("config") or {}).get("blocks", STANDARD_BLOCKS)
        if blocks == STANDARD_BLOCKS:
            return None
        return (f"a {blocks}-mode campaign from before memory-mode blocks set bases to constants: "
                f"its blocks and classes are of the older mode; start it afresh")
    return f"campaign state version {version!r}, expected {STATE_VERSION}"


def _new_counters() -> dict:
    return {"calls": 0, "rounds": 0, "random_blocks": 0, "interesting": 0, "failed": 0,
            "failures": [], "minimise_calls": 0, "generalise_calls": 0, "covered": 0,
            "generalisations": 0, "discoveries": 0, "dropped": 0, "unsampled": 0}


@dataclass
class _Work:
    """What the campaign is in the middle of."""
    pending: list = field(default_factory=list)      # [(block, row)] of this round, in order
    origin: tuple | None = None                      # the random (block, row) being worked on
    minimisation: Minimisation | None = None
    minimised_row: np.ndarray | None = None          # the cycles of the minimised block
    generalisation: Generalisation | None = None


class Campaign:
    """Discover inconsistencies between predictor 0 and the others (see the module docstring).

    schemes: what random blocks and samples draw from; evaluate: blocks -> cycles array; state:
    a `state()` to resume from (its configuration is the campaign's)."""

    def __init__(self, schemes: Sequence[Scheme], evaluate: Evaluate,
                 config: CampaignConfig | None = None, state: dict | None = None):
        if not schemes:
            raise ValueError("a campaign needs at least one scheme")
        self.schemes = list(schemes)
        self.universe = universe(self.schemes)
        self.evaluate = evaluate
        if state is not None:
            saved = CampaignConfig.from_json(state["config"])
            if config is not None and config != saved:
                raise ValueError("the configuration differs from the saved campaign's")
            config = saved
        self.config = config or CampaignConfig()
        self.rng = np.random.default_rng(self.config.seed)
        self.discoveries: list[Discovery] = []
        self.counters = _new_counters()
        self.work = _Work()
        if state is not None:
            self._restore(state)

    # -- the loop --

    @property
    def busy(self) -> bool:
        """Whether blocks of the last round are still being worked on."""
        w = self.work
        return bool(w.pending) or w.origin is not None

    def run(self, should_stop: Callable[[], bool],
            progress: Callable[[str, int, dict], None] | None = None) -> None:
        """Work until should_stop() says so (asked before every unit of work)."""
        while not should_stop():
            self.advance(progress)

    def advance(self, progress=None) -> str:
        """One unit of work (at most one evaluate call); its phase."""
        w = self.work
        if w.minimisation is not None:
            used = w.minimisation.step(self.evaluate)
            self._count(MINIMISE, used, progress)
            if w.minimisation.done:
                self._minimised()
            return MINIMISE
        if w.generalisation is not None:
            used = w.generalisation.step(self.universe, self.evaluate, self.rng)
            self._count(GENERALISE, used, progress)
            if w.generalisation.done:
                self._generalised()
            return GENERALISE
        if w.pending:
            block, row = w.pending.pop(0)
            if not self._credit(block):
                w.origin = (block, row)
                w.minimisation = Minimisation(block, row, self.config.threshold)
            return MINIMISE
        self._round(progress)
        return SAMPLE

    def _count(self, phase: str, used: int, progress) -> None:
        self.counters["calls"] += used
        self.counters[f"{phase}_calls"] += used
        if used and progress is not None:
            progress(phase, self.counters["calls"], self.counters_snapshot())

    def _round(self, progress) -> None:
        cfg = self.config
        blocks = []
        for _ in range(cfg.batch):
            length = int(self.rng.integers(cfg.min_length, cfg.max_length + 1))
            block = random_block(self.schemes, length, self.rng, mode=cfg.blocks)
            if block is None:
                self.counters["unsampled"] += 1
            else:
                blocks.append(block)
        rows = evaluate_batch(self.evaluate, blocks) if blocks else np.zeros((0, 0))
        c = self.counters
        c["rounds"] += 1
        c["calls"] += len(blocks)
        c["random_blocks"] += len(blocks)
        if len(blocks):
            failed = np.isnan(rows)
            if len(c["failures"]) < rows.shape[1]:
                c["failures"] += [0] * (rows.shape[1] - len(c["failures"]))
            for p, n in enumerate(failed.sum(axis=0)):
                c["failures"][p] += int(n)
            c["failed"] += int(failed.any(axis=1).sum())
        for block, row in zip(blocks, rows):
            if is_interesting(row, cfg.threshold):
                c["interesting"] += 1
                self.work.pending.append((block, row))
        if progress is not None:
            progress(SAMPLE, c["calls"], self.counters_snapshot())

    def _credit(self, block: ConcreteBlock) -> bool:
        """Count the block for the first discovery covering it; whether one does."""
        if not self.discoveries:
            return False
        block = abstract(block, self.config.blocks)     # once, not per discovery
        for d in self.discoveries:
            if covers(d.abstract, block):
                d.covered += 1
                self.counters["covered"] += 1
                return True
        return False

    def _minimised(self) -> None:
        w = self.work
        job, w.minimisation = w.minimisation, None
        if self._credit(job.block):
            w.origin = None
            return
        w.generalisation = Generalisation(job.block, self.config.threshold, self.config.samples,
                                          self.config.accept_ratio, blocks=self.config.blocks)
        w.minimised_row = job.row

    def _generalised(self) -> None:
        w = self.work
        job, w.generalisation = w.generalisation, None
        result = job.result()
        witness = Witness(job.origin, tuple(float(x) for x in w.minimised_row))
        w.origin = w.minimised_row = None
        self.counters["generalisations"] += 1
        schemes = sorted({s for ai in result.abstract.instructions
                          for s in self.universe.admitted(ai)}, key=lambda s: s.form)
        new = Discovery(result.abstract, describe(result.abstract),
                        tuple(s.form for s in schemes),
                        tuple(sorted({s.mnemonic for s in schemes})),
                        result.interesting_ratio, result.samples, result.mean_disagreement,
                        (witness,) + tuple(x for x in result.witnesses
                                           if x.block != job.origin)[:2],
                        1, result.pertinent)
        kept = []
        for d in self.discoveries:
            if covers(new.abstract, d.abstract):
                new.covered += d.covered
                self.counters["dropped"] += 1
            else:
                kept.append(d)
        self.discoveries = kept + [new]
        self.counters["discoveries"] = len(self.discoveries)

    # -- results and state --

    def discoveries_ranked(self) -> list[Discovery]:
        """Most covered first, then the larger mean disagreement."""
        def key(d):
            m = d.mean_disagreement
            return (-d.covered, -(m if not math.isnan(m) else -math.inf))
        return sorted(self.discoveries, key=key)

    def counters_snapshot(self) -> dict:
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self.counters.items()}

    def state(self) -> dict:
        w = self.work
        return {"version": STATE_VERSION, "config": self.config.to_json(),
                "rng": self.rng.bit_generator.state,
                "discoveries": [d.to_json() for d in self.discoveries],
                "counters": self.counters_snapshot(),
                "work": {
                    "pending": [[b.to_json(), row_json(r)] for b, r in w.pending],
                    "origin": None if w.origin is None else
                    [w.origin[0].to_json(), row_json(w.origin[1])],
                    "minimised_row": None if w.minimised_row is None
                    else row_json(w.minimised_row),
                    "minimisation": None if w.minimisation is None
                    else w.minimisation.to_json(),
                    "generalisation": None if w.generalisation is None
                    else w.generalisation.to_json()}}

    def _restore(self, state: dict) -> None:
        problem = state_problem(state)
        if problem:
            raise ValueError(problem)
        self.rng.bit_generator.state = state["rng"]
        self.discoveries = [Discovery.from_json(d) for d in state["discoveries"]]
        self.counters = {**_new_counters(), **state["counters"]}
        work = state["work"]
        self.work = _Work(
            pending=[(ConcreteBlock.from_json(b), row_from(r)) for b, r in work["pending"]],
            origin=None if work["origin"] is None else
            (ConcreteBlock.from_json(work["origin"][0]), row_from(work["origin"][1])),
            minimisation=None if work["minimisation"] is None
            else Minimisation.from_json(work["minimisation"]),
            minimised_row=None if work["minimised_row"] is None
            else row_from(work["minimised_row"]),
            generalisation=None if work["generalisation"] is None
            else Generalisation.from_json(work["generalisation"]))
