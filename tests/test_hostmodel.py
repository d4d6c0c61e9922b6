"""This machine's model on demand (pmpredict/host/model.py, `pmpredict predict --model host`): the
forms of a kernel, a bootstrap from a (small) core, extensions that measure only what is new,
forms the CPU cannot run remembered, two processes at once, the CLI's report."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse_file
from pmpredict.errors import InputError
from pmpredict.host.model import host_model, kernel_forms, load_cached, model_path

ON_X86_LINUX = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="host measurement needs an x86-64 Linux machine with a C compiler")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
SUB = "SUB_((REG:RW:G:64)),_((REG:R:G:64))"
SHL = "SHL_((REG:RW:G:64)),_((IMM:8))"
UD2 = "UD2"
CORE = [ADD, IMUL, LOAD]
LOOP = ".L1:\n\taddq $1, %rax\n\tsubq %rbx, %rcx\n\tcmpq %rdx, %rax\n\tjne .L1\n"


def test_the_forms_of_a_kernel_and_what_is_left_out():
    path = os.path.join(ROOT, "examples", "mix_avx2.s")
    program = parse_file(path)
    forms, left = kernel_forms(select_kernel(program).instructions, program.syntax)
    assert forms == [
        "VMOVDQU_((REG:W:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]",
        "VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]",
        "VPSLLD_((REG:W:V:256)),_((REG:R:V:256)),_((IMM:8))",
        "VPXOR_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))",
        "VMOVDQU_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256))",
        "ADD_((REG:RW:G:64)),_((IMM:8))",
        "CMP_((REG:R:G:64)),_((REG:R:G:64))"]
    assert left == [(29, "jne .L4",
                     "a branch: control flow cannot be repeated in a loop of its own")]


def test_host_names_this_machines_model_not_a_builtin(tmp_path, monkeypatch):
    from pmpredict.formats.model_files import load_model
    from pmpredict.models import builtin_names
    assert "host" not in builtin_names() and "zen4-vm" in builtin_names()
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path))
    with pytest.raises(InputError, match="--model host"):
        load_model("host", host=load_cached)
    assert model_path().startswith(str(tmp_path) + os.sep + "host-")


def test_models_lists_this_machine_even_before_it_is_measured(tmp_path, monkeypatch, capsys):
    from pmpredict.cli import main
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path))
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("a72 ") and "\nzen4-vm " in out
    host = [ln for ln in out.splitlines() if ln.startswith("host ")]
    assert len(host) == 1 and "not measured yet" in host[0] and "--model host" in host[0]


def _host_file(model_json: dict, provenance_host) -> dict:
    return dict(model_json, name="host", provenance={"description": "test",
                                                     "host": provenance_host})


FACTS = {"cpu": "test", "cpu_identity": "test", "created": "2026-01-01T00:00:00",
         "bootstrap": {"how": "bootstrap", "forms": 1, "experiments": 1, "seconds": 1.0},
         "extensions": [], "left_out": {}}
MODEL = {"format": "pmpredict-model", "version": 1, "isa": "x86", "ports": ["0", "1"],
         "forms": {ADD: {"uops": [{"ports": ["0", "1"], "count": 1}], "latency": 1}}}


@pytest.mark.parametrize("damage, why", [
    ("[1, 2]", "provenance.host is not an object"),
    (dict(FACTS, left_out=["x"]), "left_out"),
    (dict(FACTS, extensions=5), "extensions"),
    (dict(FACTS, extensions=[1]), "extensions"),
    (dict(FACTS, bootstrap=[1]), "bootstrap"),
    (dict(FACTS, created=None), "created")])
def test_a_damaged_host_model_is_named_and_never_measured_over(tmp_path, monkeypatch, capsys,
                                                               damage, why):
    from pmpredict.cli import main
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path))
    facts = json.loads(damage) if isinstance(damage, str) else damage
    with open(model_path(), "w") as fh:
        json.dump(_host_file(MODEL, facts), fh)
    with pytest.raises(InputError, match=why) as err:
        load_cached()
    assert err.value.path == model_path() and "delete the file" in err.value.message
    # predict refuses before measuring anything; the listing names the damage and goes on
    kernel = tmp_path / "k.s"
    kernel.write_text(LOOP)
    assert main(["predict", str(kernel), "--model", "host"]) == 2
    assert main(["models", "--json"]) == 0
    host = json.loads(capsys.readouterr().out)["host"]
    assert why in host["damaged"] and host["path"] == model_path()


def test_models_says_when_this_machines_front_end_is_in_doubt(tmp_path, monkeypatch, capsys):
    from pmpredict.cli import main
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path))
    doubtful = _host_file(dict(MODEL, pipeline={"taken_branch": 1.5, "atomic_cycles": 6.5}), FACTS)
    doubtful["provenance"]["front_end"] = {"doubts": ["a loop iteration takes 1.5 cycles"]}
    doubtful["provenance"]["latencies"] = {"doubts": {"atomic_cycles": "atomic_cycles 6.5: "
                                                      "its chain did not reproduce"}}
    with open(model_path(), "w") as fh:
        json.dump(doubtful, fh)
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    host = [ln for ln in out if "front end:" in ln]
    assert host and host[0].endswith("taken_branch 1.5, atomic_cycles 6.5 (in doubt: a loop "
                                     "iteration takes 1.5 cycles)")
    assert [ln.strip() for ln in out if "measured, in doubt" in ln] == [
        "measured, in doubt: atomic_cycles 6.5: its chain did not reproduce"]
    assert main(["models", "--json"]) == 0
    host = json.loads(capsys.readouterr().out)["host"]
    assert host["front_end_doubts"] == ["a loop iteration takes 1.5 cycles"]
    assert host["fact_doubts"] == ["atomic_cycles 6.5: its chain did not reproduce"]


def test_a_host_model_of_another_isa_or_not_json_is_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path))
    with open(model_path(), "w") as fh:
        json.dump(_host_file(dict(MODEL, isa="aarch64", forms={}), FACTS), fh)
    with pytest.raises(InputError, match="an aarch64 model, not x86"):
        load_cached()
    with open(model_path(), "w") as fh:
        fh.write("{not json")
    with pytest.raises(InputError, match="damaged") as err:
        load_cached()
    assert err.value.line == 1


class _Applied:
    """A measured table (latencies, front end) that notes its turn in the model's provenance."""

    def __init__(self, name, r_max=None):
        self.name, self.facts = name, type("Facts", (), {"r_max": r_max})()

    def apply(self, model):
        from dataclasses import replace
        applied = model.provenance.get("applied", []) + [self.name]
        return replace(model, provenance={**model.provenance, "applied": applied})


def test_the_bootstrap_and_infer_measure_infer_alike(tmp_path):
    """The training workflow's inference for the host model (one run, no checkpoint) and the
    resumable job of `pmpredict infer --measure` give the same mapping from the same
    measurements and settings; the latencies go into the model before the front end."""
    from test_infer import oracle_model, oracle_training
    from pmpredict.host.training import TrainingSet
    from pmpredict.host.workflow import HOST_PORTS, Measured, infer_once
    from pmpredict.infer.job import InferSettings, run_job
    from pmpredict.infer.pmevo import InferConfig
    train = oracle_training(oracle_model(n_forms=6))
    training = TrainingSet({"singletons": train}, {}, _Applied("latencies"),
                           usable=list(train.forms))
    measured = Measured(training, _Applied("front end", r_max=4.0), train, HOST_PORTS)
    once = infer_once(measured, seed=0, volume_weight=0.005, name="host").model
    settings = InferSettings(InferConfig(seed=0, final_volume_weight=0.005), HOST_PORTS,
                             r_max=measured.r_max)
    job = run_job(train, settings, inputs=["t.json"], checkpoint_path=str(tmp_path / "ckpt"),
                  measured=measured.tables).model
    assert once.uops == job.uops and once.r_max == job.r_max == 4.0
    assert once.provenance["applied"] == job.provenance["applied"] == ["latencies", "front end"]


@ON_X86_LINUX
def test_a_core_that_does_not_run_here_is_one_error(tmp_path):
    with pytest.raises(InputError, match="cannot measure this machine's model: none of the core "
                                         "forms runs here: UD2: SIGILL"):
        host_model(cache_dir=str(tmp_path), core=[UD2], seed_builtin=False)
    assert not os.path.exists(model_path(str(tmp_path)))


@pytest.fixture(scope="module")
def core_cache(tmp_path_factory):
    """A cache holding this machine's model bootstrapped from three core forms."""
    cache = str(tmp_path_factory.mktemp("host-core"))
    model, update = host_model(cache_dir=cache, core=CORE, seed_builtin=False)
    return cache, model, update


@pytest.fixture
def cache(core_cache, tmp_path):
    """A private copy of the bootstrapped cache."""
    copy = str(tmp_path / "cache")
    shutil.copytree(core_cache[0], copy)
    return copy


@ON_X86_LINUX
@pytest.mark.slow
def test_bootstrap_measures_the_core_and_the_front_end(core_cache):
    from pmpredict.measure.cpu import cpu_identity
    _, model, update = core_cache
    assert set(model.uops) == set(CORE) and model.name == "host"
    assert update.created == "bootstrap" and update.bootstrap_experiments >= len(CORE)
    assert 4 <= model.r_max <= 8 and model.pipeline["macro_fusion"] == 1
    assert model.latency[IMUL] == 3 and model.latency[ADD] == 1      # every recent x86
    facts = model.provenance["host"]
    assert facts["cpu_identity"] == cpu_identity() and facts["bootstrap"]["how"] == "bootstrap"
    assert "built this machine's model" in update.line()


@ON_X86_LINUX
@pytest.mark.slow
def test_an_extension_measures_only_what_is_new_and_remembers_what_fails(cache):
    model, update = host_model([ADD, SUB, UD2], cache_dir=cache)
    assert update.measured == [SUB] and update.created is None
    assert update.failed == {UD2: update.failed[UD2]} and update.failed[UD2].startswith("SIGILL")
    assert update.experiments >= 2                       # alone and beside at least one blocker
    saved = load_cached(cache)
    assert SUB in saved.uops and saved.latency[SUB] == 1 and UD2 not in saved.uops
    # sub runs on the integer ALUs, as add does: on ports add uses, at two or more a cycle
    # (how many ALUs the fits give add and sub moves with the noise of a busy machine: 3.5
    # or 4 here, either of them; and which ports exactly: in about one run in three of the
    # whole module, sub's fit took a port add's did not, so only a shared port is asserted)
    from pmpredict.host.extend import model_throughput
    t = model_throughput(saved.uops, saved.r_max)
    assert t[SUB] <= 0.5 and t[ADD] <= 0.5
    add_ports = 0
    for mask, _ in saved.uops[ADD]:
        add_ports |= mask
    assert any(mask & add_ports for mask, _ in saved.uops[SUB])
    again, second = host_model([SUB, UD2], cache_dir=cache)
    assert second.measured == [] and second.experiments == 0 and UD2 in second.failed
    assert len(again.provenance["host"]["extensions"]) == 1
    assert "every measurable form already known" in second.line()


@ON_X86_LINUX
@pytest.mark.slow
def test_a_spent_budget_is_said_and_the_next_call_measures_the_rest(cache):
    """With no measuring budget a new form is measured alone only (the singleton is not
    budgeted: without it there is no form), recorded as measured in part, and said so in the
    Assumed line and the JSON of a prediction that uses it; the next call with time measures
    it beside the blockers, fits it again and forgets the note."""
    from pmpredict.views import to_json
    model, update = host_model([ADD, SUB], cache_dir=cache, budget_s=0)
    assert SUB in model.uops and set(update.unmeasured_forms) == {SUB}
    assert update.unmeasured_forms[SUB].startswith("measured beside 0 of ")
    assert "the measuring budget (0 s) ran out" in update.line()
    assert update.to_json()["unmeasured"]["forms"] == update.unmeasured_forms
    report = predict_text("addq %rbx, %rax\nsubq %rdx, %rcx\n", model)
    said = [a for a in to_json(report)["assumptions"] if "budget ran out" in a]
    assert len(said) == 1 and said[0].startswith("sub r64, r64: measured beside 0 of ")
    again, second = host_model([ADD, SUB], cache_dir=cache)
    assert second.measured == [SUB] and second.unmeasured_forms == {}
    assert again.provenance["host"]["unmeasured"]["forms"] == {}
    assert second.experiments > update.experiments
    report = predict_text("addq %rbx, %rax\nsubq %rdx, %rcx\n", again)
    assert not [a for a in to_json(report)["assumptions"] if "budget ran out" in a]


@ON_X86_LINUX
@pytest.mark.slow
def test_the_pairs_a_kernel_uses_are_measured_once_and_predicted_as_measured(cache):
    """Every pair of forms one kernel uses, with a form an extension fitted, is measured once
    (remembered as checked) and the model predicts it close to its measurement afterwards:
    fitted again where it was off (add and sub on the ALUs: 0.50 together on four of them;
    imul beside four subs: 1.25 if imul's port is one of sub's, 1.33 measured on Skylake's
    layout; a model that put sub on ports of its own would say 0.33 and 1.00)."""
    from pmpredict.host.extend import PAIR_TOLERANCE, pair_digest, predicted_cycles
    from pmpredict.infer.design import balanced_pair
    from pmpredict.measure import measure_experiment_set
    from pmpredict.model.experiments import ExperimentSet
    model, update = host_model([ADD, SUB, IMUL], kernels=[[ADD, SUB], [SUB, IMUL]],
                               cache_dir=cache)
    facts = model.provenance["host"]
    check = facts["pair_checks"][-1]
    assert check["pairs"] == 2 and update.refitted == check["refitted"]
    assert {pair_digest(ADD, SUB), pair_digest(SUB, IMUL)} <= set(facts["pairs_checked"])
    pairs = [balanced_pair(a, b, {f: predicted_cycles(model.uops, ((f, 1),), model.r_max)
                                  for f in (a, b)}) for a, b in ((ADD, SUB), (SUB, IMUL))]
    # the pairs as the check measured them (from the measurement cache where the fit left the
    # balance of a pair as it was)
    again = measure_experiment_set(ExperimentSet((ADD, IMUL, SUB), tuple(pairs), "x86", "t"),
                                   cache_dir=cache)
    for e in again.experiments:
        assert e.cycles and abs(predicted_cycles(model.uops, e.counts, model.r_max) - e.cycles) \
            <= 2 * PAIR_TOLERANCE * e.cycles, e
    second, update2 = host_model([ADD, SUB], kernels=[[SUB, ADD]], cache_dir=cache)
    assert update2.experiments == 0 and update2.refitted == []
    assert second.provenance["host"]["pair_checks"] == facts["pair_checks"]


@ON_X86_LINUX
@pytest.mark.slow
def test_a_model_built_before_barriers_were_timed_gets_them_once(cache):
    """A model whose mfence has no latency (built before barriers were timed back to back,
    and before the chains were recorded) has it measured on its next use, once: then the
    barrier is counted, not a lower bound."""
    from dataclasses import replace
    from pmpredict.formats.model_files import save_model
    from pmpredict.measure.chains import chains_version
    model = load_cached(cache)
    facts = {k: v for k, v in model.provenance["host"].items() if k != "latency_chains"}
    older = replace(model, uops={**model.uops, "MFENCE": model.uops[ADD]},
                    provenance={**model.provenance, "host": facts})
    save_model(older, model_path(cache))
    updated, _ = host_model([ADD], cache_dir=cache)
    assert updated.latency["MFENCE"] >= 10.0         # every recent x86-64 core: 33 to 60
    assert updated.provenance["host"]["latency_chains"] == chains_version()
    assert load_cached(cache).latency["MFENCE"] == updated.latency["MFENCE"]
    report = predict_text("mfence\naddq %rbx, %rax\n", updated)
    # (uops after the first start on whole cycles: up to a cycle more where it has several)
    assert report.complete
    assert updated.latency["MFENCE"] - 1e-9 <= report.cycles <= updated.latency["MFENCE"] + 1


@ON_X86_LINUX
@pytest.mark.slow
def test_a_model_measured_with_older_chains_is_measured_again_once(cache):
    """A model whose latencies older chains measured (a fact it lacks, a forwarding latency
    and a form's latency that today's chains read otherwise) has every latency and reference
    fact measured again on its next use, once, and then agrees with a model built today; its
    uops are kept."""
    from dataclasses import replace
    from pmpredict.formats.model_files import save_model
    key = "store_forward_latency_load_op"
    model = load_cached(cache)
    assert key in model.pipeline                       # a model built today has it
    pipeline = {k: v for k, v in model.pipeline.items() if k != key}
    pipeline["store_forward_latency"] += 3.0
    older = replace(model, pipeline=pipeline,
                    pipeline_source={k: v for k, v in model.pipeline_source.items() if k != key},
                    latency={**model.latency, ADD: model.latency[ADD] + 5.0},
                    provenance={**model.provenance,
                                "host": {**model.provenance["host"], "latency_chains": "0.old"}})
    save_model(older, model_path(cache))
    updated, update = host_model([ADD], cache_dir=cache)
    assert update.latencies_again is not None
    assert "latencies measured again with today's chains" in update.line()
    # the same chains, timed before, read from the measurement cache
    assert updated.pipeline == model.pipeline
    assert updated.latency == model.latency
    assert updated.uops == model.uops
    assert load_cached(cache).pipeline == model.pipeline
    again, update2 = host_model([ADD], cache_dir=cache)
    assert update2.latencies_again is None and again.latency == model.latency


def predict_text(body: str, model):
    from pmpredict.asm.parse import parse
    from pmpredict.predict.predictor import Predictor
    return Predictor(model).predict(select_kernel(parse(body, "att", "b.s")), "att", "b.s")


@ON_X86_LINUX
@pytest.mark.slow
def test_two_processes_extend_the_model_at_once(cache):
    code = ("import sys, json\nfrom pmpredict.host.model import host_model\n"
            f"m, u = host_model([{SHL!r}], cache_dir={cache!r}, notify=print)\n"
            "print(json.dumps(u.to_json()))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    updates = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert sorted(len(u["measured"]) for u in updates) == [0, 1]      # measured once
    waiter = next(out for out, _ in outs if "waiting for it" in out)
    assert waiter
    model = load_cached(cache)                                           # valid, complete
    extensions = model.provenance["host"]["extensions"]
    assert [e["forms"] for e in extensions] == [[SHL]]
    assert not [f for f in os.listdir(cache) if ".tmp" in f]


@ON_X86_LINUX
@pytest.mark.slow
def test_predict_with_the_host_model(cache, tmp_path):
    kernel = tmp_path / "loop.s"
    kernel.write_text(LOOP)
    env = {**os.environ, "PMPREDICT_CACHE": cache}
    run = lambda *args: subprocess.run([sys.executable, "-m", "pmpredict", *args],
                                       capture_output=True, text=True, env=env, timeout=600)
    proc = run("predict", str(kernel), "--model", "host", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    host = out["host"]
    assert host["measured"] == ["ADD_((REG:RW:G:64)),_((IMM:8))", SUB,
                                "CMP_((REG:R:G:64)),_((REG:R:G:64))"]
    assert host["left_out"] == [{"line": 5, "text": "jne .L1", "reason": "a branch: control "
                                 "flow cannot be repeated in a loop of its own"}]
    assert out["model"] == "host" and out["coverage"]["matched"] == 3
    # four instructions, the cmp + jne pair fused: three slots; at least the measured cost of
    # a loop iteration (a cycle on recent cores; more if a busy machine disturbed its probes)
    saved = load_cached(cache)
    taken = saved.pipeline["taken_branch"]
    assert 1.0 <= taken <= 2.0 and 4 <= saved.r_max <= 8
    assert out["bounds"]["front_end"] == pytest.approx(max(taken, 3 / saved.r_max))
    text = run("predict", str(kernel), "--model", "host")
    assert text.returncode == 0 and text.stdout.startswith("host model (")
    assert "every measurable form already known" in text.stdout.splitlines()[0]
    listing = run("models")
    assert listing.returncode == 0
    line = next(ln for ln in listing.stdout.splitlines() if ln.startswith("host "))
    assert " 6 forms" in line and "this machine's model" in line


@ON_X86_LINUX
def test_push_and_pop_are_measured_in_experiments():
    """rsp put back once per iteration: repeated pushes and pops run (two to four loads a
    cycle on every recent x86 core, four on Zen 5; one or two stores)."""
    from pmpredict.model.experiments import Experiment, ExperimentSet
    from pmpredict.measure import measure_experiment_set
    push, pop = "PUSH_((REG:R:G:64))", "POP_((REG:W:G:64))"
    exps = [Experiment.of({push: 1}), Experiment.of({pop: 1}), Experiment.of({push: 1, pop: 1})]
    out = measure_experiment_set(ExperimentSet((push, pop), tuple(exps), "x86", "t"),
                                 cache_dir=None)
    alone_push, alone_pop, both = (e.cycles for e in out.experiments)
    assert 0.22 <= alone_pop <= 0.55 and 0.45 <= alone_push <= 1.1
    assert both >= 0.95 * max(alone_push, alone_pop)


@ON_X86_LINUX
@pytest.mark.slow
def test_a_load_across_a_line_is_predicted_as_its_split_variant_measured(cache, tmp_path):
    """A kernel whose load crosses a line on every iteration gets its form's split variant
    measured into the model (isa.forms.split_variant) and is predicted from the variant's
    uops; the variant as the harness measured it agrees with the kernel timed as a block (a
    second path: `pmpredict measure`, the load at one place; Zen 4: 0.67 both), and the
    prediction costs at least what the same load within a line does (every core)."""
    from pmpredict.host.extend import predicted_cycles
    from pmpredict.isa.forms import split_variant
    from pmpredict.measure import measure_experiment_set
    from pmpredict.model.experiments import Experiment, ExperimentSet
    env = {**os.environ, "PMPREDICT_CACHE": cache}
    run = lambda *args: subprocess.run([sys.executable, "-m", "pmpredict", *args],
                                       capture_output=True, text=True, env=env, timeout=600)
    variant = split_variant(LOAD)
    across, within = tmp_path / "across.s", tmp_path / "within.s"
    across.write_text("movq 60(%rsi), %rax\n")
    within.write_text("movq 48(%rsi), %rax\n")
    proc = run("predict", str(across), "--model", "host", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["host"]["measured"] == [variant]
    assert any("as its form measured across a line" in a for a in out["assumptions"])
    model = load_cached(cache)
    assert out["cycles"] == pytest.approx(predicted_cycles(model.uops, ((variant, 1),),
                                                           model.r_max), rel=0.01)
    # the variant alone, as the extension measured it (from the measurement cache), against
    # the block timed by `pmpredict measure`; where they disagree, each is timed again (no
    # cache) and the fastest kept: a busy tenant only slows a reading
    experiment = ExperimentSet((variant,), (Experiment(((variant, 1),)),), "x86", "t")
    alone = lambda c: measure_experiment_set(experiment, cache_dir=c).experiments[0].cycles

    def block():
        timed = run("measure", str(across), "--json")
        assert timed.returncode == 0, timed.stderr
        return json.loads(timed.stdout)["cycles"]
    harness, measured = alone(cache), block()
    for _ in range(3):
        if harness == pytest.approx(measured, rel=0.12):
            break
        harness, measured = min(harness, alone(None)), min(measured, block())
    assert harness == pytest.approx(measured, rel=0.12)
    plain = json.loads(run("predict", str(within), "--model", "host", "--json").stdout)
    assert plain["host"]["measured"] == [] and out["cycles"] >= 0.95 * plain["cycles"]
