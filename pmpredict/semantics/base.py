"""What an instruction reads and writes: the vocabulary every ISA module speaks.

One ISA module (x86.py, aarch64.py) is the only place that knows the reads, writes,
implicit registers, flags, memory accesses and idioms of its instructions. Everything
else asks it through the registry (`pmpredict.semantics.get(isa)`):

* the dependency engine (deps.py) builds register / flag / memory edges from
  `InstructionSemantics` of parsed instructions;
* the measurement harness keeps its own registers out of the way of every register an
  instruction touches (explicit or implicit), gives address registers distinct values and
  stack operands their own memory;
* the instantiation of experiments, the exporters and the matcher ask `FormSemantics` of a
  form string (does it load, store, read-modify-write memory; which registers it names
  implicitly; which flags it reads).

Names are canonical register *families*, so that `al`, `eax` and `rax` (or `w3` and `x3`,
`xmm1` and `ymm1`) are one resource:

    x86      rax rbx rcx rdx rsi rdi rbp rsp r8..r15   v0..v31 (xmm/ymm/zmm)   k0..k7
             mm0..mm7   st (the x87 stack, one resource)
             flags: CF PF AF ZF SF OF DF (one resource each)
    AArch64  x0..x30 sp   v0..v31 (b/h/s/d/q/v and SVE z)   p0..p15   flags: N Z C V

The instruction pointer and the zero registers (xzr / wzr) are never listed: nothing
depends on them. Operand indices are in *form order*: Intel order on x86 (destination
first, as in the form strings and FormKey), the written order on AArch64.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# RegAccess.kind
GPR, VECTOR, MASK, FLAG, OTHER = "gpr", "vector", "mask", "flag", "other"
# RegAccess.role
DATA = "data"            # a value the operation uses or produces
ADDRESS = "address"      # base / index register of a memory operand (read for the address)
MERGE = "merge"          # the old value of a partially written register (al, movk, lane insert)

# FormSemantics.memory / the memory behaviour of an instruction
NO_MEMORY, LOAD, STORE, READ_MODIFY_WRITE, ADDRESS_ONLY = "", "load", "store", "rmw", "address"


@dataclass(frozen=True)
class RegAccess:
    """One register (family) or flag read or written by an instruction."""
    name: str                         # canonical family: "rax", "v3", "CF", "x7", "N"
    kind: str = GPR                   # GPR, VECTOR, MASK, FLAG, OTHER
    operand: int | None = None        # form-order operand index; None: implicit
    role: str = DATA                  # DATA, ADDRESS or MERGE
    width: int | None = None          # bits accessed, where known


@dataclass(frozen=True)
class MemAccess:
    """One memory access: the address expression as written, and what is done there."""
    operand: int | None               # form-order operand index; None: implicit (push, string ops)
    base: str | None = None           # register family, e.g. "rsp", "rdi", "x0"
    index: str | None = None
    scale: int = 1
    disp: int = 0
    symbols: tuple[str, ...] = ()     # symbolic displacement (`.LC0`), rip-relative included
    width: int | None = None          # bits, where known
    load: bool = False
    store: bool = False
    writeback: bool = False           # AArch64 pre/post-index: the base register is written too

    @property
    def address(self) -> tuple:
        """The address expression: equal expressions (same registers, no write in between)
        name the same location; this is what store-to-load forwarding matches on."""
        return (self.base, self.index, self.scale, self.disp, self.symbols)


@dataclass(frozen=True)
class InstructionSemantics:
    """Reads, writes and properties of one concrete instruction."""
    mnemonic: str                                   # normalised (Intel / ARM) mnemonic
    reads: tuple[RegAccess, ...] = ()               # registers and flags read (address registers too)
    writes: tuple[RegAccess, ...] = ()              # registers and flags written
    memory: tuple[MemAccess, ...] = ()
    idiom: str | None = None          # "zero" / "ones": a dependency-breaking idiom (reads nothing)
    move: bool = False                # register-to-register copy a core may eliminate at rename
    branch: str | None = None         # None, "conditional", "jump", "call", "return", "indirect"
    fusion: str | None = None         # macro-fusion role: "first" (cmp/test/alu that may fuse with
                                      # a following jcc) or "jcc"; None
    trap: str | None = None           # deliberate trap or system instruction: "ud2", "int3",
                                      # "syscall", "hlt", "privileged" ...: not measurable in a loop
    known: bool = True                # False: the tables do not know the mnemonic; reads/writes
                                      # were guessed from the operand order (reported to the user)
    notes: tuple[str, ...] = ()       # anything a report should say about this instruction

    @property
    def loads(self) -> bool:
        return any(m.load for m in self.memory)

    @property
    def stores(self) -> bool:
        return any(m.store for m in self.memory)

    def registers(self) -> set[str]:
        """Every register family touched (read or written), flags excluded."""
        return {a.name for a in self.reads + self.writes if a.kind != FLAG}


@dataclass(frozen=True)
class FormSemantics:
    """What a form (a PMEvo form string: mnemonic + typed operand placeholders) does.

    Concrete registers are not known at form level; `implicit_*` are the registers the
    instruction uses without naming them (cqo: rax -> rdx), `fixed` those the form string
    spells out literally (the `cl` of `shl r64, cl`)."""
    mnemonic: str
    operand_access: tuple[str, ...] = ()            # per operand: "R", "W", "RW", "" (imm/literal)
    memory: str = NO_MEMORY                         # NO_MEMORY, LOAD, STORE, READ_MODIFY_WRITE,
                                                    # ADDRESS_ONLY (lea, prefetch... no data access)
    implicit_reads: frozenset[str] = field(default_factory=frozenset)
    implicit_writes: frozenset[str] = field(default_factory=frozenset)
    flags_read: frozenset[str] = field(default_factory=frozenset)
    flags_written: frozenset[str] = field(default_factory=frozenset)
    branch: str | None = None
    trap: str | None = None
    known: bool = True

    @property
    def reads_memory(self) -> bool:
        return self.memory in (LOAD, READ_MODIFY_WRITE)

    @property
    def writes_memory(self) -> bool:
        return self.memory in (STORE, READ_MODIFY_WRITE)

    @property
    def pure_store(self) -> bool:
        return self.memory == STORE
