"""The SMT encoding of port mappings and throughput (Ritter, ch. 4: Definition 4.5, Fig. 4.5).

A mapping is encoded as *uop slots*: form i has slots (i, 1..n_i); a slot is a unit uop (a
uop of count c is c slots with the same ports). Each slot has
    port[u, k]   Bool: the uop may run on port k (mapping[i, k] / uop2port[u, k] of the thesis)
    active[u]    Bool: the slot is a uop of the form (always True for the first slot, and for
                 every slot when the uop count is known, Fig. 4.5)
so the two-level model is n_i = 1, the three-level model with known uop counts (a counter)
is "all slots active", and with unknown counts the n_i slots bound the uops per form
(--max-uops) while `active` chooses how many there are. Every product in the thesis'
constraints then multiplies a Bool by something (ite), so the formulas stay in linear
arithmetic even with a free experiment: the integer insn2uop[i, u] x exp[i] product of
Fig. 4.3, which made that encoding non-linear and hopeless (the thesis: 4 forms on 3
ports did not finish in 48 hours), never appears.

Two encodings of relateThroughput[M, e, t] (t = the reciprocal throughput of e under M):

* "flow" (Definition 4.5, constraints A-I): x[u, k] >= 0 distribute the uops over ports
  (A, D, E), the ports' loads are at most t (B, C), and a non-empty set of bottleneck ports
  q_k loaded exactly t (F, G) is fed only by uops j_u confined to it (H, I);
* "hall" (the bottleneck characterisation behind both: Theorems 3.14 / 4.4): t is the
  largest over port sets Q of (uops confined to Q) / |Q|. t >= load_Q / |Q| for every Q and
  t = load_Q / |Q| for one. conf[u, Q] (u's ports within Q) depends only on the mapping,
  so it is one Bool per slot and port set, shared by every experiment; no real variables.

A hard-wired mapping (m1 in findOtherMapping) always uses the bottleneck form, with only
the unions of its uops' port sets as Q: t1 is then a max of linear terms in exp[i].

An R_max cap (4.3) makes the throughput max(t_ports, |e| / R_max).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import z3

ENCODINGS = ("flow", "hall")


def as_fraction(x, limit: int = 100_000) -> Fraction:
    """A measured or simulated number as an exact rational (1/3 from 0.3333333333333333)."""
    if isinstance(x, Fraction):
        return x
    return Fraction(x).limit_denominator(limit)


def _real(ctx, value) -> z3.ArithRef:
    f = as_fraction(value, 10**9) if not isinstance(value, int) else Fraction(value)
    return z3.RealVal(f"{f.numerator}/{f.denominator}", ctx)


def _sum(terms, ctx):
    terms = [t for t in terms if not (isinstance(t, int) and t == 0)]
    if not terms:
        return z3.IntVal(0, ctx)
    return z3.Sum(terms) if len(terms) > 1 else terms[0]


def _and(items, ctx):
    items = list(items)
    if any(i is False for i in items):
        return False
    items = [i for i in items if i is not True]
    if not items:
        return True
    return z3.And(items) if len(items) > 1 else items[0]


def _ite(c, a, ctx):
    """c ? a : 0 with constant folding (c a Python bool or a z3 Bool)."""
    if c is True:
        return a
    if c is False:
        return 0
    return z3.If(c, a, z3.IntVal(0, ctx) if z3.is_int(a) else z3.RealVal(0, ctx))


@dataclass
class Slot:
    form: int
    index: int
    active: object          # True or a z3 Bool
    ports: list             # per port: z3 Bool


class MappingVars:
    """The free mapping M_free: slots, their port and active variables, well-formedness,
    symmetry breaking, and the conf[u, Q] booleans of the "hall" encoding (made on demand)."""

    def __init__(self, ctx, forms, n_ports: int, slots_per_form, *, fixed_counts: bool,
                 port_counts: dict | None = None, symmetry: bool = True):
        self.ctx = ctx
        self.forms = list(forms)
        self.n_ports = n_ports
        self.fixed_counts = fixed_counts
        self.slots: list[list[Slot]] = []
        self.constraints = []
        for i, n in enumerate(slots_per_form):
            row = []
            for r in range(n):
                active = True if (r == 0 or fixed_counts) else z3.Bool(f"act_{i}_{r}", ctx)
                ports = [z3.Bool(f"map_{i}_{r}_{k}", ctx) for k in range(n_ports)]
                row.append(Slot(i, r, active, ports))
            self.slots.append(row)
        self._well_formed(port_counts or {})
        if symmetry:
            self._symmetry_breaking()
        self._conf: dict[tuple[int, int, int], object] = {}

    def all_slots(self):
        return [s for row in self.slots for s in row]

    def _well_formed(self, port_counts: dict) -> None:
        ctx = self.ctx
        for i, row in enumerate(self.slots):
            for r, s in enumerate(row):
                some = z3.Or(s.ports)
                if s.active is True:
                    self.constraints.append(some)
                else:
                    self.constraints.append(z3.Implies(s.active, some))
                    self.constraints.append(z3.Implies(z3.Not(s.active),
                                                      z3.And([z3.Not(p) for p in s.ports])))
                    prev = row[r - 1].active
                    if prev is not True:
                        self.constraints.append(z3.Implies(s.active, prev))
            k = port_counts.get(self.forms[i])
            if k is not None:
                for s in row:
                    self.constraints.append(
                        z3.Sum([z3.If(p, 1, 0) for p in s.ports]) == z3.IntVal(int(k), ctx))

    def _symmetry_breaking(self) -> None:
        """Ports are interchangeable, and so are the slots of one form: the matrix of slots
        (rows) by ports (columns) is required to be sorted descending both ways (rows of a
        form lexicographically, columns lexicographically over all slots). The largest
        matrix of an orbit under these permutations has both properties, so every mapping
        has an equivalent that passes (double-lex symmetry breaking)."""
        for row in self.slots:
            for a, b in zip(row, row[1:]):
                self.constraints += lex_geq(a.ports, b.ports, self.ctx)
        slots = self.all_slots()
        for k in range(self.n_ports - 1):
            self.constraints += lex_geq([s.ports[k] for s in slots],
                                        [s.ports[k + 1] for s in slots], self.ctx)

    def conf(self, slot: Slot, q: int):
        """Bool: the slot is a uop whose ports all lie in Q (one variable per slot and Q)."""
        key = (slot.form, slot.index, q)
        c = self._conf.get(key)
        if c is None:
            outside = [z3.Not(slot.ports[k]) for k in range(self.n_ports) if not q >> k & 1]
            body = _and([slot.active] + outside, self.ctx)
            if body is True or body is False:
                c = body
            else:
                c = z3.Bool(f"conf_{slot.form}_{slot.index}_{q}", self.ctx)
                self.constraints.append(c == body)
            self._conf[key] = c
        return c

    def take_constraints(self) -> list:
        out, self.constraints = self.constraints, []
        return out

    def decode(self, model) -> dict[str, tuple[int, ...]]:
        """form -> its uops as port masks, one per unit uop, descending."""
        out = {}
        for i, row in enumerate(self.slots):
            masks = []
            for s in row:
                if s.active is not True and not z3.is_true(model.eval(s.active, True)):
                    continue
                m = sum(1 << k for k, p in enumerate(s.ports)
                        if z3.is_true(model.eval(p, True)))
                masks.append(m)
            out[self.forms[i]] = tuple(sorted(masks, reverse=True))
        return out


def lex_geq(a, b, ctx) -> list:
    """Constraints for the Bool vectors a >= b lexicographically (first element most
    significant, True > False): the chained encoding with prefix-equality variables."""
    out = []
    eq = None                     # all earlier positions equal (None: the empty prefix)
    for idx, (x, y) in enumerate(zip(a, b)):
        here = z3.Implies(eq, z3.Or(x, z3.Not(y))) if eq is not None else z3.Or(x, z3.Not(y))
        out.append(here)
        if idx + 1 < len(a):
            nxt = z3.FreshBool("lex", ctx)
            same = x == y
            out.append(nxt == (z3.And(eq, same) if eq is not None else same))
            eq = nxt
    return out


def port_sets(n_ports: int):
    """Every non-empty port set as a mask, smallest first."""
    return sorted(range(1, 1 << n_ports), key=lambda q: (bin(q).count("1"), q))


def union_closure(masks) -> list[int]:
    """Every union of a non-empty subset of `masks` (the only Q where a bottleneck can be)."""
    seen: set[int] = set()
    for m in set(masks):
        new = {m} | {m | s for s in seen}
        seen |= new
    return sorted(seen)


# --- relateThroughput ------------------------------------------------------------------------


class Encoder:
    """relateThroughput instances over one MappingVars (renamed apart by a counter)."""

    def __init__(self, mv: MappingVars, encoding: str = "flow", r_max=None):
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
        self.mv = mv
        self.ctx = mv.ctx
        self.encoding = encoding
        self.r_max = as_fraction(r_max) if r_max else None
        self.n = 0

    def _fresh(self, name: str, sort: str = "real"):
        self.n += 1
        make = {"real": z3.Real, "bool": z3.Bool, "int": z3.Int}[sort]
        return make(f"{name}_{self.n}", self.ctx)

    def _masses(self, exp):
        """(slot, mass expression) for every slot of a form in the experiment; exp: form
        index -> int (hard-wired) or z3 Int (free)."""
        out = []
        for i, e in exp.items():
            if isinstance(e, int) and e == 0:
                continue
            for s in self.mv.slots[i]:
                out.append((s, _ite(s.active, e if not isinstance(e, int)
                                    else z3.IntVal(e, self.ctx), self.ctx)))
        return out

    def _cap(self, t_ports, t, length) -> list:
        """t = max(t_ports, length / R_max) (t is t_ports without a cap)."""
        if self.r_max is None:
            return [t == t_ports]
        floor = length / _real(self.ctx, self.r_max) if not isinstance(length, int) \
            else _real(self.ctx, Fraction(length) / self.r_max)
        return [t >= t_ports, t >= floor, z3.Or(t == t_ports, t == floor)]

    def relate(self, exp: dict, t, length) -> list:
        """Constraints: t is the reciprocal throughput of `exp` under the free mapping."""
        masses = self._masses(exp)
        t_ports = t if self.r_max is None else self._fresh("tp")
        if self.encoding == "hall":
            out = self._hall(masses, t_ports)
        else:
            out = self._flow(masses, t_ports)
        if self.r_max is not None:
            out += self._cap(t_ports, t, length)
        return out

    def _hall(self, masses, t) -> list:
        ctx, mv = self.ctx, self.mv
        out, equal = [], []
        for q in port_sets(mv.n_ports):
            load = _sum([_ite(mv.conf(s, q), z3.ToReal(m) if not isinstance(m, int) else m, ctx)
                         for s, m in masses], ctx)
            if isinstance(load, int) or (z3.is_int_value(load) and load.as_long() == 0):
                continue
            size = z3.RealVal(bin(q).count("1"), ctx)
            out.append(size * t >= load)
            equal.append(size * t == load)
        out.append(z3.Or(equal) if equal else z3.BoolVal(False, ctx))
        return out

    def _flow(self, masses, t) -> list:
        ctx, mv = self.ctx, self.mv
        out = []
        load = [[] for _ in range(mv.n_ports)]
        q = [self._fresh("q", "bool") for _ in range(mv.n_ports)]
        bottleneck_mass = []
        for s, m in masses:
            xs = []
            j = self._fresh("j", "bool")
            for k in range(mv.n_ports):
                x = self._fresh("x")
                xs.append(x)
                load[k].append(x)
                out.append(x >= 0)                                          # D
                out.append(z3.Implies(z3.Not(s.ports[k]), x == 0))          # E
                out.append(z3.Implies(z3.And(s.ports[k], j), q[k]))         # H
            out.append(z3.Sum(xs) == z3.ToReal(m))                          # A
            bottleneck_mass.append(z3.If(j, z3.ToReal(m), z3.RealVal(0, ctx)))
        for k in range(mv.n_ports):
            p = z3.Sum(load[k]) if load[k] else z3.RealVal(0, ctx)         # B
            out.append(p <= t)                                              # C
            out.append(q[k] == (p == t))                                    # G
        out.append(z3.Or(q))                                                # F
        out.append(z3.Sum(bottleneck_mass) ==                               # I
                   z3.Sum([z3.If(qk, t, z3.RealVal(0, ctx)) for qk in q]))
        return out

    def relate_known(self, mapping: list[tuple[int, ...]], exp: dict, t, length) -> list:
        """t is the reciprocal throughput of `exp` (form index -> z3 Int) under a hard-wired
        mapping (per form index: its unit uops' masks): the largest load_Q / |Q| over the
        unions Q of the mapping's port sets, a max of linear terms in exp."""
        ctx = self.ctx
        masks = [m for i in exp for m in mapping[i]]
        t_ports = t if self.r_max is None else self._fresh("tk")
        out, equal = [], []
        for q in union_closure(masks):
            terms = []
            for i, e in exp.items():
                c = sum(1 for m in mapping[i] if m & ~q == 0)
                if c:
                    terms.append(e * c if c > 1 else e)
            if not terms:
                continue
            load = z3.ToReal(_sum(terms, ctx))
            size = z3.RealVal(bin(q).count("1"), ctx)
            out.append(size * t_ports >= load)
            equal.append(size * t_ports == load)
        out.append(z3.Or(equal))
        if self.r_max is not None:
            out += self._cap(t_ports, t, length)
        return out


# --- exact evaluation (no solver) ------------------------------------------------------------


def exact_cycles(mapping: dict[str, tuple[int, ...]], counts, r_max=None) -> Fraction:
    """The reciprocal throughput of the multiset `counts` ((form, n) pairs) under a mapping
    of unit uops, as an exact rational: max over unions Q of load_Q / |Q| (and the cap)."""
    masses: dict[int, int] = {}
    n = 0
    for f, c in counts:
        n += c
        for m in mapping[f]:
            masses[m] = masses.get(m, 0) + c
    best = Fraction(0)
    for q in union_closure(masses):
        load = sum(v for m, v in masses.items() if m & ~q == 0)
        best = max(best, Fraction(load, bin(q).count("1")))
    if r_max:
        best = max(best, Fraction(n) / as_fraction(r_max))
    return best


def unit_uops(uops) -> tuple[int, ...]:
    """MachineModel uops ((mask, count) pairs) -> unit uops, descending."""
    return tuple(sorted((m for m, c in uops for _ in range(int(c))), reverse=True))
