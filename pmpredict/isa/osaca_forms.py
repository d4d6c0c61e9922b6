"""OSACA's vocabulary of instruction forms: the one module that spells forms OSACA's way.

OSACA's machine files describe an instruction form by a name and a list of operand
mappings (``{class: register, name: gpr}``, ``{class: memory, base: gpr, offset: imd,
index: ~, scale: 1}``, ``{class: immediate, imd: int}``...). pmpredict meets that vocabulary
in three places, and all of them go through here:

* importing a foreign file (pmpredict.formats.osaca): each entry becomes a form named
  ``osaca:<mnemonic>[ <operand>,<operand>,...]`` (foreign_form_name), operands in the
  file's order, spelled ``gpr`` / ``xmm`` / ``ymm`` ... (x86 register class or fixed name),
  ``x`` / ``w`` / ``d`` / ``v.d`` ... (AArch64 prefix[.shape]), ``imd:int`` /
  ``imd:double`` (immediate), ``mem(base,offset,index,scale)`` (``~`` = none; AArch64 adds
  ``,pre`` / ``,post``), ``id`` (identifier), ``cond:CC``, ``flag:NAME``, ``prfop``.
  Example: ``osaca:add imd:int,gpr``, ``osaca:ldr q,mem(x,imd,~,1,post)``;
* matching such forms against assembly: pmpredict.asm.match reads them back with
  parse_foreign_form_name and fits an instruction's operands to them with OSACA's rules
  (osaca_pattern, osaca_fits, here);
* exporting our PMEvo forms (pmpredict.exporters.osaca): osaca_identity gives the name and
  operand mappings OSACA looks a form up by.

The per-ISA facts (register style, operand order, memory base class, mnemonic stems...) are
the `osaca` attribute of the ISA's semantics (pmpredict.isa.base.OsacaVocabulary).
"""

from __future__ import annotations

import re

from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form

FOREIGN_PREFIX = "osaca:"
_X86_VECTOR = {64: "mm", 128: "xmm", 256: "ymm", 512: "zmm"}
_AARCH64_SCALAR = {8: "b", 16: "h", 32: "s", 64: "d", 128: "q"}
# shift / extend words OSACA's AArch64 parser folds into the preceding operand
_AARCH64_FOLDED = {"lsl", "lsr", "asr", "ror", "sxtw", "uxtw", "uxtb"}
_TOKEN = re.compile(r"mem\([^)]*\)|[^,]+")
# what a mnemonic and an operand token of a foreign form name may contain, so that the name
# reads back (parse_foreign_form_name) to the same entry and every exporter can write it
_MNEMONIC = re.compile(r"[A-Za-z0-9_.{}]+")
_WORD = r"[A-Za-z0-9_.*~:+-]+"
_OPERAND = re.compile(rf"{_WORD}|mem\({_WORD}(,{_WORD})*\)")


def is_foreign(form: str) -> bool:
    """A form imported from a foreign OSACA file (named by foreign_form_name)."""
    return form.startswith(FOREIGN_PREFIX)


def operand_tokens(text: str) -> list[str]:
    """The operand tokens of the operand part of a foreign form name."""
    return _TOKEN.findall(text)


def foreign_entry_problem(mnemonic, operands) -> str | None:
    """Why an entry of a foreign file cannot be a form (its name would not read back), or None.

    OSACA's own files have such entries (`REPE CMPSB`: OSACA's parser never produces a
    name with a space, so OSACA never uses them either)."""
    if not isinstance(mnemonic, str) or not _MNEMONIC.fullmatch(mnemonic):
        return f"name {mnemonic!r} is not one word of letters, digits and . _ {{ }}"
    for op in operands:
        token = operand_token(op)
        if not _OPERAND.fullmatch(token):
            return f"operand {token!r} cannot be spelled in a form name"
    return None


def _spell(value) -> str:
    if value is None:
        return "~"
    if isinstance(value, dict):          # a register given as {name: ...} / {prefix: ...}
        return str(value.get("prefix") or value.get("name") or "*")
    return str(value)


def operand_token(op: dict) -> str:
    """One OSACA operand (a dict from the YAML) in the foreign form-name spelling."""
    cls = op.get("class")
    if cls == "register":
        if op.get("prefix") is not None:
            token = str(op["prefix"])
            if op.get("shape") is not None:
                token += "." + str(op["shape"])
            return token
        return str(op.get("name", "*"))
    if cls == "immediate":
        return f"imd:{op.get('imd', 'int')}"
    if cls == "memory":
        parts = [_spell(op.get(k)) for k in ("base", "offset", "index", "scale")]
        if op.get("pre_indexed"):
            parts.append("pre")
        if op.get("post_indexed"):
            parts.append("post")
        return "mem(" + ",".join(parts) + ")"
    if cls == "identifier":
        return "id"
    if cls == "condition":
        return f"cond:{str(op.get('ccode', '*')).upper()}"
    if cls == "flag":
        return f"flag:{op.get('name', '*')}"
    if cls == "prfop":
        return "prfop"
    return str(cls)


def foreign_form_name(mnemonic: str, operands) -> str:
    ops = ",".join(operand_token(o) for o in operands)
    return FOREIGN_PREFIX + mnemonic.lower() + (" " + ops if ops else "")


def _token_value(text: str):
    if text == "~":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def parse_foreign_form_name(form: str, isa: str) -> tuple[str, list[dict]]:
    """Inverse of foreign_form_name: (mnemonic, OSACA operand dicts)."""
    if not form.startswith(FOREIGN_PREFIX):
        raise ValueError(f"not a foreign OSACA form name: {form!r}")
    vocab = semantics.get(isa).osaca
    body = form[len(FOREIGN_PREFIX):]
    mnemonic, _, rest = body.partition(" ")
    ops = []
    for token in operand_tokens(rest):
        if token.startswith("mem("):
            parts = token[4:-1].split(",")
            op = {"class": "memory", "base": _token_value(parts[0]), "offset": _token_value(parts[1]),
                  "index": _token_value(parts[2]), "scale": _token_value(parts[3])}
            if vocab.indexed_writeback:
                op["pre_indexed"] = "pre" in parts[4:]
                op["post_indexed"] = "post" in parts[4:]
            ops.append(op)
        elif token.startswith("imd:"):
            ops.append({"class": "immediate", "imd": token[4:]})
        elif token == "id":
            ops.append({"class": "identifier"})
        elif token.startswith("cond:"):
            ops.append({"class": "condition", "ccode": token[5:]})
        elif token.startswith("flag:"):
            ops.append({"class": "flag", "name": token[5:]})
        elif token == "prfop":
            ops.append({"class": "prfop"})
        elif vocab.register_style == "prefix":
            prefix, _, shape = token.partition(".")
            op = {"class": "register", "prefix": prefix}
            if shape:
                op["shape"] = shape
            ops.append(op)
        else:
            ops.append({"class": "register", "name": token})
    return mnemonic, ops



# --- our forms in OSACA's vocabulary ---------------------------------------------------

class UnsupportedForm(ValueError):
    """A form whose operands have no OSACA spelling (listed in a comment, not exported)."""


# --- operands ------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\(\(([^()]*)\)\)")


def _memory(text: str, vocab) -> dict:
    inner = text[text.index("[") + 1:text.rindex("]")]
    base = offset = index = None
    scale = 1
    terms = [t.strip() for t in re.split(r"[+,]", inner) if t.strip()]
    for term in terms:
        m = re.fullmatch(r"(\d+)\s*\*\s*\(\(DIV:\d+\)\)|\(\(DIV:\d+\)\)\s*\*\s*(\d+)", term)
        if m:
            index, scale = "gpr", int(m.group(1) or m.group(2))
        elif re.fullmatch(r"\(\(MEM:\d+\)\)", term):
            base = vocab.memory_base
        elif re.fullmatch(r"\(\(DIV:\d+\)\)", term):
            index = "gpr"
        elif re.fullmatch(r"\(\((MIMM|IMM):\d+\)\)|#?-?(0x[0-9a-fA-F]+|\d+)", term):
            offset = "imd"
        else:
            raise UnsupportedForm(f"memory term {term!r}")
    op = {"class": "memory", "base": base, "offset": offset, "index": index, "scale": scale}
    if vocab.indexed_writeback:
        op.update(pre_indexed=False, post_indexed=False)
    return op


def _immediate(text: str, mnemonic: str = "") -> dict:
    body = text.lstrip("#")
    is_float = "." in body or ("e" in body.lower() and not body.lower().startswith(("0x", "-0x")))
    # fcmeq/fcmgt/... against zero: assemblers print the zero as #0.0, which OSACA reads as double
    is_float = is_float or (mnemonic.startswith("fcm") and body in ("0", "0.0"))
    return {"class": "immediate", "imd": "double" if is_float else "int"}


def _register_by_name(o, vocab) -> dict:
    """x86: `gpr`, or the vector register's name without digits."""
    ph = o.placeholders[0]
    if ph.kind == "DIV" or ph.reg_class == "G":
        return {"class": "register", "name": vocab.any_gpr}
    name = _X86_VECTOR.get(ph.width)
    if name is None:
        raise UnsupportedForm(f"x86 vector register of width {ph.width}")
    return {"class": "register", "name": name}


def _register_by_prefix(o, vocab) -> dict:
    """AArch64: the prefix (w, x, b..q, v) and, for a vector, the element shape."""
    ph = o.placeholders[0]
    if ph.reg_class == "G" or ph.kind == "DIV":
        return {"class": "register", "prefix": "w" if ph.width == 32 else "x"}
    if ph.width is None:                       # VEC: v register, element type from the arrangement
        arr = o.arrangement or _PLACEHOLDER.sub("", o.text)
        m = re.search(r"\.\d*([bhsdq])", arr)
        if not m:
            raise UnsupportedForm(f"vector register without an arrangement: {o.text!r}")
        return {"class": "register", "prefix": "v", "shape": m.group(1)}
    prefix = _AARCH64_SCALAR.get(ph.width)
    if prefix is None:
        raise UnsupportedForm(f"AArch64 register of width {ph.width}")
    return {"class": "register", "prefix": prefix}


def _aarch64_literal(text: str) -> list[dict]:
    """Shift / extend words: folded, or an identifier (+ an immediate amount), as OSACA parses."""
    words = text.split()
    if words[0].lower() in _AARCH64_FOLDED:
        return []
    out = [{"class": "identifier"}]
    if len(words) > 1:
        out.append(_immediate(words[1]))
    return out


_REGISTERS = {"name": _register_by_name, "prefix": _register_by_prefix}


def osaca_operands(template) -> list[dict]:
    """OSACA operand classes of a parsed form, in OSACA's order (AT&T on x86)."""
    isa = semantics.get(template.isa)
    vocab = isa.osaca
    ops: list[dict] = []
    for o in template.operands:
        if o.kind == "mem":
            ops.append(_memory(o.text, vocab))
        elif o.kind == "reg":
            ops.append(_REGISTERS[vocab.register_style](o, vocab))
        elif o.kind == "imm":
            ops.append(_immediate(o.text, template.mnemonic))
        elif vocab.words_are_identifiers:
            ops.extend(_aarch64_literal(o.text))
        elif isa.register_family(o.text.strip().lower()) is not None:
            # a fixed register (shl r64, cl): OSACA matches it by name
            ops.append({"class": "register", "name": o.text.strip().lower()})
        else:
            raise UnsupportedForm(f"operand {o.text!r}")
    return list(reversed(ops)) if vocab.att_order else ops


def osaca_mnemonic(template) -> str:
    """The name OSACA looks the form up by: AT&T stems (movzx r, m8 -> movzb) and the
    64-bit-immediate spelling (mov r64, imm64 -> movabs) where the ISA has them."""
    name = template.mnemonic.lower()
    vocab = semantics.get(template.isa).osaca
    if name in vocab.mnemonic_stems:
        src = template.operands[-1]
        return vocab.mnemonic_stems[name].get(src.width, name)
    if name in vocab.wide_immediate_names and template.operands[-1].kind == "imm" \
            and template.operands[-1].width == 64:
        return vocab.wide_immediate_names[name]
    return name


def osaca_identity(form: str, isa: str) -> tuple[str, list[dict]]:
    """(name, operands) of one of our forms, or of a foreign form imported from OSACA."""
    if form.startswith(FOREIGN_PREFIX):
        return parse_foreign_form_name(form, isa)
    t = parse_form(form, isa)
    return osaca_mnemonic(t), osaca_operands(t)


# --- matching: OSACA's rules for an instruction's operands against an entry's ------------
#
# The instruction's operands are seen as OSACA's parser sees them (the osaca_view_* of isa/x86/keys.py and isa/aarch64/keys.py:
# ("r", name or prefix, ...), ("m", base, offset, index, scale, pre, post), ("i", kind),
# ("id",), ("cond", cc), ("prfop",)); an entry's operand mappings become patterns here.

WILD = "*"
_X86_CLASSES = {"mm", "xmm", "ymm", "zmm", "k"}


def osaca_pattern(op: dict, vocab) -> tuple:
    """One OSACA operand dict (parse_foreign_form_name) -> a pattern for osaca_fits."""
    cls = op.get("class")
    if cls == "register":
        if vocab.register_style == "prefix":
            return ("R", op.get("prefix"), op.get("shape"))
        return ("R", op.get("name"))
    if cls == "immediate":
        return ("I", op.get("imd"))
    if cls == "memory":
        pre, post = op.get("pre_indexed", False), op.get("post_indexed", False)
        if pre and post:                # the name spells OSACA's `'*'` for both as "pre,post"
            pre = post = WILD
        return ("M", op.get("base"), op.get("offset"), op.get("index"), op.get("scale"), pre, post)
    if cls == "identifier":
        return ("ID",)
    if cls == "condition":
        return ("C", str(op.get("ccode")).upper())
    if cls == "prfop":
        return ("P",)
    return ("NEVER", cls)               # flags and unknown classes: OSACA never matches them


def _exact(pattern_value, user_value) -> int | None:
    """1 for an equal value, 0 for the wildcard, None for a mismatch."""
    if pattern_value == WILD:
        return 0
    return 1 if pattern_value == user_value else None


def _fits_register_prefix(u: tuple, f: tuple, vocab) -> int | None:
    """AArch64 spelling: prefix and element shape."""
    prefix = _exact(f[1], u[1])
    if prefix is None:
        return None
    if u[2] is None:                    # OSACA: a register without shape fits any entry shape
        return prefix
    if f[2] is None:
        return None
    shape = _exact(f[2], u[2])
    return None if shape is None else prefix + shape


def _fits_register_name(u: tuple, f: tuple, vocab) -> int | None:
    """x86 spelling: the register's name without digits, or a class."""
    if f[1] == WILD:
        return 0
    if f[1] == vocab.any_gpr:           # any general-purpose register, any width
        return 1 if u[2] == "G" else None
    if u[1] == f[1]:                    # xmm / ymm / zmm / k / mm, or a fixed name (cl)
        return 2
    # uops.info-imported entries name a class by its first register (`mm0`); OSACA never
    # matches them (it strips the digits of the instruction's register only): we do
    cls = f[1].rstrip("0123456789")
    return 2 if cls in _X86_CLASSES and cls == u[1] else None


def _fits_offset(f, u) -> int | None:
    if f == WILD:
        return 0
    if f is None:                       # OSACA: no offset, or a written 0 (x86)
        return 1 if u in (None, "imd0") else None
    if f == "imd":
        return 1 if u in ("imd", "imd0") else None
    return 1 if f == u else None


_REGISTER_FITS = {"prefix": _fits_register_prefix, "name": _fits_register_name}


def _fits_memory(u: tuple, f: tuple, vocab) -> int | None:
    _, base, offset, index, scale, pre, post = u
    total = 0
    for fv, uv in ((f[1], base), (f[3], index)):
        if fv == WILD:
            continue
        if fv is None or uv is None:
            if fv is not uv:
                return None
        elif fv != uv and fv != vocab.any_gpr:
            return None
        total += 1
    part = _fits_offset(f[2], offset)
    if part is None:
        return None
    total += part
    if f[4] != WILD:
        # OSACA: equal scales, or both scaled (!= 1)
        if not (f[4] == scale or (f[4] != 1 and scale != 1)):
            return None
        total += 1
    if vocab.indexed_writeback:
        for fv, uv in ((f[5], pre), (f[6], post)):
            if fv == WILD:
                continue
            if bool(fv) != uv:
                return None
            total += 1
    return total


def _fits_immediate(u: tuple, f: tuple, vocab) -> int | None:
    if vocab.any_immediate:             # OSACA: any x86 immediate fits `imd: int`
        return 1
    if f[1] == WILD:
        return 0
    if f[1] == "int":
        return 1 if u[1] == "int" else None
    return 1 if u[1] == "double" else None        # imd: double / float: a floating-point literal


def osaca_fits(u: tuple, f: tuple, vocab) -> int | None:
    """Specificity (>= 0) with which user operand u (OSACA view) fits pattern f, else None.
    `vocab`: the OsacaVocabulary of the ISA."""
    fk, uk = f[0], u[0]
    if uk == "any-reg":                 # a memory operand substituted as OSACA does (hidden load)
        return 0 if fk == "R" else None
    if fk == "R":
        return _REGISTER_FITS[vocab.register_style](u, f, vocab) if uk == "r" else None
    if fk == "M":
        return _fits_memory(u, f, vocab) if uk == "m" else None
    if fk == "I":
        return _fits_immediate(u, f, vocab) if uk == "i" else None
    if fk == "ID":
        return 1 if uk == "id" else None
    if fk == "C":
        return _exact(f[1], u[1]) if uk == "cond" else None
    if fk == "P":
        return 1 if uk == "prfop" else None
    return None
