"""What the uops on a port do: loads, stores, integer ALU, vector ALU, FP multiply/FMA...

An inferred port has no name that says what it executes; its forms do. Every form (or
instruction) gets its kinds (semantics.UOP_KINDS): loads / stores / branches from the ISA's
semantics, the operation's kind from the ISA's `operation_kinds` table (mnemonic families),
else vector or integer ALU by its register operands. A data movement with a memory operand
(`mov r64, [m]`, `ldr`) is only its load or store.

A form with one kind puts all its uops there. A form with several (a load-op `vaddpd ymm,
ymm, [m]`: loads and FP add) gives each uop to the kind whose single-kind forms use the
uop's ports most (its share of that kind's mass on them), so the load uop counts as a load
and the add as an add. A port's kinds are the kinds of the uop mass that may use it (each
uop's count spread evenly over its ports), largest share first.

Pure functions over models and semantics: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from pmpredict.isa import semantics
from pmpredict.isa.base import (BRANCHES, DIVIDER, FP_ADD, FP_MULTIPLY, INT_ALU, INT_MULTIPLY,
                                LOADS, SHUFFLES, STORES, UOP_KINDS, VECTOR, VECTOR_ALU)
from pmpredict.isa.forms import parse_form
from pmpredict.isa.osaca_forms import FOREIGN_PREFIX
from pmpredict.model.facts import FP_DOMAIN, SHUFFLE_DOMAIN, VECTOR_ALU_DOMAIN

# a port lists the kinds with at least this share of its uop mass
SHOWN_SHARE = 0.1


@lru_cache(maxsize=None)
def _table(isa: str) -> tuple:
    return tuple((kind, re.compile(pattern)) for kind, pattern in
                 semantics.get(isa).operation_kinds)


@lru_cache(maxsize=1 << 14)         # a corpus has a few hundred mnemonics: each matched once
def classify(isa: str, mnemonic: str, *, loads: bool, stores: bool, branch: bool,
             vector: bool) -> tuple[str, ...]:
    """The kinds of an instruction: memory and branch kinds first, then its operation's."""
    kinds = [k for k, on in ((BRANCHES, branch), (LOADS, loads), (STORES, stores)) if on]
    memory = loads or stores
    operation = None
    for kind, pattern in _table(isa):
        if pattern.fullmatch(mnemonic):
            if kind is None:
                if memory:
                    return tuple(kinds)          # a data movement: only the load or store
                continue                         # a register move: the operand class says
            operation = kind
            break
    if operation is None:
        if branch:
            return tuple(kinds)                  # a jump's only work is the branch
        operation = VECTOR_ALU if vector else INT_ALU
    return tuple(kinds + [operation])


def form_kinds(form: str, isa: str) -> tuple[str, ...]:
    """Kinds of a form string (PMEvo spelling); () for one that cannot be read (an imported
    `osaca:` name)."""
    if form.startswith(FOREIGN_PREFIX):
        return ()
    try:
        template = parse_form(form, isa)
    except ValueError:
        return ()
    fs = semantics.get(isa).form(template)
    vector = any(op.kind == "reg" and (op.reg_class in ("V", "F") or op.width is None)
                 for op in template.operands)
    return classify(isa, fs.mnemonic, loads=fs.reads_memory, stores=fs.writes_memory,
                    branch=fs.branch is not None, vector=vector)


def instruction_kinds(isa: str, sem) -> tuple[str, ...]:
    """Kinds of a concrete instruction from its InstructionSemantics."""
    vector = any(a.kind == VECTOR for a in sem.reads + sem.writes)
    return classify(isa, sem.mnemonic.lower(), loads=sem.loads, stores=sem.stores,
                    branch=sem.branch is not None, vector=vector)


# the domain of each kind of vector operation a value may take extra cycles between
# (model/facts.py BYPASS_KEYS): integer vector work with the vector ALU's
_DOMAINS = {VECTOR_ALU: VECTOR_ALU_DOMAIN, INT_MULTIPLY: VECTOR_ALU_DOMAIN, FP_ADD: FP_DOMAIN,
            FP_MULTIPLY: FP_DOMAIN, DIVIDER: FP_DOMAIN, SHUFFLES: SHUFFLE_DOMAIN}


def bypass_domain(isa: str, sem) -> str | None:
    """The domain of a vector operation (vector ALU, FP, shuffles) from its kind; None for an
    instruction without a vector register and for a data movement (vmovaps, a broadcast
    load), which a core may eliminate or run in either domain."""
    if not any(a.kind == VECTOR for a in sem.reads + sem.writes):
        return None
    mnemonic = sem.mnemonic.lower()
    moves = False
    for kind, pattern in _table(isa):
        if pattern.fullmatch(mnemonic):
            if kind is None:                     # a data movement, unless a later kind says
                if sem.loads or sem.stores:      # more (movhlps: a shuffle), as classify
                    return None
                moves = True
                continue
            return _DOMAINS.get(kind)
    return None if moves else VECTOR_ALU_DOMAIN


def _add_spread(acc: list[float], mask: int, count: float) -> None:
    """Add a uop's count to `acc`, spread evenly over the ports of its mask."""
    ports = [p for p in range(len(acc)) if mask >> p & 1]
    for p in ports:
        acc[p] += count / len(ports)


@dataclass(frozen=True)
class PortKinds:
    """Uop mass per kind and port of a model (kind -> array over the ports)."""
    ports: tuple[str, ...]
    mass: dict[str, list[float]]          # every uop, attributed (kind -> per port)
    single: dict[str, list[float]]        # the uops of single-kind forms only
    single_total: dict[str, float]
    _attributed: dict = field(default_factory=dict, compare=False, repr=False)   # memo

    def attribute(self, kinds, mask: int) -> str | None:
        """The kind among `kinds` a uop on the ports of `mask` belongs to: the one whose
        single-kind forms put the largest share of their mass on those ports."""
        if not kinds:
            return None
        if len(kinds) == 1:
            return kinds[0]
        key = (tuple(kinds), mask)
        if key not in self._attributed:
            self._attributed[key] = self._largest_share(kinds, mask)
        return self._attributed[key]

    def _largest_share(self, kinds, mask: int) -> str:
        on = [p for p in range(len(self.ports)) if mask >> p & 1]

        def share(kind):
            m = self.single.get(kind)
            total = self.single_total.get(kind, 0.0)
            return sum(m[p] for p in on) / total if total > 0 else 0.0
        return max(kinds, key=lambda k: (share(k), -kinds.index(k)))

    def of_port(self, port: str) -> list[tuple[str, float]]:
        """(kind, share of the port's uop mass), largest first, shares >= SHOWN_SHARE."""
        i = self.ports.index(port)
        total = sum(m[i] for m in self.mass.values())
        if total <= 0:
            return []
        shares = [(k, float(m[i] / total)) for k, m in self.mass.items()]
        shares.sort(key=lambda ks: (-ks[1], UOP_KINDS.index(ks[0])))
        return [(k, s) for k, s in shares if s >= SHOWN_SHARE]


def port_kinds(model) -> PortKinds:
    """The kinds of uops on each port of `model`, from the forms that use it."""
    n = len(model.ports)
    kinds_of = {f: form_kinds(f, model.isa) for f in model.uops}
    single: dict[str, list[float]] = {}
    for form, kinds in kinds_of.items():
        if len(kinds) == 1:
            acc = single.setdefault(kinds[0], [0.0] * n)
            for mask, count in model.uops[form]:
                _add_spread(acc, mask, count)
    pk = PortKinds(model.ports, {}, single, {k: sum(m) for k, m in single.items()})
    for form, kinds in kinds_of.items():
        for mask, count in model.uops[form]:
            kind = pk.attribute(kinds, mask)
            if kind is not None:
                _add_spread(pk.mass.setdefault(kind, [0.0] * n), mask, count)
    return pk


def kinds_within(pk: PortKinds, rows, ports_mask: int) -> list[str]:
    """Kinds of the uops confined to the ports of `ports_mask` (the ones a port bound
    counts), largest mass first. rows: (kinds of an instruction, its uops [(mask, count)])."""
    mass: dict[str, float] = {}
    for kinds, uops in rows:
        for mask, count in uops:
            if mask & ~ports_mask:
                continue
            kind = pk.attribute(kinds, mask)
            if kind is not None:
                mass[kind] = mass.get(kind, 0.0) + count
    return sorted(mass, key=lambda k: (-mass[k], UOP_KINDS.index(k)))
