"""Assembly text -> statements (pmpredict.isa.syntax dataclasses): a whole file or text,
common x86 lines by fastline.py, the rest through the Lark grammars (grammar.py). Turning
instructions into form keys (Intel operand order, widths, aliases) is normalize.py's job.

A line the grammar rejects raises InputError(path, message, line, column); so does, before
the line is parsed, an instruction longer or with more operands than any can have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pmpredict.asm.detect import detect_syntax, semicolon_comments
from pmpredict.asm.fastline import parse_line, terminals
from pmpredict.asm.grammar import get_parser, instruction_text
from pmpredict.errors import InputError
from pmpredict.formats.files import read_text
from pmpredict.isa import semantics
from pmpredict.isa.syntax import Instruction


# What one instruction may hold, checked on every line before it is parsed. Reading an
# instruction costs time per operand and per token (fastline splits the operands, Lark takes
# some microseconds a token, the semantics and the prediction go over the operands): a 600 KB
# `addq` of 100,000 operands took a minute to be read. No x86 or AArch64 instruction has more
# than 5 operands (XOP `vpermil2ps`, SME `fmopa`), and none that compilers write is longer than
# a few KiB (C++ mangled names are the longest). Directives and comments are one token each
# and are not bounded (a long `.ascii`, a 1 MB comment), nor are lines of many statements.
MAX_OPERANDS = 8
MAX_INSTRUCTION_LENGTH = 1 << 16

_BLANKS = re.compile(r"[ \t\f\v]*")
# strings, GNU's and MASM's (no instruction holds a `'`: the parser stops at the first)
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')
_BRACKETED = re.compile(r"\([^()\n]*\)|\[[^\[\]\n]*\]|\{[^{}\n]*\}")
# MASM's comments, read as the grammar's `#` ones: a line's first `;` outside quotes
_SEMICOLON_COMMENT = re.compile(r"""^((?:[^;'"\n]|'[^'\n]*'|"(?:[^"\\\n]|\\.)*")*);""",
                                re.MULTILINE)


@dataclass
class Program:
    path: str
    syntax: str                     # "att", "intel", "aarch64"
    statements: list
    lines: list[str]

    @property
    def isa(self) -> str:
        return semantics.for_syntax(self.syntax).name

    @property
    def instructions(self) -> list[Instruction]:
        return [s for s in self.statements if isinstance(s, Instruction)]


def _describe(exc, lines: list[str]) -> str:
    """What Lark's UnexpectedInput `exc` says, in one line."""
    # deferred: lark, loaded already where a line went to it
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken
    if isinstance(exc, UnexpectedCharacters):
        what = f"unexpected character {exc.char!r}"
    elif isinstance(exc, UnexpectedToken):
        tok = exc.token
        text = str(tok) if tok.type != "DIRARGS" else (str(tok).split() or [""])[0]
        what = "unexpected end of line" if tok.type in ("_NL", "$END") else f"unexpected {text[:30]!r}"
    else:
        what = "unexpected end of input"
    line = getattr(exc, "line", None)
    if isinstance(line, int) and 1 <= line <= len(lines):
        what += f" in: {lines[line - 1].strip()[:80]}"
    return what


def parse(text: str, syntax: str, path: str = "<input>") -> Program:
    """Parse a whole assembly file. Raises InputError on a line the grammar rejects."""
    if syntax not in semantics.syntaxes():
        raise ValueError(f"unknown syntax {syntax!r}")
    if not text.endswith("\n"):
        text += "\n"
    lines = text.splitlines()
    written = text
    if ";" in text and semicolon_comments(text, syntax):
        text = _SEMICOLON_COMMENT.sub(r"\1#", text)    # same columns, the same statements
    if "/*" in text:                 # a C comment may span lines: the text as a whole,
        # each line checked first (a comment's lines are no statements)
        uncommented = _c_comments(syntax).sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
        for n, line in enumerate(uncommented.split("\n"), 1):
            _refuse_impossible_instructions(line, n, syntax, path)
        statements = _with_text(_parse_text(text, syntax, path, lines, None), lines)
    else:
        statements = _parse_distinct_lines(text, syntax, path, written.split("\n"))
    return Program(path, syntax, statements, lines)


def _refuse_impossible_instructions(line: str, number: int, syntax: str, path: str) -> None:
    """InputError at an instruction of `line` longer than MAX_INSTRUCTION_LENGTH or with more
    than MAX_OPERANDS operands, found with the grammar's own terminals (comments, `;`
    between statements, labels, directives, the mnemonic) before the line is parsed."""
    if len(line) <= MAX_INSTRUCTION_LENGTH and line.count(",") < MAX_OPERANDS:
        return                       # nearly every line
    comments, label, directive, mnemonic = _statement_heads(syntax)
    code = _QUOTED.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', line)
    comment = comments.search(code)
    code = code[:comment.start()] if comment else code
    for statement in re.finditer(r"[^;]+", code):          # `;` separates statements
        pos, end = statement.start(), statement.end()
        while (m := label.match(code, pos, end)):
            pos = m.end()
        pos = _BLANKS.match(code, pos, end).end()
        name = mnemonic.match(code, pos, end)
        if name is None or directive.match(code, pos, end):
            continue                 # not an instruction: the parser refuses it or reads it
        shown = name.group() if len(name.group()) <= 30 else name.group()[:27] + "..."
        area = code[name.end():end]
        for _ in range(2):                              # `[x0, x1]`, `{v0.4s, v1.4s}[1]`
            area = _BRACKETED.sub("", area)
        operands = area.count(",") + 1 if area.strip() else 0
        if operands > MAX_OPERANDS:
            raise InputError(path, f"'{shown}' with {operands:,} operands: no instruction has "
                                   f"more than {MAX_OPERANDS}", number, pos + 1)
        length = len(code[pos:end].rstrip())
        if length > MAX_INSTRUCTION_LENGTH:
            raise InputError(path, f"'{shown}' is an instruction of {length:,} characters: "
                                   f"longer than any can be (at most "
                                   f"{MAX_INSTRUCTION_LENGTH:,} are read)", number, pos + 1)


@lru_cache(maxsize=None)
def _statement_heads(syntax: str):
    """The grammar's regexes (comment start, one label, a directive, a mnemonic) compiled."""
    t = terminals(syntax)

    def any_of(*names):
        return re.compile("|".join(f"(?:{t[n]})" for n in names if n in t))
    return (any_of("COMMENT", "HASH_COMMENT"), re.compile(rf"[ \t]*(?:{t['LABEL']})"),
            any_of("DIRECTIVE", "MASM_DIRECTIVE"), any_of("MNEMONIC"))


@lru_cache(maxsize=None)
def _c_comments(syntax: str):
    return re.compile(terminals(syntax)["C_COMMENT"])


def _parse_distinct_lines(text: str, syntax: str, path: str, written: list[str]) -> list:
    """The statements of `text`, each distinct line parsed once (the grammar reads every line
    on its own, and compiler output repeats lines: blank ones, directives, instructions):
    by fastline when it can, the others by Lark in one batch. `written`: the lines as the
    file has them (errors quote them; `text` may read a `;` comment as `#`)."""

    raw = text.split("\n")[:-1]                     # the lines as the grammar sees them
    first: dict[str, int] = {}                      # a line's text -> the first line it is on
    for n, line in enumerate(raw, 1):
        first.setdefault(line, n)
    statements: dict[str, list] = {}                # a line's text -> its statements
    slow = []                                       # the lines left to Lark
    for line, n in first.items():
        _refuse_impossible_instructions(line, n, syntax, path)
        fast = parse_line(line, syntax, n)
        if fast is None:
            slow.append(line)
        else:
            statements[line] = fast
    if slow:
        where = [first[line] for line in slow]
        quoted = [written[n - 1] for n in where]
        for st in _with_text(_parse_text("\n".join(slow) + "\n", syntax, path, quoted, where),
                             slow):
            statements.setdefault(slow[st.line - 1], []).append(st)
    out = []
    for n, line in enumerate(raw, 1):
        for st in statements.get(line, ()):
            out.append(st if st.line == n else _at_line(st, n))
    return out


def _at_line(statement, line: int):
    """A copy of a (frozen) statement on another line."""
    copy = object.__new__(type(statement))
    copy.__dict__.update(statement.__dict__)
    object.__setattr__(copy, "line", line)
    return copy


def _parse_text(text: str, syntax: str, path: str, lines: list[str], first) -> list:
    """Lark's statements of `text`; first: where each line of `text` first is in the file
    (None: the text is the file), for the line number of an error."""
    parser = get_parser(syntax)
    # deferred: lark, loaded by get_parser just now
    from lark.exceptions import UnexpectedInput
    try:
        return parser.parse(text).children
    except UnexpectedInput as exc:
        line = exc.line if isinstance(getattr(exc, "line", None), int) and exc.line > 0 else None
        column = exc.column if line and isinstance(getattr(exc, "column", None), int) else None
        where = first[line - 1] if first and line and line <= len(first) else line
        raise InputError(path, f"cannot parse {syntax} assembly: {_describe(exc, lines)}",
                         where, column) from None
    except (ValueError, RecursionError) as exc:          # e.g. a malformed number literal
        raise InputError(path, f"cannot parse {syntax} assembly: {exc}") from None


def _with_text(statements: list, lines: list[str]) -> list:
    """Fill Instruction.text: the statement's own slice of its source line."""
    out = []
    n = len(statements)
    for i, st in enumerate(statements):
        if isinstance(st, Instruction):
            src = lines[st.line - 1] if st.line - 1 < len(lines) else ""
            end = len(src)
            if i + 1 < n and statements[i + 1].line == st.line:
                end = statements[i + 1].column - 1
            st = Instruction(st.line, st.column, st.mnemonic, st.operands, st.prefixes,
                             instruction_text(src, st.column, end))
        out.append(st)
    return out


def parse_file(path: str, syntax: str | None = None, isa: str | None = None) -> Program:
    """Read and parse a file (UTF-8); the syntax is detected unless given."""
    return parse_source(read_text(path), path, syntax, isa)


def parse_source(text: str, path: str, syntax: str | None = None, isa: str | None = None) -> Program:
    """Parse assembly text read elsewhere (standard input); the syntax is detected unless
    given. `path` names it in errors."""
    syntax = detect_syntax(text, syntax=syntax, isa=isa, path=path)
    return parse(text, syntax, path)
