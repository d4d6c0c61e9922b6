"""Stages and views that extend (pmpredict/predict/predictor.py): predict runs the table of
stages, the Report keeps their results by name and makes the derived ones when asked, and each
view says which results it reads. A stage, a derived result, a view or a bound kind is added
without touching Predictor.predict or the Report."""

from __future__ import annotations

import glob
import importlib
import json
import os
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from pmpredict import views
from pmpredict.asm.kernel import Kernel, select_kernel
from pmpredict.asm.parse import parse
from pmpredict.formats.model_files import load_model
from pmpredict.predict import bottlenecks
from pmpredict.predict.predictor import (DERIVED, SOURCE, STAGES, Derived, PortSchedule,
                                         Predictor, Stage)
from pmpredict.views import jsonline, summary

from test_bottlenecks import LOOP          # the kernel the bottleneck tests use

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))

UNKNOWN = "vaddsd %xmm1, %xmm0, %xmm0\n"          # skl has no vaddsd form: nothing known


def _names() -> set[str]:
    return {SOURCE} | {s.name for s in STAGES} | {d.name for d in DERIVED}


def _view_modules():
    """Every module of pmpredict/views/ that declares what it reads (READS)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "pmpredict", "views", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        module = importlib.import_module(f"pmpredict.views.{name}")
        if hasattr(module, "READS"):
            out[name] = module
    return out


def _reports():
    """(a fresh report, its description) for each way a prediction ends: simulated (a
    loop the bounds explain, one they do not, so the verdict asks the costs), nothing in the
    model, an empty kernel."""
    skl = load_model("skl")
    neon = open(os.path.join(ROOT, "examples", "triad_neon.s")).read()
    cases = [(skl, select_kernel(parse(LOOP, "att")), "att", "simulated"),
             (load_model("a72"), select_kernel(parse(neon, "aarch64")), "aarch64",
              "unexplained"),
             (skl, select_kernel(parse(UNKNOWN, "att")), "att", "nothing known"),
             (skl, Kernel([], "file", "empty"), "att", "empty")]
    for model, kernel, syntax, what in cases:
        yield (lambda m=model, k=kernel, s=syntax: Predictor(m).predict(k, s, "k.s")), what


def test_the_tables_name_each_result_once_and_in_order():
    assert [s.name for s in STAGES] == ["matched", "annotated", "bounds", "simulated"]
    assert [d.name for d in DERIVED] == ["rows", "bottleneck", "full run", "criticality"]
    assert len(_names()) == 1 + len(STAGES) + len(DERIVED)
    with pytest.raises(ValueError, match="needs 'nowhere'"):
        Predictor(load_model("skl"), stages=STAGES + (Stage("x", None, ("nowhere",)),))
    with pytest.raises(ValueError, match="named twice"):
        Predictor(load_model("skl"), derived=DERIVED + (Derived("rows", None, ()),))


def test_every_report_view_declares_names_the_tables_have():
    modules = _view_modules()
    # every view of a Report (views.VIEWS, and the JSON line of summary and instructions)
    assert set(views.VIEWS) | {"jsonline"} <= set(modules)
    for name, module in modules.items():
        assert module.READS and set(module.READS) <= _names(), (name, module.READS)


def _recording(report, seen: set):
    """The report, each stage or derived result asked for by name noted in `seen`."""
    stage, derived = report.stage, report.derived

    def stage_(name):
        seen.add(name)
        return stage(name)

    def derived_(name):
        seen.add(name)
        return derived(name)

    report.stage, report.derived = stage_, derived_
    return report


def test_views_read_what_they_declare_and_nothing_else():
    renders = {name: (module.text, module.json) for name, module in views.VIEWS.items()}
    renders["jsonline"] = (jsonline.encode,)
    modules = _view_modules()
    read = {name: set() for name in renders}
    for make, what in _reports():
        for name, functions in renders.items():
            for render in functions:
                seen: set = set()
                render(_recording(make(), seen))
                assert seen <= set(modules[name].READS), (name, what, seen)
                read[name] |= seen
    for name in renders:
        assert read[name] == set(modules[name].READS), name


def test_a_report_keeps_the_stages_by_name():
    report = Predictor(load_model("skl")).predict(select_kernel(parse(LOOP, "att")), "att")
    assert list(report.stages) == [SOURCE] + [s.name for s in STAGES]
    with pytest.raises(TypeError):
        report.stages["toy"] = 1                                     # read-only
    simulated = report.stage("simulated")
    assert report.cycles == simulated.cycles and report.run is simulated.run
    assert report.bounds is report.stage("bounds").bounds
    with pytest.raises(KeyError):
        report.stage("no such stage")
    with pytest.raises(KeyError):
        report.derived("no such result")
    # derived: made once, when asked; the timeline's full run is the simulated run, complete
    assert report.computed("full run") is None and report.computed_criticality is None
    run = report.derived("full run")
    assert run is simulated.run and report.derived("full run") is run and run.dispatch
    assert report.criticality is report.computed("criticality") is not None
    # a kernel with nothing in the model stops after annotating, an empty one after matching
    unknown = Predictor(load_model("skl")).predict(select_kernel(parse(UNKNOWN, "att")), "att")
    assert list(unknown.stages) == [SOURCE, "matched", "annotated"] and unknown.cycles is None
    assert unknown.derived("full run") is None and unknown.criticality is None
    empty = Predictor(load_model("skl")).predict(Kernel([], "file", "empty"), "att")
    assert list(empty.stages) == [SOURCE, "matched"] and empty.cycles == 0.0
    assert empty.rows == [] and empty.machine is None and empty.bottleneck == []


def test_the_port_schedule_is_named():
    predictor = Predictor(load_model("skl"))
    report = predictor.predict(select_kernel(parse(LOOP, "att")), "att")
    schedule = predictor._port_schedule(report.stage("annotated").annotated)
    assert isinstance(schedule, PortSchedule)
    assert schedule.cycles == report.bounds.throughput and schedule.load == report.port_load
    assert len(schedule.pressure) == len(report.rows)


# a stage, a derived result and a view of them, made here alone: predictor.py, the Report and
# the views are not touched
@dataclass(frozen=True)
class Widths:
    """Toy stage: each instruction's text width."""
    per_instruction: tuple[int, ...]


def widths(predictor, matched) -> Widths:
    return Widths(tuple(len(r.text) for r in matched.rows))


def widest(predictor, found: Widths, rows) -> str:
    return max(zip(found.per_instruction, (r.text for r in rows)))[1]


TOY_VIEW = SimpleNamespace(
    READS=("widths", "widest"),
    text=lambda report: f"widest: {report.derived('widest')} "
                        f"({max(report.stage('widths').per_instruction)} characters)\n",
    json=lambda report: {"widths": list(report.stage("widths").per_instruction)})


def test_a_stage_a_derived_result_and_a_view_are_added_without_touching_the_predictor():
    model = load_model("skl")
    stages = STAGES[:1] + (Stage("widths", widths, ("matched",)),) + STAGES[1:]
    derived = DERIVED + (Derived("widest", widest, ("widths", "rows")),)
    toy = Predictor(model, stages=stages, derived=derived)
    plain = Predictor(model)
    for text in (LOOP, UNKNOWN):
        kernel = select_kernel(parse(text, "att"))
        report = toy.predict(kernel, "att")
        expected = tuple(len(r.text) for r in report.rows)
        assert len(expected) == len(kernel.instructions)
        assert report.stage("widths") == Widths(expected)
        assert set(TOY_VIEW.READS) <= {s.name for s in toy.stages} | set(toy.derived_by_name)
        assert TOY_VIEW.text(report).startswith("widest: ")
        assert TOY_VIEW.json(report) == {"widths": list(expected)}
        # the other views see the same report as without the toy stage
        every = tuple(views.VIEWS)
        again = plain.predict(kernel, "att")
        assert views.render_text(report, every) == views.render_text(again, every)
        assert json.dumps(views.to_json(report, every)) == json.dumps(views.to_json(again, every))
    assert TOY_VIEW.text(toy.predict(select_kernel(parse(LOOP, "att")), "att")) == \
        "widest: vmulps (%rdi,%rax), %ymm1, %ymm2 (32 characters)\n"


class TenTimesTheSlots(bottlenecks.Bottleneck):
    """Toy bound kind: ten cycles per instruction slot."""
    key, event_kind, event_rank = "toy", "toy", 9
    bound_name, limit_name = "toy", "the toy limit"

    def bound(self, evidence):
        return 10.0 * evidence.slots


def test_a_bound_kind_is_added_in_the_registry_alone(monkeypatch):
    """A kind added to bottlenecks.BOTTLENECKS (patched here as the edit of that tuple would
    change it for every module that reads it) is bounded, simulated to, and told, with no
    change in the predictor."""
    kinds = bottlenecks.BOTTLENECKS + (TenTimesTheSlots(),)
    bound = tuple(b for b in kinds if b.key is not None)
    monkeypatch.setattr(bottlenecks, "BOTTLENECKS", kinds)
    monkeypatch.setattr(bottlenecks, "BOUND_KINDS", bound)
    monkeypatch.setattr(summary, "BOUND_KINDS", bound)
    report = Predictor(load_model("skl")).predict(select_kernel(parse(LOOP, "att")), "att")
    slots = 4                                  # cmp and jne fuse
    assert report.bounds.toy == 10.0 * slots
    assert report.cycles >= report.bounds.toy - 1e-9
    assert list(summary.json(report)["bounds"]) == [b.key for b in bound]
    assert f"toy {10.0 * slots:.2f}" in summary.text(report)
    assert summary.verdict(report).startswith("bound by the toy limit")
