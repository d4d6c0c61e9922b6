"""What tests may expect of one microarchitecture, keyed by /proc/cpuinfo's vendor, family and
model. A host test asserts invariants (what holds on every recent x86-64 core) and, only where
this table knows the host's core, the documented per-core values from it; an unknown core
checks the invariants alone.

Values are documented ones (Intel's optimisation manual, AMD's software optimisation guides,
uops.info, Agner Fog's tables) or, where a row says so, measured on that core by this suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Core:
    name: str
    # latency of one form's chain (every source) on this core, by the test's form name
    latencies: dict[str, float] = field(default_factory=dict)
    # four independent add r64, r64 chains run at exactly one cycle an iteration (no port
    # conflict: AMD's scheduler picks a free ALU; Intel binds a uop to a port at rename and
    # measured 1.15 on Raptor Cove)
    four_add_chains_at_latency: bool = False


_SKYLAKE_FP = {"addsd": 4.0, "mulps": 4.0, "fma": 4.0}
_ZEN_FP = {"addsd": 3.0, "mulps": 3.0, "fma": 4.0}

# (vendor, family) -> [(models, core)]
_CORES: dict[tuple[str, int], list[tuple[frozenset[int], Core]]] = {
    ("GenuineIntel", 6): [
        (frozenset({0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6}),
         Core("Skylake family (Skylake to Cascade Lake, Comet Lake)", _SKYLAKE_FP)),
        (frozenset({0x6A, 0x6C, 0x7D, 0x7E, 0x8C, 0x8D}),
         Core("Sunny Cove / Willow Cove (Ice Lake, Tiger Lake)", _SKYLAKE_FP)),
        # Golden Cove and Raptor Cove: a 2-cycle FP adder (measured 2 on Emerald Rapids)
        (frozenset({0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0x8F, 0xCF}),
         Core("Golden Cove / Raptor Cove (Alder Lake, Raptor Lake, Sapphire and Emerald Rapids)",
              {"addsd": 2.0, "mulps": 4.0, "fma": 4.0})),
    ],
    ("AuthenticAMD", 0x17): [
        (frozenset(range(0x30, 0x100)), Core("Zen 2", _ZEN_FP, four_add_chains_at_latency=True)),
    ],
    ("AuthenticAMD", 0x19): [
        (frozenset(range(0x00, 0x10)) | frozenset(range(0x20, 0x60)),
         Core("Zen 3", _ZEN_FP, four_add_chains_at_latency=True)),
        (frozenset(range(0x10, 0x20)) | frozenset(range(0x60, 0x80)) | frozenset(range(0xA0, 0xB0)),
         Core("Zen 4", _ZEN_FP, four_add_chains_at_latency=True)),
    ],
}


def known_core(info: dict[str, str]) -> Core | None:
    """The table's row for the core /proc/cpuinfo describes (`info` as measure.cpu.cpuinfo
    returns it), or None for a core the table does not know."""
    try:
        key = (info.get("vendor_id", ""), int(info.get("cpu family", "")))
        model = int(info.get("model", ""))
    except ValueError:
        return None
    return next((core for models, core in _CORES.get(key, []) if model in models), None)


def measured_close(measurement, expected: float, tolerance: float) -> bool:
    """A block measurement agrees with `expected`: within `tolerance` cycles where the harness
    reproduced its figure (`stable`); where it says it did not (a busy machine, a block with
    several steady states), `expected` lies within the range it reports (every process and
    unroll variant, BlockTiming.range) widened by `tolerance`. What a timing test asserts is
    what the harness reports as reproduced, never one sample against a fixed tolerance."""
    if measurement.cycles is None:
        return False
    if measurement.stable:
        return abs(measurement.cycles - expected) <= tolerance
    low, high = measurement.timing.range
    return low - tolerance <= expected <= high + tolerance


# Twelve imul r64, r64 chains, each one link a loop iteration through its own register: with
# imul's latency of 3 (every recent x86-64 core), a core with up to four multipliers is bound by
# their throughput, not by a chain.
TWELVE_IMULS = "".join(f"imul %rax, %{r}\n" for r in
                       ("rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
                        "r13", "r14"))


def independent_imul_cycles(tries: int = 3) -> float:
    """Cycles per imul r64, r64 among independent ones on this host, timed as a block (the block
    path): what the experiment path's figure for the form must agree with. It is a fact of the
    core, not a constant: one a cycle on Intel and Zen 1-4, three a cycle on Zen 5."""
    from pmpredict.measure import measure_block
    # the fastest reading the harness reports reproduced, the fastest of all where none is (a
    # disturbed unroll variant misreads a block low as well as high)
    readings = [measure_block(TWELVE_IMULS, "att") for _ in range(tries)]
    good = [r.cycles for r in readings if r.stable and r.cycles is not None]
    best = min(good or [r.cycles for r in readings])
    return best / 12
