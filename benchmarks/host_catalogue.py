"""How much real code the host pipeline can model, and the host form catalogue derived from it.

    python3 benchmarks/host_catalogue.py [--blocks ../shared/data/bhive/blocks.csv]
                                         [--share 0.99] [--write] [--extra FILE.c ...]

1. Real code: the BHive basic blocks (blocks.csv: 6,000 blocks from open-source applications,
   AT&T), and the assembly gcc and clang write for the C programs in benchmarks/programs/
   (sorting, hashing, linear algebra, image processing, bit manipulation, parsing, pointer
   structures, floating-point simulation; --extra adds more C files) at -O2 and at -O3
   -march=x86-64-v3 (AVX2, FMA, BMI2), every instruction of every function.
2. Each instruction goes through what `pmpredict predict --model host` does with it
   (pmpredict.measure.forms_from.instruction_form: `form_of`, then whether the form can be
   repeated in a loop of its own): it is *modelled* when it has a measurable form. Printed:
   the share of instructions modelled and (BHive) of whole blocks, and every reason the rest
   is left out, with counts and an example.
3. The catalogue: the most frequent forms until they make up --share (99%) of the modelled
   instructions of BHive, and the same for the compiler output; their union, minus the forms
   the assembler rejects when instantiated, is pmpredict/measure/forms_catalogue.txt (--write),
   the default form list of `pmpredict infer --measure`.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import glob
import os
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLOCKS = os.path.join(ROOT, "..", "shared", "data", "bhive", "blocks.csv")
PROGRAMS = sorted(glob.glob(os.path.join(HERE, "programs", "*.c")))
CATALOGUE = os.path.join(ROOT, "infer", "measure", "forms_catalogue.txt")
CONFIGS = [(cc, flags) for cc in ("gcc", "clang")
           for flags in (("-O2",), ("-O3", "-march=x86-64-v3"))]


class Tally:
    """Instructions seen, modelled, their forms and the reasons for the rest."""

    def __init__(self):
        self.total = 0
        self.forms = Counter()
        self.reasons = Counter()
        self.example = {}

    def add(self, isa, insn, syntax) -> bool:
        from pmpredict.measure.forms_from import instruction_form
        self.total += 1
        form, why = instruction_form(isa, insn, syntax)
        if form is not None:
            self.forms[form] += 1
            return True
        key = reason_key(why, isa.instruction(insn, syntax).mnemonic)
        self.reasons[key] += 1
        self.example.setdefault(key, insn.text.strip())
        return False

    @property
    def modelled(self) -> int:
        return sum(self.forms.values())


def reason_key(why: str, mnemonic: str) -> str:
    """Reasons grouped: the harness's own words, the mnemonic where it is the point."""
    if why.startswith("a branch"):
        return "a branch (control flow cannot be repeated in a loop of its own)"
    if why.startswith("moves the stack pointer"):
        return f"moves the stack pointer other than by a push or a pop ({mnemonic})"
    if why.startswith("register st") or why.startswith("register mm"):
        return "x87 / MMX register (form strings have general-purpose and vector placeholders)"
    if "prefix" in why:
        return why.split(":")[0] + " (form strings have no prefixes)"
    if "contains '_'" in why:
        return "a mnemonic with '_' (vcmplt_oqps...: form strings use '_' for a space)"
    return why


def bhive(path: str) -> tuple[Tally, int, int]:
    """(tally, blocks, blocks every instruction of which is modelled)."""
    from pmpredict.isa import semantics
    from pmpredict.asm.parse import parse
    isa = semantics.get("x86")
    tally, blocks, whole = Tally(), 0, 0
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            text = "\n".join(ins.strip() for ins in row["asm_att"].split(" ; ")) + "\n"
            insns = parse(text, "att").instructions
            ok = [tally.add(isa, insn, "att") for insn in insns]
            blocks += 1
            whole += all(ok)
    return tally, blocks, whole


def compiled(sources) -> tuple[Tally, list[str]]:
    """The tally over every instruction gcc and clang write for the sources (all configs)."""
    from pmpredict.isa import semantics
    from pmpredict.asm.parse import parse_file
    isa = semantics.get("x86")
    tally, runs = Tally(), []
    with tempfile.TemporaryDirectory() as tmp:
        for cc, flags in CONFIGS:
            for src in sources:
                out = os.path.join(tmp, f"{cc}{''.join(flags)}-{os.path.basename(src)}.s")
                subprocess.run([cc, *flags, "-S", "-o", out, src], check=True,
                               capture_output=True)
                program = parse_file(out)
                for insn in program.instructions:
                    tally.add(isa, insn, program.syntax)
            runs.append(f"{cc} {' '.join(flags)}")
    return tally, runs


def head(forms: Counter, share: float) -> list[str]:
    """The most frequent forms until they make up `share` of the instructions."""
    total, out, running = sum(forms.values()), [], 0
    for form, n in forms.most_common():
        if running >= share * total:
            break
        out.append(form)
        running += n
    return out


def rejected(forms) -> dict[str, str]:
    """Forms the harness cannot instantiate or the assembler rejects, with the reason."""
    from pmpredict.measure.experiment_runs import _form_errors
    return _form_errors(forms)


def report(name: str, tally: Tally) -> None:
    pct = lambda n, d: f"{100 * n / d:.2f}%" if d else "-"
    print(f"{name}: {tally.total} instructions, {tally.modelled} modelled "
          f"({pct(tally.modelled, tally.total)}), {len(tally.forms)} distinct forms")
    branches = sum(n for k, n in tally.reasons.items() if k.startswith("a branch"))
    if branches:
        rest = tally.total - branches
        print(f"  without branches: {tally.modelled} of {rest} ({pct(tally.modelled, rest)})")
    for key, n in tally.reasons.most_common():
        print(f"  {n:6d} {pct(n, tally.total):>7s}  {key}   e.g. {tally.example[key]!r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", default=BLOCKS, help="BHive blocks.csv")
    ap.add_argument("--share", type=float, default=0.99,
                    help="share of the modelled instructions the catalogue covers (0.99)")
    ap.add_argument("--extra", nargs="*", default=[], metavar="FILE.c",
                    help="more C files compiled like benchmarks/programs/*.c")
    ap.add_argument("--write", action="store_true", help=f"write {os.path.relpath(CATALOGUE)}")
    args = ap.parse_args(argv)

    from pmpredict.measure.cpu import cpu_name
    cc_versions = {cc: subprocess.run([cc, "--version"], capture_output=True,
                                      text=True).stdout.splitlines()[0] for cc in ("gcc", "clang")}
    print(f"# host_catalogue: {datetime.date.today().isoformat()}, {cpu_name()}, "
          f"{'; '.join(cc_versions.values())}")
    print(f"# command: python3 benchmarks/host_catalogue.py {' '.join(argv or sys.argv[1:])}")
    blocks, n_blocks, whole = bhive(args.blocks)
    report("BHive", blocks)
    print(f"  blocks: {whole} of {n_blocks} modelled whole ({100 * whole / n_blocks:.2f}%)")
    sources = PROGRAMS + list(args.extra)
    code, runs = compiled(sources)
    report(f"compiler output ({len(sources)} C files x {', '.join(runs)})", code)

    top_bhive, top_code = head(blocks.forms, args.share), head(code.forms, args.share)
    union = list(dict.fromkeys(top_bhive + top_code))
    bad = rejected(union)
    catalogue = [f for f in union if f not in bad]
    print(f"catalogue: {len(top_bhive)} forms make up {args.share:.0%} of BHive's modelled "
          f"instructions, {len(top_code)} of the compiler output's; union {len(union)}, "
          f"{len(bad)} rejected by the assembler -> {len(catalogue)} forms")
    for form, why in sorted(bad.items()):
        print(f"  rejected: {form}: {why}")
    for name, tally in (("BHive", blocks), ("compiler output", code)):
        covered = sum(tally.forms[f] for f in catalogue)
        print(f"  the catalogue covers {100 * covered / tally.modelled:.2f}% of {name}'s modelled "
              f"instructions, {100 * covered / tally.total:.2f}% of all")
    if args.write:
        with open(CATALOGUE, "w") as fh:
            fh.write(f"# Host form catalogue (benchmarks/host_catalogue.py, "
                     f"{datetime.date.today().isoformat()}): the forms that make up "
                     f"{args.share:.0%} of the\n# instructions pmpredict can model in the BHive "
                     "blocks and in gcc/clang -O2 and -O3 -march=x86-64-v3\n# output of "
                     "benchmarks/programs/*.c, most frequent first. Default form list of "
                     "`pmpredict infer --measure`.\n")
            fh.writelines(f + "\n" for f in catalogue)
        print(f"wrote {os.path.relpath(CATALOGUE)} ({len(catalogue)} forms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
