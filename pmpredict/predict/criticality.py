"""Criticality of a simulated loop (Fields, Bodik and Hill, ISCA 2001; Fields' thesis 2006):
which part of the machine sets the cycle count, by how much, and how the parts interact.

Engine layer: plain data in, plain data out, no I/O.

* cost(e): cycles per iteration saved when the event class e is made ideal and the loop is
  simulated again (schedule.simulate, same iterations): a loop-carried chain (its edges get
  latency 0), a port group (its uops run without port limits), the front end (unlimited
  dispatch width, no taken-branch cost), the window (unlimited reorder buffer).
* icost(a, b) = cost({a, b}) - cost(a) - cost(b). Positive: a and b are parallel bottlenecks
  (both must be fixed to gain); negative: serial (fixing either one gains most of it); zero:
  independent.
* slack(i): how many cycles instruction i's result could come later, every other time fixed,
  without delaying the end of the run: 0 on the critical path. Computed by a backward pass
  over the run's constraints (data edges, dispatch order, the window, retirement order);
  reported per instruction of the body as the median over the measured iterations.
* the critical path of the run itself: from the last retirement, follow the constraint that
  set each time; the share of its length by kind (data latency, ports, front end, window)
  is the run's own account of where the time goes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

from pmpredict.predict import simulation_arrays
from pmpredict.predict.bottlenecks import BY_EVENT_KIND, EventClass, Idealization
from pmpredict.predict.simulation import (DATA, FRONT_END, NONE, PORT, RETIRE_DELAY,
                                          RETIREMENT, WINDOW, Body, CoreLimits, Run, simulate)


@dataclass
class Criticality:
    base: float                                           # simulated cycles per iteration
    cost: dict[str, float] = field(default_factory=dict)  # class name -> cycles saved
    icost: dict[tuple[str, str], float] = field(default_factory=dict)
    slack: list[float] = field(default_factory=list)      # per instruction of the body
    path_share: dict[str, float] = field(default_factory=dict)   # critical path by kind
    classes: list[EventClass] = field(default_factory=list)


def idealize(body: Body, machine: CoreLimits, classes) -> tuple[Body, CoreLimits, int]:
    """The body and machine with every class in `classes` made ideal (each by its kind:
    bottlenecks.BY_EVENT_KIND)."""
    ideal = Idealization(machine.width, machine.window, machine.taken_branch)
    for c in classes:
        BY_EVENT_KIND[c.kind].idealize(c, ideal)
    zero = ideal.zero_edges
    if zero:
        edges, latency = [], []
        for i, ins in enumerate(body.edges):
            kept = tuple((s, d, 0.0 if (i, s, d) in zero else w) for s, d, w in ins)
            edges.append(kept)
            if any((i, s, d) in zero for s, d, _ in ins):
                # the chain's value arrives at once; the other sources keep their latency
                latency.append(max([w for s, d, w in kept if (i, s, d) not in zero] + [0.0]))
            else:
                latency.append(body.latency[i])
        body = Body(tuple(latency), body.uops, tuple(edges), body.slots, body.n_ports, body.balance)
    return body, CoreLimits(ideal.width, ideal.window, ideal.taken_branch), ideal.ideal_ports


def _cycles(body: Body, machine: CoreLimits, classes, iterations: int, engine=None) -> float:
    b, m, ports = idealize(body, machine, classes)
    return simulate(b, m, iterations, ideal_ports=ports, keep=NONE, engine=engine).cycles


def slack(body: Body, machine: CoreLimits, run: Run, engine=None) -> list[float]:
    """Per instruction of the body: median slack of its result over the measured iterations
    (simulation_arrays.slack_pass). The run must have kept its records."""
    if run.slack is not None:                     # computed with the run
        return list(run.slack)
    engine = engine or simulation_arrays
    n, total = run.n, run.n * run.iterations
    if total == 0:
        return []
    window = machine.window if machine.window and machine.window > 0 else 0
    # the measured instances only: latest times flow to earlier instances alone
    late_result, late_retire, late_dispatch = engine.floats(
        3, total - n * run.measured_from, math.inf)
    out, = engine.floats(1, n)
    engine.slack_pass(body.flat(engine), run.iterations, window, run.result, run.retire,
                      run.measured_from, (late_result, late_retire, late_dispatch), out)
    return engine.to_list(out)


def path_share(run: Run) -> dict[str, float]:
    """Walk the run's critical path back from the last retirement to the start of the measured
    iterations, and split its length by what set each step: data latency, port contention,
    dispatch (front end), a full window, in-order retirement. Shares sum to 1."""
    n = run.n
    if n == 0 or len(run.why_ready) == 0:
        return {}
    share = dict.fromkeys((DATA, PORT, FRONT_END, WINDOW, RETIREMENT), 0.0)
    stop = run.measured_from * n
    t = n * run.iterations - 1
    where = "retire"                          # the event on the path: retire / result / dispatch
    while t >= stop:
        if where == "retire":
            if t > 0 and run.retire[t] > math.ceil(run.result[t] + RETIRE_DELAY - 1e-9):
                share[RETIREMENT] += run.retire[t] - run.retire[t - 1]
                t -= 1
            else:
                share[RETIREMENT] += run.retire[t] - run.result[t]
                where = "result"
        elif where == "result":
            share[PORT] += run.result[t] - run.ready[t]
            s = run.why_ready[t]
            if s >= 0:
                share[DATA] += run.ready[t] - run.result[s]
                t = s
            else:
                share[DATA] += run.ready[t] - run.dispatch[t]
                where = "dispatch"
        else:
            if run.why_dispatch[t] == simulation_arrays.BY_WINDOW:
                s = t - run.window
                share[WINDOW] += run.dispatch[t] - run.retire[s]
                t, where = s, "retire"
            else:
                if t == 0:
                    break
                share[FRONT_END] += run.dispatch[t] - run.dispatch[t - 1]
                t -= 1
    total = sum(share.values())
    return {k: v / total for k, v in share.items() if v > 0} if total > 0 else {}


def analyse(body: Body, machine: CoreLimits, run: Run, classes: list[EventClass],
            pairs: int = 3, engine=None) -> Criticality:
    """Costs of each class, interaction costs of the `pairs` costliest classes pairwise, slack
    per instruction and the critical path's composition. engine: as schedule.simulate's."""
    iterations = run.iterations
    base = run.cycles
    out = Criticality(base, classes=list(classes))
    for c in classes:
        out.cost[c.name] = max(0.0, base - _cycles(body, machine, [c], iterations, engine))
    ranked = sorted(classes, key=lambda c: -out.cost[c.name])[:pairs]
    for a, b in combinations(ranked, 2):
        both = max(0.0, base - _cycles(body, machine, [a, b], iterations, engine))
        out.icost[(a.name, b.name)] = both - out.cost[a.name] - out.cost[b.name]
    out.slack = slack(body, machine, run, engine)
    out.path_share = path_share(run.full())
    return out
