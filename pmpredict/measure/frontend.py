"""Measure the front end of this host: the probes of probes.py, timed, read into pipeline facts.

Block probes are timed as `pmpredict measure` times a basic block (block.py: two unroll
variants, two harness processes) and share its cache; loop probes run as the loop body itself
(one copy per iteration, the harness's `dec; jnz` closing it) and are cached under a key of
their own. A probe whose code holds a jump cannot pass `prepare_block` (which refuses control
flow inside a block): its layout is planned without the jumps, which touch no register or
memory.

    front = measure_frontend(cache_dir=default_cache_dir())
    model = front.apply(model)           # r_max, pipeline facts with their source, provenance
"""

from __future__ import annotations

import datetime
import math
import re
import time
from dataclasses import dataclass, replace

from pmpredict.isa import semantics
from pmpredict.measure.block import BLOCK_OPTIONS, cached_block, measure_blocks, prepare_block
from pmpredict.measure.cache import ResultCache, block_key
from pmpredict.measure.cpu import cpu_identity, cpu_name
from pmpredict.measure.codegen import block_kernel
from pmpredict.measure.experiment_runs import Progress
from pmpredict.measure.instantiate import HARNESS_ISA
from pmpredict.measure.probes import (SNAP, Probe, ProbeReading, doubted_probes, doubts, probes,
                                      read_frontend, version)
from pmpredict.measure.runner import RunOptions, check_host, run_kernels

SYNTAX = "intel"
LOOP_SYNTAX = "intel-loop"            # the cache key of a loop probe (its body is not unrolled)
_ISA = semantics.get(HARNESS_ISA)             # which spellings are jumps
_LABEL = re.compile(r"^\d+:")                 # a numeric local label: a probe's jump target
ROUNDS = 3                            # timings of the probes at most, while the reading is in doubt
# the probes' generation, in a model's provenance.front_end: a digest of what they are
FRONT_END_VERSION = version()


@dataclass
class MeasuredFrontEnd:
    facts: ProbeReading
    cpu: str
    date: str

    @property
    def source(self) -> str:
        return f"measured on {self.cpu} {self.date}"

    def apply(self, model):
        """The model with the measured issue width and pipeline facts (each source says what
        it rests on: `measured on <cpu> <date>: <the probes' reading>`; the readings in full
        in its provenance's front_end)."""
        pipeline = {**model.pipeline, **self.facts.pipeline}
        sources = {**model.pipeline_source,
                   **{k: self.source + (f": {self.facts.how[k]}" if k in self.facts.how else "")
                      for k in self.facts.pipeline}}
        provenance = {**model.provenance, "front_end": {"source": self.source,
                                                        "version": FRONT_END_VERSION,
                                                        **self.facts.details}}
        return replace(model, r_max=self.facts.r_max or model.r_max, pipeline=pipeline,
                       pipeline_source=sources, provenance=provenance)


def _prepared(probe: Probe):
    """A PreparedBlock of the probe's lines (jumps and labels included)."""
    plain = [line for line in probe.lines if not _jump_or_label(line)] or ["nop"]
    block = prepare_block("\n".join(plain) + "\n", SYNTAX, f"<probe {probe.name}>")
    return replace(block, lines=tuple(probe.lines))


def _jump_or_label(line: str) -> bool:
    words = line.split()
    return bool(_LABEL.match(line)) or bool(words) and _ISA.is_jump(words[0])


def width_floor(singletons) -> float | None:
    """Instructions per cycle the core has been seen to sustain: the fastest measured singleton
    (ExperimentSet) but nops (a core may fuse two into one slot, nop_fusion; measured on Zen 4:
    twelve per cycle), as the whole width it proves (a width is a whole number; a timing a
    hair fast proves no more)."""
    rates = [e.length / e.cycles for e in singletons.experiments
             if e.cycles and not any(f.split("_")[0].upper() == "NOP" for f in e.forms())]
    if not rates:
        return None
    return float(math.floor(max(rates) * (1 + SNAP))) or None


def measure_frontend(*, cache_dir: str | None, options: RunOptions = BLOCK_OPTIONS,
                     floor: float | None = None, rounds: int = ROUNDS,
                     progress=None) -> MeasuredFrontEnd:
    """Time the probes (through the cache) and read them. While the reading has doubts (a
    width below `floor`, a loop iteration above a cycle, a probe without a number: what a busy
    sibling thread does), every probe is timed again, up to `rounds` in all, each keeping its
    fastest time (also in the cache, so the next reading starts from it).
    progress(Progress) before and after each harness run (phase "front end", or "front end
    (again)" for a later round)."""
    check_host()
    cache = ResultCache(cache_dir, cpu_identity())
    started = time.monotonic()

    def report(phase: str, done: int, total: int, cached: int) -> None:
        if progress:
            progress(Progress(phase, done, total, cached, time.monotonic() - started))
    try:
        cycles = _measure_probes(cache, options, use_cache=True,
                                 report=lambda *n: report("front end", *n))
        front, done = read_frontend(cycles, floor), 1
        while done < rounds and doubts(front, floor):
            # only the probes in doubt: a round of all 95 took 15-19 s on a Zen 3 guest, where
            # the loop probes (8) and the store probes (10) were the ones in doubt
            again = _measure_probes(cache, options, use_cache=False,
                                    only=doubted_probes(front, floor) or None,
                                    report=lambda *n: report("front end (again)", *n))
            cycles = {name: min((c for c in (cycles.get(name), again.get(name)) if c),
                                default=None) for name in {**cycles, **again}}
            before, front, done = front, read_frontend(cycles, floor), done + 1
            if _facts(front, floor) == _facts(before, floor):
                # a round that read the same facts with the same doubts: those are the core's
                # (Zen 3 reads four stores of different forms at 0.57 a cycle every time), and
                # another round costs its time for nothing
                break
        front.details["rounds"] = done
        # a broken premise is the core's, not a disturbance's: said, not measured again
        left = doubts(front, floor) + front.premise
        if left:
            front.details["doubts"] = left
    finally:
        cache.close()
    return MeasuredFrontEnd(front, cpu_name(), datetime.date.today().isoformat())


def _facts(front, floor) -> tuple:
    """What a reading says: its facts, its width and its doubts' kinds (their numbers
    aside)."""
    kinds = sorted(re.sub(r"\d+(\.\d+)?", "#", d) for d in doubts(front, floor))
    return sorted(front.pipeline.items()), front.r_max, kinds


def _measure_probes(cache: ResultCache, options: RunOptions, use_cache: bool,
                    only: set[str] | None = None,
                    report=lambda done, total, cached: None) -> dict:
    """{probe name: cycles or None} of every probe (of those named `only`): from the cache
    where it has them (use_cache), else timed; a timing faster than the cache's replaces it."""
    cycles: dict[str, float | None] = {}
    blocks, loops = [], []
    for probe in probes():
        if only is not None and probe.name not in only:
            continue
        prepared = _prepared(probe)
        if probe.loop:
            key = block_key(LOOP_SYNTAX, probe.lines, cpu_identity(), options.cache_params())
            hit = cache.get(key)
            if use_cache and hit is not None:
                cycles[probe.name] = hit.get("cycles")
            else:
                loops.append((probe, prepared, key, hit and hit.get("cycles")))
            continue
        key = block_key(prepared.syntax, prepared.lines, cpu_identity(), options.cache_params())
        hit = cached_block(cache, prepared, options)
        if use_cache and hit is not None:
            cycles[probe.name] = hit.cycles
        else:
            blocks.append((probe, prepared, key, None if hit is None else hit.cycles))
    total, cached = len(cycles) + len(blocks) + len(loops), len(cycles)
    report(len(cycles), total, cached)
    if blocks:
        for (probe, _, key, old), timing in zip(blocks, measure_blocks([b for _, b, _, _ in blocks],
                                                                       options)):
            cycles[probe.name] = c = timing.cycles
            if c is not None and (old is None or c < old):
                cache.put(key, c, None, result=timing.to_json())
        report(len(cycles), total, cached)
    if loops:
        kernels = [block_kernel(f"pm_loop{i}", list(p.lines), SYNTAX, b.counter,
                                b.vector_width, b.layout)
                   for i, (p, b, _, _) in enumerate(loops)]
        for (probe, _, key, old), timing in zip(loops, run_kernels(kernels, options, passes=2,
                                                                   max_passes=4)):
            cycles[probe.name] = c = timing.cycles
            if c is not None and (old is None or c < old):
                cache.put(key, c, None)
        report(len(cycles), total, cached)
    return cycles
