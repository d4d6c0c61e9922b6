"""Counter-example-guided inference (infer/cegis.py, Ritter ch. 4): the thesis' example,
random machines recovered up to equivalence, noise, the two encodings, resume, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pmpredict.cli import main
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.infer.cegis import CegisSettings, mapping_uops, run_cegis
from pmpredict.infer.checkpoint import load_checkpoint
from pmpredict.infer.online_job import load_online_resume, online_settings, run_online
from pmpredict.infer.oracles import MeasurementLog, ModelOracle
from pmpredict.infer.smt_encoding import exact_cycles, unit_uops
from pmpredict.infer.synthetic import (agreement, all_experiments, random_experiments,
                                       random_machine)
from pmpredict.model.machine import MachineModel
from pmpredict.predict.throughput import simulate


def as_model(truth, mapping) -> MachineModel:
    return MachineModel("inferred", "x86", truth.ports, mapping_uops(mapping))


def infer(truth, **kw):
    settings = CegisSettings(len(truth.ports), **kw)
    result = run_cegis(ModelOracle(truth), list(truth.uops), settings)
    assert result.finished and result.reason is None
    return result


def two_forms(a, b) -> MachineModel:
    return MachineModel("ex41", "x86", ("p1", "p2"), {"A": ((a, 1),), "B": ((b, 1),)})


# --- Example 4.1 -----------------------------------------------------------------------------

def test_example_4_1_disjoint_ports():
    """Two forms of 1.0 cycles each on two ports: m1 and m2 disagree on {A, B}, which is the
    experiment asked for; measured 1.0, the forms use different ports (exactly, after
    symmetry breaking: A on the first port, B on the second)."""
    result = infer(two_forms(0b01, 0b10))
    assert result.experiments == [(("A", 1),), (("B", 1),), (("A", 1), ("B", 1))]
    assert mapping_uops(result.mapping) == {"A": ((1, 1),), "B": ((2, 1),)}


def test_example_4_1_shared_port():
    result = infer(two_forms(0b01, 0b01))
    assert result.experiments == [(("A", 1),), (("B", 1),), (("A", 1), ("B", 1))]
    assert mapping_uops(result.mapping) == {"A": ((1, 1),), "B": ((1, 1),)}


# --- random machines, exact oracle -----------------------------------------------------------

@pytest.mark.parametrize("seed,ports,forms,uops", [(1, 3, 5, 1), (2, 4, 6, 1), (3, 4, 5, 2),
                                                   (4, 3, 4, 2)])
def test_random_machines_are_recovered_up_to_equivalence(seed, ports, forms, uops):
    truth = random_machine(seed, ports, forms, uops)
    result = infer(truth, max_uops=uops, seed=seed)
    everything = all_experiments(list(truth.uops), 4)
    assert agreement(truth, as_model(truth, result.mapping), everything) == 1.0
    # every experiment it measured was small (stratified sizes)
    assert max(sum(n for _, n in e) for e in result.experiments) <= 5


def test_the_two_encodings_agree():
    truth = random_machine(5, 3, 5, 1)
    hall = infer(truth, encoding="hall")
    flow = infer(truth, encoding="flow")
    exps = all_experiments(list(truth.uops), 4)
    assert agreement(truth, as_model(truth, hall.mapping), exps) == 1.0
    assert agreement(truth, as_model(truth, flow.mapping), exps) == 1.0


def test_r_max_cap():
    truth = random_machine(6, 4, 5, 1, r_max=2.0)
    result = infer(truth, r_max=2.0)
    model = MachineModel("m", "x86", truth.ports, mapping_uops(result.mapping), r_max=2.0)
    assert agreement(truth, model, all_experiments(list(truth.uops), 4)) == 1.0


def test_exact_cycles_matches_the_simulator():
    truth = random_machine(7, 4, 6, 3)
    exps = random_experiments(list(truth.uops), 200, 5, 7)
    sim, _ = simulate(truth, exps)
    mapping = {f: unit_uops(u) for f, u in truth.uops.items()}
    exact = [float(exact_cycles(mapping, e.counts)) for e in exps.experiments]
    assert np.allclose(sim, exact, rtol=1e-12)


# --- noise -----------------------------------------------------------------------------------

def test_noise_within_epsilon():
    """1% noise, eps = 0.02 CPI: the result may differ from the truth only where no
    measurement could tell them apart: by at most 2 eps per instruction."""
    truth = random_machine(8, 4, 6, 1)
    eps = 0.02
    oracle = ModelOracle(truth, noise=0.01, rng=3)
    result = run_cegis(oracle, list(truth.uops), CegisSettings(4, epsilon=eps))
    assert result.finished and result.mapping is not None
    exps = random_experiments(list(truth.uops), 500, 4, 9)
    a, _ = simulate(truth, exps)
    b, _ = simulate(as_model(truth, result.mapping), exps)
    lengths = np.array([e.length for e in exps.experiments])
    assert np.all(np.abs(a - b) <= 2 * eps * lengths + 1e-9)


def test_no_mapping_explains_inconsistent_measurements():
    """A two-level search of a three-level truth, given evidence that A slows both B and C,
    which do not slow each other, finds nothing (findMapping unsat). (CEGIS itself only asks
    what tells its candidates apart: without the evidence it would stop at a two-level
    mapping that is wrong on {A, C}.)"""
    truth = MachineModel("t", "x86", ("0", "1"), {"A": ((1, 1), (2, 1)), "B": ((1, 1),),
                                                  "C": ((2, 1),)})
    oracle = ModelOracle(truth)
    log = MeasurementLog()
    log.measure(oracle, [(("A", 1), ("B", 1)), (("A", 1), ("C", 1)), (("B", 1), ("C", 1))])
    result = run_cegis(oracle, ["A", "B", "C"], CegisSettings(2, max_uops=1), log=log)
    assert result.finished and result.reason == "unsat" and result.mapping is None


# --- stop and resume (the job layer) ---------------------------------------------------------

def test_stop_checkpoint_and_resume(tmp_path):
    truth = random_machine(3, 4, 6, 2)
    forms = list(truth.uops)
    oracle = ModelOracle(truth)
    settings = online_settings("cegis", {"max_uops": 2}, exact_oracle=True, default_ports=4)
    ckpt = str(tmp_path / "c.ckpt")
    calls = {"n": 0}

    def stop_soon():
        calls["n"] += 1
        return calls["n"] > 6
    first = run_online("cegis", oracle, forms, settings, checkpoint_path=ckpt,
                       should_stop=stop_soon)
    assert not first.finished and first.reason == "stopped"
    saved = load_checkpoint(ckpt)
    assert saved["config"]["method"] == "cegis"
    measured = MeasurementLog(saved["snapshot"]["log"])
    assert len(measured) >= len(forms)
    resumed = load_online_resume(ckpt, "cegis", forms, oracle)
    again = run_online("cegis", oracle, forms, settings, checkpoint_path=ckpt, resumed=resumed)
    assert again.finished and again.model is not None
    assert agreement(truth, again.model, all_experiments(forms, 4)) == 1.0
    # nothing measured before the stop is measured again; the provenance lists what was
    assert {tuple(sorted(r["forms"].items())) for r in measured.to_json()} <= \
        {tuple(sorted(r["forms"].items())) for r in again.model.provenance["experiments"]}


# --- the command line ------------------------------------------------------------------------

@pytest.fixture
def truth_file(tmp_path):
    path = tmp_path / "truth.json"
    save_model(random_machine(3, 4, 6, 2), str(path))
    return path


def test_cli_oracle_writes_a_model_that_loads(truth_file, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["infer", "--oracle", str(truth_file), "--method", "cegis", "--max-uops", "2",
                 "-o", str(out), "--json", "--seed", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] and report["method"] == "cegis"
    model = load_model(str(out))
    truth = load_model(str(truth_file))
    assert agreement(truth, model, random_experiments(list(truth.uops), 500, 4, 2)) == 1.0
    prov = model.provenance
    assert prov["method"] == "cegis" and prov["complete"] is True
    assert len(prov["experiments"]) == report["experiments"] >= 6
    assert all(set(r) >= {"forms", "cycles"} for r in prov["experiments"])


def test_cli_resume_after_a_stop(truth_file, tmp_path, capsys):
    out = tmp_path / "m.json"
    base = ["infer", "--oracle", str(truth_file), "--max-uops", "2", "-o", str(out), "-q"]
    code = main(base + ["--time-limit", "0.3"])
    capsys.readouterr()
    assert code in (0, 1)
    ckpt = str(out) + ".ckpt"
    assert load_checkpoint(ckpt)["config"]["method"] == "cegis"
    assert main(["infer", "--oracle", str(truth_file), "-o", str(out), "--resume", ckpt,
                 "-q"]) == 0
    truth = load_model(str(truth_file))
    model = load_model(str(out))
    assert model.provenance["complete"] is True
    assert agreement(truth, model, random_experiments(list(truth.uops), 500, 4, 3)) == 1.0
    # another seed than the checkpoint's is refused, on one line
    assert main(base + ["--seed", "5", "--resume", ckpt]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seed 5 differs" in err


@pytest.mark.parametrize("argv,message", [
    (["--oracle", "nosuchmodel.json"], "nosuchmodel"),
    (["--oracle", "{truth}", "--method", "exact"], "--oracle goes with --method cegis"),
    (["--oracle", "{truth}", "--restarts", "2"], "--restarts goes with"),
    (["-e", "{truth}", "--method", "cegis"], "chooses its own experiments"),
    (["--oracle", "{truth}", "--max-uops", "0"], "max-uops"),
])
def test_cli_bad_input_is_one_line_and_status_2(truth_file, tmp_path, capsys, argv, message):
    argv = [a.replace("{truth}", str(truth_file)) for a in argv]
    try:
        code = main(["infer", *argv, "-o", str(tmp_path / "x.json"), "-q"])
    except SystemExit as exc:          # argparse's own checks
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and message in err


def test_cli_explain_lists_the_measurements(tmp_path, capsys):
    path = tmp_path / "ex41.json"
    save_model(two_forms(0b01, 0b10), str(path))
    assert main(["infer", "--oracle", str(path), "-o", str(tmp_path / "o.json"), "--explain",
                 "-q"]) == 0
    out = capsys.readouterr().out
    assert "{A: 1, B: 1}: 1.0 cycles" in out and "A: 1x[A]" in out


def test_same_seed_same_run():
    truth = random_machine(9, 4, 5, 2)
    a = infer(truth, max_uops=2, seed=4)
    b = infer(truth, max_uops=2, seed=4)
    assert a.experiments == b.experiments and a.mapping == b.mapping
