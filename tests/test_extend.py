"""New forms fitted into a fixed mapping (pmpredict/host/extend.py), against a known ground truth: the
experiments are what the true mapping predicts, the fit must reproduce them and predict
experiments it never saw, and it must never move an existing form."""

from __future__ import annotations

import itertools
import random

import pytest

from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.infer.singletons_and_pairs import singleton_experiments
from pmpredict.host.extend import (blockers_of, extension_experiments, fit_new_forms,
                                   model_throughput, overlap_experiments)
from pmpredict.model.machine import MachineModel
from pmpredict.predict.throughput import simulate

G, V = "((REG:RW:G:64)),_((REG:R:G:64))", "((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
MEM = "ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD, SUB, IMUL = f"ADD_{G}", f"SUB_{G}", f"IMUL_{G}"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
VPADDD, VPSUBD, VPSHUFB, VPMULLD = f"VPADDD_{V}", f"VPSUBD_{V}", f"VPSHUFB_{V}", f"VPMULLD_{V}"
VPADDD_M = f"VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_{MEM}"
ALU, MUL, SHUF, LOADS, VEC, P0 = 0b1111, 0b0010, 0b0100, 0b110000, 0b0011, 0b0001
# a small Skylake-like core: 4 ALUs (0-3), the multiplier on 1, a shuffle unit on 2, vector
# ALUs on 0-1, loads on 4-5
TRUTH = {ADD: ((ALU, 1),), IMUL: ((MUL, 1),), LOAD: ((LOADS, 1),), VPADDD: ((VEC, 1),),
         VPSHUFB: ((SHUF, 1),),
         SUB: ((ALU, 1),), VPSUBD: ((VEC, 1),), VPMULLD: ((P0, 2),),
         VPADDD_M: ((VEC, 1), (LOADS, 1))}
FIXED = {f: TRUTH[f] for f in (ADD, IMUL, LOAD, VPADDD, VPSHUFB)}
NEW = [SUB, VPSUBD, VPMULLD, VPADDD_M]
PORTS = tuple("012345")


def model_of(uops) -> MachineModel:
    return MachineModel(name="m", isa="x86", ports=PORTS, uops=dict(uops))


def measured(experiments) -> ExperimentSet:
    """The experiments with the cycles the true mapping gives them."""
    forms = tuple(sorted({f for e in experiments for f, _ in e.counts}))
    exps = ExperimentSet(forms, tuple(experiments), "x86", "truth")
    cycles, _ = simulate(model_of(TRUTH), exps)
    return ExperimentSet(forms, tuple(e.__class__(e.counts, float(c), e.other)
                                      for e, c in zip(experiments, cycles)), "x86", "truth")


def test_blockers_saturate_the_fixed_port_sets():
    throughput = model_throughput(FIXED)
    assert throughput == {ADD: 0.25, IMUL: 1.0, LOAD: 0.5, VPADDD: 0.5, VPSHUFB: 1.0}
    assert set(blockers_of(FIXED, throughput)) == set(FIXED)   # each form has a port set alone
    assert model_throughput({ADD: ((ALU, 1),)}, r_max=2.0) == {ADD: 0.5}


def test_new_forms_fit_a_fixed_mapping_and_predict_what_they_never_saw():
    singles = measured(singleton_experiments(NEW))
    throughput = {**model_throughput(FIXED), **{e.forms()[0]: e.cycles for e in
                                               singles.experiments}}
    blockers = blockers_of(FIXED, throughput)
    pairs = measured(extension_experiments(NEW, blockers, throughput))
    assert len(pairs.experiments) == len(NEW) * len(blockers)
    fit = fit_new_forms(FIXED, len(PORTS), singles.concat(pairs), NEW, seed=3)
    assert set(fit.uops) == set(NEW) and max(fit.error.values()) < 1e-9
    assert fit.experiments == len(NEW) * (1 + len(blockers))
    # unseen: every pair of new forms, and random mixes of four forms from everything
    rng = random.Random(5)
    unseen = [Experiment.of({a: 1, b: 1}) for a, b in itertools.combinations(NEW, 2)]
    unseen += [Experiment.of(dict.fromkeys(rng.sample(sorted(TRUTH), 4), 1)) for _ in range(40)]
    truth = measured(unseen)
    fitted, _ = simulate(model_of({**FIXED, **fit.uops}), truth)
    errors = [abs(p - e.cycles) / e.cycles for p, e in zip(fitted, truth.experiments)]
    assert max(errors) < 1e-9


def test_fixed_forms_never_move_and_unmeasured_forms_get_nothing():
    wrong = {**FIXED, ADD: ((0b0001, 1),)}          # a fixed form that does not fit the data
    singles = measured(singleton_experiments([SUB]))
    throughput = {**model_throughput(FIXED), SUB: singles.experiments[0].cycles}
    pairs = measured(extension_experiments([SUB], [ADD, IMUL], throughput))
    fit = fit_new_forms(wrong, len(PORTS), singles.concat(pairs), [SUB, VPSUBD, ADD])
    assert set(fit.uops) == {SUB}                   # VPSUBD: no experiment; ADD: fixed
    assert fit.error[SUB] > 0                       # the wrong ADD cannot be explained away


@pytest.mark.parametrize("r_max", [None, 3.0])
def test_an_empty_extension_is_empty(r_max):
    fit = fit_new_forms(FIXED, len(PORTS), measured([Experiment.of({ADD: 1})]), [], r_max=r_max)
    assert fit.uops == {} and fit.error == {}


# three load ports, 256-bit loads on two of them: the blockers cannot say which two
LOAD3_PORTS, WIDE_LOADS = 0b1110000, 0b0110000
LOAD3 = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
YLOAD = f"VMOVDQU_((REG:W:V:256)),_{MEM}"
YADD_M = f"VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_{MEM}"
WIDE_TRUTH = {ADD: ((ALU, 1),), LOAD3: ((LOAD3_PORTS, 1),), VPADDD: ((VEC, 1),),
              YLOAD: ((WIDE_LOADS, 1),), YADD_M: ((VEC, 1), (WIDE_LOADS, 1))}


def _wide_measured(experiments) -> ExperimentSet:
    forms = tuple(sorted({f for e in experiments for f, _ in e.counts}))
    exps = ExperimentSet(forms, tuple(experiments), "x86", "truth")
    cycles, _ = simulate(MachineModel("m", "x86", tuple("0123456"), dict(WIDE_TRUTH)), exps)
    return ExperimentSet(forms, tuple(e.__class__(e.counts, float(c), e.other)
                                      for e, c in zip(experiments, cycles)), "x86", "truth")


def _wide_fit(seed: int, together: bool, known=()):
    """The two wide-load forms fitted (those in `known` are the model's already, used by the
    same kernel); the prediction of a mix of three loads, and its truth."""
    fixed = {f: WIDE_TRUTH[f] for f in (ADD, LOAD3, VPADDD, *known)}
    new = [f for f in (YLOAD, YADD_M) if f not in known]
    singles = _wide_measured(singleton_experiments(new))
    throughput = {**model_throughput(fixed), **{e.forms()[0]: e.cycles
                                                for e in singles.experiments}}
    both = singles.concat(_wide_measured(extension_experiments(
        new, blockers_of(fixed, throughput), throughput)))
    fit = fit_new_forms(fixed, 7, both, new, seed=seed)
    if together:
        pairs = overlap_experiments(fit.uops, throughput, 3 * len(new),
                                    {f: fixed[f] for f in known})
        assert pairs, "the two loads share ports in every fit"
        fit = fit_new_forms(fixed, 7, both.concat(_wide_measured(pairs)), new, seed=seed,
                            start=fit.uops)
    mixed = _wide_measured([Experiment.of({YLOAD: 2, YADD_M: 1})])   # mix_avx2's three loads
    fitted, _ = simulate(MachineModel("m", "x86", tuple("0123456"), {**fixed, **fit.uops}), mixed)
    return float(fitted[0]), mixed.experiments[0].cycles


@pytest.mark.parametrize("known", [(), (YLOAD,)], ids=["both new", "one in the model"])
def test_new_forms_that_share_ports_are_measured_together_so_every_fit_agrees(known):
    """Two 256-bit loads on two of three load ports: the pairs with the blockers fit any two
    (some seeds put the loads on different pairs and predict a mix of three loads at 1.0
    instead of 1.5); measured beside each other (both new, or the new one beside the model's
    form of the same kernel), every seed's fit predicts the mix."""
    alone = [_wide_fit(seed, together=False, known=known) for seed in range(8)]
    assert any(abs(p - t) > 0.1 for p, t in alone)          # the ambiguity is real
    for seed in range(8):
        predicted, truth = _wide_fit(seed, together=True, known=known)
        assert predicted == pytest.approx(truth), seed


# --- the pairs of forms the kernels use together (extend.py step 4) ------------------------

def test_kernel_pairs_are_the_pairs_one_kernel_uses_with_a_form_that_can_move():
    from pmpredict.host.extend import kernel_pairs, pair_digest
    known = {f: TRUTH[f] for f in (ADD, SUB, IMUL, LOAD)}
    kernels = [[SUB, ADD, IMUL], [ADD, IMUL], [LOAD, SUB, VPADDD]]      # VPADDD: not in the model
    assert kernel_pairs(kernels, known, movable={SUB}) == \
        [tuple(sorted((ADD, SUB))), tuple(sorted((IMUL, SUB))), tuple(sorted((LOAD, SUB)))]
    checked = {pair_digest(SUB, ADD)}                                   # either order
    assert kernel_pairs(kernels, known, {SUB}, checked) == \
        [tuple(sorted((IMUL, SUB))), tuple(sorted((LOAD, SUB)))]
    assert kernel_pairs(kernels, known, movable=set()) == []
    # a long kernel gives at most per_kernel pairs, those whose forms share a port first:
    # sub and add (the ALUs), sub and imul (its port is an ALU), then sub and the load
    assert kernel_pairs([[SUB, LOAD, ADD, IMUL]], known, {SUB}, per_kernel=2) == \
        [tuple(sorted((ADD, SUB))), tuple(sorted((IMUL, SUB)))]


def test_a_pair_still_off_after_its_fit_has_its_other_form_fitted_next():
    """partners_to_fit: of the kernel pairs a fit left off, the forms it did not move (the
    core form beside a fitted one), once each, never a split variant."""
    from pmpredict.host.extend import partners_to_fit
    from pmpredict.isa.forms import split_variant
    still = [Experiment.of({SUB: 1, IMUL: 1}), Experiment.of({SUB: 1, ADD: 2}),
             Experiment.of({IMUL: 1, split_variant(LOAD): 1})]
    assert partners_to_fit(still, [SUB]) == sorted([ADD, IMUL])
    assert partners_to_fit(still, [SUB, ADD, IMUL]) == []
    assert partners_to_fit([], [SUB]) == []


def test_each_form_takes_the_candidate_its_own_experiments_prefer():
    """per_form: of the uops two fits gave, each form takes those closest on the experiments
    it is in, the other forms as they stand: a fit that got sub right and vpsubd wrong and one
    the other way round make one model with both right (the measurements the truth's)."""
    from pmpredict.host.extend import mean_error, per_form
    exps = measured(singleton_experiments([SUB, VPSUBD])
                    + [Experiment.of({SUB: 1, ADD: 1}), Experiment.of({VPSUBD: 1, VPADDD: 1}),
                       Experiment.of({SUB: 2, VPSUBD: 1, LOAD: 1})]).experiments
    wrong_sub, wrong_vpsubd = ((0b110000, 1),), ((0b001100, 1),)
    first = {**FIXED, SUB: TRUTH[SUB], VPSUBD: wrong_vpsubd}
    second = {**FIXED, SUB: wrong_sub, VPSUBD: TRUTH[VPSUBD]}
    assert mean_error(first, exps) > 0 and mean_error(second, exps) > 0
    candidates = {SUB: [TRUTH[SUB], wrong_sub], VPSUBD: [wrong_vpsubd, TRUTH[VPSUBD]]}
    chosen = per_form(first, candidates, exps)
    assert chosen[SUB] == TRUTH[SUB] and chosen[VPSUBD] == TRUTH[VPSUBD]
    assert mean_error(chosen, exps) == pytest.approx(0.0)
    # the forms without candidates never move
    assert {f: chosen[f] for f in FIXED} == FIXED


def test_a_candidate_that_misses_its_singleton_is_not_taken_for_its_pairs():
    """per_form keeps a form's singleton within SINGLETON_SLACK where a candidate does: uops
    that fit the form's pairs closer but miss its singleton (Zen 4: `movdqu xmm, m128`
    refitted to 0.33 cycles alone, measured 0.50) lose to uops that keep it, and a start that
    misses it moves to them. Here sub alone measures the truth's 0.25 cycles, and three pairs
    with vpaddd measure 1.00, as sub on the vector ALUs would run them."""
    from pmpredict.host.extend import SINGLETON_SLACK, mean_error, per_form

    def timed(counts, cycles):
        e = Experiment.of(counts)
        return e.__class__(e.counts, cycles, e.other)
    exps = [timed({SUB: 1}, 0.25)] + [timed({SUB: 1, VPADDD: 1}, 1.0)] * 3
    narrow = ((VEC, 1),)
    assert mean_error({**FIXED, SUB: narrow}, exps) < mean_error({**FIXED, SUB: TRUTH[SUB]}, exps)
    assert mean_error({**FIXED, SUB: narrow}, exps[:1]) > SINGLETON_SLACK
    for start in (TRUTH[SUB], narrow):
        chosen = per_form({**FIXED, SUB: start}, {SUB: [start, narrow if start != narrow
                                                         else TRUTH[SUB]]}, exps)
        assert chosen[SUB] == TRUTH[SUB]
    # where no candidate keeps the singleton, the closest overall is taken as before
    wide = ((0b111111, 1),)
    assert per_form({**FIXED, SUB: wide}, {SUB: [wide, narrow]}, exps)[SUB] == narrow


def test_earlier_pairs_are_a_refitted_forms_pairs_checked_before():
    """The pairs earlier checks measured with a form to fit again go into its fit: those of
    the model's forms whose digest was checked, in either order, the port-sharing ones first,
    at most per_form a form."""
    from pmpredict.host.extend import earlier_pairs, pair_digest
    known = {f: TRUTH[f] for f in (ADD, SUB, IMUL, LOAD, VPADDD)}
    checked = {pair_digest(LOAD, SUB), pair_digest(SUB, ADD), pair_digest(IMUL, VPADDD)}
    # sub with add (the ALUs) before sub with the load (no port shared)
    assert earlier_pairs([SUB], known, checked) == \
        [tuple(sorted((ADD, SUB))), tuple(sorted((LOAD, SUB)))]
    assert earlier_pairs([SUB], known, checked, per_form=1) == [tuple(sorted((ADD, SUB)))]
    # a pair of two forms fitted again comes once; a form nothing was checked with has none
    assert earlier_pairs([SUB, ADD], known, checked) == \
        [tuple(sorted((ADD, SUB))), tuple(sorted((LOAD, SUB)))]
    assert earlier_pairs([LOAD], known, set()) == []
    assert earlier_pairs([VPADDD], known, checked) == [tuple(sorted((IMUL, VPADDD)))]


def test_the_model_cycles_of_an_experiment_are_the_simulators():
    from pmpredict.host.extend import predicted_cycles
    exps = [Experiment.of({ADD: 1, SUB: 1}), Experiment.of({VPMULLD: 1, VPADDD: 3}),
            Experiment.of({LOAD: 2, VPADDD_M: 1, IMUL: 1})]
    cycles, _ = simulate(model_of(TRUTH), ExperimentSet(
        tuple(sorted({f for e in exps for f, _ in e.counts})), tuple(exps), "x86", "t"))
    for e, c in zip(exps, cycles):
        assert predicted_cycles(TRUTH, e.counts) == pytest.approx(float(c))
    assert predicted_cycles(TRUTH, Experiment.of({ADD: 1}).counts, r_max=2.0) == 0.5


def test_a_form_fitted_onto_the_wrong_port_set_is_fitted_again_from_a_kernels_pair():
    """sub added in a run whose blockers could not tell the four ALUs from four other ports
    (its singleton, 0.25, fits both): the pair add + sub a kernel uses, 0.50 measured, is
    predicted 0.33; fitted again on it, sub shares add's ports and the pair is right."""
    from pmpredict.host.extend import mispredicted, predicted_cycles, refit
    wrong = {**FIXED, SUB: ((0b111100, 1),)}
    pair = measured([Experiment.of({ADD: 1, SUB: 1})])
    assert pair.experiments[0].cycles == 0.5
    assert predicted_cycles(wrong, pair.experiments[0].counts) == pytest.approx(1 / 3)
    assert mispredicted(wrong, pair.experiments) == list(pair.experiments)
    throughput = model_throughput(wrong)
    alone = measured(singleton_experiments([SUB])
                     + extension_experiments([SUB], blockers_of(FIXED, throughput), throughput))
    moved = refit(wrong, len(PORTS), alone.concat(pair), [SUB])
    assert set(moved) == {SUB}
    fixed = {**wrong, **moved}
    assert not mispredicted(fixed, pair.experiments)
    assert not mispredicted(fixed, alone.experiments)
    # and one it never saw: sub beside the other ALU form of a kernel, and two subs with a load
    unseen = measured([Experiment.of({SUB: 2, ADD: 2, LOAD: 1}), Experiment.of({SUB: 3})])
    assert not mispredicted(fixed, unseen.experiments)
    # a form on the right ports stays where it is
    assert refit(TRUTH, len(PORTS), alone.concat(pair), [SUB]) == {}
