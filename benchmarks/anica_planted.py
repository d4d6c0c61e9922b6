"""Does AnICA find a planted model error? The acceptance check of `pmpredict anica`.

    python3 benchmarks/anica_planted.py [--seeds 1 2 3 4 5] [--kinds latency ports]
                                        [--budget-s 600] [--workers 2] [--out DIR]

For each kind and seed: a copy of the built-in skl model with one error planted in one form
(chosen by the seed among the forms the error shows in):
  * latency: the form's latency doubled (a register-only form that reads and writes one
    register, so that an instance chains on itself and the latency shows);
  * ports:   the form's uops forced onto one port, the lowest of each uop's set (a
    register-only form with one uop on two or more ports that writes without reading its
    destination, so that independent instances are port-bound, not chained);
then `pmpredict anica --predictor pmpredict:skl --predictor pmpredict:PLANTED.json --budget-s
B --seed S --json`. Found: a discovery whose mnemonics include the planted form's mnemonic,
with interesting_ratio >= 0.9. Prints one line per run and the tally.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from pmpredict.anica.schemes import schemes_for
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.isa.forms import OperandKind, parse_form

FOUND_RATIO = 0.9


def _register_only(form: str) -> bool:
    t = parse_form(form, "x86")
    return all(op.kind in (OperandKind.REG, OperandKind.IMM) for op in t.operands)


def _access(form: str, index: int) -> str:
    return parse_form(form, "x86").operands[index].placeholders[0].access \
        if parse_form(form, "x86").operands[index].placeholders else ""


def eligible(model, schemes, kind: str) -> list:
    out = []
    for s in schemes:
        if not _register_only(s.form) or s.form not in model.uops:
            continue
        t = parse_form(s.form, "x86")
        accesses = [op.placeholders[0].access for op in t.operands
                    if op.kind is OperandKind.REG and op.placeholders]
        uops = model.uops[s.form]
        if kind == "latency":
            if "RW" in accesses and (model.latency.get(s.form) or 0) >= 1:
                out.append(s)
        elif len(uops) == 1 and bin(uops[0][0]).count("1") >= 2 and "RW" not in accesses \
                and accesses and accesses[0] == "W":
            out.append(s)
    return sorted(out, key=lambda s: s.form)


def plant(model, form: str, kind: str):
    if kind == "latency":
        latency = dict(model.latency)
        latency[form] = 2 * latency[form]
        operand = {f: dict(v) for f, v in model.operand_latency.items()}
        if form in operand:
            operand[form] = {i: 2 * v for i, v in operand[form].items()}
        return model.with_uops(dict(model.uops), latency=latency, operand_latency=operand,
                               name=model.name + "-planted")
    uops = dict(model.uops)
    merged: dict[int, int] = {}
    for mask, count in uops[form]:
        low = mask & -mask
        merged[low] = merged.get(low, 0) + count
    uops[form] = tuple(sorted(merged.items()))
    return model.with_uops(uops, name=model.name + "-planted")


def run(kind: str, seed: int, budget_s: float, workers: int, out_dir: str) -> dict:
    base = load_model("skl")
    schemes = schemes_for(list(base.uops), "x86")
    candidates = eligible(base, schemes, kind)
    chosen = random.Random(f"{kind}-{seed}").choice(candidates)
    planted = plant(base, chosen.form, kind)
    path = os.path.join(out_dir, f"planted-{kind}-{seed}.json")
    save_model(planted, path)
    report = os.path.join(out_dir, f"anica-{kind}-{seed}.json")
    cmd = [sys.executable, "-m", "pmpredict", "anica", "--predictor", "pmpredict:skl",
           "--predictor", f"pmpredict:{path}", "--budget-s", str(budget_s), "--seed", str(seed),
           "--json", "--workers", str(workers), "--no-cache", "--quiet",
           "--checkpoint", os.path.join(out_dir, f"ckpt-{kind}-{seed}.json")]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        return {"kind": kind, "seed": seed, "form": chosen.form, "error": done.stderr.strip()}
    with open(report, "w") as fh:
        fh.write(done.stdout)
    data = json.loads(done.stdout)
    hits = [d for d in data["discoveries"]
            if chosen.mnemonic in d["mnemonics"] and d["interesting_ratio"] >= FOUND_RATIO]
    return {"kind": kind, "seed": seed, "form": chosen.form, "mnemonic": chosen.mnemonic,
            "found": bool(hits), "rank": hits[0]["rank"] if hits else None,
            "ratio": hits[0]["interesting_ratio"] if hits else None,
            "description": hits[0]["description"] if hits else None,
            "discoveries": len(data["discoveries"]), "calls": data["counters"]["calls"],
            "elapsed_s": round(elapsed, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--kinds", nargs="+", default=["latency", "ports"],
                    choices=["latency", "ports"])
    ap.add_argument("--budget-s", type=float, default=600.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", help="keep the planted models and reports here")
    args = ap.parse_args(argv)
    out_dir = args.out or tempfile.mkdtemp(prefix="anica-planted-")
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for kind in args.kinds:
        for seed in args.seeds:
            r = run(kind, seed, args.budget_s, args.workers, out_dir)
            results.append(r)
            if "error" in r:
                print(f"{kind:8} seed {seed}  {r['form']}: ERROR {r['error'][:200]}", flush=True)
                continue
            what = (f"found as #{r['rank']} (ratio {r['ratio']:.2f}): {r['description']}"
                    if r["found"] else f"NOT found ({r['discoveries']} discoveries)")
            print(f"{kind:8} seed {seed}  {r['form']}  [{r['mnemonic']}]  {what}  "
                  f"({r['calls']} blocks, {r['elapsed_s']:.0f} s)", flush=True)
    found = sum(1 for r in results if r.get("found"))
    print(f"found {found} of {len(results)}; reports in {out_dir}")
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    return 0 if found == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
