"""What timing a basic block gives (block.py): the timing the block cache keeps (`BlockTiming`,
with its two unroll variants) and `pmpredict measure FILE.s`'s result (`BlockMeasurement`:
the timing plus what was timed and how the block was set up).

`to_json` gives the JSON `pmpredict measure --json` prints and the cache stores, key for key
and in the same order (docs/MEASUREMENT.md, "Reported"); keys that are only sometimes there
(`error`, `symbols`, `pointer_loads`, `dropped`, `notes`) are left out when empty.
"""

from __future__ import annotations

from dataclasses import dataclass


class MalformedTiming(ValueError):
    """A cached block timing this version cannot read (it is measured again)."""


@dataclass(frozen=True)
class UnrollVariant:
    """One unroll variant of a timed block: `unroll` copies of the block per loop iteration."""
    unroll: int
    cycles_per_copy: float | None        # None: this variant failed (see error)
    loop_cycles: float | None            # per loop iteration: the copies and the loop overhead
    spread: float | None                 # (median - min) / min of its runs
    samples: int
    confirmed: bool                      # its fastest runs were reproduced
    pass_cycles: tuple[float, ...]       # cycles per copy in each harness process
    error: str | None = None
    contended: int = 0                   # samples taken again: a busy sibling thread (canary)
    busy: int = 0                        # samples kept although the canary ran slow

    def to_json(self) -> dict:
        out = {"unroll": self.unroll, "cycles": self.cycles_per_copy,
               "loop_cycles": self.loop_cycles, "spread": self.spread, "samples": self.samples,
               "confirmed": self.confirmed, "passes": list(self.pass_cycles)}
        if self.error:
            out["error"] = self.error
        if self.contended:
            out["contended"] = self.contended
        if self.busy:
            out["busy"] = self.busy
        return out

    @classmethod
    def from_json(cls, data: dict) -> "UnrollVariant":
        return cls(data["unroll"], data["cycles"], data["loop_cycles"], data["spread"],
                   data["samples"], data["confirmed"], tuple(data["passes"]), data.get("error"),
                   data.get("contended", 0), data.get("busy", 0))


@dataclass(frozen=True)
class BlockTiming:
    """A block's cycles per iteration from the timings of its two unroll variants: what the
    block cache keeps (measure_blocks, cached_block)."""
    cycles: float | None                 # None: not measured (see error)
    spread: float | None                 # the larger of the variants' spreads
    method: str                          # "difference": (T(2u) - T(u)) / u; or "per-copy"
    overhead: float | None               # the loop overhead the two variants imply (cycles)
    variants: tuple[UnrollVariant, ...]  # u and 2u copies (and fewer, block.measure_blocks)
    symbols: tuple[str, ...]             # rip-relative symbols that got data objects (sorted)
    stable: bool                         # reproduced in and across processes, variants agree
    error: str | None = None             # why there are no cycles
    # the copies of the two variants the figure comes from (None: the first two variants)
    unroll: tuple[int, int] | None = None

    @property
    def pair(self) -> tuple[int, int]:
        """The copies (u, 2u) of the variants the figure comes from."""
        if self.unroll is not None:
            return self.unroll
        return tuple(v.unroll for v in self.variants[:2])

    @property
    def fewer_copies(self) -> bool:
        """Longer loops ran slower a copy, so the figure comes from fewer copies than the
        first pair timed."""
        return len(self.variants) > 2

    @property
    def range(self) -> tuple[float, float] | None:
        """(lowest, highest) cycles per copy any harness process and unroll variant gave, with
        the reported figure: how far apart what was seen lies (None: not measured)."""
        seen = [c for v in self.variants for c in v.pass_cycles if c is not None]
        seen += [self.cycles] if self.cycles is not None else []
        return (round(min(seen), 5), round(max(seen), 5)) if seen else None

    def to_json(self) -> dict:
        out = {"cycles": self.cycles, "spread": self.spread, "method": self.method,
               "overhead": self.overhead, "variants": [v.to_json() for v in self.variants],
               "symbols": list(self.symbols), "stable": self.stable, "unroll": list(self.pair)}
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, data: dict) -> "BlockTiming":
        """The timing `to_json` wrote; MalformedTiming for anything else."""
        try:
            return cls(data["cycles"], data["spread"], data["method"], data["overhead"],
                       tuple(UnrollVariant.from_json(v) for v in data["variants"]),
                       tuple(data["symbols"]), data["stable"], data.get("error"),
                       tuple(data["unroll"]) if data.get("unroll") else None)
        except (KeyError, TypeError, AttributeError) as exc:
            raise MalformedTiming(f"not a block timing: {exc!r}") from None


@dataclass(frozen=True)
class DroppedInstruction:
    """The trailing branch left out of a block: the harness provides the loop."""
    line: int
    text: str

    def to_json(self) -> dict:
        return {"line": self.line, "text": self.text}


@dataclass(frozen=True)
class BlockMeasurement:
    """`pmpredict measure FILE.s`: the block's timing, what was timed and how it was set up."""
    timing: BlockTiming
    instruction_count: int               # instructions in the block (the dropped branch not)
    syntax: str                          # "att" or "intel"
    cpu: str                             # the CPU's name
    loop_counter: str                    # the register counting iterations, or "memory"
    kernel: dict                         # how the kernel was chosen (pmpredict.asm.kernel)
    cached: bool                         # read back from the block cache
    initial_registers: tuple[tuple[str, int], ...]   # every general-purpose register's start
    pointer_load_lines: tuple[int, ...] = ()   # source lines whose loaded value is an address
    dropped: tuple[DroppedInstruction, ...] = ()
    notes: tuple[str, ...] = ()          # how the block was set up: per division, what it
    # divides first and why (block.division_note)

    # the timing's figures, read as the measurement's own
    @property
    def cycles(self) -> float | None:
        return self.timing.cycles

    @property
    def spread(self) -> float | None:
        return self.timing.spread

    @property
    def stable(self) -> bool:
        return self.timing.stable

    @property
    def method(self) -> str:
        return self.timing.method

    @property
    def overhead(self) -> float | None:
        return self.timing.overhead

    @property
    def variants(self) -> tuple[UnrollVariant, ...]:
        return self.timing.variants

    @property
    def symbols(self) -> tuple[str, ...]:
        return self.timing.symbols

    @property
    def error(self) -> str | None:
        return self.timing.error

    def to_json(self) -> dict:
        t = self.timing
        out = {"cycles": t.cycles, "spread": t.spread, "stable": t.stable,
               "range": list(t.range) if t.range else None,
               "instructions": self.instruction_count, "syntax": self.syntax, "cpu": self.cpu,
               "loop_counter": self.loop_counter, "kernel": self.kernel, "method": t.method,
               "overhead": t.overhead, "variants": [v.to_json() for v in t.variants],
               "unroll": list(t.pair)}
        if t.symbols:
            out["symbols"] = list(t.symbols)
        if t.error is not None:
            out["error"] = t.error
        out["cached"] = self.cached
        out["registers"] = {reg: hex(value) for reg, value in self.initial_registers}
        if self.pointer_load_lines:
            out["pointer_loads"] = list(self.pointer_load_lines)
        if self.dropped:
            out["dropped"] = [d.to_json() for d in self.dropped]
        if self.notes:
            out["notes"] = list(self.notes)
        return out
