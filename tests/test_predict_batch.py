"""Many kernels in one process (`pmpredict predict` over several files or many LLVM-MCA
regions, Predictor reused): the same reports as one kernel at a time, whatever the order,
the engine (compiled from COMPILED_FROM kernels on) or the number of processes."""

import csv
import json
import os

import pytest

from pmpredict.asm.kernel import all_regions
from pmpredict.asm.parse import parse_file
from pmpredict.cli import main
from pmpredict.commands.predict_files import COMPILED_FROM_WITH_COSTS
from pmpredict.formats.model_files import load_model
from pmpredict.predict.predictor import Predictor
from pmpredict.views import render_text, to_json

BHIVE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                      "bhive", "blocks.csv"))


def bhive_regions(tmp_path, count: int) -> str:
    """The first `count` BHive blocks, each an LLVM-MCA region (as bench_predict builds them)."""
    if not os.path.exists(BHIVE):
        pytest.skip(f"BHive blocks not found at {BHIVE}")
    lines = []
    with open(BHIVE) as fh:
        for k, row in enumerate(csv.DictReader(fh)):
            if k == count:
                break
            lines += [f"# LLVM-MCA-BEGIN b{k}"] + ["\t" + s.strip() for s in
                                                   row["asm_att"].split(" ; ")]
            lines.append(f"# LLVM-MCA-END b{k}")
    path = tmp_path / "blocks.s"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.slow
def test_a_batch_reports_what_each_kernel_alone_reports(tmp_path, capsys):
    count = COMPILED_FROM_WITH_COSTS + 30                     # the compiled engine runs
    path = bhive_regions(tmp_path, count)
    views = ("timeline", "bottlenecks")           # every view reads the compiled run
    # the built-in skl, as the Predictors below (not this machine's model, were it measured)
    assert main(["predict", path, "--model", "skl", "--jsonl", "--timeline", "--bottlenecks"]) == 0
    batch = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(batch) == count
    program = parse_file(path)
    kernels = all_regions(program)
    model = load_model("skl")
    for k in range(0, len(kernels), 4):
        # a fresh Predictor (nothing remembered from other kernels), plain Python engine
        alone = Predictor(model).predict(kernels[k], program.syntax, path)
        assert batch[k] == json.loads(json.dumps(to_json(alone, views)))
    # two processes: the same lines in the same order
    assert main(["predict", path, "--model", "skl", "--jsonl", "--timeline", "--bottlenecks",
                 "--jobs", "2"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == batch
    # text: every region's report, in order, as a Predictor reused in this process gives
    reports = Predictor(model).predict_many(kernels, program.syntax, path)
    want = "".join(("" if i == 0 else "\n" + "=" * 72 + "\n\n") + render_text(report)
                   for i, report in enumerate(reports))
    assert main(["predict", path, "--model", "skl", "-j", "2"]) == 0
    assert capsys.readouterr().out == want


def test_several_files(tmp_path, capsys):
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    a, b = (os.path.join(examples, name) for name in ("mix_avx2.s", "triad_neon.s"))
    assert main(["predict", a, b, "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert [x["file"] for x in both] == [a, b] and [x["isa"] for x in both] == ["x86", "aarch64"]
    for path, obj in zip((a, b), both):
        assert main(["predict", path, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == obj
    assert main(["predict", a, b, "--jsonl"]) == 0
    # --jsonl has a line per kernel: a hint on this machine's model goes to stderr instead
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == \
        [{k: v for k, v in obj.items() if k != "hint"} for obj in both]
    assert main(["predict", a, b]) == 0
    text = capsys.readouterr().out
    assert text.count("\n" + "=" * 72 + "\n") == 1
    assert "File:       " + a in text and "File:       " + b in text


def test_an_error_in_any_file_prints_nothing_else(tmp_path, capsys):
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    bad = tmp_path / "bad.s"
    bad.write_text("\taddq $1, %rax\n\tfrobnicate %rax, %rbx\n")
    good = os.path.join(examples, "mix_avx2.s")
    assert main(["predict", good, str(bad), "--strict"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("pmpredict: error: ") and "--strict" in err
    assert err.count("\n") == 1


def test_workers_end_quietly_and_the_same_as_one_process(tmp_path):
    """The pool's workers are stopped with SIGTERM, which the CLI turns into Ctrl-C: they
    ended with a KeyboardInterrupt traceback on stderr (exit 0) before they reset it."""
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "mix_avx2.s")
    run = [sys.executable, "-m", "pmpredict", "predict", *[example] * 5, "--jsonl"]
    one = subprocess.run(run, capture_output=True, text=True)
    for _ in range(3):
        two = subprocess.run(run + ["--jobs", "2"], capture_output=True, text=True)
        assert (two.returncode, two.stderr, two.stdout) == (0, one.stderr, one.stdout)
    assert "Traceback" not in one.stderr


@pytest.mark.parametrize("text", ["", "\t.text\n\t.globl f\nf:\n# nothing\n"])
def test_a_file_without_instructions_is_an_error(tmp_path, capsys, text):
    empty = tmp_path / "empty.s"
    empty.write_text(text)
    assert main(["predict", str(empty)]) == 2
    assert capsys.readouterr().err == (f"pmpredict: error: {empty}: no instructions in the file "
                                       "(only labels, directives or comments, or nothing)\n")


def test_rendering_many_leaves_the_garbage_collector_as_it_was():
    """render_all collects the young generation rarely while it renders (and freezes what
    exists): afterwards the thresholds and the frozen objects are as before, also when a
    render raises."""
    import gc

    from pmpredict.commands.batch import GC_YOUNG, render_all
    from pmpredict.errors import InputError
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    seen = []

    def render(item):
        seen.append(gc.get_threshold()[0])
        if item == "bad":
            raise InputError("k.s", "bad kernel", 3)
        return item.upper()
    assert list(render_all(["a", "b", "c"], render)) == ["A", "B", "C"]
    assert seen == [GC_YOUNG] * 3
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    with pytest.raises(InputError):
        list(render_all(["a", "bad", "c"], render))
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_on_a_dask_cluster_the_same_lines_in_the_same_order(tmp_path):
    """`predict --dask`: chunks of regions on a local Dask cluster (one worker here), and on
    a running scheduler by address; the output is the in-process output, byte for byte, and
    an error of a later region (--strict) is the same located line, exit 2, nothing printed."""
    import subprocess
    import sys
    from pmpredict.commands import batch
    path = bhive_regions(tmp_path, batch.DASK_CHUNK + 40)     # two chunks
    run = [sys.executable, "-m", "pmpredict", "predict", path, "--model", "skl", "--jsonl"]
    here = subprocess.run(run, capture_output=True, text=True)
    assert here.returncode == 0 and here.stdout.count("\n") == batch.DASK_CHUNK + 40
    there = subprocess.run(run + ["--dask", "--jobs", "1"], capture_output=True, text=True)
    assert (there.returncode, there.stdout) == (0, here.stdout)
    assert "Traceback" not in there.stderr
    # an existing scheduler, by address
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None, scheduler_port=0) as cluster:
        there = subprocess.run(run + ["--dask", cluster.scheduler_address],
                               capture_output=True, text=True)
    assert (there.returncode, there.stdout) == (0, here.stdout)
    # a region the model cannot predict, after the first chunk (every region before it known
    # to skl): the error, in order
    known = "".join(f"# LLVM-MCA-BEGIN k{i}\n\taddq ${i}, %rax\n\tvaddpd %ymm0, %ymm1, %ymm2\n"
                    f"# LLVM-MCA-END k{i}\n" for i in range(batch.DASK_CHUNK + 10))
    strict_path = tmp_path / "strict.s"
    strict_path.write_text(known + "# LLVM-MCA-BEGIN bad\n\tfrobnicate %rax, %rbx\n"
                                   "# LLVM-MCA-END bad\n")
    strict = [sys.executable, "-m", "pmpredict", "predict", str(strict_path), "--model", "skl",
              "--jsonl", "--strict"]
    here = subprocess.run(strict, capture_output=True, text=True)
    there = subprocess.run(strict + ["--dask", "--jobs", "1"], capture_output=True, text=True)
    assert here.returncode == 2 and "frobnicate" in here.stderr and "--strict" in here.stderr
    assert (there.returncode, there.stdout, there.stderr) == (2, "", here.stderr)
