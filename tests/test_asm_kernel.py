"""Kernel selection: markers of OSACA, IACA, AArch64 bytes, llvm-mca regions, --lines, loops."""

import pytest

from pmpredict.asm.kernel import all_regions, select_kernel
from pmpredict.asm.parse import parse
from pmpredict.errors import InputError


def kernel(text, syntax, **kw):
    return select_kernel(parse(text, syntax, "k.s"), **kw)


def texts(k):
    return [i.text for i in k.instructions]


LOOP_ATT = """\
f:
\tmovl $0, %eax
.L2:
\tmovl $0, %ecx
.L3:
\taddq $1, %rcx
\tcmpq $9, %rcx
\tjne .L3
\taddq $1, %rax
\tcmpq $9, %rax
\tjl .L2
\tret
"""


def test_innermost_loop():
    k = kernel(LOOP_ATT, "att")
    assert k.how == "loop" and k.name == ".L3"
    assert texts(k) == ["addq $1, %rcx", "cmpq $9, %rcx", "jne .L3"]
    assert (k.first_line, k.last_line) == (6, 8)


def test_numeric_local_labels_and_two_innermost_loops():
    text = "1:\n\tincq %rax\n\tjnz 1b\n\tjmp 2f\n2:\n\tdecq %rbx\n\tjnz 2b\n\tret\n"
    k = kernel(text, "att")
    assert texts(k) == ["incq %rax", "jnz 1b"]
    assert k.others == [{"label": "2b", "lines": [6, 7]}]


def test_aarch64_loop_with_cbnz_and_whole_file_fallback():
    k = kernel(".L5:\n\tsub x0, x0, #1\n\tcbnz x0, .L5\n\tret\n", "aarch64")
    assert k.how == "loop" and texts(k) == ["sub x0, x0, #1", "cbnz x0, .L5"]
    k = kernel("\tadd x0, x0, 1\n\tb .L9\n.L9:\n\tret\n", "aarch64")  # forward / unconditional only
    assert k.how == "file" and len(k.instructions) == 3


def test_osaca_comment_markers():
    text = "\tmovq %rax, %rbx\n# OSACA-BEGIN\n\taddq $1, %rax\n# OSACA-END\n\tret\n"
    assert texts(kernel(text, "att")) == ["addq $1, %rax"]
    text = "\tmov x0, x1\n// OSACA-BEGIN\n\tadd x0, x0, 1\n// OSACA-END\n"
    k = kernel(text, "aarch64")
    assert k.how == "osaca-markers" and texts(k) == ["add x0, x0, 1"]
    # extra text after the marker is not a marker (as in OSACA)
    assert kernel("# OSACA-BEGIN here\n\tnop\n# OSACA-END\n", "att").how == "file"


@pytest.mark.parametrize("syntax,start,end", [
    ("att", "\tmovl $111, %ebx\n\t.byte 100,103,144\n", "\tmovl $222, %ebx\n\t.byte 100,103,144\n"),
    ("intel", "\tmov ebx, 111\n\t.byte 100, 103, 144\n", "\tmov ebx, 222\n\t.byte 100,103,144\n"),
    ("aarch64", "\tmov x1, #111\n\t.byte 213,3,32,31\n", "\tmov x1, #222\n\t.byte 213,3,32,31\n"),
    # MASM: its byte directive, its hexadecimal
    ("intel", "; IACA_START\n\tmov ebx, 111\n\tDB 100, 103, 144\n",
     "\tmov ebx, 222\n\tdb 64H, 67H, 90H\n"),
])
def test_byte_markers(syntax, start, end):
    body = "\tadd x0, x0, 1\n" if syntax == "aarch64" else ("\tadd rax, 1\n" if syntax == "intel"
                                                             else "\taddq $1, %rax\n")
    text = ".L1:\n" + start + ".L2:\n" + body + end + "\tret\n"
    k = kernel(text, syntax)
    assert k.how == ("byte-markers" if syntax == "aarch64" else "iaca-markers")
    assert texts(k) == [body.strip().replace("\t", " ")]


MSVC_LOOPS = """\
f\tPROC\t\t\t\t\t\t; COMDAT
$LL4@f:
\tmov\tecx, 3
\tnpad\t2
$LL7@f:
\tadd\trax, QWORD PTR [rdx+rcx*8]
\tsub\trcx, 1
\tjne\tSHORT $LL7@f
\tsub\tr8, 1
\tjne\tSHORT $LL4@f
\tret\t0
f\tENDP
"""


def test_msvc_listing_loops_and_markers():
    k = kernel(MSVC_LOOPS, "intel")
    assert (k.how, k.name) == ("loop", "$LL7@f")
    assert texts(k) == ["add rax, QWORD PTR [rdx+rcx*8]", "sub rcx, 1", "jne SHORT $LL7@f"]
    marked = MSVC_LOOPS.replace("$LL7@f:\n", "$LL7@f:\n; OSACA-BEGIN\n").replace(
        "\tsub\trcx, 1\n", "\tsub\trcx, 1\n; OSACA-END\n")
    k = kernel(marked, "intel")
    assert k.how == "osaca-markers" and texts(k) == ["add rax, QWORD PTR [rdx+rcx*8]", "sub rcx, 1"]
    marked = MSVC_LOOPS.replace("$LL7@f:\n", "$LL7@f:\n; LLVM-MCA-BEGIN inner\n").replace(
        "\tjne\tSHORT $LL7@f\n", "\tjne\tSHORT $LL7@f\n; LLVM-MCA-END inner\n")
    assert kernel(marked, "intel").name == "inner"


def test_llvm_mca_regions_named_and_several():
    text = ("# LLVM-MCA-BEGIN first\n\taddq $1, %rax\n# LLVM-MCA-END first\n"
            "\tnop\n"
            "# LLVM-MCA-BEGIN second\n\tsubq $1, %rbx\n\tsubq $2, %rbx\n# LLVM-MCA-END second\n")
    k = kernel(text, "att")
    assert k.how == "llvm-mca-region" and k.name == "first" and texts(k) == ["addq $1, %rax"]
    assert [o["name"] for o in k.others] == ["first", "second"]
    k = kernel(text, "att", region="second")
    assert texts(k) == ["subq $1, %rbx", "subq $2, %rbx"]
    assert [r.name for r in all_regions(parse(text, "att"))] == ["first", "second"]
    with pytest.raises(InputError) as info:
        kernel(text, "att", region="third")
    assert "'first', 'second'" in info.value.message


def test_llvm_mca_anonymous_region_on_aarch64():
    text = "\tmov x0, 1\n# LLVM-MCA-BEGIN\n\tadd x0, x0, 1\n# LLVM-MCA-END\n"
    assert texts(kernel(text, "aarch64")) == ["add x0, x0, 1"]


def test_lines_option():
    k = kernel(LOOP_ATT, "att", lines="9-10")
    assert k.how == "lines" and texts(k) == ["addq $1, %rax", "cmpq $9, %rax"]
    for bad in ("x", "5-2", "0-3"):
        with pytest.raises(InputError):
            kernel(LOOP_ATT, "att", lines=bad)
