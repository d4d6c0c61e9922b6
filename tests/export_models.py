"""Models the export tests run on (shared by tests/test_export_*.py; no external tools)."""

import os

import pytest

from conftest import artifact
from pmpredict.model.machine import MachineModel

from pmpredict.formats.model_files import load_model

HOST_FORMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pmpredict", "measure",
                          "forms_host.txt")


def host_forms() -> list[str]:
    if not os.path.exists(HOST_FORMS):
        pytest.skip("pmpredict/measure/forms_host.txt not found")
    with open(HOST_FORMS) as f:
        return [line.split()[0] for line in f if line.strip() and not line.startswith("#")]


def model_for(label: str) -> MachineModel:
    """SKL / ZEN / A72: PMEvo's published mappings (shared data); HOSTFORMS: every form of the
    host measurement list, one uop on one of three ports; anything else: a built-in model."""
    if label in ("SKL", "ZEN", "A72"):
        return load_model(artifact(label, "mapping_pmevo.json"))
    if label == "HOSTFORMS":
        forms = host_forms()
        return MachineModel("hostforms", "x86", ("0", "1", "2"),
                            {f: ((1 << (i % 3), 1),) for i, f in enumerate(forms)})
    return load_model(label)
