"""`pmpredict models`: list the built-in models."""

from __future__ import annotations



def register(sub):
    p = sub.add_parser("models", help="list the built-in machine models and what the uops on "
                                      "each port do (share of the port's uop mass)")
    p.set_defaults(func=run)


def run(args):
    from ..kinds import port_kinds
    from ..model import load_model
    from ..models import builtin_names
    names = builtin_names()
    if not names:
        print("no built-in models are installed")
        return 0
    for name in names:
        model = load_model(name)
        source = model.provenance.get("description", "")
        print(f"{name:8s} {model.isa:8s} {len(model.ports):2d} ports {len(model.uops):4d} forms"
              f"  volume {model.volume():5d}  {source}")
        kinds = port_kinds(model)
        for port in model.ports:
            shares = ", ".join(f"{k} {s * 100:.0f}%" for k, s in kinds.of_port(port))
            print(f"{'':8s} port {port:<4s} {shares or '-'}")
    return 0
