"""Kernel -> throughput report: the one report object the renderers (report.py) show.

Cycles per iteration and the bottleneck come from the exact engine
(`sim.simulate_arrays`, which applies the model's R_max); the per-port pressure of
each instruction comes from the LP's optimal schedule (`sim.lp_schedule`): every
merged uop's port assignment is split back onto the instructions that contributed
to it, in proportion to their share of its mass. Instructions the model has no form
for are listed, never dropped: the prediction then covers the matched instructions
only and is a lower bound.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .asm.kernel import Kernel
from .asm.match import APPROX_LOAD, FormMatcher, Match, form_pattern
from .asm.normalize import normalize, render_key
from .asm.parse import Instruction
from .forms import parse_form
from .sim import FRONTEND, lp_schedule, simulate_arrays, uop_masses


@dataclass
class InstructionRow:
    line: int
    text: str
    key: str                            # the normalised form key, e.g. "add r64, imm(32)"
    form: str | None                    # the model's form string, None when unmatched
    form_short: str = ""                # the model form in key notation, e.g. "add r64, imm8"
    approx: tuple[str, ...] = ()
    reason: str = ""                    # why unmatched
    uops: list[tuple[list[str], int]] = field(default_factory=list)
    pressure: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    path: str
    isa: str
    syntax: str
    model: str
    ports: tuple[str, ...]
    kernel: Kernel
    rows: list[InstructionRow]
    cycles: float | None                # None: nothing in the kernel matched
    bottleneck: list[str]
    port_load: dict[str, float]
    r_max: float | None = None

    @property
    def matched(self) -> int:
        return sum(1 for r in self.rows if r.form is not None)

    @property
    def unmatched(self) -> list[InstructionRow]:
        return [r for r in self.rows if r.form is None]

    @property
    def uncounted_memory(self) -> list[InstructionRow]:
        """Rows matched to a register form whose memory access the model cannot count."""
        return [r for r in self.rows if APPROX_LOAD in r.approx]

    @property
    def complete(self) -> bool:
        return not self.unmatched and not self.uncounted_memory


class Predictor:
    """A model prepared for many predictions (arrays, form index, matcher built once)."""

    def __init__(self, model, allow_approx: bool = True):
        self.model = model
        self.masks, self.counts = model.to_arrays()
        self.index = model.form_index()
        self.matcher = FormMatcher(model.uops, model.isa, allow_approx=allow_approx)
        self._short: dict[str, str] = {}

    def short(self, form: str) -> str:
        s = self._short.get(form)
        if s is None:
            mnemonic, pats = form_pattern(parse_form(form, self.model.isa))
            s = self._short[form] = render_key(mnemonic, pats)
        return s

    def match(self, insn: Instruction, syntax: str) -> Match:
        return self.matcher.match(normalize(insn, syntax))

    def predict(self, kernel: Kernel, syntax: str, path: str = "<input>") -> Report:
        model = self.model
        rows, matched_forms = [], []
        for insn in kernel.instructions:
            m = self.match(insn, syntax)
            row = InstructionRow(insn.line, insn.text, str(m.key), m.form,
                                 self.short(m.form) if m.form else "", m.approx, m.reason)
            if m.form is not None:
                row.uops = [(model.port_names(mask), count) for mask, count in model.uops[m.form]]
                matched_forms.append(m.form)
            rows.append(row)
        ports = model.ports
        if not matched_forms:
            cycles = None if rows else 0.0
            return Report(path, model.isa, syntax, model.name, ports, kernel, rows, cycles, [],
                          {p: 0.0 for p in ports}, model.r_max)

        multiset = Counter(matched_forms)
        distinct = sorted(multiset, key=self.index.__getitem__)
        forms = np.array([self.index[f] for f in distinct], dtype=np.int64)
        mults = np.array([multiset[f] for f in distinct], dtype=np.float64)
        ptr = np.array([0, len(distinct)], dtype=np.int64)
        cyc, neck = simulate_arrays(self.masks, self.counts, ptr, forms, mults, model.r_max)
        cycles, neck = float(cyc[0]), int(neck[0])
        if model.r_max:
            # every kernel instruction passes the front end, matched or not
            front = len(rows) / model.r_max
            if front > cycles:
                cycles, neck = front, FRONTEND
        bottleneck = ["frontend"] if neck == FRONTEND else model.port_names(neck)

        # one optimal schedule, split back onto the instructions
        umask, umass, n_insn = uop_masses(self.masks, self.counts, forms, mults)
        _, load, assignment = lp_schedule(umask, umass, len(ports), n_insn, model.r_max)
        slot = {int(m): i for i, m in enumerate(umask)}
        for row in rows:
            if row.form is None:
                continue
            pressure = np.zeros(len(ports))
            for mask, count in model.uops[row.form]:
                i = slot[int(mask)]
                share = count / umass[i]
                for p, x in assignment[i].items():
                    pressure[p] += x * share
            row.pressure = {ports[p]: float(pressure[p]) for p in range(len(ports)) if pressure[p] > 1e-9}
        port_load = {ports[p]: float(load[p]) for p in range(len(ports))}
        return Report(path, model.isa, syntax, model.name, ports, kernel, rows, cycles, bottleneck,
                      port_load, model.r_max)


def predict_kernel(model, kernel: Kernel, syntax: str, path: str = "<input>") -> Report:
    return Predictor(model).predict(kernel, syntax, path)
