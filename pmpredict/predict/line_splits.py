"""Accesses that cross a cache line: where they are, and what they cost as the core runs them.

Engine layer: plain data in, plain data out, no I/O.

A load or store whose bytes lie in two lines runs as two accesses on every recent core: its
access's uops once more (the pipeline's split_load_extra, split_store_extra: measured by the
"splits" front-end probes, measure/probes.py). Whether an access splits depends on where its
base points. The engine takes every base as aligned to a line, as the measurement harness
places them (measure/layout.py) and as stack frames and allocations of vector data usually
are; an address made of an index register counts the index as a multiple of a line too. With
that, an access splits where its offset within the line plus its width passes the line's end.

A store splits at a smaller aligned block inside the line where the core does so (the
pipeline's store_split_bytes, measured by the same probes: on Zen 4 a store across a 32-byte
block costs what one across a line does; loads split at a line's end only there).

A pointer that moves every iteration moves its accesses: one that moves by a whole number of
lines splits every iteration or never; one that moves by less splits on some iterations (a
share over the period the offsets repeat in), which the engine does not count and the
prediction says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import gcd

from pmpredict.predict.annotate import Annotated, Note
from pmpredict.predict.deps import Node, SymbolicAddresses

# bytes of a cache line on every core in scope (x86-64 since the Pentium 4, Arm Cortex-A72)
LINE_BYTES = 64

# Note.what of a split access
LINE_SPLIT = "line split"


def crosses(offset: int, nbytes: int, boundary: int) -> bool:
    """Whether `nbytes` at `offset` from an address aligned to `boundary` pass a multiple of it
    (a line's end, a store-pairing block's end)."""
    return offset % boundary + nbytes > boundary


@dataclass(frozen=True)
class Split:
    """One memory access of one node that crosses a line (a store: its split block) on `share`
    of the iterations."""
    node: int
    access: int           # its index in the node's memory accesses
    store: bool
    share: float          # 1.0: every iteration
    boundary: int = LINE_BYTES      # the aligned block it crosses


def line_splits(nodes: list[Node], addresses: SymbolicAddresses | None = None,
                line: int = LINE_BYTES, store_block: int | None = None) -> list[Split]:
    """The accesses that cross a line (a store: its `store_block`, a line where not given),
    every base taken as line-aligned (module docstring)."""
    store_block = store_block or line
    if not could_split(nodes, min(line, store_block)):
        return []
    addresses = addresses or SymbolicAddresses(nodes)
    out = []
    for i, node in enumerate(nodes):
        for k, ref in enumerate(node.memory):
            if ref.implicit or not ref.width or ref.width <= 8:
                continue                # pushes and pops: the stack engine's, 8-byte aligned
            key, offset = addresses.where[i][k]
            step = _step(addresses, key)
            # a store wider than its split block is measured as the form (the harness's bases
            # are aligned): only a line's end splits it
            block = store_block if ref.width // 8 <= store_block else line
            for store, on, boundary in ((False, ref.load, line), (True, ref.store, block)):
                share = _split_share(offset, ref.width // 8, step, boundary) if on else 0.0
                if share > 0:
                    out.append(Split(i, k, store, share, boundary))
    return out


def sub_line_store_splits(nodes: list[Node], blocks: tuple[int, ...],
                          addresses: SymbolicAddresses | None = None) -> bool:
    """Whether a store would split at one of the aligned `blocks` inside a line and not at the
    line (whether store_split_bytes matters to the kernel)."""
    if not could_split(nodes, min(blocks)):
        return False
    addresses = addresses or SymbolicAddresses(nodes)
    at_line = {(s.node, s.access) for s in line_splits(nodes, addresses) if s.store}
    return any({(s.node, s.access) for s in line_splits(nodes, addresses, store_block=block)
                if s.store} - at_line for block in blocks)


def could_split(nodes: list[Node], line: int) -> bool:
    """Cheap and sure: no access splits where every displacement leaves its access inside a
    line and no register moves, or is copied, by other than whole lines (most kernels: the
    symbolic addresses are not worth making)."""
    accesses = [ref for node in nodes for ref in node.memory
                if not ref.implicit and ref.width and ref.width > 8]
    if not accesses:
        return False
    if any(crosses(ref.address[3], ref.width // 8, line) for ref in accesses):
        return True
    return any(c % line for node in nodes for _, c in node.offsets) or \
        any(c % line for node in nodes for _, _, c in node.copies)


def _step(addresses: SymbolicAddresses, key: tuple) -> int | None:
    """Bytes the access moves every iteration (0: it stays); None where it depends on a value
    the iteration computes afresh (taken as aligned each time: it stays)."""
    before = addresses.previous_iteration(key, 0)
    return None if before is None else -before[1]


def _split_share(offset: int, width: int, step: int | None, line: int) -> float:
    """Share of the iterations on which `width` bytes at `offset` from an aligned base (moving
    `step` bytes an iteration) cross a line."""
    if not step or step % line == 0:
        return 1.0 if crosses(offset, width, line) else 0.0
    period = line // gcd(step % line, line)
    crossing = sum(1 for n in range(period) if crosses(offset + n * step, width, line))
    return crossing / period


def split_notes(split: Split, line: int = LINE_BYTES) -> Note:
    """What the prediction says of one split access (a note of its instruction)."""
    what = "store" if split.store else "load"
    where = f"a {line}-byte line" if split.boundary >= line else \
        f"a {split.boundary}-byte block (a store splits there on this core)"
    if split.share >= 1.0:
        return Note(LINE_SPLIT, f"its {what} crosses {where}, its base taken as "
                                f"{line}-byte aligned: counted as two accesses")
    return Note(LINE_SPLIT, f"its {what} crosses {where} on {split.share:.0%} of the "
                            f"iterations (its base taken as {line}-byte aligned): not counted")


def measured_splits(annotated: list[Annotated], splits: list[Split], node_rows: list[int],
                    variant_uops) -> tuple[list[Annotated], list[Split], tuple[str, ...]]:
    """The instructions whose load crosses a line on every iteration run as their form's
    split variant was measured (pmpredict.isa.forms.split_variant; `variant_uops(form)`: its
    uops in the model, None where the model lacks it): (the instructions, the splits left to
    apply_splits, the split variants such loads want, in the model or not). An instruction
    that also stores (a read-modify-write) is left to the rule: its variant would hide which
    of its accesses split."""
    out, rest, wanted = list(annotated), [], []
    for split in splits:
        row = node_rows[split.node]
        a = out[row]
        if split.store or split.share < 1.0 or not a.form or a.semantics.stores:
            rest.append(split)
            continue
        variant, uops = variant_uops(a.form)
        if variant is None:
            rest.append(split)
            continue
        wanted.append(variant)
        if not uops:
            rest.append(split)
            continue
        note = Note(LINE_SPLIT, f"its load crosses a {split.boundary}-byte line, its base taken "
                                f"as {LINE_BYTES}-byte aligned: as its form measured across a "
                                f"line")
        out[row] = replace(a, uops=tuple(uops), assumed=a.assumed + (note,))
    return out, rest, tuple(dict.fromkeys(wanted))


def apply_splits(annotated: list[Annotated], splits: list[Split], node_rows: list[int],
                 access_uops, extra_load: int, extra_store: int) -> list[Annotated]:
    """The instructions with their split accesses run as the core does: an access that splits
    every iteration runs `access_uops(annotated, store)` (its access's uops: annotated's
    uops that do the load or the store) `extra_load` / `extra_store` times more; every split
    access is noted."""
    out = list(annotated)
    for split in splits:
        row = node_rows[split.node]
        a = out[row]
        extra = extra_store if split.store else extra_load
        uops = a.uops
        if split.share >= 1.0 and extra > 0 and a.uops:
            more = access_uops(a, split.store)
            uops = _merged(a.uops, tuple((mask, count * extra) for mask, count in more))
        note = split_notes(split)
        out[row] = replace(a, uops=uops, assumed=a.assumed + (note,)) \
            if note not in a.assumed else replace(a, uops=uops)
    return out


def vector_split_cycles(nodes: list[Node], split_loads, per_cycle: int) -> float | None:
    """Cycles an iteration's vector loads take where a vector load across a line runs alone in
    its cycle (the pipeline's split_load_alone; Zen 4: `vmovdqu xmm0, [rsi + 120]` 1.00 cycles
    a loop, `movss` 0.50, the two 2.00, with two `movss` 2.00, with three 3.00): a cycle each,
    and each run of other vector loads between two of them (the loop wraps) ceil(run /
    per_cycle), the loads after a split waiting for the next cycle. `split_loads`: (node,
    access) of the loads that cross a line every iteration. None: no vector load does."""
    sequence = [(n, k) in split_loads for n, node in enumerate(nodes)
                for k, ref in enumerate(node.memory) if ref.load and ref.vector_unit]
    if not any(sequence):
        return None
    first = sequence.index(True)
    cycles, run = 0, 0
    for split in sequence[first:] + sequence[:first] + [True]:
        if split:
            cycles += 1 + -(-run // max(1, per_cycle))
            run = 0
        else:
            run += 1
    return float(cycles - 1)                    # the closing marker is the first split again


def _merged(uops, more) -> tuple[tuple[int, int], ...]:
    counts: dict[int, int] = {}
    for mask, count in tuple(uops) + tuple(more):
        counts[mask] = counts.get(mask, 0) + count
    return tuple(counts.items())
