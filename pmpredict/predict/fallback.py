"""A model with a fallback: the forms a model lacks, taken from another model.

`merge(model, fallback, alignment)` builds one MachineModel for the engines:

* the ports are the model's, in order; the fallback's ports are renamed onto them by the
  alignment (pmpredict.predict.align: the reference is the fallback). A fallback port without a
  counterpart becomes a port of its own, appended under its own name (primed if the model
  has that name): its uops then take no port of the model's, and the report lists it;
* the forms are the model's first, then every fallback form whose name the model does not
  have, its uops renamed, with its timing facts (latency, latency_from, move elimination,
  idiom ports) and its latency_source, or `fallback <name>` when it has a latency but no
  source;
* pipeline facts and the issue width the model lacks come from the fallback (their
  pipeline_source says so).

Matching prefers the model: `ChainMatcher` asks a matcher of the model's forms first (its
approximate matches included) and the fallback's only for instructions the model has no
form for. Pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmpredict.predict.align import Alignment, align
from pmpredict.model.facts import PIPELINE_KEYS
from pmpredict.model.machine import FORM_FLAGS, MachineModel, normalize_uops


@dataclass(frozen=True)
class Fallback:
    model: MachineModel                 # merged: the model's forms, then the fallback's
    primary: frozenset[str]             # forms of the model
    forms: frozenset[str]               # forms taken from the fallback
    name: str                           # the fallback's name
    port_map: dict[str, str]            # fallback port -> merged port
    own_ports: tuple[str, ...]          # fallback ports without counterpart (ports of their own)
    pipeline: tuple[str, ...]           # pipeline facts (and r_max) taken from the fallback
    alignment: Alignment

    def matcher(self, allow_approx: bool = True) -> "ChainMatcher":
        # deferred: the matcher loads lark (~0.1 s); merge() and the Fallback record need none
        from pmpredict.asm.match import FormMatcher
        isa = self.model.isa
        primary = [f for f in self.model.uops if f in self.primary]
        extra = [f for f in self.model.uops if f in self.forms]
        return ChainMatcher((FormMatcher(primary, isa, allow_approx=allow_approx),
                             FormMatcher(extra, isa, allow_approx=allow_approx)))

    def summary(self) -> dict:
        return {"model": self.name, "forms": len(self.forms), "port_map": dict(self.port_map),
                "own_ports": list(self.own_ports), "pipeline": list(self.pipeline),
                "alignment": self.alignment.summary()}


class ChainMatcher:
    """Matchers asked in order; the first match wins. Unmatched: the first one's reason."""

    def __init__(self, matchers):
        self.matchers = tuple(matchers)

    def match(self, key):
        first = None
        for matcher in self.matchers:
            m = matcher.match(key)
            if m.form is not None:
                return m
            first = first or m
        return first


def merge(model: MachineModel, fallback: MachineModel, alignment: Alignment) -> Fallback:
    """The model with the fallback's forms it lacks (alignment: model onto fallback)."""
    if model.isa != fallback.isa:
        raise ValueError(f"model {model.name!r} is {model.isa}, fallback {fallback.name!r} "
                         f"is {fallback.isa}")
    onto = {q: p for p, q in alignment.mapping.items()}
    ports = list(model.ports)
    own = []
    for q in fallback.ports:
        if q not in onto:
            name = q
            while name in ports:
                name += "'"
            ports.append(name)
            onto[q] = name
            own.append(q)
    if len(ports) > 62:
        raise ValueError(f"{len(ports)} ports with the fallback's own ones: at most 62")
    index = {p: i for i, p in enumerate(ports)}
    bit = [1 << index[onto[q]] for q in fallback.ports]

    def renamed(mask: int) -> int:
        return sum(b for i, b in enumerate(bit) if mask >> i & 1)

    uops = dict(model.uops)
    taken = [f for f in fallback.uops if f not in model.uops]
    for f in taken:
        uops[f] = normalize_uops((renamed(m), c) for m, c in fallback.uops[f])
    timing = {}
    for name in ("latency", "operand_latency") + FORM_FLAGS:
        facts = dict(getattr(model, name))
        facts.update({f: v for f, v in getattr(fallback, name).items() if f in taken})
        timing[name] = facts
    source = dict(model.latency_source)
    for f in taken:
        if f in fallback.latency_source:
            source[f] = fallback.latency_source[f]
        elif f in fallback.latency or f in fallback.operand_latency:
            source[f] = f"fallback {fallback.name}"
    pipeline, pipeline_source = dict(model.pipeline), dict(model.pipeline_source)
    filled = tuple(k for k in PIPELINE_KEYS if k in fallback.pipeline and k not in pipeline)
    for k in filled:
        pipeline[k] = fallback.pipeline[k]
        pipeline_source[k] = fallback.pipeline_source.get(k, f"fallback {fallback.name}")
    if model.r_max is None and fallback.r_max is not None:
        filled += ("r_max",)
    provenance = dict(model.provenance)
    merged = MachineModel(model.name, model.isa, tuple(ports), uops,
                          r_max=model.r_max or fallback.r_max, provenance=provenance,
                          latency_source=source, pipeline=pipeline,
                          pipeline_source=pipeline_source, **timing)
    result = Fallback(merged, frozenset(model.uops), frozenset(taken), fallback.name,
                      {q: onto[q] for q in fallback.ports}, tuple(own), filled, alignment)
    provenance["fallback"] = result.summary()
    return result


def with_fallback(model: MachineModel, fallback: MachineModel) -> Fallback:
    """merge() with the alignment of the model's ports onto the fallback's."""
    return merge(model, fallback, align(model, fallback))
