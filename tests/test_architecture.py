"""The layers hold (docs/ARCHITECTURE.md): import-linter's contracts of pyproject.toml, checked on
the package as it is installed, and a top level of pmpredict/ that stays small.

infer/, exporters/ and grammars/ live at the top of the repository but are installed as
pmpredict.infer, pmpredict.exporters and pmpredict.grammars (pyproject's package-dir), so the
contracts are checked on a copy of the tree laid out that way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
# where each installed package comes from (pyproject.toml [tool.setuptools] package-dir)
INSTALLED = {"pmpredict": "pmpredict", "pmpredict/infer": "infer",
             "pmpredict/exporters": "exporters", "pmpredict/grammars": "grammars"}


def installed_layout(target: str) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for inside, source in INSTALLED.items():
        shutil.copytree(os.path.join(ROOT, source), os.path.join(target, inside), ignore=ignore,
                        dirs_exist_ok=True)


def test_imports_point_downward_and_form_no_cycle(tmp_path):
    pytest.importorskip("importlinter", reason="import-linter is not installed "
                                               "(pip install -e '.[test]')")
    installed_layout(str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                               "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))",
         os.path.join(ROOT, "pyproject.toml")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout and proc.stdout.count("KEPT") >= 2


def test_the_top_level_holds_few_modules():
    modules = [f for f in os.listdir(os.path.join(ROOT, "pmpredict")) if f.endswith(".py")]
    assert len(modules) <= 10, sorted(modules)
