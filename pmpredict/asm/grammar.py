"""The Lark grammars (grammars/*.lark) and the one Transformer that turns the parse of all
three (x86 AT&T, x86 Intel, AArch64) into the syntax dataclasses of pmpredict.isa.syntax.
Operands stay in source order and in source spelling (register names lower-cased, no `%`).

Read by parse.py (whole files, through Lark) and fastline.py (common x86 lines, without Lark).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from pmpredict.isa import semantics
from pmpredict.isa.syntax import (Comment, Directive, Immediate, Indirect, Instruction, Label,
                                  Memory, Register, RegisterList, Rounding, Shift, Symbol)
from pmpredict.userdirs import cache_dir


# --- transformer --------------------------------------------------------------------

class Token(str):
    """A terminal as fastline.py makes one: its text, with the terminal's name as `type`,
    as Lark's own Token has (the transformer takes either; Lark is imported only where a
    line needs it)."""

    def __new__(cls, type_: str, value: str):
        token = super().__new__(cls, value)
        token.type = type_
        return token


def _token(x, *kinds) -> bool:
    """x is a terminal token, Lark's or fastline's, of one of `kinds` (of any, if none)."""
    kind = getattr(x, "type", None)
    return kind is not None and isinstance(x, str) and (not kinds or kind in kinds)


class _Expr:
    """value + symbols of an assembler expression (numbers summed, symbols listed)."""
    __slots__ = ("value", "symbols", "is_float")

    def __init__(self, value=0, symbols=(), is_float=False):
        self.value = value
        self.symbols = symbols
        self.is_float = is_float

    def text(self) -> str:
        parts = list(self.symbols)
        if self.value or not parts:
            parts.append(str(self.value))
        return "+".join(parts)


class _Sign(str):
    pass


class _Segment(str):
    pass


class _Size(int):
    pass


class _Decor(tuple):
    """("mask", "k1") / ("zeroing", True) / ("broadcast", "1to8")."""


class _Offset(str):
    pass


class _BaseIndex(tuple):
    pass


class _Address(tuple):
    """Intel `[...]` contents: (base, index, scale, _Expr)."""


_SIZES = {"byte": 8, "word": 16, "dword": 32, "qword": 64, "tbyte": 80, "oword": 128,
          "xmmword": 128, "ymmword": 256, "zmmword": 512, "fword": 48, "mmword": 64}


def parse_int(text: str) -> int:
    """GNU as integer literal: 0x.., 0b.., leading 0 = octal, else decimal; and Intel's
    (MASM's) hexadecimal `0ffH` (the x86 Intel grammar's NUMBER)."""
    t = text.lower()
    if t.endswith("h") and t[:1].isdigit():
        return int(t[:-1], 16)
    if t.startswith("0x"):
        return int(t, 16)
    if t.startswith("0b"):
        return int(t[2:], 2)
    if len(t) > 1 and t.startswith("0") and t.isdigit() and all(c in "01234567" for c in t):
        return int(t, 8)
    return int(t, 10)


def directive_parts(token: str) -> tuple[str, str]:
    """A directive token -> (its name, lower case; the symbol it names first, or ""): GNU
    `.p2align` -> (".p2align", ""); MASM `INCLUDELIB` -> ("includelib", ""), `triad PROC`
    -> ("proc", "triad"), `a$ =` -> ("=", "a$"). The symbol goes first in Directive.args."""
    if token.endswith("="):
        return "=", token[:-1].strip()
    *symbol, name = token.split()
    return name.lower(), " ".join(symbol)


def comment_text(comment: str) -> str:
    """A comment token's text without the comment characters, stripped."""
    text = comment.strip()
    for lead in ("//", "#", "/*"):
        if text.startswith(lead):
            text = text[len(lead):]
            break
    if text.endswith("*/"):
        text = text[:-2]
    return text.strip()


def _reg(tok) -> str:
    name = str(tok).lower()
    return name[1:] if name.startswith("%") else name


class AsmTransformer:
    """Parse tree -> dataclasses; shared by the three grammars (rule names agree; the
    AArch64 memory offset is `aoffset`, as `offset` is Intel's OFFSET keyword). Lark calls
    a method per rule by name (an inline transformer needs no base class)."""

    # statements
    def label(self, c):
        tok = c[0]
        return Label(tok.line, tok.column, str(tok)[:-1])

    def directive(self, c):
        tok = c[0]
        name, symbol = directive_parts(str(tok))
        args = str(c[1]).strip() if len(c) > 1 else ""
        return Directive(tok.line, tok.column, name, f"{symbol} {args}".strip())

    def comment(self, c):
        tok = c[0]
        return Comment(tok.line, tok.column, comment_text(str(tok)))

    def prefix(self, c):
        return c[0]

    def instruction(self, c):
        prefixes = []
        i = 0
        while i < len(c) and _token(c[i], "PREFIX", "PSEUDO_PREFIX"):
            prefixes.append(str(c[i]).lower())
            i += 1
        first = c[0]
        if i == len(c):            # prefixes only (`rep` alone, `lock;`)
            return Instruction(first.line, first.column, prefixes[-1], (), tuple(prefixes[:-1]))
        mnemonic = c[i]
        return Instruction(first.line, first.column, str(mnemonic).lower(), tuple(c[i + 1:]),
                           tuple(prefixes))

    # expressions
    def number(self, c):
        return _Expr(parse_int(str(c[0])))

    def fnumber(self, c):
        return _Expr(float(str(c[0]).rstrip("fF")), is_float=True)

    def symbol(self, c):
        return _Expr(0, (str(c[0]),))

    def neg(self, c):
        e = c[0]
        return _Expr(-e.value, tuple("-" + s for s in e.symbols), e.is_float)

    def plus(self, c):
        return _Sign("+")

    def minus(self, c):
        return _Sign("-")

    def expr(self, c):
        value, symbols, is_float, sign = 0, [], False, 1
        for item in c:
            if isinstance(item, _Sign):
                sign = -1 if item == "-" else 1
                continue
            value += sign * item.value
            symbols.extend(item.symbols if sign > 0 else ("-" + s for s in item.symbols))
            is_float = is_float or item.is_float
            sign = 1
        return _Expr(value, tuple(symbols), is_float)

    # decorations (AVX-512)
    def mask(self, c):
        return _Decor(("mask", _reg(c[0])))

    def zeroing(self, c):
        return _Decor(("zeroing", True))

    def broadcast(self, c):
        return _Decor(("broadcast", str(c[0]).lower()))

    def rounding(self, c):
        return Rounding(str(c[0]).lower())

    @staticmethod
    def _decorations(items) -> dict:
        out = {}
        for d in items:
            if isinstance(d, _Decor):
                out[d[0]] = d[1]
        return out

    # operands
    def register(self, c):
        lane = None
        if len(c) > 1 and isinstance(c[1], int) and not isinstance(c[1], _Decor):
            lane = c[1]
        d = self._decorations(c[1:])
        return Register(_reg(c[0]), lane, d.get("mask"), bool(d.get("zeroing")))

    def lane(self, c):
        return parse_int(str(c[0]))

    def immediate(self, c):
        hashed = False
        if c and _token(c[0], "HASH"):
            hashed = True
            c = c[1:]
        if len(c) == 2 and isinstance(c[0], _Offset):      # Intel OFFSET FLAT:sym
            e = c[1]
            return Immediate(None, e.text(), e.symbols)
        e = c[0]
        if isinstance(e, Immediate):                         # AArch64 relocation
            return e
        if e.symbols:
            if not hashed and len(e.symbols) == 1 and not e.value and not e.symbols[0].startswith("-"):
                return Symbol(e.symbols[0])                  # Intel / AArch64 bare name
            return Immediate(None, e.text(), e.symbols)
        return Immediate(e.value, e.text())

    def att_immediate(self, c):
        e = c[0]
        return Immediate(None if e.symbols else e.value, e.text(), e.symbols)

    def offset(self, c):
        return _Offset(str(c[0]))

    def reloc(self, c):
        return Immediate(None, f":{c[0]}:{c[1]}", (str(c[1]),))

    def literal(self, c):
        e = c[0]
        return Immediate(e.value if not e.symbols else None, "=" + e.text(), e.symbols)

    def direct(self, c):
        e = c[0]
        if len(e.symbols) == 1 and not e.value and not e.symbols[0].startswith("-"):
            return Symbol(e.symbols[0])
        return Memory(disp=e.value, symbols=e.symbols, has_disp=True)

    def indirect(self, c):
        return Indirect(c[0])

    def segment(self, c):
        return _Segment(_reg(c[0]))

    def size(self, c):
        return _Size(_SIZES[str(c[0]).split()[0].lower()])

    def base_only(self, c):
        return _BaseIndex((_reg(c[0]), None, 1))

    def base_index(self, c):
        # AT&T `(base, index, scale)`; absent parts are None placeholders
        base, index, scale = (list(c) + [None, None, None])[:3]
        return _BaseIndex((_reg(base) if base is not None else None,
                           _reg(index) if index is not None else None,
                           parse_int(str(scale)) if scale is not None else 1))

    def memory(self, c):
        seg, size, disp = None, None, _Expr()
        base = index = None
        scale, has_disp = 1, False
        for item in c:
            if isinstance(item, _Segment):
                seg = str(item)
            elif isinstance(item, _Size):
                size = int(item)
            elif isinstance(item, _Expr):
                disp, has_disp = item, True
            elif isinstance(item, _BaseIndex):
                base, index, scale = item
            elif isinstance(item, _Address):
                base, index, scale, inner = item
                if inner is not None:
                    disp = _Expr(disp.value + inner.value, disp.symbols + inner.symbols)
                    has_disp = True
        d = self._decorations(c)
        return Memory(base=base, index=index, scale=scale, disp=disp.value, symbols=disp.symbols,
                      segment=seg, width=size, broadcast=d.get("broadcast"), mask=d.get("mask"),
                      zeroing=bool(d.get("zeroing")), has_disp=has_disp)

    # Intel `[...]`
    def areg(self, c):
        return ("reg", _reg(c[0]))

    def scaled(self, c):
        reg = next(t for t in c if t.type == "REG")
        num = next(t for t in c if t.type == "NUMBER")
        return ("scaled", _reg(reg), parse_int(str(num)))

    def address(self, c):
        base = index = None
        scale = 1
        value, symbols, sign = 0, [], 1
        seen = False
        for item in c:
            if isinstance(item, _Sign):
                sign = -1 if item == "-" else 1
                continue
            if isinstance(item, tuple) and item and item[0] == "reg":
                if base is None:
                    base = item[1]
                else:
                    index = item[1]
            elif isinstance(item, tuple) and item and item[0] == "scaled":
                if index is not None and base is None:
                    base = index
                index, scale = item[1], item[2]
            else:
                value += sign * item.value
                symbols.extend(item.symbols if sign > 0 else ("-" + s for s in item.symbols))
                seen = True
            sign = 1
        return _Address((base, index, scale, _Expr(value, tuple(symbols)) if seen else None))

    # AArch64
    def shift(self, c):
        amount = None
        for t in c[1:]:
            if t.type == "NUMBER":
                amount = parse_int(str(t))
        return Shift(str(c[0]).lower(), amount)

    def reglist(self, c):
        regs = tuple(_reg(t) for t in c if _token(t, "REG"))
        lane = next((x for x in c if isinstance(x, int)), None)
        return RegisterList(regs, lane)

    def regrange(self, c):
        """`{v0.4s-v3.4s}`: registers numbered first..last (wrapping at 32)."""
        first, last = (_reg(t) for t in c if _token(t, "REG"))
        lane = next((x for x in c if isinstance(x, int)), None)
        m1, m2 = re.match(r"([a-z]+)(\d+)(.*)", first), re.match(r"([a-z]+)(\d+)(.*)", last)
        if not m1 or not m2:
            return RegisterList((first, last), lane)
        lo, hi = int(m1.group(2)), int(m2.group(2))
        count = (hi - lo) % 32 + 1
        return RegisterList(tuple(f"{m1.group(1)}{(lo + k) % 32}{m1.group(3)}" for k in range(count)), lane)

    def aoffset(self, c):
        """AArch64 memory offset: an immediate, a relocation, or a register (+ shift / extend)."""
        items = [x for x in c if not _token(x, "HASH")]
        first = items[0]
        if _token(first, "REG"):
            shift = items[1] if len(items) > 1 else None
            return ("aoffset", "reg", (_reg(first), shift))
        if isinstance(first, Immediate):
            return ("aoffset", "imm", first)
        return ("aoffset", "imm", Immediate(first.value if not first.symbols else None, first.text(),
                                            first.symbols))

    def amemory(self, c):
        base = _reg(c[0])
        index = None
        disp, symbols, has_disp = 0, (), False
        shift = None
        writeback = None
        for item in c[1:]:
            if _token(item, "WRITEBACK"):
                writeback = "pre"
            elif isinstance(item, tuple) and item and item[0] == "aoffset":
                kind, payload = item[1], item[2]
                if kind == "imm":
                    disp = payload.value if payload.value is not None else 0
                    symbols = payload.symbols
                    has_disp = True
                else:
                    index, shift = payload
        return Memory(base=base, index=index, disp=disp if isinstance(disp, int) else 0,
                      symbols=symbols, writeback=writeback, index_shift=shift, has_disp=has_disp)



# --- the parser ------------------------------------------------------------------------

def grammar_text(syntax: str) -> str:
    """The Lark grammar of a syntax (also read by fastline for its terminal regexes)."""
    name = semantics.for_syntax(syntax).grammar_files[syntax]
    # installed: pmpredict/grammars/; a source tree (an editable install): grammars/ beside
    # pmpredict/ (a path, not importlib.resources: ~9 ms of imports on every call of the CLI)
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (os.path.join(here, "..", "grammars"), os.path.join(here, "..", "..", "grammars")):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path) as fh:
                return fh.read()
    raise FileNotFoundError(f"the grammar {name} is not installed with pmpredict")


@lru_cache(maxsize=None)
def get_parser(syntax: str):
    """The Lark parser of `syntax`, its transformer inline."""
    # deferred: lark (~25 ms): most files are read by fastline alone
    import lark
    grammar = grammar_text(syntax)
    return lark.Lark(grammar, parser="lalr", lexer="contextual", transformer=AsmTransformer(),
                     maybe_placeholders=True,
                     cache=_parser_cache(syntax, f"{lark.__version__}\0{grammar}"))


def _parser_cache(syntax: str, key: str) -> str | bool:
    """Where Lark keeps the built parser tables between runs (building them costs ~0.25 s
    per call of the CLI): a file in pmpredict's cache directory named by the grammar's
    hash and Lark's version (`key`), or False (no cache) when that directory cannot be written."""
    base = cache_dir()
    # deferred: hashlib (~3 ms) only where Lark is loaded
    import hashlib
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return False
    if not os.access(base, os.W_OK):
        return False
    return os.path.join(base, f"lark-{syntax}-{digest}.pickle")


def instruction_text(src: str, column: int, end: int) -> str:
    """An instruction's text: its slice of the source line from `column` (1-based) to `end`
    (where the next statement on the line starts), without `;` and with spaces collapsed."""
    piece = src[column - 1:end].strip().rstrip(";").strip()
    return " ".join(piece.split())
