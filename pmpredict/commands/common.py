"""Helpers shared by the subcommands (argument wiring and output, no algorithms)."""

from __future__ import annotations

import json
import math
import sys

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
