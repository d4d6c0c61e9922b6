"""The quietest the canary has run on this host, remembered across runs.

A harness process takes as quiet the fastest canary it sees, and `runner.canary_reference`
probes every CPU before a run. Both only know the present: on a cloud guest whose physical
core's other hardware thread belongs to a tenant busy for seconds at a time (a Zen 3 guest:
the canary ran 2.1-3.5 adds a cycle there, 3.9 in its quiet phases), a run started inside a
busy phase takes the busy rate for the quiet one, flags nothing, and reports a store at 0.77
cycles as reproduced where the core alone runs it at 0.50. The quiet rate is a property of
the core (its integer ALUs), so the fastest readings are kept per CPU identity, and the
fastest that two more confirm within a percent is a floor for the reference: glitches (a
calibration slowed more than its canary; this guest's history began with 4.38 adds a cycle on
a core with four ALUs) scatter below the quiet rate, and quiet readings repeat.

Glitches can repeat too: a Zen 4 guest (family 25 model 17, 2026-12-07) had kept four readings
of 4.20 adds a cycle within 0.3% of each other, on a core of four ALUs that runs the canary at
3.96 quiet; its floor held every sample of every run to a rate no canary reached, so every
sample was retaken 24 times and kept busy (an experiment cost 16-61 ms, 10 ms with no
history). So the last RECENT probe readings are kept as well, and a floor that none of them
came within `tolerance` of (the gate's own, `canary_slower`) is stale: the readings faster than
the recent probes' best are dropped. A tenant busy nine tenths of the time (the Zen 3 guest)
still leaves a quiet probe among that many.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

KEPT = 16         # readings remembered (the fastest)
RECENT = 64       # ... and the latest probe readings, whatever their rate (quiet a tenth of
                  # the time, 64 probes in a row all busy: 0.1%)
TRUSTED = 3       # a floor needs this many readings within AGREE of each other ...
AGREE = 0.01      # ... (quiet readings repeat within a percent; glitches scatter below them)
# readings of earlier harnesses are not kept: until v2 a canary was divided by the fastest
# calibration of the process, and where the clock steps that read up to 7.8 adds a cycle on a
# core of five ALUs (an Intel Xeon guest, 2026-12-03), a floor no later canary reached; v2's
# floor, the third fastest, drifted 6% below the quiet rate in an evening of runs beside a busy
# vCPU (0.189, 0.192, 0.199 where 0.211 is quiet), and every sample was contended again
VERSION = "v3"    # a v3 file without "recent" reads as no recent probes


def _path(directory: str, identity: str) -> str:
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return os.path.join(directory, f"canary-{VERSION}-{digest}.json")


def _history(path: str) -> tuple[list[float], list[float]]:
    """(the fastest readings, sorted; the latest readings, oldest first)."""
    try:
        with open(path) as fh:
            data = json.load(fh)
        return (sorted(float(x) for x in data["readings"] if float(x) > 0),
                [float(x) for x in data.get("recent", []) if float(x) > 0])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return [], []


def remembered_reference(reading: float, directory: str, identity: str,
                         tolerance: float = 0.05) -> float:
    """Record `reading` (the canary's time per add over the calibration's, lower is quieter;
    0: none) and return the reference to use now: the faster of the reading and the
    fastest remembered that TRUSTED readings agree on (_floor), unless the last RECENT
    probes all ran more than `tolerance` slower than that floor (then it is stale, _fresh).
    A directory that cannot be written changes nothing."""
    path = _path(directory, identity)
    readings, recent = _history(path)
    if reading > 0:
        recent = (recent + [reading])[-RECENT:]
        readings = _fresh(sorted(readings + [reading])[:KEPT], recent, tolerance)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".canary-")
            with os.fdopen(fd, "w") as fh:
                json.dump({"identity": identity, "readings": readings, "recent": recent}, fh)
            os.replace(tmp, path)
        except OSError:
            pass
    floor = _floor(readings)
    if floor is None:
        return reading
    return floor if reading <= 0 else min(reading, floor)


def _fresh(readings: list[float], recent: list[float], tolerance: float) -> list[float]:
    """`readings` without those faster than every recent probe, where RECENT probes were made
    and none came within `tolerance` of the floor they set."""
    floor = _floor(readings)
    if floor is None or len(recent) < RECENT or min(recent) <= floor * (1 + tolerance):
        return readings
    return [r for r in readings if r >= min(recent)]


def _floor(readings: list[float]) -> float | None:
    """The fastest of the sorted `readings` that TRUSTED - 1 more confirm within AGREE, else
    the TRUSTED-th fastest (None: fewer readings than that)."""
    if len(readings) < TRUSTED:
        return None
    for low, high in zip(readings, readings[TRUSTED - 1:]):
        if high <= low * (1 + AGREE):
            return low
    return readings[TRUSTED - 1]
