"""Grammars + transformer: exact dataclasses for the hard spellings, located errors, fuzzing."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmpredict.asm.detect import detect_syntax, guess_syntax
from pmpredict.asm.normalize import normalize
from pmpredict.asm.parse import MAX_INSTRUCTION_LENGTH, MAX_OPERANDS, parse, parse_file, parse_source
from pmpredict.isa.syntax import (Comment, Directive, Immediate, Indirect, Instruction, Label,
                                  Memory, Register, RegisterList, Rounding, Shift, Symbol)
from pmpredict.cli import main
from pmpredict.errors import InputError


def one(text, syntax):
    insns = parse(text, syntax).instructions
    assert len(insns) == 1, insns
    return insns[0]


# --- AT&T ----------------------------------------------------------------------------------

def test_att_memory_forms():
    m = one("movl %eax, %gs:0x10(,%rbx,4)", "att").operands[1]
    assert m == Memory(base=None, index="rbx", scale=4, disp=16, segment="gs", has_disp=True)
    m = one("leaq 0(,%rax,4), %r8", "att").operands[0]
    assert (m.base, m.index, m.scale, m.disp) == (None, "rax", 4, 0)
    m = one("movq foo@GOTPCREL(%rip), %rax", "att").operands[0]
    assert (m.base, m.symbols) == ("rip", ("foo@GOTPCREL",))
    m = one("leaq .LC0+8(%rip), %rdi", "att").operands[0]
    assert (m.base, m.disp, m.symbols) == ("rip", 8, (".LC0",))
    m = one("addq $-1, -8(%rbp)", "att").operands[1]
    assert (m.base, m.disp) == ("rbp", -8)
    assert one("movq %fs:40, %rax", "att").operands[0] == Memory(disp=40, segment="fs", has_disp=True)


def test_att_prefixes_avx512_and_indirect():
    i = one("lock addl $1, (%rax)   # comment", "att")
    assert (i.prefixes, i.mnemonic, i.operands[0]) == (("lock",), "addl", Immediate(1, "1"))
    assert one("rep stosq", "att").prefixes == ("rep",)
    assert one("notrack jmp *%rax", "att").operands == (Indirect(Register("rax")),)
    assert one("{vex} vpaddd %ymm1, %ymm2, %ymm3", "att").prefixes == ("{vex}",)
    assert one("data16 leaq tl@tlsgd(%rip), %rdi", "att").prefixes == ("data16",)
    i = one("vaddps (%rax){1to16}, %zmm1, %zmm2{%k1}{z}", "att")
    assert i.operands[0].broadcast == "1to16"
    assert i.operands[2] == Register("zmm2", mask="k1", zeroing=True)
    assert one("vaddps {rn-sae}, %zmm0, %zmm1, %zmm2", "att").operands[0] == Rounding("rn-sae")
    assert one("jmp *.L4(,%rax,8)", "att").operands[0].target.symbols == (".L4",)
    assert one("movl $.LC0, %edi", "att").operands[0] == Immediate(None, ".LC0", (".LC0",))
    assert one("jne 1b", "att").operands == (Symbol("1b"),)
    assert one("fadd %st(1), %st", "att").operands[0] == Register("st(1)")


def test_att_directives_labels_comments_and_statement_text():
    text = ('\t.section .rodata.str1.1,"aMS",@progbits,1\n'
            '.LC0:\t.string "a \\"#b\\\\ ; c"  # not part of the string\n'
            '1:\tmovl $1, %eax ; ret\n'
            '/* c comment */ addq $-1, -8(%rbp)\n'
            '\t.size main, .-main')                # no final newline
    p = parse(text, "att")
    kinds = [type(s).__name__ for s in p.statements]
    assert kinds == ["Directive", "Label", "Directive", "Comment", "Label", "Instruction",
                     "Instruction", "Instruction", "Directive"]
    assert p.statements[2] == Directive(2, 7, ".string", '"a \\"#b\\\\ ; c"')
    assert p.statements[3].text == "not part of the string"
    assert [i.text for i in p.instructions] == ["movl $1, %eax", "ret", "addq $-1, -8(%rbp)"]
    assert [i.line for i in p.instructions] == [3, 3, 4]


# --- Intel ---------------------------------------------------------------------------------

def test_intel_memory_forms():
    m = one("mov eax, DWORD PTR fs:tl@tpoff", "intel").operands[1]
    assert (m.segment, m.symbols, m.width) == ("fs", ("tl@tpoff",), 32)
    m = one("mov rax, qword ptr fs:[40]", "intel").operands[1]
    assert (m.segment, m.disp, m.width) == ("fs", 40, 64)
    m = one("add eax, DWORD PTR gl[0+rdi*4]", "intel").operands[1]
    assert (m.base, m.index, m.scale, m.symbols) == (None, "rdi", 4, ("gl",))
    m = one("jmp [QWORD PTR .L4[0+rdi*8]]", "intel").operands[0]
    assert (m.index, m.scale, m.width) == ("rdi", 8, 64)
    assert one("mov eax, OFFSET FLAT:.LC0", "intel").operands[1] == Immediate(None, ".LC0", (".LC0",))
    m = one("lea rax, -1[rcx]", "intel").operands[1]
    assert (m.base, m.disp) == ("rcx", -1)
    m = one("vmovdqu ymm0, ymmword ptr [rdx + 4*rax + 32]", "intel").operands[1]
    assert (m.base, m.index, m.scale, m.disp, m.width) == ("rdx", "rax", 4, 32, 256)
    m = one("movss xmm0, DWORD PTR .LC0[rip]", "intel").operands[1]
    assert (m.base, m.symbols, m.width) == ("rip", (".LC0",), 32)
    assert one("mov BYTE PTR [rax], 0", "intel").operands[0].width == 8
    assert one("nop WORD PTR cs:[rax+rax*1+0x0]", "intel").operands[0].segment == "cs"


def test_intel_avx512_and_symbols():
    i = one("vpaddd zmm0 {k1} {z}, zmm1, dword ptr [rdi]{1to16}", "intel")
    assert i.operands[0] == Register("zmm0", mask="k1", zeroing=True)
    assert (i.operands[2].broadcast, i.operands[2].width) == ("1to16", 32)
    assert one("vaddps zmm2, zmm1, zmm0, {rn-sae}", "intel").operands[3] == Rounding("rn-sae")
    assert one("call printf@PLT", "intel").operands == (Symbol("printf@PLT"),)
    assert one("lock xadd QWORD PTR [rdi], rax", "intel").prefixes == ("lock",)


# --- MSVC / MASM listings (x86 Intel) -------------------------------------------------------

MASM = """; Listing generated by Microsoft (R) Optimizing Compiler Version 19.41.34120.0

TITLE\tC:\\src\\f.c
include listing.inc
INCLUDELIB LIBCMT
PUBLIC\tf
EXTRN\t__imp_printf:PROC
CONST\tSEGMENT
__real@3fd0000000000000 DQ 03fd0000000000000r\t; 0.25
$SG4 DB\t'a;b#c', 00H
CONST\tENDS
_TEXT\tSEGMENT
n$ = 40
f\tPROC\t\t\t\t\t\t; COMDAT
\tmovsxd\tr9, DWORD PTR n$[rsp]
\tmovsd\txmm1, QWORD PTR __real@3fd0000000000000
\tlea\trcx, OFFSET FLAT:$SG4
\tand\teax, 0ffH\t\t\t\t\t; low byte
\tnpad\t8
$LL4@f:
\tadd\trax, 10H
\tjne\tSHORT $LL4@f
\tcall\t?g@@YAXXZ
\tret\t0
f\tENDP
_TEXT\tENDS
END
"""


def test_masm_listing_statements():
    assert guess_syntax(MASM) == "intel"
    p = parse(MASM, "intel", "f.asm")
    directives = [(d.name, d.args) for d in p.statements if isinstance(d, Directive)]
    assert directives == [
        ("title", "C:\\src\\f.c"), ("include", "listing.inc"), ("includelib", "LIBCMT"),
        ("public", "f"), ("extrn", "__imp_printf:PROC"), ("segment", "CONST"),
        ("dq", "__real@3fd0000000000000 03fd0000000000000r"), ("db", "$SG4 'a;b#c', 00H"),
        ("ends", "CONST"), ("segment", "_TEXT"), ("=", "n$ 40"), ("proc", "f"), ("npad", "8"),
        ("endp", "f"), ("ends", "_TEXT"), ("end", "")]
    comments = [c.text for c in p.statements if isinstance(c, Comment)]
    assert comments == [MASM.splitlines()[0][2:], "0.25", "COMDAT", "low byte"]
    assert [s.name for s in p.statements if isinstance(s, Label)] == ["$LL4@f"]
    ops = {i.mnemonic: i.operands for i in p.instructions}
    assert ops["movsxd"][1] == Memory(base="rsp", symbols=("n$",), width=32, has_disp=True)
    assert ops["movsd"][1].symbols == ("__real@3fd0000000000000",)
    assert ops["lea"][1] == Immediate(None, "$SG4", ("$SG4",))
    assert ops["and"][1] == Immediate(255, "255")
    assert ops["add"][1] == Immediate(16, "16")
    assert ops["jne"] == (Symbol("$LL4@f"),)
    assert ops["call"] == (Symbol("?g@@YAXXZ"),)
    # `npad` is a directive (listing.inc's padding macro); a comment is no part of the text
    assert [i.text for i in p.instructions][3:5] == ["and eax, 0ffH", "add rax, 10H"]


def test_semicolon_is_a_comment_only_outside_gnu_as():
    # GNU as reads Intel syntax after `.intel_syntax`, where `;` separates statements
    gnu = parse(".intel_syntax noprefix\n\tmov eax, 1; mov ebx, 2\n", "intel")
    assert [i.text for i in gnu.instructions] == ["mov eax, 1", "mov ebx, 2"]
    masm = parse("\tmov eax, 1; mov ebx, 2\n", "intel")
    assert [i.text for i in masm.instructions] == ["mov eax, 1"]
    assert masm.statements[1] == Comment(1, 12, "mov ebx, 2")
    # AT&T is always GNU as
    assert len(parse("\tmovl $1, %eax; movl $2, %ebx\n", "att").instructions) == 2


def test_a_semicolon_first_line_does_not_decide_the_syntax():
    kernel = "\tvaddpd ymm0, ymm0, YMMWORD PTR [rdi+rax]\n\tadd rax, 32\n"
    assert guess_syntax("; my kernel\n" + kernel) == "intel"
    # words of a `;` comment that look like another syntax's are not counted
    assert guess_syntax("; x0, w1, [x2, #8], ldr, b.ne, v0.4s\n" + kernel) == "intel"
    assert guess_syntax("; rax, DWORD PTR [rbx]\n\tmovq %rax, %rbx\n") == "att"
    p = parse_source("; hand-written kernel, by someone used to NASM\n.L2:\n" + kernel
                     + "\tjne .L2\n", "k.s")
    assert p.syntax == "intel" and len(p.instructions) == 3


def test_masm_error_is_located_and_quotes_the_line_as_written():
    with pytest.raises(InputError) as info:
        parse("; c\n\tmov eax, [rbx\t; no closing bracket\n", "intel", "f.asm")
    err = info.value
    assert (err.line, err.column) == (2, 16)          # the comment, where `]` should be
    assert err.message.endswith("in: mov eax, [rbx\t; no closing bracket")


# --- AArch64 -------------------------------------------------------------------------------

def test_aarch64_operands():
    assert one("ldr x0, [x1, #8]!", "aarch64").operands[1] == Memory(base="x1", disp=8, writeback="pre",
                                                                     has_disp=True)
    i = one("ldr x0, [x1], 8", "aarch64")
    assert i.operands[1:] == (Memory(base="x1"), Immediate(8, "8"))
    m = one("ldr q0, [x1, w2, sxtw 4]", "aarch64").operands[1]
    assert (m.index, m.index_shift) == ("w2", Shift("sxtw", 4))
    assert one("add x0, x1, w2, uxtw #2", "aarch64").operands[3] == Shift("uxtw", 2)
    assert one("add x0, x0, :lo12:.LC0", "aarch64").operands[2].symbols == (".LC0",)
    assert one("ld1 {v0.4s-v3.4s}, [x0]", "aarch64").operands[0] == RegisterList(
        ("v0.4s", "v1.4s", "v2.4s", "v3.4s"))
    assert one("fmla v0.2d, v1.2d, v2.d[0]", "aarch64").operands[2] == Register("v2.d", lane=0)
    assert one("movi v0.4s, 0x4, lsl 8", "aarch64").operands[1:] == (Immediate(4, "4"), Shift("lsl", 8))
    assert one("fmov d0, 2.0e+0", "aarch64").operands[1].value == 2.0
    assert one("fcmp s0, #0.0", "aarch64").operands[1].value == 0.0
    # C's float suffix, as OSACA reads it: the same value, the same form as without it
    assert one("fmov s1, #2.0e+2f", "aarch64").operands[1] == Immediate(200.0, "200.0")
    assert one("fmov d1, #-1.5F", "aarch64").operands[1] == Immediate(-1.5, "-1.5")
    assert normalize(one("fmov s1, #2.0e+2f", "aarch64"), "aarch64") == \
        normalize(one("fmov s1, #200.0", "aarch64"), "aarch64")
    assert one("tbz w0, #3, 1f", "aarch64").operands == (Register("w0"), Immediate(3, "3"), Symbol("1f"))
    assert one("csel x0, x1, x2, ne", "aarch64").operands[3] == Symbol("ne")
    assert one("b.ne .L3  // comment", "aarch64").mnemonic == "b.ne"
    assert one("ld1w z0.s, p0/z, [x0]", "aarch64").operands[1] == Register("p0/z")


def test_aarch64_hash_comment_only_at_line_start():
    p = parse("# LLVM-MCA-BEGIN foo\n\tmov x1, #111\n  # LLVM-MCA-END\n", "aarch64")
    assert p.statements[0] == Comment(1, 1, "LLVM-MCA-BEGIN foo")
    assert p.statements[1].operands[1] == Immediate(111, "111")
    assert isinstance(p.statements[2], Comment) and p.statements[2].text == "LLVM-MCA-END"


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("syntax,text,line,column", [
    ("att", "\tmovq %rax, %rbx\n\tmovq %rax,, %rbx\n", 2, 12),
    ("intel", "mov rax, rbx\nmov rax, [rbx\n", 2, 14),
    ("aarch64", "add x0, x1, x2\nldr x0, [x1 x2]\n", 2, 13),
    # a repeated line is parsed once: the error is located at its first occurrence
    ("att", "\tmovq %rax, %rbx\n\n\taddq $1,, %rax\n\tmovq %rax, %rbx\n\taddq $1,, %rax\n", 3, 10),
    ("att", "/* a C comment\n   over two lines */\n\taddq $1,, %rax\n", 3, 10),
])
def test_rejected_line_is_located(syntax, text, line, column):
    with pytest.raises(InputError) as info:
        parse(text, syntax, "k.s")
    err = info.value
    assert (err.path, err.line, err.column) == ("k.s", line, column)
    assert "cannot parse" in err.message


def test_instructions_no_cpu_has_are_refused_before_parsing():
    """More operands (MAX_OPERANDS) or characters (MAX_INSTRUCTION_LENGTH) than an instruction
    can have: one located error, whatever else the line holds."""
    def refused(text, syntax):
        with pytest.raises(InputError) as info:
            parse(text, syntax, "k.s")
        return info.value.line, info.value.column, info.value.message

    nine = ", ".join(["%rax"] * (MAX_OPERANDS + 1))
    assert refused(f".L2:\n\tnop\n\taddq {nine}  # c\n", "att") == (
        3, 2, f"'addq' with {MAX_OPERANDS + 1} operands: no instruction has more than "
              f"{MAX_OPERANDS}")
    assert refused(f"\t.p2align 4 ; addq {nine}\n", "att")[:2] == (1, 15)
    assert refused(f"x: y: addq {nine}\n", "att")[:2] == (1, 7)
    assert refused("\tadd " + ", ".join(["x0"] * 100) + "\n", "aarch64")[2].startswith(
        "'add' with 100 operands")
    assert refused("; listing\n\tadd " + ", ".join(["rax"] * 100) + "\n", "intel")[:2] == (2, 2)
    line, column, message = refused("\tadd x0, x0, #" + "1+" * MAX_INSTRUCTION_LENGTH + "1\n",
                                    "aarch64")
    assert (line, column) == (1, 2) and message.startswith("'add' is an instruction of ")
    # the bound itself is read (and left to the ISA's semantics to judge)
    eight = ", ".join(["%rax"] * MAX_OPERANDS)
    assert len(parse(f"\taddq {eight}\n", "att").instructions[0].operands) == MAX_OPERANDS


@pytest.mark.parametrize("syntax,text,instructions", [
    ("att", " ; ".join(["movl $1, %eax"] * 9), 9),                   # many statements
    ("att", "vpgatherdd %ymm0, (%rax,%ymm1,4), %ymm2 ; vpgatherdd %ymm3, (%rax,%ymm1,4), %ymm4", 2),
    ("att", "addq %rax, %rbx  # a, b, c, d, e, f, g, h, i, j", 1),    # a comment
    ("att", "\t.byte 1,2,3,4,5,6,7,8,9,10,11,12", 0),                 # a directive
    ("att", '\t.ascii "' + "a," * MAX_INSTRUCTION_LENGTH + '"', 0),    # a long string
    ("att", "# " + "x" * 2 * MAX_INSTRUCTION_LENGTH, 0),                # a long comment
    ("att", "/* a, b, c, d,\n e, f, g, h, i, j */ addq $1, %rax", 1),  # a C comment
    ("intel", "$SG4 DB 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 00H\t; a, b", 0),  # MASM data
    ("intel", "void f(int,int,int,int,int,int,int,int,int) PROC", 0),   # a demangled name
    ("aarch64", "ld4 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0], x1 ; "
                "st4 {v0.4s, v1.4s, v2.4s, v3.4s}, [x2], x3", 2),             # register lists
])
def test_long_or_comma_rich_lines_that_are_not_one_instruction_are_read(syntax, text, instructions):
    assert len(parse(text + "\n", syntax, "k.s").instructions) == instructions


def test_repeated_lines_are_statements_of_their_own_lines():
    text = ".L2:\n\taddq $1, %rax\n\taddq $1, %rax  # x\n\taddq $1, %rax\n.L3: addq $1, %rax\n"
    statements = parse(text, "att", "k.s").statements
    assert [(type(s).__name__, s.line) for s in statements] == [
        ("Label", 1), ("Instruction", 2), ("Instruction", 3), ("Comment", 3),
        ("Instruction", 4), ("Label", 5), ("Instruction", 5)]
    same = [(s.column, s.mnemonic, s.operands) for s in statements if isinstance(s, Instruction)]
    assert same[:3] == [same[0]] * 3
    assert [s.text for s in statements if isinstance(s, Instruction)] == ["addq $1, %rax"] * 4
    # a C comment over several lines: the file is read as a whole, with the same statements
    commented = parse("/* a\n b */" + text, "att", "k.s").statements
    assert [(type(s).__name__, s.line) for s in commented] == \
        [(type(s).__name__, s.line + 1) for s in statements]


def test_cli_reports_parse_error_in_one_line(tmp_path, capsys):
    f = tmp_path / "bad.s"
    f.write_text("\taddq $1, %rax\n\taddq $1 %rax\n")
    assert main(["predict", str(f), "--model", "nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pmpredict: error: {f}:2:")


# Random lines and mutations of real compiler lines: a parse either succeeds or raises
# InputError -- never another exception.
_REAL_LINES = {
    "att": ["\tvmovdqu\t(%rsi,%rax), %ymm1", "\tleaq\t-1(%rcx), %rax", "\tjne\t.L4",
            '\t.string\t"a#b"', ".L4:", "\tmovl\t%eax, %gs:0x10(,%rbx,4)", "\tvaddps (%rax){1to16}, %zmm1, %zmm2{%k1}{z}"],
    "intel": ["\tvmovdqu\tymm1, YMMWORD PTR [rsi+rax]", "\tlea\trax, -1[rcx]", "\tmov\teax, OFFSET FLAT:.LC0",
              "\tjmp\t[QWORD PTR .L4[0+rdi*8]]", "\tvpaddd zmm0 {k1} {z}, zmm1, dword ptr [rdi]{1to16}",
              "f\tPROC\t; COMDAT", "\tjne\tSHORT $LL4@f", "\tand\teax, 0ffH", "a$ = 8",
              "\tDD\timagerel $LN13+164", "\tmovsd\txmm1, QWORD PTR __real@3fd0000000000000"],
    "aarch64": ["\tldr\tq0, [x1, x4]", "\tadd\tx0, x1, w2, uxtw #2", "\tld1\t{v0.4s-v3.4s}, [x0], x2",
                "\tfmla\tv0.2d, v1.2d, v2.d[0]", "# LLVM-MCA-BEGIN", "\tb.ne\t.L3 // x", "\tldr\tx0, [x1, #8]!"],
}
_ALPHABET = "abcdxyzqwlr0123456789%$#.,:;[](){}*+-!=@_ \t\"\\/'"


_MATCHERS = {}


def _check(text, syntax):
    """Parse, then run the rest of the front end (kernel choice, normalisation, matching)."""
    from pmpredict.asm.kernel import select_kernel
    from pmpredict.asm.match import FormMatcher
    from pmpredict.asm.normalize import normalize
    isa = "aarch64" if syntax == "aarch64" else "x86"
    if isa not in _MATCHERS:
        forms = (["_add_((REG:W:G:64)),_((REG:R:G:64)),_8", "_ldr_((REG:W:F:128)),_[((MEM:64)),_((MIMM:16))]"]
                 if isa == "aarch64" else
                 ["ADD_((REG:RW:G:64)),_((IMM:8))", "LEA_((REG:W:G:64)),__[((MEM:64))+((IMM:8))]",
                  "VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]"])
        _MATCHERS[isa] = FormMatcher(forms, isa)
    try:
        program = parse(text, syntax, "fuzz.s")
        kernel = select_kernel(program)
        for insn in kernel.instructions:
            _MATCHERS[isa].match(normalize(insn, syntax))
    except InputError as exc:
        assert exc.path == "fuzz.s"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(syntax=st.sampled_from(["att", "intel", "aarch64"]),
       lines=st.lists(st.text(alphabet=_ALPHABET, max_size=40), min_size=1, max_size=4))
def test_fuzz_random_lines(syntax, lines):
    _check("\n".join(lines), syntax)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), syntax=st.sampled_from(["att", "intel", "aarch64"]))
def test_fuzz_mutated_real_lines(data, syntax):
    line = data.draw(st.sampled_from(_REAL_LINES[syntax]))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(line)))
        op = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        ch = data.draw(st.sampled_from(_ALPHABET))
        if op == "insert":
            line = line[:pos] + ch + line[pos:]
        elif op == "delete":
            line = line[:pos] + line[pos + 1:]
        else:
            line = line[:pos] + ch + line[pos + 1:]
    _check(line, syntax)


# --- detection -----------------------------------------------------------------------------

def test_syntax_detection_and_overrides():
    assert guess_syntax("\tmovq %rax, %rbx\n") == "att"
    assert guess_syntax("\tmov rax, QWORD PTR [rbx]\n") == "intel"
    assert guess_syntax("\t.intel_syntax noprefix\n\tret\n") == "intel"
    assert guess_syntax("\tldr x0, [x1, #8]\n\tadd v0.4s, v0.4s, v1.4s\n") == "aarch64"
    assert guess_syntax('\t.arch armv8-a\n') == "aarch64"
    assert detect_syntax("\tmov rax, rbx\n", syntax="att") == "att"
    assert detect_syntax("\tmovq %rax, %rbx\n", isa="aarch64") == "aarch64"
    with pytest.raises(InputError):
        detect_syntax("", syntax="intel", isa="aarch64")


def test_parse_file_missing(tmp_path):
    with pytest.raises(InputError) as info:
        parse_file(str(tmp_path / "nope.s"))
    assert "cannot read" in info.value.message


def test_statement_types_exported():
    p = parse("x:\n\tnop\n", "att")
    assert p.statements == [Label(1, 1, "x"), Instruction(2, 2, "nop", ())]
