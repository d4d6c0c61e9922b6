"""x86 instructions as parsed -> form keys: register names and widths, AT&T spellings and
aliases, vector memory widths, branches, and the operands as OSACA's parser sees them."""

from __future__ import annotations

import re
from functools import lru_cache

from pmpredict.isa.keys import FormKey, _unique
from pmpredict.isa.syntax import (Immediate, Indirect, Instruction, Memory, Register, Rounding,
                                  Symbol)


# --- registers ---------------------------------------------------------------------------

# General-purpose registers in allocation pools (pmpredict.isa.examples.example_instance, the
# measurement harness): rsp and rbp are left out (stack); index i of every width is one family.
GPR_POOLS = {
    64: ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
         "r15"),
    32: ("eax", "ebx", "ecx", "edx", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d",
         "r14d", "r15d"),
    16: ("ax", "bx", "cx", "dx", "si", "di", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w",
         "r15w"),
    8: ("al", "bl", "cl", "dl", "sil", "dil", "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b",
        "r15b"),
}
STACK_REGISTERS = {64: ("rbp", "rsp"), 32: ("ebp", "esp"), 16: ("bp", "sp"), 8: ("bpl", "spl")}
# the 16 families, as listings order them: rax rbx rcx rdx rsi rdi rbp rsp r8 .. r15
GPR_FAMILIES = GPR_POOLS[64][:6] + STACK_REGISTERS[64] + GPR_POOLS[64][6:]

# every general-purpose register name -> (its 64-bit family, its width): the one register table
# of x86 (form keys read the width, semantics.family the family)
GPR_NAMES: dict[str, tuple[str, int]] = {}
for _pools in (GPR_POOLS, STACK_REGISTERS):
    for _w, _names in _pools.items():
        for _i, _n in enumerate(_names):
            GPR_NAMES[_n] = (_pools[64][_i], _w)
for _n in "abcd":
    GPR_NAMES[_n + "h"] = ("r" + _n + "x", 8)

# the letter of a vector register name (xmm, ymm, zmm) -> its width in bits
VECTOR_WIDTHS = {"x": 128, "y": 256, "z": 512}
_X86_VECTOR = re.compile(r"([xyz])mm\d+")
_X86_VECTOR_IN_TEXT = re.compile(r"\b([xyz])mm\d+\b")
_X86_MASK = re.compile(r"k[0-7]")
_X86_MMX = re.compile(r"mm[0-7]")


@lru_cache(maxsize=None)                # a few dozen names, asked for every operand
def x86_register(name: str) -> tuple:
    if name in GPR_NAMES:
        return ("reg", "G", GPR_NAMES[name][1], name)   # the name: forms with a fixed register (`cl`)
    m = _X86_VECTOR.fullmatch(name)
    if m:
        return ("reg", "V", VECTOR_WIDTHS[m.group(1)])
    if _X86_MASK.fullmatch(name):
        return ("reg", "K", 64)
    if _X86_MMX.fullmatch(name):
        return ("reg", "M", 64)
    if name.startswith("st"):
        return ("reg", "X", 80)
    if name in ("cs", "ds", "es", "fs", "gs", "ss"):
        return ("reg", "S", 16)
    if name in ("rip", "eip"):
        return ("reg", "IP", 64)
    return ("reg", "?", None)


def widest_x86_vector(text: str) -> int:
    """Width in bits of the widest vector register (xmm, ymm, zmm) `text` names; 0 if none."""
    return max((VECTOR_WIDTHS[m.group(1)] for m in _X86_VECTOR_IN_TEXT.finditer(text.lower())),
               default=0)


# --- x86 mnemonics -----------------------------------------------------------------------

# Base mnemonics that take an AT&T size suffix (b/w/l/q).
_SUFFIXED = set("""add adc sub sbb and or xor cmp test mov lea inc dec neg not shl shr sar sal rol ror
rcl rcr shld shrd imul mul idiv div bt bts btr btc bsf bsr bswap lzcnt tzcnt popcnt xchg cmpxchg
xadd push pop call ret jmp leave nop movabs andn blsr blsi blsmsk bzhi bextr pdep pext sarx shlx
shrx rorx crc32 adcx adox movbe movnti enter iret lret lgdt sgdt
cvtsi2sd cvtsi2ss vcvtsi2sd vcvtsi2ss cvttsd2si cvttss2si cvtsd2si cvtss2si vcvttsd2si vcvttss2si
vcvtsd2si vcvtss2si vcvtusi2sd vcvtusi2ss""".split())
_CONDITIONS = set("o no b c nae ae nb nc e z ne nz be na a nbe s ns p pe np po l nge ge nl le ng g nle".split())
_SUFFIX_WIDTH = {"b": 8, "w": 16, "l": 32, "q": 64}
_X87 = set("""fld fst fstp fild fist fistp fisttp fadd fsub fsubr fmul fdiv fdivr fcom fcomp fiadd
fisub fisubr fimul fidiv fidivr ficom ficomp""".split())
_X87_FLOAT = {"s": 32, "l": 64, "t": 80}
_X87_INT = {"s": 16, "w": 16, "l": 32, "q": 64}
# AT&T-only spellings -> Intel
_ATT_ALIASES = {"cltq": "cdqe", "cwtl": "cwde", "cbtw": "cbw", "cqto": "cqo", "cltd": "cdq",
                "cwtd": "cwd", "movslq": "movsxd", "ljmp": "jmp", "lcall": "call"}
# both syntaxes: one spelling per opcode
_X86_ALIASES = {"sal": "shl", "movabs": "mov"}
_ATT_EXTEND = re.compile(r"mov([sz])([bwl])([wlq])$")
_ATT_NARROWING = re.compile(r"(v?cvtt?(?:pd2(?:ps|dq|udq)|u?qq2ps))([xy])$")


def att_mnemonic(m: str, operands) -> tuple[str, int | None, int | None]:
    """AT&T mnemonic -> (Intel mnemonic, operand size from the suffix, source size for movzx/movsx)."""
    if m == "movq" and any(isinstance(o, Register) and x86_register(o.name)[1] in ("V", "M")
                           for o in operands):
        return "movq", None, None
    return _att_spelling(m)


@lru_cache(maxsize=None)                # a function of the mnemonic alone (but for movq, above)
def _att_spelling(m: str) -> tuple[str, int | None, int | None]:
    if m in _ATT_ALIASES:
        return _ATT_ALIASES[m], None, (32 if m == "movslq" else None)
    narrowing = _ATT_NARROWING.match(m)
    if narrowing:                           # vcvtpd2psy: the memory source is 256 bits wide
        return narrowing.group(1), VECTOR_WIDTHS[narrowing.group(2)], None
    ext = _ATT_EXTEND.match(m)
    if ext:
        kind, src, dst = ext.groups()
        if kind == "s" and src == "l":
            return "movsxd", _SUFFIX_WIDTH[dst], 32
        return ("movsx" if kind == "s" else "movzx"), _SUFFIX_WIDTH[dst], _SUFFIX_WIDTH[src]
    if m in _SUFFIXED:
        return m, None, None
    if m.startswith("cmov"):
        cond = m[4:]
        if cond in _CONDITIONS:
            return m, None, None
        if cond[:-1] in _CONDITIONS and cond[-1:] in _SUFFIX_WIDTH:
            return m[:-1], _SUFFIX_WIDTH[cond[-1]], None
        return m, None, None
    if m[-1:] in _SUFFIX_WIDTH and m[:-1] in _SUFFIXED:
        return m[:-1], _SUFFIX_WIDTH[m[-1]], None
    if m[:-1] in _X87 and m[-1:] in "sltqw":
        # x87 memory size letters: float s/l/t = 32/64/80 bits, integer s/l/q = 16/32/64
        table = _X87_INT if m.startswith("fi") else _X87_FLOAT
        if m[-1] in table:
            return m[:-1], table[m[-1]], None
    return m, None, None


# Branches by their spelling alone, known to the tables or not (the harness must refuse every
# control transfer, misspelt or not): jumps (jcc, jmp, jrcxz, loop*) can be a loop's back edge;
# call, ret and iret leave the loop. A misspelt jump (`jmp_1`) is a branch but no jump.
_X86_JUMPS = re.compile(r"j[a-z]+|loop\w*")
_X86_BRANCHES = re.compile(rf"{_X86_JUMPS.pattern}|jmp\w*|call|ret|iret\w*")


def is_x86_jump(m: str) -> bool:
    """A jump, conditional or not (an Intel mnemonic): what can close a loop."""
    return bool(_X86_JUMPS.fullmatch(m))


def is_x86_branch(m: str) -> bool:
    """A jump, call or return (an Intel mnemonic): any control transfer."""
    return bool(_X86_BRANCHES.fullmatch(m))


# bases whose ModRM encoding without a displacement means something else (rip-relative or
# no base): the assembler writes a displacement of 0
_DISP_BASES = frozenset(("rbp", "ebp", "r13", "r13d"))


def _x86_operand(op, mnemonic: str, mem_width: int | None):
    if isinstance(op, Register):
        return x86_register(op.name)
    if isinstance(op, Immediate):
        return ("imm", op.value if not op.symbols else None)
    if isinstance(op, Memory):
        if mnemonic == "lea":
            disp = op.disp if not op.symbols else None
            # rip counts as a base: `lea r, [rip+sym]` is a base+disp32 address
            disp = disp if (op.has_disp or op.base in ("rip", "eip")) else 0
            # an rbp or r13 base has no encoding without a displacement: `lea r, [rbp + r10]`
            # is `lea r, [rbp + r10 + 0]`, a three-part address (Zen 4: two a cycle, as
            # `lea r, [rcx + r11 - 16]`, where `[rbx + r10]` runs four)
            zero8 = disp == 0 and op.base in _DISP_BASES
            return ("addr", op.base is not None, op.index is not None, disp, zero8)
        width = op.width if op.width is not None else mem_width
        if op.broadcast:
            width = None
        return ("mem", width)
    if isinstance(op, Symbol):
        return ("sym",) if is_x86_branch(mnemonic) else ("mem", mem_width)
    if isinstance(op, Indirect):                       # AT&T `*%rax` / `*(%rax)`: Intel `rax` / `[rax]`
        inner = op.target
        if isinstance(inner, Register):
            return x86_register(inner.name)
        return ("mem", 64)
    if isinstance(op, Rounding):
        return ("round",)
    return ("?",)


_PMOV = re.compile(r"v?pmov[sz]x([bwd])([wdq])$")
_DOWN_CONVERT = re.compile(r"vpmov(?:s|us)?([qdw])([dwb])$")
_GATHER = re.compile(r"vp?gather[dq](ps|pd|d|q)$")
_VECTOR_SHIFT = re.compile(r"v?ps(?:ll|rl|ra)[wdq]")
_INSERT_EXTRACT = re.compile(r"v?p(?:insr|extr)([bwdq])")
_ELEM = {"b": 8, "w": 16, "d": 32, "q": 64}
_PACKED_ELEM = {"ps": 32, "pd": 64, "dq": 32, "udq": 32, "qq": 64, "uqq": 64, "ph": 16}
_BROADCAST = {"vbroadcastss": 32, "vbroadcastsd": 64, "vpbroadcastb": 8, "vpbroadcastw": 16,
              "vpbroadcastd": 32, "vpbroadcastq": 64, "vbroadcastf128": 128, "vbroadcasti128": 128,
              "vinsertf128": 128, "vinserti128": 128, "vextractf128": 128, "vextracti128": 128,
              "movq": 64, "vmovq": 64, "movd": 32, "vmovd": 32, "movhps": 64, "movlps": 64,
              "movhpd": 64, "movlpd": 64, "vmovhps": 64, "vmovlps": 64, "vmovhpd": 64, "vmovlpd": 64,
              "vmovddup": None, "movddup": 64}


@lru_cache(maxsize=None)                # a function of the mnemonic and two small numbers
def vector_memory_width(m: str, reg_width: int, has_immediate: bool = False) -> int | None:
    """Memory width of an AT&T vector instruction (Intel states it with `XMMWORD PTR` etc.).

    The register width for the ordinary full-width operation; the exceptions that
    compilers emit (scalar, broadcast, widening and narrowing conversions, down-converting
    stores, gathers, shift-count, 128-bit lane moves); None where unsure (the matcher then
    accepts any width).
    """
    if m in _BROADCAST:
        return _BROADCAST[m] if _BROADCAST[m] is not None else (64 if reg_width == 128 else reg_width)
    if "cvt" in m:
        src, _, dst = m.split("cvt", 1)[1].lstrip("t").partition("2")
        if src == "ss":
            return 32
        if src == "sd":
            return 64
        if m.endswith("ps2ph"):                        # the register is the source
            return reg_width // 2
        if src in _PACKED_ELEM and dst in _PACKED_ELEM and _PACKED_ELEM[dst] >= _PACKED_ELEM[src]:
            # the register is the destination: as many source elements as it has lanes
            return reg_width // _PACKED_ELEM[dst] * _PACKED_ELEM[src]
        return None                                    # narrowing: AT&T says it with an x/y suffix
    pm = _PMOV.match(m)
    if pm:
        return reg_width * _ELEM[pm.group(1)] // _ELEM[pm.group(2)]
    down = _DOWN_CONVERT.match(m)
    if down:                                           # vpmovwb m128, ymm: the register is the source
        return reg_width * _ELEM[down.group(2)] // _ELEM[down.group(1)]
    gather = _GATHER.match(m)
    if gather:                                         # one element per index (Intel: QWORD PTR)
        return 32 if gather.group(1) in ("ps", "d") else 64
    if _VECTOR_SHIFT.fullmatch(m):
        return reg_width if has_immediate else 128     # data, or a shift count from memory
    if _INSERT_EXTRACT.fullmatch(m):
        return _ELEM[m[-1]]
    if not m.startswith(("p", "vp")):                  # scalar fp (vaddsd); not vpminsd
        if m.endswith("ss"):
            return 32
        if m.endswith("sd"):
            return 64
    return reg_width


def normalize_x86(insn: Instruction, syntax: str) -> FormKey:
    ops = list(insn.operands)
    suffix_width = src_width = None
    mnemonic = insn.mnemonic
    if syntax == "att":
        mnemonic, suffix_width, src_width = att_mnemonic(mnemonic, ops)
        ops.reverse()                                   # AT&T lists the destination last
    mnemonic = _X86_ALIASES.get(mnemonic, mnemonic)
    regs = [x86_register(o.name) for o in ops if isinstance(o, Register)]
    reg_widths = [r[2] for r in regs if r[1] == "G"]
    if mnemonic == "movsx":
        # Intel spells movsxd as movsx when the source is 32 bits wide
        srcs = [o for o in ops[1:] if isinstance(o, (Register, Memory))]
        if srcs and ((isinstance(srcs[0], Register) and x86_register(srcs[0].name)[2] == 32)
                     or (isinstance(srcs[0], Memory) and (srcs[0].width or src_width) == 32)):
            mnemonic = "movsxd"
    if mnemonic in ("movsx", "movzx", "movsxd"):
        mem_width = src_width
    elif mnemonic.startswith("kmov") and mnemonic[-1:] in "bwdq":
        mem_width = {"b": 8, "w": 16, "d": 32, "q": 64}[mnemonic[-1]]
    elif mnemonic.startswith(("cvtsi2s", "vcvtsi2s", "vcvtusi2s")):
        mem_width = suffix_width
    elif suffix_width is not None:
        mem_width = suffix_width
    elif reg_widths and not any(r[1] == "V" for r in regs):
        mem_width = max(reg_widths)                     # same-size operands (add r64, m64)
    elif syntax == "att":
        vec = [r[2] for r in regs if r[1] == "V"]
        mem_width = vector_memory_width(mnemonic, max(vec), any(isinstance(o, Immediate)
                                                                for o in ops)) if vec else None
    else:
        mem_width = None
    keys = tuple([_x86_operand(o, mnemonic, mem_width) for o in ops])
    masked = any([(isinstance(o, Register) and o.mask) or (isinstance(o, Memory) and (o.broadcast or o.mask))
                  for o in ops])
    return FormKey(mnemonic, keys, masked, osaca_view_x86(insn, syntax, mnemonic))


@lru_cache(maxsize=None)
def _osaca_x86_register(name: str) -> tuple:
    return ("r", name.rstrip("0123456789"), x86_register(name)[1])


def _osaca_x86_operand(op) -> tuple:
    if isinstance(op, Register):
        return _osaca_x86_register(op.name)
    if isinstance(op, Immediate):
        return ("i", "int")
    if isinstance(op, Memory):
        if op.symbols:
            offset = "id"
        elif op.has_disp or op.disp:
            offset = "imd" if op.disp else "imd0"
        else:
            offset = None
        return ("m", "gpr" if op.base else None, offset, "gpr" if op.index else None,
                op.scale if op.index else 1, False, False)
    if isinstance(op, Indirect):
        return _osaca_x86_operand(op.target)
    if isinstance(op, Symbol):
        return ("id",)
    return ("?",)


def osaca_view_x86(insn: Instruction, syntax: str, mnemonic: str) -> tuple:
    ops = insn.operands if syntax == "att" else tuple(reversed(insn.operands))
    raw = insn.mnemonic
    names = [mnemonic, raw]
    if syntax == "att" and raw[-1:] in "bwlq":
        names.append(raw[:-1])              # OSACA retries without the AT&T size suffix
    return _unique(names), tuple([_osaca_x86_operand(o) for o in ops])
