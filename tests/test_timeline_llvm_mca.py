"""The simulation against llvm-mca's timeline on simple chains: with the same latencies
(OSACA's skx.yml for us, llvm-mca-19 -mcpu=skylake-avx512) both tools must issue every
instruction instance in the same cycle and have its result in the same cycle."""

import os
import re
import shutil
import subprocess

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.formats.model_files import load_model
from pmpredict.predict.predictor import Predictor

osaca = pytest.importorskip("osaca", reason="OSACA is not installed (its skx.yml is the model)")
pytestmark = pytest.mark.filterwarnings("ignore")

LLVM_MCA = shutil.which("llvm-mca-19")
ITERATIONS = 10
CHAINS = {
    "add -> imul, and an fp chain": ["addq %rax, %rbx", "imulq %rbx, %rax",
                                     "vaddpd %ymm0, %ymm1, %ymm0"],
    "mul -> add -> mul": ["vmulpd %ymm0, %ymm2, %ymm1", "vaddpd %ymm1, %ymm3, %ymm0"],
    "a 3-cycle integer chain and two independent adds": ["imulq %rcx, %rcx", "addq $1, %rdx",
                                                         "addq $1, %rsi"],
}


def llvm_timeline(lines):
    """{(iteration, index): (issue, result)} from llvm-mca's timeline view: the first `e`
    column is the issue cycle, `E` the cycle the result is written."""
    text = "".join(f"\t{line}\n" for line in lines)
    proc = subprocess.run([LLVM_MCA, "-mcpu=skylake-avx512", f"-iterations={ITERATIONS}",
                           "-timeline", f"-timeline-max-iterations={ITERATIONS}",
                           "-timeline-max-cycles=0"],
                          input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # the cycle columns start under the "Index" header's first digit; the header's two lines
    # (tens above, units below) together are as wide as the columns
    text_lines = proc.stdout.splitlines()
    k = next(i for i, line in enumerate(text_lines) if line.startswith("Index "))
    header = text_lines[k]
    start = len(header) - len(header[5:].lstrip())
    width = max(len(header.rstrip()), len(text_lines[k - 1].rstrip())) - start
    out = {}
    for m in re.finditer(r"^\[(\d+),(\d+)\].*$", proc.stdout, re.M):
        cells = m.group(0)[start:start + width]
        out[(int(m.group(1)), int(m.group(2)))] = (cells.index("e"), cells.index("E"))
    return out


@pytest.mark.skipif(LLVM_MCA is None, reason="llvm-mca-19 is not installed (the CI installs it)")
@pytest.mark.parametrize("name", CHAINS)
def test_issue_and_result_cycles_equal_llvm_mca(name):
    lines = CHAINS[name]
    model = load_model(os.path.join(os.path.dirname(osaca.__file__), "data", "skx.yml"))
    text = "".join(f"\t{line}\n" for line in lines)
    report = Predictor(model, criticality=False).predict(select_kernel(parse(text, "att")), "att")
    assert report.complete
    run, n = report.run, len(lines)
    theirs = llvm_timeline(lines)
    assert len(theirs) == n * ITERATIONS
    ours = {(k, i): (run.issue[k * n + i], run.result[k * n + i])
            for k in range(ITERATIONS) for i in range(n)}
    assert ours == theirs
