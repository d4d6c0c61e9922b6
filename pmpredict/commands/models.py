"""`pmpredict models`: list the built-in models and this machine's."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser("models", help="list the built-in machine models and what the uops on "
                                      "each port do (share of the port's uop mass), and this "
                                      "machine's model (--model host)")
    p.set_defaults(func=run)


def _host_lines(info: dict) -> list[str]:
    head = f"{'host':8s} this machine's model ({info['cpu']})"
    if not info["measured"]:
        return [head + ": not measured yet; `pmpredict predict FILE.s --model host` measures "
                       "it (the core forms once, then the forms each kernel needs)"]
    pipe = info["pipeline"]
    front = ", ".join(f"{k} {pipe[k]:g}" for k in ("macro_fusion", "load_op_slots",
                                                   "indexed_load_op_slots", "taken_branch",
                                                   "load_latency", "store_forward_latency")
                      if k in pipe)
    width = f"r_max {info['r_max']:g}" if info["r_max"] else "r_max unknown"
    return [f"{'host':8s} {info['isa']:8s} {info['ports']:2d} ports {info['forms']:4d} forms"
            f"  ({info['with_latency']} with latencies; {info['unusable']} unusable here)"
            f"  this machine's model ({info['cpu']})",
            f"{'':8s} front end: {width}, {front or 'no pipeline facts'}",
            f"{'':8s} created {info['created']} ({info['bootstrap']['how']}, "
            f"{info['bootstrap']['seconds']:g} s), {info['extensions']} extension(s), last "
            f"measured {info['last_measured']}",
            f"{'':8s} {info['path']}"]


def run(args):
    from ..infer.hostmodel import describe
    from ..kinds import port_kinds
    from ..model import load_model
    from ..models import builtin_names
    names = builtin_names()
    if not names:
        print("no built-in models are installed")
    for name in names:
        model = load_model(name)
        source = model.provenance.get("description", "")
        print(f"{name:8s} {model.isa:8s} {len(model.ports):2d} ports {len(model.uops):4d} forms"
              f"  volume {model.volume():5d}  {source}")
        kinds = port_kinds(model)
        for port in model.ports:
            shares = ", ".join(f"{k} {s * 100:.0f}%" for k, s in kinds.of_port(port))
            print(f"{'':8s} port {port:<4s} {shares or '-'}")
    for line in _host_lines(describe()):
        print(line)
    return 0
