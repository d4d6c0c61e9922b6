"""The one progress display of every long job: measuring (`measure -e / --training-set`,
`infer --measure`, `predict --model host`) and inferring (`infer`).

It names the phase, the counts and an estimate of the time left for the whole job (every
planned phase, not only the current one). On a terminal it is a live bar drawn by tqdm; when
stderr is a file or a pipe it writes plain lines, one every `interval` seconds and one at the
end of each phase, so logs stay readable. The engines only call it back (measure_set.Progress
objects, the inference's progress dicts); nothing here computes anything the job needs.
"""

from __future__ import annotations

import sys
import time


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressDisplay:
    """Call it with every measurement `Progress`; `inference(info)` with every inference step.

    stream: where it writes (default stderr); interval: seconds between plain lines when the
    stream is not a terminal."""

    def __init__(self, stream=None, interval: float = 10.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self.last_line = None                # when the last plain line was written
        self.finished: dict[str, tuple[int, float]] = {}   # phase -> (measured, seconds)
        self.current = None                  # the last measurement Progress
        self.key = None                      # what the open bar / line shows
        self.bar = None                      # the tqdm bar (terminal only)
        self.steps = None                    # inference: (restarts, steps per start, distill)

    # --- measurement -------------------------------------------------------------------------

    def eta(self, p) -> float | None:
        """Seconds left for this phase and the planned ones after it, at this run's rate
        (cached results cost nothing and do not count)."""
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
        return f"measure {p.phase}{step}: {p.done}/{p.total}" + self._details(p, bool(step))

    def _details(self, p, several: bool) -> str:
        text = f" ({p.cached} cached)" if p.cached else ""
        eta = self.eta(p)
        if eta:
            text += f", eta {duration(eta)}" + (" for all phases" if several else "")
        return text

    def __call__(self, p) -> None:
        c = self.current
        if c is not None and c.phase != p.phase:
            self.finished[c.phase] = (c.done - c.cached, c.elapsed)
        self.current = p
        names = [name for name, _ in p.plan]
        step = f" ({names.index(p.phase) + 1}/{len(names)})" if p.phase in names else ""
        self._show(("measure", p.phase), f"measure {p.phase}{step}", p.done, p.total,
                   self._details(p, bool(step)), final=p.done >= p.total)

    # --- inference ---------------------------------------------------------------------------

    def plan_inference(self, restarts: int, ea_steps: int, sweeps: int, distill: int) -> None:
        """The most steps the inference can take (InferConfig.steps()): the ETA is an upper
        bound, as refinement stops early once a sweep changes nothing."""
        self.steps = (restarts, ea_steps, sweeps, distill)

    def inference(self, info: dict) -> None:
        restarts, ea_steps, sweeps, distill = self.steps or (1, 0, 0, 0)
        per_start = ea_steps + sweeps
        phase = info["phase"]
        what = "generation" if phase == "ea" else "sweep"
        start = "ensemble" if phase == "distill" else f"start {info['restart'] + 1}/{restarts}"
        if phase == "distill":
            done = restarts * per_start + info["step"]
        else:
            done = info["restart"] * per_start + info["step"] \
                + (ea_steps if phase == "refine" else 0)
        total = restarts * per_start + distill
        details = f"  error {info['error'] * 100:.2f}%  volume {int(info['volume'])}"
        elapsed = info["elapsed"]
        if total and 0 < done < total:
            details += f", eta at most {duration(elapsed / done * (total - done))}"
        self._show(("infer", start, phase), f"infer {start} {phase} {what}",
                   int(info["step"]), None, details, final=False)

    def online(self, info: dict) -> None:
        """A step of cegis or counters: the phase, experiments (or forms) done, the size bound
        of the experiments asked for, and an ETA where the total is known."""
        phase, total = info["phase"], info.get("total")
        details = ""
        if info.get("bound") is not None:
            details += f"  experiments of <= {info['bound']} forms"
        if info.get("step"):
            details += f"  ({info['step']})"
        if info.get("eta"):
            details += f", eta {duration(info['eta'])}"
        details += f", {duration(info.get('elapsed', 0.0))}"
        self._show(("online", phase), f"infer {phase}", int(info.get("done", 0)), total, details,
                   final=total is not None and info.get("done", 0) >= total)

    # --- output ------------------------------------------------------------------------------

    def note(self, text: str, stream=None) -> None:
        """A line of its own (on `stream`, default the display's) that the bar does not
        overwrite."""
        stream = stream or self.stream
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            stream.write(text + "\n")
            stream.flush()

    def _show(self, key, label: str, n: int, total, details: str, final: bool) -> None:
        if self.tty:
            self._bar(key, label, n, total, details)
            return
        now = time.monotonic()
        if final or key != self.key or self.last_line is None \
                or now - self.last_line >= self.interval:
            self.last_line = now
            count = f"{n}/{total}" if total is not None else f"{n}"
            self.stream.write(f"{label}: {count}{details}\n")
            self.stream.flush()
        self.key = key

    def _bar(self, key, label: str, n: int, total, details: str) -> None:
        # deferred: tqdm (~40 ms): only a bar on a terminal uses it, not a log nor --help
        from tqdm import tqdm
        if key != self.key:
            self.close()
            self.key = key
            self.bar = tqdm(total=total, desc=label, file=self.stream, leave=True,
                            dynamic_ncols=True, mininterval=0.2,
                            bar_format="{desc}: {n_fmt}/{total_fmt} |{bar}|{postfix}"
                            if total else "{desc}: {n_fmt}{postfix}")
        self.bar.set_postfix_str(details.lstrip(", "), refresh=False)
        self.bar.update(n - self.bar.n)

    def close(self) -> None:
        """End the open bar (it stays on screen); the next phase gets a new one."""
        if self.bar is not None:
            self.bar.refresh()
            self.bar.close()
            self.bar = None
        self.key = None

