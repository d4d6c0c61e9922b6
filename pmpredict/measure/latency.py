"""Measure the latencies of forms on this host: the chains of chains.py, timed as blocks.

Front end of the latency engine: plan the chains (chains.py), look each one up in the result
cache (the key is the chain's code, exactly as `pmpredict measure` of that code would use),
time the missing ones in batches of blocks (block.py: two unroll variants, two harness
processes), read the timings back into per-form latencies, and put them into a model with
their provenance.

    table = measure_latencies(forms, cache_dir=default_cache_dir(), progress=print)
    model = table.apply(model)        # latency, latency_from, move_elimination, idiom_ports,
                                      # pipeline load_latency / store_forward_latency
"""

from __future__ import annotations

import datetime
import math
import time
from dataclasses import dataclass, field, replace

from pmpredict.errors import InputError
from pmpredict.isa import semantics
from pmpredict.isa.forms import parse_form
from pmpredict.measure.block import (BLOCK_OPTIONS, PreparedBlock, cached_block, measure_blocks,
                                     prepare_block)
from pmpredict.measure.block_measurement import BlockTiming
from pmpredict.measure.cache import ResultCache, block_key
from pmpredict.measure.cpu import cpu_identity, cpu_name
from pmpredict.measure.chains import (BARRIER, DIVIDEND, FLAGS, PIPELINE_REFERENCES, REFERENCES,
                                      Chain, FormPlan, FormTiming, form_timing, plan_form,
                                      reference_values, snap)
from pmpredict.measure.experiment_runs import MeasurementStopped, Progress
from pmpredict.measure.instantiate import HARNESS_ISA
from pmpredict.measure.runner import RunOptions, check_host
from pmpredict.model.machine import PER_FORM_FIELDS

# chains per harness build (two kernels each): a build costs its compile, canary reference
# and at least two processes, each waiting up to BLOCK_OPTIONS.quiet_phase_ns for a quiet
# phase (the core's 52 chains on a Zen 3 guest: 40-46 s in builds of 12, 22-24 s in one)
BATCH = 64
# timings of a pipeline fact's chain at most, while it does not reproduce (a locked
# read-modify-write on a shared machine): each round keeps the fastest, a stable round wins
FACT_ROUNDS = 3
_ISA = semantics.get(HARNESS_ISA)
SYNTAX = "intel"


@dataclass
class LatencyTable:
    """Latencies measured on one CPU: per form, and the reference (companion) latencies."""
    cpu: str
    date: str
    references: dict[str, float] = field(default_factory=dict)
    forms: dict[str, FormTiming] = field(default_factory=dict)
    # pipeline fact -> why it is in doubt (its chain did not reproduce in FACT_ROUNDS rounds)
    doubts: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return f"measured on {self.cpu} {self.date}"

    def pipeline(self) -> dict[str, float]:
        return {k: self.references[k] for k in PIPELINE_REFERENCES if k in self.references}

    def model_fields(self, form: str) -> dict:
        """The model's per-form timing facts of one form (empty: nothing measured)."""
        t = self.forms.get(form)
        if t is None or not t.sources:
            return {}
        base, per = split_latencies(form, t.sources, t.through_memory)
        out = {"latency": base, "latency_source": self.source}
        if per:
            out["operand_latency"] = per
        if t.eliminated is not None:
            out["move_elimination"] = t.eliminated
        if t.idiom_ports is not None:
            out["idiom_ports"] = t.idiom_ports
        if t.idiom_breaks is not None and t.candidate:
            out["idiom_breaks"] = t.idiom_breaks
        return out

    def apply(self, model):
        """The model with the measured latencies of its forms and the pipeline facts."""
        fields = {name: dict(getattr(model, name)) for name in PER_FORM_FIELDS}
        for form in model.uops:
            for name, value in self.model_fields(form).items():
                fields[name][form] = value
        pipeline = {**model.pipeline, **self.pipeline()}
        sources = {**model.pipeline_source, **{k: self.source for k in self.pipeline()}}
        provenance = {**model.provenance, "latencies": self.summary()}
        return replace(model, pipeline=pipeline, pipeline_source=sources, provenance=provenance,
                       **fields)

    def summary(self) -> dict:
        """What a model's provenance says about the latencies: references, idioms, notes."""
        idioms = {f: {"kind": t.idiom, "breaks_dependency": t.idiom_breaks,
                      "takes_a_port": t.idiom_ports}
                  for f, t in sorted(self.forms.items()) if t.idiom}
        notes = {f: t.notes for f, t in sorted(self.forms.items()) if t.notes}
        out = {"source": self.source,
               "references": {k: {"latency": round(v, 3),
                                  "how": REFERENCES[k].description}
                              for k, v in self.references.items()},
               "idioms": idioms, "notes": notes}
        if self.doubts:
            out["doubts"] = dict(sorted(self.doubts.items()))
        return out

    def to_json(self) -> dict:
        return {"format": "pmpredict-latencies", "version": 1, "cpu": self.cpu,
                "date": self.date, "references": self.references,
                "forms": {f: {"sources": {str(k): v for k, v in t.sources.items()},
                              **({"eliminated": t.eliminated} if t.eliminated is not None else {}),
                              **({"idiom": t.idiom, "idiom_breaks": t.idiom_breaks,
                                  "idiom_ports": t.idiom_ports} if t.idiom else {}),
                              **({"notes": t.notes} if t.notes else {})}
                          for f, t in self.forms.items()}}


def split_latencies(form: str, sources: dict, own=()) -> tuple[float, dict[int, float]]:
    """(the form's `latency`, `latency_from` per operand) from the latency of each source.

    `latency` covers every source without an entry of its own, the flags and implicit
    registers among them: the flags' latency where a consumer has one, a division's dividend
    -> quotient latency (DIVIDEND, chains.py) where it has one, else the largest
    register operand's, else (a load, lea) the memory operand's; a store's is 0. Sources in
    `own` (memory read-modify-written: `sub [m], 1`) always get an entry: without one the
    dependency engine would read `latency` as the operation's and add the load's to it. So
    does a merge (a source at a destination that is only written: the old value of `mov cl,
    [m]`'s rcx), and it never counts as `latency`: the form's latency is its data's (the
    load's), the merge's is its own (annotate reads it as the destination operand's)."""
    if "*" in sources:
        return sources["*"], {}
    if BARRIER in sources:
        return sources[BARRIER], {}
    operands = {k: v for k, v in sources.items() if isinstance(k, int)}
    merges = {k for k in operands if _is_merge(form, k)}
    if FLAGS in sources:
        base = sources[FLAGS]
    elif DIVIDEND in sources:
        base = sources[DIVIDEND]
    else:
        data = {k: v for k, v in operands.items() if k not in merges} or operands
        base = max(data.values())
        registers = [v for k, v in data.items() if _is_register(form, k)]
        if registers:
            base = max(registers)
    return base, {k: v for k, v in sorted(operands.items())
                  if v != base or k in own or k in merges}


def _is_register(form: str, index: int) -> bool:
    return parse_form(form, HARNESS_ISA).operands[index].kind == "reg"


def _is_merge(form: str, index: int) -> bool:
    """A register operand the form only writes: a latency from it is its merge's (chains.py)."""
    access = _ISA.form(parse_form(form, HARNESS_ISA)).operand_access
    return _is_register(form, index) and "R" not in access[index]


def _references_needed(plans: list[FormPlan]) -> list[str]:
    """Reference names the plans use, the pipeline facts, and what those depend on, in
    REFERENCES order (a companion before the references that subtract it)."""
    needed = set(PIPELINE_REFERENCES)
    for p in plans:
        for c in p.chains():
            needed.update(c.companions)
        if p.idiom:
            needed.add(p.idiom.companion)
    changed = True
    while changed:
        changed = False
        for name in list(needed):
            for dep in REFERENCES[name].chain.companions:
                if dep not in needed:
                    needed.add(dep)
                    changed = True
    return [n for n in REFERENCES if n in needed]


def plan_forms(forms) -> tuple[dict[str, FormPlan], dict[str, str]]:
    """Plans of the forms that have one; form -> why not for the others."""
    plans, failed = {}, {}
    for f in forms:
        try:
            plans[f] = plan_form(f)
        except ValueError as exc:
            failed[f] = f"no latency chain: {exc}"
    return plans, failed


def measure_latencies(forms, *, cache_dir: str | None, progress=None, should_stop=None,
                      options: RunOptions = BLOCK_OPTIONS, phase: str = "latencies",
                      plan: tuple = ()) -> LatencyTable:
    """Measure the latencies of `forms` (and the reference latencies) on this host.

    progress(Progress) after every batch of chains; should_stop() between batches
    (MeasurementStopped with `partial` None: the cache keeps what was measured)."""
    check_host()
    plans, failed = plan_forms(forms)
    refs = _references_needed(list(plans.values()))
    chains: dict[str, Chain] = {}
    for name in refs:
        chains.setdefault(REFERENCES[name].chain.text, REFERENCES[name].chain)
    for p in plans.values():
        for c in p.chains():
            chains.setdefault(c.text, c)
    facts = [REFERENCES[n].chain.text for n in PIPELINE_REFERENCES]
    cycles, unsettled = _measure_texts(list(chains), cache_dir, options, progress, should_stop,
                                       phase, plan, settle=facts)
    ref_values = reference_values({name: cycles[REFERENCES[name].chain.text] for name in refs})
    by_chain = {c: cycles[text] for text, c in chains.items()}
    table = LatencyTable(cpu_name(), datetime.date.today().isoformat(), ref_values)
    for name in PIPELINE_REFERENCES:
        why = unsettled.get(REFERENCES[name].chain.text)
        if why and name in ref_values:
            table.doubts[name] = f"{name} {ref_values[name]:g}: {why}"
    for f, p in plans.items():
        table.forms[f] = form_timing(p, by_chain, ref_values)
    for f, why in failed.items():
        table.forms[f] = FormTiming(notes=[why])
    return table


def _measure_texts(texts: list[str], cache_dir, options, progress, should_stop, phase,
                   plan, settle=()) -> tuple[dict[str, float | None], dict[str, str]]:
    """Cycles per link of each chain text (None: it failed), through the cache; and, of the
    texts in `settle` (the pipeline facts' chains), those whose timing did not reproduce in
    FACT_ROUNDS rounds -> why (_settle)."""
    cache = ResultCache(cache_dir, cpu_identity())
    out: dict[str, float | None] = {}
    timings: dict[str, BlockTiming] = {}
    blocks: dict[str, PreparedBlock] = {}
    pending = []
    try:
        for text in texts:
            block = blocks[text] = prepare_block(text, SYNTAX, "<latency chain>")
            hit = cached_block(cache, block, options)
            if hit is not None:
                out[text], timings[text] = hit.cycles, hit
            else:
                pending.append((text, block))
        cached = len(out)
        started = time.monotonic()

        def report():
            if progress:
                progress(Progress(phase, len(out), len(texts), cached,
                                  time.monotonic() - started, plan))
        report()
        for start in range(0, len(pending), BATCH):
            if should_stop is not None and should_stop():
                raise MeasurementStopped(None, phase)
            batch = pending[start:start + BATCH]
            for (text, _), timing in zip(batch, measure_blocks([b for _, b in batch], options,
                                                               cache)):
                out[text], timings[text] = timing.cycles, timing
            report()
        unsettled = _settle(list(timings), set(settle), blocks, timings, cache, options)
        out.update({t: timing.cycles for t, timing in timings.items()})
    except InputError as exc:                        # a chain the parser rejects: a bug here
        raise AssertionError(f"latency chain does not parse: {exc}") from None
    finally:
        cache.close()
    return out, unsettled


def _settle(texts: list[str], facts: set[str], blocks: dict, timings: dict, cache: ResultCache,
            options: RunOptions) -> dict[str, str]:
    """Time again, up to FACT_ROUNDS rounds in all (counted in the cache entry, so a later
    reading does not repeat them), the chains in doubt: a pipeline fact's (`facts`) whose
    timing did not reproduce (BlockTiming.stable), and any whose cycles a link lie just above
    a whole number (_off_whole: a link is a sum of whole latencies, and noise only adds). A
    reproduced timing wins over one that did not, else the fastest; the cache keeps what is
    taken. Returns, of `facts`, text -> why it is still in doubt (timings updated)."""
    rounds = {t: _rounds(cache, blocks[t], options) for t in texts}

    def doubted(text):
        timing = timings[text]
        return (text in facts and not timing.stable) or _off_whole(timing.cycles)
    for _ in range(FACT_ROUNDS):
        again = [t for t in texts if doubted(t) and rounds[t] < FACT_ROUNDS]
        if not again:
            break
        for text, new in zip(again, measure_blocks([blocks[t] for t in again], options)):
            rounds[text] += 1
            old = timings[text]
            if new.cycles is not None and (
                    old.cycles is None or (new.stable and not old.stable)
                    or (new.stable == old.stable and new.cycles < old.cycles)):
                timings[text] = new
            best = timings[text]
            if best.cycles is not None:
                cache.put(_key(blocks[text], options), best.cycles, None,
                          result=best.to_json(), rounds=rounds[text])
    return {t: f"its chain did not reproduce in {rounds[t]} round{'s' if rounds[t] > 1 else ''}"
               f" ({_seen(timings[t])})"
            for t in texts if t in facts and not timings[t].stable
            and timings[t].cycles is not None and timings[t].spread is not None}


def _off_whole(cycles: float | None) -> bool:
    """Cycles a link at most half a cycle above a whole number of at least one that
    chains.snap does not take for it: the reading of a whole latency a disturbed run slowed,
    more likely than not (below a cycle a link is a throughput or an eliminated move, not a
    sum of latencies)."""
    if cycles is None or cycles < 1:
        return False
    return cycles - math.floor(cycles) <= 0.5 and snap(cycles) != math.floor(cycles)


def _seen(timing: BlockTiming) -> str:
    """How far apart a chain's readings lie: the cycles a link its processes and unroll
    variants read (a core with two steady states reads both), else its spread."""
    low, high = timing.range or (None, None)
    if low is not None and high > low * 1.005:
        return f"{low:.2f}-{high:.2f} cycles a link"
    return f"spread {timing.spread:.0%}"


def _key(block: PreparedBlock, options: RunOptions) -> str:
    return block_key(block.syntax, block.lines, cpu_identity(), options.cache_params())


def _rounds(cache: ResultCache, block: PreparedBlock, options: RunOptions) -> int:
    """How many timings the cached entry of a block has seen (1 when it does not say)."""
    hit = cache.get(_key(block, options))
    return int(hit.get("rounds", 1)) if hit else 1
