"""Experiment sets: multisets of forms with (optionally) measured cycles.

Native JSON::

    {"format": "pmpredict-experiments", "version": 1, "isa": "x86",
     "forms": [...all forms the set may use...],
     "experiments": [{"forms": {"FORM": 2, "OTHER": 1}, "cycles": 1.5}, ...]}

``cycles`` is the measured reciprocal throughput of one instance of the whole
multiset (null when not measured yet; a failed measurement has "error").
The PMEvo artifact's ``ExperimentList`` files load too.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import semantics
from ..errors import InputError
from ..jsonio import JsonDocument, read_json, write_json

FORMAT_NAME = "pmpredict-experiments"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Experiment:
    """A multiset of forms; counts are (form, multiplicity) pairs sorted by form."""
    counts: tuple[tuple[str, int], ...]
    cycles: float | None = None
    other: dict = field(default_factory=dict)   # other tools' predictions, errors, metadata

    @classmethod
    def of(cls, forms, cycles=None, other=None) -> "Experiment":
        """From an iterable of forms (repeats allowed) or a {form: n} dict."""
        counter = Counter(forms) if not isinstance(forms, dict) else Counter(forms)
        return cls(tuple(sorted(counter.items())), cycles, dict(other or {}))

    @property
    def length(self) -> int:
        return sum(n for _, n in self.counts)

    def forms(self) -> list[str]:
        return [f for f, _ in self.counts]


@dataclass(frozen=True)
class ExperimentSet:
    forms: tuple[str, ...]
    experiments: tuple[Experiment, ...]
    isa: str = "x86"
    source: str = ""

    def __len__(self) -> int:
        return len(self.experiments)

    def measured(self) -> np.ndarray:
        """float64[E] measured cycles; NaN where not measured."""
        return np.array([np.nan if e.cycles is None else e.cycles for e in self.experiments])

    def to_arrays(self, form_index: dict[str, int]):
        """CSR arrays (ptr int64[E+1], form int64[nnz], mult float64[nnz]).

        Forms missing from `form_index` get index -1 (the simulator answers NaN).
        """
        ptr = np.zeros(len(self.experiments) + 1, dtype=np.int64)
        forms, mults = [], []
        for i, e in enumerate(self.experiments):
            for f, n in e.counts:
                forms.append(form_index.get(f, -1))
                mults.append(n)
            ptr[i + 1] = len(forms)
        return ptr, np.array(forms, dtype=np.int64), np.array(mults, dtype=np.float64)

    def to_json(self) -> dict:
        exps = []
        for e in self.experiments:
            entry = {"forms": dict(e.counts), "cycles": e.cycles}
            entry.update(e.other)
            exps.append(entry)
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "isa": self.isa,
                "forms": list(self.forms), "experiments": exps}

    def save(self, path) -> None:
        write_json(path, self.to_json())

    def concat(self, other: "ExperimentSet") -> "ExperimentSet":
        forms = tuple(dict.fromkeys(self.forms + other.forms))
        return ExperimentSet(forms, self.experiments + other.experiments, self.isa,
                             ",".join(s for s in (self.source, other.source) if s))


def _positive_cycles(doc: JsonDocument, value, where: str):
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise doc.error(f"{where}: cycles must be a positive number or null, not {value!r}")
    return float(value)


def _from_pmevo(doc: JsonDocument) -> ExperimentSet:
    arch = doc.data.get("arch")
    if not isinstance(arch, dict) or not isinstance(arch.get("insns"), list):
        raise doc.error("ExperimentList without an 'arch' object with 'insns'", "arch")
    known = set(arch["insns"])
    exps = []
    for i, e in enumerate(doc.data.get("exps") or []):
        iseq = e.get("iseq") if isinstance(e, dict) else None
        if not isinstance(iseq, list) or not iseq:
            raise doc.error(f"experiment {i}: needs a non-empty 'iseq' list", "exps")
        for f in iseq:
            if f not in known:
                raise doc.error(f"experiment {i}: form {f!r} is not in the architecture's 'insns'", f)
        result = e.get("result") or {}
        cycles = _positive_cycles(doc, result.get("cycles"), f"experiment {i}")
        other = {}
        for o in e.get("other_results") or []:
            if isinstance(o, dict) and "id" in o:
                other[f"cycles_{o['id'].lower()}"] = o.get("cycles")
        exps.append(Experiment.of(iseq, cycles, other))
    return ExperimentSet(tuple(arch["insns"]), tuple(exps),
                         semantics.isa_of_forms(arch["insns"]),
                         os.path.basename(doc.path))


def _from_native(doc: JsonDocument) -> ExperimentSet:
    data = doc.data
    if data.get("version") != FORMAT_VERSION:
        raise doc.error(f"unsupported experiment format version {data.get('version')!r}", "version")
    forms = data.get("forms")
    if not isinstance(forms, list):
        raise doc.error("'forms' must be a list of form strings", "forms")
    known = set(forms)
    exps = []
    for i, e in enumerate(data.get("experiments") or []):
        if not isinstance(e, dict) or not isinstance(e.get("forms"), dict) or not e["forms"]:
            raise doc.error(f"experiment {i}: needs a non-empty 'forms' object {{form: count}}",
                            "experiments")
        for f, n in e["forms"].items():
            if f not in known:
                raise doc.error(f"experiment {i}: form {f!r} is not in 'forms'", f)
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise doc.error(f"experiment {i}: count of {f!r} must be an integer >= 1", f)
        other = {k: v for k, v in e.items() if k not in ("forms", "cycles")}
        exps.append(Experiment.of(e["forms"], _positive_cycles(doc, e.get("cycles"), f"experiment {i}"),
                                  other))
    return ExperimentSet(tuple(forms), tuple(exps), data.get("isa") or semantics.isa_of_forms(forms),
                         os.path.basename(doc.path))


def load_experiments(path) -> ExperimentSet:
    doc = read_json(path)
    if not isinstance(doc.data, dict):
        raise InputError(doc.path, "expected a JSON object (an experiment list)", 1, 1)
    if doc.data.get("kind") == "ExperimentList":
        return _from_pmevo(doc)
    if doc.data.get("format") == FORMAT_NAME:
        return _from_native(doc)
    raise InputError(doc.path, f"not an experiment file: expected \"format\": \"{FORMAT_NAME}\" "
                               "or a PMEvo \"kind\": \"ExperimentList\"", 1, 1)


def load_many(paths) -> ExperimentSet:
    sets = [load_experiments(p) for p in paths]
    out = sets[0]
    for s in sets[1:]:
        out = out.concat(s)
    return out
