"""Align the abstract ports of an inferred model with the ports of a reference model.

An inferred port (A, B, ...) is whatever the timing data needed; a reference model (an
OSACA machine file, a vendor-derived model, another inferred model) names real ports. The
alignment finds the one-to-one assignment of our ports to the reference's that best agrees
over the instruction forms both models know:

1. common forms: a form of ours that the reference has under the same name pairs with it;
   otherwise its example instance (pmpredict.isa.examples.example_instance) is parsed and matched
   against the reference's forms exactly as `predict` matches a kernel (approximate matches
   are left out: a register form standing in for a memory form has the wrong uops);
2. affinity: each form spreads every uop's count evenly over the uop's ports, scaled so
   that the form's profile sums to 1 (each common form is one piece of evidence: a divider
   uop occupying its port 20 cycles must not outweigh twenty other forms);
   affinity[p, q] is the sum over the common forms of our profile at p times the
   reference's at q. For a model and a copy with permuted port names this is maximal on the
   permutation (Cauchy-Schwarz), so the alignment recovers it up to ports no form tells
   apart;
3. the assignment maximising the total affinity, solved exactly
   (scipy.optimize.linear_sum_assignment). With more ports on one side the extra ones stay
   unmatched; a port whose assigned partner has affinity 0 (no common form uses both) is
   unmatched too, since nothing supports the pairing;
4. agreement: every uop of ours on a common form, its ports renamed, is *equal* to a uop of
   the reference's form when the port sets are the same, and *contained* when its set lies
   inside one of the reference form's uop sets (equal counts as contained), and it
   *overlaps* when it shares a port with one of them. Shares are of uop mass (counts), per
   port of ours (the uops that may use it) and overall.

Pure functions over models: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pmpredict.isa import semantics
from pmpredict.errors import InputError
from pmpredict.formats.jsonio import rounded
from pmpredict.isa.examples import example_instance
from pmpredict.isa.forms import parse_form
from pmpredict.isa.osaca_forms import FOREIGN_PREFIX
from pmpredict.model.machine import MachineModel

DIGITS = 6          # decimals of the shares, masses and affinities in an alignment's JSON


@dataclass(frozen=True)
class PortAgreement:
    port: str                 # ours
    mapped: str | None        # the reference's port it is aligned with (None: unmatched)
    affinity: float           # affinity of the pair (0 when unmatched)
    mass: float               # uop mass of the common forms that may use the port
    equal: float | None       # share of that mass whose mapped port set equals a reference uop's
    contained: float | None   # ... lies inside a reference uop's port set
    overlap: float | None     # ... shares a port with a reference uop's port set


@dataclass(frozen=True)
class Alignment:
    model: str
    reference: str
    ports: tuple[str, ...]                    # ours, in order
    reference_ports: tuple[str, ...]
    mapping: dict[str, str]                   # our port -> the reference's (matched ones only)
    pairs: tuple[tuple[str, str], ...]        # (our form, the reference's form)
    forms: int                                # forms of ours that could be instantiated
    per_port: tuple[PortAgreement, ...]
    mass: float                               # uop mass of ours on the common forms
    reference_mass: float                     # the reference's on the same forms
    equal: float | None
    contained: float | None
    overlap: float | None
    same_count: float | None                  # share of common forms with equal uop mass

    @property
    def unmatched(self) -> tuple[str, ...]:
        return tuple(p for p in self.ports if p not in self.mapping)

    @property
    def reference_unmatched(self) -> tuple[str, ...]:
        used = set(self.mapping.values())
        return tuple(q for q in self.reference_ports if q not in used)

    def aligned_names(self) -> tuple[str, ...]:
        """Our ports' new names: the reference's for matched ones; an unmatched port keeps its
        name, primed until it collides with no reference port."""
        taken = set(self.reference_ports)
        names = []
        for p in self.ports:
            name = self.mapping.get(p)
            if name is None:
                name = p
                while name in taken:
                    name += "'"
                taken.add(name)
            names.append(name)
        return tuple(names)

    def summary(self) -> dict:
        """The facts a model's provenance keeps about its alignment."""
        return {"reference": self.reference, "common_forms": len(self.pairs),
                "forms": self.forms, "mapping": dict(self.mapping),
                "unmatched": list(self.unmatched),
                "reference_unmatched": list(self.reference_unmatched),
                "equal": rounded(self.equal, DIGITS),
                "contained": rounded(self.contained, DIGITS),
                "overlap": rounded(self.overlap, DIGITS)}

    def to_json(self) -> dict:
        out = self.summary()
        out.update({"model": self.model, "mass": rounded(self.mass, DIGITS),
                    "reference_mass": rounded(self.reference_mass, DIGITS),
                    "same_count": rounded(self.same_count, DIGITS),
                    "ports": [{"port": a.port, "mapped": a.mapped,
                               "affinity": rounded(a.affinity, DIGITS),
                               "mass": rounded(a.mass, DIGITS),
                               "equal": rounded(a.equal, DIGITS),
                               "contained": rounded(a.contained, DIGITS),
                               "overlap": rounded(a.overlap, DIGITS)}
                              for a in self.per_port]})
        return out


# --- common forms ------------------------------------------------------------------------

def common_forms(model: MachineModel, reference: MachineModel) -> tuple[list[tuple[str, str]], int]:
    """(pairs (our form, the reference's form), forms of ours that could be tried)."""
    # deferred: the matcher loads lark (~0.1 s); fallback.merge, align_pairs need no parser
    from pmpredict.asm.match import FormMatcher
    from pmpredict.asm.normalize import normalize

    if model.isa != reference.isa:
        raise ValueError(f"model {model.name!r} is {model.isa}, reference {reference.name!r} "
                         f"is {reference.isa}")
    syntax = semantics.get(model.isa).example_syntax
    matcher = FormMatcher(reference.uops, reference.isa, allow_approx=False)
    pairs, instances = [], {}
    for form in model.uops:
        if form in reference.uops:
            pairs.append((form, form))
        elif not form.startswith(FOREIGN_PREFIX):     # an imported name has no instance
            try:
                instances[form] = example_instance(parse_form(form, model.isa))
            except ValueError:
                continue
    for form, insn in _parse_instances(instances, syntax).items():
        m = matcher.match(normalize(insn, syntax))
        if m.form is not None:
            pairs.append((form, m.form))
    order = {f: i for i, f in enumerate(model.uops)}
    pairs.sort(key=lambda pair: order[pair[0]])
    tried = sum(1 for f in model.uops if f in reference.uops) + len(instances)
    return pairs, tried


def _parse_instances(texts: dict, syntax: str) -> dict:
    """form -> its parsed instance; one parser run for all, line by line only when some
    instance does not parse (that form is left out)."""
    # deferred: the parser loads lark (~0.1 s), which merging and align_pairs do not need
    from pmpredict.asm.parse import parse

    forms = list(texts)
    try:
        insns = parse("\n".join(texts[f] for f in forms), syntax).instructions
        if len(insns) == len(forms):
            return dict(zip(forms, insns))
    except InputError:
        pass
    out = {}
    for f in forms:
        try:
            insns = parse(texts[f], syntax).instructions
        except InputError:
            continue
        if len(insns) == 1:
            out[f] = insns[0]
    return out


# --- the assignment ------------------------------------------------------------------------

def port_profile(uops, n_ports: int) -> np.ndarray:
    """Where a form's uop mass may go: each uop's count spread evenly over its ports, the
    whole scaled to sum 1."""
    out = np.zeros(n_ports)
    for mask, count in uops:
        ports = [p for p in range(n_ports) if mask >> p & 1]
        for p in ports:
            out[p] += count / len(ports)
    total = out.sum()
    return out / total if total > 0 else out


def affinity_matrix(model: MachineModel, reference: MachineModel, pairs) -> np.ndarray:
    """affinity[p, q]: sum over the common forms of our profile at p times the reference's at q."""
    ours = np.array([port_profile(model.uops[f], len(model.ports)) for f, _ in pairs])
    theirs = np.array([port_profile(reference.uops[g], len(reference.ports)) for _, g in pairs])
    if not pairs:
        return np.zeros((len(model.ports), len(reference.ports)))
    return ours.T @ theirs


def _sets(uops, ports) -> list[tuple[frozenset, int]]:
    return [(frozenset(ports[p] for p in range(len(ports)) if mask >> p & 1), count)
            for mask, count in uops]


def align_pairs(model: MachineModel, reference: MachineModel, pairs, forms: int | None = None
                ) -> Alignment:
    """The alignment of `model`'s ports with `reference`'s over the given common forms."""
    # deferred: scipy.optimize (~0.3 s): only an alignment solves the assignment, not a merge
    from scipy.optimize import linear_sum_assignment

    pairs = tuple(pairs)
    affinity = affinity_matrix(model, reference, pairs)
    rows, cols = linear_sum_assignment(affinity, maximize=True)
    mapping = {model.ports[r]: reference.ports[c] for r, c in zip(rows, cols)
               if affinity[r, c] > 0}
    # an unmatched port of ours gets a name no reference port has: its uops then never
    # agree with the reference's
    renamed = {p: mapping.get(p, ("unmatched", p)) for p in model.ports}
    shares = ("equal", "contained", "overlap")
    mass = {p: 0.0 for p in model.ports}
    agree = {k: {p: 0.0 for p in model.ports} for k in shares}
    total, total_agree, reference_total = 0.0, dict.fromkeys(shares, 0.0), 0.0
    same_count = 0
    for form, ref_form in pairs:
        theirs = [s for s, _ in _sets(reference.uops[ref_form], reference.ports)]
        ref_mass = sum(c for _, c in reference.uops[ref_form])
        our_mass = sum(c for _, c in model.uops[form])
        reference_total += ref_mass
        same_count += our_mass == ref_mass
        for ports, count in _sets(model.uops[form], model.ports):
            mapped = frozenset(renamed[p] for p in ports)
            verdict = {"equal": mapped in theirs, "contained": any(mapped <= s for s in theirs),
                       "overlap": any(mapped & s for s in theirs)}
            total += count
            for k in shares:
                total_agree[k] += count * verdict[k]
                for p in ports:
                    agree[k][p] += count * verdict[k]
            for p in ports:
                mass[p] += count
    index = {p: i for i, p in enumerate(model.ports)}
    ref_index = {q: i for i, q in enumerate(reference.ports)}
    per_port = tuple(
        PortAgreement(p, mapping.get(p),
                      float(affinity[index[p], ref_index[mapping[p]]]) if p in mapping else 0.0,
                      mass[p], *(agree[k][p] / mass[p] if mass[p] else None for k in shares))
        for p in model.ports)
    return Alignment(model.name, reference.name, model.ports, reference.ports, mapping, pairs,
                     len(pairs) if forms is None else forms, per_port, total, reference_total,
                     *(total_agree[k] / total if total else None for k in shares),
                     same_count / len(pairs) if pairs else None)


def align(model: MachineModel, reference: MachineModel) -> Alignment:
    """Align `model`'s ports with `reference`'s over every form both know."""
    pairs, tried = common_forms(model, reference)
    return align_pairs(model, reference, pairs, tried)


def aligned_model(model: MachineModel, alignment: Alignment) -> MachineModel:
    """The model with its ports named as the alignment says, the alignment in its provenance."""
    provenance = dict(model.provenance)
    provenance["alignment"] = alignment.summary()
    return replace(model.with_port_names(alignment.aligned_names()), provenance=provenance)
