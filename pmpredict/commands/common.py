"""Helpers shared by the subcommands (argument wiring and output, no algorithms)."""

from __future__ import annotations

import json
import math
import sys

def add_mapping_arguments(p) -> None:
    """--mapping M --experiments E [--json]: the arguments simulate and evaluate share."""
    p.add_argument("--mapping", "-m", required=True, metavar="M",
                   help="model file (native JSON, PMEvo Mapping3, OSACA YAML) or built-in name")
    p.add_argument("--experiments", "-e", required=True, metavar="E", help="experiment file")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def bottleneck_names(model, mask: int) -> list[str]:
    from ..sim import FRONTEND
    if mask == FRONTEND:
        return ["frontend"]        # the R_max cap, not a port set, limits throughput
    return model.port_names(int(mask))


def json_number(x):
    """JSON has no NaN: a missing number is null."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")
