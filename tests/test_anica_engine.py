"""AnICA's engine (pmpredict.anica.algorithm, .campaign) against hand-built predictors: the
reference counts instructions, the other counts some class of them more. Interestingness,
minimisation to the culprit, generalisation to the culprit's class (a mnemonic, an aliasing
constraint), a campaign that finds exactly the planted class, reproducibility and
stop-and-resume."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

from pmpredict.anica import domain
from pmpredict.anica.algorithm import (Generalisation, disagreement, generalise, is_interesting,
                                       minimise)
from pmpredict.anica.campaign import Campaign, CampaignConfig
from pmpredict.anica.campaign import STATE_VERSION
from pmpredict.anica.concrete import (ConcreteBlock, block_values, constant_base_slots,
                                      memory_crossings, slots_of)
from pmpredict.anica.domain import CONSTANT, CROSSES, MUST, TOP, abstract, contains, covers
from pmpredict.anica.schemes import scheme_of, schemes_for
from pmpredict.formats.model_files import load_model

ADD_IMM8 = "ADD_((REG:RW:G:64)),_((IMM:8))"
ADD_RR = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
XOR_RR = "XOR_((REG:RW:G:64)),_((REG:R:G:64))"
VADDPS = "VADDPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
VMULPS = "VMULPS_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
MOV_RR = "MOV_((REG:W:G:64)),_((REG:R:G:64))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"


@functools.lru_cache(maxsize=None)
def schemes(name: str):
    return schemes_for(load_model(name).uops)


class Predictors:
    """P0 counts instructions; P1 adds `extra` cycles for each instruction `culprit(block, i)`
    marks; P1 fails (NaN) on blocks with a vsqrtpd. Counts the blocks and calls it answers."""

    def __init__(self, culprit, extra: float = 4.0):
        self.culprit = culprit
        self.extra = extra
        self.blocks = 0
        self.calls = 0

    def __call__(self, blocks):
        self.calls += 1
        self.blocks += len(blocks)
        rows = []
        for b in blocks:
            n = len(b)
            hits = sum(1 for i in range(n) if self.culprit(b, i))
            failed = any(line.startswith("vsqrtpd") for line in b.instructions)
            rows.append([float(n), math.nan if failed else n + self.extra * hits])
        return np.array(rows)


def mnemonic_is(name):
    return lambda b, i: b.instructions[i].split()[0] == name


def stores(b, i):
    return scheme_of(b.forms[i]).memory in ("store", "load+store")


def add_feeds_next(b, i):
    """An add whose destination is the second operand of the next instruction."""
    if i + 1 >= len(b) or b.instructions[i].split()[0] != "add":
        return False
    values = block_values(b)
    dest = values[i][0]
    return isinstance(dest, str) and len(values[i + 1]) > 1 and values[i + 1][1] == dest


def crosses_a_line(b, i):
    """A memory access of instruction i that crosses a cache line."""
    return any(crosses for (j, _), crosses in memory_crossings(b).items() if j == i)


def through_a_constant_base(b, i):
    """A memory access of instruction i through a base the block sets to a constant."""
    return any(constant for (j, _), constant in constant_base_slots(b).items() if j == i)


def block(*pairs) -> ConcreteBlock:
    return ConcreteBlock(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


FIVE = block(("vaddps ymm1, ymm2, ymm3", VADDPS), ("mov rcx, rdx", MOV_RR),
             ("add rax, 42", ADD_IMM8), ("vmulps ymm2, ymm3, ymm4", VMULPS),
             ("mov qword ptr [rsi + 64], r8", STORE))


def test_interestingness():
    assert disagreement([2.0, 3.0]) == pytest.approx(0.5)
    assert disagreement([2.0, 2.0, 1.0]) == pytest.approx(1.0)     # largest over predictors
    assert is_interesting([2.0, 3.0], 0.5) and not is_interesting([2.0, 2.9], 0.5)
    assert not is_interesting([2.0, math.nan]) and math.isnan(disagreement([math.nan, 1.0]))
    assert not is_interesting([2.0])                                 # nothing to compare with
    assert is_interesting([0.0, 1.0]) and not is_interesting([0.0, 0.0])


def test_minimisation_finds_the_one_culprit():
    evaluate = Predictors(mnemonic_is("add"))
    assert is_interesting(evaluate([FIVE])[0])                        # 5 vs 9 cycles
    result = minimise(FIVE, evaluate, 0.5)
    assert result.block.instructions == ("add rax, 42",)
    assert result.calls == evaluate.blocks - 1 and result.calls == 5 + 4 + 3 + 2
    assert list(result.row) == [1.0, 5.0]


def test_generalisation_keeps_the_culprits_mnemonic_and_drops_the_rest():
    evaluate = Predictors(mnemonic_is("add"))
    result = generalise(block(("add rax, 42", ADD_IMM8)), schemes("skl"), evaluate,
                        np.random.default_rng(1), threshold=0.5, samples=30)
    (ai,) = result.abstract.instructions
    assert ai.mnemonic == ("add", 0)
    assert all(getattr(ai, f) is TOP for f in ("form", "category", "extension", "memory",
                                               "mem_width", "operands"))
    assert result.interesting_ratio >= 0.97 and result.samples == 30
    assert result.mean_disagreement == pytest.approx(4.0) and result.pertinent
    assert result.calls == evaluate.blocks
    assert evaluate.calls == sum(1 for s in result.steps if s.samples)   # a call per sampling
    assert any(s.name.startswith("#1.mnemonic") and not s.accepted for s in result.steps)
    assert domain.describe(result.abstract) == "add"
    for w in result.witnesses:
        assert contains(result.abstract, w.block) and is_interesting(w.cycles)


def test_generalisation_keeps_the_must_alias_of_an_aliasing_culprit():
    evaluate = Predictors(add_feeds_next, extra=2.0)
    chained = block(("add rax, rcx", ADD_RR), ("xor rdx, rax", XOR_RR))
    assert is_interesting(evaluate([chained])[0])
    result = generalise(chained, schemes("zen4-vm"), evaluate, np.random.default_rng(0),
                        threshold=0.5, samples=30)
    assert ((0, 0), (1, 1), MUST) in result.abstract.aliasing
    assert result.abstract.instructions[0].mnemonic == ("add", 0)
    assert result.interesting_ratio >= 0.97
    assert any(s.name == "alias #1.op1 = #2.op2 -> TOP" and not s.accepted for s in result.steps)
    # the other constraints went: a second operand equal to the first changes nothing
    assert all(r == MUST for _, _, r in result.abstract.aliasing)
    assert covers(result.abstract, chained)


def test_generalisation_stops_at_an_uninteresting_beta():
    evaluate = Predictors(mnemonic_is("imul"))
    result = generalise(block(("add rax, 42", ADD_IMM8)), schemes("skl"), evaluate,
                        np.random.default_rng(0), samples=10)
    assert not result.pertinent and result.abstract == abstract(block(("add rax, 42", ADD_IMM8)))
    assert result.calls == 10 and len(result.steps) == 1


def test_generalisation_resumes_from_its_json():
    evaluate = Predictors(mnemonic_is("add"))
    start = block(("add rax, 42", ADD_IMM8))
    whole = generalise(start, schemes("skl"), evaluate, np.random.default_rng(4), samples=20)
    job, rng = Generalisation(start, samples=20), np.random.default_rng(4)
    for _ in range(3):
        job.step(schemes("skl"), evaluate, rng)
    saved, state = json.dumps(job.to_json()), rng.bit_generator.state
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    job = Generalisation.from_json(json.loads(saved))
    while not job.done:
        job.step(schemes("skl"), evaluate, rng)
    assert job.result().abstract == whole.abstract
    assert [s.name for s in job.result().steps] == [s.name for s in whole.steps]


CONFIG = CampaignConfig(samples=20, batch=64, seed=5)


def finished(campaign, blocks=256):
    return lambda: campaign.counters["random_blocks"] >= blocks and not campaign.busy


def test_campaign_finds_exactly_the_planted_class():
    evaluate = Predictors(stores)
    campaign = Campaign(schemes("skl"), evaluate, CONFIG)
    phases = []
    campaign.run(finished(campaign), lambda phase, calls, counters: phases.append(phase))
    c = campaign.counters
    assert c["interesting"] > 50 and c["calls"] == evaluate.blocks
    assert c["failed"] > 0 and c["failures"][0] == 0 and c["failures"][1] == c["failed"]
    ranked = campaign.discoveries_ranked()
    assert len(ranked) == 1
    top = ranked[0]
    (ai,) = top.abstract.instructions
    assert ai == domain.AbstractInstruction(memory=frozenset({"store"}))
    assert top.description == "any store"
    assert set(top.forms) == {s.form for s in schemes("skl") if stores(block(("", s.form)), 0)}
    assert top.covered == c["interesting"]              # every interesting block is its
    assert top.interesting_ratio >= 0.97 and top.samples == 20 and len(top.witnesses) == 3
    assert {"sample", "minimise", "generalise"} <= set(phases)
    json.dumps(campaign.state(), allow_nan=False)       # strict JSON


def test_campaign_ranks_the_more_common_class_first():
    def culprit(b, i):
        return stores(b, i) or b.instructions[i].split()[0] == "vpsadbw"
    campaign = Campaign(schemes("skl"), Predictors(culprit), CONFIG)
    campaign.run(finished(campaign, 512))
    ranked = campaign.discoveries_ranked()
    assert [d.description for d in ranked][:2] == ["any store", "vpsadbw"]
    assert ranked[0].covered > ranked[1].covered


def test_campaign_is_reproducible_by_seed():
    runs = []
    for seed in (5, 5, 6):
        campaign = Campaign(schemes("skl"), Predictors(stores),
                            CampaignConfig(samples=10, batch=32, seed=seed))
        campaign.run(finished(campaign, 64))
        runs.append(json.dumps(campaign.state(), sort_keys=True))
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_stop_and_resume_equals_an_uninterrupted_campaign():
    def culprit(b, i):
        return stores(b, i) or add_feeds_next(b, i)
    whole = Campaign(schemes("zen4-vm"), Predictors(culprit), CONFIG)
    whole.run(finished(whole))
    # stop in the middle of a generalisation, then again after the next round
    evaluate = Predictors(culprit)
    first = Campaign(schemes("zen4-vm"), evaluate, CONFIG)
    seen = []
    first.run(lambda: "generalise" in seen, lambda phase, calls, counters: seen.append(phase))
    assert first.work.generalisation is not None and not first.work.generalisation.done
    state = json.loads(json.dumps(first.state()))
    second = Campaign(schemes("zen4-vm"), evaluate, state=state)
    rounds = second.counters["rounds"]
    second.run(lambda: second.counters["rounds"] > rounds)
    third = Campaign(schemes("zen4-vm"), evaluate, state=json.loads(json.dumps(second.state())))
    third.run(finished(third))
    assert [d.to_json() for d in third.discoveries] == [d.to_json() for d in whole.discoveries]
    assert third.counters == whole.counters
    assert len(whole.discoveries) >= 2
    with pytest.raises(ValueError):
        Campaign(schemes("zen4-vm"), evaluate, CampaignConfig(seed=9), state=state)


def _two_operands_at_one_place(b) -> bool:
    places = [v for form, values in zip(b.forms, block_values(b))
              for slot, v in zip(slots_of(form), values) if slot.kind == "mem"]
    return len(places) != len(set(places))


def _memory_campaign(planted, seed: int):
    """A standard-mode campaign against `planted` finds nothing (it never makes such a block);
    then a memory-mode one, 128 blocks: (the campaign, every block it evaluated, its
    recording evaluator)."""
    standard = Campaign(schemes("skl"), Predictors(planted), CONFIG)
    standard.run(finished(standard, 128))
    assert standard.counters["interesting"] == 0 and not standard.discoveries
    evaluate = Predictors(planted)
    made = []

    def recording(blocks):
        made.extend(blocks)
        return evaluate(blocks)
    campaign = Campaign(schemes("skl"), recording,
                        CampaignConfig(samples=20, batch=64, seed=seed, blocks="memory"))
    campaign.run(finished(campaign, 128))
    return campaign, made, recording


def test_a_memory_mode_campaign_finds_line_crossing_as_the_planted_class():
    """P1 charges accesses that cross a line: the standard mode never makes one, the memory
    mode often does, and every discovery keeps the crossing as a constraint."""
    campaign, made, recording = _memory_campaign(crosses_a_line, 5)
    random_blocks = made[:64]                           # the first round's
    assert sum(any(memory_crossings(b).values()) for b in random_blocks) > 10
    assert sum(_two_operands_at_one_place(b) for b in random_blocks) > 3
    assert campaign.discoveries and campaign.counters["interesting"] > 30
    for d in campaign.discoveries:
        assert CROSSES in {r for _, r in d.abstract.crossing}, d.description
        assert "crosses a cache line" in d.description
    assert any(ai.form is TOP for d in campaign.discoveries for ai in d.abstract.instructions)
    # the mode is part of the campaign's identity, and a resumed one keeps sampling in it
    state = json.loads(json.dumps(campaign.state()))
    assert state["config"]["blocks"] == "memory"
    with pytest.raises(ValueError):
        Campaign(schemes("skl"), recording, CampaignConfig(samples=20, batch=64, seed=5),
                 state=state)
    resumed = Campaign(schemes("skl"), recording, state=state)
    assert resumed.config.blocks == "memory"


def test_a_generalisation_keeps_its_block_mode_in_json():
    origin = block(("mov qword ptr [rsi + 189], rax", STORE))
    job = Generalisation(origin, samples=20, blocks="memory")
    evaluate, rng = Predictors(crosses_a_line), np.random.default_rng(2)
    job.step(schemes("skl"), evaluate, rng)
    assert job.current.crossing == (((0, 0), CROSSES),) and job.pertinent
    again = Generalisation.from_json(json.loads(json.dumps(job.to_json())))
    assert again.blocks == "memory" and again.current == job.current
    while not again.done:
        again.step(schemes("skl"), evaluate, rng)
    assert again.current.crossing == (((0, 0), CROSSES),)
    legacy = job.to_json()
    del legacy["blocks"]                                  # a checkpoint from before modes
    assert Generalisation.from_json(legacy).blocks == "standard"


def test_a_memory_mode_campaign_finds_constant_bases_as_the_planted_class():
    """P1 charges accesses through a base the block sets to a constant: the standard mode never
    sets one, the memory mode often does; every discovery keeps the constant as a constraint,
    and its witnesses show the line that sets it."""
    campaign, made, recording = _memory_campaign(through_a_constant_base, 7)
    assert sum(bool(b.constant_bases) for b in made[:64]) > 15      # the first round's
    assert campaign.discoveries and campaign.counters["interesting"] > 30
    for d in campaign.discoveries:
        assert CONSTANT in {r for _, r in d.abstract.constant_base}, d.description
        assert "base is set to a constant address" in d.description
        for w in d.witnesses:
            assert w.block.constant_bases and contains(d.abstract, w.block)
            assert w.block.lines()[0].startswith(f"mov {w.block.constant_bases[0]}, 0x")
    # minimisation kept the constant of the culprit's base: the first witness is minimal
    assert any(len(d.witnesses[0].block) == 1 for d in campaign.discoveries)
    # kept through the campaign's JSON state
    state = json.loads(json.dumps(campaign.state()))
    resumed = Campaign(schemes("skl"), recording, state=state)
    assert [d.abstract for d in resumed.discoveries] == [d.abstract for d in campaign.discoveries]
    assert [d.witnesses for d in resumed.discoveries] == \
        [d.witnesses for d in campaign.discoveries]


def test_a_generalisation_keeps_a_constant_base_it_needs():
    origin = ConcreteBlock(("mov qword ptr [rbx + 0], rax",), (STORE,), ("rbx",))
    evaluate, rng = Predictors(through_a_constant_base), np.random.default_rng(3)
    job = Generalisation(origin, samples=20, blocks="memory")
    job.step(schemes("skl"), evaluate, rng)
    assert job.current.constant_base == (((0, 0), CONSTANT),) and job.pertinent
    again = Generalisation.from_json(json.loads(json.dumps(job.to_json())))
    assert again.origin == origin and again.current == job.current
    while not again.done:
        again.step(schemes("skl"), evaluate, rng)
    assert again.current.constant_base == (((0, 0), CONSTANT),)
    assert any(s.name == "base #1.op1 constant -> TOP" and not s.accepted for s in again.steps)


def test_a_memory_campaign_saved_before_constant_bases_is_not_resumed():
    """Its blocks and classes are of the memory mode before bases could be constant (version 1
    of the state); a standard one of then resumes as before."""
    assert STATE_VERSION == 2
    for mode, resumes in (("standard", True), ("memory", False)):
        campaign = Campaign(schemes("skl"), Predictors(stores),
                            CampaignConfig(samples=10, batch=16, seed=2, blocks=mode))
        campaign.run(finished(campaign, 16))
        state = json.loads(json.dumps(campaign.state()))
        state["version"] = 1
        if resumes:
            again = Campaign(schemes("skl"), Predictors(stores), state=state)
            assert again.counters == campaign.counters
        else:
            with pytest.raises(ValueError, match="before memory-mode blocks set bases"):
                Campaign(schemes("skl"), Predictors(stores), state=state)
    with pytest.raises(ValueError, match="version 3"):
        Campaign(schemes("skl"), Predictors(stores), state={**state, "version": 3})
