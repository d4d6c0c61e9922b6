"""Match normalised instructions (FormKey) against a model's forms.

Both sides meet in the same vocabulary: the model's form strings (PMEvo
spelling, parsed by pmpredict.isa.forms.parse_form) become operand *patterns*, the
user's instruction a FormKey (normalize.py). Candidates share the mnemonic and
the operand count; each operand pair is either incompatible or costs a penalty.
The winner is the candidate with (no approximation, lowest penalty, form name)
smallest, so the choice is deterministic:

  * x86 immediates: the narrowest immediate form the value fits (imm8 before imm32);
  * x86 memory of unknown width (AT&T without a size suffix): any width, the one
    equal to the widest register operand first;
  * `lea`: base / index presence must agree; no displacement before disp8 before disp32;
  * AArch64 literal immediates and lanes: equal value first, else any; shift / extend
    amounts: equal first, then the nearest amount, then a form without an amount;
  * approximate matches (reported as such, with the reason) only when no exact
    form exists: a general-purpose register of another width (`w1` vs the model's
    `x` form, `eax` vs `rax`), an AArch64 addressing mode other than [base, #imm],
    AVX-512 masking.

Forms of foreign OSACA files (`osaca:<mnemonic> <op>,...`, pmpredict.formats.osaca) are a
second source of patterns, matched with OSACA's own rules against the key's OSACA view
(each ISA's keys.osaca_view_*): see osaca_forms.osaca_fits. Among several fitting OSACA forms the most
specific wins (fewest `*` wildcards / generic classes), then the first mnemonic tried
(Intel name, then the name as written, then without AT&T suffix), then file order
(OSACA itself takes the first fitting entry in file order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from pmpredict.isa import semantics
from pmpredict.isa.osaca_forms import (FOREIGN_PREFIX, is_foreign, operand_tokens, osaca_fits,
                                       osaca_pattern, parse_foreign_form_name)
from pmpredict.isa.forms import is_split_variant, parse_form
from pmpredict.isa.keys import FormKey, render_key

class Approximation(str, Enum):
    """Why a match is approximate; the value is the sentence a report prints."""
    GPR = "general-purpose register width differs"
    ADDR = "addressing mode differs (model has [base, #imm])"
    MASK = "AVX-512 masking/broadcast ignored"
    LOAD = "no form with this memory operand: register form used, memory access not counted"

    __str__ = str.__str__
    __format__ = str.__format__


APPROX_GPR, APPROX_ADDR, APPROX_MASK, APPROX_LOAD = (Approximation.GPR, Approximation.ADDR,
                                                     Approximation.MASK, Approximation.LOAD)


@dataclass(frozen=True)
class Match:
    key: FormKey
    form: str | None                  # the model's form string, None if unmatched
    approx: tuple[Approximation, ...] = ()   # why the match is approximate (empty: exact)
    reason: str = ""                  # why it is unmatched

    @property
    def matched(self) -> bool:
        return self.form is not None


# --- model side -------------------------------------------------------------------------

_SHIFT_LIT = re.compile(r"(lsl|lsr|asr|ror|msl|[su]xt[bhwx])(?:\s+#?(\d+))?$", re.IGNORECASE)


def _number(text: str):
    t = text.lstrip("#")
    try:
        return int(t, 0)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return None


def form_pattern(template) -> tuple:
    """FormTemplate -> (mnemonic, operand patterns) in the FormKey vocabulary.

    A foreign OSACA form keeps its own operand tokens (kind "osaca"), for display."""
    if is_foreign(template.name):
        mnemonic, _, rest = template.name.partition(" ")
        return mnemonic, tuple(("osaca", t) for t in operand_tokens(rest))
    pats = []
    isa = semantics.get(template.isa)
    for op in template.operands:
        phs = op.placeholders
        if op.kind == "reg":
            ph = phs[0]
            if ph.width is None:                   # AArch64 VEC: the arrangement says it
                arr = (op.arrangement or "").lstrip(".")
                if op.text.lstrip().startswith("{"):
                    pats.append(("vlist", arr, 1))
                elif "[" in arr:
                    elem, lane = arr[:-1].split("[")
                    pats.append(("velem", elem, int(lane)))
                else:
                    pats.append(("vreg", arr))
            else:
                pats.append(("reg", ph.reg_class if ph.kind == "REG" else "G", ph.width))
        elif op.kind == "mem":
            if isa.memory_operands_by_mode:        # forms address [base, #imm]
                pats.append(("amem", "imm"))
            elif op.mem_width is not None:
                pats.append(("mem", op.mem_width))
            else:                                  # lea: the address shape is the operand
                kinds = [p.kind for p in phs]
                disp = 8 if "IMM" in kinds else (32 if "MIMM" in kinds else None)
                pats.append(("addr", "MEM" in kinds, "DIV" in kinds, disp))
        elif op.kind == "imm":
            if phs:
                pats.append(("imm_w", phs[0].width))
            else:
                pats.append(("imm_lit", _number(op.text)))
        else:
            m = _SHIFT_LIT.match(op.text.strip())
            if isa.register_family(op.text.strip().lower()) is not None:
                pats.append(("fixreg", op.text.strip().lower()))       # `SHL_..,_cl`
            elif m:
                pats.append(("shift", m.group(1).lower(), int(m.group(2)) if m.group(2) else None))
            else:
                pats.append(("lit", op.text.strip().lower()))
    return template.mnemonic, tuple(pats)


def _fits(value: int, width: int) -> bool:
    # signed range, or unsigned for an operand of exactly that width (`mov byte ptr [..], 200`)
    return -(1 << (width - 1)) <= value < (1 << width)


# How a user operand (normalize.FormKey vocabulary) fits a form's operand pattern, one rule
# per pattern kind: (penalty, approximation note or None), or None when it does not fit.

def _fit_reg(u, f, hint, allow_approx):
    if u[0] != "reg" or u[1] != f[1]:
        return None
    if u[2] == f[2]:
        return 0.0, None
    if u[1] == "G" and allow_approx and u[2] is not None and f[2] is not None:
        return abs(f[2] - u[2]) / 64.0, APPROX_GPR
    return None


def _fit_fixreg(u, f, hint, allow_approx):
    return (0.0, None) if u[0] == "reg" and len(u) > 3 and u[3] == f[1] else None


def _fit_vreg(u, f, hint, allow_approx):
    return (0.0, None) if u[0] == "vreg" and u[1] == f[1] else None


def _fit_velem(u, f, hint, allow_approx):
    if u[0] != "velem" or u[1] != f[1]:
        return None
    return (0.0 if u[2] == f[2] else 0.5), None


def _fit_vlist(u, f, hint, allow_approx):
    return (0.0, None) if u[0] == "vlist" and u[1] == f[1] and u[2] == f[2] else None


def _fit_mem(u, f, hint, allow_approx):
    if u[0] != "mem":
        return None
    if u[1] is None:
        return (0.0 if f[1] == hint else 1.0), None
    return (0.0, None) if u[1] == f[1] else None


def _fit_addr(u, f, hint, allow_approx):
    if u[0] != "addr" or u[1] != f[1] or u[2] != f[2]:
        return None
    disp = u[3]
    if f[3] is None:                  # no displacement: not one encoded as 0 (an rbp base)
        return (0.0, None) if disp == 0 and not (len(u) > 4 and u[4]) else None
    if f[3] == 8:
        return (1.0, None) if disp is not None and -128 <= disp < 128 else None
    return 2.0, None


def _fit_amem(u, f, hint, allow_approx):
    if u[0] != "amem":
        return None
    if u[1] in ("base", "imm"):
        return 0.0, None
    return (1.0, APPROX_ADDR) if allow_approx else None


def _fit_imm_w(u, f, hint, allow_approx):
    if u[0] != "imm":
        return None
    v = u[1]
    if v is None or isinstance(v, float):
        return (f[1] / 8.0, None) if f[1] >= 32 else None
    return (f[1] / 8.0, None) if _fits(v, f[1]) else None


def _fit_imm_lit(u, f, hint, allow_approx):
    if u[0] != "imm":
        return None
    if u[1] is None or f[1] is None:
        return 1.0, None
    if isinstance(u[1], float) != isinstance(f[1], float):
        return 2.0, None
    return (0.0 if u[1] == f[1] else 1.0), None


def _fit_shift(u, f, hint, allow_approx):
    if u[0] != "shift" or u[1] != f[1]:
        return None
    if u[2] == f[2]:
        return 0.0, None
    if u[2] is None or f[2] is None:
        return 2.0, None                  # an amount written vs none: worse than another amount
    return 1.0 + abs(u[2] - f[2]) / 100.0, None


_FIT = {"reg": _fit_reg, "fixreg": _fit_fixreg, "vreg": _fit_vreg, "velem": _fit_velem,
        "vlist": _fit_vlist, "mem": _fit_mem, "addr": _fit_addr, "amem": _fit_amem,
        "imm_w": _fit_imm_w, "imm_lit": _fit_imm_lit, "shift": _fit_shift}


class FormMatcher:
    """Index of a model's forms by (mnemonic, operand count); matches FormKeys."""

    def __init__(self, forms, isa: str, allow_approx: bool = True, index: tuple | None = None):
        """index: the `index_of` these forms made earlier (the same forms and ISA), shared:
        it is only read."""
        self.isa = isa
        self.osaca = semantics.get(isa).osaca
        self.allow_approx = allow_approx
        # (mnemonic, operand count) -> [(form, operand patterns, their fit rules)]
        self.index: dict[tuple[str, int], list[tuple[str, tuple, tuple]]] = {}
        self.by_mnemonic: dict[str, list[str]] = {}
        # foreign OSACA forms, in the model's (= the file's) order: (mnemonic, count) -> forms
        self.osaca_index: dict[tuple[str, int], list[tuple[int, str, tuple]]] = {}
        self.osaca_by_mnemonic: dict[str, list[str]] = {}
        self._cache: dict[FormKey, Match] = {}
        self._reasons: dict[tuple, str] = {}
        if index is not None:
            self.index, self.by_mnemonic, self.osaca_index, self.osaca_by_mnemonic = index
            return
        for order, name in enumerate(forms):
            if is_foreign(name):
                self._add_osaca(order, name)
        for name in sorted(forms):
            if is_foreign(name) or is_split_variant(name):
                continue                      # a split variant stands for no instruction text
            try:
                template = parse_form(name, isa)
            except ValueError:
                continue                      # a form we cannot read is simply never matched
            mnemonic, pats = form_pattern(template)
            rules = tuple(_FIT.get(f[0]) for f in pats)
            if None not in rules:             # a pattern without a rule fits nothing
                self.index.setdefault((mnemonic, len(pats)), []).append((name, pats, rules))
            self.by_mnemonic.setdefault(mnemonic, []).append(render_key(mnemonic, pats))

    def index_of(self) -> tuple:
        """What the constructor made of the forms, for another matcher of the same forms."""
        return self.index, self.by_mnemonic, self.osaca_index, self.osaca_by_mnemonic

    def _add_osaca(self, order: int, name: str) -> None:
        try:
            mnemonic, ops = parse_foreign_form_name(name, self.isa)
        except (ValueError, IndexError):
            return                            # a name we cannot read is simply never matched
        pats = tuple(osaca_pattern(op, self.osaca) for op in ops)
        self.osaca_index.setdefault((mnemonic, len(pats)), []).append((order, name, pats))
        self.osaca_by_mnemonic.setdefault(mnemonic, []).append(name[len(FOREIGN_PREFIX):])

    def match(self, key: FormKey) -> Match:
        cache_key = (key, key.osaca)          # the OSACA view is not part of FormKey equality
        hit = self._cache.get(cache_key)
        if hit is None:
            hit = self._cache[cache_key] = self._match(key)
        return hit

    def _match_osaca(self, key: FormKey) -> Match | None:
        if not self.osaca_index or not key.osaca:
            return None
        names, ops = key.osaca
        notes = []
        best = self._best_osaca(names, ops)
        if best is None and self.allow_approx and "lea" not in names \
                and any(op[0] == "m" for op in ops):
            # OSACA's fallback: the register form of the instruction, the memory operand
            # replaced by a register wildcard, plus the file's load/store throughput, which
            # the import does not carry: so the memory access is not counted (flagged)
            best = self._best_osaca(names, tuple(("any-reg",) if op[0] == "m" else op for op in ops))
            notes.append(APPROX_LOAD)
        if best is None:
            return None
        if key.masked:
            if not self.allow_approx:
                return None
            notes.append(APPROX_MASK)
        return Match(key, best, tuple(notes))

    def _best_osaca(self, names, ops) -> str | None:
        ranked = self._rank_osaca(names, ops)
        return ranked[0][1] if ranked else None

    def _rank_osaca(self, names, ops) -> list[tuple[tuple, str]]:
        """Every fitting OSACA form with its sort key: most specific first (the negated
        specificity), then the earlier mnemonic tried, then file order."""
        ranked = []
        for rank, mnemonic in enumerate(names):
            for order, name, pats in self.osaca_index.get((mnemonic, len(ops)), []):
                total = 0
                for u, f in zip(ops, pats):
                    r = osaca_fits(u, f, self.osaca)
                    if r is None:
                        break
                    total += r
                else:
                    ranked.append(((-total, rank, order), name))
        return sorted(ranked)

    def osaca_candidates(self, key: FormKey) -> list[tuple[tuple, str]]:
        """The OSACA forms that fit the key exactly, best first (for tests and explanations)."""
        return self._rank_osaca(*key.osaca) if key.osaca else []

    def _unmatched_reason(self, key: FormKey) -> str:
        names = key.osaca[0] if key.osaca else ()
        reason = self._reasons.get((key.mnemonic, names))
        if reason is None:
            reason = self._reasons[key.mnemonic, names] = self._reason(key.mnemonic, names)
        return reason

    def _reason(self, mnemonic: str, osaca_names: tuple) -> str:
        known = list(self.by_mnemonic.get(mnemonic, []))
        for name in osaca_names:
            known += self.osaca_by_mnemonic.get(name, [])
        if not known:
            return f"the model has no `{mnemonic}` form"
        shown = sorted(set(known))
        text = "; ".join(shown[:4]) + ("; ..." if len(shown) > 4 else "")
        return f"the model's `{mnemonic}` forms take other operands ({text})"

    def _hint(self, key: FormKey) -> int | None:
        vec = [o[2] for o in key.operands if o[0] == "reg" and o[1] == "V"]
        if vec:
            return max(vec)
        gpr = [o[2] for o in key.operands if o[0] == "reg" and o[1] == "G"]
        return max(gpr) if gpr else None

    def _match(self, key: FormKey) -> Match:
        candidates = self.index.get((key.mnemonic, len(key.operands)), [])
        hint = self._hint(key)
        best = None
        allow_approx = self.allow_approx
        for name, pats, rules in candidates:
            total, notes = 0.0, []
            for u, f, rule in zip(key.operands, pats, rules):
                r = rule(u, f, hint, allow_approx)
                if r is None:
                    break
                total += r[0]
                if r[1] and r[1] not in notes:
                    notes.append(r[1])
            else:
                if key.masked:
                    if not self.allow_approx:
                        continue
                    notes.append(APPROX_MASK)
                score = (len(notes) > 0, total, name)
                if best is None or score < best[0]:
                    best = (score, name, tuple(notes))
        if best is not None:
            return Match(key, best[1], best[2])
        foreign = self._match_osaca(key)
        if foreign is not None:
            return foreign
        return Match(key, None, (), self._unmatched_reason(key))
