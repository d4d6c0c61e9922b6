"""Dependence graph of a loop body: register, flag and memory edges, critical path, and the
exact loop-carried bound.

Engine layer: plain data in, plain data out, no I/O.

The body is a loop: instruction i of iteration k may read what instruction j wrote in the
same iteration (j < i, distance 0) or in the previous one (j >= i, distance 1). An edge
p -> c carries the *consumer's* latency from the source it reads to its result (the model
keeps latencies per source operand): the result of c is ready at

    R(c) = max over in-edges (p, w, d) of R(p, iteration - d) + w

so the latencies along a path add up to the time the path takes.

Memory: a load depends on the latest earlier store (this iteration or the previous one) that
wrote every byte it reads. Addresses are compared symbolically (SymbolicAddresses): registers are
numbered by value, pointer bumps (add/sub of a constant, push/pop) move an offset, so
`mov [rdi], rax; add rdi, 8; mov rbx, [rdi - 8]` forwards, and a store an iteration ago
forwards to a load whose pointer has moved by the loop's step since. The edge weight is the
store-forwarding latency plus what the load's own latency adds after the load (consumer
latency of the memory operand minus the L1 load latency). The forwarding latency depends on
what is forwarded (`Forwarding`: the pipeline's store_forward_latency facts, one a kind; measured
on Zen 4: a general-purpose store to a load of the same address 0 cycles, memory renaming, with
or without an index register, vector data 9).

Loop-carried bound: the maximum over dependency cycles of (sum of weights) / (iterations the
cycle spans), computed exactly: every cycle passes through at least one distance-1 edge
(distance-0 edges go forward in program order), so with T the heads of the carried edges,
H[s][t] = the longest path from s through one iteration to t (ending in one carried edge),
and the bound is the maximum cycle mean of H (Karp's algorithm), the cycle itself found
among the edges that are tight under the optimal potentials.

The chains and the critical path run in C where the extension is built (_chains.c: the same
algorithms step for step, the same floating-point operations in the same order, the same ties
broken the same way, so bit-identical results); the Python functions here are the reference
and the fallback where no C compiler was found (_loop_carried_cycles_python,
_loop_carried_chains_python, _critical_path_python). The C takes float or int latencies (ints
within 2**31) and raises ValueError on a distance-0 edge loop, which the Python would follow
forever (build_graph makes none: its distance-0 edges go forward).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

try:                              # the chains and the critical path in C, where built
    from pmpredict.predict import _chains
except ImportError:
    _chains = None

NEG = float("-inf")
# relative tolerance for "tight" comparisons of sums of latencies
_TOL = 1e-9


@dataclass(frozen=True)
class Source:
    """One value an instruction reads: a register or flag, or memory."""
    resource: str                 # register family or flag name; "mem" for memory
    latency: float                # consumer latency from this source to the result
    operand: int | None = None


@dataclass(frozen=True)
class MemRef:
    """A memory access of an instruction, as the dependency engine needs it."""
    address: tuple                # (base, index, scale, disp, symbols)
    registers: tuple[str, ...]    # registers of the address expression
    width: int | None
    load: bool
    store: bool
    latency: float = 0.0          # load: consumer latency of the memory operand (address -> result)
    implicit: bool = False        # no operand names it: push, pop, call, ret (the stack engine's)
    vector: bool = False          # the data stored or loaded is a vector register's
    # a vector load: what its consumer latency adds after a plain vector load (a load-op's
    # operation: 0 for vmovss, the addition's for vaddss xmm, xmm, [m])
    beyond_load: float = 0.0
    load_op: bool = False         # the load of a load-op (add r, [m]; not mov r, [m], add [m], r)
    flags_data: bool = False      # a store of a condition the instruction reads off the flags
                                  # (setcc to memory), no register's data
    # a load whose data a vector unit takes: into a vector register, or into an operation on
    # vector registers (vucomiss xmm, [m] writes the flags)
    vector_unit: bool = False


@dataclass(frozen=True)
class Node:
    """One instruction of the body, reduced to what dependencies need."""
    reads: tuple[Source, ...]
    writes: tuple[str, ...]
    memory: tuple[MemRef, ...] = ()
    latency: float = 1.0          # issue -> result (the largest source latency, or the form's)
    offsets: tuple[tuple[str, int], ...] = ()   # written registers that become themselves + c
    # written registers that become another register + c: (written, source, c)
    copies: tuple[tuple[str, str, int], ...] = ()
    # the kind of vector operation (model/facts.py: vector ALU, FP, shuffles; None: none or a
    # data movement) a value may take extra cycles to reach from another kind (bypass)
    domain: str | None = None


@dataclass(frozen=True)
class Forwarding:
    """Store -> load forwarding latency (store data ready -> load value ready) by what is
    forwarded: general-purpose data through a base + displacement address, through an address
    with an index register, and vector data (a vector register's, or a store wider than 64
    bits; measured on Zen 4: `vmovss` forwards as slowly as `movdqu`, 9 cycles, where a
    general-purpose word is renamed, 0), and into the load of a load-op through a base +
    displacement address (measured on Zen 4: 7 cycles, `add rax, [rbx + 64]; mov [rbx + 64],
    rax` 8.05 a link, where `mov r, [m]`, `add [m], r` and an indexed load-op are renamed,
    1.00), into a load narrower than the store (a byte of a stored word: a core that
    renames the word may not rename a part of it), and from a store of one or two bytes
    (measured on Zen 4: `movzwl (%rsi), %ecx; addl $1, %ecx; movw %cx, (%rsi)` 7.67 cycles a
    loop, the same with 32-bit data 1.00). None: as `plain`."""
    plain: float
    indexed: float | None = None
    vector: float | None = None
    load_op: float | None = None
    # a load inside the store and narrower than it (a byte of a stored word)
    narrow: float | None = None
    # a store of one or two bytes and a load of its bytes (a core that renames a stored dword
    # or qword may not rename a byte or a word)
    short: float | None = None
    # a load that reads some of a store's bytes and others beside them: forwarding fails and
    # the load waits for the store (None: not known, and no edge is drawn)
    partial: float | None = None
    # read-modify-writes of one place: a link back to back, one and two instructions apart
    # (the engine takes the last for any longer distance), and back to back through rsp
    # (model.facts.RMW_CHAIN_KEYS; None: not known, each link as back to back). A core that
    # renames the memory word from a store far enough back (measured on Zen 3: 7.5, 3.1, 1.06;
    # through rsp 1.0) takes that share of a back-to-back link on every such edge.
    rmw: tuple[float, float, float, float] | None = None

    def rmw_share(self, store: MemRef, load: MemRef, apart: int) -> float:
        """The share of a back-to-back link that a read-modify-write's load of what the
        read-modify-write `apart` instructions back stored takes (1: not renamed). A share,
        not a difference: the chains of one core read 6.0 or 7.5 back to back from one process
        to the next (Zen 3), and a form's own link is whichever its chain met."""
        if self.rmw is None or not (_read_modify_write(store) and _read_modify_write(load)):
            return 1.0
        adjacent, two, three, stack = self.rmw
        if adjacent <= 0:
            return 1.0
        spaced = (adjacent, two, three)[min(max(apart, 1), 3) - 1]
        if load.address[0] == "rsp":
            spaced = min(spaced, stack)
        return min(1.0, spaced / adjacent)

    def latency(self, store: MemRef, load: MemRef) -> float:
        kind = self.kind(store, load)
        given = {"vector": self.vector, "indexed": self.indexed, "narrow": self.narrow,
                 "short": self.short, "load_op": self.load_op}.get(kind)
        return self.plain if given is None else given

    def kind(self, store: MemRef, load: MemRef) -> str:
        """Which of the six a forwarding edge uses: "vector", "narrow", "short", "indexed",
        "load_op" or "plain"."""
        if _vector(store):
            return "vector"
        if load.width is not None and store.width is not None and load.width < store.width:
            return "narrow"
        # (not into a read-modify-write: its memory operand's latency was measured through the
        # memory word, its own width's forwarding included; chains.form_timing)
        if store.width is not None and store.width < 32 and not _read_modify_write(load):
            return "short"
        if load.address[1] is not None:
            return "indexed"
        return "load_op" if load.load_op else "plain"


def _waits_for_commit(n: int, store: int, distance: int, load: int, weight: float
                      ) -> list[Edge]:
    """A load that forwarding fails for reads the store's bytes from the cache once the store
    has committed, and x86 stores commit in program order after they retire: after every
    instruction older than the store. So the load waits `weight` (the partial forwarding
    latency, measured after the last older instruction, chains.py) after each of those, back
    to the store's iteration before (distance at most 1: the loop-carried bound counts one
    iteration an edge). Measured on Zen 4 (family 25 model 17, 2026-12-07): `mov rdi, [m];
    mov dword [m], 0` 19 cycles a loop, where no register or memory chain links a load to
    the next."""
    edges = [Edge(m, load, weight, distance, "mem") for m in range(store)
             if distance == 1 or m < load]
    if distance == 0:           # the store's iteration's elders before it: one back
        edges += [Edge(m, load, weight, 1, "mem") for m in range(store + 1, n)]
    return edges


def _read_modify_write(ref: MemRef) -> bool:
    return ref.load and ref.store


def _vector(store: MemRef) -> bool:
    return store.vector or (store.width is not None and store.width > 64)


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    latency: float
    distance: int                 # 0: same iteration, 1: from the previous iteration
    resource: str                 # register family, flag, or "mem" (store forwarding)


@dataclass
class Graph:
    n: int
    edges: list[Edge] = field(default_factory=list)
    forwarded: set = field(default_factory=set)     # Forwarding.kind of every memory edge
    crossed: set = field(default_factory=set)       # domain pairs a register edge crosses

    def in_edges(self) -> list[list[Edge]]:
        out = [[] for _ in range(self.n)]
        for e in self.edges:
            out[e.dst].append(e)
        return out


# --- building ------------------------------------------------------------------------------

class SymbolicAddresses:
    """Where each memory access of one iteration points, symbolically (value numbering).

    Every register holds (version, offset): its value at the start of the iteration is the
    version ("start", r) with offset 0; a write that adds a constant to the register itself (a
    pointer bump, Node.offsets) keeps the version and moves the offset; a write that sets it to
    another register plus a constant (mov, lea: Node.copies) takes that register's version and
    offset plus the constant; any other write makes a new version. An access then points at
    version(base) + scale * version(index) + offset.
    Two accesses of the same iteration name the same bytes when their versions agree; an access
    of the next iteration sees every register that only moved by constants moved by its
    per-iteration step (its offset at the end of the body), so the previous iteration's store
    sits `step` bytes further back. A write computed only from values that are the same every
    iteration (registers the body never writes, other such results, loads from such addresses
    that no store of the body names) makes a version ("same", ...) that is the same every
    iteration too: a pointer loaded afresh each time from an unchanging place points where it
    did the iteration before (measured on Zen 4: a read-modify-write through one runs at its
    chain's pace); and a register the body sets to such a value holds it at the start of every
    iteration but the first (`mov [rax], rbx; mov rax, rbx` stores to one place: where stores
    pair (paired_stores), its stores pair across iterations; measured on Zen 4: 0.50 cycles a
    loop)."""

    def __init__(self, nodes: list[Node]):
        written = {r for node in nodes for r in node.writes}
        stored = {(ref.address[0], ref.address[1], ref.address[2], ref.address[4])
                  for node in nodes for ref in node.memory if ref.store}

        def invariant(version) -> bool:
            return version is None or version[0] == "same" or (
                version[0] == "start" and version[1] not in written)

        # a register the body sets to such a value holds it at the start of every iteration
        # but the first (`mov rax, rbx` at the end: rax is rbx's value; `lea rax, [rbx + 8]`
        # rbx's plus 8): walked again from those, until nothing more is found (twice or three
        # times for real bodies)
        carried: dict[str, tuple] = {}
        for _ in range(4):
            state = self._walk(nodes, carried, invariant, stored)
            more = {r: (v, o) for r, (v, o) in state.items()
                    if v != ("start", r) and invariant(v)}
            if more == carried:
                break
            carried = more
        # per-iteration step of the registers that only moved by constants (never written: 0)
        self.step = {r: o for r, (v, o) in state.items() if v == ("start", r)}
        self.recomputed = {r for r, (v, o) in state.items() if v != ("start", r)}

    def _walk(self, nodes, carried: dict, invariant, stored) -> dict:
        """One pass over the body from the registers' values at its start (`carried`: those
        known to hold a value that is the same every iteration): each access's address into
        self.where; the registers' values at its end."""
        state: dict[str, tuple] = dict(carried)
        self.where: list[list[tuple]] = []
        for i, node in enumerate(nodes):
            here = []
            for ref in node.memory:
                base, index, scale, disp, symbols = ref.address
                bv, bo = state.get(base, (("start", base), 0)) if base else (None, 0)
                iv, io = state.get(index, (("start", index), 0)) if index else (None, 0)
                here.append(((bv, iv, scale, symbols), disp + bo + scale * io))
            self.where.append(here)
            # a result computed from values that are the same every iteration (registers the
            # body never writes, such results, loads from such addresses that no store of the
            # body names) is the same every iteration: an address made of it is too
            same = bool(node.writes) and all(
                invariant(state.get(src.resource, (("start", src.resource), 0))[0])
                for src in node.reads) and all(
                invariant(key[0]) and invariant(key[1])
                and (ref.address[0], ref.address[1], ref.address[2], ref.address[4]) not in stored
                for ref, (key, _) in zip(node.memory, here) if ref.load)
            bumps = dict(node.offsets)
            # a copy takes its source's value before this instruction's writes
            copied = {}
            for r, source, c in node.copies:
                v, o = state.get(source, (("start", source), 0))
                copied[r] = (v, o + c)
            for r in node.writes:
                if r in bumps:
                    v, o = state.get(r, (("start", r), 0))
                    state[r] = (v, o + bumps[r])
                elif r in copied:
                    state[r] = copied[r]
                else:
                    state[r] = (("same" if same else "def", i, r), 0)
        return state

    def previous_iteration(self, key: tuple, offset: int) -> tuple | None:
        """Where an access of the previous iteration points, in this iteration's terms; None
        when it depends on a value the iteration computes afresh."""
        bv, iv, scale, symbols = key
        for v in (bv, iv):
            if v is not None and v[0] != "same" and (v[0] != "start" or v[1] in self.recomputed):
                return None
        shift = (self.step.get(bv[1], 0) if bv and bv[0] == "start" else 0) + scale * (
            self.step.get(iv[1], 0) if iv and iv[0] == "start" else 0)
        return key, offset - shift


def _contains(store: tuple, store_width, load: tuple, load_width) -> bool:
    """The store wrote every byte the load reads (same symbolic address, range inside)."""
    (skey, soff), (lkey, loff) = store, load
    if skey != lkey:
        return False
    if store_width is None or load_width is None:
        return soff == loff
    return soff <= loff and loff * 8 + load_width <= soff * 8 + store_width


def _overlaps(store: tuple, store_width, load: tuple, load_width) -> bool:
    """The store wrote some byte the load reads (same symbolic address, ranges meet)."""
    (skey, soff), (lkey, loff) = store, load
    if skey != lkey or store_width is None or load_width is None:
        return False
    return soff * 8 < loff * 8 + load_width and loff * 8 < soff * 8 + store_width


def build_graph(nodes: list[Node], load_latency: float,
                store_forward_latency: "Forwarding | float",
                bypass: Mapping[frozenset, float] | None = None) -> Graph:
    """The dependence graph: register, flag and memory edges within an iteration and into the
    next. `bypass`: the extra cycles of a value between two domains of vector operation (a
    frozenset of the two Node.domain), added to every register edge that crosses them."""
    forwarding = store_forward_latency if isinstance(store_forward_latency, Forwarding) \
        else Forwarding(float(store_forward_latency))
    n = len(nodes)
    graph = Graph(n)
    last_writer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for r in node.writes:
            last_writer[r] = i
    addresses = None                    # made at the first load: many bodies have none
    stores = None                       # ... and the stores by symbolic address
    current: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for s in node.reads:
            if s.resource in current:
                j, distance = current[s.resource], 0
            elif s.resource in last_writer:
                j, distance = last_writer[s.resource], 1
            else:
                continue
            graph.edges.append(Edge(j, i, s.latency + _bypass(nodes[j], node, bypass, graph),
                                    distance, s.resource))
        for k, ref in enumerate(node.memory):
            if not ref.load:
                continue
            if addresses is None:
                addresses = SymbolicAddresses(nodes)
                stores = _stores_by_address(nodes, addresses)
            edge = _forwarding_store(nodes, addresses, stores, i, k)
            if edge is not None and not edge[3]:                  # the store covers part of it
                graph.forwarded.add("partial")
                if forwarding.partial is not None:
                    weight = forwarding.partial + max(0.0, ref.latency - load_latency)
                    graph.edges.append(Edge(edge[0], i, weight, edge[1], "mem"))
                    graph.edges.extend(_waits_for_commit(n, edge[0], edge[1], i, weight))
            elif edge is not None:
                j, distance, store, _ = edge
                # the vector forwarding latency is measured into a plain vector load's value
                # (movdqu [m], xmm; movdqu xmm, [m]): only a load-op's operation comes after
                after = ref.beyond_load if forwarding.kind(store, ref) == "vector" and \
                    forwarding.vector is not None and ref.vector else \
                    max(0.0, ref.latency - load_latency)
                weight = forwarding.latency(store, ref) + after
                if _read_modify_write(store) and _read_modify_write(ref):
                    # read-modify-writes of one place: renamed where the store is far enough
                    # back (the loop wraps: a carried edge spans the rest of the body)
                    apart = i - j if distance == 0 else n - j + i
                    weight *= forwarding.rmw_share(store, ref, apart)
                    graph.forwarded.add("rmw")
                graph.edges.append(Edge(j, i, weight, distance, "mem"))
                graph.forwarded.add(forwarding.kind(store, ref))
        for r in node.writes:
            current[r] = i
    return graph


def _bypass(producer: Node, consumer: Node, bypass, graph: Graph) -> float:
    """The extra cycles of a value from `producer` to `consumer` (0 within one domain, or
    where either is no vector operation); the pair recorded as crossed."""
    if producer.domain is None or consumer.domain is None or producer.domain == consumer.domain:
        return 0.0
    pair = frozenset((producer.domain, consumer.domain))
    graph.crossed.add(pair)
    return float((bypass or {}).get(pair, 0.0))


def forwarded_stores(nodes: list[Node], addresses: SymbolicAddresses | None = None
                     ) -> frozenset[tuple[int, int]]:
    """(node, access) of the stores a load of the body reads, in this iteration or the next:
    the store each load's bytes come from (_forwarding_store), wholly or in part."""
    if not any(ref.load for node in nodes for ref in node.memory) or \
            not any(ref.store for node in nodes for ref in node.memory):
        return frozenset()
    addresses = addresses or SymbolicAddresses(nodes)
    stores = _stores_by_address(nodes, addresses)
    out = set()
    for i, node in enumerate(nodes):
        for k, ref in enumerate(node.memory):
            if not ref.load:
                continue
            found = _forwarding_store(nodes, addresses, stores, i, k)
            if found is not None:
                j, _, store, _ = found
                out.add((j, next(m for m, r in enumerate(nodes[j].memory) if r is store)))
    return frozenset(out)


def _stores_by_address(nodes, addresses: SymbolicAddresses) -> dict[tuple, list[tuple[int, int]]]:
    """The stores (node, access) of each symbolic address key, in program order: a load can
    only read from a store of its own key (an address an iteration ago keeps its key), so
    it looks at those alone instead of at every node (quadratic in the body's length)."""
    out: dict[tuple, list[tuple[int, int]]] = {}
    for j, node in enumerate(nodes):
        for m, ref in enumerate(node.memory):
            if ref.store:
                out.setdefault(addresses.where[j][m][0], []).append((j, m))
    return out


def _forwarding_store(nodes, addresses: SymbolicAddresses, stores: dict, i: int, k: int
                      ) -> tuple[int, int, MemRef, bool] | None:
    """(store node, distance, its store access, whether it covers every byte) of the store
    the k-th access (a load) of node i waits for: the latest earlier store, this iteration or
    the previous one, that writes a byte the load reads."""
    load = nodes[i].memory[k]
    at = addresses.where[i][k]
    same_key = stores.get(at[0], ())
    # this iteration's stores before i, latest first; then the previous iteration's from the
    # last node back to i (the first that covers the load is usually the first looked at)
    cut = bisect_left(same_key, (i, -1))
    order = chain(((p, False) for p in range(cut - 1, -1, -1)),
                  ((p, True) for p in range(len(same_key) - 1, cut - 1, -1)))
    for p, before in order:
        j, m = same_key[p]
        ref = nodes[j].memory[m]
        there = addresses.where[j][m]
        if before:
            there = addresses.previous_iteration(*there)
            if there is None:
                continue
        if _contains(there, ref.width, at, load.width):
            return j, 1 if before else 0, ref, True
        if _overlaps(there, ref.width, at, load.width):
            return j, 1 if before else 0, ref, False
    return None


# --- critical path of one iteration ----------------------------------------------------------

@dataclass(frozen=True)
class Path:
    length: float
    nodes: tuple[int, ...]


_edge_row = attrgetter("src", "dst", "latency", "distance")


def _edge_rows(graph: Graph) -> list[tuple]:
    """The edges as _chains reads them, in graph.edges order: it names the edges of a cycle by
    their index there, so that the cycle holds the graph's own Edge objects."""
    return list(map(_edge_row, graph.edges))


def critical_path(graph: Graph, latency: list[float]) -> Path:
    """Longest path through one iteration (distance-0 edges only); a node without a producer in
    the iteration finishes `latency[i]` after the start."""
    if _chains is None:
        return _critical_path_python(graph, latency)
    length, nodes = _chains.critical_path(graph.n, _edge_rows(graph), latency)
    return Path(length, nodes)


def _critical_path_python(graph: Graph, latency: list[float]) -> Path:
    """critical_path in plain Python: the reference for _chains.critical_path."""
    n = graph.n
    if n == 0:
        return Path(0.0, ())
    finish = list(latency)
    via: list[int | None] = [None] * n
    incoming = graph.in_edges()
    for i in range(n):
        for e in incoming[i]:
            if e.distance == 0 and finish[e.src] + e.latency > finish[i] + _TOL * (1 + finish[i]):
                finish[i] = finish[e.src] + e.latency
                via[i] = e.src
    end = max(range(n), key=lambda i: (finish[i], -i))
    chain = [end]
    while via[chain[-1]] is not None:
        chain.append(via[chain[-1]])
    return Path(finish[end], tuple(reversed(chain)))


# --- the loop-carried bound: maximum cycle ratio -----------------------------------------------

@dataclass(frozen=True)
class Cycle:
    """A dependency cycle through the loop: its ratio is cycles per iteration it forces."""
    ratio: float                  # sum of latencies / iterations spanned
    latency: float                # sum of latencies along the cycle
    iterations: int               # carried edges on the cycle
    nodes: tuple[int, ...]        # instructions in cycle order (starting at a carried-edge head)
    edges: tuple[Edge, ...]
    resources: tuple[str, ...]    # what its edges carry, in cycle order (e.g. "v0", "mem")


def _forward_longest(n: int, zero_in: list[list[Edge]], start: int):
    """Longest distance-0 paths from `start` (program order is a topological order)."""
    dist = [NEG] * n
    pred: list[Edge | None] = [None] * n
    dist[start] = 0.0
    for i in range(start + 1, n):
        for e in zero_in[i]:
            if dist[e.src] != NEG and dist[e.src] + e.latency > dist[i]:
                dist[i] = dist[e.src] + e.latency
                pred[i] = e
    return dist, pred


def loop_carried_cycles(graph: Graph, exclude: frozenset[int] = frozenset()) -> Cycle | None:
    """The dependency cycle of largest ratio (None: no cycle), ignoring nodes in `exclude`."""
    if _chains is None:
        return _loop_carried_cycles_python(graph, exclude)
    found = _chains.cycles(graph.n, _edge_rows(graph), exclude, 1, False)
    return _native_cycle(graph, *found[0]) if found else None


def _native_cycle(graph: Graph, ratio: float, latency: float, iterations: int,
                  nodes: tuple[int, ...], edge_indices: tuple[int, ...]) -> Cycle:
    """A cycle _chains found, its edges the graph's own Edge objects."""
    edges = tuple(graph.edges[k] for k in edge_indices)
    return Cycle(ratio, latency, iterations, nodes, edges,
                 tuple(dict.fromkeys(e.resource for e in edges)))


def _loop_carried_cycles_python(graph: Graph, exclude: frozenset[int] = frozenset()
                                ) -> Cycle | None:
    """loop_carried_cycles in plain Python: the reference for _chains.cycles."""
    n = graph.n
    edges = [e for e in graph.edges if e.src not in exclude and e.dst not in exclude]
    carried = [e for e in edges if e.distance > 0]
    if not carried:
        return None
    zero_in = [[] for _ in range(n)]
    for e in edges:
        if e.distance == 0:
            zero_in[e.dst].append(e)
    heads = sorted({e.dst for e in carried})
    pos = {t: k for k, t in enumerate(heads)}
    m = len(heads)
    # H[s][t]: longest path s -> (distance-0 path) -> a -> (carried edge a->t)
    weight = [[NEG] * m for _ in range(m)]
    choice: list[list[tuple | None]] = [[None] * m for _ in range(m)]
    paths = {}
    for s in heads:
        dist, pred = _forward_longest(n, zero_in, s)
        paths[s] = pred
        for e in carried:
            if dist[e.src] == NEG:
                continue
            w = dist[e.src] + e.latency
            a, b = pos[s], pos[e.dst]
            if w > weight[a][b]:
                weight[a][b] = w
                choice[a][b] = (e,)
    ratio, cycle = _max_cycle_mean(weight)
    if cycle is None:
        return None
    nodes, cyc_edges, total = [], [], 0.0
    for k in range(len(cycle)):
        s, t = heads[cycle[k]], heads[cycle[(k + 1) % len(cycle)]]
        carried_edge = choice[cycle[k]][cycle[(k + 1) % len(cycle)]][0]
        # the distance-0 path s -> carried_edge.src
        segment, j = [], carried_edge.src
        pred = paths[s]
        while j != s:
            e = pred[j]
            segment.append(e)
            j = e.src
        segment.reverse()
        nodes.append(s)
        nodes.extend(e.dst for e in segment)
        cyc_edges.extend(segment)
        cyc_edges.append(carried_edge)
        total += sum(e.latency for e in segment) + carried_edge.latency
        del t
    iterations = sum(e.distance for e in cyc_edges)
    return Cycle(total / iterations, total, iterations, tuple(nodes), tuple(cyc_edges),
                 tuple(dict.fromkeys(e.resource for e in cyc_edges)))


def _max_cycle_mean(weight: list[list[float]]) -> tuple[float, list[int] | None]:
    """Karp's maximum cycle mean of a dense weight matrix (NEG = no edge), with one cycle that
    attains it (node indices in order), or (-inf, None) if there is no cycle."""
    m = len(weight)
    if m == 1:                   # one head: its only cycle is its loop (most loops' case)
        return (weight[0][0], [0]) if weight[0][0] != NEG else (NEG, None)
    # D[k][v]: heaviest walk of exactly k edges ending at v (from any start)
    D = [[0.0] * m]
    for k in range(1, m + 1):
        prev, row = D[-1], [NEG] * m
        for u in range(m):
            if prev[u] == NEG:
                continue
            wu = weight[u]
            for v in range(m):
                if wu[v] != NEG and prev[u] + wu[v] > row[v]:
                    row[v] = prev[u] + wu[v]
        D.append(row)
    best = NEG
    for v in range(m):
        if D[m][v] == NEG:
            continue
        worst = min((D[m][v] - D[k][v]) / (m - k) for k in range(m) if D[k][v] != NEG)
        best = max(best, worst)
    if best == NEG:
        return NEG, None
    return best, _tight_cycle(weight, best)


def _tight_cycle(weight: list[list[float]], mean: float) -> list[int]:
    """A cycle of mean `mean` (the maximum): with potentials from longest paths under
    weights w - mean (no positive cycle exists), a cycle of tight edges attains it."""
    m = len(weight)
    pot = [0.0] * m
    scale = 1.0 + abs(mean) + max((abs(w) for row in weight for w in row if w != NEG), default=0)
    for _ in range(m):
        changed = False
        for u in range(m):
            for v in range(m):
                w = weight[u][v]
                if w != NEG and pot[u] + w - mean > pot[v] + _TOL * scale:
                    pot[v] = pot[u] + w - mean
                    changed = True
        if not changed:
            break
    tight = [[v for v in range(m) if weight[u][v] != NEG
              and abs(pot[u] + weight[u][v] - mean - pot[v]) <= 1e-7 * scale] for u in range(m)]
    # a cycle in the tight subgraph (it exists): walk until a node repeats, among nodes that
    # can keep walking
    alive = set(range(m))
    changed = True
    while changed:
        changed = False
        for u in list(alive):
            if not any(v in alive for v in tight[u]):
                alive.discard(u)
                changed = True
    start = min(alive)
    seen, walk, u = {}, [], start
    while u not in seen:
        seen[u] = len(walk)
        walk.append(u)
        u = next(v for v in tight[u] if v in alive)
    return walk[seen[u]:]


def loop_carried_chains(graph: Graph, limit: int = 8) -> list[Cycle]:
    """Disjoint dependency cycles that cost time, worst first: the worst cycle, then the worst
    among the instructions not on it, and so on (at most `limit`)."""
    if _chains is None:
        return _loop_carried_chains_python(graph, limit)
    # the whole search in one call: the graph is read once
    return [_native_cycle(graph, *found)
            for found in _chains.cycles(graph.n, _edge_rows(graph), (), limit, True)]


def _loop_carried_chains_python(graph: Graph, limit: int = 8) -> list[Cycle]:
    """loop_carried_chains in plain Python: the reference for _chains.cycles."""
    chains, used = [], frozenset()
    while len(chains) < limit:
        c = _loop_carried_cycles_python(graph, used)
        if c is None or c.ratio <= 0:
            break                 # no cycle left, or only cycles that cost nothing
        chains.append(c)
        used = used | frozenset(c.nodes)
    return chains
