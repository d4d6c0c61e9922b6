"""Speed of the assembly front end and `pmpredict predict`, side by side with OSACA and llvm-mca.

    python3 benchmarks/bench_predict.py [--repeat N] [--skip-osaca]

Measured in one run on the same kernels (the innermost loops of examples/*.s, marked
with OSACA and LLVM-MCA comment markers in a temporary copy):
  * pmpredict CLI per kernel (a fresh `python3 -m pmpredict predict` process),
  * pmpredict in-process per kernel (parse the file + select the kernel + match + predict;
    model loaded once),
  * the OSACA CLI (`osaca --arch SKX`, `--arch A72` for AArch64) and `llvm-mca-19`
    (`-mcpu=skylake` / `-mcpu=cortex-a72`) per kernel (subprocess wall time),
  * kernels per second in-process for a batch (every innermost loop of a ~1,000-line
    gcc -O3 file plus the examples, files parsed once),
  * the parse time of that ~1,000-line gcc output file (AT&T, Intel) and of aarch64-gcc output.
Medians over --repeat runs. Models: the built-in skl/a72 if installed, else the PMEvo
artifact mappings from ../shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from pmpredict.asm.kernel import find_loops, innermost, select_kernel  # noqa: E402
from pmpredict.asm.parse import Instruction, Label, parse_file  # noqa: E402
from pmpredict.data.model_files import load_model  # noqa: E402
from pmpredict.models import builtin_path  # noqa: E402
from pmpredict.predict import Predictor  # noqa: E402

ARTIFACT = os.path.join(ROOT, "..", "shared", "data", "pmevo-artifact")
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-osaca", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_predict_")
    models = {"x86": model_spec("skl", "SKL"), "aarch64": model_spec("a72", "A72")}
    predictors = {isa: Predictor(load_model(spec)) for isa, spec in models.items()}
    osaca = shutil.which("osaca") if not args.skip_osaca else None
    mca = shutil.which("llvm-mca-19")
    print(f"# bench_predict  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared machine)")
    print(f"# models: x86 {models['x86']}, aarch64 {models['aarch64']}; repeat {args.repeat}")

    # warm up: grammar construction, numba JIT cache load, scipy import
    for isa, p in predictors.items():
        src = os.path.join(ROOT, "examples", "triad_neon.s" if isa == "aarch64" else "triad_avx.s")
        prog = parse_file(src)
        p.predict(select_kernel(prog), prog.syntax, src)

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
            from pmpredict.asm.kernel import Kernel
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
    shutil.rmtree(tmp, ignore_errors=True)


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
