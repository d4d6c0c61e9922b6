"""Fallback models (pmpredict.predict.fallback, `predict --fallback`): the model's forms first, the
fallback's for the rest with ports mapped by alignment, own ports for the unmatched, the
source of each instruction in the report."""

import json
import os

import pytest

from pmpredict.predict.align import align
from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.cli import main
from pmpredict.predict.fallback import merge, with_fallback
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor
from pmpredict.views import render_text, to_json

ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
ADD32 = "ADD_((REG:RW:G:32)),_((REG:R:G:32))"
IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
CMP = "CMP_((REG:R:G:64)),_((REG:R:G:64))"
DIV = "DIV_((REG:R:G:64))"


def _model(name, ports, uops, **kw):
    masks = {f: tuple((sum(1 << ports.index(p) for p in s), c) for s, c in u)
             for f, u in uops.items()}
    return MachineModel(name, "x86", tuple(ports), masks, **kw)


# ours: A, B integer ALU (B also multiplies), C the store port
OURS = _model("ours", ["A", "B", "C"],
              {ADD: [({"A", "B"}, 1)], IMUL: [({"B"}, 1)], STORE: [({"C"}, 1)]},
              latency={ADD: 1.0, IMUL: 3.0, STORE: 0.0})
# the fallback spells the same ports p0, p1, st and has a divider of its own; its ADD differs
# (ours must win), and it knows ADD r32 exactly (ours only approximately: ours must win too)
FALL = _model("fall", ["st", "div", "p1", "p0"],
              {ADD: [({"p0"}, 1)], IMUL: [({"p1"}, 1)], STORE: [({"st"}, 1)],
               CMP: [({"p0", "p1"}, 1)], DIV: [({"p1"}, 1), ({"div"}, 20)],
               ADD32: [({"p0"}, 1)]},
              latency={ADD: 1.0, IMUL: 3.0, STORE: 0.0, CMP: 1.0, DIV: 40.0},
              latency_source={DIV: "measured somewhere"},
              pipeline={"load_latency": 5.0}, pipeline_source={"load_latency": "fall's docs"})


def _mask(model, names) -> int:
    return sum(1 << model.ports.index(n) for n in names)


def _predict(body, predictor):
    text = "# OSACA-BEGIN\n" + "".join(f"\t{line}\n" for line in body) + "# OSACA-END\n"
    return predictor.predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s")


def test_merge_maps_the_fallback_ports_and_keeps_our_forms_first():
    fb = with_fallback(OURS, FALL)
    m = fb.model
    assert fb.alignment.mapping == {"A": "p0", "B": "p1", "C": "st"}
    assert fb.port_map == {"st": "C", "div": "div", "p1": "B", "p0": "A"}
    assert fb.own_ports == ("div",) and m.ports == ("A", "B", "C", "div")
    assert list(m.uops)[:3] == [ADD, IMUL, STORE]          # ours first, ours kept
    assert m.uops[ADD] == OURS.uops[ADD]
    assert fb.forms == {CMP, DIV, ADD32}
    assert m.uops[CMP] == ((_mask(m, ["A", "B"]), 1),)
    assert m.uops[DIV] == tuple(sorted([(_mask(m, ["B"]), 1), (_mask(m, ["div"]), 20)]))
    assert m.latency[DIV] == 40.0 and m.latency_source[DIV] == "measured somewhere"
    assert m.latency_source[CMP] == "fallback fall"         # a latency without a source
    assert m.pipeline == {"load_latency": 5.0} and fb.pipeline == ("load_latency",)
    assert m.pipeline_source["load_latency"] == "fall's docs"
    assert m.provenance["fallback"]["own_ports"] == ["div"]


def test_fallback_port_named_like_one_of_ours_is_primed():
    fall = _model("fall", ["A", "q", "r"], {ADD: [({"q", "r"}, 1)], CMP: [({"A"}, 1)]})
    ours = _model("ours", ["A", "B"], {ADD: [({"A", "B"}, 1)]})
    fb = merge(ours, fall, align(ours, fall))
    assert fb.own_ports == ("A",) and fb.model.ports == ("A", "B", "A'")
    assert fb.model.uops[CMP] == ((0b100, 1),)


def test_prediction_with_a_fallback_marks_each_source():
    body = ["addq %rbx, %rax", "imulq %rcx, %rdx", "divq %rsi", "addl %r8d, %r9d",
            "cmpq %r10, %r11", "jne .L1"]
    alone = _predict(body, Predictor(OURS))
    assert [r.form for r in alone.rows][2:] == [None, ADD, None, None]  # addl: approximate
    fb = with_fallback(OURS, FALL)
    r = _predict(body, Predictor(OURS, fallback=fb))
    assert [row.source for row in r.rows] == ["model", "model", "fallback", "model",
                                              "fallback", None]
    assert r.rows[3].form == ADD and r.rows[3].approx        # ours, approximate, beats F's exact
    # the divider: 20 cycles on the fallback's own port, and its 40-cycle latency
    assert r.bounds.throughput == 20.0 and r.bottleneck == ["div"]
    assert r.rows[2].latency == 40.0
    text = render_text(r)
    assert "divq %rsi" in text and "div r64 +" in text
    assert "From the fallback model fall (+, its ports mapped onto those of ours): lines 4, 6" \
        in text
    assert "Fallback:   fall for 2 of 6 instructions (+)" in text
    assert "its ports div have no counterpart: kept as ports of their own" in text
    out = to_json(r)
    assert [i.get("source") for i in out["instructions"]] == ["model", "model", "fallback",
                                                             "model", "fallback", None]
    assert out["fallback"]["instructions"] == 2 and out["fallback"]["own_ports"] == ["div"]
    assert out["ports"] == ["A", "B", "C", "div"]
    assert to_json(alone)["fallback"] is None


def _osaca_file(name):
    osaca = pytest.importorskip("osaca", reason="OSACA is not installed")
    path = os.path.join(os.path.dirname(osaca.__file__), "data", name)
    if not os.path.exists(path):
        pytest.skip(f"OSACA has no {name}")
    return path


def test_skl_with_osaca_skx_fallback_covers_the_loop_branch(capsys):
    skx = _osaca_file("skx.yml")
    assert main(["predict", "examples/mix_avx2.s", "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert main(["predict", "examples/mix_avx2.s", "--fallback", skx, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not alone["coverage"]["complete"] and out["coverage"]["complete"]
    by_line = {i["line"]: i for i in out["instructions"]}
    assert by_line[28]["source"] == by_line[29]["source"] == "fallback"
    assert by_line[28]["form"].startswith("osaca:cmp")
    assert {i["source"] for i in out["instructions"] if i["line"] < 28} == {"model"}
    # OSACA's latency for the cmp, with its source; the model's own rows keep theirs
    assert by_line[28]["latency"] == 1.0
    assert out["fallback"]["alignment"]["reference"] == "SKX"
    # the fallback's uops add work: never a faster prediction than the lower bound before
    assert out["cycles"] >= alone["cycles"] - 1e-9


def test_fallback_errors(capsys):
    assert main(["predict", "examples/mix_avx2.s", "--fallback", "a72"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pmpredict: error: a72:") and "aarch64" in err[0]
    assert main(["predict", "examples/mix_avx2.s", "--fallback", "nosuchmodel"]) == 2
