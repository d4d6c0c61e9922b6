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
import re
import time
from dataclasses import dataclass, replace

from .block import BLOCK_OPTIONS, cached_block, measure_blocks, prepare_block
from .cache import ResultCache, block_key
from .calibrate import cpu_identity, cpu_name
from .codegen import block_kernel
from .measure_set import Progress
from .probes import FrontEnd, Probe, probes, read_frontend
from .runner import RunOptions, check_host, run_kernels

SYNTAX = "intel"
LOOP_SYNTAX = "intel-loop"            # the cache key of a loop probe (its body is not unrolled)
_JUMP_OR_LABEL = re.compile(r"^(j[a-z]+\s|\d+:)")


@dataclass
class MeasuredFrontEnd:
    facts: FrontEnd
    cpu: str
    date: str

    @property
    def source(self) -> str:
        return f"measured on {self.cpu} {self.date}"

    def apply(self, model):
        """The model with the measured issue width and pipeline facts (and what they rest on
        in its provenance)."""
        pipeline = {**model.pipeline, **self.facts.pipeline}
        sources = {**model.pipeline_source, **{k: self.source for k in self.facts.pipeline}}
        provenance = {**model.provenance, "front_end": {"source": self.source,
                                                        **self.facts.details}}
        return replace(model, r_max=self.facts.r_max or model.r_max, pipeline=pipeline,
                       pipeline_source=sources, provenance=provenance)


def _prepared(probe: Probe):
    """A PreparedBlock of the probe's lines (jumps and labels included)."""
    plain = [line for line in probe.lines if not _JUMP_OR_LABEL.match(line)] or ["nop"]
    block = prepare_block("\n".join(plain) + "\n", SYNTAX, f"<probe {probe.name}>")
    return replace(block, lines=tuple(probe.lines))


def measure_frontend(*, cache_dir: str | None, options: RunOptions = BLOCK_OPTIONS,
                     progress=None) -> MeasuredFrontEnd:
    """Time the probes (through the cache) and read them; progress(Progress) before and
    after each of the two harness runs (phase "front end")."""
    check_host()
    cycles: dict[str, float | None] = {}
    cache = ResultCache(cache_dir, cpu_identity())
    started = time.monotonic()
    total = len(probes())

    def report():
        if progress:
            cached = total - len(blocks) - len(loops)
            progress(Progress("front end", len(cycles), total, cached,
                              time.monotonic() - started))
    try:
        blocks, loops = [], []
        for probe in probes():
            prepared = _prepared(probe)
            if probe.loop:
                key = block_key(LOOP_SYNTAX, probe.lines, cpu_identity(), options.cache_params())
                hit = cache.get(key)
                if hit is not None:
                    cycles[probe.name] = hit.get("cycles")
                else:
                    loops.append((probe, prepared, key))
                continue
            hit = cached_block(cache, prepared, options)
            if hit is not None:
                cycles[probe.name] = hit.get("cycles")
            else:
                blocks.append((probe, prepared))
        report()
        if blocks:
            for (probe, _), result in zip(blocks, measure_blocks([b for _, b in blocks], options,
                                                                  cache)):
                cycles[probe.name] = result.get("cycles")
            report()
        if loops:
            kernels = [block_kernel(f"pm_loop{i}", list(p.lines), SYNTAX, b.counter,
                                    b.vector_width, b.layout)
                       for i, (p, b, _) in enumerate(loops)]
            for (probe, _, key), timing in zip(loops, run_kernels(kernels, options, passes=2,
                                                                  max_passes=4)):
                cycles[probe.name] = timing.cycles
                if timing.cycles is not None:
                    cache.put(key, timing.cycles, None)
            report()
    finally:
        cache.close()
    return MeasuredFrontEnd(read_frontend(cycles), cpu_name(), datetime.date.today().isoformat())
