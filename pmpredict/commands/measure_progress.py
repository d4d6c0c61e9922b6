"""The progress line of long measurements (`measure --experiments/--training-set`,
`infer --measure`) and the plumbing that stops them cleanly: a time limit and SIGTERM."""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager

# exit status of a measurement stopped by --time-limit: rerun the same command to resume
STOPPED = 3


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class MeasureProgress:
    """Called with every `Progress` of the measurement engine: one line on stderr naming the
    phase, its count and an ETA over all phases still to come (a rewritten line on a
    terminal, else a line every `interval` seconds and at the end of each phase)."""

    def __init__(self, stream=None, interval: float = 10.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self.last_line = None              # when the last line was written (not a terminal)
        self.finished: dict[str, tuple[int, float]] = {}   # phase -> (measured, seconds)
        self.current = None

    def eta(self, p) -> float | None:
        """Seconds left for this phase and the planned ones after it, at this run's rate."""
        measured = sum(m for m, _ in self.finished.values()) + p.done - p.cached
        seconds = sum(s for _, s in self.finished.values()) + p.elapsed
        if measured <= 0:
            return None
        names = [name for name, _ in p.plan]
        later = names[names.index(p.phase) + 1:] if p.phase in names else []
        left = p.total - p.done + sum(n for name, n in p.plan if name in later)
        return seconds / measured * left

    def line(self, p) -> str:
        names = [name for name, _ in p.plan]
        step = f" ({names.index(p.phase) + 1}/{len(names)})" if p.phase in names else ""
        text = f"measure {p.phase}{step}: {p.done}/{p.total}"
        if p.cached:
            text += f" ({p.cached} cached)"
        eta = self.eta(p)
        if eta:
            text += f", eta {duration(eta)}" + (" for all phases" if step else "")
        return text

    def __call__(self, p) -> None:
        if self.current is not None and self.current.phase != p.phase:
            c = self.current
            self.finished[c.phase] = (c.done - c.cached, c.elapsed)
            if self.tty:
                self.stream.write("\n")
        self.current = p
        text = self.line(p)
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K")
        elif p.done >= p.total or self.last_line is None or now - self.last_line >= self.interval:
            self.last_line = now
            self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.current is not None:
            self.stream.write("\n")
            self.stream.flush()


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
