"""How long jobs stop cleanly: a time limit (exit status 3, the same command resumes) and
SIGTERM taken as Ctrl-C."""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager

# exit status of a measurement stopped by --time-limit: rerun the same command to resume
STOPPED = 3


def deadline_check(seconds: float | None, start: float | None = None):
    """should_stop for the engines: True once `seconds` have passed since `start` (now)."""
    if not seconds:
        return None
    deadline = (time.monotonic() if start is None else start) + seconds
    return lambda: time.monotonic() >= deadline


@contextmanager
def sigterm_as_interrupt():
    """SIGTERM behaves like Ctrl-C: KeyboardInterrupt unwinds, so the harness is stopped,
    temporary directories are removed and the cache keeps every finished result."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:                     # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
