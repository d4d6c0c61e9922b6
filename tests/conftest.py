import os

import pytest

ARTIFACT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                         "pmevo-artifact"))


def artifact(*parts: str) -> str:
    """Path of a file of the shared PMEvo artifact; skips the test when it is absent."""
    path = os.path.join(ARTIFACT, *parts)
    if not os.path.exists(path):
        pytest.skip(f"shared PMEvo artifact data not found at {path} "
                    "(the tests expect ../shared/data/pmevo-artifact beside the repository)")
    return path


@pytest.fixture
def shared():
    return artifact


@pytest.fixture(autouse=True)
def private_measurement_cache(tmp_path_factory, monkeypatch):
    """Measurements made by tests (and the pmpredict processes they start) never read or
    write the user's cache."""
    monkeypatch.setenv("PMPREDICT_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def imul_cycles():
    """imul r64, r64's reciprocal throughput on this host, measured by the block path
    (tests/hostcores.py): a per-core fact the experiment path's tests compare against."""
    from hostcores import independent_imul_cycles
    return independent_imul_cycles()
