"""The quiet canary rate remembered per host (pmpredict.measure.canary_history)."""

from __future__ import annotations

import os

from pmpredict.measure.canary_history import RECENT, TRUSTED, remembered_reference

CPU = "AuthenticAMD|25|1|1|AMD EPYC|avx2|x86_64"


def test_a_host_with_no_history_takes_the_reading_of_the_moment(tmp_path):
    assert remembered_reference(0.30, str(tmp_path), CPU) == 0.30
    assert remembered_reference(0.0, str(tmp_path / "none"), CPU) == 0.0


def test_a_run_started_in_a_busy_phase_is_held_to_the_quiet_rate_seen_before(tmp_path):
    for quiet in (0.252, 0.253, 0.254):
        remembered_reference(quiet, str(tmp_path), CPU)
    # the other guest busy: 0.40 time per add (2.5 adds a cycle) is not taken for quiet
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.252
    # a quieter reading of the moment still counts
    assert remembered_reference(0.240, str(tmp_path), CPU) == 0.240


def test_glitches_faster_than_the_core_cannot_set_the_reference(tmp_path):
    for quiet in (0.252, 0.253, 0.254):
        remembered_reference(quiet, str(tmp_path), CPU)
    for glitch in [0.05] * (TRUSTED - 1):
        remembered_reference(glitch, str(tmp_path), CPU)
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.252


def test_glitches_that_scatter_below_the_quiet_rate_do_not_set_the_reference(tmp_path):
    """An evening of runs beside a busy vCPU on an Intel Xeon guest left these readings (v2,
    the third fastest its floor: 0.199, 6% below the quiet rate, and every sample after was
    contended): the fastest that two more confirm within a percent is the quiet one."""
    evening = [0.1893, 0.1923, 0.1987, 0.2009, 0.2024, 0.2078, 0.2080, 0.2091, 0.2111, 0.2112]
    for reading in evening:
        remembered_reference(reading, str(tmp_path), CPU)
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.2078
    assert remembered_reference(0.0, str(tmp_path), CPU) == 0.2078


def test_each_cpu_identity_keeps_its_own_history(tmp_path):
    for quiet in (0.20, 0.21, 0.22):
        remembered_reference(quiet, str(tmp_path), CPU)
    assert remembered_reference(0.40, str(tmp_path), CPU + "|core type atom") == 0.40


def test_an_unwritable_or_damaged_history_changes_nothing(tmp_path):
    remembered_reference(0.25, str(tmp_path), CPU)
    (path,) = [p for p in tmp_path.iterdir()]
    path.write_text("{not json")
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.40
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert remembered_reference(0.40, os.fspath(blocked / "sub"), CPU) == 0.40


def test_a_floor_no_recent_probe_reaches_is_dropped(tmp_path):
    """A Zen 4 guest had kept four readings of 4.20 adds a cycle (0.238) on a core that runs the
    canary at 3.96 (0.2525) quiet: every sample of every run was retaken as contended. Once
    RECENT probes in a row run more than the gate's tolerance slower than a floor, it goes."""
    for glitch in (0.2379, 0.2379, 0.2381, 0.2383):
        remembered_reference(glitch, str(tmp_path), CPU)
    assert remembered_reference(0.2525, str(tmp_path), CPU) == 0.2379
    for _ in range(RECENT - 2):
        remembered_reference(0.2525, str(tmp_path), CPU)
    # the RECENT-th probe since the glitches: none of them came within 5% of 0.2379
    assert remembered_reference(0.2530, str(tmp_path), CPU) == 0.2525
    assert remembered_reference(0.0, str(tmp_path), CPU) == 0.2525


def test_a_floor_one_recent_probe_reaches_stays(tmp_path):
    """The Zen 3 guest's tenant was busy nine tenths of the time: one quiet probe among the
    recent ones keeps the quiet floor against every busy one."""
    for quiet in (0.252, 0.253, 0.254):
        remembered_reference(quiet, str(tmp_path), CPU)
    for _ in range(RECENT - 4):
        remembered_reference(0.40, str(tmp_path), CPU)
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.252
    for _ in range(RECENT - 1):
        remembered_reference(0.40, str(tmp_path), CPU)
    # RECENT busy probes in a row: the floor no longer holds (a run then reads the moment)
    assert remembered_reference(0.40, str(tmp_path), CPU) == 0.40
