"""Instructions (as parsed) -> normalised form keys, the currency of form matching.

A key is (mnemonic, operands) with the mnemonic in lower-case Intel / ARM spelling
(AT&T size suffixes and aliases resolved) and the operands in Intel order as
small tuples:

    ("reg", cls, width[, name]) x86 cls G (general, + its name) V (xmm/ymm/zmm) K M X S IP;
                               AArch64 cls G (x/w) F (b/h/s/d/q) Z P
    ("vreg", "4s")             AArch64 vector register with arrangement
    ("velem", "d", lane)       AArch64 vector element `v0.d[1]`
    ("vlist", "16b", n)        AArch64 register list
    ("mem", width|None)        x86 memory operand (None: the syntax does not say)
    ("addr", base?, index?, disp|None)   x86 address of `lea` (its shape matters)
    ("amem", mode)             AArch64 memory: base / imm / reg / ext / pre / post
    ("imm", value|None)        immediate (None: symbolic)
    ("shift", op, amount)      AArch64 shift or extend (`lsl 3`, `sxtw`, `uxtw 2`)
    ("sym",)                   branch target, condition, system register...
    ("round",)                 AVX-512 rounding control

The same instruction written in AT&T or Intel syntax gets the same key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .. import semantics
from .parse import (Immediate, Indirect, Instruction, Memory, Register, RegisterList, Rounding,
                    Shift, Symbol)

# --- registers ---------------------------------------------------------------------------

_X86_GPR = {}
for _w, _names in ((64, "rax rbx rcx rdx rsi rdi rbp rsp"), (32, "eax ebx ecx edx esi edi ebp esp"),
                   (16, "ax bx cx dx si di bp sp"), (8, "al bl cl dl sil dil bpl spl ah bh ch dh")):
    for _n in _names.split():
        _X86_GPR[_n] = _w
for _i in range(8, 16):
    _X86_GPR[f"r{_i}"] = 64
    _X86_GPR[f"r{_i}d"] = 32
    _X86_GPR[f"r{_i}w"] = 16
    _X86_GPR[f"r{_i}b"] = 8


_X86_VECTOR = re.compile(r"([xyz])mm\d+")
_X86_VECTOR_WIDTH = {"x": 128, "y": 256, "z": 512}
_X86_MASK = re.compile(r"k[0-7]")
_X86_MMX = re.compile(r"mm[0-7]")


@lru_cache(maxsize=None)                # a few dozen names, asked for every operand
def x86_register(name: str) -> tuple:
    if name in _X86_GPR:
        return ("reg", "G", _X86_GPR[name], name)   # the name: forms with a fixed register (`cl`)
    m = _X86_VECTOR.fullmatch(name)
    if m:
        return ("reg", "V", _X86_VECTOR_WIDTH[m.group(1)])
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


_A64_FP_WIDTH = {"b": 8, "h": 16, "s": 32, "d": 64, "q": 128}


def aarch64_register(reg: Register) -> tuple:
    name = reg.name
    if name.startswith("v") and "." in name:
        arr = name.split(".", 1)[1]
        if reg.lane is not None or not arr[:1].isdigit():
            return ("velem", arr[-1], reg.lane)
        return ("vreg", arr)
    if name[0] in "xw" and (name[1:].isdigit() or name[1:] == "zr"):
        return ("reg", "G", 64 if name[0] == "x" else 32)
    if name in ("sp", "lr", "fp"):
        return ("reg", "G", 64)
    if name == "wsp":
        return ("reg", "G", 32)
    if name[0] in _A64_FP_WIDTH and name[1:].isdigit():
        return ("reg", "F", _A64_FP_WIDTH[name[0]])
    if name.startswith("z"):
        return ("reg", "Z", None)
    if name.startswith("p"):
        return ("reg", "P", None)
    return ("reg", "?", None)


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
        return narrowing.group(1), {"x": 128, "y": 256}[narrowing.group(2)], None
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


_X86_BRANCHES = re.compile(r"j[a-z]+|call|ret|loop\w*|jmp")


def is_x86_branch(m: str) -> bool:
    return bool(_X86_BRANCHES.fullmatch(m))


# --- the normalised instruction ---------------------------------------------------------

@dataclass(frozen=True)
class FormKey:
    mnemonic: str
    operands: tuple
    masked: bool = False            # AVX-512 masking / broadcast present
    # The instruction in OSACA's vocabulary (osaca_view), for models imported from foreign
    # OSACA files. Not part of equality: keys stay comparable to the PMEvo-side vocabulary.
    osaca: tuple = field(default=(), compare=False)

    def __str__(self) -> str:
        return render_key(self.mnemonic, self.operands)


_CLASS_NAMES = {"G": "r", "V": "v", "F": "f", "K": "k", "M": "mm", "X": "st", "S": "seg",
                "IP": "rip", "Z": "z", "P": "p"}
_FP_NAMES = {8: "b", 16: "h", 32: "s", 64: "d", 128: "q"}
_VECTOR_NAMES = {128: "xmm", 256: "ymm", 512: "zmm"}
_AMEM_NAMES = {"base": "[x]", "imm": "[x, imm]", "reg": "[x, x]", "ext": "[x, x, ext]",
               "pre": "[x, imm]!", "post": "[x], imm"}


def render_operand(op: tuple) -> str:
    kind = op[0]
    if kind == "reg":
        cls, width = op[1], op[2]
        if cls == "F":
            return _FP_NAMES.get(width, "f")
        if cls == "V":
            return _VECTOR_NAMES.get(width, "v")
        return f"{_CLASS_NAMES.get(cls, '?')}{width or ''}"
    if kind == "vreg":
        return f"v.{op[1]}"
    if kind == "velem":
        return f"v.{op[1]}[{op[2] if op[2] is not None else '?'}]"
    if kind == "vlist":
        return "{" + ", ".join([f"v.{op[1]}"] * op[2]) + "}"
    if kind == "mem":
        return f"m{op[1]}" if op[1] else "m"
    if kind == "addr":
        parts = []
        if op[1]:
            parts.append("base")
        if op[2]:
            parts.append("index*s")
        if op[3] is not None and (op[3] != 0 or not parts):
            parts.append("disp8" if -128 <= op[3] < 128 else "disp32")
        elif op[3] is None:
            parts.append("disp32")
        return "[" + "+".join(parts) + "]"
    if kind == "amem":
        return _AMEM_NAMES.get(op[1], "[?]")
    if kind == "imm":
        return "imm" if op[1] is None else f"imm({op[1]})"
    if kind == "imm_w":
        return f"imm{op[1]}"
    if kind == "imm_lit":
        return f"#{op[1]}"
    if kind == "fixreg":
        return op[1]
    if kind == "shift":
        return op[1] + (f" {op[2]}" if op[2] is not None else "")
    if kind == "sym":
        return "label"
    if kind == "round":
        return "{rc}"
    if kind == "osaca":
        return op[1]
    return "?"


def render_key(mnemonic: str, operands: tuple) -> str:
    return mnemonic + (" " + ", ".join(render_operand(o) for o in operands) if operands else "")


def _x86_operand(op, mnemonic: str, mem_width: int | None):
    if isinstance(op, Register):
        return x86_register(op.name)
    if isinstance(op, Immediate):
        return ("imm", op.value if not op.symbols else None)
    if isinstance(op, Memory):
        if mnemonic == "lea":
            disp = op.disp if not op.symbols else None
            # rip counts as a base: `lea r, [rip+sym]` is a base+disp32 address
            return ("addr", op.base is not None, op.index is not None,
                    disp if (op.has_disp or op.base in ("rip", "eip")) else 0)
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


# --- AArch64 -----------------------------------------------------------------------------

_A64_COND = set("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al nv".split())


def aarch64_mnemonic(m: str) -> str:
    if m.startswith("b") and len(m) == 3 and m[1:] in _A64_COND:
        return "b." + m[1:]                          # gcc `bne` == clang `b.ne`
    return m


def _a64_memory(op: Memory) -> tuple:
    if op.writeback == "pre":
        return ("amem", "pre")
    if op.writeback == "post":
        return ("amem", "post")
    if op.index is not None:
        return ("amem", "ext" if op.index_shift is not None else "reg")
    return ("amem", "imm" if op.has_disp else "base")


def _a64_operand(op) -> tuple:
    if isinstance(op, Register):
        return aarch64_register(op)
    if isinstance(op, Immediate):
        return ("imm", op.value if not op.symbols else None)
    if isinstance(op, Memory):
        return _a64_memory(op)
    if isinstance(op, Shift):
        return ("shift", op.op, op.amount)
    if isinstance(op, RegisterList):
        first = aarch64_register(Register(op.regs[0]))
        arr = first[1] if first[0] in ("vreg", "velem") else "?"
        return ("vlist", arr, len(op.regs))
    if isinstance(op, Symbol):
        return ("sym",)
    return ("?",)


def fold_post_index(operands) -> tuple[list, list]:
    """Post-index `[x0], 16` / `[x0], x2` -> one memory operand with write-back; the
    increment (register name or constant) kept aside, by operand."""
    ops, increments = list(operands), [None] * len(operands)
    for i in range(len(ops) - 1):
        if isinstance(ops[i], Memory) and ops[i].writeback is None and i + 2 == len(ops) \
                and isinstance(ops[i + 1], (Immediate, Register)):
            m = ops[i]
            ops[i] = Memory(base=m.base, index=m.index, disp=m.disp, symbols=m.symbols,
                            writeback="post", index_shift=m.index_shift, has_disp=m.has_disp)
            if isinstance(ops[i + 1], Register):
                increments[i] = ops[i + 1].name
            elif isinstance(ops[i + 1].value, int):
                increments[i] = ops[i + 1].value        # `[x0], 16`: the constant added
            del ops[i + 1]
            del increments[i + 1]
            break
    return ops, increments


def normalize_aarch64(insn: Instruction) -> FormKey:
    ops, _ = fold_post_index(insn.operands)
    mnemonic = aarch64_mnemonic(insn.mnemonic)
    return FormKey(mnemonic, tuple(_a64_operand(o) for o in ops),
                   osaca=osaca_view_aarch64(insn.mnemonic, mnemonic, ops))


# --- the OSACA view ----------------------------------------------------------------------
#
# Foreign OSACA forms (pmpredict.data.osaca) are matched the way OSACA matches them, on
# the operands as OSACA's parser sees them: in the file's order (AT&T on x86, so Intel
# operands are reversed), x86 registers by name without digits (`xmm`, `cl`) and class,
# AArch64 registers by prefix and element shape, register lists flattened, memory as
# (base, offset, index, scale, pre, post). The view is (mnemonics to look up, operands):
#
#   ("r", name, cls)            x86 register: name without digits, class as in x86_register
#   ("r", prefix, shape)        AArch64 register (`v0.4s` -> "v", "s"; `x1` -> "x", None)
#   ("i", "int"|"double")       immediate with a value
#   ("id",)                     label / symbol (also a symbolic AArch64 immediate)
#   ("cond", "EQ")              AArch64 condition
#   ("prfop",)                  AArch64 prefetch operation
#   ("m", base, offset, index, scale, pre, post)
#        base/index: "gpr" (x86) or the AArch64 prefix, None when absent;
#        offset: None, "imd", "imd0" (x86 displacement written as 0), "id" (symbolic)

# AArch64 shifts/extends that OSACA's parser folds into the preceding register
_A64_FOLDED = {"lsl", "lsr", "asr", "ror", "sxtw", "uxtw", "uxtb"}
_A64_PRFOP = re.compile(r"p(?:ld|st|li)l[123](?:keep|strm)$")


def _unique(names) -> tuple[str, ...]:
    return tuple(dict.fromkeys(filter(None, names)))


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


def _osaca_a64_register(name: str) -> tuple:
    if name in ("sp", "lr", "fp", "xzr"):
        return ("r", "x", None)
    if name in ("wsp", "wzr"):
        return ("r", "w", None)
    reg, _, arr = name.partition(".")
    prefix = reg.rstrip("0123456789")
    return ("r", prefix, arr.lstrip("0123456789") or None)


def _osaca_a64_memory(op: Memory, post: bool) -> tuple:
    if op.symbols:
        offset = "id"
    elif op.has_disp and not post:
        offset = "imd"
    else:
        offset = None
    index = _osaca_a64_register(op.index)[1] if op.index else None
    amount = op.index_shift.amount if op.index_shift is not None else None
    return ("m", _osaca_a64_register(op.base)[1] if op.base else None, offset, index,
            (1 << amount) if amount else 1, op.writeback == "pre", post or op.writeback == "post")


def osaca_view_aarch64(raw: str, mnemonic: str, ops) -> tuple:
    """`ops` with a post-index already folded into the memory operand (writeback "post")."""
    out = []
    for op in ops:
        if isinstance(op, Register):
            out.append(_osaca_a64_register(op.name))
        elif isinstance(op, RegisterList):
            out.extend(_osaca_a64_register(r) for r in op.regs)
        elif isinstance(op, Immediate):
            if op.symbols or op.value is None:
                out.append(("id",))
            else:
                out.append(("i", "double" if isinstance(op.value, float) else "int"))
        elif isinstance(op, Memory):
            out.append(_osaca_a64_memory(op, op.writeback == "post"))
        elif isinstance(op, Shift):
            if op.op not in _A64_FOLDED:
                out.append(("id",))
                if op.amount is not None:
                    out.append(("i", "int"))
        elif isinstance(op, Symbol):
            name = op.name.lower()
            if name in _A64_COND:
                out.append(("cond", name.upper()))
            elif _A64_PRFOP.match(name):
                out.append(("prfop",))
            else:
                out.append(("id",))
        else:
            out.append(("?",))
    return _unique([mnemonic, raw]), tuple(out)


def normalize(insn: Instruction, syntax: str) -> FormKey:
    """The FormKey of a parsed instruction (the ISA of the syntax chooses the rules)."""
    return semantics.for_syntax(syntax).form_key(insn, syntax)
