"""View of `pmpredict align`: how an inferred model's ports map onto a reference's
(pmpredict.predict.align.Alignment)."""

from __future__ import annotations


def json(a, output: str | None = None) -> dict:
    return a.to_json()


def _share(x) -> str:
    return "    -" if x is None else f"{x * 100:4.0f}%"


def text(a, output: str | None = None) -> str:
    out = [f"Alignment of {a.model} ({len(a.ports)} ports) with {a.reference} "
           f"({len(a.reference_ports)} ports) over {len(a.pairs)} of {a.forms} forms both know",
           "", "  port  ->  reference   affinity    uops   equal  contained  overlap"]
    for p in a.per_port:
        mapped = p.mapped if p.mapped is not None else "(none)"
        out.append(f"  {p.port:<5} ->  {mapped:<9} {p.affinity:9.2f} {p.mass:7.0f}   "
                   f"{_share(p.equal)}      {_share(p.contained)}    {_share(p.overlap)}")
    out.append(f"  {'all':<5}                          {a.mass:7.0f}   {_share(a.equal)}      "
               f"{_share(a.contained)}    {_share(a.overlap)}")
    out.append("")
    out.append("uops: mass of our uops on the common forms that may use the port; equal / "
               "contained / overlap: share of it whose port set, renamed, equals / lies inside / "
               "shares a port with a uop of the reference's form.")
    same = "-" if a.same_count is None else f"{a.same_count * 100:.0f}%"
    out.append(f"Uops per form: {a.mass:.0f} here, {a.reference_mass:.0f} in the reference; "
               f"equal uop count on {same} of the common forms.")
    if a.unmatched:
        out.append("Our ports without a counterpart (they keep their names): "
                   + ", ".join(a.unmatched))
    if a.reference_unmatched:
        out.append("Reference ports without a counterpart: " + ", ".join(a.reference_unmatched))
    if output:
        out.append(f"Wrote {output} (ports {', '.join(a.aligned_names())})")
    return "\n".join(out) + "\n"
