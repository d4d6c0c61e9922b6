"""Turn the engine's arrays back into a MachineModel for every input form."""

from __future__ import annotations

from pmpredict.model.machine import MachineModel, abstract_port_names, normalize_uops


def mapping_to_model(problem, masks, counts, form_of: dict, *, name: str, isa: str,
                     ports=None, r_max=None, provenance=None) -> MachineModel:
    """form_of: every input form -> its representative (a form of `problem`)."""
    ports = tuple(ports or abstract_port_names(problem.n_ports))
    index = {f: i for i, f in enumerate(problem.forms)}
    uops = {}
    for form in sorted(form_of):
        i = index.get(form_of[form])
        if i is None:
            continue
        pairs = [(int(masks[i, j]), int(round(counts[i, j])))
                 for j in range(masks.shape[1]) if counts[i, j] > 0]
        uops[form] = normalize_uops(pairs)
    return MachineModel(name=name, isa=isa, ports=ports, uops=uops, r_max=r_max,
                        provenance=dict(provenance or {}))
