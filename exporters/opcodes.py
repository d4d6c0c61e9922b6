"""LLVM opcode names of our forms, from llvm-mc (one batch call per ISA), cached.

Each form is instantiated once (`pmpredict.isa.examples.example_instance`: Intel
syntax on x86) and the whole list goes through one `llvm-mc -show-inst` run;
the `<MCInst #N OPCODE ...>` comment after each instruction names its opcode,
and the printed instruction is kept too (AT&T on x86: what OSACA and llvm-mca
read). A form that llvm-mc rejects stays unresolved with llvm-mc's message:
it is listed in the export, never guessed.

Lookups go: the table shipped with pmpredict (data/opcodes.json, the 310 x86 +
390 AArch64 forms of the PMEvo artifact and the x86 host form list of
pmpredict/measure, made with llvm-mc 19), then the user
cache ($XDG_CACHE_HOME/pmpredict/opcodes.json), then llvm-mc for the rest (the
results, failures included, go to the user cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.formats.files import write_atomic
from pmpredict.isa.osaca_forms import is_foreign
from pmpredict.isa.forms import parse_form
from pmpredict.isa.examples import example_instance

SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "opcodes.json")
_LLVM_MC_CANDIDATES = ("llvm-mc-19", "llvm-mc", "llvm-mc-20", "llvm-mc-18", "llvm-mc-17")
# the PMEvo artifact's form lists the shipped table covers: folder -> ISA
_ARTIFACT_FOLDERS = {"SKL": "x86", "A72": "aarch64"}
_LABEL = re.compile(r"^pmpredict_form_(\d+):")
_MCINST = re.compile(r"<MCInst #\d+ (\w+)")
_DIAG = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$")


@dataclass(frozen=True)
class Resolution:
    opcode: str | None           # None: unresolved
    asm: str | None = None       # the instruction as llvm-mc printed it (AT&T on x86)
    error: str | None = None     # why it is unresolved

    def to_json(self) -> dict:
        return {k: v for k, v in (("opcode", self.opcode), ("asm", self.asm), ("error", self.error))
                if v is not None}

    @classmethod
    def from_json(cls, d: dict) -> "Resolution":
        return cls(d.get("opcode"), d.get("asm"), d.get("error"))


def find_llvm_mc() -> str | None:
    override = os.environ.get("PMPREDICT_LLVM_MC")
    if override:
        return override
    for name in _LLVM_MC_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def user_cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pmpredict", "opcodes.json")


def _read_table(path) -> dict:
    try:
        with open(path, encoding="utf8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_table(path, table: dict) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, json.dumps(table, indent=1, sort_keys=True), "opcode cache")
    except (OSError, InputError):
        pass                          # a cache that cannot be written is only slower


def instance_of(form: str, isa: str) -> str:
    """The instruction llvm-mc is asked about (raises ValueError if the form has none)."""
    if is_foreign(form):
        raise ValueError("a form imported from a foreign OSACA file has no concrete instance")
    return example_instance(parse_form(form, isa))


def parse_show_inst(stdout: str, stderr: str, lines: dict[int, int]) -> dict[int, Resolution]:
    """Map llvm-mc output back to form numbers (labels pmpredict_form_<i> separate the forms).

    `lines` maps an input line number to the form number on it (for error messages).
    """
    out: dict[int, Resolution] = {}
    current, asm = None, None
    for line in stdout.splitlines():
        m = _LABEL.match(line.strip())
        if m:
            current, asm = int(m.group(1)), None
            continue
        if current is None:
            continue
        m = _MCINST.search(line)
        if m and current not in out:
            text = line.split("<MCInst", 1)[0].rstrip().rstrip("#/").strip()
            out[current] = Resolution(m.group(1), " ".join(text.split()) or asm)
    for line in stderr.splitlines():
        m = _DIAG.match(line)
        if m and int(m.group(1)) in lines:
            i = lines[int(m.group(1))]
            out.setdefault(i, Resolution(None, None, f"llvm-mc: {m.group(2)}"))
    return out


def run_llvm_mc(forms: list[str], isa: str, llvm_mc: str | None = None) -> dict[str, Resolution]:
    """Resolve `forms` with ONE llvm-mc process."""
    llvm_mc = llvm_mc or find_llvm_mc()
    result: dict[str, Resolution] = {}
    isa_semantics = semantics.get(isa)
    text, lines = list(isa_semantics.llvm_mc_prologue), {}     # the syntax of example instances
    for i, form in enumerate(forms):
        try:
            inst = instance_of(form, isa)
        except ValueError as why:
            result[form] = Resolution(None, None, str(why))
            continue
        text.append(f"pmpredict_form_{i}:")
        text.append(inst)
        lines[len(text)] = i
    if llvm_mc is None:
        for form in forms:
            result.setdefault(form, Resolution(None, None, "llvm-mc not found (install llvm-19)"))
        return result
    proc = subprocess.run([llvm_mc, *isa_semantics.llvm_mc_args], input="\n".join(text) + "\n",
                          capture_output=True, text=True, timeout=120)
    parsed = parse_show_inst(proc.stdout, proc.stderr, lines)
    for i, form in enumerate(forms):
        if form in result:
            continue
        result[form] = parsed.get(i) or Resolution(None, None, "llvm-mc printed no MCInst")
    return result


def resolve_opcodes(forms, isa: str, use_llvm_mc: bool = True,
                    cache_path: str | None = None) -> dict[str, Resolution]:
    """Opcode of every form: shipped table, user cache, then one llvm-mc batch for the rest."""
    forms = list(forms)
    shipped = _read_table(SHIPPED).get(isa, {})
    cache_path = cache_path or user_cache_path()
    cache = _read_table(cache_path)
    cached = cache.get(isa, {})
    out: dict[str, Resolution] = {}
    missing = []
    for form in forms:
        entry = shipped.get(form) or cached.get(form)
        if entry is not None:
            out[form] = Resolution.from_json(entry)
        else:
            missing.append(form)
    if missing and use_llvm_mc:
        fresh = run_llvm_mc(missing, isa)
        out.update(fresh)
        if find_llvm_mc() is not None:
            cache.setdefault(isa, {}).update({f: r.to_json() for f, r in fresh.items()})
            _write_table(cache_path, cache)
    for form in missing:
        out.setdefault(form, Resolution(None, None, "not in the opcode table (llvm-mc not run)"))
    return out


def build_table(forms_by_isa: dict[str, list[str]]) -> dict:
    """The shipped table: {"llvm_mc": version, isa: {form: resolution}} (see tools in docs)."""
    llvm_mc = find_llvm_mc()
    version = ""
    if llvm_mc:
        proc = subprocess.run([llvm_mc, "--version"], capture_output=True, text=True)
        m = re.search(r"LLVM version ([\w.]+)", proc.stdout)
        version = m.group(1) if m else ""
    table = {"llvm_mc": version}
    for isa, forms in forms_by_isa.items():
        table[isa] = {f: r.to_json() for f, r in run_llvm_mc(list(forms), isa, llvm_mc).items()}
    return table


def _host_forms() -> tuple[str | None, list[str]]:
    """(ISA, forms) of the host form list of `pmpredict infer --measure`, when installed."""
    try:
        # deferred: pmpredict.measure loads numpy and the harness; only main() reads its list
        from pmpredict import measure
        from pmpredict.measure.instantiate import HARNESS_ISA
    except ImportError:
        return None, []
    path = os.path.join(os.path.dirname(measure.__file__), "forms_host.txt")
    try:
        with open(path, encoding="utf8") as f:
            return HARNESS_ISA, [line.split()[0] for line in f
                                 if line.strip() and not line.startswith("#")]
    except OSError:
        return None, []


def main(argv=None) -> int:
    """Regenerate the shipped table: python3 -m pmpredict.exporters.opcodes ARTIFACT_DIR."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m pmpredict.exporters.opcodes PATH/TO/pmevo-artifact", file=sys.stderr)
        return 2
    forms = {}
    for folder, isa in _ARTIFACT_FOLDERS.items():
        with open(os.path.join(args[0], folder, "mapping_pmevo.json"), encoding="utf8") as f:
            forms[isa] = json.load(f)["arch"]["insns"]
    host_isa, host = _host_forms()
    if host_isa is not None:
        forms[host_isa] = list(dict.fromkeys(forms.get(host_isa, []) + host))
    table = build_table(forms)
    _write_table(SHIPPED, table)
    for isa in forms:
        ok = sum(1 for r in table[isa].values() if "opcode" in r)
        print(f"{isa}: {ok}/{len(table[isa])} forms resolved (llvm-mc {table['llvm_mc']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
