"""An installed copy keeps numba's compiled functions out of site-packages.

Files written there are not pip's: they outlive `pip uninstall` and leave a `pmpredict`
folder without `__init__.py`, a namespace package that shadows a later editable install
(every `python -m pmpredict` then fails with `cannot import name '__version__'`)."""

import glob
import os
import subprocess
import sys

import pmpredict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_source_tree_keeps_numbas_default():
    assert pmpredict.numba_cache_dir(os.path.join(ROOT, "pmpredict"), {}) is None


def test_an_installed_copy_caches_in_the_users_cache(monkeypatch):
    monkeypatch.setenv("PMPREDICT_CACHE", "/home/u/.cache/pmpredict")
    for lib in ("/usr/lib/python3/dist-packages", "/venv/lib/python3.11/site-packages"):
        assert pmpredict.numba_cache_dir(os.path.join(lib, "pmpredict"), {}) == \
            "/home/u/.cache/pmpredict/numba"


def test_the_users_own_numba_cache_dir_is_kept():
    lib = "/venv/lib/python3.11/site-packages/pmpredict"
    assert pmpredict.numba_cache_dir(lib, {"NUMBA_CACHE_DIR": "/mine"}) is None


def test_an_installed_copy_writes_nothing_beside_its_sources(tmp_path):
    """The package imported from a site-packages folder (a link to this tree) compiles a
    cached function: its index lands in the user's cache, none in the package's folder."""
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "pmpredict").symlink_to(os.path.join(ROOT, "pmpredict"))
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(site), PMPREDICT_CACHE=str(cache))
    code = ("import pmpredict, numba.core.config as c, pmpredict.predict.throughput as t; "
            "t.new_workspace(); print(c.CACHE_DIR, t.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    cache_dir, module_file = out.stdout.split()
    assert cache_dir == str(cache / "numba")
    assert module_file.startswith(str(site)), "the copy under site-packages was not the one imported"
    assert glob.glob(str(cache / "numba" / "**" / "throughput.new_workspace-*.nbi"), recursive=True)
