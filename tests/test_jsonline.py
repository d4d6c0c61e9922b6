"""views/jsonline.py writes a report's default JSON directly, reusing what it encoded for
earlier rows: the same bytes as encoding views.to_json(report), on every example, on BHive
blocks with three models, with a fallback model's forms, for unknown and approximate
matches, and whatever was cached before."""

import glob
import json
import os

import pytest

from pmpredict.asm.kernel import all_regions
from pmpredict.asm.parse import parse_file, parse_source
from pmpredict.commands.predict_files import kernels_of, with_fallback
from pmpredict.formats.model_files import load_model
from pmpredict.predict.predictor import Predictor
from pmpredict.views import jsonline, to_json

from tests.test_predict_batch import bhive_regions

ROOT = os.path.dirname(os.path.dirname(__file__))
GENERIC = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def assert_same(report):
    expected = GENERIC.encode(to_json(report))
    assert jsonline.encode(report) == expected
    json.loads(expected)                            # and it is JSON


@pytest.mark.parametrize("model", ["skl", "zen4-vm", "zen", "a72"])
def test_every_example_is_written_as_the_encoder_writes_it(model):
    m = load_model(model)
    predictor = Predictor(m)
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "*.s")))
    assert files
    for path in files:
        program = parse_file(path)
        if program.isa != m.isa:
            continue
        for kernel in kernels_of(program):
            assert_same(predictor.predict(kernel, program.syntax, path))


@pytest.mark.parametrize("model", ["skl", "zen4-vm", "zen"])
def test_bhive_blocks_are_written_as_the_encoder_writes_them(tmp_path, model):
    path = bhive_regions(tmp_path, 400)
    program = parse_file(path)
    predictor = Predictor(load_model(model), compiled=True)
    reports = list(predictor.predict_many(all_regions(program), program.syntax, path))
    for report in reports:
        assert_same(report)
    # again, every fragment cached now: the same bytes
    for report in reports[::7]:
        assert_same(report)
    # the kinds of rows the cached fragments must tell apart occur among these blocks
    rows = [r for rep in reports for r in rep.rows]
    assert any(r.form is None for r in rows) and any(r.approx for r in rows)
    assert any(r.annotated is not None and (r.annotated.eliminated or r.annotated.idiom)
               for r in rows)
    assert any(r.slack is not None and not float(r.slack).is_integer() for r in rows) or \
        any(x != int(x) for r in rows for x in r.pressure.values())


def test_rows_from_a_fallback_model_are_written_as_the_encoder_writes_them():
    model = with_fallback("zen", load_model("zen4-vm"))
    predictor = Predictor(load_model("zen4-vm"), fallback=model)
    program = parse_file(os.path.join(ROOT, "examples", "dot_avx2.s"))
    report = predictor.predict(kernels_of(program)[0], program.syntax, "dot_avx2.s")
    assert any(r.source == "fallback" for r in report.rows)
    assert_same(report)


def test_unknown_instructions_strange_text_and_a_fused_pair():
    predictor = Predictor(load_model("skl"))
    for source in ("  nop\n", "  frobnicate %rax\n",
                   '# LLVM-MCA-BEGIN "q\\u00e9"\n  addq $1, %rax  # "ü"\n# LLVM-MCA-END\n',
                   ".L1:\n  addq $1, %rax\n  cmpq %rax, %rbx\n  jne .L1\n"):
        program = parse_source(source, "t.s", isa="x86")
        for kernel in kernels_of(program):
            report = predictor.predict(kernel, program.syntax, 'odd "path" é.s')
            assert_same(report)
            fused = any(r.annotated is not None and r.annotated.fused for r in report.rows)
            assert fused == source.startswith(".L1")      # the loop's cmp and jne fuse
