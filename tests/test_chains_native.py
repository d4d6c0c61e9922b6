"""The loop-carried chains and the critical path in C (pmpredict/predict/_chains.c): the same
results as deps.py's Python, to the bit (the same floats, node tuples, Edge objects in the
same order, the same choice among ties), on random graphs and on the graphs of real blocks;
and known values from first principles, on both."""

import csv
import math
import os
import random
from fractions import Fraction

import pytest

from pmpredict.asm.kernel import all_regions, select_kernel
from pmpredict.asm.parse import parse_file
from pmpredict.formats.model_files import load_model
from pmpredict.predict import deps, predictor
from pmpredict.predict.deps import Edge, Graph, Path

ROOT = os.path.join(os.path.dirname(__file__), "..")
BHIVE = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "bhive", "blocks.csv"))

native = pytest.mark.skipif(deps._chains is None, reason="the C extension "
                            "pmpredict.predict._chains is not built (python3 setup.py "
                            "build_ext --inplace); the Python runs alone")


# --- comparing -------------------------------------------------------------------------------

def assert_same_cycle(got, want):
    """The same Cycle, to the bit: float fields equal and of the same type (equal floats can
    still differ: -0.0), the very Edge objects of the graph, in the same order."""
    if want is None:
        assert got is None
        return
    for name in ("ratio", "latency", "iterations"):
        a, b = getattr(got, name), getattr(want, name)
        assert type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b), name
    assert got.nodes == want.nodes
    assert len(got.edges) == len(want.edges)
    assert all(a is b for a, b in zip(got.edges, want.edges))
    assert got.resources == want.resources


def assert_same_path(got, want):
    assert type(got.length) is type(want.length) and got.length == want.length
    assert got.nodes == want.nodes


def assert_same(graph, latency, exclude=None):
    """C and Python agree on every entry point: the chains, the worst cycle (with and without
    exclusions, as bottleneck analyses ask), the critical path. Returns the Python chains."""
    want = deps._loop_carried_chains_python(graph)
    got = deps.loop_carried_chains(graph)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert_same_cycle(a, b)
    for limit in (0, 1, 2):
        got_limited = deps.loop_carried_chains(graph, limit)
        assert len(got_limited) == len(want[:limit])
        for a, b in zip(got_limited, want):
            assert_same_cycle(a, b)
    assert_same_cycle(deps.loop_carried_cycles(graph), deps._loop_carried_cycles_python(graph))
    for excluded in ([frozenset(want[0].nodes)] if want else []) + \
            ([exclude] if exclude is not None else []):
        assert_same_cycle(deps.loop_carried_cycles(graph, excluded),
                          deps._loop_carried_cycles_python(graph, excluded))
    assert_same_path(deps.critical_path(graph, latency), deps._critical_path_python(graph, latency))
    return want


# --- (a) random graphs -------------------------------------------------------------------------

LATENCIES = (0.0, 0.5, 1.0, 3.0, 4.0, 5.25, 1 / 3)


def random_graph(rnd: random.Random):
    """Forward distance-0 edges (i < j), carried distance-1 edges in any direction (self loops
    too), latencies from a small set (ties galore); some graphs without a carried edge, some
    with only free (latency 0) edges on their cycles."""
    n = rnd.randint(1, 40)
    density = rnd.random() * 0.3
    carried = rnd.choice((0.0, 0.03, 0.1, 0.3)) / math.sqrt(n)
    latencies = rnd.choice((LATENCIES, LATENCIES, (0.0,), (0.0, 1 / 3)))
    graph = Graph(n)
    for dst in range(n):
        for src in range(n):
            if src < dst and rnd.random() < density:
                graph.edges.append(Edge(src, dst, rnd.choice(latencies), 0, f"r{rnd.randrange(4)}"))
            if rnd.random() < carried:
                graph.edges.append(Edge(src, dst, rnd.choice(latencies), 1, f"r{rnd.randrange(4)}"))
    rnd.shuffle(graph.edges)          # edge order matters (ties): any order
    exclude = frozenset(rnd.sample(range(n), rnd.randint(0, n // 3)))
    return graph, [rnd.choice(LATENCIES) for _ in range(n)], exclude


@native
@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_give_the_same_results(seed):
    rnd = random.Random(seed)
    seen = {"no carried edge": 0, "free cycle": 0, "tied chains": 0, "several chains": 0,
            "tied path ends": 0}
    for _ in range(600):
        graph, latency, exclude = random_graph(rnd)
        chains = assert_same(graph, latency, exclude)
        worst = deps._loop_carried_cycles_python(graph)
        seen["no carried edge"] += all(e.distance == 0 for e in graph.edges)
        seen["free cycle"] += worst is not None and worst.ratio == 0
        seen["tied chains"] += len({c.ratio for c in chains}) < len(chains)
        seen["several chains"] += len(chains) > 1
        finish = deps._critical_path_python(graph, latency).length
        seen["tied path ends"] += sum(latency[i] == finish for i in range(graph.n)) > 1
    # the cases the comparison is meant to cover did come up
    assert all(count >= 5 for count in seen.values()), seen


@native
def test_a_large_graph_gives_the_same_results():
    rnd = random.Random(99)
    n = 160
    graph = Graph(n)
    for dst in range(n):
        for src in range(max(0, dst - 12), dst):
            if rnd.random() < 0.25:
                graph.edges.append(Edge(src, dst, rnd.choice(LATENCIES), 0, "r"))
        if rnd.random() < 0.3:
            graph.edges.append(Edge(rnd.randrange(n), dst, rnd.choice(LATENCIES), 1, "c"))
    assert len({e.dst for e in graph.edges if e.distance}) > 30     # Karp over many heads
    assert_same(graph, [rnd.choice(LATENCIES) for _ in range(n)])


@native
def test_integer_latencies_keep_their_type():
    # the Python keeps a critical path of int latencies an int: so does the C
    graph = Graph(3, [Edge(0, 1, 2, 0, "a"), Edge(1, 2, 3, 0, "a"), Edge(2, 0, 1, 1, "a")])
    assert_same(graph, [1, 1, 1])
    assert deps.critical_path(graph, [1, 1, 1]) == Path(6, (0, 1, 2))
    assert type(deps.critical_path(graph, [1, 1, 1]).length) is int
    assert_same(graph, [1.0, 1, 1])


# --- (b) the graphs of real blocks ---------------------------------------------------------------

def block_graphs(monkeypatch, path: str, regions: bool):
    """The dependence graphs the Predictor builds for a file's blocks (built-in skl), with
    their nodes' latencies."""
    graphs = []
    build = predictor.build_graph

    def recording(nodes, *args):
        graph = build(nodes, *args)
        graphs.append((graph, [node.latency for node in nodes]))
        return graph

    monkeypatch.setattr(predictor, "build_graph", recording)
    program = parse_file(path)
    kernels = all_regions(program) if regions else [select_kernel(program)]
    model = predictor.Predictor(load_model("skl"))
    for kernel in kernels:
        model.predict(kernel, program.syntax, path)
    return graphs


@native
@pytest.mark.parametrize("name", ["dot_avx2.s", "mix_avx2.s", "mix_avx2_intel.s", "triad_avx.s"])
def test_example_blocks_give_the_same_results(monkeypatch, name):
    graphs = block_graphs(monkeypatch, os.path.join(ROOT, "examples", name), regions=False)
    assert graphs
    for graph, latency in graphs:
        assert_same(graph, latency)


@native
def test_bhive_blocks_give_the_same_results(monkeypatch, tmp_path):
    if not os.path.exists(BHIVE):
        pytest.skip(f"BHive blocks not found at {BHIVE} (expected ../shared/data/bhive beside "
                    "the repository); the random and example graphs still ran")
    lines = []
    with open(BHIVE) as fh:
        for k, row in enumerate(csv.DictReader(fh)):
            if k % 15 == 0:                       # 400 blocks across the whole file
                lines += [f"# LLVM-MCA-BEGIN b{k}"]
                lines += ["\t" + s.strip() for s in row["asm_att"].split(" ; ")]
                lines += [f"# LLVM-MCA-END b{k}"]
    path = tmp_path / "blocks.s"
    path.write_text("\n".join(lines) + "\n")
    graphs = block_graphs(monkeypatch, str(path), regions=True)
    assert len(graphs) > 300
    with_chains = 0
    for graph, latency in graphs:
        with_chains += bool(assert_same(graph, latency))
    assert with_chains > 50


# --- (c) known values, from first principles, on both paths --------------------------------------

both = pytest.mark.parametrize("use_c", [pytest.param(True, marks=native), False],
                               ids=["C", "Python"])


@pytest.fixture
def engine(monkeypatch, request):
    if not request.getfixturevalue("use_c"):
        monkeypatch.setattr(deps, "_chains", None)      # the plain Python fallback


@both
def test_two_node_cycle_costs_the_sum_of_its_latencies(use_c, engine):
    # x = f(y) (3 cycles); y = g(x) (1 cycle) in the next iteration: 4 cycles an iteration
    graph = Graph(2, [Edge(0, 1, 3.0, 0, "x"), Edge(1, 0, 1.0, 1, "y")])
    cycle = deps.loop_carried_cycles(graph)
    assert (cycle.ratio, cycle.latency, cycle.iterations) == (4.0, 4.0, 1)
    assert cycle.nodes == (0, 1) and cycle.edges == tuple(graph.edges)
    assert cycle.edges[0] is graph.edges[0] and cycle.resources == ("x", "y")
    # both edges across an iteration: the same 4 cycles take two iterations
    graph = Graph(2, [Edge(0, 1, 3.0, 1, "x"), Edge(1, 0, 1.0, 1, "y")])
    assert deps.loop_carried_cycles(graph).ratio == 2.0


@both
def test_thirds_add_up_as_floats_do(use_c, engine):
    # three edges of 1/3 in one iteration: the sum in float arithmetic, left to right
    third = 1 / 3
    graph = Graph(3, [Edge(0, 1, third, 0, "a"), Edge(1, 2, third, 0, "a"),
                      Edge(2, 0, third, 1, "a")])
    cycle = deps.loop_carried_cycles(graph)
    assert cycle.latency == float(sum([third, third]) + third)
    assert abs(Fraction(cycle.ratio) - 1) < Fraction(1, 2 ** 50)


@both
def test_chains_are_disjoint_worst_first_and_free_ones_left_out(use_c, engine):
    # a 1-cycle counter, a 4 + 5 = 9 cycle accumulator chain, a free (0-cycle) self loop
    graph = Graph(4, [Edge(0, 0, 1.0, 1, "i"), Edge(1, 2, 5.0, 0, "v"), Edge(2, 1, 4.0, 1, "v"),
                      Edge(3, 3, 0.0, 1, "z")])
    chains = deps.loop_carried_chains(graph)
    assert [(c.ratio, c.nodes) for c in chains] == [(9.0, (1, 2)), (1.0, (0,))]
    assert deps.loop_carried_cycles(graph, frozenset({0, 1, 2})).ratio == 0.0
    assert deps.loop_carried_cycles(Graph(2, [Edge(0, 1, 5.0, 0, "a")])) is None


@both
def test_critical_path_of_one_iteration(use_c, engine):
    # load (5) -> mul (4) -> add (4), the add also reading last iteration's value; a lone
    # 13-cycle node ties with the chain's end and comes later: the first one wins
    graph = Graph(4, [Edge(0, 1, 4.0, 0, "a"), Edge(1, 2, 4.0, 0, "a"), Edge(2, 2, 4.0, 1, "a")])
    assert deps.critical_path(graph, [5.0, 4.0, 4.0, 13.0]) == Path(13.0, (0, 1, 2))
    assert deps.critical_path(Graph(0), []) == Path(0.0, ())


# --- dispatch and bad arguments -----------------------------------------------------------------

@native
def test_the_public_functions_run_in_c(monkeypatch):
    calls, extension = [], deps._chains

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(extension, name)

    graph = Graph(2, [Edge(0, 1, 3.0, 0, "x"), Edge(1, 0, 1.0, 1, "y")])
    monkeypatch.setattr(deps, "_chains", Spy())
    deps.loop_carried_chains(graph)
    deps.loop_carried_cycles(graph)
    deps.critical_path(graph, [1.0, 1.0])
    assert calls == ["cycles", "cycles", "critical_path"]


@native
@pytest.mark.parametrize("args, error", [
    ((3, None, (), 8, True), TypeError),
    ((3, [(0, 1)], (), 8, True), ValueError),
    ((3, [(0, 3, 1.0, 1)], (), 8, True), ValueError),
    ((3, [(-1, 0, 1.0, 1)], (), 8, True), ValueError),
    ((3, [(0, 1, "1", 1)], (), 8, True), TypeError),
    ((3, [(0, 1, 1.0, 1.0)], (), 8, True), TypeError),
    ((3, [(0, 1, 1.0, 2 ** 70)], (), 8, True), ValueError),
    ((3, [(0, 1, 2 ** 70, 1)], (), 8, True), ValueError),
    ((3, [(0, 0, 1.0, 1)], ["0"], 8, True), TypeError),
    ((3, [(0, 0, 1.0, 1)], 7, 8, True), TypeError),
    ((-1, [], (), 8, True), ValueError),
    ((3, [(0, 0, 1.0, 1)], (), 8.0, True), TypeError),
])
def test_bad_arguments_raise(args, error):
    with pytest.raises(error):
        deps._chains.cycles(*args)


@native
def test_bad_critical_path_arguments_raise():
    with pytest.raises(ValueError):
        deps._chains.critical_path(3, [], [1.0])                  # fewer latencies than nodes
    with pytest.raises(TypeError):
        deps._chains.critical_path(2, [], [1.0, None])
    with pytest.raises(TypeError):
        deps._chains.critical_path(2, [], None)


@native
def test_distance_0_loops_raise_where_the_python_would_never_end():
    # a distance-0 edge from a node to itself (never built: such edges go forward)
    with pytest.raises(ValueError):
        deps._chains.cycles(2, [(0, 1, 1.0, 0), (1, 1, 1.0, 0), (1, 0, 1.0, 1)], (), 8, True)
    with pytest.raises(ValueError):
        deps._chains.critical_path(2, [(0, 1, 1.0, 0), (1, 0, 1.0, 0)], [1.0, 1.0])


@native
def test_out_of_range_exclusions_and_huge_graphs_without_cycles():
    # excluded nodes beyond the graph are on no edge; no carried edge: nothing to allocate
    assert deps._chains.cycles(1, [(0, 0, 2.0, 1)], [5, -1, 2 ** 80], 8, True) == \
        [(2.0, 2.0, 1, (0,), (0,))]
    assert deps._chains.cycles(2 ** 60, [], (), 8, True) == []
