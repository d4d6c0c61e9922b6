"""port_bound.optimum's max flow in C (_portflow.c) against the plain Python one: the same t, the
same bottleneck, the same schedule to the last bit and in the same key order (the schedule is
the simulation's tie-breaker, so any other optimal one would change predictions)."""

import random
from fractions import Fraction

import pytest

from pmpredict.predict import port_bound
from pmpredict.predict.port_bound import optimum

_portflow = pytest.importorskip(
    "pmpredict.predict._portflow",
    reason="the C extension _portflow is not built (python3 setup.py build_ext --inplace)")


def assert_same(uops):
    """The C and the Python code give the same answer, key orders included; returns it."""
    native = optimum(uops)
    python = optimum(uops, native=False)
    assert native[:2] == python[:2]
    assert list(native[2].items()) == list(python[2].items())
    for mask, row in native[2].items():
        assert list(row.items()) == list(python[2][mask].items())
    return native


def random_uops(rnd, mass, max_ports=12, max_masks=15):
    """Up to max_masks uop masks on up to max_ports ports, each with mass() added."""
    ports = rnd.randint(1, max_ports)
    uops = {}
    for _ in range(rnd.randint(1, max_masks)):
        mask = 0
        while mask == 0:
            mask = rnd.getrandbits(ports)
        uops[mask] = uops.get(mask, 0) + mass()
    return uops


@pytest.mark.parametrize("seed", range(4))
def test_random_integer_masses(seed):
    rnd = random.Random(seed)
    for _ in range(1500):
        assert_same(random_uops(rnd, lambda: rnd.choice(range(1, 9))))


@pytest.mark.parametrize("seed", range(2))
def test_random_fractional_masses(seed):
    rnd = random.Random(100 + seed)
    for _ in range(1500):
        assert_same(random_uops(rnd, lambda: rnd.choice([0.5, 1.5, 1 / 3, 2 / 3, 0.25, 1, 2, 3])))


def test_many_uops_and_wide_masks():
    rnd = random.Random(7)
    for ports in (16, 20, 64):
        uops = {}
        for _ in range(200):
            mask = 0
            while mask == 0:
                mask = rnd.getrandbits(ports) & rnd.getrandbits(ports)    # a few ports each
            uops[mask] = uops.get(mask, 0) + rnd.randint(1, 8)
        assert_same(uops)


def test_the_cases_of_test_bound():
    assert assert_same({0b011: 2, 0b001: 1, 0b100: 1})[:2] == (1.5, 0b011)
    assert assert_same({0b00110: 1, 0b01100: 1, 0b10100: 1})[:2] == (0.75, 0b11110)
    assert assert_same({0b1111: 1})[0] == 0.25
    t, neck, schedule = assert_same({0b0001: 0.5, 0b1001: 3})
    assert t == 1.75 and neck == 0b1001 and sum(schedule[0b1001].values()) == 3.0
    assert assert_same({0b01: 1 / 3, 0b11: 1})[0] == pytest.approx(2 / 3, rel=1e-15)
    for seed in range(100):                     # test_equals_the_engine_and_the_lp's inputs
        rnd = random.Random(seed)
        assert_same(random_uops(rnd, lambda: rnd.randint(1, 4), max_ports=10, max_masks=12))


def test_values_from_first_principles():
    # port 0 alone and {0, 1}: 6 uops on 2 ports, 3 each; the {0, 1} uop fills port 0 first
    assert assert_same({0b01: 2, 0b11: 4}) == (3.0, 0b11, {0b01: {0: 2.0}, 0b11: {0: 1.0, 1: 3.0}})
    # disjoint port sets: the busier one alone, 3 on port 0 (4 over {1, 2} is 2)
    assert assert_same({0b001: 3, 0b110: 4})[:2] == (3.0, 0b001)
    # port 0's own 2 uops bound it; the uops that may use it go to ports 1 and 2 instead
    assert assert_same({0b1: 2, 0b11: 0.5, 0b101: 1.5})[:2] == (2.0, 0b001)
    # two masks sharing port 1: 6 uops spread over the 3 ports, 2 each
    assert assert_same({0b011: 3, 0b110: 3})[:2] == (2.0, 0b111)
    # one uop on one port: 1 cycle
    assert assert_same({0b1: 1}) == (1.0, 0b1, {0b1: {0: 1.0}})
    # the 64th port: 6 uops over ports 0 and 63, none forced onto one of them past 3
    assert assert_same({1 << 63: 1, 1 << 63 | 1: 5})[:2] == (3.0, 1 << 63 | 1)


def test_exact_integers_of_the_c_function():
    assert _portflow.optimum([0b01, 0b11], [4, 8]) == (6, 0b11, (((0, 4),), ((0, 2), (1, 6))))
    assert _portflow.optimum([0b1, 0b10], [0, 2]) == (2, 0b10, ((), ((1, 2),)))


def test_beyond_64_bits_the_python_code_answers():
    huge = {0b1: 2**62, 0b11: 2**62}                          # scaled by 2: over 2**62 in all
    masks, masses = list(huge), [2 * m for m in huge.values()]
    assert _portflow.optimum(masks, masses) is None
    assert assert_same(huge)[:2] == (2.0**62, 0b11)
    assert _portflow.optimum([1, 1 << 64], [1, 1]) is None    # a 65th port
    assert assert_same({1: 1, 1 << 64: 1})[:2] == (1.0, 1 | 1 << 64)
    # a fraction whose scale makes the masses too large for int64
    odd = {0b1: Fraction(1, 999_999_937), 0b10: 2**40}
    assert assert_same(odd)[:2] == (2.0**40, 0b10)


def test_without_the_extension_the_python_code_runs(monkeypatch):
    uops = {0b011: 2, 0b001: 1, 0b100: 1}
    native = optimum(uops)
    monkeypatch.setattr(port_bound, "_portflow", None)
    assert optimum(uops) == native


@pytest.mark.parametrize("args, error", [
    ((1, [1]), TypeError),
    (([1], None), TypeError),
    (([1],), TypeError),
    (([1.0], [1]), TypeError),
    (([1], [1.5]), TypeError),
    ((["1"], [1]), TypeError),
    (([1], [1, 2]), ValueError),
    (([], []), ValueError),
    (([0], [1]), ValueError),
    (([-3], [1]), ValueError),
    (([1], [-1]), ValueError),
    (([1], [-2**70]), ValueError),
    # masses not scaled by lcm(1..ports): the iteration could stall, the Python code loops
    (([0b011, 0b100], [3, 1]), ValueError),
])
def test_bad_arguments_raise(args, error):
    with pytest.raises(error):
        _portflow.optimum(*args)
