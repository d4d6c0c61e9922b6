"""Experiment designs (infer/design.py): the pilot, the blockers, the balanced pairs, and the
blocker design against all pairs on a synthetic machine."""

from __future__ import annotations

import pytest

from pmpredict.model.experiments import ExperimentSet
from pmpredict.infer import design as designs
from pmpredict.infer.singletons_and_pairs import generate_experiments, singleton_throughputs
from pmpredict.infer.pmevo import InferConfig
from pmpredict.predict.metrics import mape
from pmpredict.predict.throughput import simulate

from test_infer import infer, measure, oracle_model, random_experiments

ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
SUB = "SUB_((REG:RW:G:64)),_((REG:R:G:64))"
IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
VADD = "VADDPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
VMUL = "VMULPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
VDIV = "VDIVPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"


def test_balanced_pairs_give_the_faster_form_as_much_work():
    t = {ADD: 0.25, IMUL: 1.0, VADD: 0.5}
    assert designs.balanced_pair(ADD, IMUL, t).counts == ((ADD, 4), (IMUL, 1))
    assert designs.balanced_pair(VADD, ADD, t).counts == ((ADD, 2), (VADD, 1))
    assert designs.balanced_pair(ADD, ADD.replace("64", "32"), {**t, ADD.replace("64", "32"): 0.25}
                                 ).length == 2
    exps = designs.blocker_experiments([ADD, IMUL, VADD], [IMUL, VADD], t,
                                       designs.pair_keys([designs.balanced_pair(ADD, IMUL, t)]))
    # ADD-IMUL is done already, IMUL-IMUL is no experiment, IMUL-VADD once
    assert sorted(e.forms() for e in exps) == [[ADD, VADD], [IMUL, VADD]]


def test_pilot_shares_follow_the_groups_and_spread_over_throughputs():
    forms = [ADD, SUB, IMUL, VADD, VMUL, VDIV, LOAD, STORE]
    t = {ADD: 0.25, SUB: 0.25, IMUL: 1.0, VADD: 0.5, VMUL: 0.5, VDIV: 5.0, LOAD: 0.33, STORE: 1.0}
    pilot = designs.pilot_forms(forms, t, size=5)
    # four groups (G64 ALU, V256, load, store): one each, the fifth to a larger group; in
    # the G64 group the two throughput bands first
    assert len(pilot) == 5 and LOAD in pilot and STORE in pilot
    assert IMUL in pilot and (ADD in pilot or SUB in pilot)
    assert designs.pilot_forms(forms, t, size=5) == pilot           # deterministic
    assert designs.pilot_forms(forms, t, size=20) == forms


def test_blockers_are_a_seeded_sample_of_the_pilot():
    pilot = [f"F{i:02d}" for i in range(32)]
    chosen = designs.choose_blockers(pilot, 5, 14)
    assert len(chosen) == 14 and set(chosen) <= set(pilot)
    assert chosen == sorted(chosen) == designs.choose_blockers(pilot, 5, 14)
    assert chosen != designs.choose_blockers(pilot, 6, 14)
    assert designs.choose_blockers(pilot[:10], 5, 14) == pilot[:10]


def test_mixes_are_seeded_random_multisets_of_four():
    forms = [f"F{i:02d}" for i in range(20)]
    mixes = designs.mix_experiments(forms, 64, 5)
    assert len(mixes) == 64 and all(e.length == 4 for e in mixes)
    assert {f for e in mixes for f in e.forms()} <= set(forms)
    assert mixes == designs.mix_experiments(forms, 64, 5) != designs.mix_experiments(forms, 64, 6)
    assert designs.mix_count(125) == 400


def test_design_phases_and_their_planned_sizes():
    forms = [f"F{i:02d}" for i in range(50)]
    t = {f: 0.25 * (1 + i % 5) for i, f in enumerate(forms)}

    def unmeasured(name, exps, fs):
        return ExperimentSet(tuple(fs), tuple(exps), "x86", name)
    sets, blockers = designs.design_sets("blockers", forms, t, unmeasured, pilot_size=16,
                                         blockers=6)
    assert list(sets) == ["pilot", "blockers", "mixes"] and len(blockers) == 6
    planned = designs.design_size(50, pilot=16, blockers=6)
    assert len(sets["blockers"]) == planned["blockers"] == 34 * 6   # pilot forms: in the pilot
    assert len(sets["mixes"]) == planned["mixes"] == 160
    assert 16 * 15 // 2 < len(sets["pilot"]) <= planned["pilot"]
    pairs, _ = designs.design_sets("pairs", forms, t, unmeasured)
    assert len(pairs["pairs"]) == 50 * 49 // 2


@pytest.mark.slow
def test_blocker_design_is_nearly_as_accurate_as_all_pairs_on_a_synthetic_machine():
    """Both designs inferred the same way, best of three starts: a single start of the exact
    moves ends in a local optimum on some seeds whatever the design (on this machine, all pairs
    0.66% with seed 0 and 2.95% with seed 1, the blockers 4.9% and 0.29%), which would compare
    the starts' luck, not the information in the experiments."""
    truth = oracle_model(seed=4, n_ports=6, n_forms=40)
    forms = list(truth.uops)

    def measured(name, exps, fs):
        return measure(truth, ExperimentSet(tuple(fs), tuple(exps), "x86", name), 0.02, 5)
    singles = measured("singletons", generate_experiments(forms).experiments[:len(forms)], forms)
    t = singleton_throughputs(singles)
    sets, blockers = designs.design_sets("blockers", forms, t, measured, pilot_size=16,
                                         blockers=8)
    small = singles
    for s in sets.values():
        small = small.concat(s)
    full = measure(truth, generate_experiments(forms, t), 0.02, 5)
    fresh = measure(truth, random_experiments(forms, 400, 5, 11), 0.0, 0)
    errors = {}
    for name, train in (("blockers", small), ("pairs", full)):
        predicted, _ = simulate(infer(train, 6, InferConfig(seed=0, restarts=3)), fresh)
        errors[name] = mape(predicted, fresh.measured())
    assert 2 * len(small) < len(full) and len(blockers) == 8
    assert errors["pairs"] < 1.0, errors          # the truth is recoverable from all pairs
    assert errors["blockers"] < errors["pairs"] + 1.0, errors
