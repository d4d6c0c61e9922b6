"""Models kept ready between runs (pmpredict.formats.prepared): they save time and never
change an answer, whatever happens to the file, the kept copy or the cache folder."""

import json
import os

import pytest

from pmpredict.cli import main
from pmpredict.formats import prepared
from pmpredict.formats.model_files import _read_model, load_model
from pmpredict.models import builtin_path

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "mix_avx2.s")


def kept_files(cache) -> list[str]:
    folder = os.path.join(cache, prepared.FOLDER)
    return sorted(f for f in os.listdir(folder) if f.endswith(".pickle")) \
        if os.path.isdir(folder) else []


def predict_json(capsys, model_path: str) -> dict:
    assert main(["predict", EXAMPLE, "--model", model_path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def model_copy(tmp_path):
    """A native model file of the user's own (skl's built-in, copied)."""
    path = tmp_path / "mine.json"
    path.write_bytes(open(builtin_path("skl"), "rb").read())
    return str(path)


def test_a_kept_model_is_the_model_the_file_holds(capsys, model_copy):
    cache = os.environ["PMPREDICT_CACHE"]
    first = predict_json(capsys, model_copy)
    assert len(kept_files(cache)) == 1
    loaded = load_model(model_copy)
    assert "kept" in loaded.derived                      # read back, not from the file
    assert {"form index", "port kinds"} <= set(loaded.derived)
    assert loaded == _read_model(model_copy)
    assert predict_json(capsys, model_copy) == first


def test_a_changed_file_is_read_again(capsys, model_copy):
    cache = os.environ["PMPREDICT_CACHE"]
    before = predict_json(capsys, model_copy)
    doc = json.loads(open(model_copy).read())
    doc["r_max"] = 1
    with open(model_copy, "w") as fh:
        json.dump(doc, fh)
    changed = load_model(model_copy)
    assert changed.r_max == 1 and "kept" not in changed.derived
    after = predict_json(capsys, model_copy)
    assert after["cycles"] > before["cycles"]           # one instruction a cycle at most
    assert len(kept_files(cache)) == 1                  # the older copy removed


def test_a_damaged_copy_is_ignored(capsys, model_copy):
    cache = os.environ["PMPREDICT_CACHE"]
    first = predict_json(capsys, model_copy)
    (name,) = kept_files(cache)
    with open(os.path.join(cache, prepared.FOLDER, name), "wb") as fh:
        fh.write(b"\x80\x05not a pickle")
    assert "kept" not in load_model(model_copy).derived
    assert predict_json(capsys, model_copy) == first     # read from the file, and kept again
    assert "kept" in load_model(model_copy).derived


def test_a_copy_that_is_not_a_model_is_ignored(capsys, model_copy):
    import pickle
    cache = os.environ["PMPREDICT_CACHE"]
    first = predict_json(capsys, model_copy)
    (name,) = kept_files(cache)
    for other in ({"derived": {}}, [1, 2, 3]):
        with open(os.path.join(cache, prepared.FOLDER, name), "wb") as fh:
            pickle.dump(other, fh)
        assert "kept" not in load_model(model_copy).derived
    assert predict_json(capsys, model_copy) == first


def test_an_unwritable_cache_costs_only_time(capsys, model_copy):
    cache = os.environ["PMPREDICT_CACHE"]
    os.makedirs(cache, exist_ok=True)
    open(os.path.join(cache, prepared.FOLDER), "w").close()     # a file where the folder goes
    first = predict_json(capsys, model_copy)
    assert predict_json(capsys, model_copy) == first
    assert "kept" not in load_model(model_copy).derived


def test_other_code_does_not_read_a_copy(capsys, model_copy, monkeypatch):
    predict_json(capsys, model_copy)
    assert "kept" in load_model(model_copy).derived
    monkeypatch.setattr(prepared, "_code_stamp", "another version of pmpredict")
    assert "kept" not in load_model(model_copy).derived


def test_a_changed_model_derives_afresh(model_copy):
    from pmpredict.predict.predictor import Predictor
    model = load_model(model_copy)
    Predictor(model).port_kinds()
    assert "form index" in model.derived
    fewer = model.with_uops({f: u for f, u in list(model.uops.items())[:10]})
    assert fewer.derived == {}
    assert len(Predictor(fewer).port_kinds().ports) == len(model.ports)
    assert sum(len(v) for v in fewer.derived["form index"][1].values()) <= 10
