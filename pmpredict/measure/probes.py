"""Front-end probes: the blocks whose timings give the issue width, macro-fusion (per first
instruction), the slots of a load-op (per class), the block within which stores pair, the stack
engine's sync, the window and the cost of a taken loop branch, and how to read them.

Engine layer (pure: no I/O). Every probe is x86-64 code in Intel syntax. A *block* probe is
timed as `pmpredict measure` times a basic block (unrolled u and 2u times, the difference
cancels the loop), so its cycles are per copy; a *loop* probe is the body of the loop itself
(not unrolled), so its cycles are per iteration of a loop that ends in the harness's own
`dec; jnz` (a taken branch every iteration).

The idea that makes them portable: *filler* instructions that take a front-end slot and no
execution port. Dependency-breaking zero idioms (`vpxor xmm1, xmm1, xmm1`) are removed at
rename on every recent x86 core (Intel since Sandy Bridge, AMD since Zen), write no flags and
read nothing. Six of them and a subject instruction make a block whose time is the front
end's, so a subject that costs one more slot shows as 1 / width more cycles. That rests on
the fillers running at the width: where they alone run slower (measured on Zen 5: six a
cycle of eight), the slot readings (fusion, load-ops, nops) are in doubt and say so
(`premise`).

* **Issue width** (`r_max`): the most instructions per cycle over blocks of independent
  cheap instructions: zero idioms (general-purpose and vector), eliminated moves, and a mix
  spread over ALUs, vector units and loads. Not nops: where two share a slot (nop_fusion) they
  run at a rate no real instruction mix reaches (measured on Zen 4: twelve `nop` per cycle;
  reported beside it).
* **Macro-fusion** (`macro_fusion`): the same instructions, `cmp r8, r8; <6 fillers>;
  jne 2f; 2:` against `<6 fillers>; cmp r8, r8; jne 2f; 2:`: apart they take two slots,
  fused one, so the adjacent order runs 1 / width faster. The jump is never taken (cmp of a
  register with itself sets ZF; `je` follows instructions whose result is not zero). The
  same for test, add, sub, and, inc and dec (twice per block, on two registers).
* **Load-op slots** (`load_op_slots`, `indexed_load_op_slots`): fillers + `add r64, r64`
  against fillers + `add r64, [base + disp]` and `add r64, [base + index + disp]`: a
  micro-fused load-op costs no more slots than the register form, an unlaminated one one
  more.
  The same for vector load-ops (`vector_load_op_slots`, `indexed_vector_load_op_slots`):
  `vpaddd x, x, x` against `vpaddd x, x, [base + disp]` and `[base + index + disp]` (cores
  differ by class: Intel's rule since Haswell keeps a two-operand `add r, [b + i]`
  micro-fused and unlaminates a three-operand `vpaddd`; measured on Zen 4: two slots for the
  integer one and one for the vector one).
* **Paired stores** (`paired_stores`, `paired_store_bytes`): two 8-byte stores a copy, at
  offsets (8, 16) from the base (one 32-byte block), (24, 32) (one line, two blocks), (8, 72)
  (adjacent lines of one 128-byte block) and (8, 200) (lines apart; the harness's base
  register is the start of a page). A store a cycle where they do not pair (every core in
  scope), two where they do: the largest reach that pairs is the block (measured on Zen 4:
  32 bytes; a core that commits two stores to one line together: 64; stores 192 bytes apart
  pairing: anywhere, a page for the engine).
* **Stores of a condition** (`paired_store_flags`): `setne byte ptr [rsi + 8]; sete byte ptr
  [rsi + 16]`: whether two stores whose bytes the instructions make from the flags pair with
  each other as two `mov byte ptr [m], r8b` do (measured on Zen 4: no, a store a cycle; a
  setcc store beside a register's store pairs).
* **Store commits** (`store_commits`): four stores of different forms a copy (a 64-bit
  register, a 32-bit immediate, a vector register's low 64 bits, a byte register), each in a
  line of its own: how many stores commit a cycle whatever their forms (measured on Zen 4:
  one). The forms' inferred ports cannot say it: each form alone runs one a cycle, so the
  inference may put two forms on two ports, as if they could commit in one cycle.
* **Splits** (`split_load_extra`, `split_store_extra`, `store_split_bytes`): four 8-byte loads,
  and four stores, each in a line of its own, at the line's start and 60 bytes in (across the
  line's end): how many times more a split access runs; then the four stores 28 and 12 bytes
  in (across a 32- and a 16-byte block inside the line): the smallest block whose stores cost
  at least halfway to a line split splits a store (measured on Zen 4: 32).
* **Streams** (`memory_bytes_per_cycle`): four groups of two 32-byte loads and a 32-byte
  store a copy (loads in four lines, stores in four others, no alias), against the eight loads
  alone and the four stores alone: where the groups run slower than both, the L1 serves fewer
  bytes a cycle than the forms' ports allow (the issue's Zen 3 daxpy: 13.3 cycles where its
  ports allow 8); the fact is the group's bytes a cycle, 0 where no such limit shows
  (measured on Zen 4: 4.00 cycles a copy, as the loads alone and the stores alone).
* **Accesses** (`memory_accesses_per_cycle`): four 8-byte loads from lines of their own and
  four stores that pair two by two, interleaved, against the loads alone and the stores
  alone: where the eight run slower than both, the core starts fewer accesses a cycle than
  the forms' ports allow; the fact is eight over their cycles, whole, 0 where no such limit
  shows (measured on Zen 4: 2.67 cycles a copy, the parts 1.33 and 2.00: 3).
* **Upper halves** (`sse_upper_merge`): a legacy-SSE load into xmm0 and `paddd xmm0, xmm0`,
  beside `vpaddd ymm8, ymm9, ymm9` (the upper halves dirty) and beside the xmm form (clean):
  where the load waits for xmm0's old value, the dirty probe runs the load and the add as a
  chain (measured on Zen 4: 2.00 cycles a copy, clean 1.00).
* **Stack sync** (`stack_sync_latency`): `push r8; add rsp, 8` against `sub rsp, 8; add rsp,
  8`. The push updates rsp in the stack engine; the add names rsp, so a sync uop applies
  the engine's offset first: the loop-carried chain is sync + add, against two plain ALU
  operations on rsp (one cycle each on every core): the sync is the difference. Whether a
  read waits for it too (`stack_sync_reads`): `pop r8; mov rax, rsp` against `pop r8; mov
  rax, rbx` (measured on Zen 4: 0.32 and 0.33, no; a sync a copy would make it at least a
  cycle).
* **Window** (`window`): copies of `vmovaps xmm0, xmm15` + a chain of WINDOW_CHAIN `vdivss
  xmm0, xmm0, xmm14` (about 220 cycles, few scheduler entries) + zero idioms, S instructions
  a copy, for S on a geometric grid. Each copy's chain is its own, so while two copies fit in
  the reorder buffer their chains overlap and a copy takes well under the chain's time; from
  the S where one copy no longer leaves room for the next one's chain, a copy takes at least
  the chain (measured alone, loop-carried). The window is the largest S before that. Zero
  idioms take a reorder-buffer entry and nothing else (no port, no scheduler entry); `nop`s
  would not do (a core may keep more of them in flight than its window has entries; measured
  on Zen 4: more than 700).
* **Nops** (`nop_fusion`, `nop_fusion_vector`): fillers + an integer instruction (`lea r10,
  [r9 + 8]`) against the same with a `nop` after it, and the same after a vector instruction
  (`vpaddd xmm7, xmm0, xmm0`): a nop that shares the slot of the instruction before it costs
  nothing (measured on Zen 4: after `lea`, a load, a store, an ALU operation or another nop,
  not after `vpaddd` or a vector zero idiom; twelve nops a cycle, two a slot).
* **Taken loop branch** (`taken_branch`): loops whose body is k = 0..7 zero idioms; the
  fewest cycles per iteration any of them takes is the least a loop iteration costs (the
  whole series is kept: it also shows the width, k + 1 slots with the fused dec/jnz).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from pmpredict.model.facts import FUSION_KEYS, STORE_SPLIT_BLOCKS

FILLERS = 6                     # fillers per subject: enough to make a block front-end bound
MAX_LOOP_BODY = 7               # loop probes: bodies of 0..MAX_LOOP_BODY fillers
SNAP = 0.03                     # a width this close (relative) to an integer is that integer
FUSED_BELOW = 0.5               # adjacent order saves more than this share of a slot: fused
# a nop adds no slot or one: a reading outside these, or this close to the half between them,
# is a disturbance's (an Intel guest beside a busy vCPU read 0.9-1.27 slots in six rounds)
NOP_SLOTS_PLAUSIBLE = (-0.5, 1.5)
NOP_SLOTS_UNCLEAR = 0.15
PAIRED_BELOW = 0.75             # cycles per store below which two stores commit together
# a store pair's cycles per store between these reads neither as paired (0.5) nor as one a
# cycle (1): noise slows a probe by a tenth at most on a quiet core
UNCLEAR_STORES = (PAIRED_BELOW - 0.1, 0.9)
# first instructions that fuse alike on every core (Intel since Sandy Bridge, AMD since Zen):
# one fact read twice; a disagreement is noise on one probe
FUSION_ALIKE = (("cmp", "test"), ("add", "sub"), ("inc", "dec"))
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
    # what the probe reads (width, fusion, slots, stores, nops, stack, window, loop): a doubt
    # about one reading of a family is settled by timing the family again (doubted_probes)
    family: str
    loop: bool = False              # the loop body itself (cycles per iteration), not a block

    @property
    def instructions(self) -> int:
        return sum(1 for line in self.lines if not line.endswith(":"))


def fillers(n: int = FILLERS) -> list[str]:
    return [f"vpxor xmm{i}, xmm{i}, xmm{i}" for i in range(1, n + 1)]


def _width_probes() -> list[Probe]:
    return [
        Probe("width: zero idioms (general-purpose)", tuple(f"xor {r}, {r}" for r in _GPR32),
              family="width"),
        Probe("width: zero idioms (vector)", tuple(fillers(8)), family="width"),
        Probe("width: eliminated moves", tuple(f"mov {r}, rax" for r in _GPR), family="width"),
        Probe("width: mix", ("add r8, rax", "add r9, rax", "vpaddd xmm1, xmm0, xmm0",
                             "vpaddd xmm2, xmm0, xmm0", "mov r10, qword ptr [rsi + 64]",
                             "mov r11, rax", "xor r12d, r12d", "vpxor xmm3, xmm3, xmm3"),
              family="width"),
        Probe("nops", ("nop",) * 8, family="nops"),
    ]


def _fusion_probes() -> list[Probe]:
    out = []
    for name, first, jump in FUSION_SUBJECTS:
        adjacent, apart = [], []
        for r in SUBJECT_REGISTERS:
            subject = first.format(r=r)
            adjacent += fillers() + [subject, f"{jump} 2f", "2:"]
            apart += [subject] + fillers() + [f"{jump} 2f", "2:"]
        out.append(Probe(f"fusion {name}: adjacent", tuple(adjacent), family="fusion"))
        out.append(Probe(f"fusion {name}: apart", tuple(apart), family="fusion"))
    return out


LOAD_OP_SUBJECTS = (
    ("register", "add {r}, r12"),
    ("load-op", "add {r}, qword ptr [rsi + {d}]"),
    ("indexed load-op", "add {r}, qword ptr [rsi + rdi + {d}]"),
    ("vector register", "vpaddd {v}, xmm0, xmm0"),
    ("vector load-op", "vpaddd {v}, xmm0, xmmword ptr [rsi + {d}]"),
    ("vector indexed load-op", "vpaddd {v}, xmm0, xmmword ptr [rsi + rdi + {d}]"),
)
VECTOR_SUBJECTS = ("xmm7", "xmm8")       # beside the fillers' xmm1..xmm6
# (load-op probe, its register reference, the pipeline key)
LOAD_OP_KEYS = (("load-op", "register", "load_op_slots"),
                ("indexed load-op", "register", "indexed_load_op_slots"),
                ("vector load-op", "vector register", "vector_load_op_slots"),
                ("vector indexed load-op", "vector register", "indexed_vector_load_op_slots"))


def _load_op_probes() -> list[Probe]:
    out = []
    for name, subject in LOAD_OP_SUBJECTS:
        lines = []
        for k, (r, v) in enumerate(zip(SUBJECT_REGISTERS, VECTOR_SUBJECTS)):
            lines += fillers() + [subject.format(r=r, v=v, d=64 * (k + 1))]
        out.append(Probe(f"slots: {name}", tuple(lines), family="slots"))
    return out


# two 8-byte stores a copy, at these offsets from the base (the start of a page): the reach
# over which they pair, and the block the engine then pairs stores in (paired_store_bytes)
STORE_PAIRS = (
    ("one 32-byte block", (8, 16), 32),
    ("one line, two 32-byte blocks", (24, 32), 64),
    ("adjacent lines", (8, 72), 128),
    # stores 192 bytes apart pair: anywhere, as far as a probe can tell; for the engine
    # (which pairs stores of one base register only) a page
    ("lines apart", (8, 200), 4096),
)
STORE_REGISTERS = ("r8", "r9")


# two vector stores a copy, each pair within one 32-byte block (16-byte stores) or one line
# (32-byte stores): whether stores that wide pair (paired_store_width; measured on Zen 4:
# 8-byte stores pair, 16- and 32-byte ones do not, a store a cycle)
WIDE_STORE_PAIRS = (
    ("two 16-byte stores in one 32-byte block", ("xmmword", "xmm8", 0), ("xmmword", "xmm9", 16),
     16, 32),
    ("two 32-byte stores in one line", ("ymmword", "ymm8", 0), ("ymmword", "ymm9", 32), 32, 64),
)


# two 8-byte stores of vector registers a copy, in one 32-byte block: whether a vector
# register's data pairs at all (paired_store_vector; measured on Zen 4: no, `vmovss` /
# `vmovsd` / `movq` from xmm a store a cycle, where general-purpose and immediate stores pair)
VECTOR_STORE_PAIR = "two 8-byte vector-register stores in one 32-byte block"

# a vector register's store (8, then 16 bytes) and a general-purpose one a copy, in one 32-byte
# block: the widest vector store that pairs with a store of another kind where two do not
# (paired_store_mixed; measured on Zen 4: 16, 1.00 cycles a copy both; a ymm store and a
# register's in one block 2.00)
MIXED_STORE_PAIRS = {
    8: ("an 8-byte vector-register and a general-purpose store in one 32-byte block",
        ("vmovq qword ptr [rsi + 8], xmm8", "mov qword ptr [rsi + 16], r8")),
    16: ("a 16-byte vector-register and a general-purpose store in one 32-byte block",
         ("vmovdqu xmmword ptr [rsi], xmm8", "mov qword ptr [rsi + 16], r8")),
}


# two 8-byte stores a copy in one 32-byte block, each read back by the load after it: whether
# a store a load reads pairs (paired_store_forwarded; measured on Zen 4: no, 2.00 cycles a copy,
# where two stores that pair with two loads of other lines beside them take 1.33, the
# three address ports' share)
FORWARDED_STORE_PAIR = "two 8-byte stores in one 32-byte block, each read back"
# paired, the four accesses share three address ports or more: 0.67 cycles a store at most
FORWARDED_UNCLEAR = (0.7, 0.9)
FORWARDED_STORE_LINES = ("mov qword ptr [rsi + 8], r8", "mov r10, qword ptr [rsi + 8]",
                         "mov qword ptr [rsi + 16], r9", "mov r11, qword ptr [rsi + 16]")


# two stores of a condition a copy (setcc to memory), in one 32-byte block: whether two stores
# whose bytes the instructions make from the flags pair with each other (paired_store_flags;
# measured on Zen 4: no, a store a cycle, where two `mov byte ptr [m], r8b` pair, and so does
# a setcc store with a register's)
FLAG_STORE_PAIR = "two condition stores (setcc) in one 32-byte block"
FLAG_STORE_LINES = ("setne byte ptr [rsi + 8]", "sete byte ptr [rsi + 16]")


# four stores of different forms a copy, each in a line of its own (192 bytes apart: no two
# pair): how many stores the core commits a cycle whatever their forms (store_commits;
# measured on Zen 4: one, where the forms' own ports would allow more: an inferred mapping
# puts stores of different forms on different ports, as each form alone runs one a cycle)
STORE_COMMITS = "four stores of different forms, lines apart"
STORE_COMMIT_LINES = ("mov qword ptr [rsi + 8], r8", "mov dword ptr [rsi + 200], 1",
                      "vmovq qword ptr [rsi + 392], xmm8", "mov byte ptr [rsi + 584], r9b")
COMMITS_SNAP = 0.15             # stores a cycle this close to a whole number: that number


# a store in one block, then three in the next, a copy, for each block size the pairs above
# can find: whether the stores a run of same-block stores leaves over (its 3rd, 5th...)
# share commits (paired_store_leftover: the loop's stores then commit at max(block starts,
# half of all); measured on Zen 4, 32-byte blocks: 2.00 cycles a copy, where pairing runs
# alone commits 3)
LEFTOVER_STORES = {32: (16, 32, 40, 48), 64: (32, 64, 72, 80)}
LEFTOVER_REGISTERS = ("r8", "r9", "r10", "r11")
LEFTOVER_SHARED_BELOW = 2.5     # cycles a copy: 2 where they share, 3 where they commit alone
LEFTOVER_UNCLEAR = 0.2          # ... and a reading this close to the threshold is suspect


def _leftover_probe(block: int) -> str:
    return f"a store, then three in the next {block}-byte block"


def _store_probes() -> list[Probe]:
    narrow = [Probe(f"stores: {name}", tuple(f"mov qword ptr [rsi + {d}], {r}"
                                             for d, r in zip(offsets, STORE_REGISTERS)),
                    family="stores")
              for name, offsets, _ in STORE_PAIRS]
    wide = [Probe(f"stores: {name}", tuple(f"vmovdqu {size} ptr [rsi + {d}], {r}"
                                           for size, r, d in (a, b)), family="stores")
            for name, a, b, _, _ in WIDE_STORE_PAIRS]
    vector = [Probe(f"stores: {VECTOR_STORE_PAIR}", ("vmovq qword ptr [rsi + 8], xmm8",
                                                     "vmovq qword ptr [rsi + 16], xmm9"),
                    family="stores")]
    commits = [Probe(f"stores: {STORE_COMMITS}", STORE_COMMIT_LINES, family="stores")]
    forwarded = [Probe(f"stores: {FORWARDED_STORE_PAIR}", FORWARDED_STORE_LINES,
                       family="stores")]
    flags = [Probe(f"stores: {FLAG_STORE_PAIR}", FLAG_STORE_LINES, family="stores")]
    mixed = [Probe(f"stores: {name}", lines, family="stores")
             for name, lines in MIXED_STORE_PAIRS.values()]
    leftover = [Probe(f"stores: {_leftover_probe(block)}",
                      tuple(f"mov qword ptr [rsi + {d}], {r}"
                            for d, r in zip(offsets, LEFTOVER_REGISTERS)), family="stores")
                for block, offsets in LEFTOVER_STORES.items()]
    return narrow + wide + vector + mixed + commits + forwarded + flags + leftover


# four loads, and four stores, a copy, each in a line of its own, first at the line's start,
# then 60 bytes in (8 bytes that cross into the next line): how many times more a split access
# runs its uops (split_load_extra, split_store_extra; measured on Zen 4: once more, loads 1.33
# and 2.67 cycles a copy, stores 4.00 and 8.00). The lines lie 192 bytes apart, past the
# store probes' lines and clear of 4K aliasing (one base).
SPLIT_LINES = (512, 704, 896, 1088)
SPLIT_AT = 60
SPLIT_REGISTERS = ("r8", "r9", "r10", "r11")
SPLIT_UNCLEAR = 0.25            # a ratio this far from a whole number is suspect


# the same four stores across a smaller aligned block inside their lines (8 bytes at 28 and at
# 12): a store that costs there what it costs across a line splits at that block
# (store_split_bytes; measured on Zen 4: at 28 as across a line, 8.00 cycles a copy)
LINE_BYTES = 64                 # a cache line on every core in scope


def _split_probe(kind: str, across: bool) -> str:
    return f"splits: four {kind} {'across' if across else 'within'} lines"


def _sub_line_probe(block: int) -> str:
    return f"splits: four stores across {block}-byte blocks"


def _split_probes() -> list[Probe]:
    out = []
    for across in (False, True):
        at = SPLIT_AT if across else 0
        out.append(Probe(_split_probe("loads", across),
                         tuple(f"mov {r}, qword ptr [rsi + {d + at}]"
                               for d, r in zip(SPLIT_LINES, SPLIT_REGISTERS)), family="splits"))
        out.append(Probe(_split_probe("stores", across),
                         tuple(f"mov qword ptr [rsi + {d + at}], {r}"
                               for d, r in zip(SPLIT_LINES, SPLIT_REGISTERS)), family="splits"))
    for block in STORE_SPLIT_BLOCKS:
        out.append(Probe(_sub_line_probe(block),
                         tuple(f"mov qword ptr [rsi + {d + block - 4}], {r}"
                               for d, r in zip(SPLIT_LINES, SPLIT_REGISTERS)), family="splits"))
    return out


# four groups of two 32-byte loads and a 32-byte store, interleaved as compilers emit a
# stream's loads and stores (on Zen 4 the loads all first, then the stores, ran 4.50 cycles a
# copy, interleaved 4.00): loads from four lines, stores to four others a page-offset apart
# from them (no 4K aliasing), from registers no probe line writes
STREAM_LOADS = tuple((f"ymm{k}", 64 * (k // 2) + 32 * (k % 2)) for k in range(8))
STREAM_STORES = tuple((f"ymm{8 + k}", 1024 + 64 * k) for k in range(4))
STREAM_BYTES = 32
STREAM_SLOWER = 0.05            # the groups this much slower (relative) than both parts: a limit


def _stream_probe(part: str) -> str:
    return f"streams: {part}"


def _stream_lines(loads: bool, stores: bool) -> tuple[str, ...]:
    out = []
    for k, (data, at) in enumerate(STREAM_STORES):
        if loads:
            out += [f"vmovdqu {reg}, ymmword ptr [rsi + {d}]"
                    for reg, d in STREAM_LOADS[2 * k:2 * k + 2]]
        if stores:
            out.append(f"vmovdqu ymmword ptr [rsi + {at}], {data}")
    return tuple(out)


def _stream_probes() -> list[Probe]:
    return [Probe(_stream_probe(part), _stream_lines(loads, stores), family="streams")
            for part, loads, stores in (("groups", True, True), ("loads", True, False),
                                        ("stores", False, True))]


# four 8-byte loads from lines of their own and four stores that pair two by two (two 32-byte
# blocks), interleaved, against the loads alone and the stores alone: where the eight run
# slower than both parts, the core starts fewer accesses a cycle than the forms' ports allow
# (memory_accesses_per_cycle; Zen 4: 3, 2.67 cycles a copy, the loads 1.33, the stores 2.00)
ACCESS_LOADS = tuple(f"mov {r}, qword ptr [rsi + {d}]"
                     for r, d in zip(("r10", "r11", "r12", "r13"), (256, 512, 768, 1024)))
ACCESS_STORES = tuple(f"mov qword ptr [rsi + {d}], {r}"
                      for d, r in zip((8, 16, 72, 80), ("r8", "r9", "r8", "r9")))
ACCESS_SLOWER = 0.10            # the eight this much slower (relative) than both parts: a limit
ACCESS_WHOLE = 0.15             # accesses a cycle this close to a whole number: that number


def _access_probe(part: str) -> str:
    return f"accesses: {part}"


def _access_probes() -> list[Probe]:
    mixed = tuple(line for pair in zip(ACCESS_LOADS, ACCESS_STORES) for line in pair)
    return [Probe(_access_probe(part), lines, family="accesses")
            for part, lines in (("loads and stores", mixed), ("loads", ACCESS_LOADS),
                                ("stores", ACCESS_STORES))]


# a vector load across a line (16 bytes, 60 into the first of SPLIT_LINES), two single vector
# loads in lines of their own, and the split with one of them: a split that runs alone in its
# cycle makes the last slower than its parts together (split_load_alone; Zen 4: 1.00, 1.00
# and 2.00 cycles a copy, where a port mapping allows 1.50 at most); the two single loads give
# the core's vector loads a cycle (vector_loads_per_cycle; Zen 4: 2)
VECTOR_SPLIT = f"vmovdqu xmm0, xmmword ptr [rsi + {SPLIT_LINES[0] + SPLIT_AT}]"
VECTOR_SINGLES = tuple(f"movss {reg}, dword ptr [rsi + {d}]"
                       for reg, d in (("xmm1", SPLIT_LINES[1]), ("xmm2", SPLIT_LINES[2])))
ALONE_ABOVE = 0.2               # cycles beyond the parts' sum that say a split runs alone


def _vector_split_probe(part: str) -> str:
    return f"vector splits: {part}"


def _vector_split_probes() -> list[Probe]:
    return [Probe(_vector_split_probe(part), lines, family="vector splits")
            for part, lines in (("a load across a line", (VECTOR_SPLIT,)),
                                ("two single loads", VECTOR_SINGLES),
                                ("the split and a single load",
                                 (VECTOR_SPLIT, VECTOR_SINGLES[0])))]


# the instruction a nop follows, by class: whether the nop shares its slot (nop_fusion: a
# general-purpose instruction; nop_fusion_vector: a vector one)
NOP_SUBJECTS = (("integer", "lea r10, [r9 + 8]", "nop_fusion"),
                ("vector", "vpaddd xmm7, xmm0, xmm0", "nop_fusion_vector"))


def _nop_probe(name: str, nop: bool) -> str:
    return f"nops: after an {name} instruction" if nop else f"nops: an {name} instruction"


def _nop_probes() -> list[Probe]:
    """Twice a copy: six fillers and the subject, then (or not) a nop."""
    out = []
    for name, subject, _ in NOP_SUBJECTS:
        for nop in (False, True):
            copy = fillers() + [subject] + (["nop"] if nop else [])
            out.append(Probe(_nop_probe(name, nop), tuple(copy * 2), family="nops"))
    return out


STACK_PROBES = (
    ("push, add rsp", ("push r8", "add rsp, 8")),      # the sync uop + the add, a copy
    ("sub rsp, add rsp", ("sub rsp, 8", "add rsp, 8")),  # two ALU operations on rsp
    # a read of rsp after a pop, against a read of another register: pops are loads (two
    # or three a cycle), so a sync a copy on rsp's chain shows against the pops' own rate
    ("pop, read rsp", ("pop r8", "mov rax, rsp")),
    ("pop, read rbx", ("pop r8", "mov rax, rbx")),
)
# a read of rsp that costs at least this share of the sync more than the reference: it waits
READ_SYNC_SHARE = 0.5
# an ALU operation on rsp takes one cycle on every core: a reading this far above was slowed;
# a sync this close to a whole number of cycles is that number
STACK_SNAP = 0.1


def _stack_probes() -> list[Probe]:
    return [Probe(f"stack: {name}", lines, family="stack") for name, lines in STACK_PROBES]


# dependent divisions per copy (measured on Zen 4: about 220 cycles)
WINDOW_CHAIN = 20
# instructions per copy: a geometric grid (5% apart) from 128 to about 1000, past every
# reorder buffer in scope (Skylake 224, Zen 4 320, Golden Cove 512)
WINDOW_SIZES = tuple(round(128 * 1.05 ** i) for i in range(43))
NO_OVERLAP = 0.97                 # a copy this close to the chain's own time: no overlap


def _window_copy(size: int) -> tuple[str, ...]:
    chain = ["vmovaps xmm0, xmm15"] + ["vdivss xmm0, xmm0, xmm14"] * WINDOW_CHAIN
    return tuple(chain + [f"vpxor xmm{r}, xmm{r}, xmm{r}"
                          for r in (1 + i % 12 for i in range(size - len(chain)))])


def _window_probes() -> list[Probe]:
    """The chain alone (loop-carried: its latency per copy), then a copy of each size. The
    values stay 1.0f (the harness's vector registers), so every division takes as long."""
    return [Probe("window: chain", ("vdivss xmm0, xmm0, xmm14",) * WINDOW_CHAIN,
                  family="window")] + \
        [Probe(f"window: {size} instructions", _window_copy(size), family="window")
         for size in WINDOW_SIZES]


def _loop_probes() -> list[Probe]:
    return [Probe(f"loop: {k} idioms", tuple(fillers(k)), loop=True, family="loop")
            for k in range(MAX_LOOP_BODY + 1)]


# a legacy-SSE load into xmm0 and an operation on it, beside a 256-bit AVX write (the upper
# halves dirty) and beside a 128-bit one (clean); the AVX writes chain nothing: where the load
# waits for xmm0's old value, its chain with the paddd is 2 cycles a copy (sse_upper_merge;
# measured on Zen 4: 2.00 against 1.00)
UPPER_LINES = ("movdqu xmm0, xmmword ptr [rsi + 64]", "paddd xmm0, xmm0")
UPPER_MERGE_ABOVE = 0.75        # dirty this many cycles slower than clean: the load waited


def _upper_probe(dirty: bool) -> str:
    return f"upper: {'dirty' if dirty else 'clean'}"


def _upper_probes() -> list[Probe]:
    return [Probe(_upper_probe(dirty), (f"vpaddd {w}8, {w}9, {w}9",) + UPPER_LINES,
                  family="upper") for dirty, w in ((True, "ymm"), (False, "xmm"))]


def probes() -> tuple[Probe, ...]:
    return tuple(_width_probes() + _fusion_probes() + _load_op_probes() + _store_probes()
                 + _split_probes() + _nop_probes() + _stack_probes() + _loop_probes()
                 + _window_probes() + _upper_probes() + _stream_probes()
                 + _vector_split_probes() + _access_probes())


# --- reading the timings -----------------------------------------------------------------

# each reader's group (model/facts.py names it as the probe of the facts it measures) and the
# pipeline keys it may produce
READERS: dict[str, tuple[str, ...]] = {}


def produces(group: str, *keys: str):
    """Declare that a reader of the probes' cycles measures these pipeline keys."""
    def declare(reader):
        READERS[group] = keys
        reader.group, reader.keys = group, keys
        return reader
    return declare


def version() -> str:
    """The probes' generation, as a model's provenance.front_end keeps it: a digest of every
    probe's code and of the keys the readers produce, so a model measured by other probes is
    measured again."""
    digest = hashlib.sha256()
    for probe in probes():
        digest.update(repr((probe.name, probe.lines, probe.loop)).encode())
    digest.update(repr(sorted(READERS.items())).encode())
    return digest.hexdigest()[:16]

@dataclass
class ProbeReading:
    """Front-end facts of one CPU, read from the probes' cycles."""
    r_max: float | None = None
    pipeline: dict = field(default_factory=dict)        # model pipeline keys -> values
    details: dict = field(default_factory=dict)         # what each fact rests on (provenance)
    missing: list = field(default_factory=list)         # probes that gave no number
    how: dict = field(default_factory=dict)             # pipeline key -> what it rests on, short
    suspect: list = field(default_factory=list)         # readings a disturbance may explain
    premise: list = field(default_factory=list)         # probes whose premise this core breaks
    # the probe families (Probe.family) whose readings `suspect` doubts
    suspect_families: set = field(default_factory=set)


def _suspect(out: ProbeReading, family: str, why: str) -> None:
    out.suspect.append(why)
    out.suspect_families.add(family)


def snap_width(ipc: float) -> float:
    nearest = round(ipc)
    return float(nearest) if nearest and abs(ipc - nearest) <= SNAP * nearest else round(ipc, 2)


def read_frontend(cycles: dict[str, float | None], floor: float | None = None) -> ProbeReading:
    """cycles[probe name]: cycles per copy (block probes) or per iteration (loop probes).
    floor: instructions per cycle this core is known to sustain (a measured singleton's rate):
    a width probe below it ran on a disturbed front end (a busy sibling thread), and the
    width is at least the floor."""
    out = ProbeReading()
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
    # the facts that need no width: stores, the stack engine, the window
    _read_stores(cycles, out)
    _read_splits(cycles, out)
    _read_upper(cycles, out)
    _read_streams(cycles, out)
    _read_vector_splits(cycles, out)
    _read_accesses(cycles, out)
    _read_stack(cycles, out)
    _read_window(cycles, out)
    _read_loops(cycles, out)
    if best is None:
        return out
    if floor:
        out.details["width_floor"] = _round(floor)
        if best < floor * (1 - SNAP):
            out.details["width_from"] = "floor"
            best = floor
    out.r_max = snap_width(best)
    if out.r_max != int(out.r_max):       # a width is whole: a probe ran fast or slow for a while
        _suspect(out, "width", f"the width probes read {out.r_max:g} instructions a cycle, not a "
                               "whole number")
    fillers_rate = widths.get("width: zero idioms (vector)")
    if fillers_rate and fillers_rate < out.r_max * (1 - SNAP):
        out.premise.append(f"the fillers (vector zero idioms) run {fillers_rate:.2f} a cycle, "
                           f"below the width {out.r_max:g}: the slots read for fusion, "
                           "load-ops and nops are in doubt")
    _read_fusion(cycles, out, 1.0 / out.r_max)
    _read_load_ops(cycles, out, 1.0 / out.r_max)
    _read_nops(cycles, out, 1.0 / out.r_max)
    return out


@produces("loops", "taken_branch")
def _read_loops(cycles, out: ProbeReading) -> None:
    """The fewest cycles a loop of 0..MAX_LOOP_BODY zero idioms takes an iteration, as two of
    the loops read it: the small bodies all run at the taken branch's rate, so one loop alone
    below the others misread the clock (a Zen 3 cloud guest read 0.8 once, the other loops
    1.0 as every time before and after; suspect, so the probes are measured again)."""
    loops = {int(p.name.split()[1]): cycles.get(p.name) for p in _loop_probes()}
    measured = sorted(c for c in loops.values() if c is not None)
    out.details["loop_cycles_per_iteration"] = {str(k): _round(v) for k, v in sorted(loops.items())}
    if measured:
        fewest = measured[1] if len(measured) > 1 else measured[0]
        if measured[0] < fewest * (1 - SNAP):
            _suspect(out, "loop", f"one loop read {measured[0]:.2f} cycles an iteration, the "
                                  f"others {fewest:.2f} or more")
        out.pipeline["taken_branch"] = _snap_cycles(fewest)
        out.how["taken_branch"] = (f"loops of 0..{MAX_LOOP_BODY} zero idioms: the fewest cycles "
                                   "two of them read")


@produces("nops", "nop_fusion", "nop_fusion_vector")
def _read_nops(cycles, out: ProbeReading, slot: float) -> None:
    """Per class of the instruction before it: the slots a nop adds (two nops a copy); it
    shares that instruction's slot when it adds less than half a slot."""
    added = {}
    for name, subject, key in NOP_SUBJECTS:
        without, with_nop = cycles.get(_nop_probe(name, False)), cycles.get(_nop_probe(name, True))
        if without is None or with_nop is None:
            continue
        added[name] = (with_nop - without) / 2 / slot
        shares = added[name] < FUSED_BELOW
        low, high = NOP_SLOTS_PLAUSIBLE
        if not low <= added[name] <= high or abs(added[name] - FUSED_BELOW) < NOP_SLOTS_UNCLEAR:
            _suspect(out, "nops", f"a nop after {subject.split()[0]} reads {added[name]:.2f} "
                                  "slots, neither clearly none nor one")
        out.pipeline[key] = 1 if shares else 0
        out.how[key] = (f"a nop after {subject.split()[0]} adds {max(0.0, added[name]):.2f} "
                        f"slots: {'it shares the slot' if shares else 'a slot of its own'}")
    if added:
        out.details["nop_slots_after"] = {n: _round(v) for n, v in added.items()}


@produces("fusion", *dict.fromkeys(FUSION_KEYS.values()))
def _read_fusion(cycles, out: ProbeReading, slot: float) -> None:
    """Per first instruction: fused when the adjacent order saves more than half a slot a
    pair. Instructions that fuse alike everywhere (FUSION_ALIKE) and read differently are
    read from their mean (and the reading is suspect)."""
    fused, saved = {}, {}
    for name, _, _ in FUSION_SUBJECTS:
        a, b = cycles.get(f"fusion {name}: adjacent"), cycles.get(f"fusion {name}: apart")
        if a is not None and b is not None:
            saved[name] = (b - a) / len(SUBJECT_REGISTERS) / slot
            fused[name] = saved[name] > FUSED_BELOW
    for one, other in FUSION_ALIKE:
        if one in saved and other in saved and fused[one] != fused[other]:
            # noise on one probe decided one of them: both from their mean
            fused[one] = fused[other] = (saved[one] + saved[other]) / 2 > FUSED_BELOW
            _suspect(out, "fusion", f"{one} and {other} read differently for macro-fusion")
    out.details["macro_fusion"] = fused
    out.details["macro_fusion_slots_saved"] = {n: _round(v) for n, v in saved.items()}
    for name, is_fused in fused.items():
        key = FUSION_KEYS[name]
        out.pipeline[key] = 1 if is_fused else 0
        out.how[key] = (f"{'/'.join(n for n in fused if FUSION_KEYS[n] == key)} + jcc adjacent "
                        f"against apart: {'fused' if is_fused else 'not fused'}")


@produces("load-ops", *(key for _, _, key in LOAD_OP_KEYS))
def _read_load_ops(cycles, out: ProbeReading, slot: float) -> None:
    """1 + the extra cycles of a load-op over its register form, in slots."""
    slots = {}
    for name, reference, key in LOAD_OP_KEYS:
        c, reg = cycles.get(f"slots: {name}"), cycles.get(f"slots: {reference}")
        if reg is not None and c is not None:
            extra = (c - reg) / len(SUBJECT_REGISTERS) / slot
            out.pipeline[key] = slots[name] = int(min(3, max(1, 1 + round(extra))))
            subject = dict(LOAD_OP_SUBJECTS)[name].format(r="r64", v="xmm", d="disp") \
                .replace("rsi", "base").replace("rdi", "index")
            out.how[key] = f"{subject} against its register form: {slots[name]} slot(s)"
    out.details["load_op_slots"] = slots


@produces("stores", "paired_stores", "paired_store_bytes")
def _read_stores(cycles, out: ProbeReading) -> None:
    """Cycles per store of each pair of stores; the largest reach that pairs (a store a cycle
    otherwise, on every core in scope) is the block. Noise only slows a probe, so a pairing
    reading is believed; pairings that do not nest (a farther pair pairing, a nearer one
    not), or a reading between the two rates, are suspect."""
    per_store = {}
    for name, _, _ in STORE_PAIRS:
        c = cycles.get(f"stores: {name}")
        if c:
            per_store[name] = c / len(STORE_REGISTERS)
    if not per_store:
        return
    out.details["cycles_per_store"] = {n: _round(v) for n, v in per_store.items()}
    _read_store_commits(cycles, out)
    paired = [(name, offsets, size) for name, offsets, size in STORE_PAIRS
              if name in per_store and per_store[name] < PAIRED_BELOW]
    unclear = [n for n, v in per_store.items() if _unclear(v)]
    if unclear:
        _suspect(out, "stores", "stores read between one and two a cycle: " + ", ".join(unclear))
    if len(per_store) < len(STORE_PAIRS) and not paired:
        return                              # a store probe without a number: not "none"
    if not paired:
        out.details["store_pairing"] = "none"
        out.pipeline["paired_stores"] = 0
        out.how["paired_stores"] = "two stores a copy, 8 to 192 bytes apart: one a cycle"
        return
    name, offsets, size = paired[-1]
    nearer = [n for n, _, s in STORE_PAIRS if s < size]
    if any(n in per_store and per_store[n] >= PAIRED_BELOW for n in nearer):
        _suspect(out, "stores", f"stores pair {name} but not nearer")
    out.details["store_pairing"] = name
    out.pipeline["paired_stores"], out.pipeline["paired_store_bytes"] = 1, size
    out.how["paired_stores"] = out.how["paired_store_bytes"] = (
        f"two stores at [base + {offsets[0]}], [base + {offsets[1]}] ({name}) "
        f"{per_store[name]:.2f} cycles each" + ("" if paired[-1] == STORE_PAIRS[-1] else
                                                  ", farther apart one a cycle"))
    _read_wide_stores(cycles, size, out)
    _read_leftover_stores(cycles, size, out)
    _read_forwarded_stores(cycles, size, out)
    _read_flag_stores(cycles, size, out)
    _read_mixed_stores(cycles, size, out)


@produces("leftover stores", "paired_store_leftover")
def _read_leftover_stores(cycles, block: int, out: ProbeReading) -> None:
    """Whether the stores a run leaves over share commits: a store, then three in the next
    block, at 2 cycles a copy (they share) or 3 (each run pairs on its own); a reading between
    is suspect. Blocks the probes do not cover leave the fact unsaid."""
    if block not in LEFTOVER_STORES:
        return
    name = _leftover_probe(block)
    c = cycles.get(f"stores: {name}")
    if not c:
        return
    out.details.setdefault("cycles_per_store", {})[name] = _round(c / 4)
    if abs(c - LEFTOVER_SHARED_BELOW) < LEFTOVER_UNCLEAR:
        _suspect(out, "stores", f"{name}: {c:.2f} cycles a copy, between 2 and 3")
    offsets = ", ".join(f"[base + {d}]" for d in LEFTOVER_STORES[block])
    out.pipeline["paired_store_leftover"] = int(c < LEFTOVER_SHARED_BELOW)
    out.how["paired_store_leftover"] = (f"stores at {offsets} ({name}) {c:.2f} cycles a copy "
                                        "(2: the one left over shares a commit, 3: alone)")


@produces("forwarded stores", "paired_store_forwarded")
def _read_forwarded_stores(cycles, block: int, out: ProbeReading) -> None:
    """Whether a store a load reads back pairs: two such stores in one 32-byte block."""
    _read_store_pair(cycles, block, out, "paired_store_forwarded", FORWARDED_STORE_PAIR,
                     FORWARDED_STORE_LINES, FORWARDED_UNCLEAR)


@produces("flag stores", "paired_store_flags")
def _read_flag_stores(cycles, block: int, out: ProbeReading) -> None:
    """Whether two stores of a condition (setcc to memory) pair with each other: two in one
    32-byte block."""
    _read_store_pair(cycles, block, out, "paired_store_flags", FLAG_STORE_PAIR,
                     FLAG_STORE_LINES, UNCLEAR_STORES)


@produces("mixed stores", "paired_store_mixed")
def _read_mixed_stores(cycles, block: int, out: ProbeReading) -> None:
    """The widest vector register's store that pairs with a general-purpose one where two
    vector stores do not (paired_store_vector 0; where they pair, so does this pair: unsaid):
    each width in turn, 0 where the narrowest does not pair. A core pairing within less than
    32 bytes leaves it unsaid."""
    if out.pipeline.get("paired_store_vector", 1) or block < 32:
        return
    widest, said = 0, []
    for width, (name, lines) in MIXED_STORE_PAIRS.items():
        c = cycles.get(f"stores: {name}")
        if c is None:
            break
        each = c / 2
        out.details.setdefault("cycles_per_store", {})[name] = _round(each)
        if _unclear(each):
            _suspect(out, "stores", f"{name}: between one and two a cycle")
        said.append(f"{name} ({'; '.join(lines)}) {each:.2f} cycles each")
        if each >= PAIRED_BELOW:
            break
        widest = width
    if said:
        out.pipeline["paired_store_mixed"] = widest
        out.how["paired_store_mixed"] = "; ".join(said)


def _read_store_pair(cycles, block: int, out: ProbeReading, key: str, name: str, lines,
                     unclear: tuple[float, float]) -> None:
    """A flag of two stores in one 32-byte block: 1 under PAIRED_BELOW cycles a store (they
    pair), else 0; a reading inside `unclear` is suspect. A core whose pairing block is
    smaller than 32 bytes leaves the fact unsaid."""
    c = cycles.get(f"stores: {name}")
    if c is None or block < 32:
        return
    each = c / 2
    out.details.setdefault("cycles_per_store", {})[name] = _round(each)
    if unclear[0] < each < unclear[1]:
        _suspect(out, "stores", f"{name}: between one and two a cycle")
    out.pipeline[key] = int(each < PAIRED_BELOW)
    out.how[key] = f"{name} ({'; '.join(lines)}) {each:.2f} cycles each"


@produces("store commits", "store_commits")
def _read_store_commits(cycles, out: ProbeReading) -> None:
    """Stores committed a cycle apart from pairing: the four stores of different forms in
    lines of their own, a whole number a cycle (a reading between two is suspect, and taken
    as the lower: noise only slows a probe)."""
    c = cycles.get(f"stores: {STORE_COMMITS}")
    if not c:
        return
    each = c / len(STORE_COMMIT_LINES)
    out.details.setdefault("cycles_per_store", {})[STORE_COMMITS] = _round(each)
    rate = 1.0 / each
    commits = max(1, math.floor(rate + COMMITS_SNAP))
    if rate < 1 - COMMITS_SNAP:                   # every core in scope commits one a cycle
        _suspect(out, "stores", f"{STORE_COMMITS}: {rate:.2f} stores a cycle, fewer than one")
    elif abs(rate - round(rate)) > COMMITS_SNAP:
        _suspect(out, "stores", f"{STORE_COMMITS}: {rate:.2f} stores a cycle, not a whole number")
    out.pipeline["store_commits"] = commits
    out.how["store_commits"] = (f"{STORE_COMMITS} ({'; '.join(STORE_COMMIT_LINES)}): "
                                f"{each:.2f} cycles each")


@produces("wide stores", "paired_store_width", "paired_store_vector")
def _read_wide_stores(cycles, block: int, out: ProbeReading) -> None:
    """The widest store that pairs: 8 bytes (the pairs above), 16 or 32 when two vector stores
    that wide within the pairing block pair too. A pair that spans more than the block says
    nothing of its width."""
    width, said = 8, []
    for name, _, _, size, reach in WIDE_STORE_PAIRS:
        c = cycles.get(f"stores: {name}")
        if c is None or reach > block:
            continue
        each = c / 2
        out.details.setdefault("cycles_per_store", {})[name] = _round(each)
        if _unclear(each):
            _suspect(out, "stores", f"{name}: between one and two a cycle")
        if each < PAIRED_BELOW and width == size // 2:
            width = size
        said.append(f"{name} {each:.2f} cycles each")
    out.pipeline["paired_store_width"] = width
    out.how["paired_store_width"] = "8-byte stores pair" + (f"; {'; '.join(said)}" if said else "")
    c = cycles.get(f"stores: {VECTOR_STORE_PAIR}")
    if c is not None and block >= 32:
        each = c / 2
        out.details["cycles_per_store"][VECTOR_STORE_PAIR] = _round(each)
        if _unclear(each):
            _suspect(out, "stores", f"{VECTOR_STORE_PAIR}: between one and two a cycle")
        out.pipeline["paired_store_vector"] = int(each < PAIRED_BELOW)
        out.how["paired_store_vector"] = (f"{VECTOR_STORE_PAIR} (vmovq [m], xmm) "
                                          f"{each:.2f} cycles each")


@produces("splits", "split_load_extra", "split_store_extra", "store_split_bytes")
def _read_splits(cycles, out: ProbeReading) -> None:
    """How many times more an access across a line runs: the split probe over its twin within
    lines, less one, whole (a ratio between two whole numbers is suspect). Stores that pair
    within lines (under a store a cycle) say nothing of a split: no fact."""
    for kind, key in (("loads", "split_load_extra"), ("stores", "split_store_extra")):
        within = cycles.get(_split_probe(kind, False))
        across = cycles.get(_split_probe(kind, True))
        if not within or not across:
            continue
        each = within / len(SPLIT_LINES)
        if kind == "stores" and each < PAIRED_BELOW:
            _suspect(out, "splits", f"stores lines apart pair ({each:.2f} cycles each): "
                                    "a split store's cost not read")
            continue
        ratio = across / within
        extra = max(0, round(ratio - 1))
        out.details.setdefault("split_ratio", {})[kind] = _round(ratio)
        if abs(ratio - 1 - extra) > SPLIT_UNCLEAR:
            _suspect(out, "splits", f"{kind} across lines {ratio:.2f} times those within, "
                                    "not a whole number")
        out.pipeline[key] = extra
        out.how[key] = (f"four 8-byte {kind} each across a line, {across:.2f} cycles a copy; "
                        f"within lines {within:.2f}")
        if kind == "stores" and extra > 0:
            _read_sub_line_splits(cycles, within, across, out)


def _read_sub_line_splits(cycles, within: float, across: float, out: ProbeReading) -> None:
    """The smallest block of STORE_SPLIT_BLOCKS whose stores cost at least halfway from within
    lines to across them splits a store; none: a line."""
    bytes_, said = LINE_BYTES, []
    for block in STORE_SPLIT_BLOCKS:
        c = cycles.get(_sub_line_probe(block))
        if c is None:
            continue
        said.append(f"across {block}-byte blocks {c:.2f}")
        if c >= (within + across) / 2 and bytes_ == block * 2:
            bytes_ = block
    out.pipeline["store_split_bytes"] = bytes_
    out.how["store_split_bytes"] = (f"four 8-byte stores within lines {within:.2f} cycles a "
                                    f"copy, across lines {across:.2f}"
                                    + (f", {', '.join(said)}" if said else ""))


@produces("upper", "sse_upper_merge")
def _read_upper(cycles, out: ProbeReading) -> None:
    """Whether the legacy-SSE load waited for its register's old value: the dirty probe
    UPPER_MERGE_ABOVE cycles or more slower than the clean one."""
    dirty, clean = cycles.get(_upper_probe(True)), cycles.get(_upper_probe(False))
    if dirty is None or clean is None:
        return
    out.details["upper_cycles"] = {"dirty": _round(dirty), "clean": _round(clean)}
    out.pipeline["sse_upper_merge"] = int(dirty - clean >= UPPER_MERGE_ABOVE)
    out.how["sse_upper_merge"] = (f"{'; '.join(UPPER_LINES)} beside vpaddd ymm {dirty:.2f} "
                                  f"cycles a copy, beside vpaddd xmm {clean:.2f}")


@produces("streams", "memory_bytes_per_cycle")
def _read_streams(cycles, out: ProbeReading) -> None:
    """The L1's bytes a cycle for loads and stores together: the groups' bytes a cycle where
    they run STREAM_SLOWER slower than both their loads alone and their stores alone (the
    forms' ports do not hold them), else 0 (no limit beyond the ports seen). A reading near
    the threshold is suspect (noise only slows a probe)."""
    groups, loads, stores = (cycles.get(_stream_probe(p)) for p in ("groups", "loads", "stores"))
    if not (groups and loads and stores):
        return
    out.details["stream_cycles"] = {"groups": _round(groups), "loads": _round(loads),
                                    "stores": _round(stores)}
    parts = max(loads, stores)
    moved = STREAM_BYTES * (len(STREAM_LOADS) + len(STREAM_STORES))
    slower = groups / parts - 1
    limited = slower > STREAM_SLOWER
    out.pipeline["memory_bytes_per_cycle"] = _round(moved / groups) if limited else 0
    if STREAM_SLOWER / 2 < slower < 2 * STREAM_SLOWER:
        _suspect(out, "streams", f"{_stream_probe('groups')}: {groups:.2f} cycles a copy, "
                                 f"{slower:.0%} slower than its parts ({parts:.2f})")
    out.how["memory_bytes_per_cycle"] = (
        f"four groups of two 32-byte loads and a 32-byte store {groups:.2f} cycles a copy, "
        f"the loads alone {loads:.2f}, the stores alone {stores:.2f}"
        + (f": {moved / groups:.1f} bytes a cycle" if limited else ": no limit beyond the ports"))


@produces("accesses", "memory_accesses_per_cycle")
def _read_accesses(cycles, out: ProbeReading) -> None:
    """Loads and stores the core starts a cycle together: the eight accesses over the mixed
    probe's cycles, whole, where it runs ACCESS_SLOWER slower than both its loads alone and
    its stores alone, else 0 (no limit beyond the ports seen). A reading near the threshold,
    or a rate not near a whole number, is suspect."""
    mixed, loads, stores = (cycles.get(_access_probe(p))
                            for p in ("loads and stores", "loads", "stores"))
    if not (mixed and loads and stores):
        return
    out.details["access_cycles"] = {"loads and stores": _round(mixed), "loads": _round(loads),
                                    "stores": _round(stores)}
    parts = max(loads, stores)
    slower = mixed / parts - 1
    limited = slower > ACCESS_SLOWER
    count = len(ACCESS_LOADS) + len(ACCESS_STORES)
    rate = count / mixed
    out.pipeline["memory_accesses_per_cycle"] = max(1, round(rate)) if limited else 0
    if ACCESS_SLOWER / 2 < slower < 2 * ACCESS_SLOWER:
        _suspect(out, "accesses", f"{_access_probe('loads and stores')}: {mixed:.2f} cycles a "
                                  f"copy, {slower:.0%} slower than its parts ({parts:.2f})")
    elif limited and abs(rate - round(rate)) > ACCESS_WHOLE:
        _suspect(out, "accesses", f"{rate:.2f} accesses a cycle, not a whole number")
    out.how["memory_accesses_per_cycle"] = (
        f"four 8-byte loads and four stores that pair, interleaved, {mixed:.2f} cycles a copy, "
        f"the loads alone {loads:.2f}, the stores alone {stores:.2f}"
        + (f": {rate:.2f} accesses a cycle" if limited else ": no limit beyond the ports"))


@produces("vector splits", "split_load_alone", "vector_loads_per_cycle")
def _read_vector_splits(cycles, out: ProbeReading) -> None:
    """Whether a vector load across a line runs alone in its cycle: the split with a single
    load ALONE_ABOVE cycles or more slower than the two apart (one single load: half of two);
    and the vector loads the core runs a cycle (two single loads' copy). A reading near the
    threshold is suspect."""
    split, singles, both = (cycles.get(_vector_split_probe(p)) for p in (
        "a load across a line", "two single loads", "the split and a single load"))
    if not (split and singles and both):
        return
    out.details["vector_split_cycles"] = {"split": _round(split), "two single loads":
                                          _round(singles), "the split and one": _round(both)}
    beyond = both - (split + singles / 2)
    out.pipeline["split_load_alone"] = int(beyond > ALONE_ABOVE)
    out.pipeline["vector_loads_per_cycle"] = max(1, round(2 / singles))
    if ALONE_ABOVE / 2 < beyond < ALONE_ABOVE * 1.5:
        _suspect(out, "vector splits", f"a split vector load and a single one {both:.2f} "
                                       f"cycles a copy, {beyond:.2f} beyond their parts")
    out.how["split_load_alone"] = (f"{VECTOR_SPLIT} (across a line) {split:.2f} cycles a copy, "
                                   f"with {VECTOR_SINGLES[0]} {both:.2f}, two single loads "
                                   f"{singles:.2f}")
    out.how["vector_loads_per_cycle"] = f"two single vector loads {singles:.2f} cycles a copy"


@produces("stack", "stack_sync_latency", "stack_sync_reads")
def _read_stack(cycles, out: ProbeReading) -> None:
    """The sync: push + add's chain minus one ALU operation on rsp (half the reference)."""
    push, alu = cycles.get("stack: push, add rsp"), cycles.get("stack: sub rsp, add rsp")
    if push is None or not alu:
        return
    out.details["stack_cycles"] = {"push r8; add rsp, 8": _round(push),
                                   "sub rsp, 8; add rsp, 8": _round(alu)}
    one = alu / 2
    if one > 1 + STACK_SNAP:      # one cycle on every core: the reference was slowed
        _suspect(out, "stack", f"sub rsp, 8; add rsp, 8 runs at {one:.2f} cycles an operation")
    sync = push - one
    if sync < -STACK_SNAP:
        _suspect(out, "stack", f"push; add rsp runs faster ({push:.2f}) than an ALU operation")
    nearest = round(sync)
    sync = float(max(0, nearest)) if abs(sync - nearest) <= STACK_SNAP else \
        round(max(0.0, sync), 2)
    out.pipeline["stack_sync_latency"] = sync
    out.how["stack_sync_latency"] = (f"push r8; add rsp, 8 {push:.2f} cycles, minus an ALU "
                                     f"operation on rsp ({one:.2f})")
    read, other = cycles.get("stack: pop, read rsp"), cycles.get("stack: pop, read rbx")
    if read is None or other is None or sync < 0.5:
        return                  # no probe, or no sync worth telling apart from the pops
    out.details["stack_cycles"].update({"pop r8; mov rax, rsp": _round(read),
                                        "pop r8; mov rax, rbx": _round(other)})
    waits = read - other >= READ_SYNC_SHARE * sync
    out.pipeline["stack_sync_reads"] = int(waits)
    out.how["stack_sync_reads"] = (f"pop r8; mov rax, rsp {read:.2f} cycles against pop r8; "
                                   f"mov rax, rbx {other:.2f}: a read of rsp "
                                   + ("waits for the sync" if waits else "does not wait"))


@produces("window", "window")
def _read_window(cycles, out: ProbeReading) -> None:
    """The largest copy whose chain still overlaps the next copy's: every larger copy takes
    at least the chain's time (NO_OVERLAP), every smaller one less. A smaller copy that takes
    the chain's time is suspect (a disturbance), as is a grid with no copy that overlaps."""
    chain = cycles.get("window: chain")
    sizes = [(s, cycles.get(f"window: {s} instructions")) for s in WINDOW_SIZES]
    sizes = [(s, c) for s, c in sizes if c is not None]
    if not chain or not sizes:
        return
    ratio = {s: c / chain for s, c in sizes}
    out.details["window_chain_cycles"] = _round(chain)
    out.details["window_copy_per_chain"] = {str(s): _round(r) for s, r in ratio.items()}
    tail = len(sizes)
    while tail > 0 and ratio[sizes[tail - 1][0]] >= NO_OVERLAP:
        tail -= 1
    if tail == 0:
        _suspect(out, "window", f"no copy of {sizes[0][0]} or more instructions overlaps the next")
        return
    early = [s for s, _ in sizes[:tail] if ratio[s] >= NO_OVERLAP]
    if early:
        _suspect(out, "window", f"copies of {', '.join(map(str, early))} instructions take the "
                                "chain's time, larger ones less")
    window = sizes[tail - 1][0]
    if tail == len(sizes):
        out.details["window_at_least"] = window
        out.how["window"] = (f"copies of up to {window} instructions still overlap: at least "
                             "that")
    else:
        out.how["window"] = (f"a chain of {WINDOW_CHAIN} vdivss ({chain:.0f} cycles) + zero "
                             f"idioms: copies of {window} instructions overlap, of "
                             f"{sizes[tail][0]} not")
    out.pipeline["window"] = window


def doubts(front: ProbeReading, floor: float | None = None) -> list[str]:
    """Why a reading may come from a disturbed front end (a busy sibling thread slows every
    probe; measuring again later helps): probes without a number, a width below the floor,
    a loop iteration slower than one cycle (the fastest loop on every recent core), and what
    the reading found suspect (first instructions that fuse alike everywhere reading
    differently, store pairings that do not nest, ...)."""
    out = [f"no number for {name}" for name in front.missing]
    best = max((v for v in front.details.get("instructions_per_cycle", {}).values() if v),
               default=None)
    if floor and best is not None and best < floor * (1 - SNAP):
        out.append(f"the width probes ({best:.2f} per cycle) are below the floor ({floor:.2f})")
    if front.pipeline.get("taken_branch", 1.0) > 1.0:
        out.append(f"a loop iteration takes {front.pipeline['taken_branch']} cycles")
    return out + list(front.suspect)


def doubted_probes(front: ProbeReading, floor: float | None = None) -> set[str]:
    """The names of the probes whose readings the doubts are about: those without a number,
    the width probes below the floor, the loop probes slower than a cycle, and the families
    a suspect reading came from. Timing these again settles the doubts; the others' readings
    have no doubt of their own."""
    families = set(front.suspect_families)
    best = max((v for v in front.details.get("instructions_per_cycle", {}).values() if v),
               default=None)
    if floor and best is not None and best < floor * (1 - SNAP):
        families.add("width")
    if front.pipeline.get("taken_branch", 1.0) > 1.0:
        families.add("loop")
    return {p.name for p in probes()
            if p.name in front.missing or p.family in families}


def _unclear(cycles_per_store: float) -> bool:
    return UNCLEAR_STORES[0] < cycles_per_store < UNCLEAR_STORES[1]


def _round(x):
    return None if x is None else round(x, 3)


def _snap_cycles(c: float) -> float:
    """Cycles of a loop iteration: the nearest multiple of 1/4 cycle within 3%, else 2 decimals."""
    nearest = round(c * 4) / 4
    return nearest if nearest and math.isclose(c, nearest, rel_tol=SNAP) else round(c, 2)
