"""port_bound.py (one kernel, exact rationals, plain Python) against the numba engine and the LP."""

import random

import numpy as np
import pytest

from pmpredict.predict.port_bound import optimum
from pmpredict.predict.throughput import lp_schedule, simulate_arrays


def engine(masses):
    n = len(masses)
    masks = np.array([[m] for m in masses], dtype=np.int64)
    counts = np.array([[c] for c in masses.values()], dtype=float)
    cycles, neck = simulate_arrays(masks, counts, np.array([0, n]), np.arange(n), np.ones(n), None)
    return float(cycles[0]), int(neck[0])


def test_known_values_of_the_design():
    # mul -> {P1}, add, sub -> {P1, P2}, store -> {P3}: {add: 2, mul: 1, store: 1} -> 1.5 on {P1, P2}
    t, neck, schedule = optimum({0b011: 2, 0b001: 1, 0b100: 1})
    assert t == 1.5 and neck == 0b011
    # a -> {1, 2}, b -> {2, 3}, c -> {2, 4}: 0.75 (a pairs-only shortcut gives 2/3)
    t, neck, _ = optimum({0b00110: 1, 0b01100: 1, 0b10100: 1})
    assert t == 0.75 and neck == 0b11110
    # a one-uop form on k ports alone: 1/k
    assert optimum({0b1111: 1})[0] == 0.25


def test_fractional_masses_are_exact():
    # half a uop on port 0, three on ports {0, 3}: (0.5 + 3) / 2 = 1.75 on both ports
    t, neck, schedule = optimum({0b0001: 0.5, 0b1001: 3})
    assert t == 1.75 and neck == 0b1001
    assert sum(schedule[0b1001].values()) == 3.0
    # thirds: a third of a uop on port 0 and one on {0, 1}: 2/3 per port
    assert optimum({0b01: 1 / 3, 0b11: 1})[0] == pytest.approx(2 / 3, rel=1e-15)


@pytest.mark.parametrize("seed", range(100))
def test_equals_the_engine_and_the_lp(seed):
    rnd = random.Random(seed)
    ports = rnd.randint(1, 10)
    masses = {}
    for _ in range(rnd.randint(1, 12)):
        m = 0
        while m == 0:
            m = rnd.getrandbits(ports)
        masses[m] = masses.get(m, 0) + rnd.randint(1, 4)
    t, neck, schedule = optimum(masses)
    assert (t, neck) == pytest.approx(engine(masses), rel=1e-12)
    lp = lp_schedule(np.array(list(masses), dtype=np.int64), np.array(list(masses.values()), float),
                     ports)[0]
    assert t == pytest.approx(lp, rel=1e-9)
    # the schedule is one: every uop's mass placed on its own ports, no port above t
    load = {}
    for mask, row in schedule.items():
        assert sum(row.values()) == pytest.approx(masses[mask])
        for p, x in row.items():
            assert mask >> p & 1
            load[p] = load.get(p, 0.0) + x
    assert max(load.values()) <= t * (1 + 1e-12)
