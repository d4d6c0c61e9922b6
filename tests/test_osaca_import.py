"""OSACA YAML -> MachineModel: exact round trip of our exports, foreign (shipped) files, errors."""

import glob
import os

import numpy as np
import pytest

from pmpredict.cli import main
from pmpredict.formats.experiment_files import load_experiments
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.formats.osaca import load_osaca_model
from pmpredict.errors import InputError
from pmpredict.exporters.osaca import export_osaca
from pmpredict.model.machine import MachineModel
from pmpredict.formats.model_files import load_model
from pmpredict.models import builtin_names
from pmpredict.predict.throughput import simulate

from conftest import artifact

pytestmark = pytest.mark.filterwarnings("ignore")

SHARED = {"SKL": ["train_len02.json", "validation_len06.json"], "ZEN": ["train_len05.json"],
          "A72": ["train_len05.json"]}
BUILTIN_DATA = {"skl": "SKL", "zen": "ZEN", "a72": "A72"}


def _assert_same_model(a, b):
    assert b.name == a.name and b.isa == a.isa and b.ports == a.ports
    assert b.uops == a.uops          # (in file order: OSACA's priority order, see docs/EXPORT.md)
    assert b.latency == a.latency and b.r_max == a.r_max
    assert b.operand_latency == a.operand_latency and b.latency_source == a.latency_source
    assert b.move_elimination == a.move_elimination and b.idiom_ports == a.idiom_ports
    assert b.idiom_breaks == a.idiom_breaks
    assert b.pipeline == a.pipeline and b.pipeline_source == a.pipeline_source


@pytest.mark.parametrize("label", list(SHARED))
def test_round_trip_of_shared_models_preserves_every_prediction(label, tmp_path):
    model = load_model(artifact(label, "mapping_pmevo.json"))
    path = str(tmp_path / "m.yml")
    export_osaca(model, path)
    back = load_model(path)
    _assert_same_model(model, back)
    for name in SHARED[label]:
        exps = load_experiments(artifact(label, name))
        c1, b1 = simulate(model, exps)
        c2, b2 = simulate(back, exps)
        assert np.array_equal(c1, c2) and np.array_equal(b1, b2)


@pytest.mark.parametrize("name", builtin_names())
def test_round_trip_of_builtin_models(name, tmp_path):
    model = load_model(name)
    path = str(tmp_path / f"{name}.yml")
    export_osaca(model, path)
    back = load_model(path)
    _assert_same_model(model, back)
    if name in BUILTIN_DATA:
        for exp_file in SHARED[BUILTIN_DATA[name]]:
            exps = load_experiments(artifact(BUILTIN_DATA[name], exp_file))
            assert np.array_equal(simulate(model, exps)[0], simulate(back, exps)[0],
                                  equal_nan=True)


def test_round_trip_keeps_r_max_latency_and_provenance(tmp_path):
    forms = {"ADD_((REG:RW:G:64)),_((IMM:32))": ((0b0011, 1),),
             "VDIVPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))": ((0b0001, 1), (0b1000, 8)),
             "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))": ((0b0110, 2),)}
    model = MachineModel("toy one", "x86", ("0", "1", "10", "DIV"), forms, r_max=2.5,
                         latency={"VDIVPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))": 13.5},
                         provenance={"description": "instruction_forms: tricky", "n": [1, 2]})
    path = str(tmp_path / "toy.yml")
    export_osaca(model, path)
    back = load_model(path)
    _assert_same_model(model, back)
    assert back.provenance == model.provenance
    exps = ExperimentSet(model.forms, (Experiment.of(list(forms) * 3),), "x86")
    assert simulate(model, exps)[0][0] == simulate(back, exps)[0][0] == 24.0    # 3 x 8 cycles on DIV


def test_round_trip_keeps_every_timing_fact(tmp_path):
    add_mem = "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
    vadd = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"
    vadd_mem = "VADDPD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"
    mov = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
    uops = {add_mem: ((0b011, 1), (0b100, 1)), vadd: ((0b001, 1),), vadd_mem: ((0b001, 1), (0b100, 1)),
            mov: ((0b100, 1),)}
    tricky = "instruction_forms: \"llvm-mca\" 19.1.7 -mcpu=skylake # ü"
    model = MachineModel(
        "timed", "x86", ("0", "1", "2"), uops, r_max=4.0,
        latency={add_mem: 1.0, vadd: 4.0, vadd_mem: 1e-05, mov: 1e6},
        operand_latency={add_mem: {1: 6.0}, vadd_mem: {0: 0.0, 2: 10.5}},
        latency_source={add_mem: tricky, vadd: "osaca:skx.yml"},
        move_elimination={mov: False}, idiom_ports={vadd: True}, idiom_breaks={vadd: False},
        pipeline={"window": 224, "load_latency": 5.0, "store_forward_latency": 4.5,
                  "macro_fusion": 1, "taken_branch": 2.5e-07},
        pipeline_source={"window": tricky, "load_latency": "llvm"})
    path = str(tmp_path / "timed.yml")
    export_osaca(model, path)
    back = load_model(path)
    _assert_same_model(model, back)
    assert back.provenance == model.provenance
    # and a model without any of them comes back without them
    plain = MachineModel("plain", "x86", ("0",), {vadd: ((1, 1),)})
    export_osaca(plain, path)
    again = load_model(path)
    assert (again.pipeline, again.latency, again.latency_source) == ({}, {}, {})


def test_osaca_timing_facts_of_our_files_are_checked(tmp_path):
    path = tmp_path / "bad.yml"
    head = "isa: x86\nports: ['0']\npmpredict: {name: x}\ninstruction_forms:\n"
    entry = "- name: add\n  operands: []\n  port_pressure: [[1, ['0']]]\n  pmpredict_form: ADD\n"
    for extra, message in [("  latency: .nan\n", "latency must be a finite number >= 0"),
                           ("  latency: 1\n  pmpredict_latency_from: {'x': 2}\n",
                            "pmpredict_latency_from must map operand indices"),
                           ("  latency: 1\n  pmpredict_idiom_ports: 1\n",
                            "pmpredict_idiom_ports has the wrong type")]:
        path.write_text(head + entry + extra)
        with pytest.raises(InputError, match=message) as info:
            load_osaca_model(str(path))
        assert info.value.line == 5
    path.write_text(head.replace("{name: x}", "{name: x, pipeline: {rob: 3}}") + entry)
    with pytest.raises(InputError, match="unknown pipeline key 'rob'") as info:
        load_osaca_model(str(path))
    assert info.value.line == 3


def _osaca_data_files():
    try:
        import osaca
    except ImportError:
        pytest.skip("OSACA is not installed (pip install osaca)")
    files = sorted(glob.glob(os.path.join(os.path.dirname(osaca.__file__), "data", "*.yml")))
    if not files:
        pytest.skip("no OSACA data files found")
    return files


# the largest x86 files take 1-2.5 s each to parse with PyYAML; skx stands in for them
_SLOW_FILES = {"csx.yml", "bdw.yml", "icl.yml", "ivb.yml", "hsw.yml"}


def test_every_shipped_osaca_file_loads():
    for path in _osaca_data_files():
        if os.path.basename(path) in _SLOW_FILES:
            continue
        model = load_osaca_model(path)
        assert model.isa in ("x86", "aarch64") and len(model.uops) > 40, path
        assert all(f.startswith("osaca:") for f in model.forms)


@pytest.mark.parametrize("code", ["skx", "zen4", "a72"])
def test_shipped_files_give_their_latencies_and_pipeline_facts(code):
    """The numbers are read from the file here too: the test checks the import, not a table."""
    import yaml
    path = next((p for p in _osaca_data_files() if os.path.basename(p) == f"{code}.yml"), None)
    if path is None:
        pytest.skip(f"OSACA's {code}.yml not found")
    with open(path) as f:
        raw = yaml.safe_load(f)
    model = load_osaca_model(path)
    source = f"osaca:{code}.yml"
    general = raw["load_latency"].get("gpr", raw["load_latency"].get("x"))
    assert model.pipeline["load_latency"] == general
    assert model.provenance["osaca_load_latency"] == raw["load_latency"]
    if raw.get("store_to_load_forward_latency") is not None:
        assert model.pipeline["store_forward_latency"] == raw["store_to_load_forward_latency"]
    else:
        assert "store_forward_latency" not in model.pipeline
    if raw.get("ROB_size") is not None:
        assert model.pipeline["window"] == raw["ROB_size"]
    else:
        assert "window" not in model.pipeline
    assert model.pipeline_source == {key: source for key in model.pipeline}
    # every form's latency is the one of the first entry OSACA would use
    form = "osaca:vaddpd ymm,ymm,ymm" if raw["isa"] == "x86" else "osaca:fmla v.d,v.d,v.d"
    name, operands = form[len("osaca:"):].split(" ")
    want = next(e["latency"] for e in raw["instruction_forms"] if str(e["name"]).lower() == name
                and ",".join(o.get("name") or f"{o['prefix']}.{o['shape']}"
                             for o in e["operands"]) == operands)
    assert model.latency[form] == want and model.latency_source[form] == source
    if code == "skx":
        assert want == 4                  # vaddpd ymm on Skylake-SP (Intel's manual, uops.info)
    assert all(s == source for s in model.latency_source.values())
    assert set(model.latency_source) == set(model.latency)


def test_foreign_forms_predict_like_osaca_with_its_own_file():
    """a72.yml as shipped: our exact scheduler and OSACA agree on simple kernels."""
    path = next((p for p in _osaca_data_files() if p.endswith("a72.yml")), None)
    if path is None:
        pytest.skip("OSACA's a72.yml not found")
    model = load_osaca_model(path)
    add, fmla = "osaca:add x,x,x", "osaca:fmla v.d,v.d,v.d"
    assert add in model.uops and fmla in model.uops
    exps = ExperimentSet(model.forms, (Experiment.of({add: 4, fmla: 2}),), "aarch64")
    ours = simulate(model, exps)[0][0]

    from osaca.parser import ParserAArch64
    from osaca.semantics import ArchSemantics, MachineModel as OsacaModel, reduce_to_section
    parser = ParserAArch64()
    text = ("// OSACA-BEGIN\n" + "add x1, x2, x3\nadd x4, x5, x6\nadd x7, x8, x9\nadd x10, x11, x12\n"
            "fmla v1.2d, v2.2d, v3.2d\nfmla v4.2d, v5.2d, v6.2d\n// OSACA-END\n")
    kernel = reduce_to_section(parser.parse_file(text), parser)
    sem = ArchSemantics(parser, OsacaModel(arch="a72"))
    sem.normalize_instruction_forms(kernel)
    sem.add_semantics(kernel)
    sem.assign_optimal_throughput(kernel)
    assert ours == pytest.approx(max(ArchSemantics.get_throughput_sum(kernel)), abs=0.011)


def test_foreign_files_with_slips_keep_the_rest(tmp_path):
    path = tmp_path / "x.yml"
    path.write_text("isa: x86\nports: ['0', '1']\ninstruction_forms:\n"
                    "- name: add\n  operands: []\n  port_pressure: [[1, '01']]\n"
                    "- name: div\n  operands: []\n  port_pressure: [[1, ['DIV']]]\n"
                    "- name: [jo, jno]\n  operands: [{class: identifier}]\n  port_pressure: []\n"
                    "- name: half\n  operands: []\n  port_pressure: [[0.5, '0']]\n")
    model = load_osaca_model(str(path))
    assert model.uops == {"osaca:add": ((0b11, 1),), "osaca:jo id": (), "osaca:jno id": ()}
    assert model.provenance["skipped"] == ["osaca:div: unknown port 'DIV' in port_pressure "
                                           "(ports are 0, 1)",
                                           "osaca:half: fractional port pressure 0.5"]


@pytest.mark.parametrize("text, where, message", [
    ("isa: x86\nports: [0\n", 3, "malformed YAML"),
    ("isa: mips\nports: ['0']\ninstruction_forms: []\n", 1, "'isa' must be x86 or aarch64"),
    ("isa: x86\nports: ['0']\ninstruction_forms:\n- name: add\n  operands: []\n"
     "  port_pressure: [[1, ['7']]]\n  pmpredict_form: ADD\n", 4, "unknown port '7'"),
])
def test_bad_osaca_files_are_located_errors(tmp_path, text, where, message):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        load_osaca_model(str(path))
    assert info.value.line == where


def test_cli_simulates_with_an_osaca_file(tmp_path, capsys):
    model = load_model(artifact("A72", "mapping_pmevo.json"))
    yml = str(tmp_path / "a72.yml")
    assert main(["export", artifact("A72", "mapping_pmevo.json"), "--format", "osaca", "-o", yml]) == 0
    capsys.readouterr()
    exps = artifact("A72", "train_len05.json")
    assert main(["simulate", "--mapping", yml, "--experiments", exps, "--json"]) == 0
    import json
    rows = json.loads(capsys.readouterr().out)["predictions"]
    want = simulate(model, load_experiments(exps))[0]
    assert [r["cycles"] for r in rows] == list(want)
    bad = tmp_path / "bad.yml"
    bad.write_text("isa: x86\nports: [\n")
    assert main(["simulate", "--mapping", str(bad), "--experiments", exps]) == 2
    assert capsys.readouterr().err.startswith(f"pmpredict: error: {bad}:")


def test_export_of_an_imported_export_is_the_same_file(tmp_path):
    model = load_model(artifact("A72", "mapping_pmevo.json"))
    first, second = str(tmp_path / "1.yml"), str(tmp_path / "2.yml")
    export_osaca(model, first, source="x")
    export_osaca(load_model(first), second, source="x")
    with open(first) as a, open(second) as b:
        assert a.read() == b.read()
