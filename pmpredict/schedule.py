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

# pipeline stages between events, in cycles (as llvm-mca's timeline shows them): an instruction
# issues at the earliest the cycle after its dispatch, and retires the cycle after its result
ISSUE_DELAY = 1.0
RETIRE_DELAY = 1.0

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


@dataclass(frozen=True)
class Machine:
    width: float | None = None        # instructions dispatched / retired per cycle (None: unlimited)
    window: int | None = None         # reorder-buffer entries (None: unlimited)
    taken_branch: float = 0.0         # at least this many cycles between iterations' first dispatch


@dataclass
class Run:
    """Times of every simulated instruction instance, index t = iteration * n + i."""
    n: int
    iterations: int
    dispatch: list[float] = field(default_factory=list)
    issue: list[float] = field(default_factory=list)        # first uop start (or issue time)
    ready: list[float] = field(default_factory=list)        # result time from data alone
    result: list[float] = field(default_factory=list)
    retire: list[float] = field(default_factory=list)
    uop_start: list[list[int]] = field(default_factory=list)
    uop_port: list[list[int]] = field(default_factory=list)
    why_dispatch: list[str] = field(default_factory=list)  # FRONT_END or WINDOW
    why_ready: list[int] = field(default_factory=list)     # producer instance that set `ready`, -1: dispatch
    window: int = 0
    cycles: float = 0.0                                    # steady-state cycles per iteration
    measured_from: int = 0                                 # first iteration of the measurement


class _Port:
    """Occupied cycles of one port; `first_free(c)` with path compression."""
    __slots__ = ("next",)

    def __init__(self):
        self.next: dict[int, int] = {}

    def first_free(self, cycle: int) -> int:
        nxt = self.next
        path = []
        while cycle in nxt:
            path.append(cycle)
            cycle = nxt[cycle]
        for c in path:
            nxt[c] = cycle
        return cycle

    def take(self, cycle: int) -> None:
        self.next[cycle] = cycle + 1


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


CHECK_EVERY = 24          # iterations between two looks for a periodic steady state


def simulate(body: Body, machine: Machine, iterations: int | None = None,
             ideal_ports: int = 0, keep: bool = True) -> Run:
    """Simulate `iterations` iterations, or (None) until the steady state is periodic (at
    most iterations_for(n, window)); ideal_ports: a port mask whose uops (those confined to it)
    run without any port limit (for criticality). keep=False drops the per-instance records
    the views need (faster)."""
    n = body.n
    fixed = iterations is not None
    if iterations is None:
        iterations = iterations_for(n, machine.window)
    check = iterations if fixed else _first_check(n, machine.window)
    run = Run(n, iterations)
    if n == 0:
        return run
    width = machine.width if machine.width and machine.width > 0 else math.inf
    window = machine.window if machine.window and machine.window > 0 else 0
    ports = [_Port() for _ in range(body.n_ports)]
    load = [0] * body.n_ports
    share = list(body.balance) if body.balance else [1.0] * body.n_ports
    total = n * iterations
    dispatch = [0.0] * total
    ready_at = [0.0] * total
    result = [0.0] * total
    retire = [0.0] * total
    issue = [0.0] * total
    cur, used = 0.0, 0.0               # front end: current cycle and slots used in it
    rcur, rused = 0.0, 0               # retirement: current cycle and instructions retired in it
    first_of_prev = -math.inf
    keep_uops = keep
    k = 0
    while k < iterations:
        if k == check and k < iterations:
            half = k // 2
            if periodic([retire[j * n + n - 1] for j in range(half, k)]) is not None:
                iterations = k
                break
            check += CHECK_EVERY
        for i in range(n):
            t = k * n + i
            # --- dispatch: in order, `width` slots a cycle, a free window entry
            why = FRONT_END
            slot = body.slots[i]
            if slot and used + slot > width + 1e-9:
                cur, used = cur + 1, 0.0
            d = cur
            if i == 0 and machine.taken_branch and first_of_prev + machine.taken_branch > d:
                d = first_of_prev + machine.taken_branch
            if window and t >= window and retire[t - window] + 1 > d:
                d = retire[t - window] + 1
                why = WINDOW
            if d > cur:
                cur, used = d, 0.0
            used += slot
            if i == 0:
                first_of_prev = d
            dispatch[t] = d
            # --- when the result could be ready, from data alone
            lat = body.latency[i]
            ready, why_r = d + ISSUE_DELAY + lat, -1
            for src, dist, w in body.edges[i]:
                s = t - i + src - dist * n
                if s >= 0 and result[s] + w > ready:
                    ready, why_r = result[s] + w, s
            ready_at[t] = ready
            earliest = ready - lat
            # --- uops: earliest free cycle on an allowed port, oldest first
            masks = body.uops[i]
            if masks:
                starts, chosen = [], []
                for mask in masks:
                    if ideal_ports and mask & ~ideal_ports == 0:
                        starts.append(int(math.ceil(earliest - 1e-9)))
                        chosen.append(-1)
                        continue
                    best = best_p = None
                    m, p = mask, 0
                    c0 = int(math.ceil(earliest - 1e-9))
                    while m:
                        if m & 1:
                            c = ports[p].first_free(c0)
                            key = (c, load[p] / share[p] if share[p] > 0 else math.inf, p)
                            if best is None or key < best:
                                best, best_p = key, p
                        m >>= 1
                        p += 1
                    c = best[0]
                    ports[best_p].take(c)
                    load[best_p] += 1
                    starts.append(c)
                    chosen.append(best_p)
                first, last = min(starts), max(starts)
                res = max(ready + (first - earliest), last + min(1.0, lat))
                issue[t] = first
                if keep_uops:
                    run.uop_start.append(starts)
                    run.uop_port.append(chosen)
            else:
                res = ready
                issue[t] = earliest
                if keep_uops:
                    run.uop_start.append([])
                    run.uop_port.append([])
            result[t] = res
            # --- retirement: in order, `width` a cycle (a fused pair is one), once the result is there
            r = max(res + RETIRE_DELAY, retire[t - 1] if t else 0.0)
            r = float(math.ceil(r - 1e-9))
            if r > rcur:
                rcur, rused = r, 0
            elif slot and rused + slot > width + 1e-9:
                rcur, rused = rcur + 1, 0
            r = rcur
            rused += slot
            retire[t] = r
            if keep:
                run.why_dispatch.append(why)
                run.why_ready.append(why_r)
        k += 1
    total = n * iterations
    run.iterations = iterations
    del dispatch[total:], issue[total:], ready_at[total:], result[total:], retire[total:]
    run.dispatch, run.issue, run.ready, run.result, run.retire = dispatch, issue, ready_at, result, retire
    run.window = window
    half = iterations // 2
    run.measured_from = half
    run.cycles = steady_cycles([retire[k * n + n - 1] for k in range(half, iterations)])
    return run


def periodic(ends: list[float]) -> float | None:
    """Cycles per iteration if the times the iterations end have become periodic (the same
    increment over p iterations, repeated over a long enough stretch), else None."""
    m = len(ends)
    for p in range(1, m // 4 + 1):
        span = max(3 * p, 24)
        if span >= m:
            break
        step = ends[-1] - ends[-1 - p]
        if all(abs(ends[k] - ends[k - p] - step) <= 1e-9 * (1 + abs(step))
               for k in range(m - span, m)):
            return step / p
    return None


def steady_cycles(ends: list[float]) -> float:
    """Cycles per iteration from the times the iterations end: exact when they are periodic,
    else the mean increment."""
    if len(ends) < 2:
        return 0.0
    found = periodic(ends)
    return found if found is not None else (ends[-1] - ends[0]) / (len(ends) - 1)
