"""Loaded models kept ready beside the user's cache, as Python keeps .pyc files beside sources.

Reading a model file, checking it and deriving what predictions need from it (the form
index, the kinds of each port's uops) costs ~30 ms for this machine's model of ~600 forms:
a fifth of a warm `pmpredict predict`. The loaded model, with what the engines derived from
it (MachineModel.derived), is pickled once and read back in ~1 ms by later runs.

A kept model stands for the file only while both are what they were: its name holds a digest
of the file's bytes and of the code that reads and derives (the size and modification time
of every module of the package, as Python's own .pyc check). Anything wrong with a kept model
(missing, damaged, from another version, an unwritable cache) falls back to reading the file:
the cache can only save time, never change an answer.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys

from pmpredict.model.machine import MachineModel
from pmpredict.userdirs import cache_dir

FOLDER = "prepared"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_code_stamp: str | None = None


def code_stamp() -> str:
    """A digest of the package's modules (path, size, modification time) and the Python
    version: another install, an edit or an upgrade gives another stamp."""
    global _code_stamp
    if _code_stamp is None:
        h = hashlib.sha256(sys.version.encode())
        stack = [_PACKAGE]
        while stack:
            entries = sorted(os.scandir(stack.pop()), key=lambda e: e.name)
            for e in entries:
                if e.is_dir():
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif e.name.endswith((".py", ".so", ".pyd")):
                    st = e.stat()
                    h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _code_stamp = h.hexdigest()
    return _code_stamp


def _names(path: str) -> tuple[str, str] | None:
    """(the folder, the kept file's name) for the model file at `path` as it is now; None
    where it cannot be read (the loader reports that)."""
    try:
        with open(path, "rb") as fh:
            content = fh.read()
    except OSError:
        return None
    where = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    what = hashlib.sha256(content + code_stamp().encode()).hexdigest()[:20]
    return os.path.join(cache_dir(), FOLDER), f"{where}-{what}.pickle"


def load(path: str):
    """The model kept for the file at `path`, or None (then the file is read as usual and
    `keep` called with the model once its derived facts are made)."""
    names = _names(path)
    if names is None:
        return None
    try:
        with open(os.path.join(*names), "rb") as fh:
            model = pickle.load(fh)
        model.derived["kept"] = names
    except Exception:           # absent, damaged, or of classes since changed: read the file
        return None
    return model if isinstance(model, MachineModel) else None


def note_source(model, path: str):
    """Mark a model read from `path` so that `keep` can save it; returns the model."""
    names = _names(path)
    if names is not None:
        model.derived["source"] = names
    return model


def keep(model) -> None:
    """Save a model read from a file with what has been derived from it, unless it was itself
    loaded from what was kept; an unwritable cache is no error (the next run reads the file)."""
    names = model.derived.get("source")
    if names is None or "kept" in model.derived:
        return
    folder, name = names
    derived = {k: v for k, v in model.derived.items() if k not in ("source", "kept")}
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        saved = model.derived
        object.__setattr__(model, "derived", derived)
        try:
            content = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            object.__setattr__(model, "derived", saved)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(content)
        os.replace(tmp, os.path.join(folder, name))
        tmp = None
        prefix = name.split("-", 1)[0] + "-"
        for other in os.listdir(folder):          # the same file's older versions
            if other.startswith(prefix) and other != name and other.endswith(".pickle"):
                os.unlink(os.path.join(folder, other))
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    model.derived["kept"] = names
