"""Model and experiment files: loading, validation errors, round trips, published accuracy."""

from __future__ import annotations

import json

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmpredict.predict import throughput
from pmpredict.cli import main
from pmpredict.formats.experiment_files import load_experiments, save_experiments
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.errors import InputError
from pmpredict.predict.metrics import evaluate_model, kendall_tau_b, mape
from pmpredict.model.facts import PIPELINE_FLAGS, PIPELINE_KEYS
from pmpredict.model.machine import MachineModel, operand_count


from pmpredict.formats.model_files import load_model, save_model


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))
    return str(path)


NATIVE = {"format": "pmpredict-model", "version": 1, "name": "toy", "isa": "x86",
          "ports": ["0", "1", "DIV"], "r_max": 4,
          "forms": {"add": {"uops": [{"ports": ["0", "1"], "count": 1}], "latency": 1},
                    "div": {"uops": [{"ports": ["0"]}, {"ports": ["DIV"], "count": 6}]}}}


def test_native_round_trip(tmp_path):
    model = load_model(write(tmp_path, "m.json", NATIVE))
    assert model.ports == ("0", "1", "DIV")
    assert model.uops["div"] == ((0b001, 1), (0b100, 6))
    assert model.r_max == 4.0 and model.latency == {"add": 1.0}
    out = tmp_path / "again.json"
    save_model(model, out)
    assert load_model(str(out)) == model


def test_mapping3_repeated_uops_become_counts(tmp_path):
    data = {"kind": "Mapping3", "arch": {"kind": "Architecture", "insns": ["a", "b"], "ports": ["0", "1"]},
            "assignment": {"a": [["0"], ["0"], ["0", "1"]], "b": [["1"]]}}
    model = load_model(write(tmp_path, "m3.json", data))
    assert model.uops["a"] == ((1, 2), (3, 1))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["forms"]["add"]["uops"][0].update(ports=["0", "7"]), "unknown port '7'"),
    (lambda d: d["forms"]["add"]["uops"][0].update(ports=[]), "non-empty list of ports"),
    (lambda d: d["forms"]["div"]["uops"][1].update(count=0), "count must be an integer >= 1"),
    (lambda d: d["forms"]["add"].update(latency=-1), "latency must be a finite number >= 0"),
    (lambda d: d.update(version=99), "unsupported model format version 99"),
    (lambda d: d.update(ports=["0", "0"]), "lists a port twice"),
])
def test_native_validation_names_file_and_entry(tmp_path, mutate, message):
    data = json.loads(json.dumps(NATIVE))
    mutate(data)
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(InputError) as err:
        load_model(path)
    assert message in str(err.value)
    assert str(err.value).startswith(path + ":")
    assert err.value.line is not None


def test_mapping3_form_missing_from_architecture(tmp_path):
    data = {"kind": "Mapping3", "arch": {"kind": "Architecture", "insns": ["a"], "ports": ["0"]},
            "assignment": {"a": [["0"]], "zzz": [["0"]]}}
    path = write(tmp_path, "m3.json", data)
    with pytest.raises(InputError, match="form 'zzz' is not in the architecture") as err:
        load_model(path)
    assert err.value.line == json.dumps(data, indent=1).split("\n").index(
        next(l for l in json.dumps(data, indent=1).split("\n") if '"zzz"' in l)) + 1


def test_malformed_json_has_line_and_column(tmp_path):
    path = write(tmp_path, "broken.json", '{"format": "pmpredict-model",\n  "ports": [1, 2,,]}')
    with pytest.raises(InputError) as err:
        load_model(path)
    assert (err.value.line, err.value.column) == (2, 18)   # the second comma


def test_cli_reports_bad_input_with_exit_2(tmp_path, capsys):
    data = json.loads(json.dumps(NATIVE))
    data["forms"]["add"]["uops"][0]["ports"] = ["9"]
    bad = write(tmp_path, "bad.json", data)
    exps = write(tmp_path, "e.json", {"format": "pmpredict-experiments", "version": 1, "forms": ["add"],
                                      "experiments": [{"forms": {"add": 1}, "cycles": 1}]})
    assert main(["simulate", "--mapping", bad, "--experiments", exps]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pmpredict: error: {bad}:")
    assert "unknown port '9'" in err[0]


def test_experiments_native_round_trip(tmp_path):
    exps = ExperimentSet(("a", "b"), (Experiment.of(["a", "a", "b"], 2.5), Experiment.of(["b"])))
    save_experiments(exps, tmp_path / "e.json")
    again = load_experiments(str(tmp_path / "e.json"))
    assert again.experiments == exps.experiments and again.forms == exps.forms


def test_experiment_with_unknown_form_is_rejected(tmp_path):
    path = write(tmp_path, "e.json", {"format": "pmpredict-experiments", "version": 1, "forms": ["a"],
                                      "experiments": [{"forms": {"b": 1}}]})
    with pytest.raises(InputError, match="form 'b' is not in 'forms'"):
        load_experiments(path)


def test_metrics_known_values():
    assert mape([1.1, 0.9], [1.0, 1.0]) == pytest.approx(10.0)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)


def test_published_accuracy_on_skl_validation(shared):
    exps = load_experiments(shared("SKL", "validation_len06.json"))
    pmevo = evaluate_model(load_model(shared("SKL", "mapping_pmevo.json")), exps)
    uops_info = evaluate_model(load_model(shared("SKL", "mapping_uops_info.json")), exps)
    assert pmevo.n == 2000 and pmevo.skipped == 0
    assert pmevo.mape == pytest.approx(14.8, abs=0.1)
    assert uops_info.mape == pytest.approx(10.1, abs=0.1)
    # the paper's Table: Pearson 0.98 / Kendall 0.72 for PMEvo's mapping
    assert pmevo.pearson == pytest.approx(0.98, abs=0.01)
    assert pmevo.kendall == pytest.approx(0.72, abs=0.01)


def test_shared_simulation_equals_lp_on_a_sample(shared):
    model = load_model(shared("SKL", "mapping_pmevo.json"))
    exps = load_experiments(shared("SKL", "validation_len06.json"))
    cycles, _ = throughput.simulate(model, exps)
    masks, counts = model.to_arrays()
    index = model.form_index()
    for e in range(0, 2000, 40):
        ex = exps.experiments[e]
        umask, umass, _ = throughput.uop_masses(masks, counts, np.array([index[f] for f, _ in ex.counts]),
                                         np.array([n for _, n in ex.counts], float))
        assert cycles[e] == pytest.approx(throughput.lp_schedule(umask, umass, len(model.ports))[0], rel=1e-7)


def test_evaluate_cli_json_and_skipped(tmp_path, capsys, shared):
    mapping = json.load(open(shared("SKL", "mapping_uops_info.json")))
    dropped = sorted(mapping["assignment"])[0]
    del mapping["assignment"][dropped]
    path = write(tmp_path, "partial.json", mapping)
    exps = shared("SKL", "validation_len06.json")
    assert main(["evaluate", "-m", path, "-e", exps, "--json", "-v"]) == 0
    out = json.loads(capsys.readouterr().out)
    n_using = sum(dropped in e["iseq"] for e in json.load(open(exps))["exps"])
    assert out["skipped"] == n_using > 0 and out["n"] == 2000 - n_using
    assert set(out) >= {"n", "skipped", "mape", "pearson", "spearman", "kendall"}
    assert all(dropped in s["reason"] for s in out["skipped_experiments"])


def test_simulate_cli_json_shape(tmp_path, capsys):
    model = write(tmp_path, "m.json", NATIVE)
    exps = write(tmp_path, "e.json", {"format": "pmpredict-experiments", "version": 1,
                                      "forms": ["add", "div", "mystery"],
                                      "experiments": [{"forms": {"add": 2, "div": 1}},
                                                      {"forms": {"mystery": 1}}]})
    assert main(["simulate", "--mapping", model, "--experiments", exps, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["predictions"]
    assert out[0] == {"index": 0, "cycles": 6.0, "bottleneck": ["DIV"]}
    assert out[1]["cycles"] is None and "mystery" in out[1]["error"]


def test_evaluate_plot_writes_png(tmp_path, shared):
    pytest.importorskip("matplotlib")
    png = tmp_path / "heat.png"
    assert main(["evaluate", "-m", shared("SKL", "mapping_pmevo.json"),
                 "-e", shared("SKL", "validation_len06.json"), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_machine_model_rejects_empty_mask():
    with pytest.raises(ValueError):
        MachineModel("x", "x86", ("0",), {"a": ((0, 1),)})


# --- latencies, flags and pipeline facts ---------------------------------------------------

ADD_MEM = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))+((MIMM:8))]"
VADD = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
TIMED = {"format": "pmpredict-model", "version": 1, "name": "timed", "isa": "x86",
         "ports": ["0", "1"], "r_max": None,
         "pipeline": {"window": 224, "load_latency": 5.0, "store_forward_latency": 4.5,
                      "macro_fusion": 1},
         "pipeline_source": {"window": "llvm-mca 19.1.7 -mcpu=skylake"},
         "forms": {ADD_MEM: {"uops": [{"ports": ["0"]}], "latency": 1, "latency_from": {"1": 6},
                             "latency_source": "measured", "move_elimination": False},
                   VADD: {"uops": [{"ports": ["0", "1"]}], "latency": 4, "idiom_ports": True}}}


def test_timing_facts_load_and_save(tmp_path):
    model = load_model(write(tmp_path, "t.json", TIMED))
    assert model.latency_for(ADD_MEM) == 1.0 and model.latency_for(ADD_MEM, 1) == 6.0
    assert model.latency_for(ADD_MEM, 0) == 1.0 and model.latency_for(VADD, 2) == 4.0
    assert model.operand_latency == {ADD_MEM: {1: 6.0}}
    assert model.latency_source == {ADD_MEM: "measured"}
    assert model.move_elimination == {ADD_MEM: False} and model.idiom_ports == {VADD: True}
    assert model.pipeline == TIMED["pipeline"] and model.pipeline_source == TIMED["pipeline_source"]
    save_model(model, tmp_path / "again.json")
    assert load_model(str(tmp_path / "again.json")) == model
    # a file without the new keys keeps loading, and saves without them
    plain = load_model(write(tmp_path, "n.json", NATIVE))
    assert plain.pipeline == {} and plain.operand_latency == {}
    assert "pipeline" not in plain.to_json() and "latency_from" not in json.dumps(plain.to_json())


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinite_latencies_are_rejected(tmp_path, literal):
    # json.loads accepts the non-standard NaN / Infinity literals: they are not JSON (no other
    # reader takes them), so the reader refuses them where they stand
    raw = json.dumps(TIMED, indent=1).replace('"latency": 4', f'"latency": {literal}')
    path = write(tmp_path, "nan.json", raw)
    with pytest.raises(InputError, match=f"{literal} is not a JSON number") as err:
        load_model(path)
    line = next(i for i, text in enumerate(raw.split("\n"), 1) if literal in text)
    assert (err.value.line, err.value.column) == (line, raw.split("\n")[line - 1].index(literal) + 1)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["forms"][VADD].update(latency="4"), "latency must be a number, not '4'"),
    (lambda d: d["forms"][VADD].update(latency=True), "latency must be a number, not True"),
    (lambda d: d["forms"][ADD_MEM].update(latency_from={"2": 6}),
     "latency_from '2': operand index 2 is out of range (the form has 2 operand(s))"),
    (lambda d: d["forms"][ADD_MEM].update(latency_from={"-1": 6}),
     "latency_from '-1': operand index '-1' must be an integer"),
    (lambda d: d["forms"][ADD_MEM].update(latency_from={"one": 6}), "must be an integer"),
    (lambda d: d["forms"][ADD_MEM].update(latency_from={"1": -6}), "finite number >= 0"),
    (lambda d: d["forms"][ADD_MEM].update(latency_from=[6]), "latency_from must be an object"),
    (lambda d: d["forms"][ADD_MEM].update(latency_source=3), "latency_source must be a string"),
    (lambda d: d["forms"][ADD_MEM].update(move_elimination=1),
     "move_elimination must be true or false, not 1"),
    (lambda d: d["forms"][VADD].update(idiom_ports="yes"), "idiom_ports must be true or false"),
    (lambda d: d["pipeline"].update(rob=3), "unknown pipeline key 'rob'"),
    (lambda d: d["pipeline"].update(window=-1), "pipeline 'window' must be a finite number >= 0"),
    (lambda d: d["pipeline"].update(macro_fusion=2), "pipeline 'macro_fusion' must be 0 or 1"),
    (lambda d: d.update(pipeline=[1]), "'pipeline' must be an object"),
    (lambda d: d["pipeline_source"].update(taken_branch="x"),
     "pipeline_source names 'taken_branch', which 'pipeline' does not have"),
    (lambda d: d["pipeline_source"].update(window=1), "pipeline_source 'window' must be a string"),
])
def test_timing_validation_is_located(tmp_path, mutate, message):
    data = json.loads(json.dumps(TIMED))
    mutate(data)
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(InputError) as err:
        load_model(path)
    assert message in str(err.value)
    assert str(err.value).startswith(path + ":") and err.value.line is not None
    assert "\n" not in str(err.value)


def test_machine_model_rejects_bad_timing_facts():
    uops = {VADD: ((1, 1),)}
    for bad in (dict(latency={VADD: math.nan}), dict(latency={"other": 1.0}),
                dict(operand_latency={VADD: {3: 1.0}}), dict(pipeline={"rob": 1}),
                dict(pipeline_source={"window": "x"}), dict(idiom_ports={VADD: 0})):
        with pytest.raises(ValueError):
            MachineModel("x", "x86", ("0",), uops, **bad)


def test_with_uops_drops_the_timing_of_removed_forms():
    model = MachineModel("x", "x86", ("0",), {VADD: ((1, 1),), ADD_MEM: ((1, 1),)},
                         latency={VADD: 4.0, ADD_MEM: 1.0}, operand_latency={ADD_MEM: {1: 6.0}})
    smaller = model.with_uops({VADD: ((1, 1),)})
    assert smaller.latency == {VADD: 4.0} and smaller.operand_latency == {}


# forms with known operand counts for the property test (PMEvo spellings, both ISAs)
_X86_FORMS = [ADD_MEM, VADD, "ADD_((REG:RW:G:64)),_((IMM:32))",
              "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]",
              "VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"]
_latencies = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
_text = st.text(max_size=12)


@st.composite
def timed_models(draw):
    forms = draw(st.lists(st.sampled_from(_X86_FORMS), min_size=1, unique=True))
    n_ports = draw(st.integers(1, 5))
    uops = {f: tuple(sorted({draw(st.integers(1, (1 << n_ports) - 1)): draw(st.integers(1, 9))
                             for _ in range(draw(st.integers(1, 3)))}.items())) for f in forms}
    some = st.lists(st.sampled_from(forms), unique=True)
    latency = {f: draw(_latencies) for f in draw(some)}
    operand_latency = {}
    for f in draw(some):
        n = operand_count(f, "x86")
        per = draw(st.dictionaries(st.integers(0, n - 1), _latencies, min_size=1))
        operand_latency[f] = per
    pipeline = {k: draw(st.integers(0, 1) if k in PIPELINE_FLAGS else
                        st.one_of(st.integers(0, 10**6), _latencies))
                for k in draw(st.lists(st.sampled_from(sorted(PIPELINE_KEYS)), unique=True))}
    pipeline_source = {k: draw(_text) for k in draw(st.lists(st.sampled_from(sorted(pipeline)),
                                                             unique=True))} if pipeline else {}
    return MachineModel(
        draw(st.text(min_size=1, max_size=12).filter(str.isprintable)), "x86",
        tuple(str(i) for i in range(n_ports)), uops,
        r_max=draw(st.one_of(st.none(), st.floats(0.25, 16))), latency=latency,
        operand_latency=operand_latency,
        latency_source={f: draw(_text) for f in draw(some)},
        move_elimination={f: draw(st.booleans()) for f in draw(some)},
        idiom_ports={f: draw(st.booleans()) for f in draw(some)},
        idiom_breaks={f: draw(st.booleans()) for f in draw(some)},
        pipeline=pipeline, pipeline_source=pipeline_source,
        provenance={"description": draw(_text)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=timed_models())
def test_save_then_load_restores_any_model_exactly(model, tmp_path):
    path = tmp_path / "m.json"
    save_model(model, path)
    back = load_model(str(path))
    assert back == model
    assert back.to_json() == model.to_json()
