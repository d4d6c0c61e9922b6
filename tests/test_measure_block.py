"""`pmpredict measure FILE.s` on real blocks, for real: floating point on loaded data, the
stack, aliasing, pointer chasing, implicit registers, refused and unsupported instructions,
the block cache.

Every check is a host-invariant fact or a ratio (memory form vs register form, same
address vs distinct addresses), so it holds on Intel and AMD alike. The minimum of a few
runs is compared (a shared machine only ever adds time).
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys

import pytest

from pmpredict.measure import measure_block
from pmpredict.measure.block import measure_blocks, prepare_block
from pmpredict.measure.cpu import cpu_flags, cpuinfo
from pmpredict.measure.codegen import block_kernel, experiment_kernel
from pmpredict.measure.instantiate import instantiate
from pmpredict.measure.runner import check_assembles, run_kernels

from hostcores import known_core
from settling import fastest_block, settled, settled_reproduced

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")


def fastest(text: str, syntax: str = "att", tries: int = 3, expected: float | None = None) -> float:
    """The fastest of up to `tries` measurements the harness reported reproduced (stable), or of
    all where none was: a difference of two unroll variants misreads both ways when one
    variant's runs were disturbed (four independent adds read 0.925 cycles once on a Zen 3
    cloud guest, 1.00 in 20 measurements after), and the minimum keeps such a misreading."""
    stable, unstable = [], []
    for _ in range(tries):
        result = measure_block(text, syntax)
        assert result.cycles is not None, result
        (stable if result.stable else unstable).append(result.cycles)
        best = min(stable or unstable)
        if expected is not None and best == pytest.approx(expected, rel=0.03):
            break
    return best


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pmpredict", "measure", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


# A microcode assist costs tens to hundreds of cycles an instruction; what a load adds inside
# the pipeline is a fraction of one (12% for two ymm vmulpd from memory on an Intel Xeon with
# AVX-512 FP16, 2026-12-02), so twice the register form's time tells the two apart on any core.
ASSIST_FACTOR = 2.0


def test_fp_from_memory_takes_no_assists(tmp_path):
    """Loaded data is a normal number at every width: no microcode assists (the old fill was
    a subnormal double and took two vmulpd from 1 to 364 cycles on Cascade Lake)."""
    def measured(text):
        path = tmp_path / "b.s"
        path.write_text(text)
        runs = []
        for _ in range(3):
            proc = cli(path, "--json", "--no-cache")
            assert proc.returncode == 0, proc.stderr
            runs.append(json.loads(proc.stdout)["cycles"])
        return min(runs)
    memory = measured("vmulpd (%rdx), %ymm2, %ymm1\nvmulpd (%rdx), %ymm2, %ymm3\n")
    register = measured("vmulpd %ymm4, %ymm2, %ymm1\nvmulpd %ymm4, %ymm2, %ymm3\n")
    assert register * 0.9 < memory < register * ASSIST_FACTOR
    single = measured("vmulsd 8(%rsi), %xmm2, %xmm1\nvmulss 4(%rsi), %xmm2, %xmm3\n")
    assert register * 0.9 < single < register * ASSIST_FACTOR


def test_a_load_partly_over_a_store_waits_longer_than_one_inside_it():
    """The premise of store_forward_latency_partial on any x86 core: a load wider than the
    store under it is not forwarded (Intel Xeon, AVX-512 FP16, 2026-12-02: 19-23 cycles a link
    against 3.0). Both chains measured in one run: a busy sibling slows both alike."""
    link = "{store}, 64(%rbx)\nmovq 64(%rbx), %rax\nimulq %rbx, %rax\n"
    inside, partial = measure_blocks([prepare_block(link.format(store=s), "att")
                                      for s in ("movq %rax", "movl %eax")])
    assert inside.cycles and partial.cycles
    assert partial.cycles > 1.5 * inside.cycles and partial.cycles > inside.cycles + 4


@pytest.mark.skipif("bmi2" not in cpu_flags(), reason="the CPU has no BMI2")
def test_an_experiment_and_a_block_of_one_instruction_agree():
    """Two paths to one number: an experiment's window starts its registers at values like the
    data a block holds (an Intel Xeon with AVX-512 FP16 ran rorx and shlx from a register
    holding 37 at half the rate it runs them in blocks)."""
    from pmpredict.measure import measure_experiment_set
    from pmpredict.model.experiments import Experiment, ExperimentSet
    cases = {"RORX_((REG:W:G:64)),_((REG:R:G:64)),_((IMM:8))": "rorxq $43, %rax, %rbx",
             "SHLX_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64))": "shlxq %rax, %rbx, %rcx"}
    measured = measure_experiment_set(ExperimentSet(tuple(cases), tuple(
        Experiment.of({form: 1}) for form in cases), "x86", "test"), cache_dir=None)
    blocks = measure_blocks([prepare_block(text + "\n", "att") for text in cases.values()])
    for (form, text), experiment, block in zip(cases.items(), measured.experiments, blocks):
        # each path's fastest reading, measured again while a busy host parts the two
        fast = {"experiment": experiment.cycles, "block": block.cycles}
        again = {"experiment": lambda: measure_experiment_set(ExperimentSet(
                     (form,), (Experiment.of({form: 1}),), "x86", "test"),
                     cache_dir=None).experiments[0].cycles,
                 "block": lambda: fastest(text + "\n", tries=1)}
        for _ in range(4):
            if fast["experiment"] == pytest.approx(fast["block"], rel=0.10):
                break
            slower = max(fast, key=fast.get)
            fast[slower] = min(fast[slower], again[slower]())
        assert fast["experiment"] == pytest.approx(fast["block"], rel=0.10), (form, fast)


def test_a_bit_offset_into_memory_starts_small_and_every_other_register_large():
    from pmpredict.measure.codegen import BIT_OFFSET_INIT, GPR_INIT, _bit_offsets
    assert _bit_offsets(["BTS qword ptr [rdi + 8], ebx", "bt qword ptr [rdi], r9",
                         "BT rax, rcx", "RORX rbx, rax, 43"]) == {"rbx": BIT_OFFSET_INIT,
                                                                 "r9": BIT_OFFSET_INIT}
    assert GPR_INIT > 65535 and GPR_INIT % 64 == 37 and BIT_OFFSET_INIT < 64


def test_triad_takes_no_assists():
    """The issue's example: 186.7 cycles per iteration with subnormal data; a microcode
    assist costs about 100 cycles per floating-point operation, a healthy triad a few."""
    result = measure_block(open("examples/triad_avx.s").read(), "att")
    assert result.cycles is not None and result.cycles < 10


def test_stack_operands_never_touch_the_harness_stack(imul_cycles):
    """Stores to 0(%rsp)..0x60(%rsp) and push/pop go to the block's own stack: the harness
    survives them and the next kernel in the same process measures correctly."""
    text = "".join(f"mov %rax, {8 * i:#x}(%rsp)\n" for i in range(13)) + \
        "push %rcx\npop %rdx\nmov 0x58(%rsp), %rbx\n"
    block = prepare_block(text, "att")
    window = instantiate([("IMUL_((REG:RW:G:64)),_((REG:R:G:64))", 1)], 50)
    stack, imul, again = run_kernels([block_kernel("pm_stack", list(block.lines), "att",
                                                   block.counter, block.vector_width,
                                                   block.layout),
                                      experiment_kernel("pm_after", window),
                                      experiment_kernel("pm_again", window)])
    assert stack.error is None and stack.cycles > 0
    assert imul.error is None and again.error is None
    # the kernels after the stack kernel measure correctly: never faster than imul's
    # throughput, the fastest of them at it (measured again while a busy host keeps it above)
    first = min(imul.cycles, again.cycles) / 50
    assert first >= imul_cycles * 0.85
    window_alone = lambda: run_kernels([experiment_kernel("pm_alone", window)])[0].cycles / 50
    assert settled(window_alone, imul_cycles, 0.15, first=first) == \
        pytest.approx(imul_cycles, rel=0.15)


def test_distinct_registers_do_not_alias():
    """A byte store and a qword load through different registers are independent (the old
    harness gave every register one value, so they aliased); through the same register the
    load waits for the store's data, which the loaded rax then feeds: a chain through memory
    of at least a load's latency on every core, whether the core forwards the byte or not."""
    distinct = fastest("mov %al, (%rbx)\nmov (%rcx), %rax\n")
    same = fastest("mov %al, (%rbx)\nmov (%rbx), %rax\n")
    assert distinct < 2
    assert same > 3 and same > 2 * distinct


def test_pointer_chasing_works():
    """A loaded pointer is dereferenced: one chase link costs the load-to-use latency (4 or
    5 cycles on recent x86 cores), a chain of two links twice that."""
    one = fastest("mov (%rax), %rax\n")
    assert 3.5 < one < 6.5
    two = fastest("mov 8(%rbx), %rcx\nvaddpd (%rcx), %ymm0, %ymm0\nmov 16(%rcx), %rbx\n")
    assert two == pytest.approx(2 * one, rel=0.15)


def test_a_chase_through_a_conditional_move_runs():
    """A BHive block (r13 = *(r13 + 24) or, by a cmov, *(old r13 + 16)) crashed the harness
    with SIGSEGV: the cmov's word was laid out as an addend (0). Its chase through r13 is one
    load and a cmov a link, so it runs no faster than one plain chase link."""
    one = fastest("mov (%rax), %rax\n")
    link = fastest("mov %r13, %r8\ntest %eax, %eax\nmov 0x18(%r13), %rdx\ncmovge %r13, %rbx\n"
                   "mov %rdx, %r13\ncmovge 0x10(%r8), %r13\ntest %r13, %r13\n")
    assert link >= one * 0.95


def test_a_chase_that_loads_back_a_stored_register_runs():
    """The walk does not follow memory: the chase through rdx loads back the r14 it stored
    and follows it into the spare region (SIGSEGV when that region held 1.0f)."""
    result = measure_block("mov %rax, %rdx\nlea 64(%rsp), %rdi\nmov (%rdx), %rax\n"
                           "mov %r14, (%rdx)\nmov $2, %edx\nmov %rax, (%rdi)\n", "att")
    assert result.cycles is not None, result


def test_a_stream_runs_as_fast_as_the_same_loads_in_place():
    """Four loads and `add $64, %rbx`: the harness moves rbx back once per loop iteration, so
    the stream reuses its lines through the same linear addresses (through new ones, every
    page of the window showing one physical page, AMD's L1 way predictor missed each time:
    2.42 cycles on Zen 4 against 1.33 in place). The same loads at a fixed place (`addb` keeps
    rbx within 256 bytes) set the reference."""
    loads = "movq (%rbx), %rax\nmovq 8(%rbx), %rcx\nmovq 16(%rbx), %rdx\nmovq 24(%rbx), %rsi\n"
    # either runs in one of two steady states now and then (Zen 5: 1.01 or 1.23 cycles, a
    # process at a time, in place as well): the stream is timed until it meets the reference
    in_place = fastest(loads + "addb $64, %bl\n")
    stream = fastest(loads + "addq $64, %rbx\n", tries=6, expected=in_place)
    assert stream <= in_place * 1.15


def test_block_with_cqto_and_every_high_register_runs():
    """rdx (which cqto writes) used to be the loop counter here: the loop never ended."""
    text = ("add %r8, %r9\nadd %r10, %r11\nadd %r12, %r13\nadd %r14, %r15\nmov %rbx, %rax\n"
            "cqto\nidivq %rbx\n")
    result = measure_block(text, "att")
    assert result.cycles is not None and result.loop_counter not in ("rdx", "rax", "rbx")


def test_the_loop_overhead_cancels():
    """One add r64, r64 link (latency 1 on every x86-64 core) measures one cycle and two
    links two, once the loop's own dec/jnz is cancelled by the difference of two unroll
    factors."""
    assert fastest("add %rax, %rbx\n", tries=5, expected=1.0) == pytest.approx(1.0, rel=0.03)
    assert fastest("add %rax, %rbx\nadd %rbx, %rax\n", tries=5, expected=2.0) == \
        pytest.approx(2.0, rel=0.03)


def test_four_independent_adds_run_at_their_latency():
    """Four 1-cycle chains on the four or more integer ALUs of every recent x86-64 core: never
    below one cycle; exactly one where the core picks a free ALU at issue (Zen, by
    tests/hostcores.py); Intel binds a uop to a port at rename and loses up to ~15% to
    conflicts (1.15 measured on Raptor Cove)."""
    text = "add %rax, %rbx\nadd %rcx, %rdx\nadd %rsi, %rdi\nadd %r8, %r9\n"
    core = known_core(cpuinfo())
    cycles = fastest(text, tries=5, expected=1.0)
    if core and core.four_add_chains_at_latency:
        assert cycles == pytest.approx(1.0, rel=0.03), core.name
    else:
        assert 0.97 <= cycles <= 1.25


def test_unsupported_instruction_is_reported_as_such(tmp_path):
    candidates = [("avx512_fp16", "vaddph %zmm0, %zmm1, %zmm2\n"),
                  ("sse4a", "extrq $4, $8, %xmm0\n"),
                  ("amx_tile", "tilerelease\n")]
    flags = cpu_flags()
    missing = [text for flag, text in candidates
               if flag not in flags and check_assembles([text.strip()], "att") == [None]]
    if not missing:
        pytest.skip("this CPU has every candidate extension")
    path = tmp_path / "b.s"
    path.write_text(missing[0])
    proc = cli(path, "--no-cache")
    assert proc.returncode == 1
    assert "not supported by this CPU (or illegal here)" in proc.stdout


def test_traps_are_refused_before_running(tmp_path):
    path = tmp_path / "b.s"
    path.write_text("add %rax, %rbx\nud2\n")
    proc = cli(path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"pmpredict: error: {path}:2:1: 'ud2' is a deliberate trap: "
                                   "it cannot be measured in a loop")


def test_block_cache(tmp_path):
    """--cache keeps a block's result (keyed by its text, the CPU, the harness version);
    --no-cache measures afresh; another block is not a hit."""
    path = tmp_path / "b.s"
    path.write_text("imul %rbx, %rax\n")
    cache = tmp_path / "cache"
    first = json.loads(cli(path, "--json", "--cache", cache).stdout)
    second = json.loads(cli(path, "--json", "--cache", cache).stdout)
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["cycles"] == first["cycles"] and second["spread"] == first["spread"]
    fresh = json.loads(cli(path, "--json", "--cache", cache, "--no-cache").stdout)
    assert fresh["cached"] is False
    path.write_text("imul %rbx, %rax\nimul %rbx, %rax\n")
    assert json.loads(cli(path, "--json", "--cache", cache).stdout)["cached"] is False


def test_json_reports_spread_and_stability(tmp_path):
    path = tmp_path / "b.s"
    path.write_text("imul %rbx, %rax\n")
    data = json.loads(cli(path, "--json", "--no-cache").stdout)
    assert isinstance(data["spread"], float) and data["spread"] >= 0
    assert isinstance(data["stable"], bool)
    assert data["method"] in ("difference", "per-copy")
    assert [v["unroll"] for v in data["variants"]] == [50, 100]
    reading = lambda d: (d["cycles"], d["stable"])
    value = settled_reproduced(lambda: reading(json.loads(cli(path, "--json", "--no-cache")
                                                          .stdout)), 3.0, 0.15, first=reading(data))
    assert value is None or value == pytest.approx(3.0, rel=0.15)


def test_text_output_flags_unstable_results(tmp_path, monkeypatch, capsys):
    """The text view says what the JSON says: a large spread and an unstable result."""
    from pmpredict.cli import main
    from pmpredict.measure import block
    path = tmp_path / "b.s"
    path.write_text("imul %rbx, %rax\n")
    real = block.run_kernels

    def disturbed(kernels, opts, on_result=None, **passes):
        from dataclasses import replace
        return [replace(t, spread=0.2, confirmed=False)
                for t in real(kernels, opts, on_result, **passes)]
    monkeypatch.setattr(block, "run_kernels", disturbed)
    assert main(["measure", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "spread 20%" in out and "unstable" in out


@pytest.mark.parametrize("text", [
    # a loaded offset added to a pointer, then dereferenced
    "movq %r12, %r15\naddq 29384(%r14), %r15\ncmpl $7, 836(%rbx)\nmovl 96(%r15), %eax\n",
    # lea as arithmetic: rsi is an index here, not a base
    "leaq (%rsi,%rsi,2), %r9\nmovq %rbp, %r11\nshlq $4, %r9\nmovq (%r8,%r9), %r10\n"
    "subq %r10, %r11\ncmpq $262143, %r11\n",
    # hash-table indexing: ((a & mask) << 4) + base
    "movq %rdx, %rcx\nandq %r14, %rcx\nmovq %rcx, %rbx\nshlq $4, %rbx\naddq %r15, %rbx\n"
    "movq 8(%rbx), %rdi\nmovq %rbx, %r13\ntestq %rdi, %rdi\n",
    # a pointer loaded from an absolute table, then dereferenced
    "movq 9336640(,%rbp,8), %rbp\nmovq %rbp, 16(%rdi)\nmovq %rdi, 16(%rbp)\n",
])
def test_bhive_blocks_that_used_to_crash(text):
    """Blocks of real programs (BHive) whose addresses come from loads and arithmetic."""
    result = measure_block(text, "att")
    assert result.cycles is not None, result.error


# --- divisions ------------------------------------------------------------------------------

DIVISION_BLOCKS = [
    "movq %rbx, %rax\ncqto\nidivq %rbx\n",                 # the dividend put back each time
    "xorl %edx, %edx\ndivq %rbx\n",                         # each divides the last quotient
    "cqto\nidivq %rbx\n",
    "divq %rbx\n",
    "mov %rcx, %rax\nxor %edx, %edx\ndivq %rbx\n",
    "movl %ecx, %eax\ncltd\nidivl %ebx\n",
    "xorl %edx, %edx\ndivl %ebx\n",
    "movw %cx, %ax\ncwtd\nidivw %bx\n",
    "divw %bx\n",
    "movzwl %cx, %eax\ndivb %bl\n",
    "idivb %bl\n",
    "mov (%rsi), %rax\nxor %edx, %edx\ndivq 8(%rsi)\n",      # divisor and dividend in memory
    "mov %rcx, %rax\nxor %edx, %edx\ndivw (%rsi)\n",
    "mov %rcx, %rax\ndivb 3(%rsi)\n",
    "divb (%rsi)\nadd $8, %rsi\n",                           # a moving divisor
    # a hash table: the remainder indexes the table
    "xor %edx, %edx\nmov %r8, %rax\ndivq (%rsi)\nmov (%rdi,%rdx,8), %r9\n",
]


def test_divisions_run_at_every_width():
    """div and idiv of every width, from registers and memory, re-establishing their dividend
    or dividing the last quotient, run without #DE (SIGFPE) and take more than a cycle (no
    x86 core divides one per cycle)."""
    blocks = [prepare_block(text, "att") for text in DIVISION_BLOCKS]
    for text, timing in zip(DIVISION_BLOCKS, measure_blocks(blocks)):
        assert timing.error is None and timing.cycles > 1.5, (text, timing.error)


def test_the_two_64_bit_division_idioms_give_numbers():
    """`cqto; idivq` after a move divides rbx by itself, independent divisions; `xorl %edx,
    %edx; divq %rbx` divides the last quotient (by 1: 0x7dee66661a2b every iteration), a
    chain: its latency, never below the first's reciprocal throughput. Both say so in
    their notes."""
    independent = measure_block("movq %rbx, %rax\ncqto\nidivq %rbx\n", "att")
    chain = measure_block("xorl %edx, %edx\ndivq %rbx\n", "att")
    # the independent divisions' fastest reading (a busy host slows one reading of them): the
    # chain is no faster than they are, within 5%
    fastest_independent = settled(
        lambda: measure_block("movq %rbx, %rax\ncqto\nidivq %rbx\n", "att").cycles,
        chain.cycles, 0.05, first=independent.cycles)
    assert independent.cycles > 1.5 and fastest_independent <= chain.cycles * 1.05
    assert "1-bit quotient" in independent.to_json()["notes"][0]
    assert "x / 1 keeps x" in chain.to_json()["notes"][0]


# --- page offsets ---------------------------------------------------------------------------

@pytest.mark.parametrize("store, load", [
    ("mov %rax, (%rsp)", "mov (%rbx), %rdx"),        # both started at page offset 0
    ("mov %rax, (%rbx)", "mov (%rsp), %rdx"),
    ("mov %rax, (%rbx)", "mov (%rcx), %rdx"),
])
def test_a_store_and_a_load_through_different_registers_do_not_4k_alias(store, load):
    """A store through one register and a load through another touch different memory: the
    two together take no longer than the two alone one after the other. At the same page
    offset the load waits for the store (4K aliasing): 1.44 cycles on Zen 4 instead of the
    0.67 it takes at distinct offsets, against 0.50 + 0.33 alone."""
    both = fastest(f"{store}\n{load}\n", tries=5)
    alone = fastest(store + "\n") + fastest(load + "\n")
    assert both <= 1.1 * alone, (both, alone)


def test_a_shift_by_cl_is_timed_as_with_a_count_the_block_sets_itself():
    """The harness's cl is not 0 (layout.SHIFT_COUNT): `shl eax, cl` before a flags reader
    times as the same block that sets cl to 3 first (a second path: the count the block
    chose). With cl 0 the flags stay unchanged and Zen 4 made the reader wait 36 cycles a
    loop; with a count both run 1.00 there."""
    own = fastest_block("shll %cl, %eax\ncmovgeq (%rsi), %r10\n")
    chosen = fastest_block("movl $3, %ecx\nshll %cl, %eax\ncmovgeq (%rsi), %r10\n")
    if own is None or chosen is None:
        pytest.skip("a block did not reproduce in three tries (a busy machine)")
    assert own == pytest.approx(chosen, rel=0.15, abs=0.1)


def test_a_block_is_timed_as_a_short_loop_of_it_runs():
    """A read-modify-write of one place through a base the instruction before it rewrites: a
    core that renames memory may stop doing so past some copies in a loop (Zen 4: 24; the
    harness's 25 and 50 copies read 3.24 and 6.40 a copy where a loop of it runs 1.00).
    `pmpredict measure` agrees with loops of 4 and 8 copies run as written (a second path:
    the difference of those two, far below any such limit), on a core that renames or not."""
    text = "mov rdi, 0x640400\nadd qword ptr [rdi + 192], 1\n"
    # every reading counts, stable or not: a figure from loops that ran differently is not
    block = prepare_block(text, "intel")
    readings = [measure_block(text, "intel").cycles for _ in range(3)]
    measured = min((c for c in readings if c), default=None)
    loops = []
    for _ in range(3):
        short, long = run_kernels([block_kernel(f"pm_loop{k}", list(block.lines) * k, "intel",
                                                block.counter, block.vector_width, block.layout)
                                   for k in (4, 8)], passes=2)
        if short.error is None and long.error is None and short.confirmed and long.confirmed:
            loops.append((long.cycles - short.cycles) / 4)
    if measured is None or not loops:
        pytest.skip("no timing in three tries (a busy machine)")
    assert measured == pytest.approx(min(loops), rel=0.1, abs=0.1)


def test_a_misaligned_float_load_times_as_an_aligned_one():
    """A float loaded from an offset that is not a multiple of 4 is a whole float, as in a
    program's misaligned array (the layout writes its fill again from there): `vmulss` in a
    chain through xmm0, its operand loaded across a line, times as with the operand aligned,
    on every core (a denormal operand costs a multiply extra cycles on Zen 4, 4.21 against
    3.00, and a microcode assist on Intel cores)."""
    split = fastest_block("vmulss 189(%rdi), %xmm0, %xmm0\n")
    aligned = fastest_block("vmulss 188(%rdi), %xmm0, %xmm0\n")
    if split is None or aligned is None:
        pytest.skip("a block did not reproduce in three tries (a busy machine)")
    assert split == pytest.approx(aligned, rel=0.1)
