"""Guess the assembly dialect of a file: x86 AT&T, x86 Intel, or AArch64.

Explicit directives decide (`.intel_syntax`, `.att_syntax`, `.arch armv8...`);
otherwise the first few thousand lines are scored by tell-tale spellings:
`%rax` (AT&T), `DWORD PTR` / bare x86 register names (Intel), `x0`/`w1`/`v0.4s`/
`[x0, #8]` (AArch64). `--isa` / `--syntax` override the guess. What a directive
selects and which spellings tell are facts of each ISA (pmpredict.isa.semantics).
"""

from __future__ import annotations

import re

from pmpredict.isa import semantics
from pmpredict.errors import InputError

_DIRECTIVE = re.compile(r"^\s*\.(intel_syntax|att_syntax|arch|cpu)\b\s*(\S*)", re.MULTILINE)

SYNTAX_NAMES = {s: title for isa in semantics.all_isas() for s, title in isa.syntax_titles.items()}


def _fallback_syntax() -> str:
    """The syntax of text that shows no clue at all."""
    return semantics.get(semantics.DEFAULT_ISA).default_syntax


def guess_syntax(text: str, max_lines: int = 3000) -> str:
    for m in _DIRECTIVE.finditer(text):
        kind, arg = m.group(1), m.group(2).lower()
        for isa in semantics.all_isas():
            chosen = isa.syntax_of_directive(kind, arg)
            if chosen:
                return chosen
    body = []
    for line in text.splitlines()[:max_lines]:
        s = line.strip()
        if not s or s.startswith(".") or s.startswith("//"):
            continue
        if s.startswith("#"):
            continue
        body.append(s.split("//", 1)[0].split(" #", 1)[0] if "%" not in s else s.split("#", 1)[0])
    sample = "\n".join(body)
    scores = {}
    for isa in semantics.all_isas():
        scores.update(isa.syntax_scores(sample))
    fallback = _fallback_syntax()
    best = max(scores, key=lambda k: (scores[k], k == fallback))
    return best if scores[best] > 0 else fallback


def detect_syntax(text: str, syntax: str | None = None, isa: str | None = None,
                  path: str = "<input>") -> str:
    """The dialect to parse with: the options if given (checked for consistency), else a guess."""
    if isa is not None and isa not in semantics.ISAS:
        raise InputError(path, f"unknown ISA {isa!r} (use {' or '.join(semantics.ISAS)})")
    # --syntax chooses among the syntaxes of an ISA that has several
    choosable = [s for obj in semantics.all_isas() if len(obj.syntaxes) > 1 for s in obj.syntaxes]
    if syntax is not None and syntax not in choosable:
        single = ", ".join(f"{obj.syntax_titles[obj.default_syntax]} has one syntax"
                           for obj in semantics.all_isas() if len(obj.syntaxes) == 1)
        raise InputError(path, f"unknown syntax {syntax!r} (use {' or '.join(choosable)}; {single})")
    if syntax is not None:
        owner = semantics.for_syntax(syntax)
        if isa is not None and isa != owner.name:
            raise InputError(path, f"--syntax {syntax} is an {owner.name} syntax, but --isa {isa} "
                                   "was given")
        return syntax
    if isa is None:
        return guess_syntax(text)
    chosen = semantics.get(isa)
    guess = guess_syntax(text)
    return guess if guess in chosen.syntaxes else chosen.default_syntax
