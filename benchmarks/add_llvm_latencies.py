"""Write llvm-mca's latencies into the built-in models (run by the developer, not at install).

    python3 benchmarks/add_llvm_latencies.py [skl zen a72] [--llvm-mca llvm-mca-19] [--dry-run]

For every form of a built-in model, an example instance (pmpredict.isa.examples.example_instance)
goes into one llvm-mca run per model (`-instruction-info`, the model's -mcpu and -mtriple):
its Latency column is the form's latency, with latency_source "llvm-mca <version> -mcpu=<cpu>".

A form that reads memory and has a register source and a register destination (a load-op
form: `add r64, [m]`, `vaddpd ymm, ymm, [m]`) has two latencies in LLVM: the column (from the
address, the load included: LLVM's write latency) becomes the memory operand's
`latency_from`, and the register sources' shorter one (LLVM's ReadAdvance, which llvm-mca
does not print) is measured as a chain: the destination tied to a register source
(`vaddpd ymm1, ymm1, [m]`), one region per form, cycles per iteration =
(cycles of 200 iterations - cycles of 100) / 100. When the chain runs no slower than the
form's reciprocal throughput, the register latency is hidden and is left out (counted).
Every other form (register forms, loads without a register source, stores, lea) takes the
column as its `latency`. Forms llvm cannot read (llvm-mc or llvm-mca rejects the instance)
stay without latency (counted). The model's pipeline window is llvm-mca's ROB size.

Only the latency keys of the files change: uops, ports and provenance are kept as they are.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form, split_operands
from pmpredict.exporters.opcodes import instance_of
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.models import builtin_path

CPUS = {"skl": "skylake", "zen": "znver1", "a72": "cortex-a72"}
# per ISA: llvm-mca arguments (those of the opcode table's llvm-mc runs) and the comment marker
TARGETS = {"x86": (["-mtriple=x86_64", "-x86-asm-syntax=intel"], "#"),
           "aarch64": (["-mtriple=aarch64", "-mattr=+neon,+fullfp16,+crc,+aes,+sha2"], "//")}
CHAIN_ITERATIONS = (100, 200)
# a chain this much slower than the form's reciprocal throughput is bound by its latency
CHAIN_MARGIN = 0.05

_INFO_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d+|-)\s")
_ERROR_LINE = re.compile(r":(\d+):\d+: error: (.*)")


def llvm_mca_version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
    return re.search(r"LLVM version (\S+)", out).group(1)


def _run(tool: str, args: list[str], text: str) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run([tool, *args, f.name], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(f.name)


def instruction_info(tool: str, args: list[str], lines: list[str]):
    """({index: (latency, reciprocal throughput or None)}, {index: why llvm-mca rejected it}):
    one llvm-mca run over all lines; a line it rejects is dropped and the run repeated."""
    rejected: dict[int, str] = {}
    while True:
        kept = [i for i in range(len(lines)) if i not in rejected]
        proc = _run(tool, [*args, "-iterations=1", "-instruction-info", "-resource-pressure=0"],
                    "\n".join(lines[i] for i in kept) + "\n")
        if proc.returncode == 0:
            break
        m = _ERROR_LINE.search(proc.stderr)
        if m is None:
            raise RuntimeError(f"llvm-mca failed: {proc.stderr.strip()[:500]}")
        rejected[kept[int(m.group(1)) - 1]] = "llvm-mca: " + m.group(2)
    rows = [m for m in map(_INFO_ROW.match, proc.stdout.splitlines()) if m]
    if len(rows) != len(kept):
        raise RuntimeError(f"llvm-mca printed {len(rows)} instruction rows for {len(kept)} lines")
    return {i: (float(m.group(2)), None if m.group(3) == "-" else float(m.group(3)))
            for i, m in zip(kept, rows)}, rejected


def chain_cycles(tool: str, args: list[str], comment: str, instances: list[str]) -> list[float]:
    """Cycles per iteration of each instance run alone (its own llvm-mca region), in steady
    state: the difference between two iteration counts."""
    text = "".join(f"{comment} LLVM-MCA-BEGIN chain{i}\n{inst}\n{comment} LLVM-MCA-END\n"
                   for i, inst in enumerate(instances))
    totals = []
    for n in CHAIN_ITERATIONS:
        proc = _run(tool, [*args, f"-iterations={n}", "-instruction-info=0",
                           "-resource-pressure=0"], text)
        if proc.returncode != 0:
            raise RuntimeError(f"llvm-mca failed on the chains: {proc.stderr.strip()[:500]}")
        totals.append([int(c) for c in re.findall(r"^Total Cycles:\s+(\d+)", proc.stdout, re.M)])
        if len(totals[-1]) != len(instances):
            raise RuntimeError("llvm-mca printed the wrong number of regions")
    (n1, n2), (c1, c2) = CHAIN_ITERATIONS, totals
    return [round((b - a) / (n2 - n1), 2) for a, b in zip(c1, c2)]


def rob_entries(tool: str, args: list[str], line: str) -> int:
    proc = _run(tool, [*args, "-iterations=1", "-retire-stats", "-instruction-info=0",
                       "-resource-pressure=0"], line + "\n")
    return int(re.search(r"Total ROB Entries:\s+(\d+)", proc.stdout).group(1))


def _signature(operand) -> tuple:
    """What must agree for two register operands to be one register: kinds, classes, widths
    and the text around the placeholder (an AArch64 arrangement)."""
    return (tuple((p.kind, p.reg_class, p.width) for p in operand.placeholders),
            re.sub(r"\(\([^()]*\)\)", "", operand.text))


def load_op_operands(template) -> tuple[int, int, int] | None:
    """(memory operand, register destination, register source to tie to it) of a form that
    reads memory and has both, else None. The source is the destination itself when it is
    read and written (`add r64, [m]`), else the first source of the same kind."""
    if not semantics.get(template.isa).form(template).reads_memory:
        return None
    ops = template.operands
    mem = next((i for i, o in enumerate(ops) if o.kind == "mem"), None)
    regs = [i for i, o in enumerate(ops) if o.kind == "reg"]
    dest = next((i for i in regs if "W" in ops[i].access), None)
    sources = [i for i in regs if "R" in ops[i].access or ops[i].placeholders[0].kind == "DIV"]
    if mem is None or dest is None or not sources:
        return None
    if dest in sources:
        return mem, dest, dest
    tied = next((i for i in sources if _signature(ops[i]) == _signature(ops[dest])), None)
    return (mem, dest, tied) if tied is not None else (mem, dest, -1)


def tied_instance(instance: str, dest: int, source: int) -> str:
    """The example instance with the source operand replaced by the destination register."""
    mnemonic, _, rest = instance.partition(" ")
    ops = split_operands(rest)
    ops[source] = ops[dest]
    return f"{mnemonic} {', '.join(ops)}"


def llvm_latencies(model, cpu: str, tool: str) -> dict:
    args, comment = TARGETS[model.isa]
    args = [*args, f"-mcpu={cpu}"]
    source = f"llvm-mca {llvm_mca_version(tool)} -mcpu={cpu}"
    forms, instances, unreadable = [], [], {}
    for form in model.forms:
        try:
            instances.append(instance_of(form, model.isa))
            forms.append(form)
        except ValueError as why:
            unreadable[form] = str(why)
    info, rejected = instruction_info(tool, args, instances)
    unreadable.update({forms[i]: why for i, why in rejected.items()})
    latency, operand_latency, untied, hidden = {}, {}, [], []
    chains = []                               # (form, memory operand, chain instance)
    for i, form in enumerate(forms):
        if i not in info:
            continue
        lat, _ = info[i]
        split = load_op_operands(parse_form(form, model.isa))
        if split is None:
            latency[form] = lat
        elif split[2] < 0:
            operand_latency[form] = {split[0]: lat}
            untied.append(form)
        else:
            mem, dest, tied = split
            chains.append((form, mem, tied_instance(instances[i], dest, tied)
                           if tied != dest else instances[i], i))
    cycles = chain_cycles(tool, args, comment, [c[2] for c in chains]) if chains else []
    for (form, mem, _, i), c in zip(chains, cycles):
        lat, rthroughput = info[i]
        if rthroughput is not None and c <= rthroughput + CHAIN_MARGIN:
            operand_latency[form] = {mem: lat}            # the register latency is hidden
            hidden.append(form)
            continue
        latency[form] = c
        if c != lat:
            operand_latency[form] = {mem: lat}
    load_line = instances[next(iter(info))] if info else None
    window = rob_entries(tool, args, load_line) if load_line else None
    return {"source": source, "latency": latency, "operand_latency": operand_latency,
            "unreadable": unreadable, "untied": untied, "hidden": hidden, "window": window,
            "split": sorted(set(latency) & set(operand_latency))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(CPUS), help=f"of {', '.join(CPUS)}")
    ap.add_argument("--llvm-mca", default=shutil.which("llvm-mca-19") or "llvm-mca-19")
    ap.add_argument("--dry-run", action="store_true", help="print the counts, write nothing")
    args = ap.parse_args(argv)
    for name in args.models:
        if name not in CPUS:
            ap.error(f"no llvm CPU for model {name!r} (known: {', '.join(CPUS)})")
    for name in args.models:
        path = builtin_path(name)
        model = load_model(path)
        got = llvm_latencies(model, CPUS[name], args.llvm_mca)
        sources = {f: got["source"] for f in set(got["latency"]) | set(got["operand_latency"])}
        timed = model.with_uops(model.uops, latency=got["latency"],
                                operand_latency=got["operand_latency"], latency_source=sources,
                                pipeline={**model.pipeline, "window": got["window"]},
                                pipeline_source={**model.pipeline_source,
                                                 "window": got["source"]})
        print(f"{name}: {got['source']}: {len(model.forms)} forms, {len(got['latency'])} with a "
              f"latency, {len(got['split'])} of them also with a memory-operand latency "
              f"(load-op), {len(got['hidden'])} load-op forms whose register latency a chain "
              f"cannot show and {len(got['untied'])} with no register source to tie "
              f"(memory-operand latency only), {len(got['unreadable'])} that llvm cannot "
              f"read; ROB {got['window']}")
        for form, why in sorted(got["unreadable"].items()):
            print(f"  unreadable: {form}: {why}")
        for form in got["hidden"] + got["untied"]:
            print(f"  memory-operand latency only: {form}")
        if not args.dry_run:
            save_model(timed, path)
            print(f"  wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
