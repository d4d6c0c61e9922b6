"""Bad input of every class (issue #14): one located line `pmpredict: error: ...`, exit 2.

Loaders get random JSON / YAML shapes (hypothesis) and must raise InputError or load; the
CLI gets the classes the fuzzer found (deep nesting, non-UTF-8 text, wrong shapes, NaN and
absurd numbers, bad flags, names no export can write) and must refuse them before any work,
leaving existing outputs as they were.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmpredict.cli import main
from pmpredict.formats.experiment_files import load_experiments
from pmpredict.formats.model_files import load_model
from pmpredict.errors import InputError
from pmpredict.infer.checkpoint import load_checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import fuzz_cli as fz  # noqa: E402

ERROR = re.compile(r"^pmpredict: error: \S.*: \S.*$")


def one_error_line(err: str) -> bool:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return len(lines) == 1 and bool(ERROR.match(lines[0]))


def cli(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The fuzzer's valid inputs in a fresh directory, which is the working directory."""
    for name, content in fz.base_files().items():
        (tmp_path / name).write_text(content)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- random shapes into every loader -----------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from([fz.ADD, fz.SUB, "x86", "aarch64", "0", "osaca:add gpr"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["ports", "uops", "count", "cycles", "forms", "isa", "x",
                                       "name", "iseq", "result", "id", "latency"]),
                      children, max_size=3),
    max_leaves=8)

DOCUMENTS = {"native model": fz.native_model, "Mapping3": fz.mapping3,
             "native experiments": fz.native_experiments, "ExperimentList": fz.pmevo_experiments}


def _replace(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize("kind", list(DOCUMENTS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_json_loader_raises_input_error_or_loads(kind, data, tmp_path):
    doc = DOCUMENTS[kind]()
    paths = [p for p in fz._paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    _replace(doc, path, data.draw(json_values))
    file = tmp_path / "doc.json"
    file.write_text(json.dumps(doc))
    loader = load_model if "model" in kind or kind == "Mapping3" else load_experiments
    try:
        loader(str(file))
    except InputError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_osaca_loader_raises_input_error_or_loads(data, tmp_path):
    doc = fz.osaca_model()
    paths = [p for p in fz._paths(doc) if p]
    _replace(doc, data.draw(st.sampled_from(paths)), data.draw(json_values))
    file = tmp_path / "doc.yml"
    file.write_text(yaml.safe_dump(doc))
    try:
        model = load_model(str(file))
    except InputError:
        return
    # what loads can be written: names and numbers are checked on the way in
    json.dumps(model.to_json(), allow_nan=False)


# --- deep nesting ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_deep_json_is_one_located_error(tmp_path, text):
    path = tmp_path / "deep.json"
    path.write_text(text)
    for loader in (load_model, load_experiments):
        with pytest.raises(InputError, match="nested more than 100 levels") as err:
            loader(str(path))
        assert (err.value.line, err.value.column) == (1, 101 if text[0] == "[" else 501)


@pytest.mark.parametrize("text", ["isa: x86\nports: " + "[" * 50_000 + "]" * 50_000 + "\n",
                                  "isa: x86\nports: " + "{a: " * 50_000 + "1" + "}" * 50_000,
                                  "ports:\n" + "- " * 50_000 + "x\n"])
def test_deep_yaml_is_an_error_not_a_segfault(tmp_path, text):
    # libyaml's composer recursed in C and crashed the interpreter (exit 139)
    path = tmp_path / "deep.yml"
    path.write_text(text)
    with pytest.raises(InputError, match="nested more than 100 levels") as err:
        load_model(str(path))
    assert err.value.line is not None


def test_a_checkpoint_with_deep_metadata_is_refused(tmp_path):
    import numpy as np
    path = tmp_path / "c.npz"
    meta = "[" * 50_000 + "]" * 50_000
    np.savez(path, meta=np.frombuffer(meta.encode(), dtype=np.uint8))
    with pytest.raises(InputError, match="checkpoint"):
        load_checkpoint(str(path))


# --- text that is not UTF-8 ---------------------------------------------------------------

@pytest.mark.parametrize("name,content,where", [
    ("m.json", '{"format": "pmpredict-model",\n "name": "f\u00fczz"}'.encode("latin-1"), (2, 12)),
    ("m.yml", "isa: x86\n# caf\u00e9\n".encode("latin-1"), (2, 6)),
    ("m16.json", json.dumps(fz.native_model()).encode("utf-16"), (1, 1)),
])
def test_model_files_that_are_not_utf8(tmp_path, name, content, where):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match="not UTF-8") as err:
        load_model(str(path))
    assert (err.value.line, err.value.column) == where


def test_assembly_and_form_lists_that_are_not_utf8(files, capsys):
    (files / "latin.s").write_bytes(fz.KERNEL.replace("\tret", "\tret # r\u00e9sum\u00e9")
                                    .encode("latin-1"))
    status, _, err = cli(capsys, "predict", "latin.s")
    assert status == 2 and one_error_line(err) and "latin.s:9:" in err and "not UTF-8" in err
    (files / "forms.txt").write_bytes(f"{fz.ADD}\n# caf\u00e9\n".encode("latin-1"))
    status, _, err = cli(capsys, "infer", "--measure", "--forms", "forms.txt", "-o", "o.json")
    assert status == 2 and one_error_line(err) and "forms.txt:2:" in err


def test_predict_reads_standard_input(files, capsys, monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(fz.KERNEL.encode())))
    status, out, err = cli(capsys, "predict", "-", "--json")
    assert status == 0, err
    from_file = json.loads(cli(capsys, "predict", "k.s", "--json")[1])
    got = json.loads(out)
    assert got["cycles"] == from_file["cycles"] and len(got["instructions"]) == 4
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\taddq $1, %rax\n\xff\n")))
    status, _, err = cli(capsys, "predict", "-")
    assert status == 2 and err.startswith("pmpredict: error: <stdin>:2:1: not UTF-8")


# --- wrong shapes and numbers: the cases issue #14 lists -----------------------------------

SHAPES = [
    ("model", fz._with(fz.mapping3(), ["arch", "insns"], [[fz.ADD], [fz.SUB]]), "arch.insns"),
    ("model", fz._with(fz.native_model(), ["provenance"], [1, 2]), "'provenance' must be an object"),
    ("model", fz._with(fz.native_model(), ["ports"], ["a\nb", "1"]), "printable"),
    ("model", fz._with(fz.native_model(), ["r_max"], 1e-9), "'r_max' must be a finite number"),
    ("model", fz._with(fz.native_model(), ["r_max"], 1e308), "'r_max' must be a finite number"),
    ("model", fz._with(fz.native_model(), ["forms", fz.ADD, "latency"], 1e308), "latency must be"),
    ("model", fz._with(fz.native_model(), ["forms", fz.ADD, "uops", 0, "count"], 10**32),
     "uop count must be an integer >= 1 and <= 1e+06"),
    ("exps", fz._with(fz.pmevo_experiments(), ["exps", 0, "result"], [0.5]), "'result' must be"),
    ("exps", fz._with(fz.pmevo_experiments(), ["exps"], 5), "'exps' must be a list"),
    ("exps", fz._with(fz.pmevo_experiments(), ["exps", 0, "other_results"], 5),
     "'other_results' must be a list"),
    ("exps", fz._with(fz.pmevo_experiments(), ["exps", 0, "other_results", 0, "id"], 7),
     "id must be a name"),
    ("exps", fz._with(fz.pmevo_experiments(), ["exps", 0, "iseq"], [[fz.ADD]]), "is not in"),
    ("exps", fz._with(fz.native_experiments(), ["experiments"], 5), "'experiments' must be a list"),
    ("exps", fz._with(fz.native_experiments(), ["forms"], [[fz.ADD]]), "'forms': a form name"),
    ("exps", fz._with(fz.native_experiments(), ["isa"], "mips"), "'isa' must be"),
    ("exps", fz._with(fz.native_experiments(), ["isa"], "aarch64"), "is not spelled as a form"),
    ("exps", fz._with(fz.native_experiments(), ["experiments", 0, "cycles"], 1e308), "cycles must"),
    ("exps", fz._with(fz.native_experiments(), ["experiments", 0, "cycles"], 1e-320), "cycles must"),
]


@pytest.mark.parametrize("role,doc,message", SHAPES)
def test_wrong_shapes_and_absurd_numbers_are_located_errors(tmp_path, role, doc, message):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, indent=1))
    loader = load_model if role == "model" else load_experiments
    with pytest.raises(InputError) as err:
        loader(str(path))
    assert message in str(err.value)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path, literal):
    path = tmp_path / "e.json"
    text = json.dumps(fz.native_experiments(), indent=1).replace('"cycles": 0.5', f'"cycles": {literal}', 1)
    path.write_text(text)
    with pytest.raises(InputError, match=f"{literal} is not a JSON number") as err:
        load_experiments(str(path))
    line = text.count("\n", 0, text.index(literal)) + 1
    assert err.value.line == line


@pytest.mark.parametrize("pressure", [[[1e32, ["0"]]], [[math.nan, ["0"]]], [[math.inf, ["0"]]]])
def test_absurd_port_pressure_never_reaches_the_solver(tmp_path, pressure):
    """A foreign file's entry with such a pressure is left out (as OSACA leaves it unused)."""
    path = tmp_path / "m.yml"
    path.write_text(yaml.safe_dump(fz._with(fz.osaca_model(), ["instruction_forms", 0,
                                                                "port_pressure"], pressure)))
    model = load_model(str(path))
    assert "osaca:add imd:int,gpr" not in model.uops
    assert any("port_pressure" in s for s in model.provenance["skipped"])


def test_osaca_names_that_do_not_read_back_are_left_out(tmp_path):
    """OSACA's own files have `REPE CMPSB`; a name with a space cannot be a form name."""
    path = tmp_path / "m.yml"
    path.write_text(yaml.safe_dump(fz._with(fz.osaca_model(), ["instruction_forms", 1, "name"],
                                            ["sub", "repe sub", "a\nb", ""])))
    model = load_model(str(path))
    assert "osaca:sub imd:int,gpr" in model.uops and len(model.uops) == 3
    assert sum("is not one word" in s for s in model.provenance["skipped"]) == 3


# --- the CLI: flags checked before any work, outputs left alone ----------------------------

@pytest.mark.parametrize("argv", [
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--r-max", "0"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--r-max", "nan"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--seed", "-1"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--time-limit", "nan"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--epsilon", "inf"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "missing/out.json"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "adir"],
    ["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "--checkpoint", "missing/c"],
    ["infer", "-e", "e.json", "--forms", "forms.txt", "-o", "out.json"],
    ["infer", "--measure", "--forms", "junk.txt", "-o", "out.json"],
    ["export", "m.json", "--format", "llvm", "-o", "missing/x.td"],
    ["export", "m.json", "--format", "osaca", "-o", "adir"],
    ["export", "m.json", "--format", "osaca", "-o", "o.yml", "--name", ""],
    ["predict", "k.s", "--lines", "100-200"],
    ["predict", "k.s", "--lines", "1-2"],
    ["predict", "k.s", "--lines", "4-8", "--region", "x"],
    ["evaluate", "--model", "m.json", "-e", "e.json", "--plot", "missing/p.png"],
    ["models", "--forms"],
    ["predict"],
])
def test_bad_flags_are_one_line_before_any_work(files, capsys, argv):
    (files / "adir").mkdir()
    (files / "junk.txt").write_text(fz.ADD + "\njust a line\n")
    (files / "out.json").write_text(fz.SENTINEL)
    status, out, err = cli(capsys, *argv)
    assert status == 2 and one_error_line(err), err
    assert (files / "out.json").read_text() == fz.SENTINEL
    assert not any(".tmp" in f or "ckpt" in f for f in os.listdir(files))


def test_infer_refuses_a_foreign_isa_before_writing_anything(files, capsys):
    (files / "mips.json").write_text(json.dumps(fz._with(fz.native_experiments(), ["isa"], "mips")))
    status, _, err = cli(capsys, "infer", "-e", "mips.json", "--ports", "4", "-o", "m2.json")
    assert status == 2 and one_error_line(err) and "'isa'" in err
    assert not os.path.exists(files / "m2.json")


def test_simulate_never_prints_nan_or_infinity(files, capsys):
    status, out, _ = cli(capsys, "simulate", "--model", "m.json", "-e", "e.json", "--json")
    assert status == 0
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))
    # the old name of --model still works
    assert cli(capsys, "simulate", "--mapping", "m.json", "-e", "e.json", "--json")[1] == out


def test_evaluate_prints_the_metrics_before_a_plot_fails(files, capsys, monkeypatch):
    import pmpredict.views.plot

    def broken(*args, **kwargs):
        raise InputError("p.png", "cannot write the plot: disk full")

    monkeypatch.setattr(pmpredict.views.plot, "heatmap", broken)
    status, out, err = cli(capsys, "evaluate", "--model", "m.json", "-e", "e.json", "--plot", "p.png")
    assert status == 2 and "MAPE" in out and one_error_line(err) and "p.png" in err


def test_models_json_and_forms(files, capsys):
    status, out, _ = cli(capsys, "models", "--json")
    assert status == 0
    names = [m["name"] for m in json.loads(out)["models"]]
    assert "skl" in names
    status, out, _ = cli(capsys, "models", "m.json", "--forms", "--json")
    data = json.loads(out)
    assert [f["form"] for f in data["forms"]] == [fz.ADD, fz.SUB, fz.LOAD]
    assert data["forms"][0]["uops"] == [{"ports": ["0", "1"], "count": 1}]
    status, out, _ = cli(capsys, "models", "m.json", "--forms")
    assert out.splitlines()[0] == f"{fz.ADD}  1x{{0,1}}  latency 1"


def test_every_subcommand_has_a_description():
    from pmpredict.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert p.description and len(p.description) > 40, name


# --- names the real tools must read ------------------------------------------------------------

ODD_PORTS = ["P 0", "p#1", "'q'", "\u00e9t\u00e9", "a:b", "[x]"]


def _odd_model(tmp_path):
    doc = fz.native_model()
    doc["ports"] = list(ODD_PORTS[:4]) + ODD_PORTS[4:]
    doc["forms"][fz.ADD]["uops"] = [{"ports": ODD_PORTS[:2], "count": 1}]
    doc["forms"][fz.SUB]["uops"] = [{"ports": ODD_PORTS[1:3], "count": 2}]
    doc["forms"][fz.LOAD]["uops"] = [{"ports": ODD_PORTS[4:], "count": 1}]
    doc["name"] = "odd \"name\" #1"
    doc["r_max"] = 0.001
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    return path


def test_odd_names_round_trip_through_the_osaca_export(tmp_path):
    model = load_model(str(_odd_model(tmp_path)))
    out = tmp_path / "odd.yml"
    assert main(["export", str(tmp_path / "odd.json"), "--format", "osaca", "-o", str(out)]) == 0
    back = load_model(str(out))
    assert back.ports == model.ports and back.uops == model.uops and back.r_max == 0.001
    assert back.name == model.name
    pytest.importorskip("osaca")
    from osaca.semantics import MachineModel as OsacaModel
    osaca = OsacaModel(path_to_yaml=str(out))
    assert osaca.get_ports() == list(ODD_PORTS)


def test_odd_names_pass_llvm_tblgen(tmp_path):
    tblgen = shutil.which("llvm-tblgen-19")
    if tblgen is None:
        pytest.skip("llvm-tblgen-19 not found (apt-get install llvm-19)")
    out = tmp_path / "odd.td"
    assert main(["export", str(_odd_model(tmp_path)), "--format", "llvm", "-o", str(out),
                 "--self-contained"]) == 0
    proc = subprocess.run([tblgen, "-gen-subtarget", "-I", "/usr/lib/llvm-19/include", str(out),
                           "-o", "/dev/null"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
