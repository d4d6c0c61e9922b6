"""Instruction -> form string (`semantics.get("x86").form_of`) and the form list of
`pmpredict infer --measure --forms-from FILE.s`.

The conversion must round-trip through pmpredict's own matcher: the instruction matches the
form it was given, and the form's example instance matches back to it; checked on the host
form list (exact spelling), on the 6,000 BHive blocks (real compiler output) and on AT&T and
Intel spellings of the same instructions.
"""

from __future__ import annotations

import collections
import csv
import os
import platform
import shutil
import subprocess
import sys

import pytest

from pmpredict.isa import semantics
from pmpredict.asm.match import FormMatcher
from pmpredict.asm.normalize import normalize
from pmpredict.asm.parse import parse
from pmpredict.errors import InputError
from pmpredict.isa.forms import parse_form
from pmpredict.isa.examples import example_instance
from pmpredict.measure.forms_from import forms_from_assembly
from pmpredict.measure import default_forms

X86 = semantics.get("x86")
BHIVE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                      "bhive", "blocks.csv"))


def form_of(text: str, syntax: str = "att") -> str:
    return X86.form_of(parse(text, syntax).instructions[0], syntax)


def round_trip_failures(forms: dict) -> list:
    """forms: form -> instructions (with their syntax) it was made from. Every instruction
    must match its form, and the form's example instance must match back."""
    matcher = FormMatcher(list(forms), "x86", allow_approx=False)
    wrong = []
    for form, insns in forms.items():
        for insn, syntax in insns:
            got = matcher.match(normalize(insn, syntax)).form
            if got != form:
                wrong.append((insn.text, form, got))
        example = example_instance(parse_form(form))
        got = matcher.match(normalize(parse(example, "intel").instructions[0], "intel")).form
        if got != form:
            wrong.append((example, form, got))
    return wrong


def test_host_forms_come_back_from_their_example_instances():
    for form in default_forms():
        assert form_of(example_instance(parse_form(form)), "intel") == form


@pytest.mark.parametrize("att, intel, form", [
    ("addq %rbx, %rax", "add rax, rbx", "ADD_((REG:RW:G:64)),_((REG:R:G:64))"),
    ("addq $1, %rax", "add rax, 1", "ADD_((REG:RW:G:64)),_((IMM:8))"),
    ("addl $1000, %eax", "add eax, 1000", "ADD_((REG:RW:G:32)),_((IMM:32))"),
    ("addw $1000, %ax", "add ax, 1000", "ADD_((REG:RW:G:16)),_((IMM:16))"),
    ("movabsq $123456789012, %rax", "movabs rax, 123456789012", "MOV_((REG:W:G:64)),_((IMM:64))"),
    ("shlq %cl, %rax", "shl rax, cl", "SHL_((REG:RW:G:64)),_cl"),
    ("movl (%rdi,%rax,4), %eax", "mov eax, dword ptr [rdi+rax*4]",
     "MOV_((REG:W:G:32)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("vaddps (%rax), %ymm0, %ymm1", "vaddps ymm1, ymm0, ymmword ptr [rax]",
     "VADDPS_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("vcvtsi2sdq %rax, %xmm1, %xmm1", "vcvtsi2sd xmm1, xmm1, rax",
     "VCVTSI2SD_((REG:W:V:128)),_((REG:R:V:128)),_((REG:R:G:64))"),
    ("leaq 8(%rdi,%rsi,4), %rcx", "lea rcx, [rdi+rsi*4+8]",
     "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"),
    ("leaq 1000(%rdi), %rdx", "lea rdx, [rdi+1000]",
     "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]"),
    ("leaq (%rdi), %rdx", "lea rdx, [rdi]", "LEA_((REG:W:G:64)),__[((MEM:64))]"),
    # an rbp or r13 base is encoded with a displacement of 0 (`lea 0x0(%rbp,%r10,1),%r9`): a
    # three-part address (Zen 4: two a cycle, where `[rbx + r10]` runs four)
    ("leaq (%rbp,%r10), %r9", "lea r9, [rbp+r10]",
     "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"),
    ("leal (%r13d,%eax,2), %ecx", "lea ecx, [r13d+eax*2]",
     "LEA_((REG:W:G:32)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"),
    ("leaq (%rbx,%r10), %r9", "lea r9, [rbx+r10]", "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))]"),
    ("cmovl %rbx, %rax", "cmovl rax, rbx", "CMOVL_((REG:RW:G:64)),_((REG:R:G:64))"),
    ("setne %al", "setne al", "SETNE_((REG:W:G:8))"),
    ("prefetcht0 64(%rdx)", "prefetcht0 byte ptr [rdx+64]",
     "PREFETCHT0_byte_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("movq %xmm0, %rax", "movq rax, xmm0", "MOVQ_((REG:W:G:64)),_((REG:R:V:128))"),
    # Intel syntax without a PTR keyword: the memory operand is as wide as the register
    ("vmovdqu (%rsi,%rax), %ymm0", "vmovdqu ymm0, [rsi+rax]",
     "VMOVDQU_((REG:W:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"),
])
def test_att_and_intel_give_the_same_form(att, intel, form):
    assert form_of(att, "att") == form_of(intel, "intel") == form


def test_a_locked_instruction_has_its_plain_form():
    assert form_of("lock addq %rax, (%rdi)", "att") == form_of("addq %rax, (%rdi)", "att") == \
        "ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"


@pytest.mark.parametrize("text, why", [
    ("rep movsb", "rep prefix"),
    ("jne .L3", "branch target"),
    ("blendvps %xmm0, %xmm1, %xmm2", "fixed xmm0"),
    ("paddd %mm1, %mm0", "register mm0"),
    ("fadd %st(1), %st", "register st"),
    ("vaddps %zmm1, %zmm2, %zmm3{%k1}", "masking"),
    ("vcmplt_oqps %ymm7, %ymm2, %ymm11", "contains '_'"),
])
def test_what_has_no_form_string_says_why(text, why):
    with pytest.raises(ValueError, match=why):
        form_of(text)


@pytest.mark.slow
def test_bhive_instructions_round_trip():
    """29,000 instructions of real compiler output: (almost) all get a form, and every
    instruction matches its form again, every form's example instance too."""
    if not os.path.exists(BHIVE):
        pytest.skip(f"BHive blocks not found at {BHIVE}")
    with open(BHIVE) as fh:
        text = "\n".join(row["asm_att"].replace(" ; ", "\n") for row in csv.DictReader(fh))
    forms = collections.defaultdict(list)
    failed = 0
    for insn in parse(text, "att", BHIVE).instructions:
        try:
            forms[X86.form_of(insn, "att")].append((insn, "att"))
        except ValueError:
            failed += 1                       # rep prefixes, x87 registers, vcmplt_oqps
    assert failed < 100 and len(forms) > 400
    assert not round_trip_failures({f: insns[:3] for f, insns in forms.items()})


LOOP = """\
	.text
	.globl	axpy
axpy:
	pushq	%rbp
	xorl	%eax, %eax
.L3:
	vmovupd	(%rdi,%rax), %ymm0
	vfmadd231pd	(%rsi,%rax), %ymm1, %ymm0
	vmovupd	%ymm0, (%rdx,%rax)
	addq	$32, %rax
	cmpq	%rcx, %rax
	jne	.L3
	lock addq %rax, (%rdi)
	popq	%rbp
	vzeroupper
	ret
"""


def test_forms_from_assembly_keeps_what_can_be_measured(tmp_path):
    path = tmp_path / "loop.s"
    path.write_text(LOOP)
    picked = forms_from_assembly([str(path)])
    left = {lo.line: lo.reason for lo in picked.left_out}
    assert set(left) == {12, 16}                  # push and pop are measured (rsp put back)
    assert "branch" in left[12] and "branch" in left[16]
    # lock addq: its plain form (the lock's cost is the machine's measured atomic_cycles)
    assert len(picked.forms) == 10 and picked.where[picked.forms[0]] == (str(path), 4)
    assert picked.where["ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))"] == \
        (str(path), 13)
    program = parse(LOOP, "att")
    kept = collections.defaultdict(list)
    for insn in program.instructions:
        if insn.line not in left:
            kept[X86.form_of(insn, "att")].append((insn, "att"))
    assert list(kept) == picked.forms and not round_trip_failures(kept)
    kernel = forms_from_assembly([str(path)], kernel_only=True)
    assert len(kernel.forms) == 5 and [lo.line for lo in kernel.left_out] == [12]


def test_forms_from_nothing_measurable_is_an_input_error(tmp_path):
    path = tmp_path / "ret.s"
    path.write_text("ret\n")
    with pytest.raises(InputError, match="no instruction that can be measured"):
        forms_from_assembly([str(path)])


needs_host = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")


@needs_host
@pytest.mark.slow
def test_infer_forms_from_then_predict_knows_every_kept_instruction(tmp_path):
    """End to end: the model inferred from a file's own instructions predicts that file with
    every instruction it kept (the loop's branch is the only one it has no form for), and
    carries measured latencies."""
    import json
    src = tmp_path / "loop.s"
    src.write_text(LOOP)
    out = tmp_path / "out.json"
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "infer", "--measure",
                           "--forms-from", str(src), "--kernel-only", "--ports", "6",
                           "-o", str(out), "--seed", "1", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert f"left out {src}:12: jne .L3: a branch" in proc.stderr
    pred = subprocess.run([sys.executable, "-m", "pmpredict", "predict", str(src), "--model",
                           str(out), "--json"], capture_output=True, text=True, env=env)
    assert pred.returncode == 0, pred.stderr
    report = json.loads(pred.stdout)
    # the branch has no form, but it fuses with the cmp before it (the front end measured
    # that pairs fuse): the pair runs as cmp's uops, so nothing is missing
    assert report["unmatched"] == [] and report["coverage"]["complete"]
    jump = next(r for r in report["instructions"] if r["line"] == 12)
    assert jump["form"] is None and jump["fused"] is True
    model = json.loads(out.read_text())
    add = model["forms"]["ADD_((REG:RW:G:64)),_((IMM:8))"]
    # one cycle, or less where the core folds add-immediate chains at rename (Golden Cove
    # and later: ~0.17 a link)
    assert 0 < add["latency"] <= 1 and add["latency_source"].startswith("measured on ")
    assert set(model["pipeline"]) >= {"load_latency", "store_forward_latency"}
