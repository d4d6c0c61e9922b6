"""The kinds of bottleneck a loop can have, one class each: its bound, how criticality makes it
ideal, and how it is named. Everything that lists bounds or bottlenecks iterates BOTTLENECKS
(the predictor's bounds, criticality's event classes and idealisation, the views), so a new
kind is one class here.

Engine layer: plain data, no I/O.

  kind          bound (cycles per iteration)               made ideal (criticality)
  ports         the exact LP optimum over the uops         the bottleneck ports without limit
  loop-carried  the worst dependency cycle (max ratio)     the chain's latencies set to 0
  front end     dispatch slots / width, a taken branch     unlimited width, no branch cost
  window        (none: only the simulation sees it)        an unlimited reorder buffer
  memory        bytes loaded and stored / the L1's rate    (none: the simulation does not
                (where the model measured a limit)          see it, the prediction is at least it)
  split loads   vector loads around one across a line      (none, as memory)
  accesses      loads and stores / addresses a cycle       (none, as memory)
"""

from __future__ import annotations

from dataclasses import dataclass, field

# the historical `bottleneck` of predict's and simulate's JSON when the issue width, not a port
# set, limits the loop
FRONTEND_BOTTLENECK = "frontend"


@dataclass(frozen=True)
class EventClass:
    """Something criticality can make ideal: a chain, a port group, the front end, the window."""
    kind: str                         # the Bottleneck's event_kind: "chain", "ports", ...
    name: str                         # shown to people: "chain through v0", "ports 0, 1"
    edges: frozenset = frozenset()    # chain: {(dst, src, distance)} edges whose latency becomes 0
    ports: int = 0                    # ports: the mask made unlimited


@dataclass
class Idealization:
    """What making event classes ideal changes: the edges whose latency becomes 0, the ports
    without limit, the front end's width and branch cost, the window."""
    width: float | None
    window: int | None
    taken_branch: float
    zero_edges: set = field(default_factory=set)
    ideal_ports: int = 0


@dataclass(frozen=True)
class Evidence:
    """What the stages found that the bottleneck kinds read: the bounds' inputs, and the
    events criticality may idealise."""
    throughput: float | None          # the LP optimum over the uops
    neck: int                         # its bottleneck port mask
    port_names: tuple[str, ...]       # the names of `neck`'s ports
    chains: tuple = ()                # loop-carried cycles, worst first (deps.Cycle)
    slots: int = 0                    # front-end slots of one iteration
    width: float | None = None        # the issue width (R_max)
    taken_branch: float = 0.0
    window: int | None = None
    memory_bytes: float = 0.0         # bytes one iteration loads and stores
    memory_rate: float = 0.0          # the L1's bytes a cycle for them (0: no limit measured)
    # cycles the vector loads take where a split one runs alone in its cycle (None: no rule)
    split_load_cycles: float | None = None
    accesses: float = 0.0             # address generations one iteration's accesses take
    access_rate: float = 0.0          # the core's a cycle for loads and stores (0: not measured)


class Bottleneck:
    """One kind of bottleneck. Subclasses set the names and override what applies."""
    key: str | None = None            # the bound's key in Bounds and the JSON; None: no bound
    event_kind: str = ""              # EventClass.kind of its events
    event_rank: int = 0               # criticality lists events by rank (chains first)
    bound_name: str = ""              # in the "Bounds:" line: "ports 1.00"
    limit_name: str = ""              # in the verdict: "the ports would allow 1.00"

    def bound(self, evidence: Evidence) -> float | None:
        return None

    def events(self, evidence: Evidence) -> list[EventClass]:
        return []

    def idealize(self, event: EventClass, ideal: Idealization) -> None:
        raise NotImplementedError

    def bound_text(self, value: float | None) -> str:
        """The bound in the "Bounds:" line ("" where the kind has nothing to say)."""
        return f"{self.bound_name} {value:.2f}"


class Ports(Bottleneck):
    key, event_kind, event_rank = "throughput", "ports", 1
    bound_name, limit_name = "ports", "the ports"

    def bound(self, evidence):
        return evidence.throughput

    def events(self, evidence):
        if not evidence.neck:
            return []
        return [EventClass("ports", "ports " + ", ".join(evidence.port_names),
                           ports=evidence.neck)]

    def idealize(self, event, ideal):
        ideal.ideal_ports |= event.ports


class LoopCarried(Bottleneck):
    key, event_kind, event_rank = "loop_carried", "chain", 0
    bound_name, limit_name = "loop-carried", "the loop-carried chain"
    MAX_EVENTS = 3                    # criticality idealises the three worst chains

    def bound(self, evidence):
        return evidence.chains[0].ratio if evidence.chains else 0.0

    def events(self, evidence):
        return [EventClass("chain", f"chain through {', '.join(c.resources)}",
                           frozenset((e.dst, e.src, e.distance) for e in c.edges))
                for c in evidence.chains[:self.MAX_EVENTS]]

    def idealize(self, event, ideal):
        ideal.zero_edges |= event.edges


class FrontEnd(Bottleneck):
    key, event_kind, event_rank = "front_end", "front end", 2
    bound_name, limit_name = "front end", "the front end"

    def bound(self, evidence):
        if evidence.width:
            return max(evidence.slots / evidence.width, evidence.taken_branch)
        return evidence.taken_branch or None

    def events(self, evidence):
        if evidence.width or evidence.taken_branch:
            return [EventClass("front end", "front end")]
        return []

    def idealize(self, event, ideal):
        ideal.width, ideal.taken_branch = None, 0.0

    def bound_text(self, value):
        return f"front end {value:.2f}" if value is not None else \
            "front end unknown (no issue width)"


class Window(Bottleneck):
    event_kind, event_rank = "window", 3

    def events(self, evidence):
        return [EventClass("window", "window")] if evidence.window else []

    def idealize(self, event, ideal):
        ideal.window = None


class Memory(Bottleneck):
    """The bytes a core's L1 serves a cycle for loads and stores together, where it measured
    fewer than the forms' ports allow (pipeline memory_bytes_per_cycle; the issue's Zen 3
    daxpy: 16 loads and 8 stores of 32 bytes, 13.3 cycles where the ports allow 8). No event:
    the simulation does not see the limit, so criticality cannot make it ideal; the
    prediction is at least the bound."""
    key, event_kind, event_rank = "memory", "memory", 4
    bound_name, limit_name = "L1 bandwidth", "the L1's bytes a cycle"

    def bound(self, evidence):
        if not evidence.memory_rate:
            return None
        return evidence.memory_bytes / evidence.memory_rate

    def bound_text(self, value):
        return f"{self.bound_name} {value:.2f}" if value is not None else ""


class SplitLoads(Bottleneck):
    """A vector load across a line runs alone in its cycle on some cores (pipeline
    split_load_alone; Zen 4: `vmovdqu xmm0, [rsi + 120]` 1.00 cycles a loop, `movss` 0.50, the
    two 2.00, where every port mapping allows 1.50 at most): a cycle per such load, and the
    vector loads between two of them a cycle per vector_loads_per_cycle started
    (line_splits.vector_split_cycles). No event: the simulation does not see it; the
    prediction is at least the bound."""
    key, event_kind, event_rank = "split_loads", "split loads", 5
    bound_name, limit_name = "vector loads across a line", "vector loads across a line"

    def bound(self, evidence):
        return evidence.split_load_cycles

    def bound_text(self, value):
        return f"{self.bound_name} {value:.2f}" if value is not None else ""


class Accesses(Bottleneck):
    """The memory accesses a core starts a cycle, loads and stores together, where it measured
    fewer than the forms' ports allow (pipeline memory_accesses_per_cycle; Zen 4: 3, four
    8-byte loads and four stores that pair 2.67 cycles a loop, where the loads alone take 1.33
    and the stores 2.00). No event, as Memory; the prediction is at least the bound."""
    key, event_kind, event_rank = "accesses", "accesses", 6
    bound_name, limit_name = "memory accesses", "the memory accesses a cycle"

    def bound(self, evidence):
        if not evidence.access_rate or not evidence.accesses:
            return None
        return evidence.accesses / evidence.access_rate

    def bound_text(self, value):
        return f"{self.bound_name} {value:.2f}" if value is not None else ""


def accesses_started(nodes, split_extra: float = 0.0) -> float:
    """Address generations one iteration of the dependence graph's nodes takes: a load or a
    store one each, a read-modify-write two (Zen 4: two `add [m], r` and two loads 2.09 cycles
    a loop on three, as six); a paired store still one (it commits with another but has an
    address of its own); `split_extra`: those the accesses across a line add."""
    return float(sum(ref.load + ref.store for node in nodes for ref in node.memory)) + split_extra


def bytes_moved(nodes) -> float:
    """Bytes one iteration of the dependence graph's nodes loads and stores (a
    read-modify-write both; an access of unknown width none)."""
    return sum((ref.load + ref.store) * ref.width / 8
               for node in nodes for ref in node.memory if ref.width)


BOTTLENECKS: tuple[Bottleneck, ...] = (Ports(), LoopCarried(), FrontEnd(), Window(), Memory(),
                                       SplitLoads(), Accesses())
BY_EVENT_KIND = {b.event_kind: b for b in BOTTLENECKS}
BOUND_KINDS = tuple(b for b in BOTTLENECKS if b.key is not None)


@dataclass(frozen=True)
class Bounds:
    """Each bound kind's value in cycles per iteration (None: unknown), in BOUND_KINDS order;
    read as attributes by key: bounds.throughput, bounds.loop_carried, bounds.front_end."""
    values: dict

    def __getattr__(self, key: str):
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def as_dict(self) -> dict:
        return dict(self.values)

    @classmethod
    def unknown(cls) -> "Bounds":
        return cls({b.key: None for b in BOUND_KINDS})

    @classmethod
    def of(cls, evidence: Evidence) -> "Bounds":
        return cls({b.key: b.bound(evidence) for b in BOUND_KINDS})


def event_classes(evidence: Evidence) -> list[EventClass]:
    """What criticality idealises, by kind: the loop-carried chains, the bottleneck port set,
    the front end, the window."""
    return [e for b in sorted(BOTTLENECKS, key=lambda b: b.event_rank) for e in b.events(evidence)]
