"""The dependence graph engine: edges, critical path, exact loop-carried bound (hand-built graphs)."""

import random
from fractions import Fraction

import pytest

from pmpredict.predict.deps import (Edge, Forwarding, Graph, MemRef, Node, Source, build_graph, critical_path,
                                    loop_carried_chains, loop_carried_cycles)


def chain_graph(n, edges):
    g = Graph(n)
    g.edges = [Edge(s, d, float(w), dist, f"r{s}") for s, d, w, dist in edges]
    return g


def brute_force_max_ratio(n, edges):
    """Max over simple cycles of sum(latency) / sum(distance), by enumeration."""
    out = {}
    for s, d, w, dist in edges:
        out.setdefault(s, []).append((d, w, dist))
    best = None

    def walk(start, node, lat, dist, seen):
        nonlocal best
        for nxt, w, d in out.get(node, []):
            if nxt == start:
                if dist + d > 0:
                    r = Fraction(lat + w) / (dist + d)
                    best = r if best is None or r > best else best
            elif nxt > start and nxt not in seen:
                walk(start, nxt, lat + w, dist + d, seen | {nxt})

    for v in range(n):
        walk(v, v, 0, 0, {v})
    return best


def test_self_loop_is_its_latency():
    # addsd xmm0, xmm1 in a loop: 4 cycles per iteration
    c = loop_carried_cycles(chain_graph(1, [(0, 0, 4, 1)]))
    assert c.ratio == 4.0 and c.nodes == (0,) and c.iterations == 1


def test_two_accumulations_in_series():
    # dot product with two addsd into xmm0 per iteration: 0 -> 1 (same iteration), 1 -> 0 (next)
    c = loop_carried_cycles(chain_graph(2, [(0, 1, 4, 0), (1, 0, 4, 1)]))
    assert c.ratio == 8.0 and set(c.nodes) == {0, 1} and c.latency == 8.0


def test_cycle_spanning_two_iterations():
    # a -> b -> a where both edges cross an iteration: 6 cycles over 2 iterations
    c = loop_carried_cycles(chain_graph(2, [(0, 1, 3, 1), (1, 0, 3, 1)]))
    assert c.ratio == 3.0 and c.iterations == 2


def test_no_cycle_without_carried_edges():
    assert loop_carried_cycles(chain_graph(3, [(0, 1, 5, 0), (1, 2, 5, 0)])) is None


def test_worst_cycle_wins_and_chains_are_disjoint():
    # a 1-cycle counter (inc) and a 4-cycle accumulator, independent
    g = chain_graph(3, [(0, 0, 1, 1), (1, 2, 5, 0), (2, 2, 4, 1)])
    chains = loop_carried_chains(g)
    assert [c.ratio for c in chains] == [4.0, 1.0]
    assert chains[0].nodes == (2,) and chains[1].nodes == (0,)


@pytest.mark.parametrize("seed", range(60))
def test_max_cycle_ratio_equals_enumeration(seed):
    rnd = random.Random(seed)
    n = rnd.randint(1, 6)
    edges = []
    for d in range(n):
        for s in range(n):
            if rnd.random() < 0.35:
                dist = 0 if s < d and rnd.random() < 0.6 else 1
                if dist == 0 and s >= d:
                    continue
                edges.append((s, d, rnd.randint(0, 9), dist))
    expected = brute_force_max_ratio(n, edges)
    got = loop_carried_cycles(chain_graph(n, edges))
    if expected is None:
        assert got is None
    else:
        assert got.ratio == pytest.approx(float(expected), rel=1e-12)
        # the reported cycle really has that ratio and is a cycle
        assert got.latency / got.iterations == pytest.approx(float(expected), rel=1e-12)
        for a, b in zip(got.edges, got.edges[1:] + got.edges[:1]):
            assert a.dst == b.src


def test_critical_path_of_one_iteration():
    # load (5) -> mul (4) -> add (4); the add also reads a value from the previous iteration
    g = chain_graph(3, [(0, 1, 4, 0), (1, 2, 4, 0), (2, 2, 4, 1)])
    p = critical_path(g, [5.0, 4.0, 4.0])
    assert p.length == 13.0 and p.nodes == (0, 1, 2)


def test_build_graph_register_edges_within_and_across_iterations():
    # 0: add rax, rbx   1: imul rcx, rax   2: add rbx, rcx
    nodes = [Node((Source("rax", 1), Source("rbx", 1)), ("rax",), latency=1),
             Node((Source("rcx", 3), Source("rax", 3)), ("rcx",), latency=3),
             Node((Source("rbx", 1), Source("rcx", 1)), ("rbx",), latency=1)]
    g = build_graph(nodes, 5, 5)
    got = {(e.src, e.dst, e.distance, e.resource, e.latency) for e in g.edges}
    assert got == {(0, 0, 1, "rax", 1), (2, 0, 1, "rbx", 1), (1, 1, 1, "rcx", 3),
                   (0, 1, 0, "rax", 3), (2, 2, 1, "rbx", 1), (1, 2, 0, "rcx", 1)}
    # rax -> rcx -> rbx -> rax: 3 + 1 + 1 = 5 cycles per iteration
    assert loop_carried_cycles(g).ratio == 5.0


def _mem(base, disp, width, load=False, store=False, latency=0.0):
    return MemRef((base, None, 1, disp, ()), (base,), width, load, store, latency)


def test_store_forwarding_through_the_same_address():
    # 0: add rax, 1   1: mov [rsp+8], rax   2: mov rax, [rsp+8]   (rsp not written)
    nodes = [Node((Source("rax", 1),), ("rax",), latency=1),
             Node((Source("rax", 0), Source("rsp", 0)), (), (_mem("rsp", 8, 64, store=True),), 0),
             Node((Source("rsp", 5),), ("rax",), (_mem("rsp", 8, 64, load=True, latency=5),), 5)]
    g = build_graph(nodes, load_latency=5, store_forward_latency=4.5)
    mem = [e for e in g.edges if e.resource == "mem"]
    assert [(e.src, e.dst, e.distance, e.latency) for e in mem] == [(1, 2, 0, 4.5)]
    # add (1) -> store (0) -> forwarded load (4.5) -> add: 5.5 cycles per iteration
    assert loop_carried_cycles(g).ratio == 5.5


def test_forwarding_latency_by_what_is_forwarded():
    # Zen 4 forwards general-purpose data in 1 cycle (memory renaming), vector data in 9:
    # one model latency for both made vector spills 9x too fast or scalar ones 9x too slow
    forwarding = Forwarding(1.0, indexed=2.0, vector=9.0, narrow=6.0)

    def link(width, index=None, loaded=None):
        ref = MemRef(("rbx", index, 8, 64, ()), ("rbx",) + ((index,) if index else ()), width,
                     False, True)
        load = MemRef(ref.address, ref.registers, loaded or width, True, False, 5.0)
        nodes = [Node((Source("x", 0), Source("rbx", 0)), (), (ref,), 0),
                 Node((Source("rbx", 5),), ("x",), (load,), 5)]
        g = build_graph(nodes, 5, forwarding)
        return loop_carried_cycles(g).ratio, g.forwarded
    assert link(64) == (1.0, {"plain"})
    assert link(64, "rcx") == (2.0, {"indexed"})
    assert link(128) == (9.0, {"vector"})
    assert link(256, "rcx") == (9.0, {"vector"})
    # a byte of a stored word (Zen 3: movzbl of what movl stored 6.4 cycles a loop where the
    # whole word is renamed, 0)
    assert link(64, loaded=8) == (6.0, {"narrow"})
    assert link(32, loaded=16) == (6.0, {"narrow"})
    # a byte or word store and a load of its bytes (Zen 4: movzwl of what movw stored 6.6
    # cycles, 32- and 64-bit data renamed, 0); without the fact, as the plain kind
    short = Forwarding(1.0, indexed=2.0, vector=9.0, narrow=6.0, short=6.5)
    forwarding = short
    assert link(16) == (6.5, {"short"})
    assert link(8, "rcx") == (6.5, {"short"})
    assert link(16, loaded=8) == (6.0, {"narrow"})
    assert link(32) == (1.0, {"plain"})
    forwarding = Forwarding(1.0)
    assert link(16) == (1.0, {"short"})
    # into a read-modify-write of that word: its form's latency through memory has it already
    rmw = MemRef(("rbx", None, 8, 64, ()), ("rbx",), 16, True, True, 5.0)
    assert Forwarding(1.0, short=6.5).kind(rmw, rmw) == "plain"
    # a number is the one latency of every kind (what older callers pass)
    assert build_graph([], 5, 4.0).forwarded == set()


def test_no_forwarding_when_the_base_changes_or_the_store_is_narrower():
    store = Node((Source("rax", 0), Source("rdi", 0)), (), (_mem("rdi", 0, 64, store=True),), 0)
    bump = Node((Source("rdi", 1),), ("rdi",), latency=1)
    load = Node((Source("rdi", 5),), ("rax",), (_mem("rdi", 0, 64, load=True, latency=5),), 5)
    assert not [e for e in build_graph([store, bump, load], 5, 5).edges if e.resource == "mem"]
    narrow = Node((Source("rax", 0), Source("rdi", 0)), (), (_mem("rdi", 0, 8, store=True),), 0)
    assert not [e for e in build_graph([narrow, load], 5, 5).edges if e.resource == "mem"]


def test_read_modify_write_carries_through_memory():
    # add qword ptr [rsp], 1 in a loop: load + add + store, forwarded to the next iteration
    rmw = Node((Source("rsp", 6),), (), (_mem("rsp", 0, 64, load=True, store=True, latency=6),), 6)
    g = build_graph([rmw], load_latency=5, store_forward_latency=5)
    assert [(e.src, e.dst, e.distance, e.latency) for e in g.edges if e.resource == "mem"] == \
        [(0, 0, 1, 6.0)]
