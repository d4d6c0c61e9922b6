"""Guess the assembly dialect of a file: x86 AT&T, x86 Intel, or AArch64.

Explicit directives decide (`.intel_syntax`, `.att_syntax`, `.arch armv8...`);
otherwise the first few thousand lines are scored by tell-tale spellings:
`%rax` (AT&T), `DWORD PTR` / bare x86 register names (Intel), `x0`/`w1`/`v0.4s`/
`[x0, #8]` (AArch64). `--isa` / `--syntax` override the guess.
"""

from __future__ import annotations

import re

from ..errors import InputError

_ATT = re.compile(r"%(?:[re]?[abcd]x|[re]?[sd]i|[re]?[sb]p|r\d+[dwb]?|[xyz]mm\d+|[abcd]l|k[0-7]|rip)\b")
_INTEL = re.compile(r"\b(?:(?:byte|word|dword|qword|xmmword|ymmword|zmmword)\s+ptr|[re](?:ax|bx|cx|dx|si|di|sp|bp)"
                    r"|r(?:8|9|1[0-5])[dwb]?|[xyz]mm\d+)\b", re.IGNORECASE)
_A64 = re.compile(r"(?:\b[xw](?:[12]?\d|30)\b|\bv\d+\.\d*[bhsd]\b|\[\s*(?:x\d+|sp)\b|#-?\d|\b(?:ldr|str|ldp|stp|adrp|cbn?z|tbn?z|b\.\w+)\b)")
_DIRECTIVE = re.compile(r"^\s*\.(intel_syntax|att_syntax|arch|cpu)\b\s*(\S*)", re.MULTILINE)

SYNTAX_NAMES = {"att": "x86 AT&T", "intel": "x86 Intel", "aarch64": "AArch64"}


def guess_syntax(text: str, max_lines: int = 3000) -> str:
    for m in _DIRECTIVE.finditer(text):
        kind, arg = m.group(1), m.group(2).lower()
        if kind == "intel_syntax":
            return "intel"
        if kind == "att_syntax":
            return "att"
        if kind == "arch" and (arg.startswith("armv8") or arg.startswith("armv9")):
            return "aarch64"
    body = []
    for line in text.splitlines()[:max_lines]:
        s = line.strip()
        if not s or s.startswith(".") or s.startswith("//"):
            continue
        if s.startswith("#"):
            continue
        body.append(s.split("//", 1)[0].split(" #", 1)[0] if "%" not in s else s.split("#", 1)[0])
    sample = "\n".join(body)
    att = len(_ATT.findall(sample))
    intel = len(_INTEL.findall(sample)) if att == 0 else 0
    a64 = len(_A64.findall(sample))
    scores = {"att": att, "intel": intel, "aarch64": a64}
    best = max(scores, key=lambda k: (scores[k], k == "att"))
    return best if scores[best] > 0 else "att"


def detect_syntax(text: str, syntax: str | None = None, isa: str | None = None,
                  path: str = "<input>") -> str:
    """The dialect to parse with: the options if given (checked for consistency), else a guess."""
    if isa not in (None, "x86", "aarch64"):
        raise InputError(path, f"unknown ISA {isa!r} (use x86 or aarch64)")
    if syntax not in (None, "att", "intel"):
        raise InputError(path, f"unknown syntax {syntax!r} (use att or intel; AArch64 has one syntax)")
    if syntax is not None:
        if isa == "aarch64":
            raise InputError(path, f"--syntax {syntax} is an x86 syntax, but --isa aarch64 was given")
        return syntax
    if isa == "aarch64":
        return "aarch64"
    guess = guess_syntax(text)
    if isa == "x86":
        return guess if guess != "aarch64" else "att"
    return guess
