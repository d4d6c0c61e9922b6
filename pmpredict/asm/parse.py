"""Assembly text -> statements (pmpredict.isa.syntax dataclasses): a whole file or text,
common x86 lines by fastline.py, the rest through the Lark grammars (grammar.py). Turning
instructions into form keys (Intel operand order, widths, aliases) is normalize.py's job.

A line the grammar rejects raises InputError(path, message, line, column).
"""

from __future__ import annotations

from dataclasses import dataclass


from pmpredict.asm.detect import detect_syntax
from pmpredict.asm.fastline import parse_line
from pmpredict.asm.grammar import get_parser, instruction_text
from pmpredict.errors import InputError
from pmpredict.formats.files import read_text
from pmpredict.isa import semantics
from pmpredict.isa.syntax import Instruction


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
    if "/*" in text:                 # a C comment may span lines: the text as a whole
        statements = _with_text(_parse_text(text, syntax, path, lines, None), lines)
    else:
        statements = _parse_distinct_lines(text, syntax, path)
    return Program(path, syntax, statements, lines)


def _parse_distinct_lines(text: str, syntax: str, path: str) -> list:
    """The statements of `text`, each distinct line parsed once (the grammar reads every line
    on its own, and compiler output repeats lines: blank ones, directives, instructions):
    by fastline when it can, the others by Lark in one batch."""

    raw = text.split("\n")[:-1]                     # the lines as the grammar sees them
    first: dict[str, int] = {}                      # a line's text -> the first line it is on
    for n, line in enumerate(raw, 1):
        first.setdefault(line, n)
    statements: dict[str, list] = {}                # a line's text -> its statements
    slow = []                                       # the lines left to Lark
    for line, n in first.items():
        fast = parse_line(line, syntax, n)
        if fast is None:
            slow.append(line)
        else:
            statements[line] = fast
    if slow:
        where = [first[line] for line in slow]
        for st in _with_text(_parse_text("\n".join(slow) + "\n", syntax, path, slow, where), slow):
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
