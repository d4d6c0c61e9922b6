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


# Modules whose tests time code on this machine. A timing on a busy machine is only ever too
# slow, never too fast, so a figure off by noise is measured again (up to twice more, with
# pytest-rerunfailures when it is installed) before the test fails; an error that is not an
# assertion (a crash, a None where a timing was due) fails at once.
TIMING_MODULES = {"test_forms_from", "test_frontend", "test_hostmodel", "test_infer_measure",
                  "test_latency", "test_measure_block", "test_measure_host", "test_measure_jobs"}


def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in TIMING_MODULES:
            item.add_marker(pytest.mark.flaky(reruns=2, only_rerun=["AssertionError"]))
