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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

KEPT = 16         # readings remembered (the fastest)
TRUSTED = 3       # a floor needs this many readings within AGREE of each other ...
AGREE = 0.01      # ... (quiet readings repeat within a percent; glitches scatter below them)
# readings of earlier harnesses are not kept: until v2 a canary was divided by the fastest
# calibration of the process, and where the clock steps that read up to 7.8 adds a cycle on a
# core of five ALUs (an Intel Xeon guest, 2026-12-03), a floor no later canary reached; v2's
# floor, the third fastest, drifted 6% below the quiet rate in an evening of runs beside a busy
# vCPU (0.189, 0.192, 0.199 where 0.211 is quiet), and every sample was contended again
VERSION = "v3"


def _path(directory: str, identity: str) -> str:
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return os.path.join(directory, f"canary-{VERSION}-{digest}.json")


def _readings(path: str) -> list[float]:
    try:
        with open(path) as fh:
            data = json.load(fh)
        return sorted(float(x) for x in data["readings"] if float(x) > 0)
    except (OSError, ValueError, KeyError, TypeError):
        return []


def remembered_reference(reading: float, directory: str, identity: str) -> float:
    """Record `reading` (the canary's time per add over the calibration's, lower is quieter;
    0: none) and return the reference to use now: the faster of the reading and the
    fastest remembered that TRUSTED readings agree on (_floor). A directory that cannot be written changes nothing."""
    path = _path(directory, identity)
    readings = _readings(path)
    if reading > 0:
        kept = sorted(readings + [reading])[:KEPT]
        if kept != readings:
            try:
                os.makedirs(directory, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=directory, prefix=".canary-")
                with os.fdopen(fd, "w") as fh:
                    json.dump({"identity": identity, "readings": kept}, fh)
                os.replace(tmp, path)
            except OSError:
                pass
        readings = kept
    floor = _floor(readings)
    if floor is None:
        return reading
    return floor if reading <= 0 else min(reading, floor)


def _floor(readings: list[float]) -> float | None:
    """The fastest of the sorted `readings` that TRUSTED - 1 more confirm within AGREE, else
    the TRUSTED-th fastest (None: fewer readings than that)."""
    if len(readings) < TRUSTED:
        return None
    for low, high in zip(readings, readings[TRUSTED - 1:]):
        if high <= low * (1 + AGREE):
            return low
    return readings[TRUSTED - 1]
