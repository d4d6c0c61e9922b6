"""What an instruction reads and writes: the vocabulary every ISA module speaks.

One ISA module (x86.py, aarch64.py) is the only place that knows the reads, writes,
implicit registers, flags, memory accesses and idioms of its instructions. Everything
else asks it through the registry (`pmpredict.isa.semantics.get(isa)`):

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

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from pmpredict.isa.forms import FormTemplate, parse_form
from pmpredict.isa.syntax import Immediate, Register

# RegAccess.kind
GPR, VECTOR, MASK, FLAG, OTHER = "gpr", "vector", "mask", "flag", "other"
# RegAccess.role
DATA = "data"            # a value the operation uses or produces
ADDRESS = "address"      # base / index register of a memory operand (read for the address)
MERGE = "merge"          # the old value of a partially written register (al, movk, lane insert)

# FormSemantics.memory / the memory behaviour of an instruction
NO_MEMORY, LOAD, STORE, READ_MODIFY_WRITE, ADDRESS_ONLY = "", "load", "store", "rmw", "address"

# kinds of uops (pmpredict.predict.kinds): what the uops on a port do. Loads, stores and branches come
# from the semantics; the operation of the rest from IsaSemantics.operation_kinds, else from
# the operand classes (vector or integer ALU)
LOADS, STORES, BRANCHES = "loads", "stores", "branches"
INT_ALU, VECTOR_ALU = "integer ALU", "vector ALU"
INT_MULTIPLY, FP_ADD, FP_MULTIPLY, DIVIDER, SHUFFLES = (
    "integer multiply", "FP add", "FP multiply/FMA", "divider", "shuffles")
UOP_KINDS = (LOADS, STORES, BRANCHES, INT_ALU, INT_MULTIPLY, VECTOR_ALU, FP_ADD, FP_MULTIPLY,
             DIVIDER, SHUFFLES)


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


# what InstructionSemantics.upper says of the upper halves of the vector registers (x86): a
# 256/512-bit AVX write leaves them dirty, vzeroupper/vzeroall clean them, a legacy-SSE write of
# an xmm register keeps its register's (architecturally: it reads them)
UPPER_DIRTIES, UPPER_CLEANS, UPPER_KEEPS = "dirties", "cleans", "keeps"

# what InstructionSemantics.beyond_model says
ATOMIC = "an atomic read-modify-write"
BARRIER = "a barrier: it waits for earlier instructions"


@dataclass(frozen=True)
class InstructionSemantics:
    """Reads, writes and properties of one concrete instruction."""
    mnemonic: str                                   # normalised (Intel / ARM) mnemonic
    reads: tuple[RegAccess, ...] = ()               # registers and flags read (address registers too)
    writes: tuple[RegAccess, ...] = ()              # registers and flags written
    memory: tuple[MemAccess, ...] = ()
    idiom: str | None = None          # "zero" / "ones": a dependency-breaking idiom (reads nothing)
    # the idiom it would be where the core recognises it (only some do: the model's
    # idiom_breaks says); its reads are kept
    candidate_idiom: str | None = None
    move: bool = False                # register-to-register copy a core may eliminate at rename
    select: bool = False              # the destination becomes a copy of one of its sources,
                                      # chosen at run time (a conditional move), never a sum
    branch: str | None = None         # None, "conditional", "jump", "call", "return", "indirect"
    fusion: str | None = None         # macro-fusion role: "first" (cmp/test/alu that may fuse with
                                      # a following jcc) or "jcc"; None
    trap: str | None = None           # deliberate trap or system instruction: "ud2", "int3",
                                      # "syscall", "hlt", "privileged" ...: not measurable in a loop
    known: bool = True                # False: the tables do not know the mnemonic; reads/writes
                                      # were guessed from the operand order (reported to the user)
    notes: tuple[str, ...] = ()       # anything a report should say about this instruction
    # why it costs more than any form's numbers say, in a loop with other work ("" when not):
    # an atomic read-modify-write, a barrier that waits for earlier instructions. A model
    # counts its unlocked / plain form, so a prediction with it is a lower bound
    beyond_model: str = ""
    # registers the instruction sets to their own old value plus a constant (a pointer bump:
    # add/sub of an immediate, inc/dec, lea r, [r + d], push/pop on rsp, AArch64 write-back):
    # with them the dependency engine follows addresses from one iteration to the next
    offsets: tuple[tuple[str, int], ...] = ()
    # registers the instruction sets to another register's value plus a constant (mov r64,
    # r64; lea r64, [r + d]; AArch64 mov / add of an immediate): (written, source, constant).
    # With them the dependency engine sees `lea rdi, [r15 + 464]; mov [rdi - 8], r13` store
    # beside `mov [r15 + 448], r13`
    copies: tuple[tuple[str, str, int], ...] = ()
    # the upper halves of the vector registers: UPPER_DIRTIES, UPPER_CLEANS, UPPER_KEEPS or ""
    upper: str = ""
    # the register family a shift or rotate takes its count from ("" for an immediate count
    # or no shift): a count of 0 leaves the flags unchanged, a case a harness must not make
    shift_count: str = ""
    # the flags such a shift reads only because a count of 0 would keep them (not rcl's CF,
    # which it shifts in): a core that does not wait for them (model fact
    # shift_count_flags) has no such dependency
    count_kept_flags: frozenset = frozenset()
    # a logical vector shift by an immediate of at least its element width (vpslld x, y, 42):
    # its result is 0 whatever its source; a core may not wait for the source (model fact
    # shift_out_latency)
    shifted_out: bool = False

    # asked for again and again per kernel (annotation, pairing, kinds): found once
    @cached_property
    def loads(self) -> bool:
        return any(m.load for m in self.memory)

    @cached_property
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
    spells out literally (the `cl` of `shl r64, cl`). Access of a memory operand is the
    access of its data ("R" load, "W" store, "RW" read-modify-write, "" lea / prefetch);
    its address registers are always read."""
    mnemonic: str
    operand_access: tuple[str, ...] = ()            # per operand: "R", "W", "RW", "" (imm/literal)
    memory: str = NO_MEMORY                         # NO_MEMORY, LOAD, STORE, READ_MODIFY_WRITE,
                                                    # ADDRESS_ONLY (lea, prefetch... no data access)
    implicit_reads: frozenset[str] = field(default_factory=frozenset)
    implicit_writes: frozenset[str] = field(default_factory=frozenset)
    flags_read: frozenset[str] = field(default_factory=frozenset)
    flags_written: frozenset[str] = field(default_factory=frozenset)
    fixed: frozenset[str] = field(default_factory=frozenset)   # families named literally (`cl`)
    branch: str | None = None
    trap: str | None = None
    known: bool = True
    # waits for earlier instructions (lfence, mfence): what it costs is what is in flight, so
    # what a model can say of it is its time back to back (measured as its latency)
    barrier: bool = False

    @property
    def pinned_registers(self) -> frozenset[str]:
        """Every register family the form uses that operand allocation cannot choose: the
        implicit ones and the literal ones (a harness keeps them out of its pools)."""
        return self.implicit_reads | self.implicit_writes | self.fixed

    @property
    def reads_memory(self) -> bool:
        return self.memory in (LOAD, READ_MODIFY_WRITE)

    @property
    def writes_memory(self) -> bool:
        return self.memory in (STORE, READ_MODIFY_WRITE)

    @property
    def pure_store(self) -> bool:
        return self.memory == STORE


@dataclass(frozen=True)
class OsacaVocabulary:
    """How OSACA's parser and machine files spell the operands of one ISA.

    Read by the import of OSACA files (pmpredict.formats.osaca), the matcher of foreign OSACA
    forms (pmpredict.asm.match) and the OSACA exporter."""
    register_style: str               # "name": a register is its name without digits
                                      # (x86 `gpr`, `xmm`, `cl`); "prefix": prefix and element
                                      # shape (AArch64 `x`, `w`, `v` + `s`)
    memory_base: str                  # the class of a form's base register: "gpr" / "x"
    any_gpr: str | None               # a register class name that fits every general-purpose
                                      # register ("gpr" on x86), None if there is none
    indexed_writeback: bool           # memory operands carry pre-/post-index flags (AArch64)
    any_immediate: bool               # every immediate fits `imd: int` (x86); otherwise int and
                                      # double are told apart
    att_order: bool                   # operands in AT&T order, the reverse of our form order
    load_latency_keys: tuple[str, ...]  # register classes of the file's `load_latency` table
    mnemonic_stems: dict = field(default_factory=dict)   # Intel mnemonic -> {source width:
                                      # OSACA name} (movzx r, m8 -> movzb)
    wide_immediate_names: dict = field(default_factory=dict)  # mnemonic whose 64-bit
                                      # immediate form OSACA knows by another name (mov -> movabs)
    pure_load: str = ""               # regex: mnemonics whose `register <- memory` form only loads
    printed_aliases: bool = False     # the assembler prints aliases (`mov` for `ins`) that keep
                                      # the operand count: entries list them as extra names
    words_are_identifiers: bool = False  # a literal word of a form (shift, extend) is an
                                      # identifier (AArch64), not a register named (x86 `cl`)
    lock_prefix: str | None = None    # OSACA's parser reads `lock cmpxchgl %edx, (%rdi)` as
                                      # this mnemonic with the instruction's name as an
                                      # identifier operand (x86 "lock"); None: no such prefix


class IsaSemantics:
    """What every ISA object offers besides `instruction` and `form` (see the subclasses).

    Attributes a subclass sets:
        name              "x86" / "aarch64"
        syntaxes          assembly syntaxes of the ISA, the default first
        syntax_titles     syntax -> human name ("x86 AT&T")
        grammar_files     syntax -> Lark grammar file in pmpredict/grammars
        default_model     built-in model `pmpredict predict` uses when none is given
        marker_bytes      the `.byte` values of the IACA / OSACA byte markers
        marker_registers  registers the marker `mov` writes its 111 / 222 to
        marker_how, marker_description   how a kernel found between byte markers is reported
        example_base_register   base register of the memory operands of example instances
        example_syntax    the syntax example instances (pmpredict.isa.examples.example_instance) are in
        operation_kinds   ((kind, mnemonic regex), ...): the operation's uop kind, first match
                          wins; kind None: a data movement whose only uops with a memory
                          operand are the load or store (pmpredict.predict.kinds)
        llvm_mc_args      llvm-mc arguments for example instances (`-show-inst`)
        llvm_mc_prologue  lines that put llvm-mc into the syntax of example instances
        memory_operands_by_mode  form keys describe a memory operand by its addressing mode
                          (AArch64: base, imm, reg, pre, post) rather than by its width (x86)
        stack_engine_register  the stack pointer whose implicit updates (push, pop, call, ret)
                          the front end makes itself, at no latency ("" if the ISA has none)
        plain_load_form   the form of the plainest load (a 64-bit register from base +
                          displacement): its uop's ports generate every memory access's address
        deliberate_traps  the trap kinds (InstructionSemantics.trap) code raises on purpose
                          (x86 ud2, int3), as opposed to system instructions
        gpr_families      every general-purpose register family (the RegAccess names of kind
                          GPR), in the order listings show them
        osaca             OsacaVocabulary
    """

    name = ""
    syntaxes: tuple[str, ...] = ()
    syntax_titles: dict = {}
    grammar_files: dict = {}
    default_model = ""
    marker_bytes: tuple[int, ...] = ()
    marker_registers: tuple[str, ...] = ()
    marker_how = ""
    marker_description = ""
    example_base_register = ""
    example_syntax = ""
    operation_kinds: tuple[tuple[str | None, str], ...] = ()
    llvm_mc_args: tuple[str, ...] = ()
    llvm_mc_prologue: tuple[str, ...] = ()
    memory_operands_by_mode = False
    stack_engine_register = ""
    plain_load_form = ""
    deliberate_traps: tuple[str, ...] = ()
    gpr_families: tuple[str, ...] = ()
    osaca: OsacaVocabulary

    @property
    def default_syntax(self) -> str:
        return self.syntaxes[0]

    def instruction(self, insn, syntax: str) -> InstructionSemantics:
        """InstructionSemantics of a parsed instruction (pmpredict.isa.syntax.Instruction)
        written in `syntax`; an instruction the tables do not know is guessed (known=False),
        never an exception."""
        raise NotImplementedError

    def described(self, insn, syntax: str) -> tuple:
        """(form_key, instruction) of a parsed instruction: both at once, for an ISA whose
        semantics starts from the form key (x86) to compute it once."""
        return self.form_key(insn, syntax), self.instruction(insn, syntax)

    def form(self, form) -> FormSemantics:
        """FormSemantics of a form string or FormTemplate; a form string that cannot be
        parsed is unknown (known=False), never an exception."""
        if not isinstance(form, FormTemplate):
            try:
                form = parse_form(form, self.name)
            except ValueError:
                return FormSemantics(str(form), known=False)
        return self._form(form)

    def _form(self, template) -> FormSemantics:
        raise NotImplementedError

    def is_conditional_branch(self, insn) -> bool:
        """A branch taken or not depending on a condition (what closes a loop)."""
        return self.branch_of(insn.mnemonic) == "conditional"

    def branch_of(self, mnemonic: str) -> str | None:
        raise NotImplementedError

    # By spelling alone, for the measurement harness, which must also refuse a control transfer
    # the tables do not know (a misspelt jump would otherwise be timed as an instruction).
    def is_jump(self, mnemonic: str) -> bool:
        """A jump, conditional or not (a mnemonic as InstructionSemantics spells it): what can
        be a loop's back edge. Calls and returns are no jumps."""
        raise NotImplementedError

    def transfers_control(self, mnemonic: str) -> bool:
        """A jump, call or return (a mnemonic as InstructionSemantics spells it)."""
        raise NotImplementedError

    def widest_vector_register(self, text: str) -> int:
        """Width in bits of the widest vector register that assembly `text` names; 0 if none."""
        raise NotImplementedError

    def is_marker_instruction(self, insn, value: int) -> bool:
        """The `mov` of a byte marker: one of marker_registers <- the immediate `value`."""
        if not insn.mnemonic.startswith("mov"):
            return False
        regs = [o.name for o in insn.operands if isinstance(o, Register)]
        imms = [o.value for o in insn.operands if isinstance(o, Immediate)]
        return imms == [value] and len(regs) == 1 and regs[0] in self.marker_registers

    def syntax_of_directive(self, directive: str, argument: str) -> str | None:
        """The syntax a directive (`intel_syntax`, `arch armv8-a`) selects, if it is ours."""
        return None

    def syntax_scores(self, sample: str) -> dict[str, int]:
        """Tell-tale spellings of each of our syntaxes found in `sample` (comments removed)."""
        return {}

    def owns_form(self, name: str) -> bool:
        """Whether a PMEvo form string belongs to this ISA (by its spelling)."""
        raise NotImplementedError

    def register_family(self, name: str) -> str | None:
        raise NotImplementedError

    def register_pool(self, reg_class: str, width: int | None) -> list[str]:
        raise NotImplementedError

    def form_key(self, insn, syntax: str):
        """The normalised FormKey of a parsed instruction (pmpredict.asm.normalize)."""
        raise NotImplementedError

    def form_of(self, insn, syntax: str) -> str:
        """The form string of a parsed instruction: the form pmpredict's matcher maps the
        instruction to, and whose example instance (forms.example_instance) maps back to it.
        ValueError, with the reason, for an instruction no form string can describe."""
        raise ValueError(f"no form strings are derived from {self.name} instructions")


def placeholder_access(template, guess: tuple[str, ...]) -> tuple[str, ...]:
    """The access a form string writes into its register placeholders, `guess` elsewhere."""
    return tuple(op.access if op.kind == "reg" and op.access else a
                 for op, a in zip(template.operands, guess))


# --- helpers of the ISA tables (x86.py, aarch64.py) ---------------------------------------

def access_pattern(text: str) -> Callable:
    """Access pattern ("W,R*", "RW,R|W,R,R") -> function of the operand count: the access of
    each operand, or None where the count is not valid. `*` repeats the last access, `|`
    lists alternatives by count, `-` is an operand that is not accessed."""
    if "|" in text:
        alternatives = {len(p): p for p in (_split_access(t) for t in text.split("|"))}
        return alternatives.get
    if text.endswith("*"):
        fixed = _split_access(text[:-1])
        return lambda n: (fixed + (fixed[-1],) * max(0, n - len(fixed)))[:n]
    fixed = _split_access(text)
    return lambda n: fixed if n == len(fixed) else None


def _split_access(text: str) -> tuple[str, ...]:
    text = text.strip()
    return tuple("" if a.strip() == "-" else a.strip() for a in text.split(",")) if text else ()


_BRACES = re.compile(r"([^{]*)\{([\w,]*)\}(.*)$")


def expand_mnemonics(text: str) -> list[str]:
    """"padd{b,w,d,q} ld{1,2}r s{add,sub}l{,2}" -> the mnemonics (every combination)."""
    out = []
    for word in text.split():
        if "{" not in word:                  # most mnemonics (the tables load with the module)
            out.append(word)
            continue
        m = _BRACES.match(word)
        if m:
            out.extend(expand_mnemonics(" ".join(m.group(1) + part + m.group(3)
                                                 for part in m.group(2).split(","))))
        else:
            out.append(word)
    return out
