"""Many kernels in one go: each rendered by a caller's function, in order, the work shared by
forked worker processes when asked.

Front-end helper (no algorithm): `pmpredict predict` with several files or LLVM-MCA regions
renders through it. Workers are forked after the first item is rendered in this process, so
they inherit everything built so far (models, the form matcher, per-instruction results, the
compiled simulation) instead of building it again.
"""

from __future__ import annotations

import gc
import multiprocessing
import signal

from pmpredict.errors import InputError

GC_YOUNG = 100_000

# what the forked workers render: (items, render), set before the pool starts
_work: tuple | None = None


def _render_range(bounds: tuple[int, int]) -> list[tuple]:
    items, render = _work
    out = []
    for i in range(*bounds):
        try:
            out.append((render(items[i]), None))
        except InputError as exc:             # sent back as values: an exception travels badly
            out.append((None, (exc.path, exc.message, exc.line, exc.column)))
            break
    return out


def _worker_start() -> None:
    """A worker ends when the pool terminates it (SIGTERM): quietly, not as the parent's
    Ctrl-C (cli.main turns SIGTERM into KeyboardInterrupt, which the fork inherits)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C: the parent stops the pool


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def render_all(items: list, render, jobs: int = 1):
    """Yield render(item) for every item, in order. jobs > 1: that many forked processes
    render contiguous runs of items (an InputError in one is raised here, in order)."""
    global _work
    if not items:
        return
    # what exists now (parsed files, models, tables) lives to the end: the garbage collector
    # need not look at it again after every few thousand new objects
    gc.freeze()
    # and the young generation is collected every GC_YOUNG allocations instead of 700: a
    # kernel's prediction makes thousands of short-lived objects that reference counting
    # frees (measured on 2,000 BHive blocks: ~10% of the run spent in collections)
    threshold = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, *threshold[1:])
    try:
        yield render(items[0])
        rest = len(items) - 1
        forks = jobs > 1 and rest >= 2 * jobs and _can_fork()
        if not forks:
            for item in items[1:]:
                yield render(item)
            return
        # a few runs per worker: an uneven run does not leave the other worker idle for long
        runs = min(rest, 4 * jobs)
        cuts = [1 + rest * k // runs for k in range(runs + 1)]
        _work = (items, render)
        with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_start) as pool:
            for texts in pool.imap(_render_range, list(zip(cuts, cuts[1:]))):
                for text, error in texts:
                    if error is not None:
                        raise InputError(*error)
                    yield text
    finally:
        _work = None
        gc.set_threshold(*threshold)
        gc.unfreeze()
