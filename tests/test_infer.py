"""pmpredict.infer: experiment generation, congruence, the oracle, checkpoint/resume, the CLI."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from pmpredict.cli import main
from pmpredict.formats.experiment_files import load_experiments, save_experiments
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.infer.checkpoint import load_checkpoint, save_checkpoint
from pmpredict.infer.congruence import congruence_classes
from pmpredict.infer.singletons_and_pairs import generate_experiments, singleton_throughputs
from pmpredict.infer.pmevo import Inference, InferConfig
from pmpredict.infer.distill import distillation_problem
from pmpredict.infer.prepare import prepare
from pmpredict.infer.problem import build_problem
from pmpredict.infer.result import mapping_to_model
from pmpredict.predict.metrics import mape
from pmpredict.model.machine import MachineModel
from pmpredict.formats.model_files import load_model
from pmpredict.predict.throughput import simulate, simulate_arrays


# --- a synthetic machine -------------------------------------------------------

def oracle_model(seed=4, n_ports=6, n_forms=12) -> MachineModel:
    """A random ground truth drawn from a few port sets, as real machines reuse them."""
    rng = np.random.default_rng(seed)
    pool = [0b000011, 0b001100, 0b110000, 0b001111, 0b000001, 0b100000, 0b010110]
    uops = {}
    for i in range(n_forms):
        pairs = {}
        for _ in range(int(rng.integers(1, 3))):
            m = pool[int(rng.integers(len(pool)))]
            pairs[m] = pairs.get(m, 0) + int(rng.integers(1, 3))
        uops[f"F{i:02d}"] = tuple(sorted(pairs.items()))
    return MachineModel("oracle", "x86", tuple(str(p) for p in range(n_ports)), uops)


def measure(model, exps: ExperimentSet, noise: float, seed: int) -> ExperimentSet:
    """"Measure" with the simulator, times a uniform relative noise in [-noise, noise]."""
    cycles, _ = simulate(model, exps)
    rng = np.random.default_rng(seed)
    cycles = cycles * (1 + rng.uniform(-noise, noise, len(cycles)))
    return ExperimentSet(exps.forms, tuple(Experiment(e.counts, float(c))
                                           for e, c in zip(exps.experiments, cycles)), exps.isa)


def random_experiments(forms, n, length, seed) -> ExperimentSet:
    rng = np.random.default_rng(seed)
    exps = tuple(Experiment.of(list(rng.choice(forms, size=length))) for _ in range(n))
    return ExperimentSet(tuple(forms), exps, "x86")


def oracle_training(truth, noise=0.02, seed=5) -> ExperimentSet:
    forms = list(truth.uops)
    singles = measure(truth, generate_experiments(forms), noise, seed)
    throughput = singleton_throughputs(singles)
    return measure(truth, generate_experiments(forms, throughput), noise, seed)


def infer(train: ExperimentSet, n_ports: int, config: InferConfig) -> MachineModel:
    prepared = prepare(train, n_ports)
    masks, counts = Inference(prepared.problem, config).run()
    return mapping_to_model(prepared.problem, masks, counts, prepared.form_of, name="inferred",
                            isa="x86")


# --- experiment generation ---------------------------------------------------------

def test_generation_singletons_pairs_and_weighted_pairs():
    t = {"A": 1.0, "B": 0.25, "C": 0.5}
    exps = generate_experiments(["A", "B", "C"], t)
    got = [dict(e.counts) for e in exps.experiments]
    assert got[:3] == [{"A": 1}, {"B": 1}, {"C": 1}]
    assert got[3:6] == [{"A": 1, "B": 1}, {"A": 1, "C": 1}, {"B": 1, "C": 1}]
    # n = ceil(t(slow) / t(fast)): A:B -> 4, A:C -> 2, C:B -> 2
    assert got[6:] == [{"A": 1, "B": 4}, {"A": 1, "C": 2}, {"B": 2, "C": 1}]
    assert all(e.cycles is None for e in exps.experiments)


# --- congruence ---------------------------------------------------------------------

def test_congruence_hand_made():
    # A and A2 are the same machine instruction; B has A's throughput on other ports,
    # C, D, X all take 1 cycle alone but differ next to E (C+E: 3, D+E: 2) or A (X+A: 1.5)
    truth = MachineModel("m", "x86", ("0", "1", "2", "3"), {
        "A": ((0b0011, 1),), "A2": ((0b0011, 1),), "B": ((0b1100, 1),),
        "C": ((0b0001, 1),), "D": ((0b0010, 1),), "E": ((0b0001, 2),), "X": ((0b0011, 2),)})
    forms = list(truth.uops)
    single = measure(truth, generate_experiments(forms), 0.0, 0)
    train = measure(truth, generate_experiments(forms, singleton_throughputs(single)), 0.0, 0)
    classes = congruence_classes(train, forms)
    assert classes == {"A": "A", "A2": "A", "B": "B", "C": "C", "D": "D", "E": "E", "X": "X"}
    # within epsilon: 3% apart still congruent, 10% apart not
    noisy = []
    for e in train.experiments:
        scale = 1.03 if dict(e.counts).get("A2") and len(e.counts) == 1 else 1.0
        noisy.append(Experiment(e.counts, e.cycles * scale))
    assert congruence_classes(ExperimentSet(train.forms, tuple(noisy)), forms)["A2"] == "A"
    noisy = [Experiment(e.counts, e.cycles * (1.10 if e.counts == (("A2", 1),) else 1.0))
             for e in train.experiments]
    assert congruence_classes(ExperimentSet(train.forms, tuple(noisy)), forms)["A2"] == "A2"


def test_congruence_without_pairs_keeps_every_form_apart():
    # the shared data's shape: singletons + random multisets, no pair experiments
    truth = oracle_model()
    forms = list(truth.uops)
    singles = ExperimentSet(tuple(forms), tuple(Experiment.of({f: 1}) for f in forms))
    data = measure(truth, random_experiments(forms, 200, 4, 1).concat(singles), 0.0, 0)
    assert congruence_classes(data, forms) == {f: f for f in forms}


# --- the synthetic oracle --------------------------------------------------------------

def test_oracle_recovers_an_accurate_mapping():
    truth = oracle_model()
    train = oracle_training(truth)
    model = infer(train, 6, InferConfig(seed=0))
    fresh = measure(truth, random_experiments(list(truth.uops), 500, 5, 11), 0.0, 0)
    predicted, _ = simulate(model, fresh)
    err = mape(predicted, fresh.measured())
    assert err < 3.0, f"MAPE on fresh experiments {err:.2f}%"


# --- ensemble distillation ---------------------------------------------------------------

def test_synthetic_experiments_are_labelled_with_the_members_mean():
    truth = oracle_model()
    problem = _problem(truth)
    members = [Inference(problem, InferConfig(seed=s, max_sweeps=2)).run() for s in (1, 2)]
    distilled = distillation_problem(problem, members, 50, np.random.default_rng(0))
    n = problem.n_exps
    assert distilled.n_exps == n + 50
    # the measured part is untouched; synthetic lengths are those of the multi-form experiments
    assert np.array_equal(distilled.measured[:n], problem.measured)
    assert np.array_equal(distilled.ptr[:n + 1], problem.ptr)
    lengths = {problem.mults[problem.ptr[e]:problem.ptr[e + 1]].sum() for e in range(n)
               if problem.ptr[e + 1] - problem.ptr[e] > 1}
    for e in range(n, n + 50):
        assert distilled.mults[distilled.ptr[e]:distilled.ptr[e + 1]].sum() in lengths
    # labels: the mean of the two members' simulated cycles, experiment by experiment
    sub = (distilled.ptr[n:] - distilled.ptr[n], distilled.exp_forms[distilled.ptr[n]:],
           distilled.mults[distilled.ptr[n]:])
    each = [simulate_arrays(m, c, *sub)[0] for m, c in members]
    assert np.allclose(distilled.measured[n:], (each[0] + each[1]) / 2)
    # the inverted index covers the new experiments
    for f in range(problem.n_forms):
        has_f = [e for e in range(distilled.n_exps)
                 if f in distilled.exp_forms[distilled.ptr[e]:distilled.ptr[e + 1]]]
        assert distilled.experiments_of(f).tolist() == has_f


def test_distill_without_restarts_is_a_usage_error(tmp_path, capsys):
    exp_path = tmp_path / "train.json"
    save_experiments(oracle_training(oracle_model()), exp_path)
    code = main(["infer", "-e", str(exp_path), "--ports", "6", "-o", str(tmp_path / "m.json"),
                 "--distill", "100", "-q"])
    assert code == 2
    assert "--restarts 2 or more" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_distillation_fits_the_measured_experiments():
    truth = oracle_model(seed=9)
    problem = _problem(truth)
    inference = Inference(problem, InferConfig(seed=0, restarts=3, distill=200))
    masks, counts = inference.run()
    assert inference.finished()
    assert inference.snap.history[-1]["restart"] == "distilled"
    assert len(inference.snap.members) == 3
    assert inference.error_on(problem, masks, counts) < 0.03


# --- checkpoint / resume --------------------------------------------------------------

def _problem(truth):
    train = oracle_training(truth)
    forms = sorted(train.forms)
    return build_problem(train, forms, 6)


@pytest.mark.parametrize("config", [
    InferConfig(seed=4, restarts=2, max_sweeps=5),
    InferConfig(seed=3, restarts=2, max_sweeps=4, distill=60),
    InferConfig(method="pmevo+exact", seed=2, population=16, generations=3, max_sweeps=2),
])
def test_resume_from_any_checkpoint_gives_the_uninterrupted_result(tmp_path, config):
    problem = _problem(oracle_model())
    paths = []

    def keep(snap):
        path = tmp_path / f"c{len(paths)}.npz"
        save_checkpoint(path, snap, {"k": 1}, problem.forms, ["x"])
        paths.append(path)

    full = Inference(problem, config).run(on_snapshot=keep)
    assert len(paths) >= 4
    for path in (paths[1], paths[len(paths) // 2], paths[-2]):
        snap = load_checkpoint(path)["snapshot"]
        again = Inference(problem, config, snap).run()
        assert np.array_equal(again[0], full[0]) and np.array_equal(again[1], full[1])


def test_stop_mid_sweep_then_resume_gives_the_uninterrupted_result(tmp_path):
    problem = _problem(oracle_model(seed=8))
    config = InferConfig(seed=1, max_sweeps=6)
    full = Inference(problem, config).run()
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 15        # in the middle of the second sweep

    first = Inference(problem, config)
    partial = first.run(should_stop=stop)
    assert partial is not None and not first.finished()
    save_checkpoint(tmp_path / "c.npz", first.snap, {}, problem.forms, [])
    resumed = Inference(problem, config, load_checkpoint(tmp_path / "c.npz")["snapshot"]).run()
    assert np.array_equal(resumed[0], full[0]) and np.array_equal(resumed[1], full[1])


# --- the CLI -------------------------------------------------------------------------------

def test_cli_infer_is_deterministic_and_resumable(tmp_path, capsys):
    truth = oracle_model(seed=6)
    train = oracle_training(truth)
    exp_path = tmp_path / "train.json"
    save_experiments(train, exp_path)
    outs = []
    for i in range(2):
        out = tmp_path / f"m{i}.json"
        assert main(["infer", "-e", str(exp_path), "--ports", "6", "-o", str(out), "--seed", "7",
                     "-q"]) == 0
        outs.append(load_model(str(out)))
    assert outs[0].uops == outs[1].uops
    assert set(outs[0].uops) == set(truth.uops)
    assert outs[0].provenance["complete"] is True
    # resuming a finished run's checkpoint writes the same mapping again
    out = tmp_path / "r.json"
    assert main(["infer", "-e", str(exp_path), "-o", str(out), "--resume",
                 str(tmp_path / "m0.json.ckpt"), "-q"]) == 0
    assert load_model(str(out)).uops == outs[0].uops


def test_cli_infer_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pmpredict-experiments", "version": 1, "forms": ["A"],\n'
                   ' "experiments": [{"forms": {"B": 1}, "cycles": 1}]}')
    assert main(["infer", "-e", str(bad), "--ports", "2", "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pmpredict: error: {bad}:2:") and err.count("\n") == 1
    good = tmp_path / "good.json"
    save_experiments(ExperimentSet(("A",), (Experiment.of({"A": 1}, 1.0),)), good)
    assert main(["infer", "-e", str(good), "-o", str(tmp_path / "o.json")]) == 2
    assert "--ports" in capsys.readouterr().err
    assert main(["infer", "-e", str(good), "--ports", "2", "-o", str(tmp_path / "o.json"),
                 "--resume", str(good)]) == 2
    assert "checkpoint" in capsys.readouterr().err


# --- the shipped models ----------------------------------------------------------------------

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "pmevo-artifact")


@pytest.mark.parametrize("name,arch", [("skl", "SKL"), ("zen", "ZEN"), ("a72", "A72")])
def test_builtin_model_covers_the_artifact_forms(name, arch):
    from pmpredict.models import builtin_path
    if builtin_path(name) is None:
        pytest.skip(f"built-in model {name} not generated yet")
    model = load_model(name)
    assert model.provenance["tool"].startswith("pmpredict")
    assert "validation" not in " ".join(model.provenance["inputs"])
    path = os.path.join(SHARED, arch, "singletons.json")
    if not os.path.exists(path):
        pytest.skip(f"{path} absent (the shared PMEvo artifact data)")
    assert set(load_experiments(path).forms) <= set(model.uops)


# --- restarts run elsewhere (Inference.run's workers; --dask) ------------------------------

class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class ReversedWorkers:
    """Runs each task when submitted, but hands the results back last first, one per wait:
    the driver must fold them in restart order whatever order they come in."""

    def __init__(self):
        self.futures = []

    def submit(self, fn, *args):
        future = _Done(fn(*args))
        self.futures.append(future)
        return future

    def wait_first(self, futures, timeout):
        newest = max(futures, key=self.futures.index)
        return {newest}, set(futures) - {newest}


@pytest.mark.parametrize("config", [
    InferConfig(seed=4, restarts=3, max_sweeps=5),
    InferConfig(seed=3, restarts=3, max_sweeps=4, distill=60),
    InferConfig(method="pmevo", seed=2, restarts=2, population=16, generations=3),
])
def test_restarts_elsewhere_give_the_result_of_restarts_in_turn(tmp_path, config):
    problem = _problem(oracle_model())
    here = Inference(problem, config)
    want = here.run()
    snaps = []

    def keep(snap):
        path = tmp_path / f"c{len(snaps)}.npz"
        save_checkpoint(path, snap, {"k": 1}, problem.forms, ["x"])
        snaps.append(path)

    there = Inference(problem, config)
    got = there.run(workers=ReversedWorkers(), on_snapshot=keep)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert there.snap.history == here.snap.history
    # a checkpoint while later restarts waited for the first: resumed, the same result
    waiting = [p for p in snaps if load_checkpoint(p)["snapshot"].get("ahead")]
    assert waiting, "the last restart finished first and waited in the snapshot"
    snap = load_checkpoint(waiting[0])["snapshot"]
    again = Inference(problem, config, snap).run(workers=ReversedWorkers())
    assert np.array_equal(again[0], want[0]) and np.array_equal(again[1], want[1])


def test_cli_restarts_on_a_local_dask_cluster(tmp_path, capsys):
    truth = oracle_model(seed=5)
    exp_path = tmp_path / "e.json"
    save_experiments(oracle_training(truth), exp_path)
    base = ["infer", "-e", str(exp_path), "--ports", "6", "--restarts", "3", "--max-sweeps", "4",
            "--seed", "2", "-q"]
    assert main(base + ["-o", str(tmp_path / "here.json")]) == 0
    assert main(base + ["-o", str(tmp_path / "there.json"), "--dask", "--jobs", "1"]) == 0
    here, there = (json.loads((tmp_path / n).read_text()) for n in ("here.json", "there.json"))
    assert there["forms"] == here["forms"]
    assert there["provenance"]["training_mape"] == here["provenance"]["training_mape"]
    capsys.readouterr()
    assert main(base + ["-o", str(tmp_path / "x.json"), "--jobs", "2"]) == 2
    assert "--jobs goes with --dask" in capsys.readouterr().err
