"""Normalisation (AT&T == Intel keys) and form matching with its deterministic tie rules."""

import pytest

from pmpredict.asm.match import APPROX_ADDR, APPROX_GPR, FormMatcher
from pmpredict.asm.normalize import normalize
from pmpredict.isa.keys import FormKey
from pmpredict.asm.parse import parse
from pmpredict.formats.model_files import load_model

X86_FORMS = [
    "ADD_((REG:RW:G:64)),_((IMM:32))",
    "ADD_((REG:RW:G:64)),_((IMM:8))",
    "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]",
    "INC_byte_ptr_[((MEM:64))_+_((MIMM:16))]",
    "INC_dword_ptr_[((MEM:64))_+_((MIMM:16))]",
    "MOV_((REG:W:G:64)),_((IMM:32))",
    "MOV_((REG:W:G:64)),_((IMM:64))",
    "TEST_((REG:R:G:64)),_((IMM:32))",
    "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]",
    "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]",
    "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))]",
    "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]",
    "LEA_((REG:W:G:64)),__[2*((DIV:64))]",
    "VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]",
    "VPBROADCASTD_((REG:W:V:256)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]",
    "VPSLLD_((REG:W:V:256)),_((REG:R:V:256)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]",
    "VMOVDQU_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256))",
    "SHL_((REG:RW:G:64)),_((IMM:8))",
    "SHL_((REG:RW:G:64)),_cl",
    "ADD_((REG:RW:G:32)),_((REG:R:G:32))",
    "ADD_((REG:RW:G:64)),_((REG:R:G:64))",
]
A64_FORMS = [
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:32)),_sxtw",
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:32)),_sxtw_2",
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_lsl_2",
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_lsr_4",
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))",
    "_add_((REG:W:G:64)),_((REG:R:G:64)),_8",
    "_fmla_((REG:W:F:VEC)).2d,_((REG:R:F:VEC)).2d,_((REG:R:F:VEC)).d[0]",
    "_fmla_((REG:W:F:VEC)).2d,_((REG:R:F:VEC)).2d,_((REG:R:F:VEC)).2d",
    "_fmul_((REG:W:F:VEC)).4s,_((REG:R:F:VEC)).4s,_((REG:R:F:VEC)).s[1]",
    "_ldr_((REG:W:F:128)),_[((MEM:64)),_((MIMM:16))]",
    "_tbl_((REG:W:F:VEC)).16b,_{((REG:R:F:VEC)).16b},_((REG:R:F:VEC)).16b",
    "_movi_((REG:W:F:VEC)).4s,_0x4,_lsl_8",
    "_movi_((REG:W:F:VEC)).4s,_0",
]


@pytest.fixture(scope="module")
def x86():
    return FormMatcher(X86_FORMS, "x86")


@pytest.fixture(scope="module")
def a64():
    return FormMatcher(A64_FORMS, "aarch64")


def key(text, syntax):
    return normalize(parse(text, syntax).instructions[0], syntax)


def form(matcher, text, syntax):
    return matcher.match(key(text, syntax)).form


@pytest.mark.parametrize("att,intel,expected", [
    ("addq $5, %rax", "add rax, 5", "ADD_((REG:RW:G:64)),_((IMM:8))"),
    ("addq $-128, %rax", "add rax, -128", "ADD_((REG:RW:G:64)),_((IMM:8))"),
    ("addq $1000, %rax", "add rax, 1000", "ADD_((REG:RW:G:64)),_((IMM:32))"),
    ("addq $.LC0, %rax", "add rax, OFFSET FLAT:.LC0", "ADD_((REG:RW:G:64)),_((IMM:32))"),
    ("movq $5, %rax", "mov rax, 5", "MOV_((REG:W:G:64)),_((IMM:32))"),          # no imm8 form
    ("movabsq $1099511627776, %rax", "movabs rax, 1099511627776", "MOV_((REG:W:G:64)),_((IMM:64))"),
    ("testq $1, %rax", "test rax, 1", "TEST_((REG:R:G:64)),_((IMM:32))"),
    ("addq 8(%rdi), %rax", "add rax, QWORD PTR 8[rdi]", "ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("incb (%rax)", "inc BYTE PTR [rax]", "INC_byte_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("incl (%rax)", "inc DWORD PTR [rax]", "INC_dword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("salq $5, %r8", "sal r8, 5", "SHL_((REG:RW:G:64)),_((IMM:8))"),
    ("shlq %cl, %rax", "shl rax, cl", "SHL_((REG:RW:G:64)),_cl"),              # fixed register
    ("addl %ecx, %eax", "add eax, ecx", "ADD_((REG:RW:G:32)),_((REG:R:G:32))"),  # exact width first
    ("addq %rcx, %rax", "add rax, rcx", "ADD_((REG:RW:G:64)),_((REG:R:G:64))"),
    ("leaq (%rdi,%rsi,4), %rax", "lea rax, [rdi+rsi*4]", "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))]"),
    # an rbp base has no encoding without a displacement: the disp8 form, as assembled
    ("leaq (%rbp,%rsi,4), %rax", "lea rax, [rbp+rsi*4]",
     "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"),
    ("leaq 8(%rdi,%rsi,2), %rax", "lea rax, 8[rdi+rsi*2]",
     "LEA_((REG:W:G:64)),__[((MEM:64))+2*((DIV:64))+((IMM:8))]"),
    ("leaq 8(%rdi), %rax", "lea rax, 8[rdi]", "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]"),
    ("leaq (%rdi), %rax", "lea rax, [rdi]", "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]"),
    ("leaq 1000(%rdi), %rax", "lea rax, 1000[rdi]", "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]"),
    ("leaq .LC0(%rip), %rax", "lea rax, .LC0[rip]", "LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]"),
    ("leaq 0(,%rax,4), %r8", "lea r8, [0+rax*4]", "LEA_((REG:W:G:64)),__[2*((DIV:64))]"),
    ("vpaddd (%rdx,%rax), %ymm1, %ymm0", "vpaddd ymm0, ymm1, YMMWORD PTR [rdx+rax]",
     "VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("vpbroadcastd (%rax), %ymm0", "vpbroadcastd ymm0, DWORD PTR [rax]",
     "VPBROADCASTD_((REG:W:V:256)),_dword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("vpslld (%rax), %ymm1, %ymm0", "vpslld ymm0, ymm1, XMMWORD PTR [rax]",
     "VPSLLD_((REG:W:V:256)),_((REG:R:V:256)),_xmmword_ptr_[((MEM:64))_+_((MIMM:16))]"),
    ("vmovdqu %ymm0, (%rdi,%rax)", "vmovdqu YMMWORD PTR [rdi+rax], ymm0",
     "VMOVDQU_ymmword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:V:256))"),
])
def test_x86_att_and_intel_agree_and_match(x86, att, intel, expected):
    assert key(att, "att") == key(intel, "intel")
    assert form(x86, att, "att") == expected
    assert form(x86, intel, "intel") == expected


@pytest.mark.parametrize("att,intel", [
    ("movslq %edi, %rdi", "movsx rdi, edi"), ("movzbl (%rax), %eax", "movzx eax, BYTE PTR [rax]"),
    ("cltq", "cdqe"), ("cqto", "cqo"), ("jmp *%rax", "jmp rax"),
    ("call *(%rax)", "call QWORD PTR [rax]"), ("cmovlq %rax, %rbx", "cmovl rbx, rax"),
    ("cmovl %eax, %ebx", "cmovl ebx, eax"), ("shrq %rax", "shr rax"),
    ("vcvtsi2sdl (%rax), %xmm1, %xmm1", "vcvtsi2sd xmm1, xmm1, DWORD PTR [rax]"),
    ("vmulsd (%rdx,%rax,8), %xmm0, %xmm0", "vmulsd xmm0, xmm0, QWORD PTR [rdx+rax*8]"),
    ("vpminsd (%rax), %ymm1, %ymm0", "vpminsd ymm0, ymm1, YMMWORD PTR [rax]"),
    ("vpmovzxbd (%rax), %ymm0", "vpmovzxbd ymm0, QWORD PTR [rax]"),
    ("vcvtdq2pd (%rax), %ymm0", "vcvtdq2pd ymm0, XMMWORD PTR [rax]"),
])
def test_att_aliases_normalise_like_intel(att, intel):
    assert key(att, "att") == key(intel, "intel")


def test_gpr_width_is_an_approximate_match(x86):
    m = x86.match(key("addl $3, %r9d", "att"))
    assert m.form == "ADD_((REG:RW:G:64)),_((IMM:8))" and m.approx == (APPROX_GPR,)
    exact = FormMatcher(X86_FORMS, "x86", allow_approx=False)
    assert exact.match(key("addl $3, %r9d", "att")).form is None


def test_unmatched_reason(x86):
    m = x86.match(key("cmpq %r8, %rax", "att"))
    assert m.form is None and "no `cmp` form" in m.reason
    m = x86.match(key("addq %r8, (%rax)", "att"))
    assert m.form is None and "other operands" in m.reason and "add r64, imm8" in m.reason
    assert str(m.key) == "add m64, r64"
    assert x86.match(key("shlq %dl, %rax", "att")).form is None           # only cl is the count
    assert str(key("shlq %cl, %rax", "att")) == "shl r64, r8"


def test_aarch64_tie_rules(a64):
    A = "aarch64"
    assert form(a64, "add x0, x1, w2, sxtw 2", A).endswith("_sxtw_2")     # equal amount first
    assert form(a64, "add x0, x1, w2, sxtw", A).endswith("_sxtw")
    assert form(a64, "add x0, x1, w2, sxtw 3", A).endswith("_sxtw_2")     # then nearest
    assert form(a64, "add x0, x1, x2, lsl 3", A).endswith("_lsl_2")
    assert form(a64, "add x0, x1, x2, lsr 1", A).endswith("_lsr_4")
    assert form(a64, "add x0, x1, x2", A) == "_add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))"
    assert form(a64, "add x0, x1, #4095", A) == "_add_((REG:W:G:64)),_((REG:R:G:64)),_8"
    assert form(a64, "fmla v0.2d, v1.2d, v2.d[1]", A).endswith(".d[0]")    # lane index is free
    assert form(a64, "fmla v0.2d, v1.2d, v2.2d", A).endswith(".2d,_((REG:R:F:VEC)).2d")
    assert form(a64, "fmul v0.4s, v1.4s, v2.s[3]", A).endswith(".s[1]")
    assert form(a64, "tbl v0.16b, {v1.16b}, v2.16b", A).startswith("_tbl_")
    assert form(a64, "movi v0.4s, 0x4, lsl 8", A) == "_movi_((REG:W:F:VEC)).4s,_0x4,_lsl_8"
    assert form(a64, "movi v0.4s, 0", A) == "_movi_((REG:W:F:VEC)).4s,_0"
    assert form(a64, "fmla v0.4s, v1.4s, v2.4s", A) is None


def test_aarch64_addressing_and_width_approximations(a64):
    m = a64.match(key("ldr q0, [x1, 16]", "aarch64"))
    assert m.form.startswith("_ldr_((REG:W:F:128))") and m.approx == ()
    for text in ("ldr q0, [x1, x4]", "ldr q0, [x1, 16]!", "ldr q0, [x1], 16", "ldr q0, [x1, w2, sxtw 4]"):
        m = a64.match(key(text, "aarch64"))
        assert m.form.startswith("_ldr_") and m.approx == (APPROX_ADDR,), text
    m = a64.match(key("add w0, w1, w2", "aarch64"))
    assert m.approx == (APPROX_GPR,)
    assert key("bne .L3", "aarch64") == key("b.ne .L3", "aarch64")
    assert key("ldr q0, [x1], 16", "aarch64") == FormKey("ldr", (("reg", "F", 128), ("amem", "post")))


def _self_match_failures(forms, isa):
    from pmpredict.isa.forms import parse_form
    from pmpredict.isa.examples import example_instance
    matcher = FormMatcher(forms, isa, allow_approx=False)
    syntax = "intel" if isa == "x86" else "aarch64"
    wrong = []
    for f in forms:
        text = example_instance(parse_form(f, isa))
        m = matcher.match(normalize(parse(text, syntax).instructions[0], syntax))
        if m.form != f:
            wrong.append((f, text, m.form))
    return wrong


def test_every_host_form_matches_its_own_instance():
    """The measurement harness's host form list (what `pmpredict infer --measure` models)."""
    from pmpredict.measure.host_forms import default_forms
    assert not _self_match_failures(default_forms(), "x86")


def test_every_pmevo_form_matches_its_own_instance(shared):
    """Instantiate each artifact form (forms.example_instance) and match it back to itself."""
    for isa, arch in (("x86", "SKL"), ("aarch64", "A72")):
        model = load_model(shared(arch, "mapping_pmevo.json"))
        wrong = _self_match_failures(list(model.uops), isa)
        assert not wrong, wrong[:5]
