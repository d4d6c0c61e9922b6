"""Choose the kernel (the instructions to predict) in a parsed file.

In order of precedence:
  1. `--lines A-B`                        the instructions on those lines;
  2. `--region NAME`                      the named `LLVM-MCA-BEGIN NAME` region;
  3. OSACA comment markers                `# OSACA-BEGIN` ... `# OSACA-END` (`//` on AArch64,
                                          `;` in MASM listings),
                                          the comment text must be exactly the marker;
  4. IACA / OSACA byte markers            x86 `mov $111, %ebx` + `.byte 100,103,144` ...
                                          `mov $222, %ebx` + the same bytes (either syntax;
                                          MASM `DB 100, 103, 144` or `db 64H, 67H, 90H`);
                                          AArch64 `mov x1, #111` + `.byte 213,3,32,31` ... 222;
  5. llvm-mca regions                     `LLVM-MCA-BEGIN [name]` ... `LLVM-MCA-END [name]`,
                                          several per file (each one is a kernel);
  6. the innermost loop                   a label with a backward conditional branch to it
                                          whose body holds no other such loop (the first one
                                          in the file; the others are listed);
  7. the whole file.
Marker instructions themselves are not part of the kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.isa.x86.keys import x86_register
from pmpredict.asm.grammar import parse_int
from pmpredict.asm.parse import Program
from pmpredict.isa.syntax import Comment, Directive, Instruction, Label, Symbol

_MCA = re.compile(r"LLVM-MCA-(BEGIN|END)\b\s*(\S*)")


@dataclass
class Kernel:
    instructions: list[Instruction]
    how: str                          # "lines", "region", "osaca-markers", "iaca-markers",
                                      # "byte-markers", "llvm-mca-region", "loop", "file"
    description: str
    first_line: int | None = None
    last_line: int | None = None
    name: str | None = None
    others: list[dict] = field(default_factory=list)   # other candidate kernels (regions / loops)

    def to_json(self) -> dict:
        out = {"how": self.how, "description": self.description,
               "lines": [self.first_line, self.last_line]}
        if self.name is not None:
            out["name"] = self.name
        if self.others:
            out["others"] = self.others
        return out


def _span(insns):
    return (insns[0].line, insns[-1].line) if insns else (None, None)


def _kernel(insns, how, description, name=None, others=None) -> Kernel:
    a, b = _span(insns)
    return Kernel(list(insns), how, description, a, b, name, others or [])


def parse_lines(spec: str, path: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*(?:[-:]\s*(\d+))?\s*", spec or "")
    if not m:
        raise InputError(path, f"--lines expects A-B (1-based, inclusive), not {spec!r}")
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) else a
    if a < 1 or b < a:
        raise InputError(path, f"--lines {spec}: need 1 <= A <= B")
    return a, b


# --- markers ------------------------------------------------------------------------------

_BYTE_DIRECTIVES = (".byte", "db")          # GNU as, MASM


def _byte_values(args: str) -> list[int] | None:
    try:
        return [parse_int(x.strip()) for x in args.split(",") if x.strip()]
    except ValueError:
        return None


def _is_marker_mov(st, isa, value: int) -> bool:
    return isinstance(st, Instruction) and isa.is_marker_instruction(st, value)


def _byte_markers(statements, isa):
    """Indices (start, end) of the statements strictly inside the byte markers, or None."""
    expected = list(isa.marker_bytes)
    code = [(i, s) for i, s in enumerate(statements) if isinstance(s, (Instruction, Directive))]
    start = end = None
    for k in range(len(code) - 1):
        (i, a), (j, b) = code[k], code[k + 1]
        if isinstance(b, Directive) and b.name in _BYTE_DIRECTIVES and \
                _byte_values(b.args) == expected:
            if start is None and _is_marker_mov(a, isa, 111):
                start = j + 1
            elif start is not None and _is_marker_mov(a, isa, 222):
                end = i
                break
    if start is not None and end is not None:
        return start, end
    return None


def _comment_markers(statements, begin: str, end: str):
    start = None
    for i, s in enumerate(statements):
        if isinstance(s, Comment):
            if s.text == begin and start is None:
                start = i + 1
            elif s.text == end and start is not None:
                return start, i
    return None


def _mca_regions(statements) -> list[tuple[str, int, int]]:
    regions, open_ = [], {}
    for i, s in enumerate(statements):
        if not isinstance(s, Comment):
            continue
        m = _MCA.match(s.text)
        if not m:
            continue
        kind, name = m.group(1), m.group(2)
        if kind == "BEGIN":
            open_[name] = i + 1
        else:
            if name in open_:
                regions.append((name, open_.pop(name), i))
            elif not name and len(open_) == 1:      # anonymous END closes the one open region
                (only, begin), = open_.items()
                del open_[only]
                regions.append((only, begin, i))
    regions.sort(key=lambda r: r[1])
    return regions


# --- loops --------------------------------------------------------------------------------

def is_conditional_branch(insn: Instruction, isa: str) -> bool:
    return semantics.get(isa).is_conditional_branch(insn)


def find_loops(statements, isa: str) -> list[tuple[int, int, str]]:
    """(label index, branch index, label) for each backward conditional branch to a label."""
    labels: dict[str, int] = {}
    numeric: list[tuple[int, str]] = []
    loops = []
    for i, s in enumerate(statements):
        if isinstance(s, Label):
            labels[s.name] = i
            if s.name.isdigit():
                numeric.append((i, s.name))
        elif isinstance(s, Instruction) and is_conditional_branch(s, isa):
            targets = [o.name for o in s.operands if isinstance(o, Symbol)]
            if not targets:
                continue
            t = targets[-1]
            if re.fullmatch(r"\d+b", t):
                back = [k for k, n in numeric if n == t[:-1] and k < i]
                idx = back[-1] if back else None
            else:
                idx = labels.get(t)
            if idx is not None and idx < i:
                loops.append((idx, i, t))
    return loops


def innermost(loops):
    inner = []
    for a in loops:
        if not any(b is not a and a[0] <= b[0] and b[1] <= a[1] and (b[0], b[1]) != (a[0], a[1])
                   for b in loops):
            inner.append(a)
    return sorted(set(inner))


# --- selection ----------------------------------------------------------------------------

def _insns(statements, lo, hi):
    return [s for s in statements[lo:hi] if isinstance(s, Instruction)]


def select_kernel(program: Program, lines: str | None = None, region: str | None = None) -> Kernel:
    st = program.statements
    isa = program.isa
    path = program.path
    if lines is not None and region is not None:
        raise InputError(path, "give either --lines or --region, not both")
    if lines is not None:
        a, b = parse_lines(lines, path)
        n_lines = len(program.lines)
        if b > n_lines:
            raise InputError(path, f"--lines {lines}: the file has {n_lines} lines")
        insns = [s for s in st if isinstance(s, Instruction) and a <= s.line <= b]
        if not insns:
            raise InputError(path, f"--lines {lines}: no instruction on these lines", a)
        return _kernel(insns, "lines", f"lines {a}-{b} (--lines)")
    regions = _mca_regions(st)
    others = [{"name": n, "lines": list(_span(_insns(st, lo, hi)))} for n, lo, hi in regions]
    if region is not None:
        for n, lo, hi in regions:
            if n == region:
                return _kernel(_insns(st, lo, hi), "llvm-mca-region", f"LLVM-MCA region {n!r}",
                               name=n, others=others)
        known = ", ".join(repr(n) for n, _, _ in regions) or "none"
        raise InputError(path, f"no LLVM-MCA region named {region!r} (regions: {known})")
    found = _comment_markers(st, "OSACA-BEGIN", "OSACA-END")
    if found:
        return _kernel(_insns(st, *found), "osaca-markers", "between the OSACA-BEGIN/END comments")
    isa_semantics = semantics.get(isa)
    found = _byte_markers(st, isa_semantics)
    if found:
        return _kernel(_insns(st, *found), isa_semantics.marker_how,
                       f"between the {isa_semantics.marker_description}")
    if regions:
        n, lo, hi = regions[0]
        label = f"LLVM-MCA region {n!r}" if n else "the LLVM-MCA region"
        extra = f" (first of {len(regions)}; --region NAME picks another)" if len(regions) > 1 else ""
        return _kernel(_insns(st, lo, hi), "llvm-mca-region", label + extra, name=n, others=others)
    loops = innermost(find_loops(st, isa))
    if loops:
        lo, hi, label = loops[0]
        loop_others = [{"label": lab, "lines": list(_span(_insns(st, a, b + 1)))}
                       for a, b, lab in loops[1:]]
        return _kernel(_insns(st, lo, hi + 1), "loop", f"innermost loop at {label}",
                       name=label, others=loop_others)
    insns = [s for s in st if isinstance(s, Instruction)]
    if not insns:
        raise InputError(path, "no instructions in the file (only labels, directives or "
                               "comments, or nothing)")
    return _kernel(insns, "file", "the whole file (no markers, no loop found)")


def all_regions(program: Program) -> list[Kernel]:
    """Every LLVM-MCA region of the file as a kernel (for reports over all of them)."""
    st = program.statements
    return [_kernel(_insns(st, lo, hi), "llvm-mca-region", f"LLVM-MCA region {n!r}", name=n)
            for n, lo, hi in _mca_regions(st)]


__all__ = ["Kernel", "select_kernel", "all_regions", "find_loops", "innermost", "parse_lines",
           "is_conditional_branch", "x86_register"]
