"""Kernel -> Report: the one report object every view (pmpredict/views/) renders.

The stages, each a method returning a frozen result, each built on an engine of its own;
the Report is made from them at the end:
  1. match (Matched): every instruction's model form (asm.match) and what it reads and writes
     (pmpredict.isa.semantics);
  2. annotate (Annotation): uops as executed (idioms, eliminated moves, macro-fusion, paired
     stores), latency per source, what is assumed (annotate.py);
  3. bounds (BoundsFound): every kind of bottlenecks.BOUND_KINDS: throughput (the exact LP
     optimum over the uops, port_bound.py), loop-carried (the maximum cycle ratio of the
     dependence graph, deps.py), front end (dispatch slots per cycle); and the critical path
     of one iteration;
  4. simulate (Simulated): the out-of-order simulation (simulation.py), the predicted cycles
     per iteration, never below the bounds, and each instruction's slack;
  5. costs: criticality (criticality.py), what each bottleneck costs and how they interact,
     computed when a view first asks (it takes a simulation per bottleneck and pair).
Per-port pressure per instruction comes from one optimal LP schedule: every merged uop's
port assignment is split back onto the instructions that contributed to it, in proportion
to their share of its mass. Instructions the model has no form for are listed, never
dropped: they take a dispatch slot, join the dependencies with an assumed latency, but have
no uops, so the prediction is a lower bound; except a jump fused with the instruction
before it (the model says the pair fuses): the pair runs as that instruction's uops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable

from pmpredict.isa import semantics as semantics_registry
from pmpredict.isa.base import STORES
from pmpredict.predict.annotate import Annotated, MachineFacts, annotate, assume_forwarding
from pmpredict.asm.kernel import Kernel
from pmpredict.asm.match import APPROX_LOAD, FormMatcher, form_pattern
from pmpredict.isa.keys import render_key
from pmpredict.isa.syntax import Instruction
from pmpredict.predict.port_bound import optimum
from pmpredict.predict.bottlenecks import FRONTEND_BOTTLENECK, Bounds, Evidence, event_classes
from pmpredict.predict.criticality import Criticality, analyse, slack
from pmpredict.predict.deps import (Cycle, Graph, Path, build_graph, critical_path,
                                    loop_carried_chains)
from pmpredict.isa.forms import parse_form
from pmpredict.model.facts import FactReader
from pmpredict.predict.kinds import instruction_kinds, kinds_within, port_kinds
from pmpredict.predict import simulation_native
from pmpredict.predict.simulation import Body, Run
from pmpredict.predict.simulation import CoreLimits
from pmpredict.predict.simulation import TIMES, simulate as simulate_schedule
from pmpredict.predict.store_commits import (commit_ports, store_commit_rule,
                                             uop_cycles as _uop_cycles, uop_mass as _uop_mass)


@dataclass
class InstructionRow:
    line: int
    text: str
    key: str                            # the normalised form key, e.g. "add r64, imm(32)"
    form: str | None                    # the model's form string, None when unmatched
    form_short: str = ""                # the model form in key notation, e.g. "add r64, imm8"
    approx: tuple[str, ...] = ()
    reason: str = ""                    # why unmatched
    source: str | None = None           # "model" or "fallback" (whose form it is); None: unmatched
    uops: list[tuple[list[str], int]] = field(default_factory=list)
    pressure: dict[str, float] = field(default_factory=dict)
    latency: float = 0.0                # issue -> result, as the engines use it
    annotated: Annotated | None = None
    slack: float | None = None          # cycles the result could come later (0: critical)
    on_critical_path: bool = False
    on_loop_carried: bool = False       # on the worst loop-carried chain


@dataclass(frozen=True)
class Matched:
    """Stage 1: each instruction's match (form, or why none) and semantics."""
    rows: tuple[InstructionRow, ...]
    semantics: tuple


@dataclass(frozen=True)
class Annotation:
    """Stage 2: the instructions as the engines see them, stores paired; the dependence graph's
    nodes (an instruction, then its address update where it has one) and their instructions."""
    annotated: tuple[Annotated, ...]
    facts: MachineFacts
    assumed: tuple[tuple[str, float], ...]     # facts the model lacks, as this stage took them
    nodes: tuple
    node_rows: tuple[int, ...]
    mains: tuple[bool, ...]             # the node is its instruction's (not an address update)


@dataclass(frozen=True)
class BoundsFound:
    """Stage 3: every bound, what they rest on, one optimal port schedule told per instruction,
    the dependence graph with its loop-carried chains and one iteration's critical path."""
    bounds: Bounds
    evidence: Evidence
    balance: tuple[float, ...]          # each port's share of the optimal schedule
    pressure: tuple[dict, ...]          # per instruction: port -> cycles per iteration
    port_load: dict
    graph: Graph
    chains: tuple[Cycle, ...]           # worst first, told in instructions
    critical_path: Path
    assumed: tuple[tuple[str, float], ...]     # forwarding latencies the model lacks, as taken


@dataclass(frozen=True)
class Simulated:
    """Stage 4: the simulated run, its cycles per iteration, and each instruction's slack."""
    body: Body
    core: CoreLimits
    run: Run
    cycles: float
    slack: tuple[float | None, ...]


@dataclass
class Report:
    path: str
    isa: str
    syntax: str
    model: str
    ports: tuple[str, ...]
    kernel: Kernel
    rows: list[InstructionRow]
    cycles: float | None                # the simulated prediction; None: nothing in the model
    bottleneck: list[str]               # the port set of the throughput bound (or ["frontend"])
    port_load: dict[str, float]
    r_max: float | None = None
    bounds: Bounds | None = None
    critical_path: Path | None = None
    chains: list[Cycle] = field(default_factory=list)
    run: Run | None = None
    machine: MachineFacts | None = None    # the machine facts the engines used
    # the facts the model lacks, as the prediction took them: key -> value, in the order the
    # stages met them (model/facts.py words each for the Assumed line)
    assumed_facts: Mapping = field(default_factory=dict)
    graph: Graph | None = None
    node_rows: list[int] = field(default_factory=list)   # graph / run node -> its instruction
    bottleneck_kinds: list[str] = field(default_factory=list)  # what the uops bound there do
    fallback: object = None             # the fallback.Fallback forms came from, if any
    # the costs take a simulation per bottleneck and pair: computed on first use
    _analyse: Callable[[], Criticality] | None = field(default=None, repr=False)
    _criticality: Criticality | None = field(default=None, repr=False)

    @property
    def computed_criticality(self) -> Criticality | None:
        """The criticality if it has been computed already, else None (no simulations run)."""
        return self._criticality

    @property
    def criticality(self) -> Criticality | None:
        """What each bottleneck costs and how they interact (criticality.analyse)."""
        if self._criticality is None and self._analyse is not None:
            self._criticality, self._analyse = self._analyse(), None
        return self._criticality

    @property
    def matched(self) -> int:
        return sum(1 for r in self.rows if r.form is not None)

    @property
    def unmatched(self) -> list[InstructionRow]:
        """Rows the model has no form for and nothing else accounts for."""
        found = self.__dict__.get("_unmatched")      # the rows are final: found once
        if found is None:
            covered = self._covered_jumps()
            found = self.__dict__["_unmatched"] = [r for r in self.rows if r.form is None
                                                   and id(r) not in covered]
        return list(found)

    @property
    def fused_unknown(self) -> list[InstructionRow]:
        """Jumps the model has no form for, macro-fused with the instruction before: the model
        measured that the pair fuses (pipeline macro_fusion), and the pair runs as one uop, so
        the first instruction's uops stand for it (the jump's own port choice is not known)."""
        covered = self._covered_jumps()
        return [r for r in self.rows if id(r) in covered]

    def _covered_jumps(self) -> set:
        # the rows are final once the Report is made: asked by several views, found once
        covered = self.__dict__.get("_covered")
        if covered is None:
            covered = self.__dict__["_covered"] = {
                id(b) for a, b in zip(self.rows, self.rows[1:])
                if b.form is None and a.form is not None and b.annotated is not None
                and b.annotated.fused}
        return covered

    @property
    def uncounted_memory(self) -> list[InstructionRow]:
        """Rows matched to a register form whose memory access the model cannot count."""
        return [r for r in self.rows if APPROX_LOAD in r.approx]

    @property
    def beyond_model(self) -> list[InstructionRow]:
        """Rows in the model whose cost its numbers do not hold (semantics' beyond_model: an
        atomic read-modify-write, a barrier): the model counts the plain form. An atomic is
        counted when the model has the measured atomic_cycles (annotate.ATOMIC_ORDER), a
        barrier when its form has a measured latency (annotate.BARRIER_ORDER)."""
        return [r for r in self.rows if r.form is not None and r.annotated is not None
                and r.annotated.semantics.beyond_model and r.annotated.ordered is None]

    @property
    def complete(self) -> bool:
        return not self.unmatched and not self.uncounted_memory and not self.beyond_model

    @property
    def assumed_latencies(self) -> list[InstructionRow]:
        return [r for r in self.rows if r.annotated and r.annotated.assumed]


def simulation_engine(compiled: bool):
    """Where the simulation's passes run: the C extension wherever it was built (it loads in
    a millisecond); else numba's compiled passes when asked (`compiled`: many kernels pay
    for their ~0.6 s loading); else plain Python (None)."""
    if simulation_native.available():
        return simulation_native
    if compiled:
        # deferred: numba (~0.4 s, then compiling): only for many kernels does it pay off
        from pmpredict.predict import simulation_jit
        return simulation_jit
    return None


class Predictor:
    """A model prepared for many predictions (arrays, form index, matcher built once)."""

    def __init__(self, model, allow_approx: bool = True, criticality: bool = True,
                 fallback=None, compiled: bool = False):
        """fallback: a fallback.Fallback (its merged model replaces `model`): forms the model
        lacks are matched in the fallback's. compiled: where the C passes are not built, run
        the simulation compiled by numba (simulation_jit: ~0.6 s to load once, then many
        times faster; for many kernels)."""
        if fallback is not None:
            model = fallback.model
        self.model = model
        self.fallback = fallback
        self.semantics = semantics_registry.get(model.isa)
        if fallback is None:
            # the form index is the model's to keep (MachineModel.derived): made once a model
            self.matcher = FormMatcher(model.uops, model.isa, allow_approx=allow_approx,
                                       index=model.derived.get("form index"))
            model.derived.setdefault("form index", self.matcher.index_of())
        else:
            self.matcher = fallback.matcher(allow_approx)
        self.criticality = criticality
        self.engine = simulation_engine(compiled)
        # the model's ports, and after them those its measured store commits stand for
        self.ports = tuple(model.ports) + commit_ports(model)
        self._commit_mask = ((1 << len(self.ports)) - 1) & ~((1 << len(model.ports)) - 1)
        self._short: dict[str, str] = {}
        self._port_kinds = None
        # what depends on an instruction alone, by (its text, syntax): a kernel's instructions
        # recur across kernels (and within one)
        self._per_instruction: dict[tuple[str, str], tuple] = {}
        self._optimum: dict[tuple, tuple] = {}                 # uop masses -> bound.optimum
        self._annotations: dict = {}                          # annotate's memo
        self._kinds: dict = {}                                # instruction kinds, by semantics
        self._mask_names: dict[int, list[str]] = {}           # port mask -> its port names

    def _address_uops(self) -> tuple[tuple[int, int], ...]:
        """The uops of the model's plainest load (the ISA's plain_load_form) when it has one
        uop: the address generation every memory access takes; else none."""
        uops = self.model.uops.get(self.semantics.plain_load_form, ())
        return tuple(uops) if len(uops) == 1 and uops[0][1] == 1 else ()

    def short(self, form: str) -> str:
        s = self._short.get(form)
        if s is None:
            mnemonic, pats = form_pattern(parse_form(form, self.model.isa))
            s = self._short[form] = render_key(mnemonic, pats)
        return s

    def _instruction(self, insn: Instruction, syntax: str) -> tuple:
        """(match, whose form, the form in key notation, semantics) of an instruction: what
        depends on the instruction's text alone, computed once per text."""
        key = (insn.text, syntax)
        hit = self._per_instruction.get(key)
        if hit is None:
            form_key, sem = self.semantics.described(insn, syntax)
            m = self.matcher.match(form_key)
            source = None if m.form is None else \
                "fallback" if self.fallback and m.form in self.fallback.forms else "model"
            hit = self._per_instruction[key] = (
                m, str(m.key), source, self.short(m.form) if m.form else "", sem)
        return hit

    def predict_many(self, kernels, syntax: str, path: str = "<input>"):
        """Reports of many kernels (e.g. asm.kernel.all_regions of a file), in order, each
        made when asked for: what depends on an instruction alone is done once for all of
        them. For hundreds of kernels, make the Predictor with compiled=True."""
        for kernel in kernels:
            yield self.predict(kernel, syntax, path)

    def predict(self, kernel: Kernel, syntax: str, path: str = "<input>") -> Report:
        """The stages in order, each returning its result; the Report is made from them."""
        matched = self._match(kernel, syntax)
        if not matched.rows:
            return self._report(path, syntax, kernel, matched, cycles=0.0)
        annotation = self._annotate(matched)
        if not any(r.form for r in matched.rows):
            return self._report(path, syntax, kernel, matched, annotation)    # nothing known
        found = self._bounds(matched, annotation)
        simulated = self._simulate(annotation, found)
        return self._report(path, syntax, kernel, matched, annotation, found, simulated)

    def _match(self, kernel: Kernel, syntax: str) -> Matched:
        """Stage 1: each instruction's form (or why none) and semantics."""
        rows, sems = [], []
        for insn in kernel.instructions:
            m, key, source, short, sem = self._instruction(insn, syntax)
            rows.append(InstructionRow(insn.line, insn.text, key, m.form, short, m.approx,
                                       m.reason, source))
            sems.append(sem)
        return Matched(tuple(rows), tuple(sems))

    def _annotate(self, matched: Matched) -> Annotation:
        """Stage 2: the instructions as the engines see them (annotate.py), stores paired, and
        the dependence graph's nodes: every instruction, and after it its address update
        (write-back) where it has one; node_rows maps a node back to its instruction."""
        loop = matched.semantics[-1].branch == "conditional"
        annotated, facts, reader = annotate([r.form for r in matched.rows], matched.semantics,
                                            self.model, loop=loop,
                                            stack_engine=self.semantics.stack_engine_register,
                                            memo=self._annotations)
        nodes, node_rows, mains = [], [], []
        for a in annotated:
            for node, main in ((a.node, True), (a.update, False)):
                if node is not None:
                    nodes.append(node)
                    node_rows.append(a.index)
                    mains.append(main)
        # stores committed as the model's measured facts say (store_commits.py); the facts
        # the rule used, said where the model does not give them
        committed = store_commit_rule(facts).commit(annotated, nodes, node_rows,
                                                    self._address_uops())
        annotated = committed.annotated
        for key in committed.used:
            reader.value(key)
        return Annotation(tuple(annotated), facts, reader.assumptions(), tuple(nodes),
                          tuple(node_rows), tuple(mains))

    def _bounds(self, matched: Matched, annotation: Annotation) -> BoundsFound:
        """Stage 3: the port schedule, the dependence graph's chains and critical path, and
        every bound kind's value (bottlenecks.BOUND_KINDS)."""
        model, facts = self.model, annotation.facts
        throughput, neck, balance, pressure, port_load = self._ports(annotation.annotated)
        graph = build_graph(list(annotation.nodes), facts.load_latency, facts.forwarding())
        reader = FactReader(facts.pipeline)
        assume_forwarding(reader, graph.forwarded)
        chains = tuple(_on_rows(c, annotation.node_rows) for c in loop_carried_chains(graph))
        path_ = critical_path(graph, [node.latency for node in annotation.nodes])
        path_ = Path(path_.length, tuple(dict.fromkeys(annotation.node_rows[i]
                                                       for i in path_.nodes)))
        evidence = Evidence(throughput, neck, tuple(self._names(neck)), chains,
                            sum(a.slot for a in annotation.annotated), model.r_max,
                            facts.taken_branch, facts.window)
        return BoundsFound(Bounds.of(evidence), evidence, balance, tuple(pressure), port_load,
                           graph, chains, path_, reader.assumptions())

    def _simulate(self, annotation: Annotation, found: BoundsFound) -> Simulated:
        """Stage 4: the out-of-order simulation of the loop, and each instruction's slack."""
        node_uops, node_slots = [], []
        for k, main in enumerate(annotation.mains):
            a = annotation.annotated[annotation.node_rows[k]]
            node_uops.append(_uop_cycles(a) if main else ())
            node_slots.append(a.slot if main else 0)
        body = Body(tuple(node.latency for node in annotation.nodes), tuple(node_uops),
                    tuple(tuple((e.src, e.distance, e.latency) for e in incoming)
                          for incoming in found.graph.in_edges()),
                    tuple(node_slots), len(self.ports), found.balance)
        facts = annotation.facts
        core = CoreLimits(self.model.r_max, facts.window, facts.taken_branch)
        # results and retirements are what the slack needs; the views that need more ask
        # Run.full()
        run = simulate_schedule(body, core, keep=TIMES, engine=self.engine, slack=True)
        # the run is exact in the limit; a finite run can sit a hair under a bound
        cycles = max([run.cycles] + [v or 0.0 for v in found.bounds.values.values()])
        slacks: list[float | None] = [None] * len(annotation.annotated)
        for k, s in enumerate(slack(body, core, run, self.engine)):
            i = annotation.node_rows[k]
            slacks[i] = s if slacks[i] is None else min(slacks[i], s)
        return Simulated(body, core, run, cycles, tuple(slacks))

    def _report(self, path: str, syntax: str, kernel: Kernel, matched: Matched,
                annotation: Annotation | None = None, found: BoundsFound | None = None,
                simulated: Simulated | None = None, cycles: float | None = None) -> Report:
        """The Report of the stages that ran (fewer when the kernel is empty or unknown)."""
        model = self.model
        rows = list(matched.rows)
        facts = annotation.facts if annotation else None
        if found is None or simulated is None:
            if annotation is not None:
                rows = [_row(r, a, self._port_names(a)) for r, a in zip(rows, annotation.annotated)]
            return Report(path, model.isa, syntax, model.name, self.ports, kernel, rows, cycles,
                          [], {p: 0.0 for p in self.ports}, model.r_max, machine=facts,
                          assumed_facts=_assumed(annotation), fallback=self.fallback)
        evidence, chains = found.evidence, found.chains
        on_chain = set(chains[0].nodes) if chains else set()
        on_path = set(found.critical_path.nodes)
        rows = [_row(r, a, self._port_names(a), p, s, i in on_path, i in on_chain)
                for i, (r, a, p, s) in enumerate(zip(rows, annotation.annotated, found.pressure,
                                                      simulated.slack))]
        # the historical "bottleneck": the ports of the throughput bound, or the front end
        # when the issue width (R_max) allows fewer instructions than the ports
        front_limited = model.r_max and evidence.slots / model.r_max > \
            evidence.throughput * (1 + 1e-9)
        kinds = self._kinds_within(matched.semantics, annotation.annotated, evidence.neck) \
            if not front_limited and evidence.neck else []
        analyse_later = None
        if self.criticality:
            classes = event_classes(evidence)
            body, core, run, engine = simulated.body, simulated.core, simulated.run, self.engine
            analyse_later = lambda: analyse(body, core, run, classes, engine=engine)  # noqa: E731
        return Report(path, model.isa, syntax, model.name, self.ports, kernel, rows,
                      simulated.cycles,
                      [FRONTEND_BOTTLENECK] if front_limited else list(evidence.port_names),
                      found.port_load, model.r_max, bounds=found.bounds,
                      critical_path=found.critical_path, chains=list(chains), run=simulated.run,
                      machine=facts, assumed_facts=_assumed(annotation, found),
                      graph=found.graph, node_rows=list(annotation.node_rows),
                      bottleneck_kinds=kinds, fallback=self.fallback, _analyse=analyse_later)

    def _port_names(self, a: Annotated) -> list:
        """An instruction's uops as executed, told in port names: [(ports, count)]."""
        return [(self._names(mask), count) for mask, count in a.uops]

    def _names(self, mask: int) -> list[str]:
        names = self._mask_names.get(mask)
        if names is None:
            names = self._mask_names[mask] = [p for i, p in enumerate(self.ports)
                                              if mask >> i & 1]
        return list(names)

    def _kinds_within(self, sems, annotated: list[Annotated], neck: int) -> list[str]:
        """The kinds of the kernel's uops that the bottleneck ports bound (pmpredict.predict.kinds)."""
        if self._port_kinds is None:
            self._port_kinds = self.port_kinds()
        commit = self._commit_mask
        rows = [(self._instruction_kinds(s), a.uops if not commit else
                 tuple(u for u in a.uops if u[0] != commit)) for s, a in zip(sems, annotated)]
        if commit:                 # a commit uop is a store's whatever else the instruction does
            rows.append(((STORES,), tuple(u for a in annotated for u in a.uops if u[0] == commit)))
        return kinds_within(self._port_kinds, rows, neck)

    def port_kinds(self):
        """The kinds of each port's uops (kinds.port_kinds), made once a model."""
        derived = self.model.derived
        if "port kinds" not in derived:
            derived["port kinds"] = port_kinds(self.model)
        return derived["port kinds"]

    def _instruction_kinds(self, sem) -> tuple[str, ...]:
        entry = self._kinds.get(id(sem))
        if entry is None or entry[0] is not sem:           # the id of a live object is unique
            entry = self._kinds[id(sem)] = (sem, instruction_kinds(self.model.isa, sem))
        return entry[1]

    def _ports(self, annotated) -> tuple:
        """The throughput bound, its bottleneck port mask, each port's share of one optimal
        schedule (the simulation's tie-breaker), each instruction's port pressure in that
        schedule, and each port's load."""
        ports = self.ports
        n_ports = len(ports)
        mass: dict[int, float] = {}
        for a in annotated:
            for mask, count in _uop_mass(a):
                mass[mask] = mass.get(mask, 0) + count
        if not mass:
            return (0.0, 0, tuple([1.0] * n_ports), [{} for _ in annotated],
                    {p: 0.0 for p in ports})
        masses = tuple(mass.items())         # in order: the order picks among optimal schedules
        found = self._optimum.get(masses)
        if found is None:
            found = self._optimum[masses] = optimum(mass)
        cycles, neck, schedule = found
        pressures = []
        for a in annotated:
            pressure = [0.0] * n_ports
            for mask, count in _uop_mass(a):
                share = count / mass[mask]
                for p, x in schedule[mask].items():
                    pressure[p] += x * share
            pressures.append({ports[p]: x for p, x in enumerate(pressure) if x > 1e-9})
        load = [0.0] * n_ports
        for row in schedule.values():
            for p, x in row.items():
                load[p] += x
        total = sum(load)
        return (cycles, neck, tuple(x / total for x in load), pressures,
                {ports[p]: load[p] for p in range(n_ports)})


def _row(r: InstructionRow, a: Annotated, uops: list, pressure=None, slack_=None,
         on_path: bool = False, on_chain: bool = False) -> InstructionRow:
    """A matched row with what the later stages found (one constructor call: a kernel has
    many rows and dataclasses.replace is slow)."""
    return InstructionRow(r.line, r.text, r.key, r.form, r.form_short, r.approx, r.reason,
                          r.source, uops, {} if pressure is None else pressure, a.node.latency,
                          a, slack_, on_path, on_chain)


def _assumed(annotation: Annotation | None, found: BoundsFound | None = None) -> Mapping:
    """What the stages assumed of the machine, in order, read-only."""
    stages = [x.assumed for x in (annotation, found) if x is not None]
    return MappingProxyType(dict(pair for assumed in stages for pair in assumed))


def _on_rows(cycle: Cycle, node_rows: list[int]) -> Cycle:
    """A dependency cycle of graph nodes, told in instructions (an instruction and its
    address update are one instruction)."""
    rows = tuple(dict.fromkeys(node_rows[i] for i in cycle.nodes))
    return Cycle(cycle.ratio, cycle.latency, cycle.iterations, rows, cycle.edges, cycle.resources)
