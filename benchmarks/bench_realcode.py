"""Real basic blocks (BHive): measured here vs pmpredict, llvm-mca-19 and OSACA, side by side.

    python3 benchmarks/bench_realcode.py [--split tune|test|all] [--n 300] [--seed 1 ...]
                                         [--model M ...] [--mcpu native] [--results FILE]
                                         [--retry-failed] [--repeat K] [--measure-budget SEC]
                                         [--json OUT.json]

0. The split (never score on what you tuned on): a block belongs to the *tuning* part when the
   first hex digit of the SHA-1 of its `hex` column is 0-b, to the *test* part when it is c-f
   (a quarter of the blocks; fixed by the block itself, not by a seed or the file's order).
   Engine rules are chosen by looking at tuning blocks only (the default, --split tune); the
   test part is reported at the end, with two seeds (--split test --seed 1 --seed 2), and
   every figure in docs/BENCHMARKS.md says which part it comes from.
1. Draws a fixed-seed sample of the split's blocks of ../shared/data/bhive/blocks.csv,
   stratified by `source` (each application gets its share of --n, largest remainder; a block
   is drawn at most once). Several --seed: one sample per seed, their union measured and
   reported (a block drawn by two seeds counts once).
2. Measures every block on this host with `pmpredict measure BLOCK.s --json` (the block as a
   .s file, run in the harness's loop; a trailing branch is dropped by the harness), one
   block at a time and nothing else running from this script. Results go to a results file
   keyed by block hex + CPU as soon as they exist, so a rerun (or a resumed run) measures only
   what is missing (the key also holds a hash of the harness's sources: a changed harness
   measures afresh). Failed measurements are cached too (--retry-failed measures them again);
   a "measurement" above 1000 cycles per instruction counts as a failure (a harness fault).
   --repeat K measures K blocks once more (not cached) and prints how far apart the runs are.
3. Then, measurement over, predicts every block with pmpredict (`--model` as given, repeatable;
   default the built-in for the ISA; every block in one `predict --jsonl` call per model, so
   `--model host` extends this machine's model once with every form the sample needs, and the
   time that took is printed), llvm-mca-19 -mcpu=native (Total Cycles / Iterations of
   1000 iterations) and OSACA 0.7.1 with the closest machine file (max(TP, LCD); no number
   when an instruction is missing from its file, as `osaca` prints none). Subprocess peers run
   two at a time; OSACA runs in this process meanwhile.
4. Prints n, coverage, MAPE, median APE and Kendall tau-b per tool over the blocks it gives a
   number for, the same over the blocks every tool gives a number for, and split by kind:
   scalar (general-purpose registers only) / vector (any xmm/ymm/zmm register, scalar SSE
   included), with / without memory operands (lea and nop are not accesses), with / without a
   loop-carried chain (pmpredict's "bounds"."loop_carried" > 0 when it reports bounds, else
   OSACA's LCD > 0), chain-bound (that chain >= the throughput bound), with loads / with
   stores (an access read / written: the destination operand of a store form, a push, a
   read-modify-write counts as both), and with a division (div, idiv, and the FP divisions
   and square roots); then scalar / SIMD crossed with no memory, loads (and no store) and
   stores (whatever they load).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import csv
import hashlib
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import peers  # noqa: E402
import pmcli  # noqa: E402

BLOCKS = os.path.join(ROOT, "..", "shared", "data", "bhive", "blocks.csv")
# more cycles per instruction than any real instruction costs (a microcoded division or an FP
# assist is ~100): a measurement past this is a harness fault (seen: a block storing through
# an %rsp-derived pointer overwrote the harness's stack and "measured" 1.6e11 cycles)
IMPLAUSIBLE_PER_INSTRUCTION = 1000


# --- the sample ---------------------------------------------------------------------------

def load_blocks(path: str) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


SPLITS = ("tune", "test", "all")
TEST_DIGITS = "cdef"                  # first hex digit of SHA-1(hex): c-f test, 0-b tune


def split_of(row: dict) -> str:
    """"tune" or "test": by the block's own bytes, so it never depends on a seed or order."""
    return "test" if hashlib.sha1(row["hex"].encode()).hexdigest()[0] in TEST_DIGITS else "tune"


def in_split(rows: list[dict], split: str) -> list[dict]:
    return rows if split == "all" else [r for r in rows if split_of(r) == split]


def stratified_sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    """n blocks, each source getting its proportional share (largest remainder), seeded."""
    by_source = defaultdict(list)
    for r in rows:
        by_source[r["source"]].append(r)
    sources = sorted(by_source)
    n = min(n, len(rows))
    quotas = {s: n * len(by_source[s]) / len(rows) for s in sources}
    take = {s: int(q) for s, q in quotas.items()}
    rest = n - sum(take.values())
    for s in sorted(sources, key=lambda s: (-(quotas[s] - take[s]), s))[:rest]:
        take[s] += 1
    rng = random.Random(seed)
    sample = []
    for s in sources:
        sample += rng.sample(by_source[s], take[s])
    return sample


def block_lines(row: dict) -> list[str]:
    return [ins.strip() for ins in row["asm_att"].split(" ; ") if ins.strip()]


_BRANCH = re.compile(r"^(j[a-z]+|jmp\w*|loop\w*)\b")


def measured_lines(row: dict) -> list[str]:
    """The instructions the harness times: the block without its trailing branch (the harness
    runs copies of the block back to back and drops it). Every tool predicts these."""
    lines = block_lines(row)
    if lines and _BRANCH.match(lines[-1]):
        lines = lines[:-1]
    return lines


# --- kinds --------------------------------------------------------------------------------

_VECTOR = re.compile(r"%[xyz]mm\d+")
_NOT_ACCESS = re.compile(r"^(lea|nop)", re.I)


def is_vector(lines: list[str]) -> bool:
    return any(_VECTOR.search(ln) for ln in lines)


def has_memory(lines: list[str]) -> bool:
    return any("(" in ln and not _NOT_ACCESS.match(ln) for ln in lines)


_STORE_FIRST = re.compile(r"^(mov|vmov|st|cmov)", re.I)      # data movement: AT&T `src, dst`
_PUSH = re.compile(r"^(push|call)", re.I)
_POP = re.compile(r"^(pop|ret)", re.I)
# instructions whose memory operand is only read, wherever it stands
_COMPARE = re.compile(r"^(cmp|test|vucomi|ucomi|vcomi|comi|bt\b|bt[lqw]\b|i?div|i?mul|prefetch)",
                      re.I)
_DIVISION = re.compile(r"^(i?div[bwlq]?|v?div[sp][sd]|v?sqrt[sp][sd])\b", re.I)


def _memory_operand_last(line: str) -> bool:
    """AT&T: the last operand is the destination; it is memory when it ends in `)`."""
    ops = line.split(None, 1)[1] if " " in line.strip() else ""
    return ops.rstrip().endswith(")")


def has_load(lines: list[str]) -> bool:
    """A memory access read: a memory source, or a read-modify-write destination."""
    for ln in lines:
        if _NOT_ACCESS.match(ln):
            continue
        if _POP.match(ln):
            return True
        if "(" not in ln:
            continue
        if not _memory_operand_last(ln) or not _STORE_FIRST.match(ln) or _COMPARE.match(ln):
            return True
    return False


def has_store(lines: list[str]) -> bool:
    """A memory access written: a memory destination (but of a compare), a push or a call."""
    return any(_PUSH.match(ln) or ("(" in ln and _memory_operand_last(ln)
                                   and not _NOT_ACCESS.match(ln) and not _COMPARE.match(ln))
               for ln in lines)


def has_division(lines: list[str]) -> bool:
    return any(_DIVISION.match(ln) for ln in lines)


def chain_of(result: dict) -> tuple[float | None, float | None, str]:
    """(loop-carried bound, throughput bound, who said so): pmpredict's bounds, else OSACA."""
    for pm in result["pmpredict"]:
        if pm.get("loop_carried") is not None:
            return pm["loop_carried"], pm.get("throughput"), "pmpredict"
    osa = result["osaca"]
    if osa.get("lcd") is not None:
        return osa["lcd"], osa.get("tp"), "osaca"
    return None, None, "none"


# --- the results file ---------------------------------------------------------------------

def cpu_key(ident: dict) -> str:
    return "{vendor}/{family}/{model}/{stepping}/{name}".format(**ident)


# the modules `pmpredict measure` runs a block through (the front-end probes, latency chains and
# experiment designs beside them do not change a block's timing)
BLOCK_HARNESS = ("block.py", "runner.py", "codegen.py", "layout.py", "calibrate.py",
                 "instantiate.py", "measure_set.py", "harness.c")


def harness_fingerprint() -> str:
    """Hash of the installed block harness's sources: a changed harness measures afresh."""
    import hashlib
    import importlib.util
    spec = importlib.util.find_spec("pmpredict.measure")
    digest = hashlib.sha256()
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for name in sorted(os.listdir(folder)):
            if name in BLOCK_HARNESS:
                with open(os.path.join(folder, name), "rb") as fh:
                    digest.update(name.encode() + b"\0" + fh.read())
    return digest.hexdigest()[:16]


def default_results() -> str:
    base = os.environ.get("PMPREDICT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pmpredict")
    return os.path.join(base, "bench_realcode.jsonl")


def load_results(path: str, cpu: str) -> dict:
    out = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue                    # a line cut short by an interrupted run
                if rec.get("cpu") == cpu:
                    out[rec["hex"]] = rec["measured"]
    return out


def append_result(path: str, cpu: str, hexcode: str, measured: dict):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    keep = {k: measured.get(k) for k in ("cycles", "error", "instructions", "variants",
                                         "dropped", "spread", "kernel")}
    with open(path, "a") as fh:
        fh.write(json.dumps({"hex": hexcode, "cpu": cpu, "measured": keep,
                             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}) + "\n")


# --- the runs -----------------------------------------------------------------------------

def write_block(tmp: str, row: dict, lines: list[str] | None = None) -> str:
    path = os.path.join(tmp, row["hex"][:40] + ("" if lines is None else ".kernel") + ".s")
    with open(path, "w") as fh:
        fh.write("\n".join(block_lines(row) if lines is None else lines) + "\n")
    return path


def measure_all(sample, tmp, results_path, cpu, cached, retry_failed):
    todo = [r for r in sample if r["hex"] not in cached
            or (retry_failed and cached[r["hex"]].get("cycles") is None)]
    print(f"measuring {len(todo)} blocks ({len(sample) - len(todo)} from {results_path})",
          file=sys.stderr)
    t0 = time.time()
    for i, row in enumerate(todo, 1):
        m = pmcli.measure(write_block(tmp, row))
        cached[row["hex"]] = m
        append_result(results_path, cpu, row["hex"], m)
        if i % 10 == 0 or i == len(todo):
            eta = (time.time() - t0) / i * (len(todo) - i)
            print(f"  measured {i}/{len(todo)} ({time.time() - t0:.0f} s, ~{eta:.0f} s left)",
                  file=sys.stderr)
    return cached


def repeatability(sample, tmp, measured, k) -> dict | None:
    """Measure the first k measured blocks once more (not cached): how far apart two runs are."""
    pairs = []
    for row in [r for r in sample if measured[r["hex"]].get("cycles")][:k]:
        again = pmcli.measure(write_block(tmp, row), cached=False).get("cycles")
        if again:
            pairs.append((measured[row["hex"]]["cycles"], again))
    if not pairs:
        return None
    d = np.array([abs(a - b) / min(a, b) for a, b in pairs])
    return {"n": len(pairs), "median": float(np.median(d)), "p90": float(np.percentile(d, 90)),
            "max": float(d.max())}


def osaca_with_export(sample, tmp, model: str) -> dict:
    """OSACA's prediction of each block with `model` exported as an OSACA machine file
    (`pmpredict export MODEL --format osaca`, after pmpredict built it), by block."""
    path = os.path.join(tmp, "exported.yml")
    proc = subprocess.run([sys.executable, "-m", "pmpredict", "export", model, "--format", "osaca",
                           "-o", path], capture_output=True, text=True)
    if proc.returncode != 0:
        error = f"export failed: {proc.stderr.strip()[:160]}"
        return {r["hex"]: {"tool": "OSACA exported", "cycles": None, "error": error}
                for r in sample}
    return {r["hex"]: peers.osaca(measured_lines(r), path) for r in sample}


def predict_all(sample, tmp, models, mcpu, osaca_code, extra=()):
    """pmpredict (each model: every block in one call, so `--model host` measures the forms
    the sample needs in one extension), alone: a host model measures this machine, and a peer
    running beside it would be its SMT sibling's load; then llvm-mca in two worker threads and
    OSACA here meanwhile. `extra`: more pmpredict options (--measure-budget). Returns
    (predictions by block, per model: its notes and seconds)."""
    out = {r["hex"]: {"pmpredict": [None] * len(models), "llvm_mca": None, "osaca": None}
           for r in sample}
    paths = {r["hex"]: write_block(tmp, r, measured_lines(r)) for r in sample}
    t0 = time.time()
    runs = [None] * len(models)
    for k, model in enumerate(models):
        reports, notes, seconds = pmcli.predict_many([paths[r["hex"]] for r in sample], model,
                                                     tuple(extra) if model == "host" else ())
        for r in sample:
            out[r["hex"]]["pmpredict"][k] = pmcli.prediction_summary(reports[paths[r["hex"]]])
        runs[k] = {"notes": notes, "seconds": round(seconds, 1)}
        print(f"  pmpredict {model or 'default'}: {len(sample)} blocks in {seconds:.0f} s"
              + "".join(f"\n    {n}" for n in notes), file=sys.stderr)
    with futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {}
        for r in sample:
            jobs[pool.submit(peers.llvm_mca, measured_lines(r), mcpu)] = (r["hex"], "llvm_mca", None)
        for r in sample:
            out[r["hex"]]["osaca"] = peers.osaca(measured_lines(r), osaca_code)
        done = 0
        for job in futures.as_completed(jobs):
            h, tool, k = jobs[job]
            out[h][tool] = job.result()
            done += 1
            if done % 50 == 0 or done == len(jobs):
                print(f"  predicted {done}/{len(jobs)} ({time.time() - t0:.0f} s)", file=sys.stderr)
    return out, runs


# --- figures ------------------------------------------------------------------------------

def stats(pairs) -> dict:
    """n, MAPE, median APE, Kendall tau-b over (predicted, measured) pairs."""
    from scipy.stats import kendalltau
    if not pairs:
        return {"n": 0, "mape": None, "median_ape": None, "kendall": None}
    p = np.array([a for a, _ in pairs], float)
    m = np.array([b for _, b in pairs], float)
    ape = np.abs(p - m) / m * 100
    tau = float(kendalltau(p, m).statistic) if len(pairs) > 2 else None
    return {"n": len(pairs), "mape": float(ape.mean()), "median_ape": float(np.median(ape)),
            "kendall": None if tau is None or np.isnan(tau) else tau}


def fmt(x, spec=".1f", suffix=""):
    return "-" if x is None else f"{x:{spec}}{suffix}"


def tools_of(models_names, exported=None):
    tools = [(f"pmpredict {name}", lambda r, k=k: r["pmpredict"][k].get("cycles"))
             for k, name in enumerate(models_names)]
    tools.append((f"pmpredict {models_names[0]}, blocks fully in the model",
                  lambda r: r["pmpredict"][0].get("cycles") if r["pmpredict"][0].get("complete")
                  else None))
    tools += [("llvm-mca-19", lambda r: r["llvm_mca"].get("cycles")),
              ("OSACA max(TP,LCD)", lambda r: r["osaca"].get("cycles"))]
    if exported:
        tools.append((f"OSACA with pmpredict {exported} exported",
                      lambda r: r["osaca_export"].get("cycles")))
    return tools


def osaca_failures(rows, key: str) -> dict:
    """For one OSACA column: blocks it raised on, blocks with forms it did not find, and of
    those the blocks pmpredict (first model) knew fully."""
    raised = [r for r in rows if str(r[key].get("error") or "").startswith("OSACA raised")]
    unknown = [r for r in rows if r[key].get("unknown")]
    return {"raised": len(raised), "unknown": len(unknown),
            "unknown_where_pmpredict_complete": sum(1 for r in unknown
                                                    if r["pmpredict"][0].get("complete")),
            "first_raised": [r[key]["error"] for r in raised[:3]],
            "unknown_forms": Counter(u.split()[0] for r in unknown
                                     for u in r[key]["unknown"]).most_common(12)}


def report(rows, models_names, n_sample, failures, exported=None):
    measured = [r for r in rows if r["measured"].get("cycles")]
    tools = tools_of(models_names, exported)
    print(f"\n{n_sample} blocks sampled, {len(measured)} measured, "
          f"{n_sample - len(measured)} failed to measure")
    for reason, count in failures.most_common():
        print(f"  {count:4d}  {reason}")

    every = [r for r in measured if all(get(r) is not None for name, get in tools
                                         if "fully" not in name)]
    table = {}
    print(f"\n| tool | coverage | MAPE | median APE | Kendall tau | common n={len(every)}: MAPE "
          "| median APE | tau |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, get in tools:
        own = stats([(get(r), r["measured"]["cycles"]) for r in measured if get(r) is not None])
        common = stats([(get(r), r["measured"]["cycles"]) for r in every if get(r) is not None])
        table[name] = {"own": own, "common": common}
        print(f"| {name} | {own['n']}/{len(measured)} | {fmt(own['mape'], suffix='%')} | "
              f"{fmt(own['median_ape'], suffix='%')} | {fmt(own['kendall'], '.2f')} | "
              f"{fmt(common['mape'], suffix='%')} | {fmt(common['median_ape'], suffix='%')} | "
              f"{fmt(common['kendall'], '.2f')} |")

    kinds = [
        ("scalar", lambda r: not r["vector"]), ("vector", lambda r: r["vector"]),
        ("with memory", lambda r: r["memory"]), ("without memory", lambda r: not r["memory"]),
        ("with a loop-carried chain", lambda r: (r["chain"] or 0) > 0),
        ("without a loop-carried chain", lambda r: r["chain"] is not None and r["chain"] <= 0),
        ("chain-bound (chain >= throughput bound)",
         lambda r: (r["chain"] or 0) > 0 and r["chain"] >= (r["tp_bound"] or 0)),
        ("with loads", lambda r: r["loads"]), ("with stores", lambda r: r["stores"]),
        ("with a division", lambda r: r["division"]),
        # the classes of the issue tracker's memory table (a block with a store is a "stores"
        # block whatever it loads; "loads": loads and no store)
        *((f"{'SIMD' if vector else 'scalar'} {name}",
           lambda r, vector=vector, test=test: bool(r["vector"]) == vector and test(r))
          for vector in (False, True)
          for name, test in (("no memory", lambda r: not r["memory"]),
                             ("loads", lambda r: r["loads"] and not r["stores"]),
                             ("stores", lambda r: r["stores"]))),
    ]
    split = {}
    shown = [(n, g) for n, g in tools if "fully" not in n]
    print("\n| kind | measured | " + " | ".join(f"{n}: n, MAPE, tau" for n, _ in shown) + " |")
    print("|---|---:|" + "---|" * len(shown))
    for kind, test in kinds:
        sub = [r for r in measured if test(r)]
        cells = [kind, str(len(sub))]
        split[kind] = {}
        for name, get in shown:
            s = stats([(get(r), r["measured"]["cycles"]) for r in sub if get(r) is not None])
            split[kind][name] = s
            cells.append(f"{s['n']}, {fmt(s['mape'], suffix='%')}, {fmt(s['kendall'], '.2f')}")
        print("| " + " | ".join(cells) + " |")
    sources = Counter(r["chain_source"] for r in measured)
    print(f"\n(chain decided by: {', '.join(f'{k} {v}' for k, v in sources.items())})")
    return {"overall": table, "by_kind": split, "common_n": len(every)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="blocks in the sample (default 300)")
    ap.add_argument("--seed", type=int, action="append",
                    help="sample seed; repeat for several samples, reported together (default 1)")
    ap.add_argument("--split", choices=SPLITS, default="tune",
                    help="which part of the blocks: tune (SHA-1 of hex starts 0-b; default), "
                         "test (c-f), all")
    ap.add_argument("--model", action="append",
                    help="pmpredict model (built-in name or file; repeat for more columns; "
                         "default: the built-in for the ISA)")
    ap.add_argument("--mcpu", default="native", help="llvm-mca -mcpu (default native)")
    ap.add_argument("--osaca", help="OSACA arch code or machine file (default: closest to this CPU)")
    ap.add_argument("--blocks", default=BLOCKS, help="the BHive blocks.csv")
    ap.add_argument("--results", default=default_results(),
                    help="measurement results file (JSON lines, keyed by block hex + CPU)")
    ap.add_argument("--retry-failed", action="store_true", help="measure failed blocks again")
    ap.add_argument("--repeat", type=int, default=0, metavar="K",
                    help="measure K blocks a second time (not cached) and report the difference")
    ap.add_argument("--measure-budget", metavar="SEC",
                    help="pmpredict predict --measure-budget for --model host (default: "
                         "pmpredict's; a large value builds the model unbudgeted)")
    ap.add_argument("--osaca-export", metavar="MODEL",
                    help="also OSACA with MODEL exported by `pmpredict export --format osaca` "
                         "(after the pmpredict runs, so `host` is the model they built)")
    ap.add_argument("--json", metavar="FILE", help="write the raw figures here")
    args = ap.parse_args(argv)

    ident = peers.host_identity()
    cpu = cpu_key(ident) + "/harness-" + harness_fingerprint()
    machine = peers.osaca_machine(ident)
    osaca_code = args.osaca or machine["code"]
    models = args.model or [None]
    print(f"# bench_realcode: {peers.host_label(ident)}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"# command: {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    seeds = args.seed or [1]
    print(f"# sample: split={args.split} n={args.n} per seed, seeds={','.join(map(str, seeds))}, "
          f"stratified by source from {args.blocks}")
    print(f"# OSACA: {osaca_code}" + ("" if args.osaca else f" ({machine['why']})")
          + f"; llvm-mca-19 -mcpu={args.mcpu}"
          + (f" (= {peers.llvm_mca_host_cpu()})" if args.mcpu == "native" else ""))

    pool = in_split(load_blocks(args.blocks), args.split)
    sample = list({r["hex"]: r for seed in seeds
                   for r in stratified_sample(pool, args.n, seed)}.values())
    cached = load_results(args.results, cpu)
    with tempfile.TemporaryDirectory(prefix="bench-realcode-") as tmp:
        measured = measure_all(sample, tmp, args.results, cpu, cached, args.retry_failed)
        repeat = repeatability(sample, tmp, measured, args.repeat) if args.repeat else None
        preds, runs = predict_all(sample, tmp, models, args.mcpu, osaca_code,
                                  ("--measure-budget", args.measure_budget)
                                  if args.measure_budget else ())
        if args.osaca_export:
            for h, result in osaca_with_export(sample, tmp, args.osaca_export).items():
                preds[h]["osaca_export"] = result

    names = []
    for k, model in enumerate(models):
        reported = next((p["pmpredict"][k].get("model") for p in preds.values()
                         if p["pmpredict"][k].get("model")), None)
        names.append(os.path.basename(model) if model and os.sep in model
                     else (model or f"default ({reported or 'built-in'})"))
    rows, failures = [], Counter()
    for r in sample:
        m = measured[r["hex"]]
        lines = block_lines(r)
        if (m.get("cycles") or 0) > IMPLAUSIBLE_PER_INSTRUCTION * len(lines):
            m = {**m, "cycles": None, "raw_cycles": m["cycles"],
                 "error": f"implausible measurement (> {IMPLAUSIBLE_PER_INSTRUCTION} cycles per "
                          "instruction): a harness fault"}
        if m.get("cycles") is None:
            failures[str(m.get("error"))[:120]] += 1
        row = {"hex": r["hex"], "source": r["source"], "asm": lines, "measured": m,
               "vector": is_vector(lines), "memory": has_memory(lines),
               "loads": has_load(lines), "stores": has_store(lines),
               "division": has_division(lines), "split": split_of(r), **preds[r["hex"]]}
        row["chain"], row["tp_bound"], row["chain_source"] = chain_of(row)
        rows.append(row)
    summary = report(rows, names, len(sample), failures, args.osaca_export)
    for key, label in (("osaca", f"OSACA {osaca_code}"),) + (
            (("osaca_export", f"OSACA with pmpredict {args.osaca_export} exported"),)
            if args.osaca_export else ()):
        f = osaca_failures(rows, key)
        summary.setdefault("osaca_failures", {})[label] = f
        print(f"\n{label}: raised on {f['raised']} blocks, forms not found in {f['unknown']} "
              f"({f['unknown_where_pmpredict_complete']} of them fully in pmpredict's "
              f"{names[0]}); most missed: "
              + (", ".join(f"{m} {n}" for m, n in f["unknown_forms"]) or "none")
              + "".join(f"\n  {e}" for e in f["first_raised"]))
    for name, run in zip(names, runs):
        print(f"\npmpredict {name}: {run['seconds']:.0f} s for {len(sample)} blocks (one call)"
              + "".join(f"\n  {n}" for n in run["notes"]))
    if repeat:
        print(f"\nrepeatability: {repeat['n']} blocks measured twice, |a - b| / min(a, b): median "
              f"{repeat['median'] * 100:.1f}%, 90th percentile {repeat['p90'] * 100:.1f}%, "
              f"max {repeat['max'] * 100:.0f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": peers.host_label(ident), "host": ident, "osaca": osaca_code,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "command": sys.argv, "n": args.n, "seeds": seeds, "split": args.split,
                       "models": names,
                       "runs": runs, "summary": summary, "repeatability": repeat, "blocks": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
