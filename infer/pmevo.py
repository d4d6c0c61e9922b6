"""The inference driver: restarts, the EA and exact-refinement phases, snapshots for resume.

`Inference.run` advances a run in steps (one EA generation, one refinement
sweep) and after each step holds a *snapshot*: every array and counter needed
to continue. Randomness is drawn from generators seeded by (seed, restart,
step) or carried in the snapshot, so continuing from a snapshot gives exactly
the result of the uninterrupted run. No I/O here: the caller gets snapshots
and progress through callbacks (infer/checkpoint.py writes them to disk).

Methods (docs/INFER.md; measured in docs/BENCHMARKS.md):
  exact        start from the singletons (forms of equal throughput share a
               port set), exact slot moves with volume and new-port-set
               penalties relaxed linearly to `final_volume_weight` over
               `anneal_sweeps`, then sweeps until no move helps; best of
               `restarts` starts by training objective.  (default)
  pmevo        PMEvo: EA + greedy local search on the counts.
  pmevo+exact  the EA's result as the start of the exact refinement.

With `distill` > 0 and several restarts, the restarts are not a contest but
an ensemble: their mean prediction labels `distill` synthetic experiments and
one mapping is refined on measured + synthetic, from the best restart
(infer/distill.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from pmpredict.infer import evolve
from pmpredict.infer.distill import distillation_problem
from pmpredict.infer.problem import Problem
from pmpredict.infer.refine import ExactRefiner, relative_errors
from pmpredict.infer.start import random_start, singleton_start

METHODS = ("exact", "pmevo", "pmevo+exact")
STARTS = ("shared", "fitted", "singleton", "random")


@dataclass(frozen=True)
class InferConfig:
    method: str = "exact"
    seed: int = 0
    restarts: int = 1
    slots: int = 4                   # uop slots per form
    start: str = "shared"            # exact: shared | fitted | singleton | random (start.py)
    volume_weight: float = 0.02      # initial penalty per uop per form (relative-error units)
    set_weight: float = 0.004        # initial penalty per distinct port set
    anneal_sweeps: int = 6           # sweeps over which both penalties fall to their final values
    final_volume_weight: float = 0.0 # > 0: a more compact mapping (fewer uops)
    final_set_weight: float = 0.0    # > 0: fewer distinct port sets
    max_sweeps: int = 14
    distill: int = 0                 # > 0 (restarts > 1): synthetic experiments labelled by
                                     # the restarts' mean prediction (infer/distill.py)
    distill_sweeps: int = 5          # refinement sweeps on measured + synthetic (most gain comes early)
    population: int = 1000           # EA
    generations: int = 40
    ea_volume_weight: float = 0.1
    mutation_rate: float = 0.02

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}")
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}")
        if (self.restarts < 1 or self.slots < 1 or self.population < 2 or self.distill < 0
                or self.distill_sweeps < 1):
            raise ValueError("restarts, slots, distill sweeps >= 1, population >= 2, distill >= 0")
        if self.distill and self.restarts < 2:
            raise ValueError("--distill needs an ensemble: --restarts 2 or more")

    @property
    def distils(self) -> bool:
        return self.distill > 0 and self.restarts > 1

    def steps(self) -> tuple[int, int, int, int]:
        """(starts, EA steps per start, most refinement sweeps per start, most distillation
        sweeps): the most steps a run takes, for a progress display's ETA."""
        ea = self.generations + 1 if self.method != "exact" else 0
        sweeps = self.max_sweeps if self.method != "pmevo" else 0
        return self.restarts, ea, sweeps, self.distill_sweeps if self.distils else 0

    def weights(self, sweep: int) -> tuple[float, float]:
        """(volume weight, set weight) of refinement sweep `sweep` (linear relaxation)."""
        if sweep >= self.anneal_sweeps:
            return self.final_volume_weight, self.final_set_weight
        x = sweep / self.anneal_sweeps
        vw = self.volume_weight + (self.final_volume_weight - self.volume_weight) * x
        return vw, self.set_weight + (self.final_set_weight - self.set_weight) * x


@dataclass
class Snapshot:
    """Everything needed to continue a run exactly, after a complete step.

    `phase` is None between restarts, "ea", "refine", "done" (the restart's mapping is
    final) or "distill"; `masks`, `counts`, `dirty` hold the mapping being refined (None
    outside refine / distill), `ea` the EA population (phase "ea"), `best` the best
    finished restart {"objective", "error", "restart", "masks", "counts"}, `members` the
    finished restarts' mappings when they are distilled, `ahead` the restarts run elsewhere
    that finished before an earlier one ({"restart", "masks", "counts"}).
    """
    restart: int = 0
    phase: str | None = None
    step: int = 0
    best: dict | None = None
    elapsed: float = 0.0
    history: list = field(default_factory=list)
    ea: dict | None = None
    masks: np.ndarray | None = None
    counts: np.ndarray | None = None
    dirty: np.ndarray | None = None
    members: list | None = None
    distilled: bool = False
    # restarts run elsewhere (Inference.run's `workers`) that ended before the ones before
    # them: their results, folded in restart order when those arrive
    ahead: list | None = None

    def to_dict(self) -> dict:
        """The checkpoint's form: unset optional parts are left out."""
        out = asdict_shallow(self)
        for key in ("ea", "masks", "counts", "dirty", "members", "ahead"):
            if out[key] is None:
                del out[key]
        if not out["distilled"]:
            del out["distilled"]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Snapshot":
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def take_mapping(self):
        """(masks, counts) of the mapping being refined, cleared from the snapshot."""
        m, c = self.masks, self.counts
        self.masks = self.counts = self.dirty = None
        return m, c


def asdict_shallow(obj) -> dict:
    """A dataclass's fields as a dict, values as they are (dataclasses.asdict deep-copies)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


class InferenceStepStopped(Exception):
    """Raised inside a step of Inference.run (an EA generation, a refinement sweep, waiting
    for the restarts' tasks) when the caller's should_stop() says so."""


class Inference:
    def __init__(self, problem: Problem, config: InferConfig, snapshot=None):
        self.p = problem
        self.cfg = config
        self.refiner = ExactRefiner(problem)
        # a Snapshot, or its dict form as a checkpoint holds it
        self.snap = (Snapshot.from_dict(snapshot) if isinstance(snapshot, dict)
                     else snapshot or Snapshot())
        self.current = None      # (masks, counts) being worked on, possibly mid-step
        self._distill_refiner = None

    # --- helpers -------------------------------------------------------------
    def _rng(self, *tag):
        return np.random.default_rng([self.cfg.seed, self.snap.restart, *tag])

    def final_objective(self, masks, counts) -> tuple[float, float]:
        return self.refiner.objective(masks, counts, self.cfg.final_volume_weight,
                                      self.cfg.final_set_weight)

    def error_on(self, problem: Problem, masks, counts) -> float:
        return float(np.mean(relative_errors(masks, counts, problem.ptr, problem.exp_forms,
                                             problem.mults, problem.measured, problem.r_max)))

    def best_mapping(self):
        """The best complete mapping so far, or the one being refined if it is better."""
        if self.snap.phase == "distill" and self.current is not None:
            return self.current[0].copy(), self.current[1].copy()   # the distillation so far
        best = self.snap.best
        cands = []
        if best is not None:
            cands.append((best["objective"], best["masks"], best["counts"]))
        if self.current is not None:
            m, c = self.current
            cands.append((self.final_objective(m, c)[0], m.copy(), c.copy()))
        if not cands:
            return None
        cands.sort(key=lambda x: x[0])
        return cands[0][1], cands[0][2]

    # --- the run ---------------------------------------------------------------
    def run(self, progress=None, on_snapshot=None, should_stop=None, workers=None):
        """Advance to the end (or until should_stop()); returns (masks, counts) of the best
        mapping. workers: run the restarts elsewhere, each whole, at once (an object with
        submit(fn, *args) -> future and wait_first(futures, timeout) -> (done, pending), as
        pmpredict.cluster.Cluster); the result is the same as restart after restart here."""
        t0 = time.monotonic() - self.snap.elapsed

        def emit(**info):
            self.snap.elapsed = time.monotonic() - t0
            if progress:
                progress({"restart": self.snap.restart, **info, "elapsed": self.snap.elapsed})

        try:
            if workers is not None and self.snap.phase is None:
                self._restarts_on(workers, emit, on_snapshot, should_stop, t0)
            while not self.finished():
                if self.snap.restart >= self.cfg.restarts:
                    self._distill_step(emit, should_stop)
                elif self.snap.phase is None:
                    self._begin_restart()
                if self.snap.phase == "ea":
                    self._ea_step(emit, should_stop)
                elif self.snap.phase == "refine":
                    self._refine_step(emit, should_stop)
                elif self.snap.phase == "done":
                    self._finish_restart()
                self.snap.elapsed = time.monotonic() - t0
                if on_snapshot:
                    on_snapshot(self.snap)
        except InferenceStepStopped:
            pass
        self.snap.elapsed = time.monotonic() - t0
        return self.best_mapping()

    def finished(self) -> bool:
        return (self.snap.restart >= self.cfg.restarts
                and (not self.cfg.distils or self.snap.distilled))

    def _begin_restart(self):
        s = self.snap
        s.step = 0
        if self.cfg.method in ("pmevo", "pmevo+exact"):
            state = evolve.init_population(self.p, self.cfg.population, self.cfg.slots, self._rng(1))
            s.phase = "ea"
            s.ea = _ea_to_snap(state)
        else:
            rng = self._rng(1)
            if self.cfg.start == "random":
                m, c = random_start(self.p, self.cfg.slots, rng)
            else:
                m, c = singleton_start(self.p, self.cfg.slots, rng, share=self.cfg.start != "singleton",
                                       fit=self.cfg.start == "fitted")
            s.phase = "refine"
            s.masks, s.counts = m, c
            s.dirty = np.ones(self.p.n_forms, dtype=bool)

    def _ea_step(self, emit, should_stop):
        s = self.snap
        state = _ea_from_snap(s.ea)
        if should_stop and should_stop():
            raise InferenceStepStopped
        if state.generation < self.cfg.generations:
            evolve.generation(self.p, state, self.cfg.ea_volume_weight, self.cfg.mutation_rate)
            s.ea = _ea_to_snap(state)
            i = evolve.best_individual(state, self.cfg.ea_volume_weight)
            self.current = (state.masks[i], state.counts[i])
            emit(phase="ea", step=state.generation, error=float(state.error[i]),
                 volume=float(state.counts[i].sum()))
            return
        i = evolve.best_individual(state, self.cfg.ea_volume_weight)
        m, c = state.masks[i].copy(), state.counts[i].copy()
        evolve.local_search_counts(self.p, m, c, self.refiner.n_chunks)
        s.ea = None
        s.masks, s.counts = m, c
        s.dirty = np.ones(self.p.n_forms, dtype=bool)
        s.step = 0
        s.phase = "refine" if self.cfg.method == "pmevo+exact" else "done"
        self.current = (m, c)
        emit(phase="ea-local", step=state.generation, error=self.error_on(self.p, m, c),
             volume=float(c.sum()))

    def _sweep_step(self, refiner, order_seed, weights, phase, emit, should_stop, reset_dirty=False):
        """One refinement sweep on the snapshot's mapping; returns the number of moves made.

        A sweep cut short by should_stop() is not a snapshot (InferenceStepStopped): resume
        redoes it.
        """
        s = self.snap
        m, c, dirty = s.masks.copy(), s.counts.copy(), s.dirty.copy()
        if reset_dirty:
            dirty[:] = True
        self.current = (m, c)
        order = np.random.default_rng(order_seed).permutation(self.p.n_forms)
        changed = refiner.sweep(m, c, order, *weights, dirty, should_stop=should_stop)
        if should_stop and should_stop():
            raise InferenceStepStopped
        s.masks, s.counts, s.dirty = m, c, dirty
        s.step += 1
        emit(phase=phase, step=s.step, error=self.error_on(self.p, m, c),
             volume=float(c.sum()), changed=changed)
        return changed

    def _refine_step(self, emit, should_stop):
        s = self.snap
        sweep = s.step
        # while the penalties change every form may move
        reset = sweep <= self.cfg.anneal_sweeps and (sweep > 0 or self.cfg.method != "pmevo+exact")
        changed = self._sweep_step(self.refiner, [self.cfg.seed, s.restart, sweep, 7],
                                   self.cfg.weights(sweep), "refine", emit, should_stop, reset)
        if (changed == 0 and sweep >= self.cfg.anneal_sweeps) or s.step >= self.cfg.max_sweeps:
            s.phase = "done"

    def _finish_restart(self):
        s = self.snap
        m, c = s.take_mapping()
        self._fold(m, c)
        self.current = None

    def _fold(self, m, c):
        """A finished restart's mapping into the history and the best (restarts in order)."""
        s = self.snap
        obj, err = self.final_objective(m, c)
        s.history.append({"restart": s.restart, "objective": obj, "error": err,
                             "volume": float(c.sum())})
        if self.cfg.distils:
            s.members = (s.members or []) + [{"masks": m.copy(), "counts": c.copy()}]
        if s.best is None or obj < s.best["objective"] - 1e-15:
            s.best = {"objective": obj, "error": err, "restart": s.restart,
                         "masks": m, "counts": c}
        s.restart += 1
        s.phase = None

    def _restarts_on(self, workers, emit, on_snapshot, should_stop, t0):
        """Every restart not yet finished as a task of `workers`, each run whole there
        (run_restart); the results folded in restart order as they arrive (those that come
        early wait in the snapshot's `ahead`), a snapshot after each. InferenceStepStopped: the
        tasks still running are dropped (a resumed run starts them again)."""
        s = self.snap
        ahead = {d["restart"]: d for d in s.ahead or ()}
        todo = [r for r in range(s.restart, self.cfg.restarts) if r not in ahead]
        futures = {workers.submit(run_restart, self.p, self.cfg, r): r for r in todo}
        pending = set(futures)
        while s.restart < self.cfg.restarts:
            while s.restart in ahead:
                done = ahead.pop(s.restart)
                self._fold(done["masks"], done["counts"])
                emit(phase="done", step=0, error=s.history[-1]["error"],
                     volume=s.history[-1]["volume"], restart=s.restart - 1)
            s.ahead = sorted(ahead.values(), key=lambda d: d["restart"]) or None
            s.elapsed = time.monotonic() - t0
            if on_snapshot:
                on_snapshot(s)
            if s.restart >= self.cfg.restarts:
                break
            if should_stop and should_stop():
                raise InferenceStepStopped
            done, pending = workers.wait_first(pending, timeout=1.0)
            for future in done:
                result = future.result()
                ahead[result["restart"]] = result

    # --- distillation (after the last restart) -------------------------------------------
    def _distillation_refiner(self) -> ExactRefiner:
        """The refiner over measured + synthetic experiments; rebuilt identically on resume."""
        if self._distill_refiner is None:
            members = [(d["masks"], d["counts"]) for d in self.snap.members]
            rng = np.random.default_rng([self.cfg.seed, self.cfg.restarts, 99])
            problem = distillation_problem(self.p, members, self.cfg.distill, rng)
            self._distill_refiner = ExactRefiner(problem)
        return self._distill_refiner

    def _distill_step(self, emit, should_stop):
        s = self.snap
        refiner = self._distillation_refiner()
        if s.phase != "distill":
            s.phase, s.step = "distill", 0
            s.masks, s.counts = s.best["masks"].copy(), s.best["counts"].copy()
            s.dirty = np.ones(self.p.n_forms, dtype=bool)
        final = (self.cfg.final_volume_weight, self.cfg.final_set_weight)
        changed = self._sweep_step(refiner, [self.cfg.seed, self.cfg.restarts, s.step, 11], final,
                                   "distill", emit, should_stop)
        if changed == 0 or s.step >= self.cfg.distill_sweeps:
            m, c = s.take_mapping()
            obj, err = self.final_objective(m, c)
            s.history.append({"restart": "distilled", "objective": obj, "error": err,
                                 "volume": float(c.sum())})
            s.best = {"objective": obj, "error": err, "restart": "distilled",
                         "masks": m, "counts": c}
            s.phase, s.distilled = None, True
            self.current = None


def run_restart(problem: Problem, config: InferConfig, restart: int) -> dict:
    """Restart `restart` alone, start to end, exactly as Inference.run runs it among the
    others (its randomness depends on the seed and its number only): {"restart", "masks",
    "counts"}. A task for Inference.run's workers."""
    alone = Inference(problem, replace(config, restarts=restart + 1, distill=0),
                      Snapshot(restart=restart))
    alone.run()
    return {"restart": restart, "masks": alone.snap.best["masks"],
            "counts": alone.snap.best["counts"]}


def _ea_to_snap(state: evolve.EAState) -> dict:
    return {"masks": state.masks, "counts": state.counts, "error": state.error,
            "generation": state.generation, "rng": state.rng.bit_generator.state}


def _ea_from_snap(d: dict) -> evolve.EAState:
    rng = np.random.default_rng()
    rng.bit_generator.state = d["rng"]
    return evolve.EAState(d["masks"].copy(), d["counts"].copy(), d["error"].copy(),
                          int(d["generation"]), rng)


def config_dict(cfg: InferConfig) -> dict:
    return asdict(cfg)
