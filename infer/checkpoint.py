"""Checkpoint files: an inference snapshot on disk (numpy .npz, written atomically).

The snapshot's arrays are stored as exact binary arrays (resume must be
bit-for-bit); everything else (counters, configuration, the forms, RNG state)
is one JSON string inside the same archive. The configuration and forms are
checked on resume so a checkpoint cannot silently continue a different run.
"""

from __future__ import annotations

import json

import numpy as np

from pmpredict.errors import InputError
from pmpredict.formats.files import write_atomic
from pmpredict.formats.jsonio import parse_json

KIND = "pmpredict-infer-checkpoint"
VERSION = 1


def _split(obj, arrays, path):
    if isinstance(obj, np.ndarray):
        key = f"a{len(arrays)}"
        arrays[key] = obj
        return {"__array__": key}
    if isinstance(obj, dict):
        return {k: _split(v, arrays, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split(v, arrays, path) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _join(obj, arrays):
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]].copy()
        return {k: _join(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join(v, arrays) for v in obj]
    return obj


def save_checkpoint(path, snapshot, config: dict, forms, inputs,
                    experiments: str | None = None) -> None:
    """Write a pmevo.Snapshot (or its dict form) atomically: an interrupted write leaves
    the previous checkpoint whole. `experiments` is a digest of the experiment set, checked
    on resume."""
    if not isinstance(snapshot, dict):
        snapshot = snapshot.to_dict()
    arrays: dict[str, np.ndarray] = {}
    meta = {"kind": KIND, "version": VERSION, "config": config, "forms": list(forms),
            "inputs": list(inputs), "snapshot": _split(snapshot, arrays, "")}
    if experiments is not None:
        meta["experiments"] = experiments
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    write_atomic(path, lambda fh: np.savez_compressed(fh, **arrays), "checkpoint")


def load_checkpoint(path) -> dict:
    """{'config', 'forms', 'inputs', 'snapshot'}; InputError if the file is not a checkpoint."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise InputError(path, "no such checkpoint file") from None
    except Exception as exc:        # zip/npz errors come in many types
        raise InputError(path, f"not a pmpredict checkpoint ({exc.__class__.__name__})", 1, 1) from None
    try:
        meta = parse_json(arrays.pop("meta").tobytes().decode(), path).data
    except (KeyError, ValueError, InputError):
        raise InputError(path, "not a pmpredict checkpoint (no readable metadata)", 1, 1) from None
    if not isinstance(meta, dict) or meta.get("kind") != KIND or meta.get("version") != VERSION:
        raise InputError(path, "not a pmpredict checkpoint of this version", 1, 1)
    try:
        meta["snapshot"] = _join(meta["snapshot"], arrays)
        if not isinstance(meta["forms"], list) or not isinstance(meta["inputs"], list):
            raise TypeError("forms / inputs")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError(path, "a damaged pmpredict checkpoint (its metadata is incomplete)",
                         1, 1) from None
    return meta
