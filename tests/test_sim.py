"""The exact simulator: known values from DESIGN.md / the PMEvo paper, and agreement with the LP."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmpredict.predict import throughput
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.model.machine import MachineModel


def model_of(ports, forms, r_max=None):
    """forms: {name: [(port names, count), ...]}"""
    index = {p: i for i, p in enumerate(ports)}
    uops = {}
    for name, uop_list in forms.items():
        uops[name] = tuple(sorted((sum(1 << index[p] for p in ps), c) for ps, c in uop_list))
    return MachineModel("t", "x86", tuple(ports), uops, r_max=r_max)


def run(model, *experiments):
    exps = ExperimentSet(model.forms, tuple(Experiment.of(e) for e in experiments))
    cycles, masks = throughput.simulate(model, exps)
    return cycles, [set(model.port_names(m)) if m >= 0 else {"frontend"} for m in masks]


PAPER = model_of(["P1", "P2", "P3"], {"mul": [(["P1"], 1)], "add": [(["P1", "P2"], 1)],
                                      "sub": [(["P1", "P2"], 1)], "store": [(["P3"], 1)]})


def test_paper_example_add_add_mul_store():
    cycles, bottleneck = run(PAPER, {"add": 2, "mul": 1, "store": 1})
    assert cycles[0] == 1.5
    assert bottleneck[0] == {"P1", "P2"}


def test_pairs_shortcut_counterexample():
    # a->{1,2}, b->{2,3}, c->{2,4}: the true optimum is 3/4 (all four ports); any pair gives 2/3
    m = model_of(["1", "2", "3", "4"], {"a": [(["1", "2"], 1)], "b": [(["2", "3"], 1)],
                                        "c": [(["2", "4"], 1)]})
    cycles, bottleneck = run(m, ["a", "b", "c"])
    assert cycles[0] == 0.75
    assert bottleneck[0] == {"1", "2", "3", "4"}


@pytest.mark.parametrize("k", range(1, 9))
def test_singleton_on_k_ports(k):
    ports = [str(i) for i in range(9)]
    m = model_of(ports, {"f": [(ports[:k], 1)]})
    cycles, bottleneck = run(m, ["f"])
    assert cycles[0] == pytest.approx(1.0 / k, rel=1e-15)
    assert bottleneck[0] == set(ports[:k])


def test_non_pipelined_divider_occupies_its_port():
    m = model_of(["0", "DIV"], {"div": [(["0"], 1), (["DIV"], 4)], "add": [(["0"], 1)]})
    cycles, bottleneck = run(m, ["div"], {"div": 1, "add": 5})
    assert list(cycles) == [4.0, 6.0]
    assert bottleneck == [{"DIV"}, {"0"}]


def test_r_max_caps_throughput():
    m = model_of(["0", "1", "2", "3"], {"add": [(["0", "1", "2", "3"], 1)]}, r_max=2.0)
    cycles, bottleneck = run(m, {"add": 6}, {"add": 1})
    assert cycles[0] == 3.0           # 6 instructions at 2 per cycle, not 6/4 = 1.5
    assert bottleneck[0] == {"frontend"}
    assert cycles[1] == 0.5


def test_unknown_form_is_nan_not_zero():
    exps = ExperimentSet(("add", "nope"), (Experiment.of(["add", "nope"]), Experiment.of(["add"])))
    cycles, _ = throughput.simulate(PAPER, exps)
    assert np.isnan(cycles[0]) and cycles[1] == 0.5


def test_disjoint_components_with_equal_ratio_report_both():
    m = model_of(["0", "1"], {"a": [(["0"], 1)], "b": [(["1"], 1)]})
    cycles, bottleneck = run(m, ["a", "b"])
    assert cycles[0] == 1.0 and bottleneck[0] == {"0", "1"}


def test_port_renaming_invariance():
    rng = np.random.default_rng(7)
    ports = [str(i) for i in range(8)]
    base = random_model(rng, 8, 10)
    perm = rng.permutation(8)
    renamed = {f: tuple(sorted((permute_mask(m, perm), c) for m, c in u)) for f, u in base.uops.items()}
    other = base.with_uops(renamed)
    exps = random_experiments(rng, base.forms, 200, 5)
    a, ma = throughput.simulate(base, exps)
    b, mb = throughput.simulate(other, exps)
    np.testing.assert_array_equal(a, b)
    assert [permute_mask(int(m), perm) for m in ma] == list(mb)
    assert ports  # names are irrelevant to the engine


def permute_mask(mask, perm):
    return sum(1 << int(perm[p]) for p in range(len(perm)) if mask >> p & 1)


def random_model(rng, n_ports, n_forms, max_uops=3, max_count=3):
    uops = {}
    for f in range(n_forms):
        pairs = []
        for _ in range(rng.integers(1, max_uops + 1)):
            mask = int(rng.integers(1, 1 << n_ports))
            pairs.append((mask, int(rng.integers(1, max_count + 1))))
        merged = {}
        for m, c in pairs:
            merged[m] = merged.get(m, 0) + c
        uops[f"f{f}"] = tuple(sorted(merged.items()))
    return MachineModel("rand", "x86", tuple(str(i) for i in range(n_ports)), uops)


def random_experiments(rng, forms, n, length):
    return ExperimentSet(tuple(forms), tuple(
        Experiment.of(list(rng.choice(forms, size=length))) for _ in range(n)))


def lp_cycles(model, experiment, r_max=None):
    masks, counts = model.to_arrays()
    index = model.form_index()
    forms = np.array([index[f] for f, _ in experiment.counts])
    mults = np.array([n for _, n in experiment.counts], dtype=float)
    umask, umass, n_insn = throughput.uop_masses(masks, counts, forms, mults)
    cycles, load, _ = throughput.lp_schedule(umask, umass, len(model.ports), n_insn, r_max)
    return cycles, load


@st.composite
def mapping_and_experiment(draw):
    n_ports = draw(st.integers(1, 12))
    n_forms = draw(st.integers(1, 8))
    uop_lists = []
    for _ in range(n_forms):
        n_uops = draw(st.integers(1, 4))
        uop_lists.append([(draw(st.integers(1, (1 << n_ports) - 1)), draw(st.integers(1, 4)))
                          for _ in range(n_uops)])
    uops = {}
    for f, pairs in enumerate(uop_lists):
        merged = {}
        for m, c in pairs:
            merged[m] = merged.get(m, 0) + c
        uops[f"f{f}"] = tuple(sorted(merged.items()))
    model = MachineModel("h", "x86", tuple(str(i) for i in range(n_ports)), uops)
    # repeated forms are allowed: multiplicities up to 4
    chosen = draw(st.lists(st.sampled_from(sorted(uops)), min_size=1, max_size=8))
    return model, Experiment.of(chosen)


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping_and_experiment())
def test_simulator_equals_lp(case):
    model, experiment = case
    cycles, bottleneck = throughput.simulate(model, ExperimentSet(model.forms, (experiment,)))
    expected, load = lp_cycles(model, experiment)
    assert cycles[0] == pytest.approx(expected, rel=1e-7, abs=1e-9)
    # the reported bottleneck is saturated in the LP's optimal schedule too
    for p in model.port_names(int(bottleneck[0])):
        assert load[model.ports.index(p)] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("method", [throughput.METHOD_AUTO, throughput.METHOD_ENUM, throughput.METHOD_SOS, throughput.METHOD_FLOW])
def test_every_engine_path_equals_lp_on_random_batch(method):
    """10-port three-level mappings, length-5 experiments, each solver forced in turn."""
    rng = np.random.default_rng(2020)
    model = random_model(rng, 10, 40, max_uops=4)
    exps = random_experiments(rng, model.forms, 300, 5)
    masks, counts = model.to_arrays()
    ptr, forms, mults = exps.to_arrays(model.form_index())
    cycles, bottleneck = throughput.simulate_arrays(masks, counts, ptr, forms, mults, method=method)
    expected = [lp_cycles(model, e)[0] for e in exps.experiments]
    np.testing.assert_allclose(cycles, expected, rtol=1e-7)
    reference = throughput.simulate_arrays(masks, counts, ptr, forms, mults, method=throughput.METHOD_ENUM)[1]
    np.testing.assert_array_equal(bottleneck, reference)   # the same maximal tight set


def test_more_uops_than_bitset_width_uses_port_lattice():
    # 70 distinct uops on 12 ports: beyond the flow solver's 62-uop bitsets
    rng = np.random.default_rng(5)
    masks = rng.choice(np.arange(1, 1 << 12), size=70, replace=False)
    uops = {f"f{i}": ((int(m), int(rng.integers(1, 3))),) for i, m in enumerate(masks)}
    model = MachineModel("wide", "x86", tuple(str(i) for i in range(12)), uops)
    exps = ExperimentSet(model.forms, (Experiment.of(list(uops)),))
    cycles, _ = throughput.simulate(model, exps)
    assert cycles[0] == pytest.approx(lp_cycles(model, exps.experiments[0])[0], rel=1e-7)


def test_r_max_matches_lp_with_cap():
    rng = np.random.default_rng(3)
    model = random_model(rng, 6, 12).with_uops(random_model(rng, 6, 12).uops, r_max=3.0)
    exps = random_experiments(rng, model.forms, 200, 6)
    cycles, _ = throughput.simulate(model, exps)
    expected = [lp_cycles(model, e, r_max=3.0)[0] for e in exps.experiments]
    np.testing.assert_allclose(cycles, expected, rtol=1e-7)


def test_population_entry_point_equals_single():
    rng = np.random.default_rng(11)
    models = [random_model(rng, 7, 15) for _ in range(6)]
    exps = random_experiments(rng, models[0].forms, 100, 4)
    arrays = [m.to_arrays() for m in models]
    width = max(a[0].shape[1] for a in arrays)
    masks = np.zeros((6, 15, width), np.int64)
    counts = np.zeros((6, 15, width))
    for p, (mk, ct) in enumerate(arrays):
        masks[p, :, :mk.shape[1]] = mk
        counts[p, :, :ct.shape[1]] = ct
    ptr, forms, mults = exps.to_arrays(models[0].form_index())
    pop = throughput.simulate_population(masks, counts, ptr, forms, mults)
    for p, m in enumerate(models):
        np.testing.assert_array_equal(pop[p], throughput.simulate(m, exps)[0])


def test_too_many_distinct_uops_falls_back_to_lp():
    # 40 single-port uops on 40 ports in one component is beyond both numba paths
    ports = tuple(str(i) for i in range(40))
    uops = {f"f{i}": (((1 << i) | (1 << ((i + 1) % 40)), 1),) for i in range(40)}
    uops["heavy"] = (((1 << 0), 3),)
    model = MachineModel("big", "x86", ports, uops)
    exps = ExperimentSet(model.forms, (Experiment.of(list(uops)),))
    cycles, _ = throughput.simulate(model, exps)
    assert cycles[0] == pytest.approx(lp_cycles(model, exps.experiments[0])[0], rel=1e-7)


@pytest.mark.parametrize("method", [throughput.METHOD_AUTO, throughput.METHOD_ENUM, throughput.METHOD_SOS, throughput.METHOD_FLOW])
def test_sparse_high_ports_every_path_equals_lp(method):
    """14 ports scattered over bits 3..45: masks beyond the merge table's direct range (hash
    probing), lattice indices compressed to the used ports, lattices larger than the 1/|Q| table."""
    rng = np.random.default_rng(44)
    used = sorted(int(p) for p in rng.choice(np.arange(3, 46), size=14, replace=False))
    uops = {}
    for f in range(30):
        merged = {}
        for _ in range(rng.integers(1, 4)):
            chosen = rng.choice(used, size=rng.integers(1, 6), replace=False)
            mask = sum(1 << int(p) for p in chosen)
            merged[mask] = merged.get(mask, 0) + int(rng.integers(1, 3))
        uops[f"f{f}"] = tuple(sorted(merged.items()))
    model = MachineModel("sparse", "x86", tuple(str(i) for i in range(46)), uops)
    exps = random_experiments(rng, model.forms, 150, 6)
    masks, counts = model.to_arrays()
    ptr, forms, mults = exps.to_arrays(model.form_index())
    cycles, bottleneck = throughput.simulate_arrays(masks, counts, ptr, forms, mults, method=method)
    for e, experiment in enumerate(exps.experiments):
        expected, load = lp_cycles(model, experiment)
        assert cycles[e] == pytest.approx(expected, rel=1e-7)
        for p in model.port_names(int(bottleneck[e])):
            assert load[model.ports.index(p)] == pytest.approx(expected, rel=1e-6)


def test_results_do_not_depend_on_earlier_calls():
    # the per-thread workspace (merge table never cleared, stamped instead) is reused
    rng = np.random.default_rng(9)
    first, other = random_model(rng, 9, 20, max_uops=4), random_model(rng, 9, 20, max_uops=4)
    exps = random_experiments(rng, first.forms, 200, 5)
    before = throughput.simulate(first, exps)
    throughput.simulate(other, random_experiments(rng, other.forms, 200, 7))
    after = throughput.simulate(first, exps)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    expected = [lp_cycles(first, e)[0] for e in exps.experiments]
    np.testing.assert_allclose(after[0], expected, rtol=1e-7)
