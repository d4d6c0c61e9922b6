"""The throughput bound of one kernel and one optimal port schedule, exactly.

Engine layer. throughput.py computes the same optimum for millions of experiments (numba); a single
prediction has a few dozen uops, and here costs less than importing numba or scipy would.
The optimum of PMEvo's LP is  t* = max over uop sets S of mass(S) / |ports(S)|  (DESIGN.md).
It is found by Dinkelbach's iteration on max-flow feasibility, in exact arithmetic (integers:
every quantity is scaled by lcm(1..|ports|) times the masses' common denominator, so every t
the iteration visits, mass(S) / |ports(S)|, is an integer too):

  start at t = total mass / |ports used| (a lower bound); route every uop's mass to its ports
  with each port capped at t (max flow); if some mass does not fit, the uops still reachable
  from the source in the residual network form a set S with mass(S) / |ports(S)| > t: the
  next t. When everything fits, t is the optimum and the flow an optimal schedule.

The bottleneck is the largest set of ports saturated in every optimal schedule: the ports
from which the sink cannot be reached in the residual network of a maximum flow at t*.

The integer part (_integer_optimum, _Flow) runs in C where the extension _portflow.c was
built: the same algorithm in the same order of operations, so the same flow to the unit, hence
the same schedule among the optimal ones (tests/test_port_bound_native.py). optimum runs once
per predicted block: ~90 us with the Python max flow, ~8 us with the C one. The Python code
below is the reference, and runs where the extension is missing or where the integers would
not fit in 64 bits.
"""

from __future__ import annotations

from collections import deque
from functools import reduce
from math import lcm
from operator import or_

try:
    from pmpredict.predict import _portflow
except ImportError:                     # not built (no C compiler at install): Python stands in
    _portflow = None


def _ports_of(mask: int) -> list[int]:
    out, p = [], 0
    while mask:
        if mask & 1:
            out.append(p)
        mask >>= 1
        p += 1
    return out


class _Flow:
    """Max flow from the source through uops (supply = mass) to ports (capacity = t)."""

    def __init__(self, masks: list[int], masses: list[int], cap: int):
        self.masks, self.masses, self.cap = masks, masses, cap
        self.ports = sorted({p for m in masks for p in _ports_of(m)})
        self.x = [dict.fromkeys(_ports_of(m), 0) for m in masks]          # uop -> port flow
        self.load = dict.fromkeys(self.ports, 0)
        self.left = list(masses)                                          # unrouted mass
        for u in range(len(masks)):
            while self.left[u] > 0 and self._augment(u):
                pass

    def _augment(self, start: int) -> bool:
        """Push flow from uop `start` along a shortest path uop -> port (-> uop -> port)* with
        a port below its cap at the end. False if there is no such path."""
        via: dict = {("u", start): None}
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for p in self.x[u]:
                if ("p", p) in via:
                    continue
                via[("p", p)] = u
                if self.load[p] < self.cap:
                    return self._push(start, p, via)
                for v in range(len(self.masks)):
                    if ("u", v) not in via and self.x[v].get(p, 0) > 0:
                        via[("u", v)] = p
                        queue.append(v)
        return False

    def _push(self, start: int, port: int, via) -> bool:
        """Apply the path found by _augment: `start` adds flow on a port, each uop whose flow
        was displaced moves it to the next port, the last one onto the free `port`."""
        moves, add, u = [], port, via[("p", port)]
        while True:
            remove = None if u == start else via[("u", u)]
            moves.append((u, add, remove))
            if remove is None:
                break
            add, u = remove, via[("p", remove)]
        amount = min(self.left[start], self.cap - self.load[port])
        for u, _, remove in moves:
            if remove is not None:
                amount = min(amount, self.x[u][remove])
        for u, add, remove in moves:
            self.x[u][add] += amount
            if remove is not None:
                self.x[u][remove] -= amount
        self.load[port] += amount
        self.left[start] -= amount
        return amount > 0

    def residual_reach_from_source(self) -> tuple[set[int], set[int]]:
        """(uops, ports) reachable from the source in the residual network."""
        uops = {u for u in range(len(self.masks)) if self.left[u] > 0}
        ports: set[int] = set()
        queue = deque(uops)
        while queue:
            u = queue.popleft()
            for p in self.x[u]:
                if p in ports:
                    continue
                ports.add(p)
                for v in range(len(self.masks)):
                    if v not in uops and self.x[v].get(p, 0) > 0:
                        uops.add(v)
                        queue.append(v)
        return uops, ports

    def cannot_reach_sink(self) -> set[int]:
        """Ports from which no residual path leads to a port below its cap."""
        free = {p for p in self.ports if self.load[p] < self.cap}
        reach = set(free)
        queue = deque(free)
        while queue:
            p = queue.popleft()
            # a uop with flow on another port q could move mass from q to p: q reaches p
            for u, row in enumerate(self.x):
                if p not in row:
                    continue
                for q, amount in row.items():
                    if q not in reach and amount > 0:
                        reach.add(q)
                        queue.append(q)
        return set(self.ports) - reach


def optimum(uops: dict[int, float], native: bool = True
            ) -> tuple[float, int, dict[int, dict[int, float]]]:
    """(t*, bottleneck port mask, schedule {mask: {port: cycles}}) for uop masses {mask: mass}.

    Masses are taken as exact rationals (integers in practice: counts x multiplicities).
    native=False runs the Python max flow even where the C one is built (the tests compare)."""
    masks = [m for m, mass in uops.items() if mass > 0]
    if not masks:
        return 0.0, 0, {}
    used = int(reduce(or_, masks)).bit_count()                 # ports used
    if all(float(uops[m]).is_integer() for m in masks):        # counts: the usual case
        scale = lcm(*range(1, used + 1))
        masses = [int(uops[m]) * scale for m in masks]
    else:
        # deferred: fractions (~2 ms to import) only for fractional masses (paired stores)
        from fractions import Fraction
        exact = [Fraction(uops[m]).limit_denominator(10**9) for m in masks]
        scale = lcm(*range(1, used + 1)) * lcm(*(q.denominator for q in exact))
        masses = [int(q * scale) for q in exact]
    found = _portflow.optimum(masks, masses) if native and _portflow is not None else None
    t, neck, rows = found if found is not None else _integer_optimum(masks, masses)
    # the floats from the exact integers here, whichever code found them
    schedule = {m: {p: a / scale for p, a in row} for m, row in zip(masks, rows)}
    return t / scale, neck, schedule


def _integer_optimum(masks: list[int], masses: list[int]) -> tuple[int, int, list]:
    """(t*, bottleneck port mask, per uop [(port, flow), ...] for flows > 0, ports ascending)
    over scaled integer masses: _portflow.optimum's reference."""
    t = sum(masses) // len({p for m in masks for p in _ports_of(m)})
    while True:
        flow = _Flow(masks, masses, t)
        if all(left == 0 for left in flow.left):
            break
        group, ports = flow.residual_reach_from_source()
        t = sum(masses[u] for u in group) // len(ports)
    neck = 0
    for p in flow.cannot_reach_sink():
        neck |= 1 << p
    return t, neck, [[(p, a) for p, a in row.items() if a > 0] for row in flow.x]
