"""Canonical instruction forms.

A form is identified by a string. pmpredict uses the PMEvo artifact's form
strings as its canonical spelling, because the shared measurements and every
model trained on them use it:

    ADD_((REG:RW:G:64)),_((IMM:32))          add r64 (read+written), imm32   (Intel order)
    VPADDD_((REG:W:V:256)),_((REG:R:V:256)),_ymmword_ptr_[((MEM:64))_+_((MIMM:16))]
    _add_((REG:W:G:64)),_((REG:R:G:64)),_((REG:R:G:64)),_lsl_2            (AArch64)

`_` stands for a space; ``((...))`` is a placeholder for an operand that an
instantiation fills in. This module turns such a string into a structured
FormTemplate (mnemonic, operands with kind / register class / width / access)
that the assembly matcher, the measurement harness and the exporters share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache


_PLACEHOLDER_BODY = re.compile(r"\(\(([^()]*)\)\)")

# Intel memory-size keywords -> width in bits
MEM_WIDTHS = {"byte": 8, "word": 16, "dword": 32, "qword": 64, "xmmword": 128,
              "ymmword": 256, "zmmword": 512, "tbyte": 80}


@dataclass(frozen=True)
class Placeholder:
    """One ``((KIND:...))`` slot of a form string.

    kind: REG (register), MEM (base register of an address), MIMM (displacement),
    MSPLIT (a displacement that puts the access across a cache line: split_variant),
    IMM (immediate), DIV (index register of an address / bit offset register).
    """
    kind: str
    access: str = ""      # "R", "W", "RW" for REG; "" otherwise
    reg_class: str = ""   # "G" general purpose, "V" vector (x86), "F" fp/simd (AArch64)
    width: int | None = None  # bits; None for AArch64 "VEC" (width from the arrangement)

    @classmethod
    def parse(cls, body: str) -> "Placeholder":
        parts = body.split(":")
        kind = parts[0]
        if kind == "REG":
            if len(parts) != 4:
                raise ValueError(f"malformed register placeholder (({body}))")
            width = None if parts[3] == "VEC" else int(parts[3])
            return cls(kind, parts[1], parts[2], width)
        if kind in ("MEM", "MIMM", "MSPLIT", "IMM", "DIV"):
            if len(parts) != 2:
                raise ValueError(f"malformed placeholder (({body}))")
            return cls(kind, "R" if kind in ("MEM", "DIV") else "", "G" if kind in ("MEM", "DIV") else "",
                       int(parts[1]))
        raise ValueError(f"unknown placeholder kind (({body}))")


class OperandKind(str, Enum):
    """What an operand of a form is. A str, so `operand.kind == "mem"` reads as before."""
    REG = "reg"
    MEM = "mem"
    IMM = "imm"
    LITERAL = "literal"          # a fixed token: shift, extend, constant, label...

    __str__ = str.__str__        # "mem", not "OperandKind.MEM", in text and f-strings
    __format__ = str.__format__


@dataclass(frozen=True)
class OperandTemplate:
    """One operand of a form; text is the operand in asm spelling with placeholders."""
    kind: OperandKind
    text: str
    placeholders: tuple[Placeholder, ...]
    mem_width: int | None = None      # x86: from `qword ptr`
    arrangement: str | None = None    # AArch64: ".4s", ".d[0]"

    @property
    def access(self) -> str:
        """R / W / RW for a register, R for a memory read (the form's semantics decide stores)."""
        if self.kind is OperandKind.REG:
            return self.placeholders[0].access
        return ""

    @property
    def reg_class(self) -> str:
        return self.placeholders[0].reg_class if self.kind is OperandKind.REG else ""

    @property
    def width(self) -> int | None:
        if self.kind is OperandKind.REG:
            return self.placeholders[0].width
        if self.kind is OperandKind.IMM and self.placeholders:
            return self.placeholders[0].width
        if self.kind is OperandKind.MEM:
            return self.mem_width
        return None


@dataclass(frozen=True)
class FormTemplate:
    """A parsed form string."""
    name: str                         # the form string itself (its identity)
    isa: str                          # "x86" or "aarch64"
    mnemonic: str                     # lower case
    operands: tuple[OperandTemplate, ...]

    @property
    def text(self) -> str:
        """The asm text with placeholders (``_`` turned back into spaces)."""
        return form_text(self.name)

    def render(self, fill) -> str:
        """Instantiate: `fill(placeholder, index)` returns the text for each placeholder."""
        counter = iter(range(10**6))
        return _PLACEHOLDER_BODY.sub(lambda m: fill(Placeholder.parse(m.group(1)), next(counter)),
                                     self.text)


# A form's *split variant*: the same instruction with its displacement placed so that the
# access crosses a cache line. The host model measures it like any form (a form of its own,
# whose uops say what the instruction runs when its load splits), where a kernel's load
# splits on every iteration; the matcher never matches an instruction to it, and exporters
# leave it out (an instruction form of no other tool).
PLAIN_DISPLACEMENT = "((MIMM:16))"
SPLIT_DISPLACEMENT = "((MSPLIT:16))"


def split_variant(form: str) -> str | None:
    """The split variant of an x86 form with one displacement placeholder (None if it has
    none, or is one already)."""
    if form.count(PLAIN_DISPLACEMENT) != 1:
        return None
    return form.replace(PLAIN_DISPLACEMENT, SPLIT_DISPLACEMENT)


def is_split_variant(form: str) -> bool:
    return SPLIT_DISPLACEMENT in form


def split_base(form: str) -> str:
    """The form a split variant is of (a plain form: itself)."""
    return form.replace(SPLIT_DISPLACEMENT, PLAIN_DISPLACEMENT)


def form_text(name: str) -> str:
    """PMEvo form string -> asm-like text with placeholders (underscore = space)."""
    return name.replace("_", " ").strip()


def split_operands(text: str) -> list[str]:
    """Split an operand list at top-level commas (not inside [], {} or (( )))."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        out.append(tail)
    return out


def _operand(text: str) -> OperandTemplate:
    slots = tuple(Placeholder.parse(m.group(1)) for m in _PLACEHOLDER_BODY.finditer(text))
    if "[" in text and not (slots and slots[0].kind == "REG" and text.startswith("((")):
        # a memory operand (an AArch64 lane like `((REG..)).d[0]` is a register)
        words = text.split("[", 1)[0].split()
        width = MEM_WIDTHS.get(words[0].lower()) if words else None
        return OperandTemplate(OperandKind.MEM, text, slots, mem_width=width)
    if slots and slots[0].kind == "REG":
        rest = _PLACEHOLDER_BODY.sub("", text).strip().strip("{}")
        return OperandTemplate(OperandKind.REG, text, slots, arrangement=rest or None)
    if slots and slots[0].kind in ("IMM", "DIV"):
        kind = OperandKind.IMM if slots[0].kind == "IMM" else OperandKind.REG
        return OperandTemplate(kind, text, slots)
    # fixed tokens: immediates written out (#3, 0x53, -3) and shift/extend words
    if re.fullmatch(r"#?-?(0x[0-9a-fA-F]+|[0-9][0-9.e+]*)", text):
        return OperandTemplate(OperandKind.IMM, text, slots)
    return OperandTemplate(OperandKind.LITERAL, text, slots)


def form_isa(name: str) -> str:
    """The ISA a PMEvo form string is spelled for: AArch64 forms start with `_` (PMEvo's
    artifact spells them so), every other form is x86's. The one place that reads a form's ISA
    from its spelling (each ISA's owns_form asks it)."""
    return "aarch64" if name.startswith("_") else "x86"


@lru_cache(maxsize=8192)          # the matcher, kinds and views parse the same forms
def parse_form(name: str, isa: str | None = None) -> FormTemplate:
    """Parse a PMEvo form string. Raises ValueError on malformed placeholders."""
    if isa is None:
        isa = form_isa(name)
    text = form_text(name)
    # the operand list: DIV placeholders inside `[...]` of a memory operand stay there
    head, _, rest = text.partition(" ")
    operands = tuple(_operand(t) for t in split_operands(rest)) if rest else ()
    return FormTemplate(name, isa, head.lower(), operands)
