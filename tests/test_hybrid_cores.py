"""Hybrid CPUs: the harness measures one core type and the identity (every cache key) says
which. Checked on a sysfs laid out as Alder Lake's and later's (cpu_core, cpu_atom)."""

from __future__ import annotations

import pytest

from pmpredict.errors import InputError
from pmpredict.measure import cpu
from pmpredict.measure.runner import RunOptions


def _sysfs(root, **types):
    """A /sys/devices with a PMU device (cpu_NAME/cpus) per core type."""
    root.mkdir()
    for name, cpus in types.items():
        (root / f"cpu_{name}").mkdir()
        (root / f"cpu_{name}" / "cpus").write_text(cpus + "\n")
    (root / "system").mkdir()
    return str(root)


def test_cpu_lists_as_the_kernel_writes_them():
    assert cpu.parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu.parse_cpu_list("5\n") == [5]


def test_core_types_of_a_hybrid_and_of_a_plain_cpu(tmp_path):
    hybrid = _sysfs(tmp_path / "hybrid", core="0-7", atom="8-15")
    assert cpu.core_types(hybrid) == {"atom": tuple(range(8, 16)), "core": tuple(range(8))}
    plain = _sysfs(tmp_path / "plain", cpu="0-1")    # one PMU device only: not hybrid
    assert cpu.core_types(plain) == {}
    assert cpu.core_types(str(tmp_path / "missing")) == {}


@pytest.fixture
def hybrid(monkeypatch):
    types = {"core": (0, 1), "atom": (2, 3)}
    monkeypatch.setattr(cpu, "core_types", lambda devices=cpu.SYSFS_DEVICES: types)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv(cpu.CORE_TYPE_ENV, raising=False)
    return types


def test_performance_cores_by_default_and_the_identity_says_so(hybrid, monkeypatch):
    assert cpu.measured_core_type() == "core"
    assert cpu.measurement_cpus() == [0, 1]
    assert cpu.cpu_identity().endswith("|core type core")
    monkeypatch.setenv(cpu.CORE_TYPE_ENV, "atom")
    assert cpu.measurement_cpus() == [2, 3]
    assert cpu.cpu_identity().endswith("|core type atom")


def test_an_unknown_core_type_is_a_one_line_error(hybrid, monkeypatch):
    monkeypatch.setenv(cpu.CORE_TYPE_ENV, "little")
    with pytest.raises(InputError) as exc:
        cpu.measurement_cpus()
    assert "atom, core" in str(exc.value) and "\n" not in str(exc.value)


def test_the_harness_is_pinned_to_the_measured_core_type(hybrid, monkeypatch):
    from pmpredict.measure import runner
    monkeypatch.setattr(runner, "core_types", cpu.core_types)
    monkeypatch.setattr(runner, "measurement_cpus", cpu.measurement_cpus)
    monkeypatch.setenv(cpu.CORE_TYPE_ENV, "atom")
    args = RunOptions().harness_args("h")
    assert args[4] == "2"                          # the cpu argument of harness.c
    assert RunOptions(cpu=1).harness_args("h")[4] == "1"


def test_this_host_identity_names_a_core_type_only_when_hybrid():
    ident = cpu.cpu_identity()
    assert ("core type" in ident) == bool(cpu.core_types())
