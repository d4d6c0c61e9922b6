"""Built-in machine models, shipped as package data (produced by `pmpredict infer`)."""

from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def builtin_names() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(_HERE) if f.endswith(".json"))


def builtin_path(name: str) -> str | None:
    path = os.path.join(_HERE, f"{name}.json")
    return path if name and os.sep not in name and os.path.exists(path) else None
