"""Out-of-order simulation of a loop body: cycles per iteration in steady state, with a
timeline and the constraint that set every time (for criticality).

Engine layer: plain data in, plain data out, no I/O.

The machine (documented in docs/PREDICTION.md):
  * the front end dispatches in program order, `width` instructions per cycle (a fused
    cmp+jcc pair is one), into a window of `window` instructions (the reorder buffer); an
    instruction leaves the window when it retires, in order, `width` per cycle;
  * an instruction may issue the cycle after its dispatch, once its sources allow: its result
    is due at  ready = max(dispatch + 1 + L, max over in-edges of producer result + latency),
    where L is its issue-to-result latency, so it issues at ready - L (a load-op starts its
    load before its register operand is there, as cores do);
  * each uop takes one cycle on one port of its port set. The scheduler is ideal and
    unified: a uop goes to the allowed port where it can start first, oldest uops first;
    ties go to the port the optimal (LP) schedule leaves emptiest;
  * the result is ready L cycles after the instruction's first uop starts, and not before
    its last uop has run; it retires the cycle after its result at the earliest.
Taking uops oldest-first on each port is the same as placing them, in program order, into
the earliest free cycle of a port at or after they can issue: so one pass in program order
simulates the whole run (no cycle-by-cycle loop), with a "next free cycle" structure per
port.

Steady state: the run is long enough that the window fills many times; cycles per iteration
are measured between the retirement of the last instruction of the middle iteration and of
the last iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pmpredict.predict import simulation_arrays
from pmpredict.predict.simulation_arrays import ISSUE_DELAY, OUT_OF_CAPACITY, RETIRE_DELAY  # noqa: F401 (re-exported)

# what set a time on the run's critical path (criticality.path_share)
FRONT_END, WINDOW, DATA, PORT, RETIREMENT = "front end", "window", "latency", "ports", "retirement"


@dataclass(frozen=True)
class Body:
    """One iteration of the loop, as arrays the simulation needs."""
    latency: tuple[float, ...]                       # L per instruction
    uops: tuple[tuple[int, ...], ...]                # per instruction: one port mask per uop cycle
    edges: tuple[tuple[tuple[int, int, float], ...], ...]   # per instruction: (src, distance, weight)
    slots: tuple[int, ...]                           # front-end slots (0: fused into its neighbour)
    n_ports: int
    balance: tuple[float, ...] = ()                  # per port: share of the optimal schedule's load

    @property
    def n(self) -> int:
        return len(self.latency)

    def flat(self, engine) -> simulation_arrays.BodyArrays:
        """The body as simulation_arrays' flat arrays, in `engine`'s containers (kept)."""
        cache = self.__dict__.setdefault("_flat", {})
        arrays = cache.get(engine)
        if arrays is None:
            uop_off, uop_mask, edge_off, src, dist, w = [0], [], [0], [], [], []
            for masks, ins in zip(self.uops, self.edges):
                uop_mask.extend(masks)
                uop_off.append(len(uop_mask))
                for s, d, x in ins:
                    src.append(s)
                    dist.append(d)
                    w.append(x)
                edge_off.append(len(src))
            share = self.balance if self.balance else [1.0] * self.n_ports
            arrays = cache[engine] = simulation_arrays.BodyArrays(
                engine.float_array(self.latency), engine.int_array(uop_off),
                engine.int_array(uop_mask), engine.int_array(edge_off), engine.int_array(src),
                engine.int_array(dist), engine.float_array(w), engine.int_array(self.slots),
                engine.float_array(share))
        return arrays


@dataclass(frozen=True)
class CoreLimits:
    width: float | None = None        # instructions dispatched / retired per cycle (None: unlimited)
    window: int | None = None         # reorder-buffer entries (None: unlimited)
    taken_branch: float = 0.0         # at least this many cycles between iterations' first dispatch


@dataclass
class Run:
    """Times of every simulated instruction instance, index t = iteration * n + i: in the
    engine's containers (lists, or numpy arrays from simulation_jit)."""
    n: int
    iterations: int
    dispatch: list[float] = field(default_factory=list)
    issue: list[float] = field(default_factory=list)        # first uop start (or issue time)
    ready: list[float] = field(default_factory=list)        # result time from data alone
    result: list[float] = field(default_factory=list)
    retire: list[float] = field(default_factory=list)
    why_dispatch: list[int] = field(default_factory=list)  # simulation_arrays.BY_FRONT_END / BY_WINDOW
    why_ready: list[int] = field(default_factory=list)     # producer instance that set `ready`, -1: dispatch
    window: int = 0
    cycles: float = 0.0                                    # steady-state cycles per iteration
    measured_from: int = 0                                 # first iteration of the measurement
    # a run that kept its results and retirements only (keep=TIMES): how to simulate it again
    # with every record, for the views that need them (timeline, the critical path's shares)
    again: object = field(default=None, repr=False, compare=False)
    # each instruction's slack (criticality.slack), where the engine computed it with the run
    slack: list | None = field(default=None, repr=False, compare=False)

    def full(self) -> "Run":
        """This run with every record: itself, or (kept lean) the same run simulated again,
        once; the same engine and inputs give the very same times."""
        if self.__dict__.get("again") is None:
            return self
        full, self.again = self.again(), None
        for name in LEFT_OUT_WHEN_LEAN:
            setattr(self, name, getattr(full, name))
        return self

    def __getattr__(self, name):
        # a record a lean run left out: asked for, it is made (Run.full)
        if name in LEFT_OUT_WHEN_LEAN and self.__dict__.get("again") is not None:
            return getattr(self.full(), name)
        raise AttributeError(name)


# the records a run kept lean (keep=TIMES) leaves out until they are asked for
LEFT_OUT_WHEN_LEAN = ("dispatch", "issue", "ready", "why_dispatch", "why_ready")


def iterations_for(n: int, window: int | None) -> int:
    """At most this many iterations: enough for the window to fill many times, the measured
    half a multiple of every small period (1..6, 8, 10, 12, 15...)."""
    w = window or 256
    it = max(120, math.ceil(6 * w / max(n, 1)))
    it = min(it, max(120, 60000 // max(n, 1)))
    return 120 * math.ceil(it / 120)


def _first_check(n: int, window: int | None) -> int:
    """Iterations before the run may stop early: the window has filled twice."""
    return max(48, math.ceil(2 * (window or 256) / max(n, 1)))


def _capacity(body: Body, iterations: int, machine: CoreLimits) -> int:
    """Cycles the ports' records cover at first: a quarter of what the run would take if
    every instance waited for everything before it, which is ample for real loops (runs take
    a few percent of it); a run that needs more starts again with four times as many."""
    per = sum(max([lat] + [w for _, _, w in ins]) + len(masks) + 2
              for lat, masks, ins in zip(body.latency, body.uops, body.edges))
    return int(64 + iterations * (per + machine.taken_branch) / 4)


# simulate(keep=...): every record (the timeline, the critical path's shares), results and
# retirements only (slack; Run.full() gets the rest by simulating again), or none (cycles)
ALL, TIMES, NONE = True, "times", False


def simulate(body: Body, machine: CoreLimits, iterations: int | None = None,
             ideal_ports: int = 0, keep=ALL, engine=None, slack: bool = False) -> Run:
    """Simulate `iterations` iterations, or (None) until the steady state is periodic (at
    most iterations_for(n, window)); ideal_ports: a port mask whose uops (those confined to it)
    run without any port limit (for criticality). keep: ALL the per-instance records, TIMES
    only results and retirements (a fifth of the memory where the engine can leave the rest
    out), NONE. engine: where the passes run, simulation_arrays (plain Python, the default),
    simulation_jit (the same functions compiled by numba) or simulation_native (in C: the
    whole run in one call). slack: the engine may compute each instruction's slack with the
    run (Run.slack; criticality.slack otherwise)."""
    engine = engine or simulation_arrays
    n = body.n
    fixed = iterations is not None
    if iterations is None:
        iterations = iterations_for(n, machine.window)
    run = Run(n, iterations)
    if n == 0:
        return run
    width = machine.width if machine.width and machine.width > 0 else math.inf
    window = machine.window if machine.window and machine.window > 0 else 0
    limits = simulation_arrays.Limits(width, window, float(machine.taken_branch), ideal_ports)
    whole = getattr(engine, "simulate_body", None)
    if whole is not None:
        done, cycles, records, slacks = whole(body, limits, iterations, fixed,
                                              _first_check(n, machine.window), keep, slack)
        run.iterations, run.window, run.measured_from = done, window, done // 2
        run.cycles, run.slack = float(cycles), slacks
        if records is not None:
            for name, values in zip(simulation_arrays.Records._fields, records):
                if values is not None:
                    setattr(run, "ready" if name == "ready_at" else name, values)
        if keep == TIMES:
            _lean(run, lambda: simulate(body, machine, iterations if fixed else None,
                                        ideal_ports, ALL, engine))
        return run
    arrays = body.flat(engine)
    total = n * iterations
    capacity = _capacity(body, iterations, machine)
    while True:
        records = engine.records(total, lean=keep is not ALL)
        done = engine.run_schedule(
            arrays, limits, iterations, fixed, _first_check(n, machine.window),
            engine.port_records(body.n_ports * capacity), capacity, *engine.ints(1, body.n_ports),
            records)
        if done != OUT_OF_CAPACITY:
            break
        capacity *= 4
    iterations = done
    half = iterations // 2
    run.iterations, run.window, run.measured_from = iterations, window, half
    run.cycles = float(engine.steady_step(records.retire, n, n - 1, half, iterations))
    total = n * iterations
    if keep is ALL:
        run.dispatch, run.issue, run.ready, run.result, run.retire, run.why_dispatch, \
            run.why_ready = (a[:total] for a in records)
    elif keep == TIMES:
        run.result, run.retire = records.result[:total], records.retire[:total]
        _lean(run, lambda: simulate(body, machine, iterations if fixed else None, ideal_ports,
                                    ALL, engine))
    return run


def _lean(run: Run, again) -> None:
    """A run that keeps results and retirements only: the other records are made when asked
    for (Run.__getattr__), by `again`, the same simulation keeping everything."""
    for name in LEFT_OUT_WHEN_LEAN:
        delattr(run, name)
    run.again = again


def steady_cycles(ends: list[float]) -> float:
    """Cycles per iteration from the times the iterations end: exact when they are periodic,
    else the mean increment."""
    return simulation_arrays.steady_step(ends, 1, 0, 0, len(ends))
