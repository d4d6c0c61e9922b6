"""Operand allocation, checked structurally on the generated instruction text.

The window's text is parsed back (independently of the allocator's own bookkeeping):
every register an operand names is classified by the form's operand roles, and the
no-read-after-write property is verified on what the assembler will actually see.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter

import pytest

from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form, split_operands
from pmpredict.measure import default_forms
from pmpredict.measure.codegen import experiment_kernel, harness_source
from pmpredict.measure.instantiate import (BASE_REGISTER, COUNTER_REGISTER, immediate, instantiate,
                                           memory_access, sequence_of, windows)

X86 = semantics.get("x86")
GPR_FAMILIES = set(X86.register_pool("G", 64)) | {"rbp"}
VEC = re.compile(r"\b[xyz]mm(\d+)\b")
MEM_BYTES = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "xmmword": 16, "ymmword": 32,
             "zmmword": 64}


def family(name: str):
    """("G", rax) for any width of a general-purpose register (rsp excluded), else None."""
    fam = X86.register_family(name)
    return ("G", fam) if fam in GPR_FAMILIES else None


def registers_in(text: str) -> set:
    text = text.lower()
    out = {family(w) for w in re.findall(r"[a-z][a-z0-9]*", text)} - {None}
    out |= {("V", int(m.group(1))) for m in VEC.finditer(text)}
    return out


def roles(form: str, line: str):
    """[(kind, access, registers, text)] per operand of one generated instruction."""
    t = parse_form(form)
    head, _, rest = line.partition(" ")
    assert head.lower() == t.mnemonic
    texts = split_operands(rest) if rest else []
    assert len(texts) == len(t.operands), (form, line)
    out = []
    for op, text in zip(t.operands, texts):
        if op.kind == "reg":
            out.append(("reg", op.access, registers_in(text), text))
        elif op.kind == "mem":
            out.append(("mem", memory_access(t), registers_in(text), text))
        else:
            out.append((op.kind, "R", registers_in(text), text))
    return out


def check_window(window):
    written, read_only, address = Counter(), set(), set()
    stores, loads = set(), set()
    rows = [roles(i.form, i.text) for i in window.instructions]
    for row in rows:
        for kind, access, regs, text in row:
            if kind == "reg" and access in ("W", "RW"):
                written.update(regs)
            elif kind == "reg":
                read_only |= regs
            elif kind == "mem":
                address |= regs
                disp = re.search(r"\+\s*(\d+)\s*\]", text)
                if disp and access:
                    d = int(disp.group(1))
                    (stores if access == "W" else loads).add(d)
                    size = MEM_BYTES.get(text.split()[0].lower())
                    if size:       # naturally aligned, inside its cache line
                        assert d % min(size, 64) == 0 and d % 64 + size <= 64, text
    base, counter = family(BASE_REGISTER), family(COUNTER_REGISTER)
    # no read-only operand and no address reads a register the window writes
    assert not (read_only & set(written)), (read_only & set(written), window.lines)
    assert not (address & set(written))
    # the reserved registers are never written; the counter never appears at all
    assert base not in written and counter not in written
    assert all(counter not in regs for row in rows for _, _, regs, _ in row)
    # no load reads a cache line the window stores to, and they never 4K-alias
    assert not loads & stores
    assert not {d // 64 for d in loads} & {d // 64 for d in stores}
    assert not {d % 4096 // 64 for d in loads} & {d % 4096 // 64 for d in stores}
    # operands only read by one instruction are distinct (no `vpxor a, b, b` zero idioms)
    for row in rows:
        reads = [r for kind, access, regs, _ in row if kind == "reg" and access == "R" for r in regs]
        assert len(reads) == len(set(reads)), row
    # writes are spread evenly (least recently used): the self-dependency of an RW operand
    # is at the largest possible distance
    for cls in ("G", "V"):
        counts = [n for (c, _), n in written.items() if c == cls]
        if counts:
            assert max(counts) - min(counts) <= 1, written


def random_experiments(forms, n, length, seed):
    rng = random.Random(seed)
    return [Counter(rng.choice(forms) for _ in range(length)) for _ in range(n)]


def test_sequence_interleaves_multiplicities():
    assert sequence_of([("A", 2), ("B", 1)]) == ["A", "B", "A"]
    assert sequence_of([("A", 1), ("B", 3)]) == ["A", "B", "B", "B"]


def test_immediates():
    assert immediate(8) == 43
    assert immediate(16) == 2 ** 8 + 42
    assert immediate(32) == 2 ** 24 + 42
    w = instantiate([("ADD_((REG:RW:G:64)),_((IMM:32))", 1), ("SHL_((REG:RW:G:64)),_((IMM:8))", 1)])
    assert {int(line.rsplit(",", 1)[1]) for line in w.lines} == {2 ** 24 + 42, 43}


def test_window_lengths_and_copies():
    w = instantiate([("IMUL_((REG:RW:G:64)),_((REG:R:G:64))", 1)], 50)
    assert len(w.instructions) == 50 and w.copies == 50
    w = instantiate(Counter(["A_((REG:W:G:64))"] * 2 + ["B_((REG:R:G:64))"] * 3).items(), 50)
    assert w.copies == 10 and len(w.instructions) == 50
    assert [x.copies for x in windows([("NOP", 1)], (50, 32, 80))] == [50, 32, 80]


def test_memory_access_kinds():
    assert memory_access(parse_form("MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))")) == "W"
    assert memory_access(parse_form("ADD_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))")) == "W"
    assert memory_access(parse_form("CMP_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((IMM:8))")) == "R"
    assert memory_access(parse_form("ADD_((REG:RW:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]")) == "R"
    assert memory_access(parse_form("LEA_((REG:W:G:64)),__[((MEM:64))_+_((MIMM:16))]")) == ""


def test_no_read_after_write_in_host_windows():
    forms = default_forms()
    for counts in random_experiments(forms, 300, 5, seed=1):
        for w in windows(counts.items()):
            check_window(w)
    for f in forms:                              # singletons: the most repetitive windows
        check_window(instantiate([(f, 1)], 50))


def test_no_read_after_write_on_shared_skl_forms(shared):
    forms = json.load(open(shared("SKL", "singletons.json")))["arch"]["insns"]
    for counts in random_experiments(forms, 300, 5, seed=2):
        for w in windows(counts.items()):
            check_window(w)
    for f in forms:
        check_window(instantiate([(f, 1)], 50))


def test_loads_spread_over_banks():
    """Successive loads sit at different offsets of their lines (no L1 bank collisions)."""
    w = instantiate([("MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]", 1)], 16)
    disps = [int(re.search(r"\+ (\d+)\]", line).group(1)) for line in w.lines]
    assert len({d // 64 for d in disps}) == 16              # 16 distinct lines
    assert len({d % 64 for d in disps[:8]}) == 8            # 8 distinct qword offsets


def test_rw_chains_are_long():
    """50 `add r, r`: 12 write registers -> each register's chain has at most ceil(50/12) links."""
    w = instantiate([("ADD_((REG:RW:G:64)),_((REG:R:G:64))", 1)], 50)
    dests = Counter(line.split()[1].rstrip(",") for line in w.lines)
    assert max(dests.values()) == math.ceil(50 / len(dests))
    assert len(dests) == 12          # rax..r15 and rbp less rdi (base), rsi (counter), 1 read


def test_literal_registers_are_kept_out_of_the_pools():
    w = instantiate([("SHL_((REG:RW:G:64)),_cl", 1)], 20)
    assert all(not line.startswith(("SHL rcx", "SHL ecx")) for line in w.lines)
    check_window(w)


def test_generated_c_switches_syntax_back():
    k = experiment_kernel("pm_test", instantiate([("IMUL_((REG:RW:G:64)),_((REG:R:G:64))", 1)], 4))
    lines = k.asm.split("\n")
    assert lines[lines.index("pm_test:") + 1] == ".intel_syntax noprefix"
    assert lines[-2] == ".att_syntax"
    src = harness_source([k])
    assert "add %rbx, %rax" in src and "clock_gettime(CLOCK_MONOTONIC" in src
    assert "sched_setaffinity" in src


def test_implicit_and_literal_registers_stay_out_of_the_pools():
    """cqo reads rax and writes rdx, mul r64 writes rdx:rax, `shl r, cl` reads rcx: no operand
    of the window may be allocated to them (they would chain through the implicit access)."""
    cases = {"CQO": {"rax", "rdx"}, "MUL_((REG:R:G:64))": {"rax", "rdx"},
             "DIV_((REG:R:G:64))": {"rax", "rdx"}, "SHL_((REG:RW:G:64)),_cl": {"rcx"}}
    others = ["MOVZX_((REG:W:G:32)),_((REG:R:G:8))", "ADD_((REG:RW:G:64)),_((REG:R:G:64))"]
    for form, pinned in cases.items():
        w = instantiate([(form, 1)] + [(f, 2) for f in others])
        allocated = set()
        for inst, line in zip(w.instructions, w.lines):
            if inst.form != form:
                allocated |= {fam for _, fam in registers_in(line)}
        assert allocated and not allocated & pinned, (form, allocated & pinned)
        assert {("G", X86.register_pool("G", 64).index(r)) for r in pinned} <= w.fixed


PUSH, POP = "PUSH_((REG:R:G:64))", "POP_((REG:W:G:64))"


def test_pushes_and_pops_are_measured_with_rsp_put_back_every_iteration():
    from pmpredict.measure.codegen import experiment_kernel
    from pmpredict.measure.instantiate import stack_delta, unmeasurable
    assert (stack_delta(PUSH), stack_delta(POP), stack_delta("PUSH_((REG:R:G:16))")) == (-8, 8, -2)
    assert stack_delta("ADD_((REG:RW:G:64)),_((REG:R:G:64))") == 0
    assert unmeasurable(PUSH) is None and unmeasurable(POP) is None
    assert "push or a pop" in unmeasurable("LEAVE")                  # rsp = rbp: no fixed step
    window = instantiate([(PUSH, 2), (POP, 1)], 30)
    assert window.stack_bytes == -8 * window.copies
    loop = experiment_kernel("k", window).asm.split("1:\n", 1)[1]
    assert f"lea rsp, [rsp + {8 * window.copies}]\ndec rsi\njnz 1b" in loop
    balanced = instantiate([(PUSH, 1), (POP, 1)], 30)
    assert balanced.stack_bytes == 0 and "lea rsp" not in experiment_kernel("k", balanced).asm


def test_a_pop_before_its_push_never_reaches_the_functions_saved_registers():
    """pop; push: the pop reads above the loop's rsp and the push writes there. Without
    headroom that slot holds the kernel's saved registers (it crashed one run in three, as
    the register the push writes back happened to differ). The loop runs a page below."""
    from pmpredict.measure.codegen import experiment_kernel, stack_headroom
    window = instantiate([(POP, 1), (PUSH, 1)], 30)
    assert window.instructions[0].form == POP
    headroom = stack_headroom(window)
    assert headroom >= 8 * len(window.instructions) and headroom % 4096 == 0
    asm = experiment_kernel("k", window).asm
    before, loop = asm.split("1:\n", 1)
    assert f"sub rsp, {headroom}" in before and f"jnz 1b\nadd rsp, {headroom}" in loop
    plain = instantiate([("ADD_((REG:RW:G:64)),_((REG:R:G:64))", 1)], 30)
    assert stack_headroom(plain) == 0 and "sub rsp" not in experiment_kernel("k", plain).asm


def test_an_experiment_whose_forms_cannot_share_a_window_fails_alone():
    """vzeroall pins every vector register: beside a form that needs one, the experiment is
    reported as failed (and the others measured), not the whole set."""
    from pmpredict.measure.experiment_runs import _window_error
    vzeroall, movmsk = "VZEROALL", "PMOVMSKB_((REG:W:G:32)),_((REG:R:V:128))"
    assert "no free V register" in _window_error(((vzeroall, 1), (movmsk, 1)), (50,))
    assert _window_error(((movmsk, 1),), (50,)) is None


# --- integer divisions --------------------------------------------------------------------

DIVISION_OPERANDS = ["((REG:R:G:64))", "((REG:R:G:32))", "((REG:R:G:16))", "((REG:R:G:8))"] + [
    f"{size}_ptr_[((MEM:64))_+_((MIMM:16))]" for size in ("qword", "dword", "word", "byte")]
DIVISIONS = [f"{m}_{op}" for m in ("DIV", "IDIV") for op in DIVISION_OPERANDS]


def divide(width: int, signed: bool, high: int, low: int, divisor: int) -> tuple[int, int] | None:
    """(quotient, remainder) of an x86 div / idiv of `width` bits, None where the CPU raises
    #DE. The dividend is high:low of `width` bits each (a byte division: ax, high = ah)."""
    mask = (1 << width) - 1
    dividend, divisor = (high & mask) << width | (low & mask), divisor & mask
    if divisor == 0:
        return None
    if signed:
        def signed_of(v, bits):
            return v - (1 << bits) if v >> (bits - 1) else v
        n, d = signed_of(dividend, 2 * width), signed_of(divisor, width)
        q = abs(n) // abs(d) * (1 if (n < 0) == (d < 0) else -1)
        if not -(1 << (width - 1)) <= q < 1 << (width - 1):
            return None
        return q & mask, (n - q * d) & mask
    q = dividend // divisor
    return (q, dividend % divisor) if q <= mask else None


def test_the_division_values_never_fault_and_give_a_typical_quotient():
    """DIVIDEND / DIVISOR at every width, as the low bits of each (a byte division divides ax):
    no #DE, signed or not, the same quotient both ways (every part is positive), a quotient of
    a few bits (not the 60-odd of a hash divided by a small count) and a remainder that stays
    below DIVISOR (small enough to index a table)."""
    from pmpredict.measure.instantiate import DIVIDEND, DIVISOR
    bits = {}
    for width in (8, 16, 32, 64):
        low = DIVIDEND & 0xFFFF if width == 8 else DIVIDEND
        high = (DIVIDEND >> 8) & 0xFF if width == 8 else 0
        if width == 8:
            low &= 0xFF
        unsigned, signed = (divide(width, s, high, low, DIVISOR) for s in (False, True))
        assert unsigned is not None and unsigned == signed, width
        bits[width] = unsigned[0].bit_length()
        assert unsigned[1] < DIVISOR
    assert bits == {64: 27, 32: 10, 16: 5, 8: 7}


def test_every_division_form_divides_the_same_values_in_every_instance():
    """The divisor operand is the divisor register (or a divisor line the kernel fills), right
    before every instance the dividend is put back (`mov rax, <dividend>`, `xor edx, edx`
    except for a byte divisor), nothing else names those registers, rax or rdx, and the
    divisor lines are read by divisions alone."""
    others = ["ADD_((REG:RW:G:64)),_((REG:R:G:64))",
              "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]",
              "MOV_qword_ptr_[((MEM:64))_+_((MIMM:16))],_((REG:R:G:64))", "SHL_((REG:RW:G:64)),_cl"]
    experiments = [[(f, 1)] for f in DIVISIONS] + [[(f, 1), (o, 2)] for f in DIVISIONS
                                                   for o in others]
    experiments += [list(c.items()) for c in random_experiments(DIVISIONS + default_forms(),
                                                                 200, 5, seed=3)]
    for counts in experiments:
        for w in windows(counts):
            check_window(w)
            check_divisions(w)


def check_divisions(window):
    from pmpredict.measure.instantiate import DIVIDEND, DIVISOR, PAGE, PAGES
    divisions = [i for i in window.instructions if X86.division(i.form)]
    assert all(not i.prefix for i in window.instructions if not X86.division(i.form))
    assert window.body == [line for i in window.instructions for line in (*i.prefix, i.text)]
    if not divisions:
        assert not window.values and not window.words
        return
    values = dict(window.values)
    dividend = next(r for r, v in values.items() if v == DIVIDEND)
    divisor = next(r for r, v in values.items() if v == DIVISOR)
    words = dict(window.words)
    division_lines = set()
    for inst in divisions:
        facts = X86.division(inst.form)
        expected = (f"mov rax, {dividend}",) + (("xor edx, edx",) if facts.high else ())
        assert inst.prefix == expected, inst
        operand = inst.text.split(" ", 1)[1]
        if "ptr" in operand:
            disp = int(re.search(r"\+ (\d+)\]", operand).group(1))
            assert words[disp - disp % 8] == DIVISOR
            assert (PAGES - 1) * PAGE <= disp < (PAGES - 1) * PAGE + PAGE // 2
            division_lines.add(disp // 64)
        else:
            assert family(operand) == family(divisor)
    high = {X86.division(i.form).high for i in divisions} - {None}      # none: byte divisions
    pinned = {family(r) for r in (dividend, divisor, "rax", *high)}
    for inst in window.instructions:
        if not X86.division(inst.form):
            assert not registers_in(inst.text) & pinned, inst.text
            assert not {d // 64 for d in inst.mem_reads + inst.mem_writes if d is not None} \
                & division_lines


def test_division_kernels_set_the_values_before_the_loop():
    from pmpredict.measure.instantiate import DIVIDEND, DIVISOR
    w = instantiate([("IDIV_word_ptr_[((MEM:64))_+_((MIMM:16))]", 1),
                     ("DIV_((REG:R:G:32))", 1)], 4)
    before, loop = experiment_kernel("k", w).asm.split("\n1:\n", 1)
    values = dict(w.values)
    for reg, value in values.items():
        assert f"mov {reg}, {value:#x}" in before
    for disp, word in w.words:
        assert f"mov qword ptr [rdi + {disp}], rax" in before and f"mov rax, {word:#x}" in before
    assert loop.split("\n")[:3] == [*w.instructions[0].prefix, w.instructions[0].text]
    assert sorted(values.values()) == sorted([DIVIDEND, DIVISOR])
