"""Front-end probes: the blocks whose timings give the issue width, macro-fusion, the slots of
a load-op and the cost of a taken loop branch, and how to read them.

Engine layer (pure: no I/O). Every probe is x86-64 code in Intel syntax. A *block* probe is
timed as `pmpredict measure` times a basic block (unrolled u and 2u times, the difference
cancels the loop), so its cycles are per copy; a *loop* probe is the body of the loop itself
(not unrolled), so its cycles are per iteration of a loop that ends in the harness's own
`dec; jnz` (a taken branch every iteration).

The idea that makes them portable: *filler* instructions that take a front-end slot and no
execution port. Dependency-breaking zero idioms (`vpxor xmm1, xmm1, xmm1`) are removed at
rename on every recent x86 core (Intel since Sandy Bridge, AMD since Zen), write no flags and
read nothing. Six of them and a subject instruction make a block whose time is the front
end's, so a subject that costs one more slot shows as 1 / width more cycles.

* **Issue width** (`r_max`): the most instructions per cycle over blocks of independent
  cheap instructions: zero idioms (general-purpose and vector), eliminated moves, and a mix
  spread over ALUs, vector units and loads. Not nops: Zen 4 runs twelve `nop` per cycle (two
  fused into one slot), which no real instruction mix reaches (reported beside it).
* **Macro-fusion** (`macro_fusion`): the same instructions, `cmp r8, r8; <6 fillers>;
  jne 2f; 2:` against `<6 fillers>; cmp r8, r8; jne 2f; 2:`: apart they take two slots,
  fused one, so the adjacent order runs 1 / width faster. The jump is never taken (cmp of a
  register with itself sets ZF; `je` follows instructions whose result is not zero). The
  same for test, add, sub, and, inc and dec (twice per block, on two registers).
* **Load-op slots** (`load_op_slots`, `indexed_load_op_slots`): fillers + `add r64, r64`
  against fillers + `add r64, [base + disp]` and `add r64, [base + index + disp]`: a
  micro-fused load-op costs no more slots than the register form, an unlaminated one one
  more.
* **Paired stores** (`paired_stores`): four stores into one aligned 32-byte block against
  four into four lines: a core that commits two consecutive stores into one block at once
  (Zen 4) runs the first twice as fast; one that commits a store a cycle (Skylake) runs both
  alike.
* **Taken loop branch** (`taken_branch`): loops whose body is k = 0..7 zero idioms; the
  fewest cycles per iteration any of them takes is the least a loop iteration costs (the
  whole series is kept: it also shows the width, k + 1 slots with the fused dec/jnz).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

FILLERS = 6                     # fillers per subject: enough to make a block front-end bound
MAX_LOOP_BODY = 7               # loop probes: bodies of 0..MAX_LOOP_BODY fillers
SNAP = 0.03                     # a width this close (relative) to an integer is that integer
FUSED_BELOW = 0.5               # adjacent order saves more than this share of a slot: fused
PAIRED_BELOW = 0.75             # stores into one block this much faster than apart: paired
# first instructions of a macro-fusible pair: (name, lines per subject register, condition
# under which the jump is not taken)
FUSION_SUBJECTS = (
    ("cmp", "cmp {r}, {r}", "jne"),
    ("test", "test {r}, {r}", "je"),
    ("add", "add {r}, r12", "je"),
    ("sub", "sub {r}, r12", "je"),
    ("and", "and {r}, {r}", "je"),
    ("inc", "inc {r}", "je"),
    ("dec", "dec {r}", "je"),
)
SUBJECT_REGISTERS = ("r8", "r9")     # two subjects per block: a register's own chain stays short
_GPR = ("r8", "r9", "r10", "r11", "r12", "r13", "r14", "rbx")
_GPR32 = ("r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "ebx")


@dataclass(frozen=True)
class Probe:
    name: str
    # Intel syntax; `2:` is a jump's target (`1:` is the harness's own loop label)
    lines: tuple[str, ...]
    loop: bool = False              # the loop body itself (cycles per iteration), not a block

    @property
    def instructions(self) -> int:
        return sum(1 for line in self.lines if not line.endswith(":"))


def fillers(n: int = FILLERS) -> list[str]:
    return [f"vpxor xmm{i}, xmm{i}, xmm{i}" for i in range(1, n + 1)]


def _width_probes() -> list[Probe]:
    return [
        Probe("width: zero idioms (general-purpose)", tuple(f"xor {r}, {r}" for r in _GPR32)),
        Probe("width: zero idioms (vector)", tuple(fillers(8))),
        Probe("width: eliminated moves", tuple(f"mov {r}, rax" for r in _GPR)),
        Probe("width: mix", ("add r8, rax", "add r9, rax", "vpaddd xmm1, xmm0, xmm0",
                             "vpaddd xmm2, xmm0, xmm0", "mov r10, qword ptr [rsi + 64]",
                             "mov r11, rax", "xor r12d, r12d", "vpxor xmm3, xmm3, xmm3")),
        Probe("nops", ("nop",) * 8),
    ]


def _fusion_probes() -> list[Probe]:
    out = []
    for name, first, jump in FUSION_SUBJECTS:
        adjacent, apart = [], []
        for r in SUBJECT_REGISTERS:
            subject = first.format(r=r)
            adjacent += fillers() + [subject, f"{jump} 2f", "2:"]
            apart += [subject] + fillers() + [f"{jump} 2f", "2:"]
        out.append(Probe(f"fusion {name}: adjacent", tuple(adjacent)))
        out.append(Probe(f"fusion {name}: apart", tuple(apart)))
    return out


LOAD_OP_SUBJECTS = (
    ("register", "add {r}, r12"),
    ("load-op", "add {r}, qword ptr [rsi + {d}]"),
    ("indexed load-op", "add {r}, qword ptr [rsi + rdi + {d}]"),
)


def _load_op_probes() -> list[Probe]:
    out = []
    for name, subject in LOAD_OP_SUBJECTS:
        lines = []
        for k, r in enumerate(SUBJECT_REGISTERS):
            lines += fillers() + [subject.format(r=r, d=64 * (k + 1))]
        out.append(Probe(f"slots: {name}", tuple(lines)))
    return out


STORE_REGISTERS = ("r8", "r9", "r10", "r11")


def _store_probes() -> list[Probe]:
    """Four 8-byte stores into one aligned 32-byte block, and into four cache lines (the
    harness's base registers point at line starts)."""
    return [Probe(f"stores: {name}", tuple(f"mov qword ptr [rsi + {64 + step * k}], {r}"
                                           for k, r in enumerate(STORE_REGISTERS)))
            for name, step in (("one block", 8), ("distinct lines", 64))]


def _loop_probes() -> list[Probe]:
    return [Probe(f"loop: {k} idioms", tuple(fillers(k)), loop=True)
            for k in range(MAX_LOOP_BODY + 1)]


def probes() -> tuple[Probe, ...]:
    return tuple(_width_probes() + _fusion_probes() + _load_op_probes() + _store_probes()
                 + _loop_probes())


# --- reading the timings -----------------------------------------------------------------

@dataclass
class FrontEnd:
    """Front-end facts of one CPU, read from the probes' cycles."""
    r_max: float | None = None
    pipeline: dict = field(default_factory=dict)        # model pipeline keys -> values
    details: dict = field(default_factory=dict)         # what each fact rests on (provenance)
    missing: list = field(default_factory=list)         # probes that gave no number


def snap_width(ipc: float) -> float:
    nearest = round(ipc)
    return float(nearest) if nearest and abs(ipc - nearest) <= SNAP * nearest else round(ipc, 2)


def read_frontend(cycles: dict[str, float | None], floor: float | None = None) -> FrontEnd:
    """cycles[probe name]: cycles per copy (block probes) or per iteration (loop probes).
    floor: instructions per cycle this core is known to sustain (a measured singleton's rate):
    a width probe below it ran on a disturbed front end (a busy sibling thread), and the
    width is at least the floor."""
    out = FrontEnd()
    by_name = {p.name: p for p in probes()}
    out.missing = sorted(n for n in by_name if cycles.get(n) is None)

    def ipc(name):
        c = cycles.get(name)
        return by_name[name].instructions / c if c else None

    widths = {n: ipc(n) for n in by_name if n.startswith("width:")}
    best = max((v for v in widths.values() if v), default=None)
    out.details["instructions_per_cycle"] = {n: _round(v) for n, v in widths.items()}
    if ipc("nops"):
        out.details["nops_per_cycle"] = _round(ipc("nops"))
    if best is None:
        return out
    if floor:
        out.details["width_floor"] = _round(floor)
        if best < floor * (1 - SNAP):
            out.details["width_from"] = "floor"
            best = floor
    out.r_max = snap_width(best)
    slot = 1.0 / out.r_max

    fused, saved = {}, {}
    for name, _, _ in FUSION_SUBJECTS:
        a, b = cycles.get(f"fusion {name}: adjacent"), cycles.get(f"fusion {name}: apart")
        if a is not None and b is not None:
            saved[name] = (b - a) / len(SUBJECT_REGISTERS) / slot
            fused[name] = saved[name] > FUSED_BELOW
    if "cmp" in saved and "test" in saved and fused["cmp"] != fused["test"]:
        # one fact read twice (every core that fuses one fuses the other: Intel since Nehalem,
        # AMD since Zen); noise on one probe decided one of them: both from their mean
        fused["cmp"] = fused["test"] = (saved["cmp"] + saved["test"]) / 2 > FUSED_BELOW
    out.details["macro_fusion"] = fused
    out.details["macro_fusion_slots_saved"] = {n: _round(v) for n, v in saved.items()}
    if "cmp" in fused:
        out.pipeline["macro_fusion"] = 1 if fused["cmp"] else 0

    reg = cycles.get("slots: register")
    slots = {}
    for name, key in (("load-op", "load_op_slots"), ("indexed load-op", "indexed_load_op_slots")):
        c = cycles.get(f"slots: {name}")
        if reg is not None and c is not None:
            extra = (c - reg) / len(SUBJECT_REGISTERS) / slot
            out.pipeline[key] = slots[name] = int(min(3, max(1, 1 + round(extra))))
    out.details["load_op_slots"] = slots

    one, apart = cycles.get("stores: one block"), cycles.get("stores: distinct lines")
    if one and apart:
        out.details["stores_per_cycle"] = {"one block": _round(len(STORE_REGISTERS) / one),
                                           "distinct lines": _round(len(STORE_REGISTERS) / apart)}
        out.pipeline["paired_stores"] = 1 if one < PAIRED_BELOW * apart else 0

    loops = {int(n.split()[1]): cycles.get(n) for n in by_name if n.startswith("loop:")}
    measured = [c for c in loops.values() if c is not None]
    out.details["loop_cycles_per_iteration"] = {str(k): _round(v) for k, v in sorted(loops.items())}
    if measured:
        out.pipeline["taken_branch"] = _snap_cycles(min(measured))
    return out


def doubts(front: FrontEnd, floor: float | None = None) -> list[str]:
    """Why a reading may come from a disturbed front end (a busy sibling thread slows every
    probe; measuring again later helps): probes without a number, a width below the floor,
    a loop iteration slower than one cycle (the fastest loop on every recent core), cmp and
    test disagreeing on macro-fusion."""
    out = [f"no number for {name}" for name in front.missing]
    best = max((v for v in front.details.get("instructions_per_cycle", {}).values() if v),
               default=None)
    if floor and best is not None and best < floor * (1 - SNAP):
        out.append(f"the width probes ({best:.2f} per cycle) are below the floor ({floor:.2f})")
    if front.pipeline.get("taken_branch", 1.0) > 1.0:
        out.append(f"a loop iteration takes {front.pipeline['taken_branch']} cycles")
    saved = front.details.get("macro_fusion_slots_saved", {})
    if "cmp" in saved and "test" in saved and \
            (saved["cmp"] > FUSED_BELOW) != (saved["test"] > FUSED_BELOW):
        # every core that fuses one fuses the other (Intel since Nehalem, AMD since Zen)
        out.append("cmp and test read differently for macro-fusion")
    return out


def _round(x):
    return None if x is None else round(x, 3)


def _snap_cycles(c: float) -> float:
    """Cycles of a loop iteration: the nearest multiple of 1/4 cycle within 3%, else 2 decimals."""
    nearest = round(c * 4) / 4
    return nearest if nearest and math.isclose(c, nearest, rel_tol=SNAP) else round(c, 2)
