"""Rename the ports of built-in models to the abstract labels A, B, ... (in order).

An inferred port is abstract: "0".."8" looked like Intel's port numbers but are not (see
docs/MODELS.md, "Port names"). The renaming keeps the port order, so every uop's port mask,
every latency, every flag, the pipeline facts and the provenance stay as they were; the
script checks exactly that (the model read back equals the old one with the old names put
back) before it replaces a file. Run from the repository root:

    python3 benchmarks/relabel_builtin_ports.py skl zen a72 host
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from pmpredict.model.machine import abstract_port_names
from pmpredict.formats.model_files import load_model, save_model
from pmpredict.models import builtin_path


def relabel(name: str) -> str:
    path = builtin_path(name)
    if path is None:
        raise SystemExit(f"no built-in model {name!r}")
    old = load_model(path)
    labels = abstract_port_names(len(old.ports))
    if old.ports == labels:
        return f"{name}: already labelled {', '.join(labels)}"
    new = old.with_port_names(labels)
    tmp = path + ".relabelled"
    save_model(new, tmp)
    back = load_model(tmp)
    if dataclasses.replace(back, ports=old.ports) != old:
        raise SystemExit(f"{name}: the relabelled model differs in more than its port names")
    if back.ports != labels:
        raise SystemExit(f"{name}: the ports did not come back as {labels}")
    os.replace(tmp, path)
    pairs = ", ".join(f"{a}->{b}" for a, b in zip(old.ports, labels))
    return f"{name}: {pairs}; uops, latencies, flags, pipeline and provenance unchanged"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="+", help="built-in model names")
    args = p.parse_args(argv)
    for name in args.names:
        print(relabel(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
