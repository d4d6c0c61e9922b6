"""One x86 line -> the statements the Lark grammar gives for it, without Lark; or None.

Most lines of compiler output and of BHive blocks are plain: labels, an instruction with
registers, immediates and memory operands, a directive (GNU's or MASM's), a `#` comment
(MASM's `;` comments come as `#`, parse.py). This module reads
them with the grammar's own terminal regexes (taken from the .lark file, tried in Lark's
priority order) and a small recursive-descent reader that follows the grammar's rules,
and builds the operands through the same AsmTransformer methods, so the result is the
one Lark gives. Whatever it does not follow (`;`, `{...}` decorations and pseudo prefixes,
C comments, `1f` label references, non-ASCII text, any token the rule does not expect)
makes it return None: Lark then parses the line, and reports the error if there is one.
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

from pmpredict.asm.grammar import (AsmTransformer, Token, comment_text, directive_parts,
                                   grammar_text, instruction_text)
from pmpredict.isa.syntax import Comment, Directive, Instruction, Label

_T = AsmTransformer()
_BLANK = " \t\f\v"                               # what the grammars ignore
_TERMINAL_LINE = re.compile(r"^([A-Z_]+)(?:\.\d+)?:\s*/(.*)/(i?)\s*$", re.M)
# A `,` outside `(...)` ends an operand. (Any split at commas into pieces that each read as
# one whole operand is the grammar's reading; a wrong split only costs a fall back to Lark.)
_OPERAND_END = re.compile(r",(?![^(]*\))")

# The tokens of an operand, in Lark's order (priority, then as listed): the ones that can
# match at the same place are LOCALREF before NUMBER, SIZE, OFFSET and _SHORT (MASM's
# `jne SHORT label`) before REG before SYMBOL. OTHER is anything this reader does not take.
_OPERAND_TOKENS = {
    "att": ("LOCALREF", "REG", "NUMBER", "SYMBOL"),
    "intel": ("SIZE", "OFFSET", "_SHORT", "LOCALREF", "REG", "NUMBER", "SYMBOL"),
}
_PUNCTUATION = {"att": r"[$(),:*+\-]", "intel": r"[\[\],:*+\-]"}


class _Decline(Exception):
    """The operand is not one this reader follows."""


def terminals(syntax: str) -> dict[str, str]:
    """The grammar's regex terminals, name -> regex (flag `i` as Lark writes it)."""
    return {name: f"(?i:{body})" if flag else body
            for name, body, flag in _TERMINAL_LINE.findall(grammar_text(syntax))}


class _Lexicon:
    """A syntax's compiled regexes and its operand cache."""

    def __init__(self, syntax: str):
        t = terminals(syntax)
        # what may start a statement (or follow one: a comment), in Lark's order (MASM
        # directives: Intel only)
        head = "|".join(f"(?P<{n}>{t[n]})" for n in ("LABEL", "PREFIX", "DIRECTIVE",
                                                      "MASM_DIRECTIVE", "MNEMONIC", "COMMENT")
                        if n in t)
        self.head = re.compile(f"[{_BLANK}]*+(?:{head})?")
        self.dirargs = re.compile(t["DIRARGS"])
        groups = [f"(?P<WS>[{_BLANK}]+)"] + [f"(?P<{n}>{t[n]})" for n in _OPERAND_TOKENS[syntax]]
        groups += [f"(?P<PUNCT>{_PUNCTUATION[syntax]})", "(?P<OTHER>(?s:.))"]
        scanner = re.compile("|".join(groups))
        read = _att_operand if syntax == "att" else _intel_operand
        # operands repeat much more than lines do
        self.operand = lru_cache(maxsize=1 << 16)(partial(_operand, scanner, read))


@lru_cache(maxsize=None)
def _lexicon(syntax: str) -> _Lexicon:
    return _Lexicon(syntax)


def parse_line(text: str, syntax: str, line: int = 1) -> list | None:
    """The statements of one line (numbered `line`), or None to leave it to Lark."""
    if syntax not in _OPERAND_TOKENS or not text.isascii():
        return None
    lex = _lexicon(syntax)
    out = []
    m = lex.head.match(text)
    while m.lastgroup == "LABEL":
        out.append(Label(line, m.start("LABEL") + 1, m.group("LABEL")[:-1]))
        m = lex.head.match(text, m.end())
    if m.lastgroup in ("DIRECTIVE", "MASM_DIRECTIVE"):
        args = lex.dirargs.match(text, m.end())
        name, symbol = directive_parts(m.group(m.lastgroup))
        out.append(Directive(line, m.start(m.lastgroup) + 1, name,
                             f"{symbol} {args.group().strip() if args else ''}".strip()))
        m = lex.head.match(text, args.end() if args else m.end())
    elif m.lastgroup in ("PREFIX", "MNEMONIC"):
        end = _instruction(text, m, lex, line, out)
        if end is None or end == len(text):
            return None if end is None else out
        m = lex.head.match(text, end)
    if m.lastgroup == "COMMENT":
        out.append(Comment(line, m.start("COMMENT") + 1, comment_text(m.group("COMMENT"))))
    elif m.lastgroup:
        return None
    return out if m.end() == len(text) else None


def _instruction(text, m, lex, line, out) -> int | None:
    """Reads the instruction at `m` into `out`; where it ends (None: not read)."""
    start = m.start(m.lastgroup)
    prefixes = []
    while m.lastgroup == "PREFIX":
        prefixes.append(m.group("PREFIX").lower())
        m = lex.head.match(text, m.end())
    if m.lastgroup != "MNEMONIC":
        return None
    # no operand token holds a `#`: one starts the comment
    end = text.find("#", m.end())
    end = len(text) if end < 0 else end
    if text.find(";", m.end(), end) >= 0:
        return None                # several statements on the line: Lark separates them
    area = text[m.end():end]
    operands = ()
    if area.strip(_BLANK):
        operands = tuple(map(lex.operand, _OPERAND_END.split(area)))
        if None in operands:
            return None
    out.append(Instruction(line, start + 1, m.group("MNEMONIC").lower(), operands,
                           tuple(prefixes), instruction_text(text, start + 1, end)))
    return end


def _operand(scanner, read, piece: str):
    """The operand `piece` is (all of it), or None when the reader does not follow it."""
    try:
        tokens = _Tokens(scanner, piece)
        operand = read(tokens)
    except _Decline:
        return None
    return operand if tokens.peek() is None else None


class _Tokens:
    """The tokens of an operand (whitespace dropped), read front to back."""

    def __init__(self, scanner, text):
        self.items = []
        for m in scanner.finditer(text):
            kind = m.lastgroup
            if kind == "OTHER":
                raise _Decline
            if kind != "WS":
                self.items.append((m.group() if kind == "PUNCT" else kind, m.group()))
        self.items += [(None, ""), (None, "")]         # the end, also for peek(1)
        self.i = 0

    def peek(self, ahead=0):
        return self.items[self.i + ahead][0]

    def take(self, kind=None) -> str:
        """The next token's text; it must be of `kind` when one is given."""
        k, value = self.items[self.i]
        if k is None or (kind is not None and k != kind):
            raise _Decline
        self.i += 1
        return value


# --- expressions (both syntaxes): _term (_addop _term)*; _term: number | symbol | neg --------

def _expr(tokens):
    items = [_term(tokens)]
    while tokens.peek() in ("+", "-"):
        items.append(_T.plus([]) if tokens.take() == "+" else _T.minus([]))
        items.append(_term(tokens))
    return _T.expr(items)


def _term(tokens):
    kind = tokens.peek()
    if kind == "NUMBER":
        return _T.number([tokens.take()])
    if kind == "SYMBOL":
        return _T.symbol([tokens.take()])
    tokens.take("-")
    return _T.neg([_term(tokens)])


# --- AT&T ------------------------------------------------------------------------------------

def _att_operand(tokens):
    kind = tokens.peek()
    if kind == "$":
        tokens.take()
        return _T.att_immediate([_expr(tokens)])
    if kind == "*":
        tokens.take()
        return _T.indirect([_att_plain_operand(tokens)])
    return _att_plain_operand(tokens)


def _att_plain_operand(tokens):
    """register | memory | direct (what may follow `*`)."""
    segment = None
    if tokens.peek() == "REG":
        reg = tokens.take()
        if tokens.peek() != ":":
            return _T.register([reg])
        tokens.take()
        segment = _T.segment([reg])
    children = [segment] if segment else []
    if tokens.peek() != "(":
        children.append(_expr(tokens))
        if tokens.peek() != "(":
            return _T.memory(children) if segment else _T.direct(children)
    children.append(_base_index(tokens))
    return _T.memory(children)


def _base_index(tokens):
    """`(` REG `)` | `(` [REG] `,` [REG] [`,` NUMBER] `)`"""
    tokens.take("(")
    base = tokens.take() if tokens.peek() == "REG" else None
    if base is not None and tokens.peek() == ")":
        tokens.take()
        return _T.base_only([base])
    tokens.take(",")
    index = tokens.take() if tokens.peek() == "REG" else None
    scale = None
    if tokens.peek() == ",":
        tokens.take()
        scale = tokens.take("NUMBER")
    tokens.take(")")
    return _T.base_index([base, index, scale])


# --- Intel -----------------------------------------------------------------------------------

def _intel_operand(tokens):
    kind = tokens.peek()
    if kind == "OFFSET":
        return _T.immediate([_T.offset([tokens.take()]), _expr(tokens)])
    if kind == "_SHORT":
        tokens.take()
        return _T.immediate([_expr(tokens)])
    if kind == "REG" and tokens.peek(1) != ":":
        return _T.register([tokens.take()])
    children = []
    if kind == "SIZE":
        children.append(_T.size([tokens.take()]))
    if tokens.peek() == "REG":
        reg = tokens.take()
        tokens.take(":")
        children.append(_T.segment([reg]))
    if tokens.peek() != "[":
        expr = _expr(tokens)
        if tokens.peek() != "[":
            return _T.memory(children + [expr]) if children else _T.immediate([expr])
        children.append(expr)
    tokens.take("[")
    terms = [_address_term(tokens)]
    while tokens.peek() in ("+", "-"):
        terms.append(_T.plus([]) if tokens.take() == "+" else _T.minus([]))
        terms.append(_address_term(tokens))
    tokens.take("]")
    children.append(_T.address(terms))
    return _T.memory(children)


def _address_term(tokens):
    """areg | scaled (`REG * NUMBER`, `NUMBER * REG`) | number | symbol | neg"""
    kind = tokens.peek()
    if kind == "REG" or (kind == "NUMBER" and tokens.peek(1) == "*"):
        first = tokens.take()
        if tokens.peek() != "*":
            return _T.areg([first])
        tokens.take()
        second = tokens.take("NUMBER" if kind == "REG" else "REG")
        reg, num = (first, second) if kind == "REG" else (second, first)
        return _T.scaled([Token("REG", reg), Token("NUMBER", num)])
    return _term(tokens)
