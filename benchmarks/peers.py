"""The peer tools (llvm-mca-19, OSACA 0.7.1) on one kernel, and the identity of this host.

    python3 benchmarks/peers.py KERNEL.s [--mcpu CPU] [--osaca CODE|FILE.yml]   # a quick look

Used by bench_deps.py and bench_realcode.py. A kernel is a list of assembly lines (AT&T, as
the compiler wrote them: labels and directives may be among them); each tool gets it in the
form it needs, written into a temporary directory:
  * llvm-mca: between `# LLVM-MCA-BEGIN kernel` / `# LLVM-MCA-END kernel`, simulated for
    ITERATIONS iterations; cycles per iteration = Total Cycles / Iterations, and its Block
    RThroughput (the port-pressure bound it prints);
  * OSACA: between `# OSACA-BEGIN` / `# OSACA-END`, analysed through its Python API the way
    `osaca --arch CODE` analyses it (optimal port balancing, dependency graph): TP (the
    largest port-pressure sum), LCD (longest loop-carried chain), CP (critical path) and
    OSACA's own prediction max(TP, LCD). Like its command line, OSACA gives no prediction
    when an instruction is missing from the machine file (it would count as 0 cycles); the
    partial TP/LCD/CP are kept for reference.
Every function returns a dict; a tool that is missing, fails or times out gives
`"cycles": None` and an `"error"` saying why, never an exception.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings

LLVM_MCA = "llvm-mca-19"
ITERATIONS = 1000         # warm-up and drain add a few cycles in total: < 0.01 cycle per iteration
TIMEOUT = 60              # seconds, for every subprocess and every OSACA analysis


# --- the host -----------------------------------------------------------------------------

def host_identity() -> dict:
    """Vendor, family, model, stepping and model name of this CPU (from /proc/cpuinfo)."""
    info = {"vendor": None, "family": None, "model": None, "stepping": None, "name": None,
            "implementer": None, "part": None}
    keys = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "stepping": "stepping",
            "model name": "name", "CPU implementer": "implementer", "CPU part": "part"}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    break                                  # the first processor is enough
                key, _, value = line.partition(":")
                field = keys.get(key.strip())
                if field:
                    info[field] = value.strip()
    except OSError:
        pass
    for field in ("family", "model", "stepping", "implementer", "part"):
        if info[field] is not None:
            with contextlib.suppress(ValueError):
                info[field] = int(info[field], 0)
    return info


def host_label(ident: dict | None = None) -> str:
    ident = ident or host_identity()
    if ident["family"] is not None:
        return (f"{ident['name']} ({ident['vendor']} family {ident['family']:#x} model "
                f"{ident['model']:#x} stepping {ident['stepping']})")
    return str(ident["name"] or "unknown CPU")


# Closest OSACA machine file per core. x86: (vendor, family, models) -> code. Models from
# the vendors' family/model tables; a core OSACA lacks maps to its nearest relative.
_X86_CORES = [
    ("AuthenticAMD", 0x17, range(0x00, 0x30), "ZEN1", "Zen / Zen+"),
    ("AuthenticAMD", 0x17, range(0x30, 0x100), "ZEN2", "Zen 2"),
    ("AuthenticAMD", 0x19, range(0x00, 0x10), "ZEN3", "Zen 3"),
    ("AuthenticAMD", 0x19, range(0x10, 0x20), "ZEN4", "Zen 4"),
    ("AuthenticAMD", 0x19, range(0x20, 0x60), "ZEN3", "Zen 3 / 3+"),
    ("AuthenticAMD", 0x19, range(0x60, 0x80), "ZEN4", "Zen 4"),
    ("AuthenticAMD", 0x19, range(0xa0, 0xb0), "ZEN4", "Zen 4c"),
    ("AuthenticAMD", 0x1a, range(0x00, 0x100), "ZEN4", "Zen 5 (OSACA has no Zen 5: Zen 4)"),
    ("GenuineIntel", 6, (0x2a, 0x2d), "SNB", "Sandy Bridge"),
    ("GenuineIntel", 6, (0x3a, 0x3e), "IVB", "Ivy Bridge"),
    ("GenuineIntel", 6, (0x3c, 0x3f, 0x45, 0x46), "HSW", "Haswell"),
    ("GenuineIntel", 6, (0x3d, 0x47, 0x4f, 0x56), "BDW", "Broadwell"),
    ("GenuineIntel", 6, (0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6), "SKX",
     "Skylake client family (OSACA has no client Skylake: Skylake-SP)"),
    ("GenuineIntel", 6, (0x7d, 0x7e, 0x8c, 0x8d, 0xa7), "ICL", "Ice Lake / Tiger Lake / Rocket Lake"),
    ("GenuineIntel", 6, (0x6a, 0x6c), "ICX", "Ice Lake-SP"),
    ("GenuineIntel", 6, (0x8f, 0xcf), "SPR", "Sapphire / Emerald Rapids"),
    ("GenuineIntel", 6, (0x97, 0x9a, 0xb7, 0xba, 0xbf), "SPR",
     "Alder / Raptor Lake (Golden Cove P-cores: Sapphire Rapids)"),
]
_ARM_CORES = [  # (implementer, part) -> code
    (0x41, 0xd08, "A72", "Cortex-A72"), (0x41, 0xd0c, "N1", "Neoverse N1"),
    (0x41, 0xd4f, "V2", "Neoverse V2"), (0x43, 0x0af, "TX2", "ThunderX2"),
    (0x46, 0x001, "A64FX", "A64FX"), (0x48, 0xd01, "TSV110", "TaiShan v110"),
    (0x61, None, "M1", "Apple silicon"),
]


def osaca_data_dir() -> str | None:
    with contextlib.suppress(ImportError):
        import osaca
        return os.path.join(os.path.dirname(osaca.__file__), "data")
    return None


def osaca_machine(ident: dict | None = None) -> dict:
    """The OSACA machine file closest to this host: {"code", "path", "why"} (path None if absent)."""
    ident = ident or host_identity()
    code, why = None, None
    if ident["vendor"] == "GenuineIntel" and ident["family"] == 6 and ident["model"] == 0x55:
        # Skylake-SP and Cascade Lake share a model number; Cascade Lake is stepping 5 and up
        code, why = ("CSX", "Cascade Lake") if (ident["stepping"] or 0) >= 5 else ("SKX", "Skylake-SP")
    for vendor, family, models, c, what in _X86_CORES:
        if code is None and ident["vendor"] == vendor and ident["family"] == family \
                and ident["model"] in models:
            code, why = c, what
    for implementer, part, c, what in _ARM_CORES:
        if code is None and ident["implementer"] == implementer and part in (None, ident["part"]):
            code, why = c, what
    if code is None:
        if ident["vendor"] == "AuthenticAMD":
            newer = (ident["family"] or 0) > 0x19
            code, why = ("ZEN4", "unknown newer AMD core: fallback to the newest Zen") if newer \
                else ("ZEN1", "unknown older AMD core: fallback to Zen 1")
        elif ident["vendor"] == "GenuineIntel":
            code, why = "SKX", "unknown Intel core: fallback to Skylake-SP"
        elif ident["implementer"] is not None:
            code, why = "N1", "unknown Arm core: fallback to Neoverse N1"
        else:
            code, why = "SKX", "unknown CPU: fallback to Skylake-SP"
    data = osaca_data_dir()
    path = os.path.join(data, code.lower() + ".yml") if data else None
    return {"code": code, "path": path if path and os.path.exists(path) else None, "why": why}


# --- llvm-mca -----------------------------------------------------------------------------

def llvm_mca_host_cpu() -> str | None:
    """The CPU that `-mcpu=native` means to llvm-mca (its --version names it)."""
    if not shutil.which(LLVM_MCA):
        return None
    try:
        out = subprocess.run([LLVM_MCA, "--version"], capture_output=True, text=True,
                             timeout=TIMEOUT).stdout
    except (subprocess.TimeoutExpired, OSError):
        return None
    m = re.search(r"Host CPU:\s*(\S+)", out)
    return m.group(1) if m else None


def llvm_mca(lines: list[str], mcpu: str = "native", iterations: int = ITERATIONS) -> dict:
    """{"cycles": Total Cycles / Iterations, "block_rthroughput", "total_cycles", ...}."""
    result = {"tool": f"{LLVM_MCA} -mcpu={mcpu}", "cycles": None, "block_rthroughput": None}
    if not shutil.which(LLVM_MCA):
        return {**result, "error": f"{LLVM_MCA} not found"}
    text = "# LLVM-MCA-BEGIN kernel\n" + "\n".join(lines) + "\n# LLVM-MCA-END kernel\n"
    with tempfile.TemporaryDirectory(prefix="peers-mca-") as tmp:
        path = os.path.join(tmp, "kernel.s")
        with open(path, "w") as fh:
            fh.write(text)
        try:
            out = subprocess.run([LLVM_MCA, f"-mcpu={mcpu}", f"-iterations={iterations}",
                                  "-summary-view", "-instruction-info=false",
                                  "-resource-pressure=false", path],
                                 capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return {**result, "error": f"timeout after {TIMEOUT} s"}
    if out.returncode != 0:
        first = next((ln for ln in out.stderr.splitlines() if "error" in ln), out.stderr.strip())
        return {**result, "error": "llvm-mca failed: " + first.replace(path, "kernel.s")[:200]}
    fields = {}
    for key, pattern in (("iterations", r"Iterations:\s+(\d+)"),
                         ("instructions", r"Instructions:\s+(\d+)"),
                         ("total_cycles", r"Total Cycles:\s+(\d+)"),
                         ("block_rthroughput", r"Block RThroughput:\s+([\d.]+)")):
        m = re.search(pattern, out.stdout)
        fields[key] = float(m.group(1)) if m else None
    if not fields["iterations"] or fields["total_cycles"] is None:
        return {**result, "error": "no summary in llvm-mca's output"}
    cycles = fields["total_cycles"] / fields["iterations"]
    return {**result, **fields, "cycles": cycles, "error": None}


# --- OSACA --------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int):
    """SIGALRM-based limit for in-process work (only possible in the main thread)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_MACHINES: dict[str, object] = {}


def _machine_model(spec: str):
    """OSACA MachineModel for an arch code or a YAML path (loaded once per process)."""
    from osaca.semantics import MachineModel
    if spec not in _MACHINES:
        if spec.endswith((".yml", ".yaml")):
            _MACHINES[spec] = MachineModel(path_to_yaml=spec)
        else:
            _MACHINES[spec] = MachineModel(arch=spec.upper())
    return _MACHINES[spec]


def osaca(lines: list[str], machine: str | None = None) -> dict:
    """OSACA's TP, LCD, CP and prediction max(TP, LCD) for an AT&T x86 kernel.

    `machine` is an arch code (ZEN4, CSX, ...) or a machine-file path; default: the closest
    file for this host."""
    machine = machine or osaca_machine()["code"]
    name = os.path.basename(machine) if machine.endswith((".yml", ".yaml")) else machine.upper()
    result = {"tool": f"OSACA {name}", "cycles": None, "tp": None, "lcd": None, "cp": None,
              "unknown": None}
    try:
        from osaca.parser import ParserX86ATT
        from osaca.semantics import ArchSemantics, INSTR_FLAGS, KernelDG, reduce_to_section
    except ImportError as exc:
        return {**result, "error": f"OSACA not importable: {exc}"}
    text = "# OSACA-BEGIN\n" + "\n".join(lines) + "\n# OSACA-END\n"
    try:
        with warnings.catch_warnings(), _time_limit(TIMEOUT):
            warnings.simplefilter("ignore")
            mm = _machine_model(machine)
            parser = ParserX86ATT()
            kernel = reduce_to_section(parser.parse_file(text), parser)
            sem = ArchSemantics(parser, mm)
            sem.normalize_instruction_forms(kernel)
            sem.add_semantics(kernel)
            sem.assign_optimal_throughput(kernel)
            sem.assign_optimal_throughput(kernel)          # as `osaca` does (twice)
            dg = KernelDG(kernel, parser, mm, sem, TIMEOUT // 2, False)
            tp_sum = ArchSemantics.get_throughput_sum(kernel)
            tp = float(max(tp_sum)) if tp_sum else 0.0
            cp = float(sum(x.latency_cp for x in dg.get_critical_path()))
            deps = dg.get_loopcarried_dependencies()
            lcd = float(max((d["latency"] for d in deps.values()), default=0.0))
            unknown = [" ".join(x.line.split()) for x in kernel
                       if x.mnemonic is not None and INSTR_FLAGS.TP_UNKWN in x.flags]
            lcd_timed_out = bool(getattr(dg, "timed_out", False))
    except _Timeout:
        return {**result, "error": f"timeout after {TIMEOUT} s"}
    except Exception as exc:                       # an OSACA bug on this kernel
        return {**result, "error": f"OSACA raised {type(exc).__name__}: {str(exc)[:160]}"}
    result.update(tp=tp, lcd=lcd, cp=cp, unknown=unknown, lcd_timed_out=lcd_timed_out)
    if unknown:
        return {**result, "error": f"{len(unknown)} instruction(s) not in OSACA's {name} data "
                                   f"(first: {unknown[0]!r}); OSACA gives no prediction"}
    return {**result, "cycles": max(tp, lcd), "error": None}


# --- a quick look -------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel", metavar="KERNEL.s", help="the kernel's lines (AT&T)")
    ap.add_argument("--mcpu", default="native")
    ap.add_argument("--osaca", metavar="CODE|FILE.yml", help="OSACA machine (default: closest)")
    args = ap.parse_args(argv)
    with open(args.kernel) as fh:
        lines = fh.read().splitlines()
    ident = host_identity()
    machine = osaca_machine(ident)
    print(f"host: {host_label(ident)}; llvm-mca -mcpu=native = {llvm_mca_host_cpu()}; "
          f"closest OSACA file: {machine['code']} ({machine['why']}, {machine['path']})")
    print(llvm_mca(lines, args.mcpu))
    print(osaca(lines, args.osaca or machine["code"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
