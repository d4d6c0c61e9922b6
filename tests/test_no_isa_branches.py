"""No code outside pmpredict/isa/ branches on the ISA.

What an instruction reads and writes, and every other ISA-specific fact (grammars, register
pools, byte markers, the OSACA vocabulary...), is an attribute or method of the ISA objects
behind `pmpredict.isa.semantics.get(isa)`. This test reads the source of pmpredict/, infer/ and
exporters/ (the isa package excepted) and fails on:
  * a comparison with an ISA name (`isa == "aarch64"`, `isa in ("x86", ...)`, also the
    syntax "aarch64", which names its ISA),
  * a dict literal keyed by ISA names (a lookup table is a branch too),
  * a subscript by an ISA name (`forms["x86"]`).
Comparing two ISAs held in variables (`model.isa != isa`) is a consistency check and passes;
"att" / "intel" name dialects of one ISA and may be compared.
"""

import ast
import os

from pmpredict.isa import semantics

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
SCANNED = ("pmpredict", "infer", "exporters")
EXEMPT = os.path.join("pmpredict", "isa")
ISA_NAMES = set(semantics.ISAS) | {s for isa in semantics.all_isas() if len(isa.syntaxes) == 1
                                   for s in isa.syntaxes}


def _names_an_isa(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ISA_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_an_isa(e) for e in node.elts)
    return False


def isa_branches(source: str) -> list[int]:
    """Line numbers of ISA branches in a module's source."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_names_an_isa(e) for e in
                                                 [node.left, *node.comparators]):
            lines.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(k is not None and _names_an_isa(k)
                                                for k in node.keys):
            lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _names_an_isa(node.slice):
            lines.append(node.lineno)
    return sorted(set(lines))


def python_files():
    for top in SCANNED:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            rel = os.path.relpath(folder, ROOT)
            if rel == EXEMPT or rel.startswith(EXEMPT + os.sep) or "__pycache__" in rel:
                continue
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def test_the_scanner_finds_each_kind_of_branch():
    found = isa_branches('if isa == "aarch64": pass\n'
                         'x = y if syntax != "aarch64" else z\n'
                         'ok = isa in ("x86", "foo")\n'
                         'TABLE = {"x86": 1, "aarch64": 2}\n'
                         'v = forms["x86"]\n'
                         'same = model.isa != isa\n'
                         'dialect = syntax == "att"\n'
                         'def f(isa="x86"): pass\n')
    assert found == [1, 2, 3, 4, 5]


def test_no_isa_branch_outside_the_isa_package():
    offenders = []
    files = list(python_files())
    assert len(files) > 40                     # the tree was found
    for path in files:
        with open(path, encoding="utf8") as fh:
            source = fh.read()
        text = source.splitlines()
        for line in isa_branches(source):
            offenders.append(f"{os.path.relpath(path, ROOT)}:{line}: {text[line - 1].strip()}")
    assert not offenders, "ISA branches outside pmpredict/isa/:\n" + "\n".join(offenders)
