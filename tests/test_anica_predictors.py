"""AnICA's predictors as black boxes, the answer cache and the evaluator (in process and on a
local Dask cluster): real tools where they are installed, hand-built predictors elsewhere."""

from __future__ import annotations

import math
import platform
import shutil
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from pmpredict.anica.concrete import CONSTANT_ADDRESSES, ConcreteBlock, random_block
from pmpredict.anica.executor import DaskRunner, Evaluator, InProcess
from pmpredict.anica.predictors import (CRASH, TIMEOUT, UNSUPPORTED, BlockPredictor,
                                        MeasurePredictor, Outcome, parse_spec)
from pmpredict.anica.schemes import schemes_for
from pmpredict.anica.store import AnswerStore
from pmpredict.errors import InputError
from pmpredict.formats.model_files import load_model

CHAIN = ("imul rcx, rax", "add rax, rcx")            # a loop-carried chain: imul + add
INDEPENDENT = ("vaddpd ymm1, ymm2, ymmword ptr [rsi + 64]",)
BOGUS = ("bogus rax",)


@dataclass(frozen=True)
class Block:
    """A stand-in for concrete.ConcreteBlock: the lines predictors are given."""
    instructions: tuple[str, ...]

    def lines(self) -> tuple[str, ...]:
        return self.instructions


class Counting(BlockPredictor):
    """cycles = instructions x factor; a block containing 'bad' crashes it."""
    local_only = False

    def __init__(self, label, factor=1.0):
        self.spec = self.label = label
        self.factor = factor
        self.calls = 0

    def identity(self):
        return f"counting {self.factor}"

    def predict(self, blocks):
        self.calls += 1
        return [Outcome.failed(CRASH, "bad") if any("bad" in x for x in b)
                else Outcome(len(b) * self.factor) for b in blocks]


@pytest.mark.parametrize("spec", ["", "pmpredict", "pmpredict:", "llvm-mca-x:skylake",
                                  "gcc:native", "osaca:../x", "llvm-mca:a b"])
def test_bad_specs_are_one_line_errors(spec):
    with pytest.raises(InputError) as exc:
        parse_spec(spec)
    assert "\n" not in str(exc.value)


def test_pmpredict_predictor_answers_and_refuses_what_its_model_lacks():
    p = parse_spec("pmpredict:skl")
    chain_link, unknown = p.predict([("add rax, 42",), BOGUS])
    # one add-immediate chained on itself: one cycle a link in skl (latency 1)
    assert chain_link.cycles == pytest.approx(1.0, abs=0.01)
    assert unknown.cycles is None and unknown.failure == UNSUPPORTED
    assert "bogus" in unknown.message


LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD_IMM8 = "ADD_((REG:RW:G:64)),_((IMM:8))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"


@pytest.mark.parametrize("model", ["skl", "zen4-vm"])
def test_pmpredict_predicts_memory_mode_blocks_with_constant_bases(model):
    """Through the evaluator a campaign asks: every block gets its cycles (the line setting a
    base is matched, exactly in skl, approximately in zen4-vm, which has only `mov r32,
    imm32`), and a chain through memory stays a chain when its base is set to a constant."""
    rng, schemes = np.random.default_rng(4), schemes_for(load_model(model).uops)
    made = (random_block(schemes, 4, rng, mode="memory") for _ in range(1000))
    blocks = [b for b in made if b.constant_bases][:30]
    assert len(blocks) == 30
    evaluator = Evaluator([parse_spec(f"pmpredict:{model}")])
    cycles = evaluator(blocks)
    assert not np.isnan(cycles).any() and (cycles > 0).all(), evaluator.failures.to_json()
    chain = ConcreteBlock(("mov rax, qword ptr [rbx + 189]", "add rax, 42",
                           "mov qword ptr [rbx + 189], rax"), (LOAD, ADD_IMM8, STORE), ("rbx",))
    elsewhere = ConcreteBlock(chain.instructions[:2] + ("mov qword ptr [rbx + 0], rax",),
                              chain.forms, ("rbx",))
    harness_base = ConcreteBlock(chain.instructions, chain.forms)
    (constant,), (moved,), (harness,) = evaluator([chain]), evaluator([elsewhere]), \
        evaluator([harness_base])
    assert constant == pytest.approx(harness) and moved < constant / 2


HOST = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")


@HOST
def test_constant_bases_run_in_the_harness_as_memories_of_their_own(tmp_path, monkeypatch):
    """The hardware, asked as a campaign asks it: a block that sets its base to a constant
    runs (the harness maps the page on demand); a chain through memory takes as long through a
    constant base as through the harness's (a dword load over last iteration's word store,
    which no core forwards or renames: the load waits for the store to commit, 8 cycles or
    more; Zen 4: 20); and two constant bases are two memories (a load through one and a store
    through the other at one place do not chain: every page mapped on demand shows one
    physical page, so constants at one page offset would, 20 cycles at 0x600000 and
    0x640000)."""
    set_rsi, set_rdi = (f"mov {b}, {CONSTANT_ADDRESSES[b]:#x}" for b in ("rsi", "rdi"))
    chain = ("mov eax, dword ptr [rsi + 0]", "add eax, 1", "mov word ptr [rsi + 0], ax")
    apart = (set_rsi, set_rdi, "mov eax, dword ptr [rdi + 0]", "add eax, 1",
             "mov word ptr [rsi + 0], ax")
    blocks = [(set_rsi,) + chain, chain, apart]
    best = [math.inf] * 3
    for attempt in range(4):            # a busy machine only ever adds time: the fastest counts
        monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path / f"cache{attempt}"))
        outcomes = MeasurePredictor().predict(blocks)
        assert all(o.cycles is not None and o.cycles > 0 for o in outcomes), outcomes
        best = [min(b, o.cycles) for b, o in zip(best, outcomes)]
        constant, harness, separate = best
        if abs(constant - harness) <= 0.15 * harness and separate < constant / 2:
            break
    assert constant >= 8.0 and harness >= 8.0, best
    assert constant == pytest.approx(harness, rel=0.15), best
    assert separate < constant / 2, best


@pytest.mark.skipif(not shutil.which("llvm-mca-19"), reason="llvm-mca-19 not installed")
def test_llvm_mca_batch_equals_blocks_one_by_one_and_a_bad_block_fails_alone():
    p = parse_spec("llvm-mca-19:skylake")
    together = p.predict([CHAIN, INDEPENDENT, BOGUS])
    alone = [p.predict([b])[0] for b in (CHAIN, INDEPENDENT)]
    assert [o.cycles for o in together[:2]] == [o.cycles for o in alone]
    # imul (3) + add (1) on one chain: llvm-mca's Skylake tables say 4 cycles an iteration
    assert together[0].cycles == pytest.approx(4.0, abs=0.02)
    assert together[2].failure == UNSUPPORTED and "bogus" in together[2].message


@pytest.mark.skipif(shutil.which("llvm-mca-19") is None, reason="llvm-mca-19 not installed")
def test_llvm_mca_identity_names_its_version_and_cpu():
    ident = parse_spec("llvm-mca-19:skylake").identity()
    assert ident.startswith("llvm-mca 19.") and "skylake" in ident


def _osaca_installed() -> bool:
    try:
        import osaca  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _osaca_installed(), reason="OSACA not installed")
def test_osaca_answers_the_loop_carried_chain_and_refuses_unknown_instructions():
    p = parse_spec("osaca:SKX")
    chain, unknown = p.predict([CHAIN, BOGUS])
    assert chain.cycles == pytest.approx(4.0)           # LCD: imul 3 + add 1 in skx.yml
    assert unknown.failure == UNSUPPORTED


@pytest.mark.skipif(not _osaca_installed(), reason="OSACA not installed")
def test_osaca_hang_is_a_timeout_and_the_next_block_still_runs():
    p = parse_spec("osaca:SKX", timeout_s=1e-6)
    outcomes = p.predict([CHAIN, CHAIN])
    assert [o.failure for o in outcomes] == [TIMEOUT, TIMEOUT]


def test_store_round_trip_and_what_it_does_not_keep(tmp_path):
    store = AnswerStore(str(tmp_path / "a.sqlite"))
    blocks = [("add rax, 1",), ("add rcx, 2",), ("nop",)]
    store.put_many("tool 1", blocks, [Outcome(1.5), Outcome.failed(CRASH, "died"),
                                      Outcome.failed(TIMEOUT, "slow")])
    got = store.get_many("tool 1", blocks)
    assert got[0] == Outcome(1.5) and got[1].failure == CRASH and got[2] is None
    assert store.get_many("tool 2", blocks) == [None, None, None]   # another identity
    store.close()
    again = AnswerStore(str(tmp_path / "a.sqlite"))
    assert again.get_many("tool 1", blocks[:1]) == [Outcome(1.5)]


def test_store_that_cannot_be_opened_is_a_located_error(tmp_path):
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(InputError) as exc:
        AnswerStore(str(tmp_path / "dir.sqlite"))
    assert "dir.sqlite" in str(exc.value) and "\n" not in str(exc.value)


def test_evaluator_nan_for_failures_kept_apart_and_cache_spares_calls(tmp_path):
    a, b = Counting("a"), Counting("b", 2.0)
    store = AnswerStore(str(tmp_path / "c.sqlite"))
    ev = Evaluator([a, b], store, InProcess())
    blocks = [Block(("x", "y")), Block(("bad",))]
    out = ev(blocks)
    assert out[0].tolist() == [2.0, 4.0]
    assert np.isnan(out[1]).all()
    assert {f["predictor"]: f["count"] for f in ev.failures.to_json()} == {"a": 1, "b": 1}
    calls = (a.calls, b.calls)
    again = ev(blocks)
    assert (a.calls, b.calls) == calls                   # all from the cache
    assert np.array_equal(np.nan_to_num(again, nan=-1), np.nan_to_num(out, nan=-1))
    assert ev.cached == [2, 2] and ev.asked == [2, 2]


@pytest.mark.slow
def test_dask_local_cluster_gives_the_in_process_answers():
    blocks = [Block(("add rax, 42",) * k) for k in range(1, 6)] + [Block(BOGUS)]
    predictors = [parse_spec("pmpredict:skl"), Counting("n")]
    local = Evaluator(predictors, None, InProcess())(blocks)
    runner = DaskRunner(workers=1, chunk=2)
    try:
        remote = Evaluator(predictors, None, runner)(blocks)
    finally:
        runner.close()
    assert np.array_equal(np.nan_to_num(local, nan=-1), np.nan_to_num(remote, nan=-1))
    assert math.isnan(remote[-1, 0]) and remote[-1, 1] == 1.0


@pytest.mark.slow
def test_a_running_scheduler_named_by_address_serves_the_campaign():
    from distributed import LocalCluster
    blocks = [Block(("add rax, 42",) * k) for k in range(1, 4)]
    predictors = [parse_spec("pmpredict:skl"), Counting("n")]
    local = Evaluator(predictors, None, InProcess())(blocks)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        runner = DaskRunner(cluster.scheduler_address)
        try:
            remote = Evaluator(predictors, None, runner)(blocks)
        finally:
            runner.close()
    assert np.array_equal(local, remote)
