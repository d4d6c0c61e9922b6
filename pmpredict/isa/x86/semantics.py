"""x86-64: what each instruction reads and writes.

One table (`_TABLE`, filled by the `_def` calls below) drives both `instruction` (a parsed
instruction in AT&T or Intel syntax) and `form` (a PMEvo form string). An entry gives, in
Intel operand order, the access of each explicit operand ("RW,R": the first operand read
and written, the second read; `*` repeats the last access; `|` separates patterns for
different operand counts), the flags read and written, implicit registers and memory, and
the properties below. A memory operand's access is its data access: R load, W store, RW
read-modify-write; its base and index registers are always read (role ADDRESS).

Decisions worth knowing:
* Flags are seven resources (CF PF AF ZF SF OF DF). "Undefined" flags count as written
  (the instruction does produce some value). inc/dec keep CF; bt* keep ZF; rol/ror write
  only CF and OF. A shift or rotate whose count is in a register may shift by 0, which
  leaves the flags unchanged: such forms read the flags they write (noted).
* Partial writes: an 8/16-bit general-purpose destination also reads its family (role
  MERGE); a 32-bit destination zero-extends (a full write). Legacy-SSE writes of an xmm
  register keep the upper ymm/zmm bits: said as `upper` (UPPER_KEEPS), with the AVX writes
  that dirty those bits and the vzeroupper that cleans them; whether a core then waits for
  the old register is its fact (sse_upper_merge, predict/annotate.py); scalar SSE operations that keep the upper lanes of their
  destination (sqrtsd, cvtsi2sd, cvtss2sd, roundsd, rcpss, movss/movsd between registers)
  read it: this false dependency is real. VEX and EVEX writes are full writes. AVX-512
  merge masking (`{k1}`) reads the destination and the mask; zero masking (`{z}`) reads
  the mask only.
* bsf/bsr read their destination: with a zero source it is left unchanged (AMD documents
  it, Intel implements it). lzcnt/tzcnt/popcnt are plain writes (their false dependency on
  some Intel cores is a property of those cores, not of the instruction).
* Idioms ("zero"): xor/sub of a 32/64-bit register with itself, (v)pxor*/(v)xorps/
  (v)xorpd/(v)psub[bwdq]/(v)pcmpgt[bwdq] with equal sources; ("ones") (v)pcmpeq[bwdq]
  with equal sources, unmasked, vector destination. They read nothing (no register, no
  flag); 8/16-bit GPR forms are not idioms (they merge). `sbb r, r` is no idiom but
  depends on CF only (its register reads are dropped, noted). Candidates ("zero" where the
  core recognises them, `candidate_idiom`: the host measures whether it does, the model's
  `idiom_breaks`): (v)andnps/(v)andnpd/(v)pandn/vpandn[dq] and andn with equal sources
  (~y & y is 0), cmp of a register with itself (constant flags; it writes no register, so
  8- and 16-bit ones too: Zen 4 runs `cmp dl, dl` six a cycle). Zen 4 recognises
  them (`vandnpd xmm1, xmm0, xmm0` and `cmp rax, rax` 6 a cycle, as wide as it dispatches);
  their reads are kept in `reads`, and dropped where the model says the core breaks them.
* Moves a core may eliminate (`move`): mov r64, r64 and mov r32, r32; (v)movaps/movapd/
  movups/movupd/movdqa/movdqu (and the EVEX vmovdqa32/64, vmovdqu8..64) between vector
  registers, unmasked. Not movzx r32, r8: it is an operation (zero-extension of a byte),
  which no AMD core and only some Intel cores eliminate; nor 8/16-bit movs (they merge),
  nor movss/movsd/movq between registers (they merge or zero lanes).
* Memory without data: lea computes an address (its MemAccess has neither load nor store,
  form memory ADDRESS_ONLY), prefetch*/clflush*/clwb likewise (they move cache lines but
  produce no value anything could depend on); nop with a memory operand touches nothing.
* Implicit memory: push/call store at [rsp-8], pop/ret load at [rsp], leave loads at
  [rbp], string instructions access [rsi] / [rdi] (with a rep prefix rcx times: the
  MemAccess describes one element, noted).
* Branches: "conditional" (jcc, loop*, jrcxz), "jump" (direct jmp), "indirect" (jmp
  through a register or memory), "call" (direct or not), "return".
* Macro-fusion (`fusion`): "first" for cmp/test/add/sub/and/inc/dec without a memory
  operand, and cmp/test of a register with memory; not memory + immediate and not a
  read-modify-write (Intel's rules since Sandy Bridge; which jcc pairs with which first
  instruction is the core's business). "jcc" for conditional jumps (not loop/jrcxz).
* Traps (`trap`): ud2 (also ud0/ud1), int3, int/into/int1, hlt, syscall, sysenter, and
  "privileged" for what faults in user mode (rdmsr, wrmsr, cli, sti, in, out, lgdt, mov to
  a control register...). cpuid, rdtsc, xgetbv and the fences are ordinary instructions.
* Beyond a form's numbers (`beyond_model`): an atomic read-modify-write (`lock`, `xchg`
  with memory) and a barrier (cpuid, lfence, mfence, serialize) cost what is in flight
  around them; a model counts the plain form, so a prediction with one is a lower bound.
* x87 registers are one resource, "st" (the stack), read and written by every x87
  instruction; MMX registers are mm0..mm7.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from pmpredict.isa.x86.keys import (_CONDITIONS, _SUFFIX_WIDTH, GPR_FAMILIES, GPR_NAMES,
                                    GPR_POOLS, VECTOR_WIDTHS, is_x86_branch, is_x86_jump,
                                    normalize_x86, widest_x86_vector, x86_register)
from pmpredict.isa.keys import FormKey
from pmpredict.isa.forms import FormTemplate, form_isa, parse_form
from pmpredict.isa.syntax import Immediate, Indirect, Memory, Register, Rounding, Symbol
from pmpredict.isa.base import (ADDRESS, ADDRESS_ONLY, ATOMIC, BARRIER, DATA, DIVIDER, FLAG,
                                FP_ADD, FP_MULTIPLY, GPR, INT_MULTIPLY, LOAD, MASK, MERGE,
                                NO_MEMORY, OTHER, READ_MODIFY_WRITE, SHUFFLES, STORE, UPPER_CLEANS,
                                UPPER_DIRTIES, UPPER_KEEPS, VECTOR,
                                FormSemantics, InstructionSemantics, IsaSemantics, MemAccess,
                                OsacaVocabulary, RegAccess, access_pattern, expand_mnemonics,
                                placeholder_access)

# --- registers -----------------------------------------------------------------------------

# the register table (GPR_NAMES: name -> family, width) and the allocation pools are in keys.py
_VECTOR = re.compile(r"([xyz])mm([0-9]|[12][0-9]|3[01])$")
_VECTOR_PREFIXES = {bits: letter + "mm" for letter, bits in VECTOR_WIDTHS.items()}  # 128: "xmm"
_MASK_OR_MMX = re.compile(r"k[0-7]|mm[0-7]")
_X87 = re.compile(r"st\(?[0-7]\)?")

CF, PF, AF, ZF, SF, OF, DF = "CF", "PF", "AF", "ZF", "SF", "OF", "DF"
ALL = frozenset((CF, PF, AF, ZF, SF, OF))
NOT_CF = ALL - {CF}
CF_OF = frozenset((CF, OF))
BIT_TEST = ALL - {ZF}                           # bt*: CF defined, ZF kept, the rest undefined
STATUS = frozenset((SF, ZF, AF, PF, CF))       # lahf / sahf
NONE = frozenset()

_CONDITION_FLAGS = {}
for _names, _flags in (("o no", {OF}), ("b c nae ae nb nc", {CF}), ("e z ne nz", {ZF}),
                       ("be na a nbe", {CF, ZF}), ("s ns", {SF}), ("p pe np po", {PF}),
                       ("l nge ge nl", {SF, OF}), ("le ng g nle", {ZF, SF, OF})):
    for _c in _names.split():
        _CONDITION_FLAGS[_c] = frozenset(_flags)
assert set(_CONDITION_FLAGS) == _CONDITIONS
# x87 fcmov conditions
_FCMOV_FLAGS = {"b": {CF}, "e": {ZF}, "be": {CF, ZF}, "u": {PF}, "nb": {CF}, "ne": {ZF},
                "nbe": {CF, ZF}, "nu": {PF}}


_KINDS = {"G": GPR, "V": VECTOR, "K": MASK, "M": VECTOR}


def _kind(cls: str) -> str:
    return _KINDS.get(cls, OTHER)


@lru_cache(maxsize=None)                # a few dozen names, asked for every register operand
def family(name: str) -> str | None:
    """Canonical family of an x86 register name (None: not tracked: rip, segment and
    control registers)."""
    name = name.lower()
    if name in GPR_NAMES:
        return GPR_NAMES[name][0]
    m = _VECTOR.match(name)
    if m:
        return "v" + m.group(2)
    if _MASK_OR_MMX.fullmatch(name):
        return name
    if name == "st" or _X87.fullmatch(name):
        return "st"
    return None


# --- the table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Implicit:
    """Registers and memory an instruction uses without naming them."""
    reads: tuple = ()                 # (family, width, role)
    writes: tuple = ()                # (family, width)
    memory: tuple = ()                # MemAccess with operand None
    flags_read: frozenset = NONE
    notes: tuple = ()
    offsets: tuple = ()               # (family, constant added to it): push/pop/call/ret on rsp


_NO_IMPLICIT = _Implicit()

@dataclass(frozen=True)
class _Spec:
    access: Callable                  # operand count -> access per operand, or None
    flags_read: frozenset = NONE
    flags_written: frozenset = NONE
    implicit: Callable | None = None  # (operand width, operands, prefixes) -> _Implicit
    memory: str = ""                  # "": from the access; "address": lea, prefetch; "none": nop
    branch: str | None = None
    trap: str | None = None
    fusion: bool = False
    idiom: str | None = None
    candidate_idiom: str | None = None     # an idiom only some cores recognise
    move: bool = False
    select: bool = False              # a conditional move (InstructionSemantics.select)
    count_flags: bool = False         # a shift count in a register may be 0: flags read too
    memory_width: int | None = None   # of a memory operand whose width the spelling leaves open
    notes: tuple = ()
    barrier: bool = False             # waits for earlier instructions (or stores) to complete


_TABLE: dict[str, _Spec] = {}


def _def(mnemonics: str, access: str, **kw) -> None:
    """Enter mnemonics ("padd{b,w}" expands) with an access pattern and properties."""
    spec = _Spec(access_pattern(access), **kw)
    for m in expand_mnemonics(mnemonics):
        _TABLE[m] = spec


# implicit-register handlers: (width, operands, prefixes) -> _Implicit

def _stack(store: bool, extra_reads=(), extra_writes=(), width=64, base="rsp", disp=None):
    def handler(w, ops, prefixes):
        d = (-8 if store else 0) if disp is None else disp
        mem = MemAccess(None, base=base, disp=d, width=width, load=not store, store=store)
        return _Implicit(reads=(("rsp", 64, ADDRESS),) + tuple(extra_reads),
                         writes=(("rsp", 64),) + tuple(extra_writes), memory=(mem,),
                         offsets=(("rsp", -8 if store else 8),))
    return handler


def _push(w, ops, prefixes):
    width = w if w == 16 else 64
    return _Implicit(reads=(("rsp", 64, ADDRESS),), writes=(("rsp", 64),),
                     memory=(MemAccess(None, base="rsp", disp=-width // 8, width=width, store=True),),
                     offsets=(("rsp", -width // 8),))


def _pop(w, ops, prefixes):
    width = w if w == 16 else 64
    return _Implicit(reads=(("rsp", 64, ADDRESS),), writes=(("rsp", 64),),
                     memory=(MemAccess(None, base="rsp", width=width, load=True),),
                     offsets=(("rsp", width // 8),))


def _leave(w, ops, prefixes):
    return _Implicit(reads=(("rbp", 64, ADDRESS),), writes=(("rsp", 64), ("rbp", 64)),
                     memory=(MemAccess(None, base="rbp", width=64, load=True),))


def _enter(w, ops, prefixes):
    return _Implicit(reads=(("rsp", 64, ADDRESS), ("rbp", 64, DATA)),
                     writes=(("rsp", 64), ("rbp", 64)),
                     memory=(MemAccess(None, base="rsp", disp=-8, width=64, store=True),))


def _fixed(reads=(), writes=()):
    """Fixed implicit registers: "rax/64" entries."""
    def parse(items):
        return tuple((n.split("/")[0], int(n.split("/")[1])) for n in items)
    r, wr = parse(reads), parse(writes)

    def handler(w, ops, prefixes):
        return _Implicit(reads=tuple((n, width, DATA) for n, width in r), writes=wr)
    return handler


def _widen(src: int, dst: int, into: str = "rax"):
    """cbw/cwde/cdqe (into rax), cwd/cdq/cqo (into rdx)."""
    return _fixed((f"rax/{src}",), (f"{into}/{dst}",))


def _multiply(w, ops, prefixes):
    if len(ops) != 1:
        return _NO_IMPLICIT
    if w == 8:
        return _Implicit(reads=(("rax", 8, DATA),), writes=(("rax", 16),))
    return _Implicit(reads=(("rax", w, DATA),), writes=(("rax", w), ("rdx", w)))


def _divide(w, ops, prefixes):
    if w == 8:
        return _Implicit(reads=(("rax", 16, DATA),), writes=(("rax", 16),))
    return _Implicit(reads=(("rax", w, DATA), ("rdx", w, DATA)), writes=(("rax", w), ("rdx", w)))


@dataclass(frozen=True)
class Division:
    """What an integer division (div, idiv) needs of its values not to raise #DE (SIGFPE on
    Linux): a divisor (its one operand, `width` bits) that is not zero, and a dividend whose
    quotient fits in `width` bits (idiv: in width - 1 bits and a sign). The dividend is twice
    the width, `high`:`low` (rdx:rax, edx:eax, dx:ax; unsigned, the high half below the
    divisor is enough), or ax for a byte divisor (`high` None: the dividend lies in rax
    alone, ah its high half). The quotient goes to `low` (rax, al), the remainder to
    `remainder` (rdx, edx, dx; ah: rax)."""
    signed: bool
    width: int
    low: str = "rax"
    high: str | None = "rdx"
    remainder: str = "rdx"


_DIVISIONS = {"div": False, "idiv": True}


def _accumulator(w, ops, prefixes):
    """cmpxchg: compares with rax (of the operand width) and loads it on failure."""
    return _Implicit(reads=(("rax", w, DATA),), writes=(("rax", w),))


def _cmpxchg_double(width):
    def handler(w, ops, prefixes):
        return _Implicit(reads=tuple((r, width, DATA) for r in ("rax", "rdx", "rbx", "rcx")),
                         writes=(("rax", width), ("rdx", width)))
    return handler


def _count_register(w, ops, prefixes):
    return _Implicit(reads=(("rcx", 64, DATA),), writes=(("rcx", 64),))


def _string(kind: str):
    """movs / stos / lods / cmps / scas: rsi, rdi (and rax), DF; rcx with a rep prefix."""
    def handler(w, ops, prefixes):
        reads, writes, memory = [], [], []
        if kind in ("movs", "lods", "cmps"):
            reads.append(("rsi", 64, ADDRESS))
            writes.append(("rsi", 64))
            memory.append(MemAccess(None, base="rsi", width=w, load=True))
        if kind in ("movs", "stos", "cmps", "scas"):
            reads.append(("rdi", 64, ADDRESS))
            writes.append(("rdi", 64))
            memory.append(MemAccess(None, base="rdi", width=w, load=kind in ("cmps", "scas"),
                                    store=kind in ("movs", "stos")))
        if kind in ("stos", "scas"):
            reads.append(("rax", w, DATA))
        if kind == "lods":
            writes.append(("rax", w))
        notes = ()
        if any(p.startswith("rep") for p in prefixes):
            reads.append(("rcx", 64, DATA))
            writes.append(("rcx", 64))
            notes = ("repeated rcx times: the memory accesses describe one element",)
        return _Implicit(tuple(reads), tuple(writes), tuple(memory), frozenset((DF,)), notes)
    return handler


def _xlat(w, ops, prefixes):
    return _Implicit(reads=(("rbx", 64, ADDRESS), ("rax", 8, ADDRESS)), writes=(("rax", 8),),
                     memory=(MemAccess(None, base="rbx", index="rax", width=8, load=True),))


def _syscall(w, ops, prefixes):
    args = ("rax", "rdi", "rsi", "rdx", "r10", "r8", "r9")
    return _Implicit(reads=tuple((r, 64, DATA) for r in args),
                     writes=(("rax", 64), ("rcx", 64), ("r11", 64)))


def _xmm0(w, ops, prefixes):
    """Legacy blendv / sha256rnds2: xmm0 is an implicit source when not written out."""
    if any(o.kind == "reg" and o.name and family(o.name) == "v0" for o in ops[2:]):
        return _NO_IMPLICIT
    return _Implicit(reads=(("v0", 128, DATA),))


def _string_compare(explicit_length: bool, writes_index: bool):
    def handler(w, ops, prefixes):
        reads = (("rax", 64, DATA), ("rdx", 64, DATA)) if explicit_length else ()
        writes = (("rcx", 32),) if writes_index else (("v0", 128),)
        return _Implicit(reads=reads, writes=writes)
    return handler


def _maskmov(w, ops, prefixes):
    return _Implicit(reads=(("rdi", 64, ADDRESS),),
                     memory=(MemAccess(None, base="rdi", width=w, store=True),))


def _x87_stack(w, ops, prefixes):
    return _Implicit(reads=(("st", 80, DATA),), writes=(("st", 80),))


def _vzeroall(w, ops, prefixes):
    return _Implicit(writes=tuple((f"v{i}", 256) for i in range(16)))


def _lahf(w, ops, prefixes):
    return _Implicit(writes=(("rax", 8),))


def _sahf(w, ops, prefixes):
    return _Implicit(reads=(("rax", 8, DATA),))


# general-purpose integer instructions
_def("add sub and", "RW,R", flags_written=ALL, fusion=True)
_def("or xor", "RW,R", flags_written=ALL)
_def("adc sbb", "RW,R", flags_read=frozenset((CF,)), flags_written=ALL)
_def("cmp test", "R,R", flags_written=ALL, fusion=True)
_def("inc dec", "RW", flags_written=NOT_CF, fusion=True)
_def("neg", "RW", flags_written=ALL)
_def("not", "RW")
_def("mov", "W,R", move=True)
_def("movzx movsx movsxd movbe", "W,R")
_def("lea", "W,R", memory="address")
_def("xchg", "RW,RW")
_def("xadd", "RW,RW", flags_written=ALL)
_def("cmpxchg", "RW,R", flags_written=ALL, implicit=_accumulator)
_def("cmpxchg8b", "RW", flags_written=frozenset((ZF,)), implicit=_cmpxchg_double(32))
_def("cmpxchg16b", "RW", flags_written=frozenset((ZF,)), implicit=_cmpxchg_double(64))
_def("imul", "R|RW,R|W,R,R", flags_written=ALL, implicit=_multiply)
_def("mul", "R", flags_written=ALL, implicit=_multiply)
_def("div idiv", "R", flags_written=ALL, implicit=_divide)
_def("mulx", "W,W,R", implicit=_fixed(("rdx/64",)))
_def("shl shr sar", "RW|RW,R", flags_written=ALL, count_flags=True)
_def("rol ror", "RW|RW,R", flags_written=CF_OF, count_flags=True)
_def("rcl rcr", "RW|RW,R", flags_read=frozenset((CF,)), flags_written=CF_OF, count_flags=True)
_def("shld shrd", "RW,R,R", flags_written=ALL, count_flags=True)
_def("sarx shlx shrx rorx pdep pext", "W,R,R")
_def("andn bextr bzhi", "W,R,R", flags_written=ALL)
_def("blsr blsi blsmsk", "W,R", flags_written=ALL)
_def("bt", "R,R", flags_written=BIT_TEST)
_def("bts btr btc", "RW,R", flags_written=BIT_TEST)
_def("bsf bsr", "RW,R", flags_written=ALL,
     notes=("the destination is kept when the source is zero: it is read too",))
_def("lzcnt tzcnt popcnt", "W,R", flags_written=ALL)
_def("bswap", "RW")
_def("crc32", "RW,R")
_def("adcx", "RW,R", flags_read=frozenset((CF,)), flags_written=frozenset((CF,)))
_def("adox", "RW,R", flags_read=frozenset((OF,)), flags_written=frozenset((OF,)))
_def("cbw", "", implicit=_widen(8, 16))
_def("cwde", "", implicit=_widen(16, 32))
_def("cdqe", "", implicit=_widen(32, 64))
_def("cwd", "", implicit=_widen(16, 16, "rdx"))
_def("cdq", "", implicit=_widen(32, 32, "rdx"))
_def("cqo", "", implicit=_widen(64, 64, "rdx"))
_def("lahf", "", flags_read=STATUS, implicit=_lahf)
_def("sahf", "", flags_written=STATUS, implicit=_sahf)
_def("clc stc", "", flags_written=frozenset((CF,)))
_def("cmc", "", flags_read=frozenset((CF,)), flags_written=frozenset((CF,)))
_def("cld std", "", flags_written=frozenset((DF,)))
_def("xlat xlatb", "-*", implicit=_xlat)
for _c, _f in _CONDITION_FLAGS.items():
    _def("set" + _c, "W", flags_read=_f, memory_width=8)
    _def("cmov" + _c, "RW,R", flags_read=_f, select=True)
    _def("j" + _c, "-", flags_read=_f, branch="conditional")

# control flow and the stack
_def("jmp", "R", branch="jump")
_def("call", "R", branch="call", implicit=_stack(store=True))
_def("ret lret retf", "-*", branch="return", implicit=_stack(store=False))
_def("loop", "-", branch="conditional", implicit=_count_register)
_def("loope loopz loopne loopnz", "-", branch="conditional", implicit=_count_register,
     flags_read=frozenset((ZF,)))
_def("jrcxz jecxz jcxz", "-", branch="conditional", implicit=_fixed(("rcx/64",)))
_def("push", "R", implicit=_push)
_def("pop", "W", implicit=_pop)
_def("pushf pushfq pushfd", "", flags_read=ALL | {DF}, implicit=_stack(store=True))
_def("popf popfq popfd", "", flags_written=ALL | {DF}, implicit=_stack(store=False))
_def("enter", "-,-", implicit=_enter)
_def("leave", "", implicit=_leave)

# no data (a prefix alone on a line, `rep; ret`, is its own statement: nothing either)
_def("nop", "-*", memory="none")
_def("lock rep repe repz repne repnz notrack data16 data32 addr32 rex64", "")
_def("endbr64 endbr32 pause sfence", "")
# lfence waits for every earlier instruction, mfence for earlier loads and stores, serialize
# for everything: what they cost depends on what is in flight, not on a form of their own
_def("lfence mfence serialize", "", barrier=True)
_def("prefetcht0 prefetcht1 prefetcht2 prefetchnta prefetchw prefetchwt1 prefetch "
     "clflush clflushopt clwb cldemote", "R", memory="address", memory_width=8)

# traps, system and identification
_def("ud2 ud1 ud0", "-*", trap="ud2")
_def("int3", "", trap="int3")
_def("int into int1 icebp", "-*", trap="int")
_def("hlt", "", trap="hlt")
_def("syscall", "", trap="syscall", implicit=_syscall)
_def("sysenter", "", trap="sysenter")
_def("sysexit sysret sysretq iret iretq iretd swapgs rdmsr wrmsr cli sti in out insb insw insd "
     "outsb outsw outsd lgdt lidt lldt ltr sgdt sidt sldt str invlpg invpcid invd wbinvd clts "
     "lmsw smsw xsetbv monitor mwait vmcall vmlaunch vmresume vmxoff xsaves xrstors wrpkru",
     "-*", trap="privileged")
_def("cpuid", "", implicit=_fixed(("rax/32", "rcx/32"), ("rax/32", "rbx/32", "rcx/32", "rdx/32")),
     notes=("serialising",), barrier=True)
_def("rdtsc", "", implicit=_fixed((), ("rax/32", "rdx/32")))
_def("rdtscp", "", implicit=_fixed((), ("rax/32", "rdx/32", "rcx/32")))
_def("xgetbv rdpmc", "", implicit=_fixed(("rcx/32",), ("rax/32", "rdx/32")))
_def("rdpkru", "", implicit=_fixed(("rcx/32",), ("rax/32", "rdx/32")))
_def("rdrand rdseed", "W", flags_written=ALL)
_def("rdpid rdfsbase rdgsbase", "W")
_def("wrfsbase wrgsbase", "R")
_def("xsave xsave64 xsaveopt xsavec fxsave fxsave64 stmxcsr", "W",
     implicit=_fixed(("rax/32", "rdx/32")))
_def("xrstor xrstor64 fxrstor fxrstor64 ldmxcsr", "R", implicit=_fixed(("rax/32", "rdx/32")))

# string instructions (the explicit operands, if written, are the implicit ones); a table of
# their own: movsd and cmpsd are also SSE instructions
_STRING_SUFFIX = {"b": 8, "w": 16, "d": 32, "q": 64, "": None}
_STRINGS = {kind: _Spec(access_pattern("-*"), implicit=_string(kind), memory="none",
                        flags_written=ALL if kind in ("cmps", "scas") else NONE)
            for kind in ("movs", "stos", "lods", "cmps", "scas")}

# x87: the register stack is one resource ("st"), read and written by everything
_X87_LOADS = ("fld fild fadd fsub fsubr fmul fdiv fdivr fiadd fisub fisubr fimul fidiv fidivr fcom "
              "fcomp ficom ficomp fbld fldcw fldenv frstor")
_X87_STORES = "fst fstp fist fistp fisttp fbstp fnstcw fstcw fnstsw fstsw fnstenv fstenv fnsave fsave"
_X87_OTHER = ("fxch fchs fabs fsqrt frndint f2xm1 fyl2x fyl2xp1 fptan fpatan fsin fcos fsincos fprem "
              "fprem1 fscale fxtract fld1 fldz fldpi fldl2e fldl2t fldlg2 fldln2 faddp fsubp fsubrp "
              "fmulp fdivp fdivrp fcompp fucom fucomp fucompp ftst fxam fnop fwait wait fincstp "
              "fdecstp ffree fninit finit fnclex fclex emms femms")
_def(_X87_LOADS, "R*", implicit=_x87_stack)
_def(_X87_STORES, "W*", implicit=_x87_stack)
_def(_X87_OTHER, "RW*", implicit=_x87_stack)
_def("fcomi fcomip fucomi fucomip fcompi fucompi", "RW*", implicit=_x87_stack,
     flags_written=ALL)
for _c, _f in _FCMOV_FLAGS.items():
    _def("fcmov" + _c, "RW*", implicit=_x87_stack, flags_read=frozenset(_f))

# --- SSE, AVX, AVX-512 --------------------------------------------------------------------------


# Legacy SSE/MMX operations that overwrite their first source: RW,R... in the legacy
# encoding, W,R,R... in the VEX/EVEX encoding (non-destructive). Scalar operations that
# keep the upper lanes of the destination are here too (sqrtsd: RW in legacy SSE).
_DESTRUCTIVE = expand_mnemonics("""
{add,sub,mul,div,min,max}{ps,pd,ss,sd} {and,andn,or,xor}{ps,pd} unpck{l,h}{ps,pd}
addsub{ps,pd} hadd{ps,pd} hsub{ps,pd} {sqrt,rcp,rsqrt}ss sqrtsd cvtss2sd cvtsd2ss cvtsi2ss cvtsi2sd
round{ss,sd} shuf{ps,pd} blend{ps,pd} dp{ps,pd} insertps cmp{ps,pd,ss,sd} movlhps movhlps
padd{b,w,d,q} padds{b,w} paddus{b,w} psub{b,w,d,q} psubs{b,w} psubus{b,w}
pmul{lw,hw,huw,ld,udq,dq,hrsw} pmadd{wd,ubsw} pand pandn por pxor pavg{b,w}
pmin{ub,uw,ud,sb,sw,sd} pmax{ub,uw,ud,sb,sw,sd} psadbw pcmpeq{b,w,d,q} pcmpgt{b,w,d,q}
pack{sswb,ssdw,uswb,usdw} punpckl{bw,wd,dq,qdq} punpckh{bw,wd,dq,qdq} pshufb psign{b,w,d}
phadd{w,d,sw} phsub{w,d,sw} psll{w,d,q} psrl{w,d,q} psra{w,d} pslldq psrldq palignr pblendw
mpsadbw pinsr{b,w,d,q} pclmulqdq aes{enc,enclast,dec,declast} gf2p8{mulb,affineqb,affineinvqb}
""")
# Operations that only read their sources, in both encodings: W,R...
_UNARY = expand_mnemonics("""
mov{aps,ups,apd,upd,dqa,dqu} lddqu movntdqa movddup movshdup movsldup movd movq
pshufd pshufhw pshuflw pmov{zx,sx}{bw,bd,bq,wd,wq,dq}
cvt{dq2ps,ps2dq,tps2dq,dq2pd,pd2dq,tpd2dq,ps2pd,pd2ps,ss2si,sd2si,tss2si,tsd2si}
{sqrt,rcp,rsqrt}ps sqrtpd round{ps,pd} pabs{b,w,d} phminposuw movmsk{ps,pd} pmovmskb
pextr{b,w,d,q} extractps aesimc aeskeygenassist movnt{ps,pd,dq}
""")
_COMPARE_FLAGS = expand_mnemonics("ucomiss ucomisd comiss comisd ptest")
# moves a core may eliminate between registers
_VECTOR_MOVES = set(expand_mnemonics("mov{aps,ups,apd,upd,dqa,dqu}")) | set(
    expand_mnemonics("vmov{aps,ups,apd,upd,dqa,dqu} vmovdqa{32,64} vmovdqu{8,16,32,64}"))
_ZERO_IDIOMS = set(expand_mnemonics("xor sub pxor xorps xorpd vpxor vxorps vxorpd vpxor{d,q} "
                           "psub{b,w,d,q} vpsub{b,w,d,q} pcmpgt{b,w,d,q} vpcmpgt{b,w,d,q}"))
_ONES_IDIOMS = set(expand_mnemonics("pcmpeq{b,w,d,q} vpcmpeq{b,w,d,q}"))
# zero idioms only some cores recognise (~y & y; the flags of x - x)
_CANDIDATE_ZERO_IDIOMS = set(expand_mnemonics("andnps andnpd vandnps vandnpd pandn vpandn "
                                              "vpandn{d,q} andn cmp"))

for _m in _DESTRUCTIVE:
    _def(_m, "RW,R*")
    _def("v" + _m, "W,R*")
for _m in _UNARY:
    _def(_m, "W,R*")
    _def("v" + _m, "W,R*")
for _m in _COMPARE_FLAGS:
    _def(_m, "R,R", flags_written=ALL)
    _def("v" + _m, "R,R", flags_written=ALL)
# legacy only (no VEX form)
_def("sha1rnds4 sha1nexte sha1msg1 sha1msg2 sha256msg1 sha256msg2", "RW,R*")
_def("movnti movntq pshufw movq2dq movdq2q", "W,R*")
_def("sha256rnds2", "RW,R*", implicit=_xmm0)
_def("blendvps blendvpd pblendvb", "RW,R*", implicit=_xmm0)
_def("pcmpistri vpcmpistri", "R,R,-", flags_written=ALL, implicit=_string_compare(False, True))
_def("pcmpestri vpcmpestri", "R,R,-", flags_written=ALL, implicit=_string_compare(True, True))
_def("pcmpistrm vpcmpistrm", "R,R,-", flags_written=ALL, implicit=_string_compare(False, False))
_def("pcmpestrm vpcmpestrm", "R,R,-", flags_written=ALL, implicit=_string_compare(True, False))
_def("maskmovdqu vmaskmovdqu maskmovq", "R,R", implicit=_maskmov)
# AVX / AVX2 only
_def("""
vbroadcast{ss,sd,f128,i128} vpbroadcast{b,w,d,q} vperm2{f128,i128} vinsert{f128,i128}
vextract{f128,i128} vperm{d,q,ps,pd} vpermil{ps,pd} vpsllv{d,q} vpsrlv{d,q} vpsravd vpblendd
vcvtph2ps vcvtps2ph vblendv{ps,pd} vpblendvb vmaskmov{ps,pd} vpmaskmov{d,q} vtestps vtestpd
""", "W,R*")
_def("vtestps vtestpd", "R,R", flags_written=ALL)
_def("vf{,n}m{add,sub}{132,213,231}{ps,pd,ss,sd} vfm{addsub,subadd}{132,213,231}{ps,pd}", "RW,R*")
_def("v{,p}gather{d,q}{ps,pd,d,q}", "RW,R|RW,R,RW")
_def("v{,p}scatter{d,q}{ps,pd,d,q}", "W,R")
_def("vzeroupper", "", notes=("clears the upper halves: no register dependency modelled",))
_def("vzeroall", "", implicit=_vzeroall)
# AVX-512 (EVEX only)
_def("""
vp{xor,and,andn,or}{d,q} vmovdqa{32,64} vmovdqu{8,16,32,64} vpabsq vp{max,min}{sq,uq} vpmullq
vpro{l,r}{d,q} vpro{l,r}v{d,q} vpsraq vpsrav{q,w} vpsllvw vpsrlvw
vbroadcast{i,f}{32x2,32x4,64x2,32x8,64x4} vextract{i,f}{32x4,64x2,32x8,64x4}
vinsert{i,f}{32x4,64x2,32x8,64x4} vshuf{i,f}{32x4,64x2} valign{d,q}
v{p,}compress{d,q,ps,pd} v{p,}expand{d,q,ps,pd} vpcompress{b,w} vpexpand{b,w}
vpmov{,s,us}{qd,qw,qb,dw,db,wb} vpmovm2{b,w,d,q} vpmov{b,w,d,q}2m vpbroadcastm{b2q,w2d}
vcvt{qq2pd,qq2ps,uqq2pd,uqq2ps,pd2qq,pd2uqq,tpd2qq,tpd2uqq,ps2qq,ps2uqq,tps2qq,tps2uqq}
vcvt{udq2ps,udq2pd,ps2udq,tps2udq,pd2udq,tpd2udq} vcvtusi2s{s,d} vcvt{,t}s{s,d}2usi
vrcp14{ps,pd,ss,sd} vrsqrt14{ps,pd,ss,sd} vgetexp{ps,pd,ss,sd} vgetmant{ps,pd,ss,sd}
vscalef{ps,pd,ss,sd} vreduce{ps,pd,ss,sd} vrndscale{ps,pd,ss,sd} vrange{ps,pd,ss,sd}
vfpclass{ps,pd,ss,sd} vpconflict{d,q} vplzcnt{d,q} vpopcnt{b,w,d,q} vperm{b,w} vpmultishiftqb
vpshld{w,d,q} vpshrd{w,d,q} vpcmp{,u}{b,w,d,q} vptest{,n}m{b,w,d,q} vblendm{ps,pd}
vpblendm{b,w,d,q} vdbpsadbw vpshufbitqmb vcvtne2ps2bf16 vcvtneps2bf16
""", "W,R*")
_def("""
vpternlog{d,q} vpermi2{b,w,d,q,ps,pd} vpermt2{b,w,d,q,ps,pd} vpdp{busd,busds,wssd,wssds}
vpmadd52{l,h}uq vfixupimm{ps,pd,ss,sd} vpsh{l,r}dv{w,d,q} vdpbf16ps
""", "RW,R*")
# mask registers
_def("kmov{b,w,d,q} knot{b,w,d,q} kshift{l,r}{b,w,d,q}", "W,R*")
_def("k{and,andn,or,xor,xnor,add}{b,w,d,q} kunpck{bw,wd,dq}", "W,R,R")
_def("k{or,}test{b,w,d,q}", "R,R", flags_written=ALL)

# vector register moves and the rest that depends on the operands
_def("movss movsd", "RW,R")          # W,R when memory is involved (_resolve)
_def("vmovss vmovsd", "W,R*")
_def("mov{h,l}{ps,pd}", "RW,R")      # loads merge; stores are W,R (_resolve)
_def("vmov{h,l}{ps,pd}", "W,R*")

# AT&T spellings llvm-mc prints that normalize leaves alone
_ATT_SPELLINGS = {"fucompi": "fucomip", "fcompi": "fcomip"}

# idioms and moves: properties of the entries above
for _m in _ZERO_IDIOMS | _ONES_IDIOMS:
    if _m in _TABLE:
        _TABLE[_m] = _Spec(**{**_TABLE[_m].__dict__,
                              "idiom": "zero" if _m in _ZERO_IDIOMS else "ones"})
for _m in _CANDIDATE_ZERO_IDIOMS:
    _TABLE[_m] = _Spec(**{**_TABLE[_m].__dict__, "candidate_idiom": "zero"})
for _m in _VECTOR_MOVES:
    _TABLE[_m] = _Spec(**{**_TABLE[_m].__dict__, "move": True})

_PSEUDO_COMPARE = re.compile(r"(v?)cmp(?:eq|lt|le|unord|neq|nlt|nle|ord|nge|ngt|false|ge|gt|true)"
                             r"(?:_[a-z]+)?(ps|pd|ss|sd)$")
_FUSION_WITH_MEMORY = {"cmp", "test"}
_HALF_MOVES = re.compile(r"mov[hl]p[sd]")
_GATHER_SCATTER = re.compile(r"vp?(?:gather|scatter)[dq](ps|pd|d|q)$")


# --- operand views ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Op:
    """One explicit operand, in Intel order, as the table rules see it."""
    kind: str                         # "reg", "mem", "imm", "sym", "round", "other"
    cls: str = ""                     # register class of x86_register: G V K M X S IP ?
    width: int | None = None
    name: str | None = None           # register name (None: a form placeholder)
    memory: Memory | None = None
    mask: str | None = None
    zeroing: bool = False
    indirect: bool = False
    value: int | None = None          # an immediate's value, when it is a known integer


@lru_cache(maxsize=None)
def _register_op(name: str, mask: str | None, zeroing: bool, indirect: bool) -> _Op:
    _, cls, width = x86_register(name)[:3]
    return _Op("reg", cls, width, name, mask=mask, zeroing=zeroing, indirect=indirect)


@lru_cache(maxsize=1024)
def _immediate_op(value: int | None) -> _Op:
    return _Op("imm", value=value)


def _instruction_ops(operands, key: FormKey) -> tuple[_Op, ...]:
    out = []
    for op, k in zip(operands, key.operands):
        indirect = isinstance(op, Indirect)
        if indirect:
            op = op.target
        if isinstance(op, Register):
            out.append(_register_op(op.name, op.mask, op.zeroing, indirect))
        elif isinstance(op, Memory):
            width = k[1] if k[0] == "mem" else None
            out.append(_Op("mem", width=width, memory=op, mask=op.mask, zeroing=op.zeroing,
                           indirect=indirect))
        elif isinstance(op, Symbol):
            if k[0] == "sym" and not indirect:
                out.append(_Op("sym", name=op.name))
            else:                                     # an absolute address: `mov foo, %eax`
                out.append(_Op("mem", width=k[1] if k[0] == "mem" else None,
                               memory=Memory(symbols=(op.name,), has_disp=True), indirect=indirect))
        elif isinstance(op, Immediate):
            value = op.value if isinstance(op.value, int) and not op.symbols else None
            out.append(_immediate_op(value))
        elif isinstance(op, Rounding):
            out.append(_Op("round"))
        else:
            out.append(_Op("other"))
    return tuple(out)


def _form_ops(template) -> tuple[_Op, ...]:
    out = []
    for op in template.operands:
        if op.kind == "reg":
            ph = op.placeholders[0]
            cls = "V" if ph.reg_class in ("V", "F") else "G"
            out.append(_Op("reg", cls, ph.width))
        elif op.kind == "mem":
            out.append(_Op("mem", width=op.mem_width))
        elif op.kind == "imm":
            out.append(_Op("imm"))
        else:
            name = op.text.strip().lower()
            if family(name) is not None:              # a fixed register: `SHL r64, cl`
                _, cls, width = x86_register(name)[:3]
                out.append(_Op("reg", cls, width, name))
            else:
                out.append(_Op("other"))
    return tuple(out)


# --- resolution: mnemonic + operands -> spec and access -----------------------------------------

@dataclass
class _Resolved:
    mnemonic: str
    spec: _Spec | None
    access: tuple[str, ...]
    width: int | None                 # operand size (implicit registers follow it)
    known: bool = True
    notes: list = field(default_factory=list)


def _operand_width(ops) -> int | None:
    for o in ops:
        if o.kind == "reg" and o.cls == "G":
            return o.width
    for o in ops:
        if o.kind == "mem" and o.width:
            return o.width
    return None


def _is_vector(o: _Op) -> bool:
    return o.kind == "reg" and o.cls in ("V", "M")


def _lookup(mnemonic: str, ops, att: bool) -> tuple[str, _Spec | None, int | None]:
    """(table mnemonic, spec, operand width from the spelling) of a normalised mnemonic."""
    mnemonic = _ATT_SPELLINGS.get(mnemonic, mnemonic)
    width = None
    # string instructions share names with SSE moves/compares (movsd, cmpsd): no vector operand
    base = mnemonic if mnemonic[:4] in ("movs", "stos", "lods", "cmps", "scas") else ""
    if base and not any(_is_vector(o) for o in ops) and (len(mnemonic) == 4 or mnemonic[4:] in
                                                         ("b", "w", "d", "q", "l")):
        letter = mnemonic[4:]
        if letter == "l" and att:
            letter = "d"
        if letter in _STRING_SUFFIX:
            width = _STRING_SUFFIX[letter] or _operand_width(ops) or None
            letter = {8: "b", 16: "w", 32: "d", 64: "q"}.get(width, "")   # Intel `stos m64` too
            return base[:4] + letter, _STRINGS[base[:4]], width
    spec = _TABLE.get(mnemonic)
    if spec is not None:
        return mnemonic, spec, None
    m = _PSEUDO_COMPARE.match(mnemonic)
    if m:
        name = f"{m.group(1)}cmp{m.group(2)}"
        return name, _TABLE[name], None
    if att and mnemonic[-1:] in _SUFFIX_WIDTH and mnemonic[:-1] in _TABLE:
        return mnemonic[:-1], _TABLE[mnemonic[:-1]], _SUFFIX_WIDTH[mnemonic[-1]]
    return mnemonic, None, None


def _resolve(mnemonic: str, ops, att: bool = False) -> _Resolved:
    name, spec, width = _lookup(mnemonic, ops, att)
    counted = [o for o in ops if o.kind != "round"]
    width = width or _operand_width(ops)
    access = spec.access(len(counted)) if spec is not None else None
    if spec is None or access is None:
        # not in the table (or an operand count it does not know): first operand written,
        # the others read (Intel order), no flags, no implicit registers
        guess = tuple("W" if i == 0 else "R" for i in range(len(counted)))
        why = "not in the x86 tables" if spec is None else f"{len(counted)} operands not in the x86 tables"
        res = _Resolved(name, None, _expand_access(guess, ops), width, known=False)
        res.notes.append(f"`{mnemonic}` {why}: first operand assumed written, the others read")
        return res
    access = list(access)
    if name in ("movss", "movsd") and any(o.kind == "mem" for o in ops):
        access = ["W", "R"]                      # to or from memory: no merge
    elif _HALF_MOVES.fullmatch(name) and ops and ops[0].kind == "mem":
        access = ["W", "R"]                      # store of one half
    return _Resolved(name, spec, _expand_access(tuple(access), ops), width)


def _expand_access(access: tuple[str, ...], ops) -> tuple[str, ...]:
    """Per explicit operand (rounding operands included): immediates and targets are not accessed."""
    out, it = [], iter(access)
    for o in ops:
        if o.kind == "round":
            out.append("")
            continue
        a = next(it, "")
        out.append("" if o.kind in ("imm", "sym", "other") else a)
    return tuple(out)


# the element width of each logical vector shift by an immediate
_SHIFT_ELEMENT_BITS = {f"ps{d}{e}": bits for d in ("ll", "rl")
                       for e, bits in (("w", 16), ("d", 32), ("q", 64))}


def _shift_count_in_register(spec: _Spec, ops) -> bool:
    return spec.count_flags and len(ops) >= 2 and ops[-1].kind == "reg"


def _flags(res: _Resolved, ops) -> tuple[frozenset, frozenset]:
    spec = res.spec
    if spec is None:
        return NONE, NONE
    read = spec.flags_read
    if _shift_count_in_register(spec, ops):
        read = read | spec.flags_written
        res.notes.append("the count may be 0, which leaves the flags unchanged: they are read too")
    return read, spec.flags_written


def _implicit(res: _Resolved, ops, prefixes) -> _Implicit:
    if res.spec is None or res.spec.implicit is None:
        return _NO_IMPLICIT
    return res.spec.implicit(res.width or 64, ops, prefixes)


# --- instruction -> form string (X86Semantics.form_of) --------------------------------------------

# prefixes that change what is measured but that a form string cannot spell (`lock` is not
# one: a locked instruction's form is the plain one, and what the lock adds is the machine's
# measured atomic_cycles, see annotate.ATOMIC_ORDER)
_UNREPRESENTABLE_PREFIXES = ("rep", "repe", "repz", "repne", "repnz")
_PTR_WORDS = {8: "byte", 16: "word", 32: "dword", 64: "qword", 80: "tbyte", 128: "xmmword",
              256: "ymmword", 512: "zmmword"}
_PLACEHOLDER_CLASSES = ("G", "V")           # what form strings (and the harness) allocate


def _literal_register(res: _Resolved, index: int, op: _Op) -> bool:
    """A register the encoding fixes: the `cl` of a shift count, which the form string spells
    out instead of a placeholder (the matcher knows fixed general-purpose registers only, so
    the legacy blendv's fixed `xmm0` is refused)."""
    spec = res.spec
    if spec is None or op.kind != "reg":
        return False
    if spec.implicit is _xmm0 and index >= 2 and op.name == "xmm0":
        raise ValueError("the fixed xmm0 operand: form strings cannot fix a vector register")
    return spec.count_flags and op.name == "cl" and index > 0


def _immediate_width(value, operand_width: int | None) -> int:
    """imm8 when the value fits 8 bits, else the operation's width (16 or 32; 64 when only
    a 64-bit immediate holds it: `movabs`)."""
    if value is None or isinstance(value, float):
        return 32
    if -128 <= value < 256:
        return 8
    if operand_width == 16 and -(1 << 15) <= value < (1 << 16):
        return 16
    return 32 if -(1 << 31) <= value < (1 << 32) else 64


def _address_shape(k: tuple) -> str:
    """`lea`'s address as PMEvo spells it: base, index (scale written 2), disp8 or disp32."""
    _, base, index, disp = k[:4]
    zero8 = len(k) > 4 and k[4]                  # encoded with a displacement of 0
    parts = (["((MEM:64))"] if base else []) + (["2*((DIV:64))"] if index else [])
    text = "+".join(parts)
    if disp is None or not -128 <= disp < 128:
        text += "_+_((MIMM:16))" if text else "((MIMM:16))"
    elif disp != 0 or not parts or zero8:
        text += "+((IMM:8))" if text else "((IMM:8))"
    return "_[" + text + "]"


def _form_operand(index: int, op: _Op, k: tuple, access: str, res: _Resolved,
                  mem: MemAccess | None, key: FormKey, ops) -> str:
    if op.indirect or op.kind in ("sym", "round", "other"):
        what = {"round": "a rounding-control operand"}.get(op.kind, "a branch target or symbol")
        raise ValueError(f"{what}: form strings cannot spell it")
    if op.kind == "reg":
        if _literal_register(res, index, op):
            return op.name
        if op.cls not in _PLACEHOLDER_CLASSES:
            raise ValueError(f"register {op.name}: form strings have general-purpose and vector "
                             "(xmm/ymm/zmm) placeholders only")
        return f"((REG:{access or 'R'}:{op.cls}:{op.width}))"
    if op.kind == "imm":
        return f"((IMM:{_immediate_width(k[1], res.width or _operand_width(ops))}))"
    if k[0] == "addr":
        return _address_shape(k)
    width = k[1] or (mem.width if mem is not None else None)
    if width is None:
        hint = [o[2] for o in key.operands if o[0] == "reg" and o[1] in _PLACEHOLDER_CLASSES]
        width = max(hint) if hint else None
    if width not in _PTR_WORDS:
        raise ValueError("the width of the memory operand is unknown (add a size suffix or a "
                         "PTR keyword)" if width is None else
                         f"a {width}-bit memory operand: form strings have no size keyword for it")
    return f"{_PTR_WORDS[width]}_ptr_[((MEM:64))_+_((MIMM:16))]"


def _resolved(insn, syntax: str):
    """(form key, operands in Intel order, resolved table entry) of a parsed instruction."""
    key = normalize_x86(insn, syntax)
    operands = list(insn.operands)
    att = syntax == "att"
    if att:
        operands.reverse()
    ops = _instruction_ops(operands, key)
    return key, ops, _resolve(key.mnemonic, ops, att)


# --- the ISA object ----------------------------------------------------------------------------

# accesses that fault (#GP) unless naturally aligned: the aligned and non-temporal moves; and
# legacy-SSE (not VEX) memory operands of 16 bytes or more, but for the unaligned moves and
# the string compares
_ALIGNED_MOVES = frozenset({"movaps", "movapd", "movdqa", "vmovaps", "vmovapd", "vmovdqa",
                            "vmovdqa32", "vmovdqa64", "movntps", "movntpd", "movntdq",
                            "movntdqa", "vmovntps", "vmovntpd", "vmovntdq", "vmovntdqa"})
_UNALIGNED_LEGACY = frozenset({"movups", "movupd", "movdqu", "lddqu", "pcmpestri",
                               "pcmpestrm", "pcmpistri", "pcmpistrm"})


class X86Semantics(IsaSemantics):
    """x86-64 (AT&T and Intel syntax). See the module docstring for the decisions."""

    name = "x86"
    syntaxes = ("att", "intel")
    syntax_titles = {"att": "x86 AT&T", "intel": "x86 Intel"}
    grammar_files = {"att": "x86_att.lark", "intel": "x86_intel.lark"}
    default_model = "skl"
    marker_bytes = (100, 103, 144)
    marker_registers = ("ebx", "rbx")
    marker_how = "iaca-markers"
    marker_description = "IACA byte markers"
    example_base_register = "rsi"
    example_syntax = "intel"
    operation_kinds = (
        (None, r"v?(mov\w*|lddqu|p?broadcast\w*|pop|push)"),
        (DIVIDER, r"v?(i?div|sqrt)\w*"),
        (FP_MULTIPLY, r"v?(mul[ps][sd]|fn?m(add|sub)\w*|dp[ps][sd])"),
        (INT_MULTIPLY, r"(i?mul|mulx|v?pmul\w*|v?pmadd\w*)"),
        (FP_ADD, r"v?((add|sub|min|max)[ps][sd]|addsubp[sd])"),
        (SHUFFLES, r"v?(p?shuf\w*|v?perm\w*|punpck\w*|unpck\w*|palignr|pack\w*|insert\w*"
                   r"|extract\w*|pinsr\w*|pextr\w*|movhlps|movlhps|ps[lr]ldq|p?broadcast\w*)"))
    llvm_mc_args = ("-triple=x86_64", "-x86-asm-syntax=intel", "-show-inst")
    llvm_mc_prologue = (".intel_syntax noprefix",)
    memory_operands_by_mode = False
    # push / pop / call / ret: the stack engine tracks rsp in the front end (Intel since the
    # Pentium M, AMD since K10): a chain of pushes or pops does not wait for rsp
    stack_engine_register = "rsp"
    plain_load_form = "MOV_((REG:W:G:64)),_qword_ptr_[((MEM:64))_+_((MIMM:16))]"
    deliberate_traps = ("ud2", "int3")     # trap kinds: ud0/ud1/ud2 are "ud2"; int1, into "int"
    gpr_families = GPR_FAMILIES
    osaca = OsacaVocabulary(
        register_style="name", memory_base="gpr", any_gpr="gpr", indexed_writeback=False,
        lock_prefix="lock",
        any_immediate=True, att_order=True, load_latency_keys=("gpr", "mm", "xmm", "ymm", "zmm"),
        mnemonic_stems={"movzx": {8: "movzb", 16: "movzw"}, "movsx": {8: "movsb", 16: "movsw"},
                        "movsxd": {32: "movsl"}},
        wide_immediate_names={"mov": "movabs"},
        pure_load=r"v?(mov\w*|p?broadcast\w*|vpbroadcast\w*)")

    _ATT = re.compile(r"%(?:[re]?[abcd]x|[re]?[sd]i|[re]?[sb]p|r\d+[dwb]?|[xyz]mm\d+|[abcd]l|k[0-7]|rip)\b")
    _INTEL = re.compile(r"\b(?:(?:byte|word|dword|qword|xmmword|ymmword|zmmword)\s+ptr"
                        r"|[re](?:ax|bx|cx|dx|si|di|sp|bp)|r(?:8|9|1[0-5])[dwb]?|[xyz]mm\d+)\b",
                        re.IGNORECASE)

    # -- registers and spelling --
    def register_family(self, name: str) -> str | None:
        return family(name)

    def register_pool(self, reg_class: str, width: int | None) -> list[str]:
        """Allocatable registers of class G (general) or V/F (vector) and a width (bits)."""
        if reg_class == "G" and width in GPR_POOLS:
            return list(GPR_POOLS[width])
        if reg_class in ("V", "F"):
            prefix = _VECTOR_PREFIXES.get(width)
            if prefix:
                return [f"{prefix}{i}" for i in range(16)]
        raise ValueError(f"no x86 register pool for class {reg_class!r} width {width}")

    def owns_form(self, name: str) -> bool:
        return form_isa(name) == self.name

    def form_key(self, insn, syntax: str) -> FormKey:
        return normalize_x86(insn, syntax)

    def branch_of(self, mnemonic: str) -> str | None:
        spec = _TABLE.get(mnemonic)
        if spec is None and mnemonic[-1:] in _SUFFIX_WIDTH:
            spec = _TABLE.get(mnemonic[:-1])            # AT&T `jmpq`, `retq`
        return spec.branch if spec is not None else None

    def is_jump(self, mnemonic: str) -> bool:
        return is_x86_jump(mnemonic)

    def transfers_control(self, mnemonic: str) -> bool:
        return is_x86_branch(mnemonic)

    def widest_vector_register(self, text: str) -> int:
        return widest_x86_vector(text)

    def syntax_of_directive(self, directive: str, argument: str) -> str | None:
        return {"intel_syntax": "intel", "att_syntax": "att"}.get(directive)

    def syntax_scores(self, sample: str) -> dict[str, int]:
        att = len(self._ATT.findall(sample))
        intel = len(self._INTEL.findall(sample)) if att == 0 else 0
        return {"att": att, "intel": intel}

    # -- semantics --
    def instruction(self, insn, syntax: str) -> InstructionSemantics:
        return self.described(insn, syntax)[1]

    def described(self, insn, syntax: str) -> tuple[FormKey, InstructionSemantics]:
        key, ops, res = _resolved(insn, syntax)
        return key, _Builder(res, ops, insn.prefixes).build()

    def form_of(self, insn, syntax: str) -> str:
        key, ops, res = _resolved(insn, syntax)
        prefixes = [p for p in insn.prefixes if p in _UNREPRESENTABLE_PREFIXES]
        if prefixes:
            raise ValueError(f"the {prefixes[0]} prefix: form strings have no prefixes")
        if key.masked:
            raise ValueError("AVX-512 masking or broadcast: form strings have neither")
        if "_" in key.mnemonic:
            raise ValueError(f"the mnemonic {key.mnemonic} contains '_', which form strings "
                             "use for a space")
        memory = {m.operand: m for m in self.instruction(insn, syntax).memory
                  if m.operand is not None}
        texts = [_form_operand(i, op, k, access, res, memory.get(i), key, ops)
                 for i, (op, k, access) in enumerate(zip(ops, key.operands, res.access))]
        return "_".join([key.mnemonic.upper(), ",_".join(texts)]) if texts else \
            key.mnemonic.upper()

    def faults_unaligned(self, mnemonic: str, width: int | None) -> bool:
        """Whether a memory access of `width` bits by `mnemonic` faults unless aligned to its
        width, conservatively (a legacy-SSE operand of 16 bytes or more is taken to)."""
        m = mnemonic.lower()
        if m in _ALIGNED_MOVES:
            return True
        return not m.startswith("v") and (width or 0) >= 128 and m not in _UNALIGNED_LEGACY

    def division(self, what) -> Division | None:
        """The operand facts of an integer division (Division), for a form (a form string or
        FormTemplate) or an instruction's semantics (InstructionSemantics); None for every
        other instruction (vector and x87 divisions do not trap on a zero divisor)."""
        if isinstance(what, InstructionSemantics):
            mnemonic = what.mnemonic
            width = next((r.width for r in what.reads if r.operand == 0 and r.kind == GPR
                          and r.role == DATA), None) \
                or next((m.width for m in what.memory if m.operand == 0), None)
        else:
            if not isinstance(what, FormTemplate):
                try:
                    what = parse_form(what, self.name)
                except ValueError:
                    return None
            mnemonic = what.mnemonic.lower()
            width = what.operands[0].width if len(what.operands) == 1 else None
        if mnemonic not in _DIVISIONS or width not in (8, 16, 32, 64):
            return None
        if width == 8:
            return Division(_DIVISIONS[mnemonic], 8, high=None, remainder="rax")
        return Division(_DIVISIONS[mnemonic], width)

    def _form(self, template) -> FormSemantics:
        ops = _form_ops(template)
        res = _resolve(template.mnemonic, ops)
        if not res.known:                     # the form string's own R / W / RW is a better guess
            res.access = placeholder_access(template, res.access)
        flags_read, flags_written = _flags(res, ops)
        imp = _implicit(res, ops, ())
        spec = res.spec
        memory = NO_MEMORY
        mem_access = [a for o, a in zip(ops, res.access) if o.kind == "mem"]
        if spec is not None and spec.memory == "none":
            memory = NO_MEMORY
        elif spec is not None and spec.memory == "address" and mem_access:
            memory = ADDRESS_ONLY
        elif mem_access:
            a = mem_access[0]
            memory = READ_MODIFY_WRITE if a == "RW" else STORE if a == "W" else LOAD
        fixed = frozenset(family(o.name) for o in ops if o.kind == "reg" and o.name)
        access = tuple("" if spec is not None and spec.memory in ("address", "none")
                       and o.kind == "mem" else a for o, a in zip(ops, res.access))
        return FormSemantics(
            mnemonic=res.mnemonic, operand_access=access, memory=memory,
            implicit_reads=frozenset(r[0] for r in imp.reads),
            implicit_writes=frozenset(w[0] for w in imp.writes),
            flags_read=flags_read | imp.flags_read, flags_written=flags_written, fixed=fixed,
            branch=_branch(spec, ops), trap=spec.trap if spec else None, known=res.known,
            barrier=bool(spec and spec.barrier))


def _branch(spec: _Spec | None, ops) -> str | None:
    if spec is None or spec.branch is None:
        return None
    if spec.branch == "jump" and any(o.kind in ("reg", "mem") for o in ops):
        return "indirect"
    return spec.branch


@lru_cache(maxsize=None)                # a few dozen distinct sets of flags
def _flag_accesses(flags: frozenset) -> tuple[RegAccess, ...]:
    return tuple(RegAccess(f, FLAG) for f in sorted(flags))


# RegAccess(name, kind, operand, role, width), made once (frozen: equal ones can be shared)
_register_access = lru_cache(maxsize=4096)(RegAccess)


class _Builder:
    """Collects the reads, writes and memory accesses of one concrete instruction."""

    def __init__(self, res: _Resolved, ops, prefixes):
        self.res, self.ops, self.prefixes = res, ops, prefixes
        # RegAccess by its fields, in order: a register is listed once
        self.reads: dict[tuple, RegAccess] = {}
        self.writes: dict[tuple, RegAccess] = {}
        self.memory: list[MemAccess] = []
        self.notes = list(res.notes)

    def read(self, name, kind, operand, role=DATA, width=None):
        fields = (name, kind, operand, role, width)
        if fields not in self.reads:
            self.reads[fields] = _register_access(*fields)

    def write(self, name, kind, operand, width=None):
        fields = (name, kind, operand, DATA, width)
        if fields not in self.writes:
            self.writes[fields] = _register_access(*fields)
        if kind == GPR and width in (8, 16) and not any(
                r.name == name and r.operand == operand for r in self.reads.values()):
            self.read(name, kind, operand, MERGE, 64)   # partial write: the rest of the family stays

    def register(self, i: int, op: _Op, access: str):
        fam = family(op.name)
        if fam is None:
            if access:
                self.notes.append(f"register {op.name} is not tracked")
            return
        kind = OTHER if fam == "st" else _kind(op.cls)
        if "R" in access:
            self.read(fam, kind, i, DATA, op.width)
        if "W" in access:
            self.write(fam, kind, i, op.width)
            if op.mask and "R" not in access and not op.zeroing and kind == VECTOR:
                self.read(fam, kind, i, MERGE, op.width)     # merge masking keeps masked lanes
        if op.mask:
            self.read(family(op.mask), MASK, i)

    @property
    def address_only(self) -> bool:
        return self.res.spec is not None and self.res.spec.memory == "address"

    def memory_operand(self, i: int, op: _Op, access: str):
        spec, m = self.res.spec, op.memory
        if not access or spec is not None and spec.memory == "none":
            return
        for reg in (m.base, m.index):
            fam = family(reg) if reg else None
            if fam is not None:
                kind = VECTOR if fam.startswith("v") else GPR
                self.read(fam, kind, i, ADDRESS, x86_register(reg)[2])
        width = op.width or (spec.memory_width if spec is not None else None)
        scattered = _GATHER_SCATTER.match(self.res.mnemonic)
        if scattered:                                 # one element per index register lane
            width = 32 if scattered.group(1) in ("ps", "d") else 64
        elif m.broadcast:
            vec = [o.width for o in self.ops if o.kind == "reg" and o.cls == "V"]
            count = int(m.broadcast.split("to")[1])
            width = max(vec) // count if vec else None
        self.memory.append(MemAccess(
            i, base=family(m.base) if m.base else None, index=family(m.index) if m.index else None,
            scale=m.scale, disp=m.disp, symbols=m.symbols, width=width,
            load="R" in access and not self.address_only, store="W" in access and not self.address_only))
        if op.mask:
            self.read(family(op.mask), MASK, i)

    def build(self) -> InstructionSemantics:
        res, ops = self.res, self.ops
        spec = res.spec
        for i, (op, access) in enumerate(zip(ops, res.access)):
            if op.kind == "reg":
                self.register(i, op, access)
            elif op.kind == "mem":
                self.memory_operand(i, op, access)
        imp = _implicit(res, ops, self.prefixes)
        for name, width, role in imp.reads:
            self.read(name, OTHER if name == "st" else VECTOR if name.startswith("v") else GPR,
                      None, role, width)
        for name, width in imp.writes:
            self.write(name, OTHER if name == "st" else VECTOR if name.startswith("v") else GPR,
                       None, width)
        self.memory.extend(imp.memory)
        self.notes.extend(imp.notes)
        flags_read, flags_written = _flags(res, ops)
        flags_read |= imp.flags_read
        idiom = self._idiom()
        if idiom:
            self.reads, flags_read = {}, NONE
        elif res.mnemonic == "sbb" and self._same_sources():
            self.reads = {k: a for k, a in self.reads.items() if a.role == ADDRESS}
            self.notes.append("sbb r, r depends on CF only")
        beyond = ""
        if "lock" in self.prefixes:
            self.notes.append("locked: an atomic read-modify-write")
            beyond = ATOMIC
        elif res.mnemonic == "xchg" and self.memory:
            self.notes.append("xchg with memory is locked without the prefix")
            beyond = ATOMIC
        if spec is not None:
            self.notes.extend(spec.notes)
            if spec.barrier:
                beyond = BARRIER
        reads = tuple(self.reads.values()) + _flag_accesses(flags_read)
        writes = tuple(self.writes.values()) + _flag_accesses(flags_written)
        counted = spec is not None and _shift_count_in_register(spec, ops)
        return InstructionSemantics(
            mnemonic=res.mnemonic, reads=reads, writes=writes, memory=tuple(self.memory),
            idiom=idiom, candidate_idiom=self._idiom(candidate=True),
            move=self._move(), select=spec is not None and spec.select,
            branch=_branch(spec, ops),
            fusion=self._fusion(), trap=self._trap(), known=res.known,
            notes=tuple(dict.fromkeys(self.notes)), offsets=imp.offsets + self._offsets(),
            copies=self._copies(),
            beyond_model=beyond, upper=self._upper(writes),
            shift_count=family(ops[-1].name) if counted else "",
            count_kept_flags=spec.flags_written - spec.flags_read if counted else NONE,
            shifted_out=self._shifted_out())

    def _upper(self, writes) -> str:
        """What the instruction does to the vector registers' upper halves: a VEX/EVEX write
        of a ymm/zmm register dirties them, vzeroupper/vzeroall clean them, a legacy-SSE write
        of an xmm register keeps its register's."""
        m = self.res.mnemonic
        if m in ("vzeroupper", "vzeroall"):
            return UPPER_CLEANS
        vector = [w for w in writes if w.kind == VECTOR and w.name.startswith("v")]
        if not vector:
            return ""
        if m.startswith("v"):
            return UPPER_DIRTIES if any((w.width or 0) > 128 for w in vector) else ""
        return UPPER_KEEPS if any(w.width == 128 for w in vector) else ""

    def _offsets(self) -> tuple[tuple[str, int], ...]:
        """A 64-bit register set to itself plus a constant (32-bit writes zero-extend: their
        result is no constant offset of the 64-bit value)."""
        m, ops = self.res.mnemonic, self.ops
        if not ops or ops[0].kind != "reg" or ops[0].cls != "G" or ops[0].width != 64:
            return ()
        dest = family(ops[0].name)
        if m in ("add", "sub") and len(ops) == 2 and ops[1].kind == "imm" \
                and ops[1].value is not None:
            return ((dest, ops[1].value if m == "add" else -ops[1].value),)
        if m in ("inc", "dec") and len(ops) == 1:
            return ((dest, 1 if m == "inc" else -1),)
        if m == "lea" and len(ops) == 2 and ops[1].kind == "mem":
            mem = ops[1].memory
            if mem.base and family(mem.base) == dest and mem.index is None and not mem.symbols:
                return ((dest, mem.disp),)
        return ()

    def _shifted_out(self) -> bool:
        """A logical vector shift (psll/psrl of words, dwords, qwords) by an immediate of at
        least its element width: every bit is shifted out, the result is 0."""
        m, ops = self.res.mnemonic, self.ops
        bits = _SHIFT_ELEMENT_BITS.get(m[1:] if m.startswith("v") else m)
        return bool(bits and ops and ops[-1].kind == "imm" and ops[-1].value is not None
                    and ops[-1].value >= bits)

    def _copies(self) -> tuple[tuple[str, str, int], ...]:
        """A 64-bit register set to another one plus a constant: mov r64, r64 and lea r64,
        [r + d] (no index, no symbol; the same register: _offsets)."""
        m, ops = self.res.mnemonic, self.ops
        if len(ops) != 2 or ops[0].kind != "reg" or ops[0].cls != "G" or ops[0].width != 64:
            return ()
        dest, src = family(ops[0].name), ops[1]
        if m == "mov" and src.kind == "reg" and src.cls == "G" and src.width == 64:
            source = family(src.name)
            return ((dest, source, 0),) if source and source != dest else ()
        if m == "lea" and src.kind == "mem":
            mem = src.memory
            base = family(mem.base) if mem.base else None
            if base and base != dest and mem.index is None and not mem.symbols:
                return ((dest, base, mem.disp),)
        return ()

    def _trap(self) -> str | None:
        if self.res.spec is not None and self.res.spec.trap:
            return self.res.spec.trap
        if self.res.mnemonic == "mov" and any(o.kind == "reg" and o.cls == "?" and
                                              re.fullmatch(r"[cd]r\d+", o.name or "")
                                              for o in self.ops):
            return "privileged"                       # control / debug registers
        return None

    def _sources(self) -> list[_Op]:
        return [o for o, a in zip(self.ops, self.res.access) if "R" in a]

    def _same_sources(self) -> bool:
        srcs = self._sources()
        return (len(srcs) >= 2 and all(o.kind == "reg" and not o.mask for o in srcs)
                and len({o.name for o in srcs}) == 1)

    def _idiom(self, candidate: bool = False) -> str | None:
        spec = self.res.spec
        kind = None if spec is None else spec.candidate_idiom if candidate else spec.idiom
        if kind is None or not self._same_sources():
            return None
        dest = self.ops[0]
        if dest.kind != "reg" or dest.mask:
            return None
        if dest.cls == "G" and dest.width not in (32, 64) and "W" in self.res.access[0]:
            return None                               # 8/16-bit: merges, not recognised
        if dest.cls not in ("G", "V", "M"):
            return None
        return kind

    def _move(self) -> bool:
        spec, ops = self.res.spec, self.ops
        if spec is None or not spec.move or len(ops) != 2:
            return False
        a, b = ops
        if a.kind != "reg" or b.kind != "reg" or a.mask or b.mask:
            return False
        if a.cls == "G":
            return b.cls == "G" and a.width == b.width and a.width in (32, 64)
        return a.cls == "V" and b.cls == "V"

    def _fusion(self) -> str | None:
        spec, ops = self.res.spec, self.ops
        if spec is None:
            return None
        if spec.branch == "conditional" and self.res.mnemonic.startswith("j") and \
                self.res.mnemonic not in ("jrcxz", "jecxz", "jcxz"):
            return "jcc"
        if not spec.fusion:
            return None
        if not any(o.kind == "mem" for o in ops):
            return "first"
        if self.res.mnemonic in _FUSION_WITH_MEMORY and not any(o.kind == "imm" for o in ops):
            return "first"
        return None


SEMANTICS = X86Semantics()
