"""Experiments: multisets of instruction forms with (optionally) measured cycles.

``cycles`` is the measured reciprocal throughput of one instance of the whole multiset (None
when not measured yet; a failed measurement says why in ``other["error"]``). Files are read
and written by pmpredict.formats.experiment_files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

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
    ports: int | None = None      # the number of ports a PMEvo file's 'arch' declares

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

    def concat(self, other: "ExperimentSet") -> "ExperimentSet":
        forms = tuple(dict.fromkeys(self.forms + other.forms))
        return ExperimentSet(forms, self.experiments + other.experiments, self.isa,
                             ",".join(s for s in (self.source, other.source) if s),
                             self.ports if self.ports == other.ports else None)
