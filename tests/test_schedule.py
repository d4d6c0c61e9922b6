"""The out-of-order simulation and criticality: properties against the exact bounds, and
hand-computed runs."""

import math
import random

import numpy as np
import pytest

from pmpredict.predict.criticality import EventClass, analyse
from pmpredict.predict.deps import Edge, Graph, loop_carried_cycles
from pmpredict.predict.simulation import TIMES, Body, CoreLimits, simulate, steady_cycles
from pmpredict.predict.throughput import lp_schedule


def throughput_bound(body):
    masses = {}
    for masks in body.uops:
        for m in masks:
            masses[m] = masses.get(m, 0) + 1
    if not masses:
        return 0.0, ()
    um = np.array(list(masses), dtype=np.int64)
    ms = np.array(list(masses.values()), dtype=float)
    t, load, _ = lp_schedule(um, ms, body.n_ports, 0, None)
    return t, tuple(float(x) for x in load)


def make_body(uops, edges, n_ports, latency=None, slots=None):
    n = len(uops)
    body = Body(tuple(latency or [1.0] * n), tuple(tuple(u) for u in uops),
                tuple(tuple(e) for e in edges), tuple(slots or [1] * n), n_ports)
    _, balance = throughput_bound(body)
    return Body(body.latency, body.uops, body.edges, body.slots, n_ports, balance)


def carried_bound(body):
    g = Graph(body.n, [Edge(s, d, w, dist, "r") for d, ins in enumerate(body.edges)
                       for s, dist, w in ins])
    c = loop_carried_cycles(g)
    return c.ratio if c else 0.0


def random_body(rnd, deps: bool):
    ports = rnd.randint(2, 8)
    n = rnd.randint(1, 8)
    uops, edges, lat = [], [], []
    for d in range(n):
        u = []
        for _ in range(rnd.randint(1, 3)):
            m = 0
            while m == 0:
                m = rnd.getrandbits(ports)
            u.append(m)
        uops.append(u)
        lat.append(float(rnd.randint(1, 6)))
        ins = []
        if deps:
            for s in range(n):
                if rnd.random() < 0.3:
                    dist = 0 if s < d else 1
                    ins.append((s, dist, float(rnd.randint(0, 6))))
        edges.append(ins)
    return make_body(uops, edges, ports, lat)


@pytest.mark.parametrize("seed", range(40))
def test_no_dependencies_and_no_limits_give_the_throughput_bound(seed):
    body = random_body(random.Random(seed), deps=False)
    t, _ = throughput_bound(body)
    assert simulate(body, CoreLimits()).cycles == pytest.approx(t, rel=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_never_below_any_bound(seed):
    rnd = random.Random(1000 + seed)
    body = random_body(rnd, deps=True)
    width = rnd.choice([None, 2, 4, 6])
    window = rnd.choice([None, 16, 64, 224])
    cycles = simulate(body, CoreLimits(width, window)).cycles
    t, _ = throughput_bound(body)
    front = sum(body.slots) / width if width else 0.0
    assert cycles >= max(t, carried_bound(body), front) - 1e-9


def test_one_chain_with_free_ports_runs_at_its_latency():
    # addsd xmm0, xmm1 (latency 4) and three independent instructions, on plenty of ports
    body = make_body([[0b0011], [0b1100], [0b1100], [0b0011]],
                     [[(0, 1, 4.0)], [], [], []], 4, latency=[4.0, 1, 1, 1])
    assert simulate(body, CoreLimits(4, 224)).cycles == 4.0


def test_sub_cycle_latencies_chain_within_a_cycle():
    """A chain of four links of latency 0.25 (folded add-immediates: ~0.17 on Golden Cove and
    later), one uop each on four ports: four links a cycle, 1.0 per iteration, the bound; a
    uop starting in the cycle its input arrives in. Whole-cycle starts gave 4.0."""
    body = make_body([[0b1111]] * 4, [[(3, 1, 0.25)], [(0, 0, 0.25)], [(1, 0, 0.25)],
                                      [(2, 0, 0.25)]], 4, latency=[0.25] * 4)
    assert carried_bound(body) == pytest.approx(1.0)
    assert simulate(body, CoreLimits(None, 224)).cycles == pytest.approx(1.0)


def test_a_fractional_latency_chains_at_its_own_rate():
    """A latency measured as an average (4.5: a load chain), one link an iteration: 4.5."""
    body = make_body([[0b1]], [[(0, 1, 4.5)]], 1, latency=[4.5])
    assert simulate(body, CoreLimits(4, 224)).cycles == pytest.approx(4.5)


def test_the_issue_example_reaches_the_front_end_bound():
    """`addq $8, %rbp ; addq $8, %r13 ; cmpq %r14, %rbp` on a core with six-wide issue and
    folded add-immediates (latency 1/6, measured 0.5 cycles an iteration on Raptor Cove):
    the bounds say 0.5 (3 instructions at 6 a cycle); the simulation reaches it."""
    fold = 1 / 6
    body = make_body([[0b111111]] * 3, [[(0, 1, fold)], [(1, 1, fold)], [(0, 0, fold)]], 6,
                     latency=[fold, fold, 1.0])
    run = simulate(body, CoreLimits(6, 512))
    t, _ = throughput_bound(body)
    assert max(t, carried_bound(body), 3 / 6) == pytest.approx(0.5)
    assert run.cycles == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(20))
def test_fractional_latencies_never_below_a_bound_nor_above_whole_cycles(seed):
    """With latencies on a grid of sixths, the simulation is never below a bound, and never
    above the same loop with every latency rounded up to a whole cycle."""
    rnd = random.Random(500 + seed)
    body = random_body(rnd, deps=True)
    lat = [rnd.randint(1, 24) / 6 for _ in body.latency]
    edges = [tuple((s, d, rnd.randint(0, 24) / 6) for s, d, _ in ins) for ins in body.edges]
    frac = Body(tuple(lat), body.uops, tuple(edges), body.slots, body.n_ports, body.balance)
    whole = Body(tuple(float(math.ceil(x)) for x in lat), body.uops,
                 tuple(tuple((s, d, float(math.ceil(w))) for s, d, w in ins) for ins in edges),
                 body.slots, body.n_ports, body.balance)
    limits = CoreLimits(rnd.choice([None, 4, 6]), 224)
    cycles = simulate(frac, limits).cycles
    t, _ = throughput_bound(frac)
    front = sum(frac.slots) / limits.width if limits.width else 0.0
    assert cycles >= max(t, carried_bound(frac), front) - 1e-9
    assert cycles <= simulate(whole, limits).cycles + 1e-9


def test_dispatch_width_limits_independent_work():
    body = make_body([[1 << i] for i in range(8)], [[]] * 8, 8)
    assert simulate(body, CoreLimits(width=4)).cycles == 2.0
    # a fused cmp+jcc pair takes one slot: 7 slots at width 4
    fused = make_body([[1 << i] for i in range(8)], [[]] * 8, 8, slots=[1] * 6 + [0, 1])
    assert simulate(fused, CoreLimits(width=4)).cycles == 1.75


def test_a_full_window_limits_long_latency_work():
    # one independent instruction of latency 100 per iteration, ten in flight (Little's law):
    # dispatch, issue a cycle later, result 100 cycles on, retire a cycle later, the entry
    # refilled the cycle after: 103 cycles per ten instructions
    body = make_body([[1]], [[]], 1, latency=[100.0])
    assert simulate(body, CoreLimits(window=10)).cycles == pytest.approx(10.3)


def test_load_op_starts_its_load_before_the_register_operand():
    # add rax, [rdi]: latency 1 from rax, 6 from the address (rdi never changes): the chain
    # through rax costs 1 per iteration, not 6
    body = make_body([[0b01, 0b10]], [[(0, 1, 1.0)]], 2, latency=[6.0])
    assert simulate(body, CoreLimits(4, 224)).cycles == 1.0


def test_steady_cycles_finds_the_period():
    ends = [0.0]
    for k in range(200):
        ends.append(ends[-1] + (3 if k % 3 == 2 else 2))
    assert steady_cycles(ends) == pytest.approx(7 / 3, rel=1e-12)


def test_criticality_of_a_chain_bound_loop():
    # addsd chain (4) plus an independent add, both on two ports: 4 cycles; without the
    # chain the two uops need 1 cycle on the two ports
    body = make_body([[0b11], [0b11]], [[(0, 1, 4.0)], []], 2, latency=[4.0, 1.0])
    run = simulate(body, CoreLimits(4, 224))
    chain = EventClass("chain", "chain", frozenset({(0, 0, 1)}))
    ports = EventClass("ports", "ports 0, 1", ports=0b11)
    crit = analyse(body, CoreLimits(4, 224), run, [chain, ports, EventClass("front end", "front end")])
    assert run.cycles == 4.0
    assert crit.cost["chain"] == 3.0 and crit.cost["ports 0, 1"] == 0.0
    assert crit.cost["front end"] == 0.0
    # parallel: with the chain gone the ports bind, with the ports gone the chain does
    assert crit.icost[("chain", "ports 0, 1")] > 0
    # the chain's instruction has no slack, the independent add a lot
    assert crit.slack[0] == 0.0 and crit.slack[1] > 1.0
    assert max(crit.path_share, key=crit.path_share.get) == "latency"


def test_serial_and_parallel_interaction():
    # path 1: a (4) -> b (4) -> a, path 2: c (6) -> c; ports unlimited (one port each, plenty)
    body = make_body([[1], [2], [4]], [[(1, 1, 4.0)], [(0, 0, 4.0)], [(2, 1, 6.0)]], 3,
                     latency=[4.0, 4.0, 6.0])
    m = CoreLimits(None, None)
    run = simulate(body, m)
    assert run.cycles == 8.0
    a = EventClass("chain", "a", frozenset({(0, 1, 1)}))
    b = EventClass("chain", "b", frozenset({(1, 0, 0)}))
    c = EventClass("chain", "c", frozenset({(2, 2, 1)}))
    crit = analyse(body, m, run, [a, b, c], pairs=3)
    # a and b lie in series on the long path: each alone saves 2 (down to the 6-cycle path),
    # both together also 2: icost = 2 - 2 - 2 = -2 (serial)
    assert crit.cost["a"] == 2.0 and crit.cost["b"] == 2.0 and crit.cost["c"] == 0.0
    assert crit.icost[("a", "b")] == -2.0
    # a and c are parallel: fixing c alone gains nothing, a alone 2, both 4 (b's 4 remains)
    assert crit.icost[("a", "c")] == pytest.approx(4.0 - 2.0 - 0.0)


def _compiled_engines():
    """The engines that run simulation_arrays' passes compiled: numba always; the C
    extension where the install built it (where it did not, the test says so)."""
    from pmpredict.predict import simulation_jit, simulation_native
    native = pytest.param(simulation_native, id="C", marks=pytest.mark.skipif(
        not simulation_native.available(), reason="the C extension _simcore was not built "
                                                   "(no C compiler at install)"))
    return [pytest.param(simulation_jit, id="numba"), native]


@pytest.mark.parametrize("engine", _compiled_engines())
@pytest.mark.parametrize("seed", range(60))
def test_compiled_and_plain_runs_are_identical(seed, engine):
    # one machine (simulation_arrays), run as plain Python over lists, compiled by numba over
    # arrays, and in C (_simcore.c, the same arithmetic): every time of every instance, the
    # cycles and the slack agree exactly
    from pmpredict.predict.criticality import slack
    rnd = random.Random(5000 + seed)
    body = random_body(rnd, deps=True)
    machine = CoreLimits(rnd.choice([None, 2, 4, 6]), rnd.choice([None, 16, 64, 224]),
                      rnd.choice([0.0, 1.0, 2.0]))
    ideal = rnd.choice([0, 1, 3])
    plain = simulate(body, machine, ideal_ports=ideal)
    compiled = simulate(body, machine, ideal_ports=ideal, engine=engine)
    assert records(compiled) == records(plain)
    assert slack(body, machine, compiled, engine) == slack(body, machine, plain)
    # the slack computed with a lean run (what a prediction asks for), and its records on demand
    lean = simulate(body, machine, ideal_ports=ideal, keep=TIMES, engine=engine, slack=True)
    assert slack(body, machine, lean, engine) == slack(body, machine, plain)
    assert records(lean) == records(plain)
    fixed = simulate(body, machine, iterations=30, engine=engine)
    assert fixed.iterations == 30
    assert records(fixed) == records(simulate(body, machine, iterations=30))


def test_the_c_passes_refuse_arrays_that_do_not_fit():
    # a wrong buffer is a Python error, never a read out of bounds
    from pmpredict.predict import simulation_native as native
    if not native.available():
        pytest.skip("the C extension _simcore was not built (no C compiler at install)")
    from pmpredict.predict.simulation_arrays import BodyArrays, Limits, Records
    from array import array
    body = BodyArrays(native.float_array([1.0]), native.int_array([0, 1]),
                      native.int_array([1 << 3]), native.int_array([0, 0]), native.int_array([]),
                      native.int_array([]), native.float_array([]), native.int_array([1]),
                      native.float_array([1.0]))
    records = Records(*native.floats(5, 10), *native.ints(2, 10))
    limits = Limits(4.0, 0, 0.0, 0)
    with pytest.raises(ValueError, match="beyond the body"):          # port 3 of 1
        native.run_schedule(body, limits, 10, True, 10, native.port_records(64), 64,
                            *native.ints(1, 1), records)
    with pytest.raises(ValueError, match="shorter"):                  # 20 iterations of 10
        native.run_schedule(body, limits, 20, True, 20, native.port_records(64), 64,
                            *native.ints(1, 1), records)
    with pytest.raises(TypeError, match="8-byte"):                    # float32 latencies
        native.run_schedule(body._replace(latency=array("f", [1.0])), limits, 10, True, 10,
                            native.port_records(64), 64, *native.ints(1, 1), records)


def records(run):
    """Everything a run says, as plain lists (the compiled engine's are numpy arrays)."""
    return (run.n, run.iterations, run.cycles, run.window, run.measured_from) + tuple(
        [float(x) for x in a] for a in (run.dispatch, run.issue, run.ready, run.result,
                                        run.retire, run.why_dispatch, run.why_ready))


def test_port_records_too_short_for_the_run_are_grown(monkeypatch):
    # the ports' records start at a size the run should not outgrow; if it does, the run
    # starts again with more, and the result is the same
    from pmpredict.predict import simulation
    body = make_body([[1] * 40, [1, 2]], [[(0, 1, 40.0)], [(0, 0, 3.0)]], 2, latency=[40.0, 2.0])
    want = simulate(body, CoreLimits(4, 224))
    monkeypatch.setattr(simulation, "_capacity", lambda *args: 8)
    assert records(simulate(body, CoreLimits(4, 224))) == records(want)
    assert want.cycles == 41.0          # port 0: 40 + 1 uop cycles per iteration
