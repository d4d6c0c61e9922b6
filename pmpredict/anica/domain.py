"""The abstract domain of AnICA (sections 8.1.2 and 8.1.4 of the dissertation).

An AbstractBlock is a sequence of AbstractInstructions and aliasing constraints between
operand slots. An AbstractInstruction constrains instruction schemes feature by feature; each
feature is TOP (no constraint) or a value of its feature abstraction, and each abstraction
orders its values from specific to general:

    form        singleton: one form string                          -> TOP
    mnemonic    edit distance: (base, d), mnemonics within d edits  -> (base, d+1) ... -> TOP
                of base, d up to MNEMONIC_MAX_DISTANCE
    category    singleton ("integer", "fp add", "load"...)          -> TOP
    extension   singleton ("base", "sse", "avx", "avx512")          -> TOP
    memory      subset-or-none over {load, store, address}: "none"  -> TOP; a set S: schemes
                whose accesses include S                             -> S minus one element
                                                                       (the empty set is TOP)
    mem_width   singleton: bits of the data access, or "none"       -> TOP
    operands    subset-or-none over operand kinds ("REG:G:64")      like memory

gamma of an abstract instruction is the set of schemes meeting every feature (eq. 8.10), beta
of a scheme its value of every feature (eq. 8.11), and an expansion moves one feature one step
up (eq. 8.12) or drops one aliasing constraint (eq. 8.17).

Aliasing constraints name operand slots positionally: (instruction index, operand index in
form order). A constraint applies to a concrete block only where both slots exist and can
alias (the same alias class: two general-purpose registers, two vector registers, two memory
operands); elsewhere it says nothing (eq. 8.15). So when a feature of an instruction goes to
TOP and the form of a sample changes, the constraint follows the position: it binds whatever
operand sits there if that operand can alias the other one, and is void otherwise. beta records
"must" for every matching pair that aliases and "must-not" for every other matching pair (eq.
8.16): registers alias when they are one family, memory operands when they are spelt the same.

Line-crossing constraints are the memory block mode's analogue for alignment, which, like
aliasing, is a property of a concrete operand and not of a form: per memory slot (instruction
index, operand index), CROSSES (its access touches two cache lines) or WITHIN (one line); a slot
not listed is TOP (either). Such a constraint applies only where the slot exists and is a memory
data access; beta records one for every memory data slot in the memory mode (never in the
standard mode, whose accesses all stay within a line), and an expansion drops one, as it drops
an aliasing constraint.

Constant-base constraints are built the same way for the memory mode's constant bases (a block
that sets a base register to a constant address at its top: concrete.py): per memory slot,
CONSTANT (the block sets the slot's base to its constant) or NOT_CONSTANT (the harness's base,
never written); a slot not listed is TOP. The `mov` that sets a base is no instruction of the
abstract block: like line crossing, constancy is a property of a memory operand's base, so
beta records one for every memory data slot in the memory mode (never in the standard mode),
sampling meets them, subsumption and covering compare them, and an expansion drops one.

Subsumption (8.1.6) comes in two strengths: `subsumes(a, b)` is the domain's order (the same
length, instruction by instruction: gamma(b) within gamma(a)); `covers(a, b)` is Definition
8.7, which the campaign uses: a's instructions map injectively onto b's, in b's order up to a
rotation, gaps allowed (a block rotated, or with unrelated instructions in between, has the
same throughput problem).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, replace
from typing import Sequence

from pmpredict.anica.concrete import (MEMORY, STANDARD_BLOCKS, ConcreteBlock, Pair, Position,
                                      alias_class, alias_pairs, block_values,
                                      constant_base_slots, instantiate, matching,
                                      memory_crossings)
from pmpredict.anica.schemes import Scheme, scheme_of
from pmpredict.isa.forms import OperandKind, parse_form

TOP = None
NONE = "none"                           # subset-or-none: the scheme has no such thing
MUST, MUST_NOT = "must", "must-not"
CROSSES, WITHIN = "crosses", "within"    # a memory access crosses a cache line, or stays in one
# a memory operand's base is set to a constant by the block, or is the harness's
CONSTANT, NOT_CONSTANT = "constant", "not-constant"
MNEMONIC_MAX_DISTANCE = 3               # the dissertation's K for the mnemonic abstraction
# a sampling attempt may fail (greedy register choice, 8.1.5): at most this many failures
# plus SAMPLE_RETRIES_PER_BLOCK per block asked for, then fewer blocks are returned
SAMPLE_RETRIES = 20
SAMPLE_RETRIES_PER_BLOCK = 4

_MEMORY_ACCESS = {"none": NONE, "load": frozenset({"load"}), "store": frozenset({"store"}),
                  "load+store": frozenset({"load", "store"}),
                  "address": frozenset({"address"})}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


# --- feature abstractions ------------------------------------------------------------------

class _Singleton:
    """A value, or TOP."""

    def __init__(self, name: str, read):
        self.name = name
        self.read = read                       # scheme -> its value

    def beta(self, scheme: Scheme):
        return self.read(scheme)

    def admits(self, value, scheme: Scheme) -> bool:
        return value is TOP or self.read(scheme) == value

    def successors(self, value) -> list:
        return [] if value is TOP else [TOP]

    def leq(self, a, b) -> bool:
        """gamma(a) within gamma(b), soundly."""
        return b is TOP or a == b

    def encode(self, value):
        return value

    def decode(self, data):
        return data


class _EditDistance:
    """(base, d): mnemonics within d edits of base; TOP beyond MNEMONIC_MAX_DISTANCE."""
    name = "mnemonic"

    def beta(self, scheme: Scheme):
        return (scheme.mnemonic, 0)

    def admits(self, value, scheme: Scheme) -> bool:
        if value is TOP:
            return True
        base, d = value
        return scheme.mnemonic == base if d == 0 else edit_distance(scheme.mnemonic, base) <= d

    def successors(self, value) -> list:
        if value is TOP:
            return []
        base, d = value
        return [(base, d + 1)] if d < MNEMONIC_MAX_DISTANCE else [TOP]

    def leq(self, a, b) -> bool:
        if b is TOP:
            return True
        if a is TOP:
            return False
        return edit_distance(a[0], b[0]) + a[1] <= b[1]        # the triangle inequality

    def encode(self, value):
        return None if value is TOP else [value[0], value[1]]

    def decode(self, data):
        return None if data is None else (data[0], int(data[1]))


class _SubsetOrNone:
    """NONE (the scheme has none), a set S (the scheme's set includes S), or TOP."""

    def __init__(self, name: str, read):
        self.name = name
        self.read = read                       # scheme -> NONE or a frozenset

    def beta(self, scheme: Scheme):
        return self.read(scheme)

    def admits(self, value, scheme: Scheme) -> bool:
        if value is TOP:
            return True
        have = self.read(scheme)
        if value == NONE:
            return have == NONE
        return have != NONE and value <= have

    def successors(self, value) -> list:
        if value is TOP:
            return []
        if value == NONE:
            return [TOP]
        return [value - {x} or TOP for x in sorted(value)]

    def leq(self, a, b) -> bool:
        if b is TOP:
            return True
        if a is TOP:
            return False
        if a == NONE or b == NONE:
            return a == b
        return b <= a

    def encode(self, value):
        if value is TOP or value == NONE:
            return value
        return sorted(value)

    def decode(self, data):
        if data is None or data == NONE:
            return data
        return frozenset(data)


def _operand_set(scheme: Scheme):
    return frozenset(scheme.operands) if scheme.operands else NONE


FEATURES = (
    _Singleton("form", lambda s: s.form),
    _EditDistance(),
    _Singleton("category", lambda s: s.category),
    _Singleton("extension", lambda s: s.extension),
    _SubsetOrNone("memory", lambda s: _MEMORY_ACCESS[s.memory]),
    _Singleton("mem_width", lambda s: s.mem_width if s.mem_width is not None else NONE),
    _SubsetOrNone("operands", _operand_set),
)
_BY_NAME = {f.name: f for f in FEATURES}
# When only expansions are left that do not change what a block represents, the most specific
# feature goes to TOP first: the result then reads in the most general terms (its mnemonic
# rather than its form, say) and the features it frees may matter again.
LIFT_ORDER = ("form", "operands", "mem_width", "memory", "extension", "category", "mnemonic")


@dataclass(frozen=True)
class AbstractInstruction:
    """Per feature, TOP (None) or a value of its abstraction (see the module docstring)."""
    form: str | None = TOP
    mnemonic: tuple[str, int] | None = TOP
    category: str | None = TOP
    extension: str | None = TOP
    memory: frozenset | str | None = TOP
    mem_width: int | str | None = TOP
    operands: frozenset | str | None = TOP

    def admits(self, scheme: Scheme) -> bool:
        """Whether the scheme is in gamma of this abstract instruction."""
        return all(f.admits(getattr(self, f.name), scheme) for f in FEATURES)

    @property
    def is_top(self) -> bool:
        return all(getattr(self, f.name) is TOP for f in FEATURES)

    def to_json(self) -> dict:
        return {f.name: f.encode(getattr(self, f.name)) for f in FEATURES
                if getattr(self, f.name) is not TOP}

    @classmethod
    def from_json(cls, data: dict) -> "AbstractInstruction":
        return cls(**{name: _BY_NAME[name].decode(value) for name, value in data.items()})


def abstract_instruction(scheme: Scheme) -> AbstractInstruction:
    """beta of one scheme: its value for every feature."""
    return AbstractInstruction(**{f.name: f.beta(scheme) for f in FEATURES})


def _pair(a: Position, b: Position) -> Pair:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class AbstractBlock:
    """Abstract instructions, aliasing constraints ((i, k), (j, l), MUST or MUST_NOT), pairs
    ordered, sorted; a pair not listed is TOP; line-crossing constraints ((i, k), CROSSES or
    WITHIN) and constant-base constraints ((i, k), CONSTANT or NOT_CONSTANT), each sorted; a
    slot not listed is TOP."""
    instructions: tuple[AbstractInstruction, ...]
    aliasing: tuple[tuple[Position, Position, str], ...] = ()
    crossing: tuple[tuple[Position, str], ...] = ()
    constant_base: tuple[tuple[Position, str], ...] = ()

    def __len__(self) -> int:
        return len(self.instructions)

    def relation(self, a: Position, b: Position) -> str | None:
        key = _pair(a, b)
        return next((r for p, q, r in self.aliasing if (p, q) == key), TOP)

    def must(self) -> list[Pair]:
        return [(p, q) for p, q, r in self.aliasing if r == MUST]

    def must_not(self) -> list[Pair]:
        return [(p, q) for p, q, r in self.aliasing if r == MUST_NOT]

    def crossing_of(self, p: Position) -> str | None:
        return next((r for q, r in self.crossing if q == p), TOP)

    def crossing_wanted(self) -> dict[Position, bool]:
        """slot -> whether its access must cross a line (instantiate's `crossing`)."""
        return {p: r == CROSSES for p, r in self.crossing}

    def constant_base_of(self, p: Position) -> str | None:
        return next((r for q, r in self.constant_base if q == p), TOP)

    def constant_wanted(self) -> dict[Position, bool]:
        """slot -> whether its base must be set to a constant (instantiate's `constant`)."""
        return {p: r == CONSTANT for p, r in self.constant_base}

    def to_json(self) -> dict:
        out = {"type": "abstract", "instructions": [ai.to_json() for ai in self.instructions],
               "aliasing": [[list(p), list(q), r] for p, q, r in self.aliasing]}
        if self.crossing:                    # standard-mode blocks read as they always did
            out["crossing"] = [[list(p), r] for p, r in self.crossing]
        if self.constant_base:
            out["constant_base"] = [[list(p), r] for p, r in self.constant_base]
        return out

    @classmethod
    def from_json(cls, data: dict) -> "AbstractBlock":
        return cls(tuple(AbstractInstruction.from_json(d) for d in data["instructions"]),
                   sorted_aliasing((tuple(p), tuple(q), r) for p, q, r in data["aliasing"]),
                   sorted_crossing((tuple(p), r) for p, r in data.get("crossing", ())),
                   sorted_constant_base((tuple(p), r)
                                        for p, r in data.get("constant_base", ())))


def sorted_aliasing(items) -> tuple:
    """Aliasing constraints ((i, k), (j, l), relation) as AbstractBlock keeps them: each pair
    ordered, one relation per pair (the last given), sorted."""
    out = {}
    for p, q, r in items:
        p, q = _pair(tuple(p), tuple(q))
        out[(p, q)] = r
    return tuple(sorted((p, q, r) for (p, q), r in out.items()))


def _sorted_slot_constraints(items, what: str, values: tuple[str, str]) -> tuple:
    out = {}
    for p, r in items:
        if r not in values:
            raise ValueError(f"{what} constraint {r!r}: {values[0]} or {values[1]}")
        out[tuple(p)] = r
    return tuple(sorted(out.items()))


def sorted_crossing(items) -> tuple:
    """Line-crossing constraints ((i, k), CROSSES or WITHIN) as AbstractBlock keeps them: one
    per slot (the last given), sorted."""
    return _sorted_slot_constraints(items, "line-crossing", (CROSSES, WITHIN))


def sorted_constant_base(items) -> tuple:
    """Constant-base constraints ((i, k), CONSTANT or NOT_CONSTANT) as AbstractBlock keeps
    them: one per slot (the last given), sorted."""
    return _sorted_slot_constraints(items, "constant-base", (CONSTANT, NOT_CONSTANT))


# --- beta, gamma ---------------------------------------------------------------------------

def _aliases(x, y) -> bool:
    return x is not None and x == y


def abstract(block: ConcreteBlock, mode: str = STANDARD_BLOCKS) -> AbstractBlock:
    """beta: the most specific abstract block representing `block` (eq. 8.6, 8.16) among the
    blocks of `mode`: in the memory mode, with whether each memory access crosses a line and
    whether each memory operand's base is set to a constant."""
    values = block_values(block)
    aliasing = []
    for a, b in alias_pairs(block.forms):
        same = _aliases(values[a[0]][a[1]], values[b[0]][b[1]])
        aliasing.append((a, b, MUST if same else MUST_NOT))
    crossing = constant = ()
    if mode != STANDARD_BLOCKS:
        crossing = sorted_crossing((p, CROSSES if crosses else WITHIN)
                                   for p, crosses in memory_crossings(block).items())
        constant = sorted_constant_base((p, CONSTANT if is_constant else NOT_CONSTANT)
                                        for p, is_constant in constant_base_slots(block).items())
    return AbstractBlock(tuple(abstract_instruction(scheme_of(f)) for f in block.forms),
                         sorted_aliasing(aliasing), crossing, constant)


def _constraints_hold(abs_block: AbstractBlock, block: ConcreteBlock, values=None) -> bool:
    values = block_values(block) if values is None else values
    for p, q, r in abs_block.aliasing:
        if not matching(block.forms, p, q):
            continue                                   # no such slots, or they cannot alias
        same = _aliases(values[p[0]][p[1]], values[q[0]][q[1]])
        if same != (r == MUST):
            return False
    crossings = memory_crossings(block) if abs_block.crossing else {}
    for p, r in abs_block.crossing:
        if p in crossings and crossings[p] != (r == CROSSES):
            return False                               # (no such memory slot: void)
    constants = constant_base_slots(block) if abs_block.constant_base else {}
    for p, r in abs_block.constant_base:
        if p in constants and constants[p] != (r == CONSTANT):
            return False
    return True


def contains(abs_block: AbstractBlock, block: ConcreteBlock) -> bool:
    """Whether `block` is in gamma(abs_block) (eq. 8.5, 8.15)."""
    if len(abs_block) != len(block):
        return False
    if not all(ai.admits(scheme_of(f)) for ai, f in zip(abs_block.instructions, block.forms)):
        return False
    return _constraints_hold(abs_block, block)


# --- subsumption ---------------------------------------------------------------------------

def instruction_subsumes(a: AbstractInstruction, b: AbstractInstruction) -> bool:
    """gamma(b) within gamma(a), soundly: b's form fixes its one scheme, else feature by feature."""
    if b.form is not TOP:
        return a.admits(scheme_of(b.form))
    return all(f.leq(getattr(b, f.name), getattr(a, f.name)) for f in FEATURES)


def _known_class(ai: AbstractInstruction, operand: int):
    """The alias class of an operand slot when the instruction's form is fixed; "?" if not."""
    return "?" if ai.form is TOP else alias_class(ai.form, operand)


def _never_matching(b: AbstractBlock, p: Position, q: Position) -> bool:
    """Whether slots p and q of b can never be a matching pair in gamma(b) (then a constraint
    on them holds vacuously)."""
    cp = _known_class(b.instructions[p[0]], p[1])
    cq = _known_class(b.instructions[q[0]], q[1])
    return "?" not in (cp, cq) and (cp is None or cp != cq)


def _aliasing_implied(a: AbstractBlock, b: AbstractBlock, mapping: Sequence[int]) -> bool:
    """C3 of Definition 8.7: b constrains the mapped slots at least as a does."""
    for p, q, r in a.aliasing:
        pb, qb = (mapping[p[0]], p[1]), (mapping[q[0]], q[1])
        if b.relation(pb, qb) != r and not _never_matching(b, pb, qb):
            return False
    return True


def _never_memory(b: AbstractBlock, p: Position) -> bool:
    """Whether slot p of b is never a memory data access in gamma(b) (then a line-crossing
    constraint on it holds vacuously)."""
    return _known_class(b.instructions[p[0]], p[1]) not in ("?", MEMORY)


def _memory_slots_implied(constraints, of_b, b: AbstractBlock,
                          mapping: Sequence[int]) -> bool:
    """C3 for a constraint per memory slot (line crossing, constant base): b constrains each
    mapped memory slot as a does (`constraints`: a's; `of_b`: b's for a slot), or b's slot is
    never a memory access (a must-cross in a is implied only by a must-cross in b)."""
    for p, r in constraints:
        pb = (mapping[p[0]], p[1])
        if of_b(pb) != r and not _never_memory(b, pb):
            return False
    return True


def _slots_implied(a: AbstractBlock, b: AbstractBlock, mapping: Sequence[int]) -> bool:
    """C3: every constraint of a on the mapped slots of b."""
    return _aliasing_implied(a, b, mapping) and \
        _memory_slots_implied(a.crossing, b.crossing_of, b, mapping) and \
        _memory_slots_implied(a.constant_base, b.constant_base_of, b, mapping)


def subsumes(a: AbstractBlock, b: AbstractBlock) -> bool:
    """gamma(b) within gamma(a), soundly (a yes is true): the same length, instruction by
    instruction, and every constraint of a also in b (or void there)."""
    if len(a) != len(b):
        return False
    if not all(instruction_subsumes(x, y) for x, y in zip(a.instructions, b.instructions)):
        return False
    return _slots_implied(a, b, range(len(b)))


def covers(a: AbstractBlock, b: AbstractBlock | ConcreteBlock,
           mode: str = STANDARD_BLOCKS) -> bool:
    """Definition 8.7: a subsumes b (a concrete block: its beta in block mode `mode`) up to
    rotation and gaps: an injective map of a's instructions onto b's, in b's order up to a
    rotation (C1, C4), each onto one a's instruction subsumes (C2), b constraining the mapped
    slots as a does (C3)."""
    if isinstance(b, ConcreteBlock):
        b = abstract(b, mode)
    n, m = len(a), len(b)
    if n == 0 or n > m:
        return n == 0
    fits = [[instruction_subsumes(x, y) for y in b.instructions] for x in a.instructions]
    if not all(any(row) for row in fits):
        return False
    for positions in itertools.combinations(range(m), n):
        for start in range(n):
            mapping = [0] * n
            for t, pos in enumerate(positions):
                mapping[(start + t) % n] = pos
            if all(fits[i][mapping[i]] for i in range(n)) and _slots_implied(a, b, mapping):
                return True
    return False


# --- the universe of schemes, gamma as sets --------------------------------------------------

class Universe:
    """The schemes sampling draws from, with gamma of each abstract instruction remembered.
    Functions taking `schemes` accept a list (wrapped once per list object; do not change the
    list afterwards) or a Universe."""

    def __init__(self, schemes: Sequence[Scheme]):
        self.source = schemes
        self.schemes = tuple(schemes)
        self.forms = frozenset(s.form for s in self.schemes)
        self._admitted: dict[AbstractInstruction, tuple[Scheme, ...]] = {}

    def admitted(self, ai: AbstractInstruction) -> tuple[Scheme, ...]:
        """gamma(ai): the schemes it admits, in the universe's order."""
        hit = self._admitted.get(ai)
        if hit is None:
            hit = self._admitted[ai] = tuple(s for s in self.schemes if ai.admits(s))
        return hit

    def classes(self, ai: AbstractInstruction, operand: int) -> frozenset:
        """The alias classes slot `operand` has in the schemes of ai (None left out)."""
        return frozenset(c for s in self.admitted(ai)
                         if (c := alias_class(s.form, operand)) is not None)


    def including(self, forms: Sequence[str]) -> "Universe":
        """This universe, or one with the schemes of `forms` added where it lacks them (a block
        to generalise whose own forms are not among the schemes)."""
        missing = [f for f in dict.fromkeys(forms) if f not in self.forms]
        if not missing:
            return self
        return Universe(self.schemes + tuple(scheme_of(f) for f in missing))


_UNIVERSES: dict[int, Universe] = {}


def universe(schemes) -> Universe:
    if isinstance(schemes, Universe):
        return schemes
    found = _UNIVERSES.get(id(schemes))
    if found is None or found.source is not schemes:
        if len(_UNIVERSES) > 32:
            _UNIVERSES.clear()
        found = _UNIVERSES[id(schemes)] = Universe(schemes)
    return found


def _may_match(u: Universe, block: AbstractBlock, p: Position, q: Position) -> bool:
    """Whether some concretisation of block has slots p and q matching."""
    if p[0] == q[0]:
        return any(alias_class(s.form, p[1]) is not None and
                   alias_class(s.form, p[1]) == alias_class(s.form, q[1])
                   for s in u.admitted(block.instructions[p[0]]))
    return bool(u.classes(block.instructions[p[0]], p[1]) &
                u.classes(block.instructions[q[0]], q[1]))


def _may_be_memory(u: Universe, block: AbstractBlock, p: Position) -> bool:
    """Whether slot p is a memory data access in some concretisation of block."""
    return MEMORY in u.classes(block.instructions[p[0]], p[1])


def same_concretisation(a: AbstractBlock, b: AbstractBlock, schemes) -> bool:
    """Whether a and b represent the same blocks over `schemes`, as far as a cheap check tells
    (True is reliable): equal sets of schemes per instruction, and every constraint on which
    they differ void in both."""
    if len(a) != len(b):
        return False
    u = universe(schemes)
    for x, y in zip(a.instructions, b.instructions):
        if x != y and u.admitted(x) != u.admitted(y):     # both in the universe's order
            return False
    differ = set(a.aliasing) ^ set(b.aliasing)
    if not all(not _may_match(u, a, p, q) and not _may_match(u, b, p, q) for p, q, _ in differ):
        return False
    differ_slots = (set(a.crossing) ^ set(b.crossing)) | \
        (set(a.constant_base) ^ set(b.constant_base))
    return all(not _may_be_memory(u, a, p) and not _may_be_memory(u, b, p)
               for p, _ in differ_slots)


# --- expansions ----------------------------------------------------------------------------

def _encoded(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def expansions(abs_block: AbstractBlock) -> list[tuple[str, AbstractBlock]]:
    """Every one-step generalisation (eq. 8.7, 8.12, 8.17 and its analogues for line crossing
    and constant bases): (name, expanded block). The name identifies the expansion function
    (instruction, feature, from, to; or the constraint)."""
    out = []
    for i, ai in enumerate(abs_block.instructions):
        for f in FEATURES:
            x = getattr(ai, f.name)
            for y in f.successors(x):
                name = f"#{i + 1}.{f.name}: {_encoded(f.encode(x))} -> {_encoded(f.encode(y))}"
                changed = abs_block.instructions[:i] + (replace(ai, **{f.name: y}),) + \
                    abs_block.instructions[i + 1:]
                out.append((name, replace(abs_block, instructions=changed)))
    for n, (p, q, r) in enumerate(abs_block.aliasing):
        name = f"alias {_slot_name(p)} {'=' if r == MUST else '!='} {_slot_name(q)} -> TOP"
        out.append((name, replace(abs_block,
                                  aliasing=abs_block.aliasing[:n] + abs_block.aliasing[n + 1:])))
    for n, (p, r) in enumerate(abs_block.crossing):
        name = f"crossing {_slot_name(p)} {r} -> TOP"
        out.append((name, replace(abs_block,
                                  crossing=abs_block.crossing[:n] + abs_block.crossing[n + 1:])))
    for n, (p, r) in enumerate(abs_block.constant_base):
        name = f"base {_slot_name(p)} {r} -> TOP"
        out.append((name, replace(abs_block, constant_base=abs_block.constant_base[:n] +
                                  abs_block.constant_base[n + 1:])))
    return out


def expansion_feature(name: str) -> str:
    """The feature an expansion (by its name) lifts, "alias", "crossing" or "base" for a
    constraint."""
    for constraint in ("alias", "crossing", "base"):
        if name.startswith(constraint):
            return constraint
    return name.split(":", 1)[0].split(".", 1)[1]


# --- sampling ------------------------------------------------------------------------------

def sample(abs_block: AbstractBlock, schemes, rng, n: int,
           mode: str = STANDARD_BLOCKS) -> list[ConcreteBlock]:
    """Up to n blocks of gamma(abs_block) (8.1.5) in block mode `mode`: per instruction a
    scheme it admits, uniformly, then registers (and places) meeting every constraint that
    applies. Failed attempts are retried a bounded number of times; fewer blocks (none) come
    back when the constraints are hard (or impossible) to meet."""
    u = universe(schemes)
    options = [u.admitted(ai) for ai in abs_block.instructions]
    if not options or not all(options):
        return []
    must, must_not = abs_block.must(), abs_block.must_not()
    crossing, constant = abs_block.crossing_wanted(), abs_block.constant_wanted()
    out: list[ConcreteBlock] = []
    failures, allowed = 0, SAMPLE_RETRIES + SAMPLE_RETRIES_PER_BLOCK * n
    while len(out) < n and failures < allowed:
        forms = [opts[int(rng.integers(len(opts)))].form for opts in options]
        block = instantiate(forms, rng, must, must_not, mode=mode, crossing=crossing,
                            constant=constant)
        if block is None:
            failures += 1
        else:
            out.append(block)
    return out


# --- description and JSON ------------------------------------------------------------------

def _slot_name(p: Position) -> str:
    return f"#{p[0] + 1}.op{p[1] + 1}"


def _operand_text(op) -> str:
    if op.kind is OperandKind.REG:
        ph = op.placeholders[0]
        if ph.kind == "DIV" or ph.reg_class == "G":
            return f"r{ph.width}"
        return {128: "xmm", 256: "ymm", 512: "zmm"}.get(ph.width, f"v{ph.width}")
    if op.kind is OperandKind.MEM:
        return f"m{op.mem_width}" if op.mem_width else "[address]"
    if op.kind is OperandKind.IMM:
        return f"imm{op.width}" if op.placeholders else op.text
    return op.text


def describe_form(form: str) -> str:
    """`add r64, imm8`, `vaddpd ymm, ymm, m256`."""
    try:
        template = parse_form(form)
    except ValueError:
        return form
    ops = ", ".join(_operand_text(op) for op in template.operands)
    return f"{template.mnemonic} {ops}".strip()


def _kind_text(kind: str) -> str:
    parts = kind.split(":")
    if parts[0] == "REG":
        return "r" + parts[2] if parts[1] == "G" else \
            {"128": "xmm", "256": "ymm", "512": "zmm"}.get(parts[2], "v" + parts[2])
    if parts[0] == "MEM":
        return "m" + parts[1]
    if parts[0] == "IMM":
        return "imm" + parts[1]
    return parts[-1].lower()


def describe_instruction(ai: AbstractInstruction) -> str:
    if ai.form is not TOP:
        return describe_form(ai.form)
    words = []
    if ai.mnemonic is not TOP:
        base, d = ai.mnemonic
        # the edit-distance bound of the dissertation's mnemonic feature, said in words
        words.append(base if d == 0 else f"{base} (or {d} letter{'s' if d > 1 else ''} off)")
    else:
        words.append("any")
    if ai.category is not TOP:
        words.append(ai.category)
    if ai.memory is not TOP and ai.memory != NONE:
        words.append("+".join(sorted(ai.memory)))
    if words == ["any"]:
        words.append("instruction")             # "any instruction with cl", not "any with cl"
    if ai.memory == NONE:
        words.append("without memory")
    if ai.mem_width == NONE and ai.memory != NONE:
        words.append("without memory data")
    elif ai.mem_width is not TOP and ai.mem_width != NONE:
        words.append(f"of {ai.mem_width // 8} bytes")
    if ai.extension is not TOP:
        words.append(f"({'base ISA' if ai.extension == 'base' else ai.extension})")
    if ai.operands == NONE:
        words.append("without operands")
    elif ai.operands is not TOP:
        words.append("with " + ", ".join(_kind_text(k) for k in sorted(ai.operands)))
    return " ".join(words)


def describe_crossing(p: Position, relation: str) -> str:
    """"instruction 2's memory operand crosses a cache line"."""
    where = f"instruction {p[0] + 1}'s memory operand"
    if relation == CROSSES:
        return f"{where} crosses a cache line"
    return f"{where} stays within a cache line"


def describe_constant_base(p: Position, relation: str) -> str:
    """"instruction 2's memory operand's base is set to a constant address"."""
    where = f"instruction {p[0] + 1}'s memory operand's base"
    if relation == CONSTANT:
        return f"{where} is set to a constant address"
    return f"{where} is not set by the block"


def describe(abs_block: AbstractBlock) -> str:
    """A short description: the instructions, then the constraints (`#1.op1 = #2.op2`,
    "instruction 2's memory operand crosses a cache line", "instruction 2's memory operand's
    base is set to a constant address")."""
    parts = [describe_instruction(ai) for ai in abs_block.instructions]
    parts += [f"{_slot_name(p)} {'=' if r == MUST else '!='} {_slot_name(q)}"
              for p, q, r in abs_block.aliasing]
    parts += [describe_crossing(p, r) for p, r in abs_block.crossing]
    parts += [describe_constant_base(p, r) for p, r in abs_block.constant_base]
    return " ; ".join(parts)


def to_json(obj) -> dict:
    """JSON of an AbstractBlock or a ConcreteBlock (from_json tells them apart by "type")."""
    if isinstance(obj, AbstractBlock):
        return obj.to_json()
    if isinstance(obj, ConcreteBlock):
        return {"type": "concrete", **obj.to_json()}
    raise TypeError(f"no JSON for {type(obj).__name__}")


def from_json(data: dict):
    if data.get("type") == "abstract":
        return AbstractBlock.from_json(data)
    if data.get("type") == "concrete":
        return ConcreteBlock.from_json(data)
    raise ValueError("not a block: no type 'abstract' or 'concrete'")


__all__ = ["TOP", "NONE", "MUST", "MUST_NOT", "CROSSES", "WITHIN", "CONSTANT", "NOT_CONSTANT",
           "FEATURES",
           "AbstractInstruction", "AbstractBlock", "Universe", "abstract", "abstract_instruction", "contains",
           "subsumes", "covers", "instruction_subsumes", "same_concretisation", "expansions",
           "sample", "describe", "describe_form", "to_json", "from_json", "universe"]
