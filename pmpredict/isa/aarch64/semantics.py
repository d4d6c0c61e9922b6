"""AArch64: what each instruction reads and writes.

One table (`_TABLE`, filled by the `_def` calls below) drives both `instruction` (a parsed
instruction) and `form` (a PMEvo form string). Operands are in the written order, a
post-index increment (`[x0], 16`, `[x0], x2`) folded into its memory operand as the form
keys do. An entry gives the access of each operand ("W,R*": the first operand written,
the others read; `*` repeats the last access), with the access of a memory operand being
its data access (R load, W store, RW atomic read-modify-write); a register list (`{v0.4s,
v1.4s}`) gets one access for all its registers. Immediates, shifts, extends, conditions
and labels are never accessed.

Decisions worth knowing:
* The first operand is written and the others read, unless the table says otherwise:
  accumulators and inserts read their destination (fmla/fmls, mla/mls, the multiply-add
  long forms smlal/umlal..., sdot/udot, sadalp/uadalp, saba/uaba, ssra/usra, sli/sri,
  bif/bit/bsl, tbx, movk, bfi/bfxil/bfm, ins and `mov v.s[1], ...`, the narrowing
  "2" forms xtn2/shrn2/fcvtn2... that fill the upper half, ld1 to a lane); stores read
  everything (stxr/stlxr write their status register); cmp/cmn/tst/ccmp/fcmp write no
  register; ldp/ld2..ld4 write several, stp/st2..st4 read several.
* Writes of a w register zero-extend and scalar FP / 64-bit vector writes clear the rest
  of the vector register: all full writes. Writes of one element (ins, `mov v.s[1], w`,
  fmov v.d[1], x, ld1 to a lane) read the register too (role MERGE).
* Flags are N Z C V: adds/subs/adcs/sbcs/negs/ngcs/ands/bics, cmp/cmn/tst, ccmp/ccmn
  (which also read the flags of their condition), fcmp/fcmpe/fccmp write all four;
  b.cond, csel/csinc/csinv/csneg/cset/csetm/cinc/cinv/cneg, fcsel, ccmp read those of
  their condition (eq: Z, hs: C, mi: N, vs: V, hi: C Z, ge: N V, gt: N Z V...);
  adc/sbc/ngc read C; `mrs x, nzcv` reads and `msr nzcv, x` writes all four.
* Memory: base and index registers are read (role ADDRESS, sp included); pre/post-index
  addressing writes the base (MemAccess.writeback); a post-index register increment is
  read. Widths from the transfer registers (ldp/stp: both, ld1..ld4: the whole list,
  a lane: one element) or the size suffix (ldrb 8, ldrsh 16, ldrsw 32). prfm and the
  cache maintenance `dc`/`ic` operations only use the address (dc zva stores a line).
  LSE atomics (ldadd, swp, cas...) read-modify-write memory.
* Implicit registers: bl/blr write x30, ret reads x30 (or its operand), svc reads x8 and
  x0..x5 and writes x0 (the Linux convention); pointer authentication of the return
  address (paciasp/autiasp...) reads and writes x30 and reads sp.
* Idioms: none. `eor x, y, y` and `sub x, y, y` compute zero, but no Arm core is
  documented to break the dependency on y; constants (`movi v.2d, #0`, `mov x, #0`) read
  no register anyway.
* Moves a core may eliminate (`move`): `mov x, y` / `mov w, v` between general-purpose
  registers (the orr / add #0 aliases, sp included) and `mov v.16b, v.16b` / `.8b`
  (the vector orr alias); recent cores (Neoverse N2/V1...) eliminate some of these at
  rename. Not fmov d, d: it clears the upper half of the destination and is not listed as
  eliminated by Arm's optimisation guides.
* Branches: "conditional" (b.cond, cbz/cbnz, tbz/tbnz), "jump" (b), "call" (bl, blr),
  "indirect" (br), "return" (ret). Macro-fusion is not modelled (no role).
* Traps: svc "syscall", brk "brk", udf "udf", hlt and wfi "hlt", and "privileged" for
  hvc, smc, eret, tlbi, sys/sysl and msr/mrs of an EL1..EL3 system register.
* SVE (z/p registers) is not in the tables: such instructions are unknown (a guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from pmpredict.isa.aarch64.keys import (_A64_COND, aarch64_mnemonic, aarch64_register,
                                        fold_post_index, normalize_aarch64)
from pmpredict.isa.keys import FormKey
from pmpredict.isa.forms import form_isa
from pmpredict.isa.syntax import Immediate, Memory, Register, RegisterList, Shift, Symbol
from pmpredict.isa.base import (ADDRESS, ADDRESS_ONLY, ATOMIC, BARRIER, DATA, DIVIDER, FLAG,
                                FP_ADD, FP_MULTIPLY, GPR, INT_MULTIPLY, LOAD, MASK, MERGE,
                                NO_MEMORY, OTHER, READ_MODIFY_WRITE, SHUFFLES, STORE, VECTOR,
                                FormSemantics, InstructionSemantics, IsaSemantics, MemAccess,
                                OsacaVocabulary, RegAccess, access_pattern, expand_mnemonics,
                                placeholder_access)

N, Z, C, V = "N", "Z", "C", "V"
NZCV = frozenset((N, Z, C, V))
NONE = frozenset()
CARRY = frozenset((C,))

_CONDITION_FLAGS = {}
for _names, _flags in (("eq ne", {Z}), ("cs hs cc lo", {C}), ("mi pl", {N}), ("vs vc", {V}),
                       ("hi ls", {C, Z}), ("ge lt", {N, V}), ("gt le", {N, Z, V}), ("al nv", set())):
    for _c in _names.split():
        _CONDITION_FLAGS[_c] = frozenset(_flags)
assert set(_CONDITION_FLAGS) == _A64_COND

_FP_WIDTH = {"b": 8, "h": 16, "s": 32, "d": 64, "q": 128}
_ARRANGEMENT = re.compile(r"(\d*)([bhsdq])$")


def family(name: str) -> str | None:
    """Canonical family of an AArch64 register name (None: the zero registers, and names
    that are not registers)."""
    name = name.lower().split(".", 1)[0].split("/", 1)[0]
    if name in ("xzr", "wzr"):
        return None
    if name in ("sp", "wsp"):
        return "sp"
    if name == "lr":
        return "x30"
    if name == "fp":
        return "x29"
    m = re.fullmatch(r"([xwbhsdqvzp])(\d+)", name)
    if not m:
        return None
    prefix, number = m.group(1), int(m.group(2))
    if prefix in "xw":
        return f"x{number}" if number <= 30 else None
    if prefix == "p":
        return f"p{number}" if number <= 15 else None
    return f"v{number}" if number <= 31 else None


def _register_kind(name: str) -> str:
    fam = family(name)
    if fam is None:
        return OTHER
    if fam.startswith("v"):
        return VECTOR
    if fam.startswith("p"):
        return MASK
    return GPR


def _register_width(name: str) -> int | None:
    """Bits of a register as written: x 64, w 32, b..q, v.4s 128, v.2s 64, v.s[1] 32."""
    name = name.lower()
    base, _, arrangement = name.partition(".")
    if base in ("sp", "xzr", "lr", "fp") or base[:1] == "x" and base[1:].isdigit():
        return 64
    if base in ("wsp", "wzr") or base[:1] == "w" and base[1:].isdigit():
        return 32
    if base[:1] in _FP_WIDTH and base[1:].isdigit():
        return _FP_WIDTH[base[:1]]
    m = _ARRANGEMENT.match(arrangement)
    if m:
        count = int(m.group(1)) if m.group(1) else 1
        return count * _FP_WIDTH[m.group(2)]
    return None


# --- the table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Spec:
    access: Callable                  # operand count -> access per operand, or None
    flags_read: frozenset = NONE
    flags_written: frozenset = NONE
    condition_flags: bool = False     # reads the flags of its condition operand
    implicit_reads: tuple = ()        # (family, width)
    implicit_writes: tuple = ()
    memory: str = ""                  # "": from the access; "address": prfm, dc, ic
    memory_width: int | None = None   # bits per transfer register (ldrb: 8), None: its width
    transfer: str = "all"             # registers whose data moves: "all" (ldp, ld1 lists),
                                      # "first" (LSE atomics), "after-status" (stxr), "pair" (casp)
    branch: str | None = None
    trap: str | None = None
    move: bool = False
    beyond_model: str = ""            # InstructionSemantics.beyond_model: atomics, barriers


_TABLE: dict[str, _Spec] = {}


def _def(mnemonics: str, access: str, **kw) -> None:
    spec = _Spec(access_pattern(access), **kw)
    for m in expand_mnemonics(mnemonics):
        _TABLE[m] = spec


# integer
_def("""add sub and orr eor bic orn eon asr lsl lsr ror {asr,lsl,lsr,ror}v mul madd msub
{s,u}maddl {s,u}msubl {s,u}mulh {s,u}mull mneg {s,u}mnegl {s,u}div neg mvn movz movn
clz cls rbit rev rev16 rev32 rev64 sxt{b,h,w} uxt{b,h,w} {s,u}bfiz {s,u}bfx {s,u}bfm extr
adr adrp crc32{b,h,w,x} crc32c{b,h,w,x}""", "W,R*")
_def("adc sbc ngc", "W,R*", flags_read=CARRY)
_def("adds subs ands bics negs", "W,R*", flags_written=NZCV)
_def("adcs sbcs ngcs", "W,R*", flags_read=CARRY, flags_written=NZCV)
_def("cmp cmn tst", "R*", flags_written=NZCV)
_def("ccmp ccmn", "R*", flags_written=NZCV, condition_flags=True)
_def("csel csinc csinv csneg cset csetm cinc cinv cneg", "W,R*", condition_flags=True)
_def("movk bfi bfxil bfm bfc", "RW,R*")
_def("mov", "W,R*")                   # the element-insert alias is refined below (_merge)
# floating point, scalar and vector
_def("""fadd fsub fmul fdiv fnmul fabs fneg fsqrt fmax fmin fmaxnm fminnm fmadd fmsub fnmadd
fnmsub fcvt fcvt{a,m,n,p,z}{s,u} fcvtxn fcvtl fcvtl2 fcvtn scvtf ucvtf frint{a,i,m,n,p,x,z}
frint{32,64}{x,z} fmov fabd faddp fmaxp fminp fmaxnmp fminnmp fmaxv fminv fmaxnmv fminnmv
frecpe frecps frsqrte frsqrts frecpx fcm{eq,ge,gt,le,lt} fac{ge,gt} fmulx fjcvtzs bfcvt bfcvtn""",
     "W,R*")
_def("fcmp fcmpe", "R*", flags_written=NZCV)
_def("fccmp fccmpe", "R*", flags_written=NZCV, condition_flags=True)
_def("fcsel", "W,R*", condition_flags=True)
_def("fmla fmls fcmla fmlal fmlal2 fmlsl fmlsl2 bfdot bfmmla bfmlalb bfmlalt", "RW,R*")
# Advanced SIMD integer
_def("""abs addp addv {s,u}addlv {s,u}{max,min}v cnt not dup movi mvni
cm{eq,ge,gt,hi,hs,le,lt,tst} shl {s,u}shr {s,u}rshr sqshl uqshl sqshlu {s,u}shl {s,u}rshl
sqrshl uqrshl shrn rshrn {sq,uq}shrn {sq,uq}rshrn sqshrun sqrshrun {s,u}shll{,2} {s,u}xtl{,2}
{s,u}addl{,2} {s,u}subl{,2} {s,u}addw{,2} {s,u}subw{,2} {s,u}mull2 pmull{,2} sqdmull{,2}
{,r}addhn {,r}subhn {s,u}abd {s,u}abdl{,2} {s,u}{max,min} {s,u}{max,min}p {s,u}hadd
{s,u}rhadd {s,u}hsub {sq,uq}add {sq,uq}sub suqadd usqadd sqdmulh sqrdmulh xtn {sq,uq}xtn
sqxtun zip1 zip2 uzp1 uzp2 trn1 trn2 ext tbl urecpe ursqrte {s,u}addlp sqabs sqneg umov smov
shll shll2""", "W,R*")
_def("""mla mls {s,u}dot usdot sudot {s,u}adalp {s,u}aba {s,u}abal{,2} {s,u}mlal{,2} {s,u}mlsl{,2}
sqdmlal{,2} sqdmlsl{,2} sqrdml{ah,sh} {s,u}sra {s,u}rsra sli sri bif bit bsl tbx ins
{s,u,us}mmla xtn2 {sq,uq}xtn2 sqxtun2 fcvtn2 fcvtxn2 shrn2 rshrn2 {sq,uq}shrn2 {sq,uq}rshrn2
sqshrun2 sqrshrun2 {r,}addhn2 {r,}subhn2 aese aesd sha1{c,h,m,p,su0,su1} sha256{h,h2,su0,su1}""",
     "RW,R*")
_def("aesmc aesimc sha1h", "W,R")
# loads and stores (the memory operand's access is the data access)
_def("""ldr ldur ldar ldapr ldapur ldaxr ldxr ldtr ldlar ld{1,2,3,4} ld{1,2,3,4}r""", "W,R")
_def("ldrb ldurb ldarb ldaprb ldaxrb ldxrb ldtrb ldrsb ldursb ldtrsb", "W,R", memory_width=8)
_def("ldrh ldurh ldarh ldaprh ldaxrh ldxrh ldtrh ldrsh ldursh ldtrsh", "W,R", memory_width=16)
_def("ldrsw ldursw ldtrsw ldapursw", "W,R", memory_width=32)
_def("ldp ldnp ldaxp ldxp", "W,W,R")
_def("ldpsw", "W,W,R", memory_width=32)
_def("str stur stlr stlur sttr stllr st{1,2,3,4}", "R,W")
_def("strb sturb stlrb stlurb sttrb stllrb", "R,W", memory_width=8)
_def("strh sturh stlrh stlurh sttrh stllrh", "R,W", memory_width=16)
_def("stp stnp", "R,R,W")
_def("stxr stlxr", "W,R,W", transfer="after-status")
_def("stxrb stlxrb", "W,R,W", memory_width=8, transfer="after-status")
_def("stxrh stlxrh", "W,R,W", memory_width=16, transfer="after-status")
_def("stxp stlxp", "W,R,R,W", transfer="after-status")
for _suffix, _width in (("", None), ("b", 8), ("h", 16)):
    _ops = ("add", "clr", "eor", "set", "smax", "smin", "umax", "umin")
    _def(" ".join(f"ld{o}{o2}{_suffix}" for o in _ops for o2 in ("", "a", "l", "al")), "R,W,RW",
         memory_width=_width, transfer="first", beyond_model=ATOMIC)
    _def(" ".join(f"st{o}{o2}{_suffix}" for o in _ops for o2 in ("", "l")), "R,RW",
         memory_width=_width, transfer="first", beyond_model=ATOMIC)
    _def(" ".join(f"swp{o2}{_suffix}" for o2 in ("", "a", "l", "al")), "R,W,RW", memory_width=_width,
         transfer="first", beyond_model=ATOMIC)
    _def(" ".join(f"cas{o2}{_suffix}" for o2 in ("", "a", "l", "al")), "RW,R,RW", memory_width=_width,
         transfer="first", beyond_model=ATOMIC)
_def("casp caspa caspl caspal", "RW,RW,R,R,RW", transfer="pair", beyond_model=ATOMIC)
_def("prfm prfum", "-,R", memory="address")
# control flow
_def("b", "-", branch="jump")
_def("b.{" + ",".join(sorted(_A64_COND)) + "}", "-", branch="conditional", condition_flags=True)
_def("cbz cbnz", "R,-", branch="conditional")
_def("tbz tbnz", "R,-,-", branch="conditional")
_def("bl", "-", branch="call", implicit_writes=(("x30", 64),))
_def("blr", "R", branch="call", implicit_writes=(("x30", 64),))
_def("br", "R", branch="indirect")
_def("ret", "|R", branch="return")
# system
_def("nop yield hint bti csdb esb sev sevl clrex", "-*")
_def("isb dsb dmb sb", "-*", beyond_model=BARRIER)
_def("paciasp pacibsp autiasp autibsp paciaz pacibz autiaz autibz", "",
     implicit_reads=(("x30", 64), ("sp", 64)), implicit_writes=(("x30", 64),))
_def("xpaclri", "", implicit_reads=(("x30", 64),), implicit_writes=(("x30", 64),))
_def("mrs", "W,-")
_def("msr", "-,R")
_def("dc ic", "-,R", memory="address")
_def("svc", "-", trap="syscall",
     implicit_reads=tuple((f"x{i}", 64) for i in (8, 0, 1, 2, 3, 4, 5)),
     implicit_writes=(("x0", 64),))
_def("brk", "-", trap="brk")
_def("udf", "-", trap="udf")
_def("hlt wfi", "-*", trap="hlt")
_def("wfe", "")
_def("hvc smc eret tlbi sys sysl at", "-*", trap="privileged")

# moves a core may eliminate (between registers of one kind: see _Builder._move)
for _m in ("mov", "orr"):
    _TABLE[_m] = _Spec(**{**_TABLE[_m].__dict__, "move": True})

_LISTS = re.compile(r"(ld|st)[1-4]r?$")
_SYSREG_PRIVILEGED = re.compile(r".*_el[123]$")


# --- operand views ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Op:
    kind: str                         # "reg", "elem" (v.s[1]), "list", "mem", "imm", "shift", "sym", "other"
    cls: str = ""                     # G F V (vector with arrangement) Z P
    width: int | None = None
    name: str | None = None
    registers: tuple[str, ...] = ()   # a register list
    lane: int | None = None
    element: int | None = None        # element bits of a vector list (ld1r: one per register)
    memory: Memory | None = None
    increment: str | int | None = None   # post-index register (`[x0], x2`) or constant (`, 16`)
    value: int | None = None          # an immediate's value, when it is a known integer


def _instruction_ops(operands, mnemonic: str) -> tuple[_Op, ...]:
    ops, increments = fold_post_index(operands)
    out = []
    literal_load = mnemonic.startswith(("ldr", "prfm"))
    for op, inc in zip(ops, increments):
        if literal_load and isinstance(op, Symbol) and op is ops[-1]:
            op = Memory(symbols=(op.name,), has_disp=True)   # `ldr x0, .LC0`: pc-relative
        if isinstance(op, Register):
            key = aarch64_register(op)
            if key[0] == "velem":
                out.append(_Op("elem", "V", _FP_WIDTH.get(key[1]), op.name, lane=op.lane))
            elif key[0] == "vreg":
                out.append(_Op("reg", "V", _register_width(op.name), op.name))
            else:
                width = _register_width(op.name) if key[1] in ("G", "F") else None
                out.append(_Op("reg", key[1], width, op.name))
        elif isinstance(op, RegisterList):
            width = sum(_register_width(r) or 0 for r in op.regs)
            m = _ARRANGEMENT.match(op.regs[0].partition(".")[2])
            element = _FP_WIDTH[m.group(2)] if m else None
            if op.lane is not None:            # one element of each register
                width = len(op.regs) * element if element else None
            out.append(_Op("list", "V", width or None, registers=op.regs, lane=op.lane,
                           element=element))
        elif isinstance(op, Memory):
            out.append(_Op("mem", memory=op, increment=inc))
        elif isinstance(op, Immediate):
            if op.text.startswith("="):        # `ldr x0, =value`: a literal-pool load
                out.append(_Op("mem", memory=Memory(symbols=op.symbols, has_disp=True)))
            else:
                value = op.value if isinstance(op.value, int) and not op.symbols else None
                out.append(_Op("imm", value=value))
        elif isinstance(op, Shift):
            out.append(_Op("shift"))
        elif isinstance(op, Symbol):
            out.append(_Op("sym", name=op.name.lower()))
        else:
            out.append(_Op("other"))
    return tuple(out)


def _form_ops(template) -> tuple[_Op, ...]:
    out = []
    for op in template.operands:
        if op.kind == "reg":
            ph = op.placeholders[0]
            if ph.width is not None:
                out.append(_Op("reg", "G" if ph.reg_class == "G" or ph.kind == "DIV" else "F",
                               ph.width))
                continue
            arrangement = (op.arrangement or "").lstrip(".")
            if op.text.lstrip().startswith("{"):
                out.append(_Op("list", "V"))
            elif "[" in arrangement:
                elem = arrangement.split("[")[0]
                out.append(_Op("elem", "V", _FP_WIDTH.get(elem[-1:])))
            else:
                m = _ARRANGEMENT.match(arrangement)
                width = (int(m.group(1) or 1) * _FP_WIDTH[m.group(2)]) if m else None
                out.append(_Op("reg", "V", width))
        elif op.kind == "mem":
            out.append(_Op("mem"))
        elif op.kind == "imm":
            out.append(_Op("imm"))
        else:
            word = op.text.strip().lower()
            out.append(_Op("sym", name=word) if word in _CONDITION_FLAGS else _Op("shift"))
    return tuple(out)


# --- resolution ------------------------------------------------------------------------------

@dataclass
class _Resolved:
    mnemonic: str
    spec: _Spec | None
    access: tuple[str, ...]
    known: bool = True
    notes: list = field(default_factory=list)


def _resolve(mnemonic: str, ops) -> _Resolved:
    mnemonic = aarch64_mnemonic(mnemonic)
    spec = _TABLE.get(mnemonic)
    access = spec.access(len(ops)) if spec is not None else None
    if spec is None or access is None:
        guess = tuple("W" if i == 0 else "R" for i in range(len(ops)))
        why = "not in the AArch64 tables" if spec is None else \
            f"{len(ops)} operands not in the AArch64 tables"
        res = _Resolved(mnemonic, None, _mask_access(guess, ops), known=False)
        res.notes.append(f"`{mnemonic}` {why}: first operand assumed written, the others read")
        return res
    access = list(access)
    if ops and ops[0].kind == "elem" and access[0] == "W":
        access[0] = "RW"                      # one element written: the others stay (merge)
    if _LISTS.match(mnemonic) and mnemonic.startswith("ld") and ops and ops[0].kind == "list" \
            and ops[0].lane is not None:
        access[0] = "RW"                      # ld1 {v0.s}[1]: a lane load merges
    return _Resolved(mnemonic, spec, _mask_access(tuple(access), ops))


def _mask_access(access, ops) -> tuple[str, ...]:
    return tuple("" if o.kind in ("imm", "shift", "sym", "other") else a
                 for o, a in zip(ops, access))


def _flags(res: _Resolved, ops) -> tuple[frozenset, frozenset]:
    spec = res.spec
    if spec is None:
        return NONE, NONE
    read, written = spec.flags_read, spec.flags_written
    if spec.condition_flags:
        cond = res.mnemonic[2:] if res.mnemonic.startswith("b.") else next(
            (o.name for o in reversed(ops) if o.kind == "sym" and o.name in _CONDITION_FLAGS), None)
        read = read | _CONDITION_FLAGS.get(cond, NONE)
    sysreg = next((o.name for o in ops if o.kind == "sym"), None)
    if sysreg == "nzcv" and res.mnemonic == "mrs":
        read = read | NZCV
    if sysreg == "nzcv" and res.mnemonic == "msr":
        written = written | NZCV
    return read, written


def _trap(res: _Resolved, ops) -> str | None:
    if res.spec is not None and res.spec.trap:
        return res.spec.trap
    if res.mnemonic in ("mrs", "msr") and any(o.kind == "sym" and _SYSREG_PRIVILEGED.match(o.name)
                                              for o in ops):
        return "privileged"
    return None


def _branch(res: _Resolved) -> str | None:
    return res.spec.branch if res.spec is not None else None


def _memory_kind(res: _Resolved, ops) -> str:
    mem = [a for o, a in zip(ops, res.access) if o.kind == "mem"]
    if not mem:
        return NO_MEMORY
    if res.spec is not None and res.spec.memory == "address":
        return STORE if res.mnemonic == "dc" and _is_zva(ops) else ADDRESS_ONLY
    a = mem[0]
    return READ_MODIFY_WRITE if a == "RW" else STORE if a == "W" else LOAD if a == "R" else NO_MEMORY


def _is_zva(ops) -> bool:
    return any(o.kind == "sym" and o.name == "zva" for o in ops)


# --- the ISA object ----------------------------------------------------------------------------

class AArch64Semantics(IsaSemantics):
    """AArch64 (GNU as syntax). See the module docstring for the decisions."""

    name = "aarch64"
    syntaxes = ("aarch64",)
    syntax_titles = {"aarch64": "AArch64"}
    grammar_files = {"aarch64": "aarch64.lark"}
    default_model = "a72"
    marker_bytes = (213, 3, 32, 31)
    marker_registers = ("x1", "w1")
    marker_how = "byte-markers"
    marker_description = "AArch64 byte markers"
    example_base_register = "x0"
    example_syntax = "aarch64"
    operation_kinds = (
        (None, r"(ld|st)(r|ur|p|np|\d)\w*"),
        (DIVIDER, r"([su]div|fdiv|fsqrt)"),
        (FP_MULTIPLY, r"f(n?mulx?|n?madd|n?msub|ml[as])"),
        (INT_MULTIPLY, r"(mul|madd|msub|mneg|[su]mull2?|[su]m(add|sub|neg)l|[su]mulh|ml[as]"
                       r"|[su]ml[as]l2?|pmull?2?|sq(r?d)?mul\w*)"),
        (FP_ADD, r"f(add|sub|abd|max|min)\w*"),
        (SHUFFLES, r"((zip|uzp|trn)[12]|ext|tbl|tbx|dup|ins|rev(16|32|64)|xtn2?)"))
    llvm_mc_args = ("-triple=aarch64", "-mattr=+neon,+fullfp16,+crc,+aes,+sha2", "-show-inst")
    llvm_mc_prologue = ()
    memory_operands_by_mode = True
    osaca = OsacaVocabulary(
        register_style="prefix", memory_base="x", any_gpr=None, indexed_writeback=True,
        any_immediate=False, att_order=False, load_latency_keys=("w", "x", "b", "h", "s", "d", "q", "v"),
        pure_load=r"(ldr|ldur)\w*", printed_aliases=True, words_are_identifiers=True)

    _CLUES = re.compile(r"(?:\b[xw](?:[12]?\d|30)\b|\bv\d+\.\d*[bhsd]\b|\[\s*(?:x\d+|sp)\b|#-?\d"
                        r"|\b(?:ldr|str|ldp|stp|adrp|cbn?z|tbn?z|b\.\w+)\b)")

    def register_family(self, name: str) -> str | None:
        return family(name)

    def register_pool(self, reg_class: str, width: int | None) -> list[str]:
        """Allocatable registers: G 64/32 (x0..x28: x29 fp, x30 lr, sp reserved), F by width
        (None, the VEC placeholder: the v registers)."""
        if reg_class == "G":
            prefix = {64: "x", 32: "w"}.get(width)
            if prefix:
                return [f"{prefix}{i}" for i in range(29)]
        if reg_class == "F":
            prefix = {None: "v", 128: "q", 64: "d", 32: "s", 16: "h", 8: "b"}.get(width)
            if prefix:
                return [f"{prefix}{i}" for i in range(32)]
        raise ValueError(f"no AArch64 register pool for class {reg_class!r} width {width}")

    def owns_form(self, name: str) -> bool:
        return form_isa(name) == self.name

    def form_key(self, insn, syntax: str) -> FormKey:
        return normalize_aarch64(insn)

    def branch_of(self, mnemonic: str) -> str | None:
        spec = _TABLE.get(aarch64_mnemonic(mnemonic))
        return spec.branch if spec is not None else None

    def syntax_of_directive(self, directive: str, argument: str) -> str | None:
        if directive == "arch" and argument.startswith(("armv8", "armv9")):
            return "aarch64"
        return None

    def syntax_scores(self, sample: str) -> dict[str, int]:
        return {"aarch64": len(self._CLUES.findall(sample))}

    def instruction(self, insn, syntax: str = "aarch64") -> InstructionSemantics:
        ops = _instruction_ops(insn.operands, insn.mnemonic)
        res = _resolve(insn.mnemonic, ops)
        return _Builder(res, ops).build()

    def _form(self, template) -> FormSemantics:
        ops = _form_ops(template)
        res = _resolve(template.mnemonic, ops)
        if not res.known:                     # the form string's own R / W / RW is a better guess
            res.access = placeholder_access(template, res.access)
        flags_read, flags_written = _flags(res, ops)
        spec = res.spec
        reads = frozenset(r[0] for r in spec.implicit_reads) if spec else frozenset()
        writes = frozenset(w[0] for w in spec.implicit_writes) if spec else frozenset()
        if res.mnemonic == "ret" and not ops:
            reads = reads | {"x30"}
        access = tuple("" if spec is not None and spec.memory == "address" and o.kind == "mem"
                       else a for o, a in zip(ops, res.access))
        return FormSemantics(
            mnemonic=res.mnemonic, operand_access=access, memory=_memory_kind(res, ops),
            implicit_reads=reads, implicit_writes=writes, flags_read=flags_read,
            flags_written=flags_written, branch=_branch(res), trap=_trap(res, ops),
            known=res.known, barrier=bool(spec and spec.beyond_model == BARRIER))


class _Builder:
    def __init__(self, res: _Resolved, ops):
        self.res, self.ops = res, ops
        self.reads: list[RegAccess] = []
        self.writes: list[RegAccess] = []
        self.memory: list[MemAccess] = []
        self.notes = list(res.notes)
        self.offsets: list[tuple[str, int]] = []

    def read(self, name, operand, role=DATA, width=None):
        self._access(self.reads, name, operand, role, width)

    def write(self, name, operand, width=None):
        self._access(self.writes, name, operand, DATA, width)

    @staticmethod
    def _access(accesses: list, name, operand, role, width) -> None:
        fam = family(name)
        if fam is None:
            return
        a = RegAccess(fam, _register_kind(name), operand, role, width)
        if a not in accesses:
            accesses.append(a)

    def register(self, i, name, access, width, merge=False):
        if "R" in access:
            self.read(name, i, MERGE if merge and "W" in access else DATA, width)
        if "W" in access:
            self.write(name, i, width)

    def memory_operand(self, i, op: _Op, access: str):
        m = op.memory
        register_increment = op.increment if isinstance(op.increment, str) else None
        for reg in (m.base, m.index, register_increment):
            if reg:
                self.read(reg, i, ADDRESS, _register_width(reg))
        if m.writeback and m.base:
            self.write(m.base, i, 64)
            step = op.increment if m.writeback == "post" else m.disp if not m.symbols else None
            if isinstance(step, int) and family(m.base):
                self.offsets.append((family(m.base), step))
        scale = 1 << m.index_shift.amount if m.index_shift is not None and \
            m.index_shift.amount else 1
        kind = _memory_kind(self.res, self.ops)
        self.memory.append(MemAccess(
            i, base=family(m.base) if m.base else None, index=family(m.index) if m.index else None,
            scale=scale, disp=m.disp, symbols=m.symbols, width=self._transfer_width(),
            load=kind in (LOAD, READ_MODIFY_WRITE), store=kind in (STORE, READ_MODIFY_WRITE),
            writeback=m.writeback is not None))

    def cache_operation(self, i, op: _Op):
        """dc / ic: the register is an address; `dc zva` zeroes the (64-byte) line there."""
        self.read(op.name, i, ADDRESS, 64)
        zva = _is_zva(self.ops)
        self.memory.append(MemAccess(i, base=family(op.name), width=512 if zva else None,
                                     store=zva))

    def _transfer_width(self) -> int | None:
        """Bits moved: the data registers (a pair, a list, one lane), or the size suffix."""
        spec = self.res.spec
        data = [o for o, a in zip(self.ops, self.res.access) if o.kind in ("reg", "list", "elem")
                and a]
        transfer = spec.transfer if spec is not None else "all"
        if transfer == "after-status":
            data = data[1:]
        elif transfer == "first":
            data = data[:1]
        elif transfer == "pair":
            data = data[:2]
        if spec is not None and spec.memory_width:
            return spec.memory_width * max(1, len(data))
        if _LISTS.match(self.res.mnemonic) and self.res.mnemonic.endswith("r") and data:
            lst = data[0]                       # ld1r: one element per register
            return len(lst.registers) * lst.element if lst.element else None
        widths = [o.width for o in data]
        if not widths or None in widths:
            return None
        return sum(widths)

    def build(self) -> InstructionSemantics:
        res, ops, spec = self.res, self.ops, self.res.spec
        for i, (op, access) in enumerate(zip(ops, res.access)):
            if op.kind == "reg" and res.mnemonic in ("dc", "ic"):
                self.cache_operation(i, op)
            elif op.kind == "reg":
                self.register(i, op.name, access, op.width)
            elif op.kind == "elem":
                self.register(i, op.name, access, op.width, merge=True)
            elif op.kind == "list":
                for r in op.registers:
                    self.register(i, r, access, _register_width(r), merge=op.lane is not None)
            elif op.kind == "mem" and (access or spec is not None and spec.memory == "address"):
                self.memory_operand(i, op, access)
        if spec is not None:
            for name, width in spec.implicit_reads:
                self.read(name, None, DATA, width)
            for name, width in spec.implicit_writes:
                self.write(name, None, width)
        if res.mnemonic == "ret" and not ops:
            self.read("x30", None, DATA, 64)
        flags_read, flags_written = _flags(res, ops)
        reads = tuple(self.reads) + tuple(RegAccess(f, FLAG) for f in "NZCV" if f in flags_read)
        writes = tuple(self.writes) + tuple(RegAccess(f, FLAG) for f in "NZCV" if f in flags_written)
        return InstructionSemantics(
            mnemonic=res.mnemonic, reads=reads, writes=writes, memory=tuple(self.memory),
            move=self._move(), branch=_branch(res), trap=_trap(res, ops), known=res.known,
            notes=tuple(dict.fromkeys(self.notes)), offsets=tuple(self.offsets) + self._bump(),
            copies=self._copies(),
            beyond_model=spec.beyond_model if spec is not None else "")

    def _bump(self) -> tuple[tuple[str, int], ...]:
        """add / sub of an immediate to a 64-bit register into itself: a pointer bump."""
        res, ops = self.res, self.ops
        if res.mnemonic not in ("add", "sub") or len(ops) != 3 or ops[2].kind != "imm":
            return ()
        a, b, c = ops
        if a.kind != "reg" or b.kind != "reg" or a.cls != "G" or a.width != 64 \
                or family(a.name or "") != family(b.name or "") or not isinstance(c.value, int):
            return ()
        return ((family(a.name), c.value if res.mnemonic == "add" else -c.value),)

    def _copies(self) -> tuple[tuple[str, str, int], ...]:
        """A 64-bit register set to another one plus a constant: mov x, y and add / sub x,
        y, #imm (the same register: _bump)."""
        res, ops = self.res, self.ops
        if not ops or ops[0].kind != "reg" or ops[0].cls != "G" or ops[0].width != 64:
            return ()
        a, b = ops[0], ops[1] if len(ops) > 1 else None
        if b is None or b.kind != "reg" or b.cls != "G" or b.width != 64:
            return ()
        dest, source = family(a.name or ""), family(b.name or "")
        if not dest or not source or dest == source:
            return ()
        if res.mnemonic == "mov" and len(ops) == 2:
            return ((dest, source, 0),)
        if res.mnemonic in ("add", "sub") and len(ops) == 3 and ops[2].kind == "imm" \
                and isinstance(ops[2].value, int):
            return ((dest, source, ops[2].value if res.mnemonic == "add" else -ops[2].value),)
        return ()

    def _move(self) -> bool:
        res, ops = self.res, self.ops
        if res.spec is None or not res.spec.move or len(ops) != (2 if res.mnemonic == "mov" else 3):
            return False
        if res.mnemonic == "orr" and (ops[1].name != ops[2].name):
            return False                        # orr v0.16b, v1.16b, v1.16b is the mov alias
        a, b = ops[0], ops[1]
        if a.kind != "reg" or b.kind != "reg" or family(b.name or "") is None:
            return False
        if a.cls == "G" and b.cls == "G":
            return a.width == b.width
        return a.cls == "V" and b.cls == "V" and a.name.split(".")[1:] == b.name.split(".")[1:] \
            and a.name.split(".")[1:] in (["16b"], ["8b"])


SEMANTICS = AArch64Semantics()
