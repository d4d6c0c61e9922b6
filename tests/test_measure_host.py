"""Measurement on this host, for real: known throughputs, failures reported, cache, CLI.

These compile and run the harness, so they need an x86-64 Linux machine with a C
compiler; elsewhere they skip. No timing assertion is about how fast *we* are: the
figures checked are the CPU's: imul's latency of 3 (every recent x86-64 core), and its
reciprocal throughput as the host measured it by the block path (the `imul_cycles` fixture:
1 on Intel and Zen 1-4, 1/3 on Zen 5), with a 5% tolerance for a shared, noisy machine.
"""

from __future__ import annotations

import collections
import json
import math
import os
import platform
import shutil
import subprocess
import sys

import pytest

from pmpredict.formats.experiment_files import load_experiments, save_experiments
from pmpredict.model.experiments import Experiment, ExperimentSet
from pmpredict.measure import default_forms, measure_block, measure_experiment_set
from pmpredict.measure import experiment_runs as measure_set
from pmpredict.measure.cpu import cpu_flags
from pmpredict.measure.runner import RunOptions, check_assembles

from settling import settled, settled_reproduced

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux")
    or not (shutil.which("cc") or shutil.which("gcc")),
    reason="host measurement needs x86-64 Linux and a C compiler")

IMUL = "IMUL_((REG:RW:G:64)),_((REG:R:G:64))"
ADD = "ADD_((REG:RW:G:64)),_((REG:R:G:64))"
UD2 = "UD2"


def unsupported_form() -> str:
    """A form this CPU lacks (from /proc/cpuinfo) that the assembler knows, else ud2,
    which raises SIGILL everywhere."""
    from pmpredict.measure.instantiate import instantiate
    flags = cpu_flags()
    candidates = [("avx512_fp16", "VADDPH_((REG:W:V:256)),_((REG:R:V:256)),_((REG:R:V:256))"),
                  ("amx_tile", "TILERELEASE")]
    for flag, form in candidates:
        if flag not in flags and check_assembles([instantiate([(form, 1)], 1).lines[0]]) == [None]:
            return form
    return UD2


def one_set(*experiments) -> ExperimentSet:
    exps = tuple(Experiment.of(e) for e in experiments)
    forms = tuple(dict.fromkeys(f for e in exps for f in e.forms()))
    return ExperimentSet(forms, exps, "x86", "test")


# The machine is a VM sharing its cores: steal time can inflate one measurement. The
# throughput of a loop is the fastest of independent runs, so the exact-value tests
# take the minimum of up to five (stopping as soon as one is within 5%; three were
# once not enough in a full suite run); checks whose point is elsewhere (a round trip,
# a failure path) accept 15%.
INCIDENTAL = 0.15


def imul_alone() -> float:
    """One imul experiment measured again, without a cache (a second reading for `settled`)."""
    return measure_experiment_set(one_set([IMUL]), cache_dir=None).experiments[0].cycles


def test_imul_throughput_agrees_with_the_block_path(imul_cycles):
    """One form's experiment (a window of independent imuls) and twelve imul chains timed as a
    block are two paths to one fact of the core."""
    cycles = settled(lambda: measure_experiment_set(one_set([IMUL]), cache_dir=None)
                     .experiments[0].cycles, imul_cycles, 0.05)
    assert cycles == pytest.approx(imul_cycles, rel=0.05)


def test_dependent_imul_chain_is_three_cycles():
    # the readings the harness reports reproduced (a disturbed unroll variant misreads a
    # block low as well as high); None: none reproduced, the harness said so
    reading = lambda text, syntax: lambda: (lambda r: (r.cycles, r.stable))(
        measure_block(text, syntax))
    att = settled_reproduced(reading("imul %rbx, %rax\n", "att"), 3.0, 0.05)
    assert att is None or att == pytest.approx(3.0, rel=0.05)
    intel = settled_reproduced(reading("imul rax, rbx\nimul rax, rbx\n", "intel"), 6.0, 0.05)
    assert intel is None or intel == pytest.approx(6.0, rel=0.05)
    if (att, intel) == (None, None):
        pytest.skip("no reading of either chain reproduced in 5 tries: the host is busy")


def test_unsupported_and_broken_forms_are_reported_not_fatal(tmp_path, imul_cycles):
    bad = unsupported_form()
    exps = one_set([IMUL], [UD2], [bad, ADD], [ADD], ["NOSUCHINSN_((REG:W:G:64))"],
                   ["MOV_rax,_qword_ptr_[0]"])
    out = measure_experiment_set(exps, cache_dir=str(tmp_path))
    cycles = [e.cycles for e in out.experiments]
    errors = [e.other.get("error") for e in out.experiments]
    assert settled(imul_alone, imul_cycles, INCIDENTAL, first=cycles[0]) == \
        pytest.approx(imul_cycles, rel=INCIDENTAL)
    assert cycles[3] == pytest.approx(0.25, rel=0.3) or cycles[3] < 1.0   # any healthy ALU
    assert cycles[1] is None and errors[1].startswith("SIGILL")
    assert cycles[2] is None and errors[2].startswith("SIGILL")
    assert cycles[4] is None and errors[4].startswith("does not assemble")
    assert cycles[5] is None and "SIGSEGV" in errors[5]
    # a saved set keeps the reasons
    save_experiments(out, tmp_path / "out.json")
    again = load_experiments(str(tmp_path / "out.json"))
    assert again.experiments[1].other["error"].startswith("SIGILL")


def test_hang_times_out_and_the_run_goes_on(imul_cycles):
    from pmpredict.measure.codegen import experiment_kernel
    from pmpredict.measure.instantiate import instantiate
    from pmpredict.measure.runner import run_kernels
    window = instantiate([(IMUL, 1)], 50)
    kernels = [experiment_kernel("pm_hang", instantiate([("JMP_.", 1)], 1)),
               experiment_kernel("pm_ok", window), experiment_kernel("pm_again", window)]
    hang, ok, again = run_kernels(kernels, RunOptions(alarm_s=1))
    assert hang.error == "timeout"
    # the run went on: both kernels after the hang have a time, never faster than imul's
    # throughput; the fastest of them at it (measured again while a busy host keeps it above:
    # beside a busy vCPU the two read 50.7 and 53.6 cycles a window on a Zen 3 guest)
    assert ok.error is None and again.error is None
    first = min(ok.cycles, again.cycles) / 50
    assert first >= imul_cycles * (1 - INCIDENTAL)
    alone = lambda: run_kernels(kernels[1:2], RunOptions())[0].cycles / 50
    assert settled(alone, imul_cycles, INCIDENTAL, first=first) == \
        pytest.approx(imul_cycles, rel=INCIDENTAL)


def test_cache_resumes_without_measuring_again(tmp_path, monkeypatch):
    exps = one_set([IMUL], [IMUL, ADD], [UD2])
    first = measure_experiment_set(exps, cache_dir=str(tmp_path))

    def no_run(*a, **k):
        raise AssertionError("measured again although cached")
    monkeypatch.setattr(measure_set, "run_kernels", no_run)
    seen = []
    second = measure_experiment_set(exps, cache_dir=str(tmp_path), progress=seen.append)
    assert [e.cycles for e in second.experiments] == [e.cycles for e in first.experiments]
    assert second.experiments[2].other["error"].startswith("SIGILL")
    assert (seen[-1].done, seen[-1].total, seen[-1].cached) == (3, 3, 3)


def test_interrupted_run_keeps_finished_results(tmp_path, monkeypatch):
    """Ctrl-C once the first experiment is done: the rerun measures only what is missing."""
    from pmpredict.measure.cache import ResultCache
    from pmpredict.measure.cpu import cpu_identity
    exps = one_set([IMUL], [ADD], [IMUL, ADD])
    real = measure_set.run_kernels
    calls = []

    def interrupt_after_first(kernels, opts, on_result):
        done = collections.Counter()

        def wrapped(i, t):
            on_result(i, t)
            done[i // 3] += 1
            # whichever experiment has its 3 unroll variants first (the harness processes
            # finish in any order): Ctrl-C then, with the others unfinished
            if done[i // 3] == 3:
                raise KeyboardInterrupt
        calls.append(len(kernels))
        return real(kernels, opts, wrapped)
    monkeypatch.setattr(measure_set, "run_kernels", interrupt_after_first)
    monkeypatch.setattr(measure_set, "suspicious", lambda variants: False)   # no second pass
    with pytest.raises(KeyboardInterrupt):
        measure_experiment_set(exps, cache_dir=str(tmp_path))
    kept = len(ResultCache(str(tmp_path), cpu_identity()))
    assert 1 <= kept < 3
    monkeypatch.setattr(measure_set, "run_kernels", lambda k, o, r: calls.append(len(k)) or real(k, o, r))
    out = measure_experiment_set(exps, cache_dir=str(tmp_path))
    assert calls[-1] == 3 * (3 - kept)       # 3 variants of each experiment not yet cached
    assert all(e.cycles for e in out.experiments)


def test_disagreeing_variants_are_measured_again(monkeypatch, imul_cycles):
    seen = []
    real = measure_set.run_kernels

    def count(kernels, opts, on_result):
        seen.append(len(kernels))
        return real(kernels, opts, on_result)
    monkeypatch.setattr(measure_set, "run_kernels", count)
    monkeypatch.setattr(measure_set, "suspicious", lambda variants: True)
    out = measure_experiment_set(one_set([IMUL], [ADD]), cache_dir=None)
    assert seen == [6, 6]                   # every experiment once more, then kept
    monkeypatch.undo()
    assert settled(imul_alone, imul_cycles, INCIDENTAL, first=out.experiments[0].cycles) == \
        pytest.approx(imul_cycles, rel=INCIDENTAL)


def test_suspicious_variants():
    from pmpredict.measure.runner import Timing
    ok = [(50, Timing(50.0, 50.1, 50.0, 50.0)), (32, Timing(32.2, 32.3, 32.2, 32.2))]
    assert not measure_set.suspicious(ok)
    assert measure_set.suspicious(ok + [(80, Timing(95.0, 95.0, 95.0, 95.0))])
    assert measure_set.suspicious([(50, Timing(50.0, 50.1, 50.0, 50.0, dirty=1))])
    # kept although the canary said the core's other hardware thread was busy
    assert measure_set.suspicious([(50, Timing(50.0, 50.1, 50.0, 50.0, busy=1))])
    assert not measure_set.suspicious([(50, Timing(50.0, 50.1, 50.0, 50.0, contended=3))])


def test_canary_is_throughput_bound_and_every_timing_says_how_often_it_ran_slow():
    from pmpredict.measure.calibrate import host_calibration
    ghz, canary = host_calibration()
    # 96 adds in 8 chains of 12: at most 8 a cycle (the chains); every x86-64 core has 3 or
    # more integer ALUs, so even sharing the core with a busy sibling it runs above 1.5
    assert ghz > 0.5 and 1.5 < canary <= 8.0
    block = measure_block("add %rbx, %rax\n", "att")
    reading = lambda r: (r.cycles, r.stable)
    value = settled_reproduced(lambda: reading(measure_block("add %rbx, %rax\n", "att")), 1.0,
                               INCIDENTAL, first=reading(block))
    assert value is None or value == pytest.approx(1.0, rel=INCIDENTAL)
    for v in block.timing.variants:           # retaken samples are not among those kept
        assert v.contended >= 0 and 0 <= v.busy <= v.samples


def test_host_forms_assemble_and_span_the_categories():
    forms = default_forms()
    assert len(forms) >= 60
    from pmpredict.measure.instantiate import instantiate
    lines = [instantiate([(f, 1)], 1).lines[0] for f in forms]
    assert check_assembles(lines) == [None] * len(forms)
    mnemonics = {f.split("_")[0] for f in forms}
    for needed in ("ADD", "SHL", "IMUL", "LEA", "VPADDD", "VADDPS", "VFMADD231PS", "VPSHUFB",
                   "VCVTDQ2PS"):
        assert needed in mnemonics
    assert any("ptr" in f and f.split("_")[1] != "qword" for f in forms)        # loads
    assert any(f.split("_")[1] in ("qword", "ymmword", "xmmword", "dword") for f in forms)  # stores


def test_cli_measure_block_json(tmp_path):
    src = tmp_path / "chain.s"
    src.write_text("# a dependent chain\n.L1:\n  imul %rbx, %rax\n  jne .L1\n")

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-m", "pmpredict", "measure", str(src), "--json",
                               "--no-cache"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    data = run()
    assert data["dropped"][0]["text"].startswith("jne")
    reading = lambda d: (d["cycles"], d["stable"])
    value = settled_reproduced(lambda: reading(run()), 3.0, INCIDENTAL, first=reading(data))
    assert value is None or value == pytest.approx(3.0, rel=INCIDENTAL)


def test_cli_measure_experiments_round_trip(tmp_path, imul_cycles):
    e = tmp_path / "e.json"
    save_experiments(one_set([IMUL], [IMUL, ADD, ADD]), e)
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "measure", "--experiments", str(e),
                           "-o", str(out), "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    measured = load_experiments(str(out))
    # the file holds what the cache holds: a second run reads it back without measuring
    again = subprocess.run([sys.executable, "-m", "pmpredict", "measure", "--experiments", str(e),
                            "-o", str(tmp_path / "again.json"), "--cache", str(tmp_path / "cache")],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert [x.cycles for x in load_experiments(str(tmp_path / "again.json")).experiments] == \
        [x.cycles for x in measured.experiments]
    # imul alone at the core's rate: never faster; slower only while the machine is busy
    # (a busy host read 1.13 against 0.98 once), so a slow reading is measured again
    assert measured.experiments[0].cycles >= imul_cycles * (1 - INCIDENTAL)
    assert settled(imul_alone, imul_cycles, INCIDENTAL, first=measured.experiments[0].cycles) \
        == pytest.approx(imul_cycles, rel=INCIDENTAL)
    # imul and two adds, timed in the same run as the imul alone: never faster than it, and
    # each add costs at most a cycle more (an independent add issues at least once a cycle on
    # every x86 core). Not "as fast as the imul alone": another guest busy on the physical
    # core shares the ALUs the adds and the imul compete for (a Zen 3 cloud guest: 1.32
    # cycles against 0.99).
    alone, together = measured.experiments[0].cycles, measured.experiments[1].cycles
    assert alone * (1 - INCIDENTAL) <= together <= (alone + 2.0) * (1 + INCIDENTAL)


def test_cli_measure_with_a_cache_that_cannot_be_opened_is_a_located_error(tmp_path):
    from pmpredict.measure.cache import ResultCache
    from pmpredict.measure.cpu import cpu_identity
    cache = tmp_path / "cache"
    cache.mkdir()
    path = ResultCache(str(tmp_path / "probe"), cpu_identity()).path
    (cache / os.path.basename(path)).mkdir(exist_ok=True)      # a directory where the file goes
    block = tmp_path / "b.s"
    block.write_text("add %rbx, %rax\n")
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "measure", str(block), "--cache",
                           str(cache)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot open the measurement cache" in proc.stderr


@pytest.mark.parametrize("args, where", [
    (["measure"], "nothing to measure"),
    (["measure", "NOFILE.s"], "NOFILE.s: cannot read"),
    (["measure", "--experiments", "E.json"], "needs -o"),
])
def test_cli_measure_bad_input(args, where):
    proc = subprocess.run([sys.executable, "-m", "pmpredict", *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert where in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_measure_block_with_a_call_is_rejected(tmp_path):
    src = tmp_path / "call.s"
    src.write_text("add %rax, %rbx\ncall foo\nadd %rcx, %rdx\n")
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "measure", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{src}:2:" in proc.stderr and "call" in proc.stderr


def test_cli_training_set_leaves_out_unsupported_forms(tmp_path, imul_cycles):
    forms = tmp_path / "forms.txt"
    forms.write_text(f"# three forms\n{IMUL}\n{ADD}\n{UD2}\n")
    out = tmp_path / "set"
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "measure", "--training-set", str(out),
                           "--forms", str(forms), "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "left out: UD2: SIGILL" in proc.stdout
    single = load_experiments(str(out / "singletons.json"))
    pairs = load_experiments(str(out / "pairs.json"))
    weighted = load_experiments(str(out / "weighted.json"))
    assert len(single) == 3 and len(pairs) == 1 and len(weighted) == 1
    t = {e.forms()[0]: e.cycles for e in single.experiments}
    # what this test is about is the set, not the timing: only facts that survive a busy CI
    # machine (a slow sample inflates a figure, nothing deflates it below the hardware's limit)
    assert t[IMUL] >= imul_cycles * (1 - INCIDENTAL)               # never faster than the core
    assert t[ADD] <= 0.5 * (1 + INCIDENTAL)                        # at least two integer ALUs
    # the weighted pair balances the slower form against the faster: {imul: 1, add: ceil(ratio)}
    (add, n), (imul, one) = weighted.experiments[0].counts
    assert (add, imul, one) == (ADD, IMUL, 1) and n == math.ceil(t[IMUL] / t[ADD] - 1e-9)
    assert imul_cycles * (1 - INCIDENTAL) <= pairs.experiments[0].cycles <= (t[IMUL] + t[ADD]) * (1 + INCIDENTAL)


def test_zen4_vm_model_covers_the_host_forms():
    from pmpredict.formats.model_files import load_model
    model = load_model("zen4-vm")
    assert set(model.uops) == set(default_forms())
    assert model.isa == "x86" and "cpu" in model.provenance and "cpu_identity" in model.provenance


def test_block_rip_relative_symbols_get_data():
    """Compiler output loads constants as .LC0(%rip): each symbol gets its own data object,
    holding normal numbers: the vmulps chain through it runs about as fast as the same chain
    with a register operand (vmulps latency differs by core - 4 on Skylake, 3 on Zen - the
    ratio hardly: Zen 5 takes 9% more through the load-op; a denormal operand would take an
    assist of a hundred cycles or more)."""
    # only readings the harness reports reproduced count: a block's figure is the difference
    # of two unroll variants, and a disturbed variant misreads it low as well as high (the
    # register chain once read 2.03 in a full run here, Zen 4, where it is 3)
    chain = lambda text, syntax="att": lambda: (lambda r: (r.cycles, r.stable))(
        measure_block(text, syntax))
    register = settled_reproduced(chain("vmulps %ymm3, %ymm0, %ymm0\n"), 2.5, 0.0)
    result = measure_block("vmulps .LC0(%rip), %ymm0, %ymm0\nvaddps .LC1+32(%rip), %ymm1, %ymm2\n",
                           "att")
    assert result.symbols == (".LC0", ".LC1")
    if register is None:
        pytest.skip("no reading of the register chain reproduced in 5 tries: the host is busy")
    assert 2.5 < register < 6                                          # an FP multiply latency
    memory = settled_reproduced(chain("vmulps .LC0(%rip), %ymm0, %ymm0\nvaddps .LC1+32(%rip), "
                                      "%ymm1, %ymm2\n"), register, 0.05,
                                first=(result.cycles, result.stable))
    assert memory is None or 0.95 * register <= memory <= 1.15 * register
    intel = settled_reproduced(chain("vmulps ymm0, ymm0, ymmword ptr [rip + .LC0]\n", "intel"),
                               register, 0.05)
    assert intel is None or 0.95 * register <= intel <= 1.15 * register


def test_block_kernel_is_chosen_as_predict_does():
    """Markers / regions / the innermost loop pick the kernel, as for `pmpredict predict`."""
    text = ("  mov $5, %ecx\n  call setup\n# LLVM-MCA-BEGIN chain\n  imul %rbx, %rax\n"
            "# LLVM-MCA-END chain\n  ret\n")
    result = measure_block(text, "att")
    assert result.kernel["how"] == "llvm-mca-region"
    assert result.instruction_count == 1
    reading = lambda r: (r.cycles, r.stable)
    value = settled_reproduced(lambda: reading(measure_block(text, "att")), 3.0, INCIDENTAL,
                               first=reading(result))
    assert value is None or value == pytest.approx(3.0, rel=INCIDENTAL)


def test_several_passes_keep_the_fastest(imul_cycles):
    """passes=2: two harness processes (on two CPUs where allowed); each kernel keeps its
    fastest pass and lists both."""
    from pmpredict.measure.codegen import experiment_kernel
    from pmpredict.measure.instantiate import instantiate
    from pmpredict.measure.runner import run_kernels
    kernel = experiment_kernel("pm_imul", instantiate([(IMUL, 1)], 50))
    timing, = run_kernels([kernel], RunOptions(), passes=2)
    assert len(timing.passes) == 2 and set(timing.counted) <= set(timing.passes)
    # the fastest of the passes that kept no busy sample (of both where none or both did)
    assert timing.cycles == min(timing.counted)
    if not timing.busy:
        assert timing.cycles / 50 == pytest.approx(imul_cycles, rel=INCIDENTAL)


# --- divisions ------------------------------------------------------------------------------

DIVISIONS = [f"{m}_{op}" for m in ("DIV", "IDIV") for op in
             ["((REG:R:G:64))", "((REG:R:G:32))", "((REG:R:G:16))", "((REG:R:G:8))"]
             + [f"{size}_ptr_[((MEM:64))_+_((MIMM:16))]"
                for size in ("qword", "dword", "word", "byte")]]


def test_division_forms_have_a_reciprocal_throughput():
    """Every div / idiv form, register or memory, 8 to 64 bits, is measured (it crashed the
    harness with SIGFPE before): more than a cycle each (no x86 core divides one per cycle),
    a 64-bit division no faster than a byte one, a memory divisor about as fast as a
    register one, and two divisions in one experiment share the one divider."""
    pair = {"DIV_((REG:R:G:64))": 1, "IDIV_((REG:R:G:32))": 1}
    measured = measure_experiment_set(one_set(*[[f] for f in DIVISIONS], pair), cache_dir=None)
    t = {e.forms()[0] if len(e.counts) == 1 else "pair": e.cycles for e in measured.experiments}
    assert all(c is not None and c > 1.5 for c in t.values()), t
    for m in ("DIV", "IDIV"):
        assert t[f"{m}_((REG:R:G:64))"] >= 0.95 * t[f"{m}_((REG:R:G:8))"]
        register, memory = f"{m}_((REG:R:G:64))", f"{m}_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
        alone = lambda form: measure_experiment_set(one_set([form]), cache_dir=None) \
            .experiments[0].cycles
        fast = {register: t[register], memory: t[memory]}
        for _ in range(4):                 # the fastest of each, while a busy host parts them
            if fast[memory] == pytest.approx(fast[register], rel=INCIDENTAL):
                break
            slower = max(fast, key=fast.get)
            fast[slower] = min(fast[slower], alone(slower))
        assert fast[memory] == pytest.approx(fast[register], rel=INCIDENTAL)
    assert t["pair"] >= 0.95 * max(t["DIV_((REG:R:G:64))"], t["IDIV_((REG:R:G:32))"])


def test_the_host_models_core_has_the_integer_divider():
    """`--model host` bootstraps from the core forms: one of them divides integers (the FP
    divider, vdivps, is another unit), so the model has an integer divider."""
    from pmpredict.isa import semantics
    from pmpredict.measure.host_forms import packaged_forms
    x86 = semantics.get("x86")
    assert any(x86.division(f) for f in packaged_forms("core"))
    assert any(x86.division(f) for f in packaged_forms("catalogue"))
