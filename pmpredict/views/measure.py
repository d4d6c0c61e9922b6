"""Views of `pmpredict measure`: a timed basic block (pmpredict.measure.BlockMeasurement), or the
summary of a measured experiment set (SetMeasurement)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SetMeasurement:
    """What `measure --experiments` wrote."""
    output: str
    measured: int
    failed: int
    errors: tuple            # the distinct reasons of the failures

    @classmethod
    def of(cls, output: str, exps) -> "SetMeasurement":
        failed = [e for e in exps.experiments if e.cycles is None]
        return cls(output, len(exps) - len(failed), len(failed),
                   tuple(sorted({e.other.get("error", "") for e in failed})))


def json(result) -> dict:
    if isinstance(result, SetMeasurement):
        return {"output": result.output, "measured": result.measured, "failed": result.failed,
                "errors": list(result.errors)}
    return result.to_json()                  # print_json turns a non-finite number into null


def text(result, *, path: str = "", large_spread: float = 0.0) -> str:
    if isinstance(result, SetMeasurement):
        lines = [f"{result.output}: {result.measured} experiments measured, "
                 f"{result.failed} failed"]
        return "\n".join(lines + [f"  failed: {reason}" for reason in result.errors]) + "\n"
    if result.cycles is None:
        return f"{path}: not measured: {result.error}\n"
    unrolls = "/".join(str(v.unroll) for v in result.variants)
    notes = []
    if result.spread is not None and result.spread > large_spread:
        notes.append(f"spread {result.spread * 100:.0f}%")
    if not result.stable:
        low, high = result.timing.range or (result.cycles, result.cycles)
        notes.append(f"unstable: {low:.3f} to {high:.3f} across harness processes and unroll "
                     "variants; the fastest runs did not repeat, or the variants disagree: the "
                     "machine is busy or the block has several steady states")
    retaken = sum(v.contended for v in result.variants)
    busy = sum(v.busy for v in result.variants)
    if busy:
        notes.append(f"{busy} samples kept while the core's other hardware thread was busy "
                     "(the canary ran slow): the figure may be high")
    elif retaken:
        notes.append(f"{retaken} samples taken again: the core's other hardware thread was "
                     "busy (the canary ran slow)")
    if result.timing.fewer_copies:
        short, long = result.timing.pair
        notes.append(f"from {short} and {long} copies: longer loops ran slower a copy (a limit "
                     "of the core more copies of the block exceed)")
    if result.cached:
        notes.append("cached: --no-cache measures again")
    kernel = result.kernel
    lines = [f"{result.cycles:.3f} cycles per iteration  ({result.instruction_count} "
             f"instructions, {result.syntax} syntax, unrolled {unrolls}x, {result.cpu})"
             + (f"  [{'; '.join(notes)}]" if notes else ""),
             f"  kernel: {kernel['description']}, lines {kernel['lines'][0]}-{kernel['lines'][1]}"]
    lines += [f"  (line {d.line}: '{d.text}' left out: the harness provides the loop)"
              for d in result.dropped]
    lines += [f"  Note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"
