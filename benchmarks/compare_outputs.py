"""Prove that a restructuring of the code base changes no output of the pmpredict CLI.

    python3 benchmarks/compare_outputs.py snapshot DIR [--blocks 500] [--text-blocks 50]
                                                       [--shared ../shared] [--jobs 2] [--force]
    python3 benchmarks/compare_outputs.py compare DIR_A DIR_B

Take a snapshot of the tree before the change (e.g. in a worktree of the old commit), one
of the tree after it, and compare the two:

    python3 benchmarks/compare_outputs.py snapshot /tmp/before     # in the old tree
    python3 benchmarks/compare_outputs.py snapshot /tmp/after      # in the new tree
    python3 benchmarks/compare_outputs.py compare /tmp/before /tmp/after

`snapshot` runs the CLI as subprocesses (`sys.executable -m pmpredict ...`, in the root of
the tree this script lives in, so it exercises that tree however the package is organised
inside) and writes one file per case, DIR/CASE.out: a header (the case, the command, its
exit status), then the command's stdout, its stderr and every file it wrote, each section
preceded by its size in bytes. `compare` says for each case whether the two files are
byte-identical, shows the first lines of a unified diff of each one that is not, ends with
"N cases, M differ" and exits 1 if any case differs (or exists in one directory only), 0
otherwise (2 on bad usage). Take both snapshots with the same options (the case names
carry --blocks and --text-blocks).

Cases (all deterministic; nothing measures on this host: no `measure`, no `--model host`,
no `infer --measure`):
  predict   every examples/*.s with every built-in model of its ISA (text, --json,
            --bottlenecks --timeline), all examples in one --jsonl call, standard input,
            --fallback (a built-in model, and OSACA's skx.yml when OSACA is installed), an
            OSACA machine file as the model, --jsonl -j 2;
            the first --blocks BHive blocks of the shared blocks.csv (in file order) as
            LLVM-MCA regions of one file (as benchmarks/bench_predict.py writes them),
            --jsonl with every built-in x86 model; the same blocks as one .s file each
            (--jsonl, skl); the first --text-blocks of them as text with every x86 model.
            host-like models (write_host_like_models: some machine facts given, the rest
            assumed, doubts and unmeasured forms in the provenance) on the x86 examples and
            the BHive blocks: the Assumed lines and `assumptions`.
  models    the list (text, --json), and each built-in model alone and with --forms.
  simulate, evaluate   every built-in model on a PMEvo artifact experiment file of its
            machine (text, --json; -v; a PMEvo Mapping3 file as the model; the --plot PNG).
  export    every built-in model as OSACA YAML and LLVM TableGen (14, 19, 19 self-contained
            with --json); the written file is compared too.
  infer     short runs on the A72 artifact data bounded by sweeps / generations, never by
            time (exact, pmevo, restarts + distillation), --seed 1, --quiet (the plain
            progress lines are throttled by wall-clock time); the written model is compared.
            The checkpoint (.npz) is not compared: it is the run's internal state.
  align     zen onto skl (text with -o, whose file is compared; --json), skl onto OSACA's
            skx.yml when OSACA is installed.
  errors    bad input: a syntax error, an unknown model, malformed / inconsistent JSON
            experiments, a missing file, bad flags, --strict, an ISA mismatch: the one-line
            message and exit status 2.

Normalised, and nothing else:
  * temporary paths: each run's own directory (its PMPREDICT_CACHE and HOME, the files it
    writes) reads <TMP>; the directory of the inputs copied for the snapshot (the PMEvo
    files, OSACA files, the BHive .s files) reads <INPUTS>. Copying the shared data keeps
    its location out of the outputs.
  * run times, in `infer` cases only: `"elapsed_s": <number>` in the JSON it prints and in
    the model's provenance, and the seconds of its summary line on stderr
    ("..., 4 s, done") read <SECONDS>. No other command prints a time.

Every run gets a fresh, empty PMPREDICT_CACHE and HOME (no user cache is read), and the
environment variables that move pmpredict's caches or tools (PMPREDICT_*, XDG_*) are
dropped. The BHive input is written here rather than imported from the benchmarks: their
helpers import pmpredict's modules, which is what a restructuring moves. Left out: `measure`
and anything else that times this host; `infer --resume` (needs a run stopped at a
wall-clock moment); a run stopped by --time-limit (where it stops depends on the clock).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import difflib
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SHARED = os.path.join(ROOT, "..", "shared")

CASE_TIMEOUT = 900            # seconds; the longest (an inference) takes ~40 s on a busy 2-vCPU VM
DIFF_LINES = 20               # lines of unified diff shown per differing case
DIFF_LINE_WIDTH = 300         # long JSONL lines are cut in the diff display (not compared so)
TMP = "{TMP}"                 # in a case's arguments: the run's own temporary directory

# The experiment file each built-in model is simulated and evaluated on: its own machine's
# (x86 models without an artifact machine get SKL's validation set).
EXPERIMENTS_OF_MODEL = {"skl": "SKL/validation_len06.json", "zen": "ZEN/train_len05.json",
                        "a72": "A72/train_len05.json"}
DEFAULT_EXPERIMENTS = {"x86": "SKL/validation_len06.json", "aarch64": "A72/train_len05.json"}
ARTIFACT_FILES = ["SKL/validation_len06.json", "SKL/mapping_pmevo.json", "ZEN/train_len05.json",
                  "A72/singletons.json", "A72/train_len05.json"]

# Only these fields are masked, and only in cases marked `timed` (infer).
ELAPSED_JSON = re.compile(rb'("elapsed_s"\s*:\s*)-?[0-9][0-9.eE+-]*')
ELAPSED_SUMMARY = re.compile(rb"\b[0-9]+ s, (done|stopped early)")


@dataclass(frozen=True)
class Case:
    name: str                         # also the file name: DIR/<name>.out
    args: tuple[str, ...]             # pmpredict's arguments; TMP stands for the run's directory
    stdin: str | None = None          # a file fed on standard input
    writes: tuple[str, ...] = ()      # files the command writes, relative to the run's directory
    timed: bool = False               # mask run times (see the module docstring)


# --- inputs -------------------------------------------------------------------------------

def pmpredict_command(args) -> list[str]:
    return [sys.executable, "-m", "pmpredict", *args]


def clean_env(run_dir: str) -> dict:
    """The caller's environment without what moves pmpredict's caches or tools, with a fresh
    cache and home inside the run's directory."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMPREDICT_", "XDG_"))}
    env["PMPREDICT_CACHE"] = os.path.join(run_dir, "cache")
    env["HOME"] = os.path.join(run_dir, "home")
    env["PYTHONIOENCODING"] = "utf-8"          # the same bytes whatever the caller's locale
    os.makedirs(env["HOME"])
    return env


def query_cli(args) -> str:
    """stdout of a discovery call (which models exist, which ISA an example is)."""
    with tempfile.TemporaryDirectory(prefix="pmpredict-compare-") as run_dir:
        proc = subprocess.run(pmpredict_command(args), cwd=ROOT, env=clean_env(run_dir),
                              capture_output=True, text=True, timeout=CASE_TIMEOUT)
    if proc.returncode != 0:
        sys.exit(f"compare_outputs: `pmpredict {' '.join(args)}` failed:\n{proc.stderr}")
    return proc.stdout


def builtin_models() -> list[tuple[str, str]]:
    """(name, ISA) of every built-in model `pmpredict models --json` lists (not host)."""
    listing = json.loads(query_cli(["models", "--json"]))
    return [(m["name"], m["isa"]) for m in listing["models"]]


def example_isas() -> dict[str, str]:
    """examples/NAME.s (relative to the root) -> the ISA pmpredict detects in it."""
    paths = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "examples", "*.s")))
    reports = [json.loads(line) for line in query_cli(["predict", *paths, "--jsonl"]).splitlines()]
    isa_of = {report["file"]: report["isa"] for report in reports}
    return {path: isa_of[path] for path in paths}


def osaca_data_dir() -> str | None:
    """OSACA's machine files, if OSACA is installed (located without importing it)."""
    spec = importlib.util.find_spec("osaca")
    if spec is None or not spec.origin:
        return None
    data = os.path.join(os.path.dirname(spec.origin), "data")
    return data if os.path.isfile(os.path.join(data, "skx.yml")) else None


def bhive_rows(shared: str, count: int) -> list[dict]:
    """The first `count` blocks of the shared BHive file, in its order."""
    path = os.path.join(shared, "data", "bhive", "blocks.csv")
    with open(path, newline="") as fh:
        rows = [row for _, row in zip(range(count), csv.DictReader(fh))]
    if len(rows) < count:
        sys.exit(f"compare_outputs: {path} has only {len(rows)} blocks, --blocks asks {count}")
    return rows


def block_instructions(row: dict) -> list[str]:
    return ["\t" + ins.strip() for ins in row["asm_att"].split(" ; ") if ins.strip()]


def write_regions_file(path: str, rows: list[dict]) -> str:
    """Every block between `# LLVM-MCA-BEGIN bK` and `# LLVM-MCA-END bK`, as
    benchmarks/bench_predict.py writes them."""
    lines = []
    for k, row in enumerate(rows):
        lines += [f"# LLVM-MCA-BEGIN b{k}", *block_instructions(row), f"# LLVM-MCA-END b{k}"]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def write_block_files(directory: str, rows: list[dict]) -> list[str]:
    """One .s file per block (no markers: pmpredict picks the kernel itself)."""
    os.makedirs(directory)
    paths = []
    for k, row in enumerate(rows):
        paths.append(os.path.join(directory, f"b{k:04d}.s"))
        with open(paths[-1], "w") as fh:
            fh.write("\n".join(block_instructions(row)) + "\n")
    return paths


def write_bad_inputs(inputs: str) -> dict[str, str]:
    """Small files that must be refused, by name."""
    files = {
        "syntax_error.s": "loop:\n\taddq $1, %rax\n\tfoo %rax, ,\n\tjne loop\n",
        "malformed.json": '{"kind": "ExperimentList", "exps": [\n  {"iseq": [1,\n',
        "unknown_form.json": json.dumps({
            "kind": "ExperimentList",
            "arch": {"kind": "Architecture", "insns": ["A"], "ports": ["0"]},
            "exps": [{"kind": "Experiment", "iseq": ["B"], "result": {"cycles": 1.0}}]}) + "\n",
    }
    paths = {}
    for name, text in files.items():
        paths[name] = os.path.join(inputs, name)
        with open(paths[name], "w") as fh:
            fh.write(text)
    return paths


def copy_inputs(shared: str, inputs: str, osaca_data: str | None) -> dict[str, str]:
    """Copy the shared files the cases read into `inputs`: their location stays out of the
    outputs. Returns the copies by their name relative to the artifact (or osaca/NAME)."""
    copies = {}
    for rel in ARTIFACT_FILES:
        source = os.path.join(shared, "data", "pmevo-artifact", rel)
        copies[rel] = os.path.join(inputs, rel)
        os.makedirs(os.path.dirname(copies[rel]), exist_ok=True)
        shutil.copyfile(source, copies[rel])
    if osaca_data:
        os.makedirs(os.path.join(inputs, "osaca"))
        copies["osaca/skx.yml"] = shutil.copyfile(os.path.join(osaca_data, "skx.yml"),
                                                  os.path.join(inputs, "osaca", "skx.yml"))
    return copies


# --- cases --------------------------------------------------------------------------------

def stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def example_cases(examples: dict[str, str], models: list[tuple[str, str]],
                  copies: dict[str, str]) -> list[Case]:
    views = {"text": (), "json": ("--json",), "bottlenecks_timeline": ("--bottlenecks", "--timeline")}
    x86_models = [name for name, isa in models if isa == "x86"]
    cases = []
    for path, isa in examples.items():
        # x86 files with every x86 model; others with the default model of their ISA
        model_flags = {m: ("--model", m) for m in x86_models} if isa == "x86" else {"default": ()}
        for model, flags in model_flags.items():
            for view, view_flags in views.items():
                cases.append(Case(f"predict__{stem(path)}__{model}__{view}",
                                  ("predict", path, *flags, *view_flags)))
    paths = tuple(examples)
    x86_paths = tuple(p for p, isa in examples.items() if isa == "x86")
    cases += [
        Case("predict__examples__default__jsonl", ("predict", *paths, "--jsonl")),
        Case("predict__examples__default__jsonl_j2", ("predict", *paths, "--jsonl", "-j", "2")),
        Case("predict__stdin_dot_avx2__default__text", ("predict", "-"),
             stdin="examples/dot_avx2.s"),
    ]
    if "zen4-vm" in x86_models and "skl" in x86_models:
        cases += [Case(f"predict__{stem(p)}__zen4-vm_fallback_skl__text",
                       ("predict", p, "--model", "zen4-vm", "--fallback", "skl")) for p in x86_paths]
    if "osaca/skx.yml" in copies:
        skx = copies["osaca/skx.yml"]
        cases += [Case(f"predict__{stem(p)}__skl_fallback_osaca_skx__text",
                       ("predict", p, "--fallback", skx)) for p in x86_paths]
        cases += [Case(f"predict__{stem(p)}__osaca_skx__json", ("predict", p, "--model", skx, "--json"))
                  for p in x86_paths]
    return cases


def bhive_cases(regions_file: str, block_files: list[str], text_blocks: int,
                models: list[tuple[str, str]]) -> list[Case]:
    x86_models = [name for name, isa in models if isa == "x86"]
    n = len(block_files)
    some = block_files[:text_blocks]
    cases = [Case(f"predict__bhive{n}_regions__{m}__jsonl",
                  ("predict", regions_file, "--model", m, "--jsonl")) for m in x86_models]
    cases += [
        Case(f"predict__bhive{n}_regions__skl__jsonl_j2",
             ("predict", regions_file, "--model", "skl", "--jsonl", "-j", "2")),
        Case(f"predict__bhive{n}_files__skl__jsonl", ("predict", *block_files, "--model", "skl", "--jsonl")),
        Case(f"predict__bhive{len(some)}_files__skl__bottlenecks_timeline",
             ("predict", *some, "--model", "skl", "--bottlenecks", "--timeline")),
    ]
    cases += [Case(f"predict__bhive{len(some)}_files__{m}__text", ("predict", *some, "--model", m))
              for m in x86_models]
    return cases


# the machine facts of a host-like model (pmpredict.host measures such): some given, the rest
# left for the prediction to assume and say; and what a host model's provenance says of them
HOST_LIKE_PIPELINE = {"window": 320, "load_latency": 4, "store_forward_latency": 7,
                      "macro_fusion": 1, "macro_fusion_add": 0, "paired_stores": 1,
                      "paired_store_bytes": 32, "store_commits": 2, "stack_sync_latency": 2,
                      "indexed_load_op_slots": 2, "atomic_cycles": 18}
HOST_LIKE_UNMEASURED = ("ADD_", "MOV_", "VADDSD_")     # the first form of each: unmeasured


def write_host_like_models(directory: str) -> dict[str, str]:
    """Two models made from the built-in zen4-vm's file as a host model would hold them:
    `host_partial` with HOST_LIKE_PIPELINE, doubts of its front end and of a measured fact,
    and forms and pairs its measuring budget left; `host_bare` with no machine fact at all,
    so every assumption the engines can make is said. Written from the file, not through
    pmpredict, so both trees of a comparison read the same models."""
    with open(os.path.join(ROOT, "pmpredict", "models", "zen4-vm.json")) as fh:
        base = json.load(fh)
    forms = sorted(base["forms"])
    unmeasured = [next(f for f in forms if f.startswith(prefix)) for prefix in HOST_LIKE_UNMEASURED]
    for form in forms:
        if form.startswith(("ADD_", "IMUL_")):
            base["forms"][form]["latency"] = 1 if form.startswith("ADD_") else 3
    partial = {**base, "name": "host_partial", "pipeline": HOST_LIKE_PIPELINE,
               "provenance": {**base["provenance"],
                              "front_end": {"doubts": ["no number for fusion dec: adjacent"]},
                              "latencies": {"doubts": {"load_latency": "the chain read 4.0 "
                                                                       "then 4.6"}},
                              "host": {"unmeasured": {
                                  "forms": {f: "latency not measured" for f in unmeasured},
                                  "pairs": [unmeasured[:2], unmeasured[1:]]}}}}
    bare = {**base, "name": "host_bare", "pipeline": {}}
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for model in (partial, bare):
        paths[model["name"]] = os.path.join(directory, model["name"] + ".json")
        with open(paths[model["name"]], "w") as fh:
            json.dump(model, fh, indent=1)
    return paths


def host_like_cases(models: dict[str, str], x86_examples: list[str],
                    block_files: list[str], text_blocks: int) -> list[Case]:
    """The examples and some BHive blocks predicted with the host-like models: their Assumed
    lines (text) and `assumptions` (JSON)."""
    cases = []
    for name, path in models.items():
        for example in x86_examples:
            cases += [Case(f"predict__{stem(example)}__{name}__text", ("predict", example, "--model", path)),
                      Case(f"predict__{stem(example)}__{name}__json",
                           ("predict", example, "--model", path, "--json"))]
        some = block_files[:text_blocks]
        cases += [Case(f"predict__bhive{len(some)}_files__{name}__text", ("predict", *some, "--model", path)),
                  Case(f"predict__bhive{len(block_files)}_files__{name}__jsonl",
                       ("predict", *block_files, "--model", path, "--jsonl"))]
    return cases


def models_cases(models: list[tuple[str, str]]) -> list[Case]:
    cases = [Case("models__list__text", ("models",)), Case("models__list__json", ("models", "--json"))]
    for name, _ in models:
        cases += [Case(f"models__{name}__text", ("models", name)),
                  Case(f"models__{name}__forms", ("models", name, "--forms")),
                  Case(f"models__{name}__forms_json", ("models", name, "--forms", "--json"))]
    return cases


def simulate_evaluate_cases(models: list[tuple[str, str]], copies: dict[str, str]) -> list[Case]:
    cases = []
    for name, isa in models:
        experiments = copies[EXPERIMENTS_OF_MODEL.get(name, DEFAULT_EXPERIMENTS[isa])]
        for command in ("simulate", "evaluate"):
            base = (command, "--model", name, "--experiments", experiments)
            cases += [Case(f"{command}__{name}__text", base),
                      Case(f"{command}__{name}__json", (*base, "--json"))]
        cases.append(Case(f"evaluate__{name}__verbose",
                          ("evaluate", "--model", name, "-e", experiments, "-v")))
    validation = copies["SKL/validation_len06.json"]
    cases += [
        Case("evaluate__pmevo_mapping_skl__text",
             ("evaluate", "--mapping", copies["SKL/mapping_pmevo.json"], "-e", validation)),
        Case("evaluate__skl__plot", ("evaluate", "-m", "skl", "-e", validation, "--plot", f"{TMP}/heat.png"),
             writes=("heat.png",)),
    ]
    return cases


def export_cases(models: list[tuple[str, str]]) -> list[Case]:
    cases = []
    for name, _ in models:
        variants = {"osaca": ("--format", "osaca", "-o", f"{TMP}/{name}.yml"),
                    "llvm14": ("--format", "llvm", "--llvm-version", "14", "-o", f"{TMP}/{name}.td"),
                    "llvm19": ("--format", "llvm", "--llvm-version", "19", "-o", f"{TMP}/{name}.td"),
                    "llvm19_self_contained_json": ("--format", "llvm", "--llvm-version", "19",
                                                   "--self-contained", "--json", "-o", f"{TMP}/{name}.td")}
        for variant, flags in variants.items():
            written = os.path.basename(flags[-1])
            cases.append(Case(f"export__{name}__{variant}", ("export", name, *flags), writes=(written,)))
    return cases


def infer_cases(copies: dict[str, str]) -> list[Case]:
    """Short inferences bounded by sweeps and generations; --time-limit is far beyond them
    (a run it stopped would differ, and show it: "complete": false)."""
    a72 = (copies["A72/singletons.json"], copies["A72/train_len05.json"])
    common = ("--seed", "1", "--quiet", "--time-limit", "600")
    runs = {
        "exact_json": ("--max-sweeps", "2", "--json"),
        "exact_fitted_volume": ("--start", "fitted", "--volume-weight", "0.01", "--max-sweeps", "2"),
        "pmevo": ("--method", "pmevo", "--population", "30", "--generations", "3"),
        "distill": ("--restarts", "2", "--distill", "200", "--distill-sweeps", "1", "--max-sweeps", "1"),
    }
    return [Case(f"infer__a72__{name}",
                 ("infer", "--experiments", *a72, "-o", f"{TMP}/model.json", *common, *flags),
                 writes=("model.json",), timed=True)
            for name, flags in runs.items()]


def align_cases(models: list[tuple[str, str]], copies: dict[str, str]) -> list[Case]:
    names = [name for name, _ in models]
    cases = []
    if "zen" in names and "skl" in names:
        cases += [Case("align__zen_onto_skl__text",
                       ("align", "zen", "--reference", "skl", "-o", f"{TMP}/aligned.json"),
                       writes=("aligned.json",)),
                  Case("align__zen_onto_skl__json", ("align", "zen", "--reference", "skl", "--json"))]
    if "osaca/skx.yml" in copies:
        cases.append(Case("align__skl_onto_osaca_skx__text", ("align", "skl", "-r", copies["osaca/skx.yml"])))
    return cases


def error_cases(bad: dict[str, str], copies: dict[str, str]) -> list[Case]:
    experiments = copies["A72/train_len05.json"]
    return [
        Case("error__predict_syntax_error", ("predict", bad["syntax_error.s"])),
        Case("error__predict_unknown_model", ("predict", "examples/dot_avx2.s", "--model", "nosuch")),
        Case("error__predict_missing_file", ("predict", f"{TMP}/missing.s")),
        Case("error__predict_isa_mismatch", ("predict", "examples/triad_neon.s", "--model", "skl")),
        Case("error__predict_strict", ("predict", "examples/dot_avx2.s", "--strict")),
        Case("error__predict_bad_lines", ("predict", "examples/dot_avx2.s", "--lines", "9-3")),
        Case("error__predict_bad_jobs", ("predict", "examples/dot_avx2.s", "--jobs", "0")),
        Case("error__predict_unknown_region", ("predict", "examples/dot_avx2.s", "--region", "nosuch")),
        Case("error__simulate_malformed_json", ("simulate", "--model", "skl", "-e", bad["malformed.json"])),
        Case("error__evaluate_unknown_form", ("evaluate", "--model", "skl", "-e", bad["unknown_form.json"])),
        Case("error__infer_malformed_json", ("infer", "-e", bad["malformed.json"], "-o", f"{TMP}/o.json")),
        Case("error__infer_negative_seed",
             ("infer", "-e", experiments, "-o", f"{TMP}/o.json", "--seed", "-1")),
        Case("error__export_unknown_model", ("export", "nosuch", "--format", "osaca", "-o", f"{TMP}/x.yml")),
        Case("error__models_unknown_model", ("models", "nosuch")),
    ]


def all_cases(shared: str, inputs: str, blocks: int, text_blocks: int) -> list[Case]:
    """Every case, the longest first so that the pool ends together."""
    models = builtin_models()
    copies = copy_inputs(shared, inputs, osaca_data_dir())
    rows = bhive_rows(shared, blocks)
    regions_file = write_regions_file(os.path.join(inputs, f"bhive{blocks}.s"), rows)
    block_files = write_block_files(os.path.join(inputs, "bhive_blocks"), rows)
    cases = (infer_cases(copies) + bhive_cases(regions_file, block_files, text_blocks, models)
             + simulate_evaluate_cases(models, copies) + export_cases(models)
             + align_cases(models, copies) + example_cases(example_isas(), models, copies)
             + models_cases(models) + error_cases(write_bad_inputs(inputs), copies)
             + host_like_cases(write_host_like_models(os.path.join(inputs, "host_like")),
                               [p for p, isa in example_isas().items() if isa == "x86"],
                               block_files, text_blocks))
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "two cases share a name"
    return cases


# --- running a case -----------------------------------------------------------------------

def masker(replacements: dict[str, str], timed: bool):
    """bytes -> bytes: temporary paths by their placeholder (longest first, real path too);
    with `timed`, the run-time fields."""
    pairs = []
    for path, placeholder in replacements.items():
        for variant in {path, os.path.realpath(path)}:
            pairs.append((variant.encode(), placeholder.encode()))
    pairs.sort(key=lambda p: -len(p[0]))

    def mask(data: bytes) -> bytes:
        for path, placeholder in pairs:
            data = data.replace(path, placeholder)
        if timed:
            data = ELAPSED_JSON.sub(rb"\1<SECONDS>", data)
            data = ELAPSED_SUMMARY.sub(rb"<SECONDS> s, \1", data)
        return data
    return mask


def section(title: str, data: bytes) -> bytes:
    """A part of the record: its title and size, the bytes exactly, a newline."""
    return f"--- {title} ({len(data)} bytes)\n".encode() + data + b"\n"


def run_case(case: Case, inputs: str) -> bytes:
    """The record of one run: header, stdout, stderr, written files (masked)."""
    with tempfile.TemporaryDirectory(prefix="pmpredict-compare-") as run_dir:
        args = [a.replace(TMP, run_dir) for a in case.args]
        stdin = open(os.path.join(ROOT, case.stdin), "rb") if case.stdin else subprocess.DEVNULL
        try:
            proc = subprocess.run(pmpredict_command(args), cwd=ROOT, env=clean_env(run_dir),
                                  stdin=stdin, capture_output=True, timeout=CASE_TIMEOUT)
            status, stdout, stderr = str(proc.returncode), proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            status, stdout, stderr = f"timeout after {CASE_TIMEOUT} s", exc.stdout or b"", exc.stderr or b""
        finally:
            if case.stdin:
                stdin.close()
        mask = masker({run_dir: "<TMP>", inputs: "<INPUTS>"}, case.timed)
        header = (f"case: {case.name}\ncommand: pmpredict {' '.join(args)}\n"
                  + (f"stdin: {case.stdin}\n" if case.stdin else "") + f"exit status: {status}\n")
        parts = [mask(header.encode()), section("stdout", mask(stdout)), section("stderr", mask(stderr))]
        for name in case.writes:
            path = os.path.join(run_dir, name)
            if os.path.exists(path):
                with open(path, "rb") as fh:
                    parts.append(section(f"file <TMP>/{name}", mask(fh.read())))
            else:
                parts.append(f"--- file <TMP>/{name}: not written\n".encode())
    return b"".join(parts)


def exit_status_of(record: bytes) -> str:
    match = re.search(rb"^exit status: (.*)$", record, re.M)
    return match.group(1).decode() if match else "?"


def prepare_directory(directory: str, force: bool) -> None:
    os.makedirs(directory, exist_ok=True)
    stale = glob.glob(os.path.join(directory, "*.out"))
    if stale and not force:
        sys.exit(f"compare_outputs: {directory} already holds a snapshot ({len(stale)} cases); "
                 "choose another directory or pass --force to replace it")
    for path in stale:
        os.remove(path)


def snapshot(args) -> int:
    prepare_directory(args.dir, args.force)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pmpredict-compare-inputs-") as inputs:
        cases = all_cases(os.path.abspath(args.shared), inputs, args.blocks, args.text_blocks)
        print(f"{len(cases)} cases, {args.jobs} at a time, into {args.dir}", flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            started = {pool.submit(timed_run, case, inputs): case for case in cases}
            for i, done in enumerate(concurrent.futures.as_completed(started), 1):
                case = started[done]
                record, seconds = done.result()
                with open(os.path.join(args.dir, case.name + ".out"), "wb") as fh:
                    fh.write(record)
                print(f"[{i:3d}/{len(cases)}] {case.name}  (exit {exit_status_of(record)}, "
                      f"{seconds:.1f} s)", flush=True)
    print(f"snapshot of {len(cases)} cases in {args.dir}: {time.monotonic() - t0:.0f} s")
    return 0


def timed_run(case: Case, inputs: str) -> tuple[bytes, float]:
    t = time.monotonic()
    record = run_case(case, inputs)
    return record, time.monotonic() - t


# --- comparing two snapshots --------------------------------------------------------------

def case_files(directory: str) -> dict[str, str]:
    return {os.path.basename(p)[:-len(".out")]: p for p in glob.glob(os.path.join(directory, "*.out"))}


def read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as fh:
        return fh.read()


def first_difference(a: bytes, b: bytes) -> str:
    """Where two records part (line:column), as a long JSONL line hides it in the diff."""
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    line = a.count(b"\n", 0, k) + 1
    column = k - (a.rfind(b"\n", 0, k) + 1) + 1
    return f"first difference at line {line}, column {column}"


def clip(line: str, column: int) -> str:
    """A diff line cut to DIFF_LINE_WIDTH characters of its text around `column`."""
    marker, text = line[:1], line[1:]
    if len(text) <= DIFF_LINE_WIDTH:
        return line
    start = max(0, min(column - DIFF_LINE_WIDTH // 3, len(text) - DIFF_LINE_WIDTH))
    return (f"{marker}{'...' if start else ''}{text[start:start + DIFF_LINE_WIDTH]}"
            f"{'...' if start + DIFF_LINE_WIDTH < len(text) else ''} ({len(text)} chars)")


def clip_long_lines(diff: list[str]) -> list[str]:
    """Long lines (JSONL) cut for display; a removed line and the added line that replaces it
    are both cut around the column where they first differ, so the change stays visible."""
    columns = [0] * len(diff)
    i = 0
    while i < len(diff):
        if not diff[i].startswith("-") or diff[i].startswith("---"):
            i += 1
            continue
        end_removed = i
        while end_removed < len(diff) and diff[end_removed].startswith("-"):
            end_removed += 1
        end_added = end_removed
        while end_added < len(diff) and diff[end_added].startswith("+"):
            end_added += 1
        for a, b in zip(range(i, end_removed), range(end_removed, end_added)):
            old, new = diff[a][1:], diff[b][1:]
            columns[a] = columns[b] = next((k for k, (x, y) in enumerate(zip(old, new)) if x != y),
                                           min(len(old), len(new)))
        i = end_added
    return [line if line.startswith(("---", "+++")) else clip(line, column)
            for line, column in zip(diff, columns)]


def short_diff(name: str, a: bytes, b: bytes, dir_a: str, dir_b: str) -> list[str]:
    diff = list(difflib.unified_diff(
        a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines(),
        fromfile=os.path.join(dir_a, name + ".out"), tofile=os.path.join(dir_b, name + ".out"),
        lineterm=""))
    if not diff:                      # the same lines: only line endings / a final newline
        diff = ["(the lines are equal; the bytes differ in line endings or the final newline)"]
    shown = clip_long_lines(diff[:DIFF_LINES])
    if len(diff) > DIFF_LINES:
        shown.append(f"... {len(diff) - DIFF_LINES} more diff lines")
    return shown


def compare(args) -> int:
    files_a, files_b = case_files(args.dir_a), case_files(args.dir_b)
    names = sorted(set(files_a) | set(files_b))
    if not names:
        print(f"compare_outputs: no cases (*.out) in {args.dir_a} or {args.dir_b}", file=sys.stderr)
        return 2
    differing = []
    for name in names:
        a, b = read(files_a.get(name)), read(files_b.get(name))
        if a is None or b is None:
            verdict = f"only in {args.dir_a if b is None else args.dir_b}"
        else:
            verdict = "identical" if a == b else "DIFFERS"
        if verdict != "identical":
            differing.append(name)
        print(f"{verdict:10s}  {name}")
    for name in differing:
        a, b = read(files_a.get(name)), read(files_b.get(name))
        if a is None or b is None:
            continue
        print(f"\n=== {name}: {first_difference(a, b)}")
        print("\n".join(short_diff(name, a, b, args.dir_a, args.dir_b)))
    print(f"\n{len(names)} cases, {len(differing)} differ")
    return 1 if differing else 0


# --- command line -------------------------------------------------------------------------

def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="run every case and write its outputs into DIR")
    snap.add_argument("dir", metavar="DIR")
    snap.add_argument("--blocks", type=positive, default=500, help="BHive blocks predicted (default 500)")
    snap.add_argument("--text-blocks", type=positive, default=50,
                      help="of those, the ones also predicted as text (default 50)")
    snap.add_argument("--shared", default=DEFAULT_SHARED,
                      help="the shared data directory (default: ../shared beside the tree)")
    snap.add_argument("--jobs", "-j", type=positive, default=2, help="cases run at a time (default 2)")
    snap.add_argument("--force", action="store_true", help="replace the snapshot already in DIR")
    comp = sub.add_parser("compare", help="compare two snapshots; exit 1 if any case differs")
    comp.add_argument("dir_a", metavar="DIR_A")
    comp.add_argument("dir_b", metavar="DIR_B")
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        for needed in ("data/bhive/blocks.csv", "data/pmevo-artifact"):
            if not os.path.exists(os.path.join(args.shared, needed)):
                parser.error(f"--shared {args.shared}: no {needed} in it")
        return snapshot(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
