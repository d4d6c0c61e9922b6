"""Exports carry a model's measured store commits (pipeline store_commits) as the engine runs
them: ports of their own and a uop there in every store form (exporters/commits.py); checked by
the real OSACA and llvm-tblgen, against pmpredict's own prediction of mixed stores."""

import shutil
import subprocess
import warnings
from dataclasses import replace

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.exporters.commits import with_commit_ports
from pmpredict.exporters.llvm import export_llvm
from pmpredict.exporters.osaca import export_osaca
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor

STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"
IMM_STORE = "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))"
PUSH = "PUSH_((REG:R:G:64))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
# the two store forms on two ports (as an inferred mapping may put them): alone each runs one
# a cycle; the commit, measured, says one store a cycle whatever the form
MODEL = MachineModel(name="two-store-ports", isa="x86", ports=("S", "T", "A"),
                     uops={STORE: ((0b001, 1),), IMM_STORE: ((0b010, 1),), PUSH: ((0b011, 1),),
                           LOAD: ((0b100, 1),), ADD: ((0b100, 1),)},
                     latency={STORE: 1.0, IMM_STORE: 1.0, PUSH: 1.0, LOAD: 4.0, ADD: 1.0},
                     pipeline={"paired_stores": 0, "store_commits": 1})
MIXED = ["movq %rax, 8(%rsi)", "movq $1, 200(%rsi)"]

# OSACA's pyparsing calls emit deprecation warnings
pytestmark = pytest.mark.filterwarnings("ignore")


def test_store_forms_take_a_uop_on_the_commit_port():
    run = with_commit_ports(MODEL)
    assert run.ports == ("S", "T", "A", "store")
    commit = (0b1000, 1)
    assert run.uops[STORE] == ((0b001, 1), commit) and run.uops[IMM_STORE] == ((0b010, 1), commit)
    assert run.uops[PUSH] == ((0b011, 1), commit)         # its store is implicit, still a store
    assert run.uops[LOAD] == MODEL.uops[LOAD] and run.uops[ADD] == MODEL.uops[ADD]
    assert "store_commits" not in run.pipeline          # the ports stand for it now
    again = Predictor(run).predict(select_kernel(parse(
        "# OSACA-BEGIN\n" + "\n".join(MIXED) + "\n# OSACA-END\n", "att", "k.s")), "att", "k.s")
    assert again.ports == run.ports and again.cycles == pytest.approx(_pmpredict(MIXED))
    two = with_commit_ports(replace(MODEL, **{"pipeline": {"store_commits": 2}}))
    assert two.ports[-2:] == ("store1", "store2") and two.uops[STORE][-1] == (0b11000, 1)
    plain = replace(MODEL, **{"pipeline": {}})
    assert with_commit_ports(plain) is plain              # no fact, nothing added


def _pmpredict(lines) -> float:
    text = "# OSACA-BEGIN\n" + "\n".join(lines) + "\n# OSACA-END\n"
    return Predictor(MODEL).predict(select_kernel(parse(text, "att", "k.s")), "att", "k.s").cycles


def test_osaca_with_the_export_predicts_mixed_stores_as_pmpredict_does(tmp_path):
    osaca = pytest.importorskip("osaca", reason="OSACA is not installed (pip install osaca)")
    from osaca.parser import ParserX86ATT
    from osaca.semantics import ArchSemantics, MachineModel as OsacaModel, reduce_to_section
    del osaca

    def throughput(model) -> float:
        path = tmp_path / f"{len(model.ports)}.yml"
        export_osaca(model, str(path))
        parser = ParserX86ATT()
        kernel = reduce_to_section(parser.parse_file(
            "# OSACA-BEGIN\n" + "\n".join(MIXED) + "\n# OSACA-END\n"), parser)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sem = ArchSemantics(parser, OsacaModel(path_to_yaml=str(path)))
            sem.normalize_instruction_forms(kernel)
            sem.add_semantics(kernel)
            sem.assign_optimal_throughput(kernel)
        return max(ArchSemantics.get_throughput_sum(kernel))

    assert _pmpredict(MIXED) == pytest.approx(2.0)
    assert throughput(with_commit_ports(MODEL)) == pytest.approx(2.0, abs=0.011)
    without = replace(MODEL, **{"pipeline": {}})
    assert throughput(without) == pytest.approx(1.0, abs=0.011)     # the forms' ports alone


def test_llvm_tblgen_accepts_the_commit_port(tmp_path):
    tblgen = shutil.which("llvm-tblgen-19")
    if tblgen is None:
        pytest.skip("llvm-tblgen-19 not found (apt-get install llvm-19)")
    out = tmp_path / "model.td"
    export_llvm(with_commit_ports(MODEL), str(out), version=19, self_contained=True)
    text = out.read_text()
    assert "Portstore : ProcResource<1>" in text
    assert any("Portstore" in line for line in text.splitlines() if "SchedWriteRes" in line)
    proc = subprocess.run([tblgen, "-gen-subtarget", "-I", "/usr/lib/llvm-19/include", str(out),
                           "-o", "/dev/null"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
