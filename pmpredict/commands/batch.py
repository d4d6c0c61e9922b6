"""Many kernels in one go: each rendered by a caller's function, in order, the work shared by
forked worker processes, or by the workers of a Dask cluster, when asked.

Front-end helper (no algorithm): `pmpredict predict` with several files or LLVM-MCA regions
renders through it. Forked workers start after the first item is rendered in this process,
so they inherit everything built so far (models, the form matcher, per-instruction results)
instead of building it again. On a Dask cluster (render_on_cluster) the render function,
models included, goes to every worker once, and chunks of items follow it as tasks.
"""

from __future__ import annotations

import gc
import signal

from pmpredict.errors import InputError

GC_YOUNG = 100_000
DASK_CHUNK = 200                # items per task on a Dask cluster (a task costs ~1 ms to send)

# what the forked workers render: (items, render), set before the pool starts
_work: tuple | None = None


def _render_range(bounds: tuple[int, int]) -> list[tuple]:
    items, render = _work
    return _render_items(render, items[bounds[0]:bounds[1]])


def _render_items(render, items) -> list[tuple]:
    """[(text, None)] per item, up to the first InputError, which ends the list as
    (None, its fields): sent back as values, as an exception travels badly."""
    out = []
    for item in items:
        try:
            out.append((render(item), None))
        except InputError as exc:
            out.append((None, (exc.path, exc.message, exc.line, exc.column)))
            break
    return out


def _unpack(results):
    for text, error in results:
        if error is not None:
            raise InputError(*error)
        yield text


def _worker_start() -> None:
    """A worker ends when the pool terminates it (SIGTERM): quietly, not as the parent's
    Ctrl-C (cli.main turns SIGTERM into KeyboardInterrupt, which the fork inherits)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C: the parent stops the pool


def _can_fork() -> bool:
    # deferred: multiprocessing (~5 ms) only where workers are asked for
    import multiprocessing
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
        # deferred: multiprocessing, as in _can_fork
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_start) as pool:
            for texts in pool.imap(_render_range, list(zip(cuts, cuts[1:]))):
                yield from _unpack(texts)
    finally:
        _work = None
        gc.set_threshold(*threshold)
        gc.unfreeze()


def render_on_cluster(items: list, render, cluster, chunk: int = DASK_CHUNK, light=None):
    """Yield render(item) for every item, in order, rendered in chunks of `chunk` items on
    `cluster` (a pmpredict.cluster.Cluster): the render function goes to every worker once,
    the results stream back in input order as their chunks finish. light(item): what of an
    item travels (e.g. without the whole parsed file), by default the item itself."""
    if not items:
        return
    send = [light(item) for item in items] if light else items
    client = cluster.client
    remote = client.scatter(render, broadcast=True)
    futures = [client.submit(_render_items, remote, send[i:i + chunk], pure=False)
               for i in range(0, len(send), chunk)]
    for future in futures:
        yield from _unpack(future.result())
        future.release()
