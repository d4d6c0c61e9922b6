"""Real compiler output: gcc and clang (AT&T and Intel), aarch64-linux-gnu-gcc, at -O3.

Each test compiles during the run (into tmp_path) and skips when the compiler is absent.
The whole file must parse; AT&T and Intel output of the same source must give the same
form keys, forms and prediction; loops and IACA-style byte markers must be found.
"""

import os
import shutil
import subprocess

import pytest

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.normalize import normalize
from pmpredict.asm.parse import parse_file
from pmpredict.formats.model_files import load_model
from pmpredict.predict.predictor import Predictor

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")

# several functions, a jump table, strings with escapes, TLS, globals, FP constants
X86_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
__thread int tls_counter;
int table[64];
void mix(int32_t *restrict a, const int32_t *restrict b, const int32_t *restrict c, long n) {
    for (long i = 0; i < n; i++) a[i] = (b[i] + c[i]) ^ (b[i] << 3);
}
double dot(const double *a, const double *b, long n) {
    double s = 0; for (long i = 0; i < n; i++) s += a[i] * b[i] * 0.5; return s;
}
int sw(int x, int *p) {
    switch (x) { case 0: return p[3]; case 1: return p[5] + 1; case 2: return p[7] * 3;
                 case 3: return 9; case 4: return p[1] << 3; case 5: return table[x]; default: return 0; }
}
int bump(int i) { return ++tls_counter + table[i & 63]; }
int main(int argc, char **argv) { printf("a \"quoted\"\t#not-a-comment; %d\n", bump(argc)); return sw(argc, table); }
"""

MARKED_X86 = r"""
void scale(float *restrict a, const float *restrict b, long n) {
    for (long i = 0; i < n; i++) {
        __asm__ volatile("movl $111, %%ebx\n\t.byte 100,103,144" ::: "ebx");
        a[i] = b[i] * 3.0f + 1.0f;
    }
    __asm__ volatile("movl $222, %%ebx\n\t.byte 100,103,144" ::: "ebx");
}
"""

A64_SOURCE = r"""
#include <stdio.h>
void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, long n) {
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
long gather(const long *a, const int *idx, long n) {
    long s = 0; for (long i = 0; i < n; i++) s += a[idx[i]] << 2; return s;
}
int main(void) { printf("%s\n", "x\\y"); return 0; }
"""

MARKED_A64 = r"""
void scale(float *restrict a, const float *restrict b, long n) {
    for (long i = 0; i < n; i++) {
        __asm__ volatile("mov x1, #111\n\t.byte 213,3,32,31" ::: "x1");
        a[i] = b[i] * 3.0f;
    }
    __asm__ volatile("mov x1, #222\n\t.byte 213,3,32,31" ::: "x1");
}
"""


def compile_c(tmp_path, compiler, source, name, *flags):
    exe = shutil.which(compiler)
    if exe is None:
        pytest.skip(f"{compiler} is not installed (the CI installs it)")
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.s"
    subprocess.run([exe, "-O3", "-S", *flags, "-o", str(out), str(src)], check=True,
                   capture_output=True, timeout=120)
    return str(out)


@pytest.fixture(scope="module")
def skl():
    from conftest import artifact
    return Predictor(load_model(artifact("SKL", "mapping_pmevo.json")))


@pytest.fixture(scope="module")
def a72():
    from conftest import artifact
    return Predictor(load_model(artifact("A72", "mapping_pmevo.json")))


def forms_and_prediction(predictor, path):
    program = parse_file(path)
    kernel = select_kernel(program)
    report = predictor.predict(kernel, program.syntax, path)
    return program, kernel, report


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_att_and_intel_output_agree(tmp_path, compiler, skl):
    att = compile_c(tmp_path, compiler, X86_SOURCE, "att", "-mavx2")
    intel = compile_c(tmp_path, compiler, X86_SOURCE, "intel", "-mavx2", "-masm=intel")
    pa, pi = parse_file(att), parse_file(intel)
    assert (pa.syntax, pi.syntax) == ("att", "intel")
    ia, ii = pa.instructions, pi.instructions
    assert len(ia) == len(ii) > 50
    diffs = [(a.text, b.text) for a, b in zip(ia, ii)
             if normalize(a, "att") != normalize(b, "intel")]
    assert not diffs, diffs[:5]
    _, ka, ra = forms_and_prediction(skl, att)
    _, ki, ri = forms_and_prediction(skl, intel)
    assert ka.how == ki.how == "loop"
    assert [r.form for r in ra.rows] == [r.form for r in ri.rows]
    assert ra.cycles == pytest.approx(ri.cycles) and ra.bottleneck == ri.bottleneck
    assert ra.matched >= len(ra.rows) - 3               # compare + branch (+ one more) unmatched
    assert any("vpaddd" in r.text for r in ra.rows)


CXX_SOURCE = r"""
#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <vector>
std::atomic<long> counter;
template <class T> struct Acc { T s{}; void add(T x) { s += x; } };
double f(const std::vector<double> &v) { Acc<double> a; for (auto x : v) a.add(std::sqrt(x) * 1.5); return a.s; }
std::map<int, std::string> h() { std::map<int, std::string> m; m[1] = "one"; m[2] = "tw\"o"; return m; }
long inc() { return counter.fetch_add(1) + __builtin_popcountl(counter.load()); }
long double ld(long double x) { return x * x + 1.0L; }
"""


@pytest.mark.parametrize("compiler,source,flags", [
    ("g++", CXX_SOURCE, ["-O2", "-g", "-fPIC", "-x", "c++"]),
    ("gcc", X86_SOURCE, ["-O0", "-g"]),
    ("clang", X86_SOURCE, ["-O2", "-g", "-mavx512f"]),
])
def test_debug_info_cxx_and_unoptimised_output(tmp_path, compiler, source, flags):
    """Whole files with DWARF directives, C++ comdat sections, x87, atomics: parse completely,
    and AT&T and Intel give the same keys."""
    att = compile_c(tmp_path, compiler, source, "att", *flags)
    intel = compile_c(tmp_path, compiler, source, "intel", *flags, "-masm=intel")
    pa, pi = parse_file(att), parse_file(intel)
    assert len(pa.lines) > 300 and len(pa.instructions) == len(pi.instructions) > 20
    diffs = [(a.text, b.text) for a, b in zip(pa.instructions, pi.instructions)
             if normalize(a, "att") != normalize(b, "intel")]
    assert not diffs, diffs[:5]


def test_aarch64_debug_output_parses(tmp_path):
    path = compile_c(tmp_path, "aarch64-linux-gnu-gcc", A64_SOURCE, "a64g", "-g")
    program = parse_file(path)
    assert program.syntax == "aarch64" and len(program.instructions) > 20


def test_gcc_iaca_byte_markers(tmp_path, skl):
    path = compile_c(tmp_path, "gcc", MARKED_X86, "marked", "-mavx2")
    _, kernel, report = forms_and_prediction(skl, path)
    assert kernel.how == "iaca-markers"
    mnemonics = [i.mnemonic for i in kernel.instructions]
    assert "movl" not in mnemonics[:1] and any(m.startswith("vmulps") or m.startswith("vfmadd")
                                               or m.startswith("mulss") or m.startswith("vmulss")
                                               for m in mnemonics)
    assert report.cycles is not None


def test_aarch64_gcc_output(tmp_path, a72):
    path = compile_c(tmp_path, "aarch64-linux-gnu-gcc", A64_SOURCE, "a64")
    program, kernel, report = forms_and_prediction(a72, path)
    assert program.syntax == "aarch64"
    assert kernel.how == "loop"
    texts = [r.text for r in report.rows]
    assert any(t.startswith("fmla") for t in texts) and texts[-1].startswith(("bne", "b.ne"))
    assert report.matched == len(report.rows) - 1        # only the branch is outside the model
    assert report.cycles > 0


def test_aarch64_byte_markers(tmp_path, a72):
    path = compile_c(tmp_path, "aarch64-linux-gnu-gcc", MARKED_A64, "marked")
    _, kernel, report = forms_and_prediction(a72, path)
    assert kernel.how == "byte-markers"
    assert any(i.mnemonic == "fmul" for i in kernel.instructions)


def test_examples_predict(skl, a72):
    results = {}
    for name in sorted(os.listdir(EXAMPLES)):
        if not name.endswith(".s"):
            continue
        path = os.path.join(EXAMPLES, name)
        program = parse_file(path)
        predictor = a72 if program.isa == "aarch64" else skl
        _, kernel, report = forms_and_prediction(predictor, path)
        assert kernel.how == "loop", name
        results[name] = report
        if name == "dot_avx2.s":           # the in-order sum: PMEvo's forms lack vaddsd
            continue
        assert report.matched / len(report.rows) >= 0.6, name
    assert {"mix_avx2.s", "mix_avx2_intel.s", "triad_avx.s", "triad_neon.s",
            "dot_avx2.s"} <= set(results)
    # whatever the model knows, the in-order sum is one chain of four vaddsd through xmm0
    chain = results["dot_avx2.s"].chains[0]
    rows = results["dot_avx2.s"].rows
    assert [rows[i].text.split()[0] for i in chain.nodes] == ["vaddsd"] * 4
    a, b = results["mix_avx2.s"], results["mix_avx2_intel.s"]
    assert [r.form for r in a.rows] == [r.form for r in b.rows] and a.cycles == b.cycles
