"""`pmpredict models`: list the built-in models."""

from __future__ import annotations

from ..model import load_model
from ..models import builtin_names


def register(sub):
    p = sub.add_parser("models", help="list the built-in machine models")
    p.set_defaults(func=run)


def run(args):
    names = builtin_names()
    if not names:
        print("no built-in models are installed")
        return 0
    for name in names:
        model = load_model(name)
        source = model.provenance.get("description", "")
        print(f"{name:8s} {model.isa:8s} {len(model.ports):2d} ports {len(model.uops):4d} forms"
              f"  volume {model.volume():5d}  {source}")
    return 0
