"""The layers hold (docs/ARCHITECTURE.md): import-linter's contracts of pyproject.toml, checked on
the package as it is installed, a top level of pmpredict/ that stays small, and no import inside
a function that does not say what heavy thing it defers.

infer/, exporters/ and grammars/ live at the top of the repository but are installed as
pmpredict.infer, pmpredict.exporters and pmpredict.grammars (pyproject's package-dir), so the
contracts are checked on a copy of the tree laid out that way.
"""

from __future__ import annotations

import ast
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


# the sources whose function-level imports must say why they are deferred (installed as pmpredict)
SOURCES = ("pmpredict", "infer", "exporters")
DEFERRED = "# deferred:"


def _statement_lists(node):
    """The lists of statements directly in `node`: a body, an else, a finally (an except clause
    and a case are nodes of their own, with a body)."""
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
            yield stmts


def function_level_imports(tree):
    """(import, the first import of its group) for every import inside a function or method; a
    group is a run of import statements on consecutive lines."""
    out = []

    def visit(node, in_function):
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for stmts in _statement_lists(node):
            for i, stmt in enumerate(stmts):
                if in_function and isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    first = i
                    while (first > 0 and isinstance(stmts[first - 1], (ast.Import, ast.ImportFrom))
                           and stmts[first - 1].end_lineno + 1 == stmts[first].lineno):
                        first -= 1
                    out.append((stmt, stmts[first]))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return out


def test_every_function_level_import_says_what_it_defers():
    """docs/ARCHITECTURE.md: a function-level import defers something heavy (numpy, numba, scipy,
    lark, the harness...) and never dodges a cycle; a `# deferred: <what and why>` line right above
    it, or above the first import of its group, says which."""
    unexplained, seen = [], 0
    for source in SOURCES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, source)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf8") as f:
                    text = f.read()
                lines = text.splitlines()
                for stmt, first in function_level_imports(ast.parse(text, path)):
                    seen += 1
                    above = lines[first.lineno - 2].strip() if first.lineno > 1 else ""
                    if not above.startswith(DEFERRED):
                        unexplained.append(f"{os.path.relpath(path, ROOT)}:{stmt.lineno}: "
                                           f"{lines[stmt.lineno - 1].strip()}")
    assert seen > 0, "no function-level import found: is the walk broken?"
    assert not unexplained, ("function-level imports without a `# deferred:` comment (move a light "
                             "import to the top of the module):\n" + "\n".join(unexplained))


def test_every_package_of_the_tree_is_installed():
    """pyproject.toml lists the packages (package-dir maps infer/, exporters/ and grammars/):
    a package missing there is absent from a plain `pip install .` (isa/x86 was, while the
    editable install the tests run from still found it)."""
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = set()
    for inside, source in INSTALLED.items():
        for folder, dirs, files in os.walk(os.path.join(ROOT, source)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            if "__init__.py" in files:
                rel = os.path.relpath(folder, os.path.join(ROOT, source))
                found.add(".".join([inside.replace("/", ".")] + ([] if rel == "." else
                                                                rel.split(os.sep))))
    assert found <= listed, sorted(found - listed)
