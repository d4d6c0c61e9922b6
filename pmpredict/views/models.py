"""View of `pmpredict models`: built-in models, one model, or one model's forms."""

from __future__ import annotations

from pmpredict.model.facts import PIPELINE_KEYS
from pmpredict.views.common import finite


def _summary(name: str, model, kinds) -> dict:
    return {"name": name, "isa": model.isa, "ports": list(model.ports), "forms": len(model.uops),
            "volume": model.volume(), "r_max": finite(model.r_max),
            "description": str(model.provenance.get("description", "")),
            "port_kinds": {port: [{"kind": k, "share": round(s, 4)} for k, s in kinds.of_port(port)]
                           for port in model.ports}}


def _form(model, form: str) -> dict:
    entry = {"form": form, "uops": [{"ports": model.port_names(mask), "count": count}
                                    for mask, count in model.uops[form]]}
    if form in model.latency:
        entry["latency"] = finite(model.latency[form])
    return entry


def json(result) -> dict:
    if result.forms:
        name, model, kinds = result.models[0]
        return dict(_summary(name, model, kinds), forms=[_form(model, f) for f in model.uops])
    out = {"models": [_summary(*entry) for entry in result.models]}
    if result.host is not None:
        out["host"] = {k: finite(v) if isinstance(v, float) else v for k, v in result.host.items()}
    return out


def _host_lines(info: dict) -> list[str]:
    head = f"{'host':8s} this machine's model ({info['cpu']})"
    if not info["measured"]:
        return [head + ": not measured yet; `pmpredict predict FILE.s --model host` measures "
                       "it (the core forms once, then the forms each kernel needs)"]
    if "damaged" in info:
        return [head + f": {info['damaged']}", f"{'':8s} {info['path']}"]
    pipe = info["pipeline"]
    front = ", ".join(f"{k} {pipe[k]:g}" for k in PIPELINE_KEYS if k in pipe)
    width = f"r_max {info['r_max']:g}" if info["r_max"] else "r_max unknown"
    return [f"{'host':8s} {info['isa']:8s} {info['ports']:2d} ports {info['forms']:4d} forms"
            f"  ({info['with_latency']} with latencies; {info['unusable']} unusable here)"
            f"  this machine's model ({info['cpu']})",
            f"{'':8s} front end: {width}, {front or 'no pipeline facts'}"
            + (f" (in doubt: {'; '.join(info['front_end_doubts'])})"
               if info.get("front_end_doubts") else ""),
            *([f"{'':8s} measured, in doubt: {'; '.join(info['fact_doubts'])}"]
              if info.get("fact_doubts") else []),
            f"{'':8s} created {info['created']} ({info['bootstrap']['how']}, "
            f"{info['bootstrap']['seconds']:g} s), {info['extensions']} extension(s), last "
            f"measured {info['last_measured']}",
            f"{'':8s} {info['path']}"]


def text(result) -> str:
    host = _host_lines(result.host) if result.host is not None else []
    if not result.models:
        return "\n".join(["no built-in models are installed"] + host) + "\n"
    if result.forms:
        name, model, _ = result.models[0]
        lines = []
        for form, uops in model.uops.items():
            spelled = " + ".join(f"{count}x{{{','.join(model.port_names(mask))}}}"
                                 for mask, count in uops)
            lat = model.latency.get(form)
            lines.append(f"{form}  {spelled}" + (f"  latency {lat:g}" if lat is not None else ""))
        return "\n".join(lines) + "\n"
    lines = []
    for name, model, kinds in result.models:
        lines.append(f"{name:8s} {model.isa:8s} {len(model.ports):2d} ports {len(model.uops):4d} "
                     f"forms  volume {model.volume():5d}  "
                     f"{' '.join(str(model.provenance.get('description', '')).split())}")
        for port in model.ports:
            shares = ", ".join(f"{k} {s * 100:.0f}%" for k, s in kinds.of_port(port))
            lines.append(f"{'':8s} port {port:<4s} {shares or '-'}")
    return "\n".join(lines + host) + "\n"
