"""Speed of `pmpredict predict`, side by side with llvm-mca-19 (and OSACA).

    python3 benchmarks/bench_predict.py [--rounds N] [--sections startup,batch,kernels,parse]

Sections (default: all):
  * startup  one warm call, `python3 -m pmpredict predict examples/mix_avx2.s` (and the
             installed `pmpredict` console script of this interpreter, if any), alternating
             with `llvm-mca-19 -mcpu=native` on the same file: wall and CPU (user + sys) time
             per process, medians over --rounds, and the ratio. "Warm": the files read and
             the bytecode compiled (.pyc) by an untimed call first, as on a machine that has
             run pmpredict before (PYTHONDONTWRITEBYTECODE is dropped for the calls).
  * batch    the first --blocks blocks of ../shared/data/bhive/blocks.csv, each an
             LLVM-MCA region of one file: one llvm-mca-19 -mcpu=skylake process over the file
             (pmpredict with the built-in skl)
             against one pmpredict process (default text report; --jsonl; --jobs 2), blocks per
             second of process CPU time (and wall); the marginal rate (what the second
             --blocks blocks of a file of twice as many cost: the fixed costs, interpreter,
             imports and loading the compiled simulation, cancel) and the fixed cost it
             implies; pmpredict in-process with its start-up paid
             (Predictor(compiled=True).predict_many).
  * sizes    one loop of n instructions (a 5-instruction AVX pattern repeated), n = 1,000 to
             50,000: wall time and peak memory of `pmpredict predict` against llvm-mca-19.
  * corpus   --corpus N BHive blocks (cycled, each region its own label) in one file,
             `pmpredict predict --jsonl --dask` on a local cluster of 1 and of 2 workers:
             blocks per second (wall) and the scaling; not in the default sections.
  * kernels  the innermost loops of examples/*.s, per kernel, against the OSACA CLI and
             llvm-mca-19 (--skip-osaca to leave OSACA out).
  * parse    parse time of ~1,000-line gcc/clang outputs, and a batch of their loops in-process.
CPU time is what wall time is on a quiet machine; the load average is printed with each
section (other jobs on the machine inflate wall times, not CPU times much).
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from pmpredict.asm.kernel import Kernel, all_regions, find_loops, innermost, select_kernel  # noqa: E402
from pmpredict.asm.parse import parse_file
from pmpredict.isa.syntax import Instruction, Label  # noqa: E402
from pmpredict.formats.model_files import load_model  # noqa: E402
from pmpredict.models import builtin_path  # noqa: E402
from pmpredict.predict.predictor import Predictor  # noqa: E402
from pmpredict.views import render_text  # noqa: E402

ARTIFACT = os.path.join(ROOT, "..", "shared", "data", "pmevo-artifact")
BHIVE = os.path.join(ROOT, "..", "shared", "data", "bhive", "blocks.csv")
SECTIONS = ("startup", "batch", "sizes", "corpus", "kernels", "parse")
MCA_NAME = "llvm-mca-19 -mcpu=skylake"
SIZE_PATTERN = ["vmovupd (%rsi,%rax,8), %ymm0", "vfmadd231pd (%rdx,%rax,8), %ymm1, %ymm0",
                "vmovupd %ymm0, (%rdi,%rax,8)", "addq $4, %rax", "vaddpd %ymm0, %ymm2, %ymm2"]
KERNELS = ["mix_avx2.s", "mix_avx2_intel.s", "triad_avx.s", "triad_neon.s"]

BIG_TEMPLATE = r"""
#include <stdint.h>
void mix{i}(int32_t *restrict a, const int32_t *restrict b, const int32_t *restrict c, long n) {{
    for (long i = 0; i < n; i++) a[i] = (b[i] + c[i] * {i}) ^ (b[i] << {s});
}}
double dot{i}(const double *a, const double *b, long n) {{
    double s = 0; for (long i = 0; i < n; i++) s += a[i] * b[i] + {i}.0; return s;
}}
void triad{i}(double *restrict a, const double *restrict b, const double *restrict c, double s, long n) {{
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i] * {i}.5;
}}
long count{i}(const char *p, long n) {{
    long k = 0; for (long i = 0; i < n; i++) k += p[i] == '{c}'; return k;
}}
"""


def model_spec(name: str, arch: str) -> str:
    if builtin_path(name):
        return name
    return os.path.join(ARTIFACT, arch, "mapping_pmevo.json")


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(cmd) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def warm_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # a warm machine has the .pyc files
    return env


def timed_process(cmd, env=None) -> tuple[float, float]:
    """(wall, CPU user + sys) seconds of one process and the children it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def alternate(commands: dict, rounds: int, env=None) -> dict:
    """{name: ([walls], [cpus])}: every command once per round, in turn."""
    out = {name: ([], []) for name in commands}
    for _ in range(rounds):
        for name, cmd in commands.items():
            wall, cpu = timed_process(cmd, env)
            out[name][0].append(wall)
            out[name][1].append(cpu)
    return out


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def console_script() -> str | None:
    """The `pmpredict` console script installed for this interpreter, if there is one."""
    here = os.path.join(os.path.dirname(sys.executable), "pmpredict")
    return here if os.path.exists(here) else None


def startup(rounds: int) -> None:
    src = os.path.join(ROOT, "examples", "mix_avx2.s")
    commands = {"pmpredict (python3 -m pmpredict)": [sys.executable, "-m", "pmpredict", "predict", src]}
    script = console_script()
    if script:
        commands["pmpredict (console script)"] = [script, "predict", src]
    commands["python3 -c pass (the interpreter alone)"] = [sys.executable, "-c", "pass"]
    mca = shutil.which("llvm-mca-19")
    if mca:
        commands["llvm-mca-19 -mcpu=native"] = [mca, "-mcpu=native", src]
    env = warm_env()
    for cmd in commands.values():
        timed_process(cmd, env)                   # warm: .pyc written, caches filled
    print(f"\n## startup: one warm call on examples/mix_avx2.s ({rounds} rounds, alternating; {load()})")
    got = alternate(commands, rounds, env)
    print(f"{'command':42s} {'wall median':>11s} {'CPU median':>10s} {'CPU min':>8s}")
    for name, (walls, cpus) in got.items():
        print(f"{name:42s} {statistics.median(walls):10.3f}s {statistics.median(cpus):9.3f}s "
              f"{min(cpus):7.3f}s")
    if mca:
        ref = got["llvm-mca-19 -mcpu=native"]
        for name, (walls, cpus) in got.items():
            if name.startswith("pmpredict"):
                print(f"{name} / llvm-mca: wall {statistics.median(walls) / statistics.median(ref[0]):.1f}x, "
                      f"CPU {statistics.median(cpus) / statistics.median(ref[1]):.1f}x "
                      "(goal: a warm call <= 0.15 s)")
    print(f"({load()})")


def bhive_file(tmp: str, count: int) -> str | None:
    """The first `count` BHive blocks, each between LLVM-MCA-BEGIN/END bN (AT&T)."""
    if not os.path.exists(BHIVE):
        return None
    lines = []
    with open(BHIVE) as fh:
        for k, row in enumerate(csv.DictReader(fh)):
            if k == count:
                break
            lines += [f"# LLVM-MCA-BEGIN b{k}"] + ["\t" + s.strip() for s in row["asm_att"].split(" ; ")]
            lines.append(f"# LLVM-MCA-END b{k}")
    path = os.path.join(tmp, f"bhive{count}.s")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def batch(tmp: str, rounds: int, count: int) -> None:
    path, double, one = bhive_file(tmp, count), bhive_file(tmp, 2 * count), bhive_file(tmp, 1)
    if path is None:
        print(f"\n## batch: skipped ({BHIVE} not found)")
        return
    mca = shutil.which("llvm-mca-19")
    # the built-in skl on both sides: the same microarchitecture, and no dependence on
    # whether this machine's model has been measured (the default otherwise)
    pm = [sys.executable, "-m", "pmpredict", "predict", "--model", "skl"]
    variants = {"pmpredict --jsonl": ["--jsonl"], "pmpredict, text": [],
                "pmpredict, text, --jobs 2": ["--jobs", "2"]}
    commands = {}
    if mca:
        commands[MCA_NAME] = lambda f: [mca, "-mcpu=skylake", f]
    for name, extra in variants.items():
        commands[name] = lambda f, extra=extra: pm + [f] + extra
    env = warm_env()
    for cmd in commands.values():
        timed_process(cmd(one), env)
    print(f"\n## batch: {count} BHive blocks as LLVM-MCA regions of one file, one process each "
          f"({rounds} rounds, alternating; {load()})")
    full = alternate({n: c(path) for n, c in commands.items()}, rounds, env)
    twice = alternate({n: c(double) for n, c in commands.items()}, rounds, env)
    single = alternate({n: c(one) for n, c in commands.items()}, rounds, env)
    # marginal: the second `count` blocks of a file of 2 * count, i.e. what a block costs once
    # the fixed costs (interpreter, imports, the compiled simulation's loading) are paid;
    # fixed: what the run of `count` blocks costs beyond `count` blocks at the marginal rate
    print(f"{'command':28s} {'CPU':>7s} {'wall':>7s} {'blocks/s CPU':>12s} {'blocks/s wall':>13s} "
          f"{'1 block CPU':>11s} {'fixed CPU':>9s} {'marginal blocks/s CPU':>21s}")
    rates = {}
    for name in commands:
        cpu, wall = statistics.median(full[name][1]), statistics.median(full[name][0])
        cpu2 = statistics.median(twice[name][1])
        start = statistics.median(single[name][1])
        marginal = count / max(cpu2 - cpu, 1e-9)
        fixed = cpu - count / marginal
        rates[name] = (count / cpu, count / wall, marginal, fixed)
        print(f"{name:28s} {cpu:6.2f}s {wall:6.2f}s {count / cpu:12,.0f} {count / wall:13,.0f} "
              f"{start:10.3f}s {fixed:8.2f}s {marginal:21,.0f}")
    if mca:
        ref = rates[MCA_NAME]
        for name, (cpu_rate, wall_rate, marginal, fixed) in rates.items():
            if name.startswith("pmpredict"):
                print(f"{name} / llvm-mca: {cpu_rate / ref[0]:.2f}x by CPU, {wall_rate / ref[1]:.2f}x "
                      f"by wall, {marginal / ref[2]:.2f}x marginal by CPU (goal >= 10x); its fixed "
                      f"cost alone allows at most {count / max(fixed, 1e-9):,.0f} blocks/s at "
                      f"{count} blocks ({count / max(fixed, 1e-9) / ref[0]:.1f}x llvm-mca)")
    # in-process: what the Python API costs per block once pmpredict is loaded
    program = parse_file(path)
    kernels = all_regions(program)
    t = time.process_time()
    predictor = Predictor(load_model("skl"), compiled=True)
    for report in predictor.predict_many(kernels, program.syntax, path):
        if report.run is not None:
            break                                 # the compiled simulation is loaded
    loaded = time.process_time() - t
    t = time.process_time()
    for report in predictor.predict_many(kernels, program.syntax, path):
        render_text(report)
    warm = time.process_time() - t
    print(f"in-process, Predictor(compiled=True).predict_many + the text report: loading the model "
          f"and the compiled simulation {loaded:.2f}s CPU, then {count} blocks in {warm:.2f}s CPU "
          f"({count / warm:,.0f} blocks/s; the parse of the file not counted)")
    print(f"({load()})")


def peak_process(cmd) -> tuple[float, float, int]:
    """(wall, CPU, peak resident KB) of one process, by /usr/bin/time-like accounting: the
    children's maximum RSS from a fresh wait4."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def sizes(tmp: str, rounds: int) -> None:
    mca = shutil.which("llvm-mca-19")
    print(f"\n## sizes: one loop of n instructions, {', '.join(SIZE_PATTERN[:2])}, ... repeated "
          f"(median of {rounds}; {load()})")
    print(f"{'n':>7s} {'pmpredict wall':>14s} {'peak MB':>8s} {'llvm-mca wall':>13s} {'peak MB':>8s} "
          f"{'time ratio':>10s} {'memory ratio':>12s}")
    for n in (1000, 5000, 20000, 50000):
        path = os.path.join(tmp, f"loop{n}.s")
        with open(path, "w") as fh:
            fh.write(".L2:\n" + "".join(f"\t{SIZE_PATTERN[i % 5]}\n" for i in range(n))
                     + "\tcmpq %rcx, %rax\n\tjne .L2\n")
        pm = [peak_process([sys.executable, "-m", "pmpredict", "predict", path, "--model", "skl"])
              for _ in range(rounds)]
        pm_wall, pm_mem = statistics.median(x[0] for x in pm), max(x[2] for x in pm) / 1024
        if mca:
            ref = [peak_process([mca, "-mcpu=skylake", path]) for _ in range(rounds)]
            mca_wall, mca_mem = statistics.median(x[0] for x in ref), max(x[2] for x in ref) / 1024
            print(f"{n:7d} {pm_wall:13.2f}s {pm_mem:8.0f} {mca_wall:12.2f}s {mca_mem:8.0f} "
                  f"{pm_wall / mca_wall:9.2f}x {pm_mem / mca_mem:11.2f}x")
        else:
            print(f"{n:7d} {pm_wall:13.2f}s {pm_mem:8.0f}")


def corpus(tmp: str, count: int) -> None:
    """`count` BHive blocks, cycled, each region its own label, over Dask: 1 and 2 workers."""
    if not os.path.exists(BHIVE):
        print(f"\n## corpus: skipped ({BHIVE} not found)")
        return
    with open(BHIVE) as fh:
        blocks = [row["asm_att"].split(" ; ") for row in csv.DictReader(fh)]
    path = os.path.join(tmp, f"corpus{count}.s")
    with open(path, "w") as fh:
        for k in range(count):
            body = "".join("\t" + s.strip() + "\n" for s in blocks[k % len(blocks)])
            fh.write(f"# LLVM-MCA-BEGIN c{k}\n{body}# LLVM-MCA-END c{k}\n")
    print(f"\n## corpus: {count:,} BHive blocks ({len(blocks):,} distinct, cycled; every region its "
          f"own label) in one file, `predict --jsonl --model skl --dask` on a local cluster ({load()})")
    out = os.path.join(tmp, "corpus.jsonl")
    walls = {}
    for workers in (1, 2):
        cmd = [sys.executable, "-m", "pmpredict", "predict", path, "--model", "skl", "--jsonl",
               "--dask", "--jobs", str(workers)]
        t = time.perf_counter()
        with open(out, "w") as fh:
            subprocess.run(cmd, stdout=fh, check=True)
        walls[workers] = time.perf_counter() - t
        lines = sum(1 for _ in open(out))
        print(f"{workers} worker(s): {walls[workers]:.1f} s wall, {count / walls[workers]:,.0f} "
              f"blocks/s ({lines:,} lines)")
    print(f"scaling 1 -> 2 workers: {walls[1] / walls[2]:.2f}x ({load()})")


def marked_copy(src: str, dst_dir: str) -> tuple[str, str, str]:
    """Two copies of src with markers around pmpredict's innermost loop (label .. branch):
    OSACA comment markers (read by OSACA and pmpredict), LLVM-MCA markers (llvm-mca).
    Separate files: OSACA's AArch64 parser rejects the `#` lines llvm-mca needs there."""
    program = parse_file(src)
    kernel = select_kernel(program)
    label_line = next(s.line for s in program.statements if isinstance(s, Label) and s.name == kernel.name)
    lines = open(src).read().splitlines()
    c = "//" if program.isa == "aarch64" else "#"
    paths = []
    for tag, begin, end in (("osaca", f"{c} OSACA-BEGIN", f"{c} OSACA-END"),
                            ("mca", "# LLVM-MCA-BEGIN loop", "# LLVM-MCA-END loop")):
        out = lines[:label_line - 1] + [begin] + lines[label_line - 1:kernel.last_line] + [end] \
            + lines[kernel.last_line:]
        dst = os.path.join(dst_dir, f"{tag}_{os.path.basename(src)}")
        with open(dst, "w") as fh:
            fh.write("\n".join(out) + "\n")
        paths.append(dst)
    return paths[0], paths[1], program.isa


def big_file(tmp: str, compiler: str, flags: list[str], lines_wanted: int = 1000) -> str | None:
    exe = shutil.which(compiler)
    if exe is None:
        return None
    n = 1
    while True:
        src = os.path.join(tmp, f"big_{compiler}_{n}.c")
        with open(src, "w") as fh:
            fh.write("".join(BIG_TEMPLATE.format(i=i, s=i % 7 + 1, c=chr(97 + i % 26)) for i in range(n)))
        out = src[:-2] + ("_intel" if "-masm=intel" in flags else "") + ".s"
        subprocess.run([exe, "-O3", "-S", *flags, "-o", out, src], check=True)
        count = sum(1 for _ in open(out))
        if count >= lines_wanted or n > 64:
            return out
        n += 1


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds (startup, batch)")
    ap.add_argument("--blocks", type=int, default=2000, help="BHive blocks in the batch file")
    ap.add_argument("--corpus", type=int, default=200_000, help="blocks of the corpus section")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions (kernels, parse)")
    ap.add_argument("--skip-osaca", action="store_true")
    ap.add_argument("--sections", default=",".join(x for x in SECTIONS if x != "corpus"),
                    help=f"comma-separated, of {', '.join(SECTIONS)}")
    args = ap.parse_args()
    sections = [x.strip() for x in args.sections.split(",") if x.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {', '.join(sorted(unknown))}")
    tmp = tempfile.mkdtemp(prefix="bench_predict_")
    print(f"# bench_predict  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {cpu_model()}, "
          f"{os.cpu_count()} cores, {load()}")
    print(f"# command: python3 benchmarks/bench_predict.py {' '.join(sys.argv[1:])}")
    if "startup" in sections:
        startup(args.rounds)
    if "batch" in sections:
        batch(tmp, args.rounds, args.blocks)
    if "sizes" in sections:
        sizes(tmp, max(1, min(args.rounds, 3)))
    if "corpus" in sections:
        corpus(tmp, args.corpus)
    if "kernels" in sections or "parse" in sections:
        models = {"x86": model_spec("skl", "SKL"), "aarch64": model_spec("a72", "A72")}
        predictors = {isa: Predictor(load_model(spec)) for isa, spec in models.items()}
        print(f"# models: x86 {models['x86']}, aarch64 {models['aarch64']}; repeat {args.repeat}")
        # warm up: the grammar tables, the first prediction
        for isa, p in predictors.items():
            src = os.path.join(ROOT, "examples", "triad_neon.s" if isa == "aarch64" else "triad_avx.s")
            prog = parse_file(src)
            p.predict(select_kernel(prog), prog.syntax, src)
        if "kernels" in sections:
            kernels(args, tmp, models, predictors)
        if "parse" in sections:
            parse_files(args, tmp, predictors)
    shutil.rmtree(tmp, ignore_errors=True)


def kernels(args, tmp, models, predictors) -> None:
    osaca = shutil.which("osaca") if not args.skip_osaca else None
    mca = shutil.which("llvm-mca-19")
    print("\n## per kernel (seconds, median)")
    print(f"{'kernel':18s} {'insns':>5s} {'in-process':>10s} {'pmpredict CLI':>13s} "
          f"{'OSACA CLI':>10s} {'llvm-mca-19':>11s} {'OSACA/in-proc':>13s}   cycles: pmpredict / OSACA / llvm-mca")
    ratios = []
    for name in KERNELS:
        src = os.path.join(ROOT, "examples", name)
        marked, mca_file, isa = marked_copy(src, tmp)
        predictor = predictors[isa]
        report_box = {}

        def in_process():
            prog = parse_file(marked)
            report_box["r"] = predictor.predict(select_kernel(prog), prog.syntax, marked)

        t_in = median_time(in_process, args.repeat * 4)
        report = report_box["r"]
        cli = [sys.executable, "-m", "pmpredict", "predict", marked, "--model", models[isa]]
        t_cli = statistics.median(run(cli) for _ in range(max(1, args.repeat // 2)))
        t_osaca = osaca_cycles = None
        if osaca:
            arch = "A72" if isa == "aarch64" else "SKX"
            t_osaca = statistics.median(run([osaca, "--arch", arch, marked]) for _ in range(max(3, args.repeat // 2)))
            out = subprocess.run([osaca, "--arch", arch, marked], capture_output=True, text=True).stdout
            osaca_cycles = osaca_throughput(out)
        t_mca = mca_cycles = None
        if mca:
            cpu = "cortex-a72" if isa == "aarch64" else "skylake"
            triple = ["-mtriple=aarch64"] if isa == "aarch64" else []
            t_mca = statistics.median(run([mca, f"-mcpu={cpu}", *triple, mca_file]) for _ in range(args.repeat))
            out = subprocess.run([mca, f"-mcpu={cpu}", *triple, mca_file], capture_output=True, text=True).stdout
            mca_cycles = next((float(l.split()[-1]) for l in out.splitlines() if "Block RThroughput" in l), None)
        ratio = t_osaca / t_in if t_osaca else None
        if ratio:
            ratios.append(ratio)
        fmt = lambda x: f"{x:.4f}" if x is not None else "-"  # noqa: E731
        print(f"{name:18s} {len(report.rows):5d} {t_in:10.4f} {t_cli:13.3f} {fmt(t_osaca):>10s} "
              f"{fmt(t_mca):>11s} {(f'{ratio:.0f}x' if ratio else '-'):>13s}   "
              f"{report.cycles:.2f}{'+' if not report.complete else ''} / {osaca_cycles or '-'} / {mca_cycles or '-'}")
    if ratios:
        print(f"in-process vs OSACA CLI: {min(ratios):.0f}x .. {max(ratios):.0f}x faster (goal >= 10x)")


def parse_files(args, tmp, predictors) -> None:
    print("\n## ~1,000-line compiler output files: parse time (seconds, median)")
    big = {}
    for label, compiler, flags in [("gcc AT&T", "gcc", ["-mavx2"]), ("gcc Intel", "gcc", ["-mavx2", "-masm=intel"]),
                                   ("aarch64-gcc", "aarch64-linux-gnu-gcc", [])]:
        path = big_file(tmp, compiler, flags)
        if path is None:
            print(f"{label:14s} skipped ({compiler} absent)")
            continue
        n_lines = sum(1 for _ in open(path))
        t = median_time(lambda: parse_file(path), args.repeat)
        prog = parse_file(path)
        big[label] = (path, prog)
        print(f"{label:14s} {n_lines:5d} lines {len(prog.instructions):5d} instructions  "
              f"parse {t:.4f} s  ({n_lines / t:,.0f} lines/s; goal < 0.5 s)")

    print("\n## batch, in-process")
    batch = []                                   # (program, kernel)
    for label, (path, prog) in big.items():
        for lo, hi, lab in innermost(find_loops(prog.statements, prog.isa)):
            insns = [s for s in prog.statements[lo:hi + 1] if isinstance(s, Instruction)]
            batch.append((prog, Kernel(insns, "loop", lab, insns[0].line, insns[-1].line, lab)))
    for name in KERNELS:
        prog = parse_file(os.path.join(ROOT, "examples", name))
        batch.append((prog, select_kernel(prog)))

    def predict_all():
        for prog, k in batch:
            predictors[prog.isa].predict(k, prog.syntax, prog.path)

    t = median_time(predict_all, args.repeat)
    n_insn = sum(len(k.instructions) for _, k in batch)
    print(f"{len(batch)} kernels ({n_insn} instructions): {t:.3f} s  -> {len(batch) / t:,.0f} kernels/s "
          f"(match + simulate + LP schedule; files parsed once)")
    files = [os.path.join(ROOT, "examples", n) for n in KERNELS]

    def parse_and_predict():
        for f in files:
            prog = parse_file(f)
            predictors[prog.isa].predict(select_kernel(prog), prog.syntax, f)

    t = median_time(parse_and_predict, args.repeat)
    print(f"{len(files)} example files parse + select + predict: {t / len(files) * 1000:.1f} ms per kernel "
          f"-> {len(files) / t:,.0f} kernels/s")


def osaca_throughput(text: str):
    """OSACA's throughput: the largest port-pressure sum on the combined-report total line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Combined Analysis Report"):
            for tail in lines[i:]:
                parts = tail.split()
                if parts and all(_is_float(p) for p in parts) and len(parts) > 4:
                    values = [float(p) for p in parts]
                    return max(values[:-2]) if len(values) > 2 else max(values)
    return None


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


if __name__ == "__main__":
    main()
