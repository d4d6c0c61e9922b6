"""fastline against Lark: for every line, fastline's statements are None or exactly Lark's.

Lines: the distinct instructions of the first 6,000 BHive blocks (AT&T as given, and in Intel
syntax as llvm-mc prints them), the examples, gcc's Intel output for the example C files,
every string of the parse tests, and random mutations of all of these (a line Lark rejects
must be declined). Plus the coverage the fast path is for, and whole files through parse().
"""

import ast
import csv
import glob
import os
import random
import shutil
import subprocess

import pytest
from lark.exceptions import UnexpectedInput
from lark.load_grammar import eval_escaping

from pmpredict.asm.detect import guess_syntax
from pmpredict.asm.fastline import parse_line, terminals
from pmpredict.asm.parse import _parse_text, _with_text, parse
from pmpredict.asm.grammar import get_parser

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, "..")
BHIVE = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "bhive", "blocks.csv"))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.s")))


def lark_statements(line: str, syntax: str):
    """Lark's statements of one line (Instruction.text filled as parse() does), or None."""
    try:
        return _with_text(get_parser(syntax).parse(line + "\n").children, [line])
    except (UnexpectedInput, ValueError, RecursionError):
        return None


def with_text(statements):
    return [(s, getattr(s, "text", None)) for s in statements]


def check(lines, syntax) -> float:
    """Asserts fastline agrees with Lark on every line; the fraction of lines it reads."""
    lines = list(dict.fromkeys(lines))
    read = 0
    for line in lines:
        fast = parse_line(line, syntax, 1)
        if fast is None:
            continue
        read += 1
        ref = lark_statements(line, syntax)
        assert ref is not None, f"fastline reads a line Lark rejects: {line!r}"
        assert with_text(fast) == with_text(ref), line
    return read / len(lines)


@pytest.fixture(scope="module")
def bhive_lines():
    if not os.path.exists(BHIVE):
        pytest.skip(f"BHive blocks not found at {BHIVE} (expected ../shared/data/bhive beside the repository)")
    lines = []
    with open(BHIVE, newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if i == 6000:
                break
            lines += row["asm_att"].split(" ; ")
    return list(dict.fromkeys(lines))


@pytest.fixture(scope="module")
def bhive_intel_lines(bhive_lines):
    if not shutil.which("llvm-mc-19"):
        pytest.skip("llvm-mc-19 not installed")
    run = subprocess.run(["llvm-mc-19", "-output-asm-variant=1"], input="\n".join(bhive_lines) + "\n",
                         capture_output=True, text=True)
    return run.stdout.splitlines()


def test_terminals_are_the_grammars_as_lark_reads_them():
    for syntax in ("att", "intel"):
        lark = {t.name: t.pattern.to_regexp() for t in get_parser(syntax).terminals}
        ours = terminals(syntax)
        for name in ("LABEL", "PREFIX", "DIRECTIVE", "DIRARGS", "MNEMONIC", "COMMENT", "LOCALREF",
                     "REG", "NUMBER", "SYMBOL") + (("SIZE", "OFFSET") if syntax == "intel" else ()):
            assert eval_escaping(ours[name]) == lark[name], (syntax, name)


def test_bhive_att_lines_agree_and_are_covered(bhive_lines):
    assert len(bhive_lines) > 10000
    assert check(bhive_lines, "att") >= 0.95


def test_bhive_lines_in_intel_syntax_agree_and_are_covered(bhive_intel_lines):
    assert len(bhive_intel_lines) > 10000
    assert check(bhive_intel_lines, "intel") >= 0.95


def test_example_files_agree():
    for path in EXAMPLES:
        with open(path) as fh:
            text = fh.read()
        syntax = guess_syntax(text)
        covered = check(text.splitlines(), syntax)
        assert covered == (0 if syntax == "aarch64" else 1), path   # every x86 line, no AArch64 line


@pytest.mark.skipif(not shutil.which("gcc"), reason="gcc not installed")
def test_gcc_intel_output_agrees():
    for source in sorted(glob.glob(os.path.join(ROOT, "examples", "*.c"))):
        run = subprocess.run(["gcc", "-S", "-O3", "-mavx2", "-mfma", "-masm=intel", "-o", "-", source],
                             capture_output=True, text=True)
        if run.returncode != 0:                 # the AArch64 example
            continue
        assert check(run.stdout.splitlines(), "intel") == 1, source


def _parse_test_strings():
    """Every string constant of the parse tests (their assembly inputs among them)."""
    strings = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_*parse*.py"))):
        with open(path) as fh:
            tree = ast.parse(fh.read())
        strings += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return strings


def test_parse_test_inputs_agree():
    lines = [line for s in _parse_test_strings() for line in s.split("\n")]
    assert len(lines) > 100
    for syntax in ("att", "intel"):
        check(lines, syntax)


def test_mutated_lines_are_declined_or_agree(bhive_lines, bhive_intel_lines):
    """Lines one to three edits away from real ones: many are wrong, and all of those must be
    left to Lark (it reports them)."""
    rng = random.Random(20240501)
    alphabet = list("abqrxz0189%$#.,:;[](){}*+-@_ \t\"/") + [
        "%rax", "rax", "qword ptr ", "(%rbx)", "[rbx]", "fs:", "offset ", "1f", "0x", "lock ", "st(1)", "{k1}"]
    tests = [line for s in _parse_test_strings() for line in s.split("\n")]
    pools = {"att": bhive_lines[:400] + tests, "intel": bhive_intel_lines[:400] + tests}
    for syntax, pool in pools.items():
        mutants = []
        for _ in range(2500):
            line = rng.choice(pool)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randint(0, len(line))
                cut = rng.randint(0, 1)
                line = line[:pos] + rng.choice(alphabet) * rng.randint(0, 1) + line[pos + cut:]
            mutants.append(line)
        assert 0.2 < check(mutants, syntax) < 0.9     # both kinds were tried


def test_parse_gives_lark_statements_for_whole_files(bhive_lines):
    """parse() (fast lines + the rest by Lark) against Lark over the whole text: same
    statements on the same lines, repeated lines, labels before instructions, comments."""
    blocks = [f"# LLVM-MCA-BEGIN b{k}\n\t" + "\n\t".join(bhive_lines[k * 5:k * 5 + 5]) +
              f"\n# LLVM-MCA-END b{k}\n" for k in range(200)]
    texts = [("att", "".join(blocks) + "".join(blocks[:20])),
             ("att", ".L2:\tmovq %rax, %rbx # c\nx: y:\n\tvaddps (%rax){1to16}, %zmm1, %zmm2\n"
                     "\trep stosq ; nop\n.L2:\tmovq %rax, %rbx # c\n\t.p2align 4,,10\n\n"),
             ("intel", ".L4: vmovdqu ymm3, YMMWORD PTR [rsi+rax] # x\n\tlea rax, -1[rcx]\n.L4:\n")]
    texts += [(guess_syntax(open(p).read()), open(p).read()) for p in EXAMPLES]
    for syntax, text in texts:
        lines = text.splitlines()
        whole = _with_text(_parse_text(text, syntax, "t.s", lines, None), lines)
        assert with_text(parse(text, syntax, "t.s").statements) == with_text(whole)
