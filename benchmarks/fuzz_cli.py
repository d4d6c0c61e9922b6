"""Fuzz every pmpredict subcommand with bad input and count what goes wrong.

Each case writes its input files into a fresh directory, runs `python -m pmpredict ...`
there in a subprocess with a timeout, and is judged:

  traceback   stderr contains "Traceback"               (a bug: user error never shows one)
  crash       killed by a signal (segfault...)
  hang        did not finish within the timeout
  accepted    an input known to be bad exited 0
  unlocated   exit 2 but not exactly one line `pmpredict: error: LOCATION: message`
  other-exit  an input known to be bad exited neither 0 nor 2
  nan-json    a --json output contains NaN or Infinity
  clobbered   a failing run changed an existing output file or left a temporary file
  refused     a good input (`valid`) did not exit 0

Targeted cases cover every class of issue #14 (deep nesting, non-UTF-8 text, JSON of the
wrong shape in every loader, NaN / infinite / absurd numbers, flags checked before work,
foreign ISAs, names no export can write); random cases replace one node of a valid
document by a random JSON value (`--random N` per document kind). The target is 0 in
every column but `ok`.

    python benchmarks/fuzz_cli.py [--random 40] [--seed 1] [--jobs 2] [--timeout 60] [-v]

tests/test_fuzz_cli.py runs a small sample of the same cases.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ERROR_LINE = re.compile(r"^pmpredict: error: \S.*: \S.*$")
SENTINEL = "previous output, must survive a failing run\n"

# --- valid inputs every case starts from -------------------------------------------------

ADD = "ADD_((REG:RW:G:64)),_((IMM:32))"
SUB = "SUB_((REG:RW:G:64)),_((IMM:8))"
LOAD = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
FORMS = [ADD, SUB, LOAD]
PORTS = ["0", "1", "2", "3"]


def native_model() -> dict:
    return {"format": "pmpredict-model", "version": 1, "name": "tiny", "isa": "x86",
            "ports": list(PORTS), "r_max": 4.0, "provenance": {"description": "fuzz"},
            "pipeline": {"window": 224, "load_latency": 5},
            "forms": {ADD: {"uops": [{"ports": ["0", "1"], "count": 1}], "latency": 1},
                      SUB: {"uops": [{"ports": ["0", "1"], "count": 1}], "latency": 1,
                            "latency_from": {"0": 1}},
                      LOAD: {"uops": [{"ports": ["2", "3"], "count": 1}], "latency": 5}}}


def mapping3() -> dict:
    return {"kind": "Mapping3", "arch": {"kind": "Architecture", "insns": list(FORMS),
                                         "ports": [0, 1, 2, 3]},
            "assignment": {ADD: [[0, 1]], SUB: [[0, 1]], LOAD: [[2, 3]]}}


def native_experiments() -> dict:
    return {"format": "pmpredict-experiments", "version": 1, "isa": "x86", "forms": list(FORMS),
            "experiments": [{"forms": {ADD: 1}, "cycles": 0.5}, {"forms": {SUB: 1}, "cycles": 0.5},
                            {"forms": {LOAD: 1}, "cycles": 0.5},
                            {"forms": {ADD: 1, SUB: 1}, "cycles": 1.0},
                            {"forms": {ADD: 2, LOAD: 1}, "cycles": 1.0}]}


def pmevo_experiments() -> dict:
    def exp(iseq, cycles):
        return {"kind": "Experiment", "iseq": iseq, "result": {"kind": "Result", "cycles": cycles},
                "other_results": [{"kind": "Result", "id": "IACA", "cycles": cycles}]}
    return {"kind": "ExperimentList",
            "arch": {"kind": "Architecture", "insns": list(FORMS), "ports": [0, 1, 2, 3]},
            "exps": [exp([ADD], 0.5), exp([SUB], 0.5), exp([LOAD], 0.5), exp([ADD, SUB], 1.0),
                     exp([ADD, ADD, LOAD], 1.0)]}


def osaca_model() -> dict:
    """A foreign OSACA machine file (as those shipped with OSACA)."""
    gpr = {"class": "register", "name": "gpr"}
    mem = {"class": "memory", "base": "gpr", "offset": "imd", "index": None, "scale": 1}
    return {"osaca_version": "0.7.1", "micro_architecture": "fuzz", "arch_code": "fuzz",
            "isa": "x86", "ROB_size": 224, "load_latency": {"gpr": 5},
            "ports": ["0", "1", "2", "3"],
            "instruction_forms": [
                {"name": "add", "operands": [{"class": "immediate", "imd": "int"}, gpr],
                 "latency": 1, "throughput": 0.5, "port_pressure": [[1, ["0", "1"]]]},
                {"name": ["sub", "subq"], "operands": [{"class": "immediate", "imd": "int"}, gpr],
                 "latency": 1, "throughput": 0.5, "port_pressure": [[1, "01"]]},
                {"name": "mov", "operands": [mem, gpr], "latency": 5, "throughput": 0.5,
                 "port_pressure": [[1, ["2", "3"]]]}]}


KERNEL = """\
\t.text
\t.globl f
f:
.L2:
\taddq\t$1000, %rax
\tsubq\t$1, %rbx
\tmovq\t8(%rsi), %rdx
\tjne\t.L2
\tret
"""

FORM_LIST = "# forms\n" + "\n".join(FORMS) + "\n"


def dump_json(data) -> str:
    return json.dumps(data, indent=1)          # allow_nan: NaN / Infinity literals on purpose


def dump_yaml(data) -> str:
    import yaml
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# --- cases ----------------------------------------------------------------------------

@dataclass
class Case:
    cls: str                         # the class of bad input (issue #14's list)
    argv: list[str]                  # pmpredict arguments; files are relative to the case dir
    files: dict = field(default_factory=dict)   # name -> str | bytes | "DIR" | "RODIR"
    bad: bool = True                 # known bad: must exit 2 with one located line
    outputs: tuple = ()              # files that exist before the run and must survive a failure
    stdin: bytes | None = None
    json_out: bool = False           # stdout is JSON when it succeeds
    valid: bool = False              # a good input: must exit 0

    @property
    def name(self) -> str:
        return f"{self.cls}: pmpredict {' '.join(a if len(a) < 40 else a[:37] + '...' for a in self.argv)}"


def model_users(model_file: str, files: dict, cls: str, bad: bool = True) -> list[Case]:
    """Every command that reads a model, on `model_file`."""
    def c(argv, **kw):
        return Case(cls, argv, dict(files), bad, **kw)
    return [
        c(["predict", "k.s", "--model", model_file, "--json"], json_out=True),
        c(["simulate", "--mapping", model_file, "-e", "e.json", "--json"], json_out=True),
        c(["evaluate", "--mapping", model_file, "-e", "e.json", "--json"], json_out=True),
        c(["export", model_file, "--format", "osaca", "-o", "out.yml"], outputs=("out.yml",)),
        c(["export", model_file, "--format", "llvm", "-o", "out.td"], outputs=("out.td",)),
        c(["align", model_file, "--reference", "m.json", "--json"], json_out=True),
        c(["models", model_file, "--forms", "--json"], json_out=True),
    ]


def experiment_users(exp_file: str, files: dict, cls: str, bad: bool = True,
                     measure: bool = False) -> list[Case]:
    """Every command that reads experiments, on `exp_file` (measure only where loading fails)."""
    def c(argv, **kw):
        return Case(cls, argv, dict(files), bad, **kw)
    out = [c(["simulate", "--mapping", "m.json", "-e", exp_file, "--json"], json_out=True),
           c(["evaluate", "--mapping", "m.json", "-e", exp_file, "--json"], json_out=True),
           c(["infer", "-e", exp_file, "--ports", "4", "-o", "out.json", "-q", "--time-limit", "20",
              "--max-sweeps", "2"], outputs=("out.json",))]
    if measure:
        out.append(c(["measure", "-e", exp_file, "-o", "out.json", "--no-cache", "--samples", "1"],
                     outputs=("out.json",)))
    return out


def base_files() -> dict:
    return {"m.json": dump_json(native_model()), "e.json": dump_json(native_experiments()),
            "k.s": KERNEL, "forms.txt": FORM_LIST}


def deep_cases() -> list[Case]:
    files = base_files()
    n = 100_000
    files["deep_list.json"] = "[" * n + "]" * n
    files["deep_obj.json"] = '{"a":' * n + "1" + "}" * n
    files["deep_key.json"] = dump_json(native_model())[:-1] + ', "provenance2": ' + "[" * n + "]" * n + "}"
    m = 50_000
    files["deep_flow.yml"] = "isa: x86\nports: " + "[" * m + "]" * m + "\n"
    files["deep_map.yml"] = "isa: x86\nports: " + "{a: " * m + "1" + "}" * m + "\n"
    files["deep_anchor.yml"] = "a: &a [" + "[" * m + "]" * m + "]\nb: *a\n"
    out = []
    for f in ("deep_list.json", "deep_obj.json", "deep_key.json", "deep_flow.yml", "deep_map.yml",
              "deep_anchor.yml"):
        cls = "deep-yaml" if f.endswith(".yml") else "deep-json"
        out += model_users(f, files, cls)
    for f in ("deep_list.json", "deep_obj.json"):
        out += experiment_users(f, files, "deep-json", measure=True)
    return out


def not_utf8_cases() -> list[Case]:
    files = base_files()
    latin = dump_json(native_model()).replace('"fuzz"', '"f\u00fczz"').encode("latin-1")
    files["latin.json"] = latin
    files["utf16.json"] = dump_json(native_model()).encode("utf-16")
    files["latin.yml"] = dump_yaml(osaca_model()).replace("fuzz", "f\u00fczz").encode("latin-1")
    files["latin_e.json"] = dump_json(native_experiments()).replace('"x86"', '"x86", "note": "\u00e9"').encode("latin-1")
    files["latin.s"] = KERNEL.replace("\tret", "\tret\t# r\u00e9sum\u00e9").encode("latin-1")
    files["latin_forms.txt"] = (FORM_LIST + "# caf\u00e9\n").encode("latin-1")
    out = model_users("latin.json", files, "not-utf8") + model_users("utf16.json", files, "not-utf8")
    out += model_users("latin.yml", files, "not-utf8")
    out += experiment_users("latin_e.json", files, "not-utf8", measure=True)
    out += [Case("not-utf8", ["predict", "latin.s"], files),
            Case("not-utf8", ["predict", "-", "--json"], files, stdin=files["latin.s"]),
            Case("not-utf8", ["measure", "latin.s", "--samples", "1"], files),
            Case("not-utf8", ["infer", "--measure", "--forms", "latin_forms.txt", "-o", "o.json"],
                 files, outputs=("o.json",)),
            Case("not-utf8", ["measure", "--training-set", "ts", "--forms", "latin_forms.txt",
                              "--no-cache"], files)]
    return out


def _with(doc: dict, path: list, value):
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def shape_cases() -> list[Case]:
    """The wrong shapes issue #14 found, in every loader."""
    out = []
    m3, pe, nm, ne, om = mapping3(), pmevo_experiments(), native_model(), native_experiments(), osaca_model()
    models = {
        "m3_insns_lists": _with(m3, ["arch", "insns"], [[ADD], [SUB]]),
        "m3_insns_number": _with(m3, ["arch", "insns"], 5),
        "m3_assignment_list": _with(m3, ["assignment"], [[0]]),
        "m3_uop_number": _with(m3, ["assignment", ADD], [5]),
        "m3_ports_nested": _with(m3, ["arch", "ports"], [[0], [1]]),
        "nm_provenance_list": _with(nm, ["provenance"], [1, 2]),
        "nm_provenance_string": _with(nm, ["provenance"], "text"),
        "nm_forms_list": _with(nm, ["forms"], [ADD]),
        "nm_uops_dict": _with(nm, ["forms", ADD, "uops"], {"ports": ["0"]}),
        "nm_ports_dicts": _with(nm, ["ports"], [{"a": 1}, {"b": 2}]),
        "nm_name_list": _with(nm, ["name"], ["tiny"]),
        "nm_isa_list": _with(nm, ["isa"], ["x86"]),
        "nm_pipeline_list": _with(nm, ["pipeline"], [1]),
        "nm_latency_from_list": _with(nm, ["forms", SUB, "latency_from"], [1]),
        "nm_uop_ports_nested": _with(nm, ["forms", ADD, "uops"], [{"ports": [["0"]], "count": 1}]),
        "nm_version_list": _with(nm, ["version"], [1]),
        "nm_bare_list": [nm],
        "nm_bare_string": "model",
    }
    files = base_files()
    for name, doc in models.items():
        files[name + ".json"] = dump_json(doc)
    for name in models:
        out += model_users(name + ".json", files, "shape")
    yml = {
        "om_name_number": _with(om, ["instruction_forms", 0, "name"], 5),
        "om_name_nested": _with(om, ["instruction_forms", 0, "name"], [["add"]]),
        "om_operands_strings": _with(om, ["instruction_forms", 0, "operands"], ["gpr"]),
        "om_pressure_dict": _with(om, ["instruction_forms", 0, "port_pressure"], {"a": 1}),
        "om_pressure_nested": _with(om, ["instruction_forms", 0, "port_pressure"], [[[1], ["0"]]]),
        "om_ports_nested": _with(om, ["ports"], [["0"], ["1"]]),
        "om_forms_dict": _with(om, ["instruction_forms"], {"add": 1}),
        "om_entry_list": _with(om, ["instruction_forms", 0], ["add"]),
        "om_isa_list": _with(om, ["isa"], ["x86"]),
        "om_load_latency_list": _with(om, ["load_latency"], [5]),
        "om_pmpredict_list": dict(om, pmpredict=[1]),
        "om_bare_list": [om],
    }
    lenient = {"om_pressure_nested", "om_pressure_dict", "om_pmpredict_list", "om_name_number",
               "om_name_nested", "om_load_latency_list"}     # entries left out, blocks ignored
    for name, doc in yml.items():
        files[name + ".yml"] = dump_yaml(doc)
    for name in yml:
        out += model_users(name + ".yml", files, "shape", bad=name not in lenient)
    exps = {
        "pe_result_list": _with(pe, ["exps", 0, "result"], [0.5]),
        "pe_result_number": _with(pe, ["exps", 0, "result"], 0.5),
        "pe_exps_number": _with(pe, ["exps"], 5),
        "pe_other_number": _with(pe, ["exps", 0, "other_results"], 5),
        "pe_other_id_number": _with(pe, ["exps", 0, "other_results", 0, "id"], 7),
        "pe_iseq_lists": _with(pe, ["exps", 0, "iseq"], [[ADD]]),
        "pe_insns_lists": _with(pe, ["arch", "insns"], [[ADD]]),
        "pe_exp_list": _with(pe, ["exps", 0], [ADD]),
        "ne_experiments_number": _with(ne, ["experiments"], 5),
        "ne_forms_lists": _with(ne, ["forms"], [[ADD], SUB, LOAD]),
        "ne_forms_number": _with(ne, ["forms"], 3),
        "ne_exp_forms_list": _with(ne, ["experiments", 0, "forms"], [ADD]),
        "ne_isa_number": _with(ne, ["isa"], 86),
        "ne_isa_mips": _with(ne, ["isa"], "mips"),
        "ne_cycles_string": _with(ne, ["experiments", 0, "cycles"], "0.5"),
        "ne_bare_list": [ne],
    }
    for name, doc in exps.items():
        files[name + ".json"] = dump_json(doc)
    for name in exps:
        out += experiment_users(name + ".json", files, "shape", measure=True)
    return out


def number_cases() -> list[Case]:
    """NaN, infinite, negative, zero and absurd numbers wherever a number is read."""
    out = []
    files = base_files()
    nm, ne, pe, om = native_model(), native_experiments(), pmevo_experiments(), osaca_model()
    bad_numbers = {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"), "neg": -1,
                   "huge": 1e308, "tiny": 1e-320, "big_int": 10 ** 40, "bool": True, "str": "1"}
    models = {}
    for tag, v in bad_numbers.items():
        models[f"rmax_{tag}"] = _with(nm, ["r_max"], v)
        models[f"latency_{tag}"] = _with(nm, ["forms", ADD, "latency"], v)
        models[f"latency_from_{tag}"] = _with(nm, ["forms", SUB, "latency_from", "0"], v)
        models[f"count_{tag}"] = _with(nm, ["forms", ADD, "uops", 0, "count"], v)
        models[f"window_{tag}"] = _with(nm, ["pipeline", "window"], v)
    models["rmax_zero"] = _with(nm, ["r_max"], 0)
    models["count_1e32"] = _with(nm, ["forms", ADD, "uops", 0, "count"], 10 ** 32)
    for name, doc in models.items():
        files[name + ".json"] = dump_json(doc)
        # 1e-320 is a latency of (almost) 0: valid
        ok = name in ("latency_tiny", "latency_from_tiny", "window_tiny")
        out += model_users(name + ".json", files, "numbers", bad=not ok)
    yml = {}
    for tag, v in bad_numbers.items():
        yml[f"pressure_{tag}"] = _with(om, ["instruction_forms", 0, "port_pressure"], [[v, ["0"]]])
        yml[f"ylatency_{tag}"] = _with(om, ["instruction_forms", 0, "latency"], v)
    yml["pressure_1e32"] = _with(om, ["instruction_forms", 0, "port_pressure"], [[1e32, ["0"]]])
    own_rmax = dict(om, pmpredict={"format": "pmpredict-osaca", "version": 1, "name": "x",
                                   "r_max": float("nan")})
    yml["own_rmax_nan"] = own_rmax
    for name, doc in yml.items():
        if name.startswith("ylatency_") and name not in ("ylatency_huge", "ylatency_big_int"):
            continue
        files[name + ".yml"] = dump_yaml(doc)
        # a foreign OSACA file's unusable entry or latency is left out and listed in the
        # model's provenance (OSACA's own files have such slips), not an error: only our own
        # export's `pmpredict` block is checked strictly
        out += model_users(name + ".yml", files, "numbers", bad=name == "own_rmax_nan")
    exps = {}
    for tag, v in bad_numbers.items():
        exps[f"cycles_{tag}"] = _with(ne, ["experiments", 0, "cycles"], v)
        exps[f"pcycles_{tag}"] = _with(pe, ["exps", 0, "result", "cycles"], v)
        exps[f"mult_{tag}"] = _with(ne, ["experiments", 3, "forms", ADD], v)
    exps["cycles_zero"] = _with(ne, ["experiments", 0, "cycles"], 0)
    exps["other_cycles_inf"] = _with(pe, ["exps", 0, "other_results", 0, "cycles"], float("inf"))
    exps["mult_1e9"] = _with(ne, ["experiments", 3, "forms", ADD], 10 ** 9)
    for name, doc in exps.items():
        files[name + ".json"] = dump_json(doc)
        out += experiment_users(name + ".json", files, "numbers")
    return out


def flag_cases(tmp_ro: bool = True) -> list[Case]:
    """Flags that are wrong on their own: checked before any work, nothing written."""
    files = base_files()
    files["ro"] = "RODIR"
    files["adir"] = "DIR"
    files["afile"] = "just a file\n"
    files["ckpt.npz"] = b"not a checkpoint"
    infer = ["infer", "-e", "e.json", "--ports", "4", "-q", "--max-sweeps", "2"]
    out = []

    def c(argv, **kw):
        return Case("flags", argv, dict(files), **kw)

    for flag, values in {"--r-max": ["0", "-1", "nan", "inf", "1e-320"], "--seed": ["-1"],
                         "--ports": ["0", "63"], "--time-limit": ["-1", "nan", "0"],
                         "--epsilon": ["nan", "-1", "inf"], "--volume-weight": ["nan", "-1", "inf"],
                         "--max-sweeps": ["-1"], "--population": ["1"], "--restarts": ["0"],
                         "--generations": ["-1"], "--distill": ["-1"],
                         "--distill-sweeps": ["0"]}.items():
        for v in values:
            out.append(c(infer + ["-o", "out.json", f"{flag}={v}"], outputs=("out.json",)))
    for target in ("missing/out.json", "ro/out.json", "adir", "afile/out.json"):
        out.append(c(infer + ["-o", target]))
        out.append(c(["export", "m.json", "--format", "osaca", "-o", target]))
        out.append(c(["export", "m.json", "--format", "llvm", "-o", target]))
        out.append(c(["measure", "-e", "e.json", "-o", target, "--no-cache"]))
    out.append(c(infer + ["-o", "out.json", "--checkpoint", "missing/ck"], outputs=("out.json",)))
    out.append(c(infer + ["-o", "out.json", "--checkpoint", "adir"], outputs=("out.json",)))
    out.append(c(infer + ["-o", "out.json", "--resume", "ckpt.npz"], outputs=("out.json",)))
    out.append(c(infer + ["-o", "out.json", "--resume", "missing.npz"], outputs=("out.json",)))
    out.append(c(infer + ["-o", "out.json", "--resume", "e.json"], outputs=("out.json",)))
    out.append(c(["infer", "-e", "e.json", "--forms", "forms.txt", "-o", "out.json"],
                 outputs=("out.json",)))
    out.append(c(["infer", "--measure", "--forms", "afile", "-o", "out.json"], outputs=("out.json",)))
    out.append(c(["infer", "--measure", "--forms", "missing.txt", "-o", "out.json"],
                 outputs=("out.json",)))
    out.append(c(["measure", "--training-set", "ts", "--forms", "afile", "--no-cache"]))
    out.append(c(["measure", "k.s", "--cache", "afile", "--samples", "1"]))
    out.append(c(["measure", "k.s", "--cache", "ro/sub", "--samples", "1"]))
    out.append(c(["measure", "-e", "e.json", "-o", "out.json", "--cache", "afile"],
                 outputs=("out.json",)))
    out.append(c(["measure", "k.s", "--samples", "0"]))
    for lines in ("100-200", "5-2", "abc", "0-3", "-3", "4-4000"):
        out.append(c(["predict", "k.s", "--lines", lines]))
        out.append(c(["predict", "k.s", "--lines", lines, "--json"]))
    out.append(c(["predict", "k.s", "--lines", "4-8", "--region", "x"]))
    out.append(c(["predict", "k.s", "--region", "nosuch"]))
    out.append(c(["predict", "missing.s"]))
    out.append(c(["predict", "adir"]))
    out.append(c(["predict", "k.s", "--model", "nosuch"]))
    out.append(c(["predict", "k.s", "--model", "adir"]))
    out.append(c(["predict", "k.s", "--isa", "aarch64"]))
    out.append(c(["evaluate", "--mapping", "m.json", "-e", "e.json", "--plot", "missing/p.png"]))
    out.append(c(["evaluate", "--mapping", "m.json", "-e", "e.json", "--plot", "adir"]))
    out.append(c(["simulate", "--mapping", "m.json", "-e", "missing.json"]))
    out.append(c(["simulate", "--mapping", "m.json", "-e", "adir"]))
    out.append(c(["export", "m.json", "--format", "osaca", "-o", "o.yml", "--name", "a\nb"],
                 outputs=("o.yml",)))
    out.append(c(["export", "m.json", "--format", "llvm", "-o", "o.td", "--name", ""],
                 outputs=("o.td",)))
    out.append(c(["models", "nosuch"]))
    out.append(c(["predict"]))
    out.append(c(["nosuchcommand"]))
    out.append(c(["infer", "-e", "e.json"]))
    return out


def isa_cases() -> list[Case]:
    files = base_files()
    files["mips.json"] = dump_json(_with(native_experiments(), ["isa"], "mips"))
    files["arm.json"] = dump_json(_with(native_experiments(), ["isa"], "aarch64"))
    files["mips_m.json"] = dump_json(_with(native_model(), ["isa"], "mips"))
    out = [Case("isa", ["infer", "-e", "mips.json", "--ports", "4", "-o", "out.json", "-q"], files,
                outputs=("out.json",)),
           Case("isa", ["infer", "-e", "arm.json", "--ports", "4", "-o", "out.json", "-q"], files,
                outputs=("out.json",)),
           Case("isa", ["simulate", "--mapping", "m.json", "-e", "mips.json"], files),
           Case("isa", ["simulate", "--mapping", "m.json", "-e", "arm.json"], files),
           Case("isa", ["evaluate", "--mapping", "m.json", "-e", "arm.json"], files),
           Case("isa", ["measure", "-e", "mips.json", "-o", "out.json"], files, outputs=("out.json",))]
    out += model_users("mips_m.json", files, "isa")
    return out


def export_cases() -> list[Case]:
    """Names no target format can carry: refused at load or export with one line."""
    files = base_files()
    nm, om = native_model(), osaca_model()
    docs = {}
    for tag, port in {"newline": "a\nb", "nul": "a\x00b", "tab": "a\tb", "empty": "",
                      "del": "a\x7fb"}.items():
        ports = list(PORTS)
        ports[0] = port
        doc = _with(nm, ["ports"], ports)
        doc["forms"][ADD]["uops"][0]["ports"] = [port, "1"]
        docs[f"port_{tag}"] = doc
    for tag, form in {"newline": ADD + "\nX", "nul": ADD + "\x00", "empty": ""}.items():
        doc = copy.deepcopy(nm)
        doc["forms"][form] = doc["forms"].pop(ADD)
        docs[f"form_{tag}"] = doc
    docs["name_newline"] = _with(nm, ["name"], "a\nb")
    for name, doc in docs.items():
        files[name + ".json"] = dump_json(doc)
    out = []
    for name in docs:
        out += model_users(name + ".json", files, "export-names")
    aliases = {"alias_space": ["sub", "sub q"], "alias_comma": ["sub,x"], "alias_empty": [""],
               "alias_newline": ["a\nb"], "alias_colon": ["a: b"]}
    for name, names in aliases.items():
        files[name + ".yml"] = dump_yaml(_with(om, ["instruction_forms", 1, "name"], names))
        out += [Case("export-names", ["export", name + ".yml", "--format", "osaca", "-o", "o.yml"],
                     dict(files), bad=False)]
    return out


ARM_KERNEL = "\t.text\n.L3:\n\tadd\tx0, x0, #1\n\tsubs\tx1, x1, #1\n\tb.ne\t.L3\n"
BRANCHES = "\t.text\n.L4:\n\tjmp\t.L4\n\tret\n"


def batch_cases() -> list[Case]:
    """predict with several files, standard input, --jsonl and --jobs."""
    files = base_files()
    files["junk.s"] = "\taddq\t%rax, %rbx, %rcx, %rdx\n\tfoo bar baz\n"
    files["arm.s"] = ARM_KERNEL
    files["empty.s"] = ""
    files["adir"] = "DIR"
    files["latin.s"] = KERNEL.replace("\tret", "\tret\t# r\u00e9sum\u00e9").encode("latin-1")
    predict = ["predict", "--model", "m.json"]

    def c(argv, bad=True, **kw):
        return Case("batch", argv, dict(files), bad, **kw)

    out = [c(predict + ["k.s", "junk.s"]), c(predict + ["k.s", "junk.s", "--jsonl"]),
           c(predict + ["k.s", "k.s", "junk.s", "--jobs", "2"]),
           c(predict + ["k.s", "arm.s", "--json"]), c(predict + ["k.s", "empty.s"]),
           c(predict + ["k.s", "adir"]), c(predict + ["k.s", "missing.s", "--jsonl"]),
           c(predict + ["k.s", "latin.s", "--jsonl"]),
           c(predict + ["-", "-"], stdin=KERNEL.encode()),
           c(predict + ["k.s", "-"], stdin=b"\tmovq (%rax, %rbx\n"),
           c(predict + ["-", "--json"], stdin=b"\xff\xfe\x00junk"),
           c(predict + ["-"], stdin=b""),
           c(predict + ["k.s", "--jobs", "0"]), c(predict + ["k.s", "--jobs", "-1"]),
           c(predict + ["k.s", "--jobs", "x"]), c(predict + ["k.s", "--jobs", "1000000"]),
           c(predict + ["k.s", "--json", "--jsonl"]),
           c(predict + ["k.s", "k.s", "--lines", "5-200"]),
           c(predict + ["k.s", "k.s", "--region", "nosuch", "--jsonl"]),
           c(predict + ["k.s", "k.s", "--strict", "--jsonl"]),
           # valid: must succeed (and JSON must be clean)
           c(predict + ["k.s", "k.s", "--json"], bad=False, valid=True, json_out=True),
           c(predict + ["k.s", "k.s", "k.s", "k.s", "k.s", "--jsonl", "--jobs", "2"], bad=False,
             valid=True),
           c(predict + ["-", "k.s", "--json"], bad=False, valid=True, json_out=True,
             stdin=KERNEL.encode())]
    return out


SIZE_LINES = ("\taddq\t$1000, %rax", "\tsubq\t$1, %rbx", "\tmovq\t8(%rsi), %rdx",
              "\timulq\t%rcx, %rdx", "\tleaq\t(%rdx,%rax,4), %rcx")


def sized(lines: int, loop: bool = True) -> str:
    """A valid file of `lines` instructions: one loop of them, or straight-line code."""
    body = "\n".join(SIZE_LINES[i % len(SIZE_LINES)] for i in range(lines)) + "\n"
    return (".L2:\n" + body + "\tjne\t.L2\n") if loop else body


def size_cases() -> list[Case]:
    """Sizes: 10^3 to 10^5 lines, as one loop or straight-line code, and 1 MB lines (valid
    instructions joined by ';', a comment, junk); each must end within the timeout, valid ones
    with exit 0, bad ones with one located line."""
    files = base_files()
    out = []
    for n in (1000, 10_000, 100_000):
        for loop in (True, False):
            name = f"{'loop' if loop else 'straight'}{n}.s"
            out.append(Case("size", ["predict", name, "--model", "m.json", "--jsonl"],
                            dict(files, **{name: sized(n, loop)}), bad=False, valid=True))
    out.append(Case("size", ["predict", "bad100000.s", "--model", "m.json"],
                    dict(files, **{"bad100000.s": sized(100_000) + "\tfrobnicate %rax, %%%\n"})))
    mb = 1 << 20
    joined = " ; ".join(SIZE_LINES[i % len(SIZE_LINES)].strip() for i in range(mb // 20))
    files_mb = dict(files, **{"joined.s": ".L2:\n\t" + joined[:mb] .rsplit(" ; ", 1)[0]
                              + "\n\tjne\t.L2\n",
                              "comment.s": KERNEL + "# " + "x" * mb + "\n",
                              "junk.s": KERNEL + "\t" + "(%rax" * (mb // 5) + "\n"})
    out += [Case("size", ["predict", "joined.s", "--model", "m.json", "--jsonl"], dict(files_mb),
                 bad=False, valid=True),
            Case("size", ["predict", "comment.s", "--model", "m.json", "--jsonl"], dict(files_mb),
                 bad=False, valid=True),
            Case("size", ["predict", "junk.s", "--model", "m.json"], dict(files_mb)),
            Case("size", ["measure", "junk.s", "--no-cache"], dict(files_mb))]
    return out


def impossible_lines() -> dict[str, str]:
    """Files whose one long line cannot be an instruction: too many operands (a 600 KB
    `addq` of 100,000, in each syntax), too long (1 MB of noise, of one word), no mnemonic."""
    rng = random.Random(14)
    mb = 1 << 20
    noise = "".join(rng.choices("abcxyz0123456789 ,+*[]()%$", k=mb))

    def operands(register):
        return ", ".join([register] * 100_000)
    return {"operands_att.s": f"\taddq\t{operands('%rax')}\n",
            "operands_intel.s": f".intel_syntax noprefix\n\tadd\t{operands('rax')}\n",
            "operands_masm.asm": f"; MASM\n\tadd\t{operands('rax')}\t; x\n",
            "operands_aarch64.s": f"\t.arch armv8-a\n\tadd\t{operands('x0')}\n",
            "operands_after_semicolon.s": KERNEL + f"\t.p2align 4 ; addq {operands('%rax')}\n",
            "noise.s": "z" + noise + "\n",
            "word.s": KERNEL + "\t" + "a" * mb + "\n",
            "expression.s": "\taddq\t$" + "+".join(["1"] * 300_000) + ", %rax\n",
            "no_mnemonic.s": KERNEL + operands("%rax") + "\n"}


def long_line_cases() -> list[Case]:
    """Lines that cannot be an instruction, refused with one located line before any costly
    parse (pmpredict/asm/parse.py's MAX_OPERANDS, MAX_INSTRUCTION_LENGTH): by `predict` (text,
    and --json --strict) and by `measure` before it measures anything."""
    lines = impossible_lines()
    files = dict(base_files(), **lines)
    out = []
    for name in lines:
        for argv in (["predict", name, "--model", "skl"], ["predict", name, "--json", "--strict"],
                     ["measure", name, "--no-cache"]):
            out.append(Case("long-line", argv, files))
    return out


def infer_measure_cases() -> list[Case]:
    """infer --measure's new inputs: --forms-from, --design, --no-latencies, --kernel-only,
    all refused before anything is measured."""
    files = base_files()
    files["junk.s"] = "\taddq\t%rax, %rbx, %rcx, %rdx\n"
    files["arm.s"] = ARM_KERNEL
    files["branches.s"] = BRANCHES
    files["empty.s"] = ""
    files["adir"] = "DIR"
    files["latin.s"] = KERNEL.replace("\tret", "\tret\t# r\u00e9sum\u00e9").encode("latin-1")
    m = ["infer", "--measure", "-o", "out.json", "-q"]

    def c(argv, **kw):
        return Case("infer-measure", argv, dict(files), outputs=("out.json",), **kw)

    out = [c(m + ["--forms-from", f]) for f in ("junk.s", "arm.s", "branches.s", "empty.s",
                                                  "adir", "latin.s", "missing.s")]
    # a form that does not assemble beside good ones is left out, named with its line
    out += [Case("infer-measure", m + ["--forms-from", "k.s", "junk.s", "--time-limit", "0.01"],
                 dict(files), bad=False),
            c(m + ["--forms-from", "k.s", "--forms", "forms.txt"]),
            c(m + ["--forms-from", "k.s", "--design", "nosuch"]),
            c(m + ["--forms-from", "k.s", "--syntax", "nosuch"]),
            c(m + ["--forms-from", "k.s", "--syntax", "intel"]),
            c(m + ["--forms-from", "k.s", "--r-max", "nan"]),
            c(m + ["--forms-from", "k.s", "--ports", "0"]),
            c(m + ["--forms-from", "k.s", "--resume", "e.json"]),
            c(m + ["--forms-from", "k.s", "--time-limit", "-1"]),
            c(m + ["--forms", "forms.txt", "--kernel-only"]),
            c(["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "-q", "--design", "pairs"]),
            c(["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "-q", "--no-latencies"]),
            c(["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "-q", "--kernel-only"]),
            c(["infer", "-e", "e.json", "--ports", "4", "-o", "out.json", "-q", "--syntax", "att"]),
            c(["measure", "k.s", "--time-limit", "nan"]),
            c(["measure", "-e", "e.json", "-o", "out.json", "--time-limit", "nan"]),
            c(["measure", "-e", "e.json", "-o", "out.json", "--samples", "-1"]),
            c(["measure", "k.s", "--lines", "junk"]),
            c(["measure", "k.s", "--lines", "4-8", "--region", "x"]),
            c(["measure", "--training-set", "ts", "--forms", "junk.s"]),
            c(["measure", "--training-set", "ts", "--forms", "forms.txt", "-e", "e.json"])]
    return out


def host_cache_path(cache_dir: str) -> str:
    from pmpredict.host.model import model_path
    return model_path(cache_dir)


def host_cache_cases() -> list[Case]:
    """A damaged model of this machine in the cache (`--model host`): one located line naming
    the file, never a traceback, and nothing measured."""
    nm = native_model()
    nm["name"] = "host"
    facts = {"cpu": "fuzz", "cpu_identity": "fuzz", "created": "2026-01-01T00:00:00",
             "bootstrap": {"how": "bootstrap", "forms": 3, "experiments": 5, "seconds": 1.0},
             "extensions": [], "left_out": {}}
    good = _with(nm, ["provenance"], {"description": "fuzz", "host": facts})
    damaged = {"junk": "not json at all", "bytes": b"\xff\xfe\x00\x01", "empty": "",
               "list": dump_json([good]),
               "facts_list": dump_json(_with(good, ["provenance", "host"], [1, 2])),
               "left_out_list": dump_json(_with(good, ["provenance", "host", "left_out"], ["x"])),
               "left_out_number": dump_json(_with(good, ["provenance", "host", "left_out"], 5)),
               "extensions_number": dump_json(_with(good, ["provenance", "host", "extensions"], 5)),
               "extensions_junk": dump_json(_with(good, ["provenance", "host", "extensions"],
                                                  [1, "x", None])),
               "bootstrap_list": dump_json(_with(good, ["provenance", "host", "bootstrap"], [1])),
               "aarch64": dump_json(_with(good, ["isa"], "aarch64")),
               "rmax_nan": dump_json(_with(good, ["r_max"], float("nan"))),
               "deep": "[" * 100_000 + "]" * 100_000}
    out = []
    path = host_cache_path(".cache")
    for tag, content in damaged.items():
        files = base_files()
        files[path] = content
        out += [Case("host-cache", ["predict", "k.s", "--model", "host"], files),
                Case("host-cache", ["predict", "k.s", "--model", "host", "--json"], files),
                Case("host-cache", ["models", "host", "--json"], files),
                # the listing names the damage but lists the built-ins: not an error
                Case("host-cache", ["models"], files, bad=False, valid=True),
                Case("host-cache", ["models", "--json"], files, bad=False, valid=True,
                     json_out=True)]
    files = base_files()
    files[path] = dump_json(good)
    out += [Case("host-cache", ["predict", "k.s", "--model", "host", "--json"], files, bad=False,
                 valid=True, json_out=True),
            Case("host-cache", ["models", "--json"], files, bad=False, valid=True, json_out=True)]
    return out


# --- random shapes ------------------------------------------------------------------------

def random_value(rng: random.Random, depth: int = 0):
    kinds = ["null", "bool", "int", "float", "special", "string", "list", "dict"]
    if depth > 3:
        kinds = kinds[:6]
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, 1, -1, 2, 7, 62, 63, 2 ** 31, 2 ** 64, 10 ** 40, -(10 ** 20)])
    if kind == "float":
        return rng.choice([0.0, -0.0, 0.5, 1e-9, 1e-320, 1e308, -2.5, 3.7])
    if kind == "special":
        return rng.choice([float("nan"), float("inf"), float("-inf")])
    if kind == "string":
        return rng.choice(["", "x", "0", "x86", "aarch64", ADD, "a\nb", "\x00", "\u00e9", " ",
                           "osaca:add gpr", "((REG:R:G:64))", "1e5", "-1"])
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["ports", "uops", "count", "cycles", "forms", "x", "", "isa"]):
            random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def mutate(doc, rng: random.Random):
    """The document with one node replaced, deleted, or a key added."""
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif action < 0.25 and isinstance(parent, dict):
        parent[rng.choice(["extra", "name", "isa", "r_max"])] = random_value(rng)
    else:
        parent[path[-1]] = random_value(rng)
    return doc


def random_cases(n: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = []
    kinds = {"model.json": (native_model, dump_json, "model"),
             "mapping3.json": (mapping3, dump_json, "model"),
             "osaca.yml": (osaca_model, dump_yaml, "model"),
             "exps.json": (native_experiments, dump_json, "exps"),
             "pmevo_exps.json": (pmevo_experiments, dump_json, "exps")}
    for fname, (make, dump, role) in kinds.items():
        for i in range(n):
            files = base_files()
            try:
                files[fname] = dump(mutate(make(), rng))
            except (ValueError, TypeError):           # YAML cannot dump it: skip
                continue
            users = model_users(fname, files, "random", bad=False) if role == "model" else \
                experiment_users(fname, files, "random", bad=False)
            out.append(rng.choice(users))
    return out


def all_cases(n_random: int = 0, seed: int = 1) -> list[Case]:
    return (deep_cases() + not_utf8_cases() + shape_cases() + number_cases() + flag_cases()
            + isa_cases() + export_cases() + batch_cases() + infer_measure_cases()
            + host_cache_cases() + size_cases() + long_line_cases() + random_cases(n_random, seed))


# --- running -------------------------------------------------------------------------------

@dataclass
class Outcome:
    case: Case
    verdict: str
    status: int | None
    stderr: str
    seconds: float


def _materialise(case: Case, where: str) -> None:
    for name, content in case.files.items():
        path = os.path.join(where, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if content in ("DIR", "RODIR"):
            os.makedirs(path, exist_ok=True)
            if content == "RODIR":
                os.chmod(path, stat.S_IRUSR | stat.S_IXUSR)
        elif isinstance(content, bytes):
            with open(path, "wb") as fh:
                fh.write(content)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
    for name in case.outputs:
        with open(os.path.join(where, name), "w") as fh:
            fh.write(SENTINEL)


def _has_nan(text: str) -> bool:
    def bad(token):
        raise ValueError(token)
    try:
        json.loads(text, parse_constant=bad)
    except ValueError:
        return True
    return False


def judge(case: Case, status: int | None, stdout: str, stderr: str, where: str) -> str:
    if status is None:
        return "hang"
    if "Traceback" in stderr:
        return "traceback"
    if status < 0:
        return "crash"
    if status == 0 and case.json_out and stdout.strip() and _has_nan(stdout):
        return "nan-json"
    if status != 0:
        for name in case.outputs:
            with open(os.path.join(where, name)) as fh:
                if fh.read() != SENTINEL:
                    return "clobbered"
        if any(".tmp" in f or f.startswith(".ckpt-") for f in _listing(where)):
            return "clobbered"
    if case.valid and status != 0:
        return "refused"
    if not case.bad:
        if status == 2 and not _one_error_line(stderr):
            return "unlocated"
        return "ok"
    if status == 0:
        return "accepted"
    if status != 2:
        return "other-exit"
    return "ok" if _one_error_line(stderr) else "unlocated"


def _one_error_line(stderr: str) -> bool:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return len(lines) == 1 and bool(ERROR_LINE.match(lines[0]))


def _listing(where: str) -> list[str]:
    out = []
    for root, dirs, names in os.walk(where):
        out += names + dirs
    return out


def run_case(case: Case, timeout: float = 60.0, python: str = sys.executable) -> Outcome:
    where = tempfile.mkdtemp(prefix="pmp-fuzz-")
    try:
        _materialise(case, where)
        env = dict(os.environ, PMPREDICT_CACHE=os.path.join(where, ".cache"),
                   XDG_CACHE_HOME=os.path.join(where, ".xdg"))
        t0 = time.monotonic()
        try:
            p = subprocess.run([python, "-m", "pmpredict", *case.argv], cwd=where, env=env,
                               input=case.stdin or b"", capture_output=True, timeout=timeout)
            status, out, err = p.returncode, p.stdout.decode("utf-8", "replace"), \
                p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            status, out, err = None, "", ""
        seconds = time.monotonic() - t0
        return Outcome(case, judge(case, status, out, err, where), status, err, seconds)
    finally:
        for root, dirs, _ in os.walk(where):
            for d in dirs:
                os.chmod(os.path.join(root, d), stat.S_IRWXU)
        shutil.rmtree(where, ignore_errors=True)


VERDICTS = ("ok", "traceback", "crash", "hang", "accepted", "unlocated", "other-exit", "nan-json",
            "clobbered", "refused")


def run_all(cases, jobs: int = 2, timeout: float = 60.0, python: str = sys.executable) -> list[Outcome]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda c: run_case(c, timeout, python), cases))


def summary(outcomes) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for o in outcomes:
        counts[o.verdict] += 1
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random", type=int, default=40, help="random mutations per document kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--only", help="run only the classes named (comma-separated)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter whose pmpredict is fuzzed (default: this one)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show every failing case")
    args = ap.parse_args(argv)
    cases = all_cases(args.random, args.seed)
    if args.only:
        cases = [c for c in cases if c.cls in args.only.split(",")]
    if os.geteuid() == 0:
        # root writes into read-only directories: those cases cannot fail as they should
        cases = [c for c in cases if not any(v == "RODIR" for v in c.files.values())
                 or not any(a.startswith("ro/") for a in c.argv)]
    t0 = time.monotonic()
    outcomes = run_all(cases, args.jobs, args.timeout, args.python)
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), platform.processor())
    print(f"# {datetime.date.today()}  {cpu}  python {platform.python_version()}")
    print(f"# python benchmarks/fuzz_cli.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"{len(outcomes)} cases in {time.monotonic() - t0:.0f} s")
    by_class: dict[str, dict[str, int]] = {}
    for o in outcomes:
        by_class.setdefault(o.case.cls, {v: 0 for v in VERDICTS})[o.verdict] += 1
    print(f"{'class':14s}" + "".join(f"{v:>11s}" for v in VERDICTS))
    for cls, counts in by_class.items():
        print(f"{cls:14s}" + "".join(f"{counts[v]:11d}" for v in VERDICTS))
    total = summary(outcomes)
    print(f"{'total':14s}" + "".join(f"{total[v]:11d}" for v in VERDICTS))
    bad = [o for o in outcomes if o.verdict != "ok"]
    if args.verbose:
        for o in bad:
            last = (o.stderr.strip().splitlines() or [""])[-1][:200]
            print(f"[{o.verdict}] exit {o.status}: {o.case.name}\n    {last}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
