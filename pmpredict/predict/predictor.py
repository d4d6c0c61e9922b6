"""Kernel -> Report: the one report object every view (pmpredict/views/) renders.

Prediction is two tables, declared once at the end of this module, which Predictor.predict
and the Report run by name; adding a stage, a derived result or a view touches neither:
  STAGES, in order, each run by predict: a function of the predictor and the earlier results
  it names (`needs`) returning a frozen result, kept in the Report under its name
  (report.stage(name)). A stage runs when every result it needs is there and its `when`
  holds: an empty kernel stops after "matched", one with nothing in the model after
  "annotated".
    matched    (Matched): every instruction's model form (asm.match) and what it reads and
               writes (pmpredict.isa.semantics); it needs SOURCE, the kernel as given;
    annotated  (Annotation): uops as executed (idioms, eliminated moves, macro-fusion, paired
               stores), latency per source, what is assumed (annotate.py);
    bounds     (BoundsFound): every kind of bottlenecks.BOUND_KINDS: throughput (the exact LP
               optimum over the uops, port_bound.py), loop-carried (the maximum cycle ratio of
               the dependence graph, deps.py), front end (dispatch slots per cycle); and the
               critical path of one iteration;
    simulated  (Simulated): the out-of-order simulation (simulation.py), the predicted cycles
               per iteration, never below the bounds, and each instruction's slack.
  DERIVED, made from the stages' results when a view first asks (report.derived(name)), then
  kept; a stage that did not run is passed as None:
    rows         each instruction's row: its match and what the stages found of it;
    bottleneck   (NamedBottleneck) the bottleneck as the report names it: ports and kinds;
    full run     the simulated run with every record (the timeline: a lean run simulates again);
    criticality  (criticality.py) what each bottleneck costs and how they interact (a
                 simulation per bottleneck and pair).
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
from functools import cached_property
from types import MappingProxyType
from typing import Callable

from pmpredict.isa import semantics as semantics_registry
from pmpredict.isa.base import LOADS, STORES
from pmpredict.predict.annotate import Annotated, MachineFacts, annotate, assume_forwarding
from pmpredict.asm.kernel import Kernel
from pmpredict.asm.match import APPROX_LOAD, FormMatcher, form_pattern
from pmpredict.isa.keys import render_key
from pmpredict.isa.syntax import Instruction
from pmpredict.predict.port_bound import optimum
from pmpredict.predict.bottlenecks import (FRONTEND_BOTTLENECK, Bounds, Evidence,
                                           accesses_started, bytes_moved, event_classes)
from pmpredict.predict.criticality import Criticality, analyse, slack
from pmpredict.predict.deps import (Cycle, Graph, Path, SymbolicAddresses, build_graph,
                                    critical_path, loop_carried_chains)
from pmpredict.isa.forms import parse_form, split_variant
from pmpredict.model.facts import BYPASS_KEYS, STORE_SPLIT_BLOCKS, FactReader
from pmpredict.predict.kinds import instruction_kinds, kinds_within, port_kinds
from pmpredict.predict.line_splits import (apply_splits, could_split, line_splits,
                                          measured_splits, sub_line_store_splits,
                                          vector_split_cycles)
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
    # the split variants (isa.forms.split_variant) of the forms whose load crosses a line on
    # every iteration: what the host model measures for the kernel (in the model or not)
    split_variants: tuple[str, ...] = ()
    # (node, access) of the loads that cross a line on every iteration
    split_loads: frozenset = frozenset()
    # the accesses the splits add, each as many times as it runs again on the share of
    # iterations it crosses (split_load_extra, split_store_extra)
    split_accesses: float = 0.0


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


@dataclass(frozen=True)
class Source:
    """What a prediction is given (the result named SOURCE): the kernel, the syntax it was
    read in, and where it came from."""
    kernel: Kernel
    syntax: str
    path: str


@dataclass(frozen=True)
class NamedBottleneck:
    """Derived "bottleneck": the bottleneck as the report names it: the port set of the
    throughput bound (or ["frontend"] when the issue width allows fewer instructions than the
    ports), and the kinds of the uops those ports bound."""
    ports: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class PortSchedule:
    """The throughput bound over a kernel's uops and one optimal schedule of them
    (port_bound.optimum), told per port and per instruction."""
    cycles: float                       # the bound, cycles per iteration
    neck: int                           # its bottleneck port mask
    balance: tuple[float, ...]          # each port's share (the simulation's tie-breaker)
    pressure: tuple[dict, ...]          # per instruction: port -> cycles per iteration
    load: dict                          # per port: cycles per iteration


# the name of the input among a prediction's results (Source): what the first stage needs
SOURCE = "source"


@dataclass(frozen=True)
class Stage:
    """One stage of prediction: make(predictor, *results) of the results named in `needs`
    (SOURCE or earlier stages) returns a frozen result, kept in the Report under `name`. The
    stage runs when every result it needs is there and `when(*results)` (if given) holds; else
    it is skipped, and with it every stage that needs it."""
    name: str
    make: Callable
    needs: tuple[str, ...]
    when: Callable | None = None


@dataclass(frozen=True)
class Derived:
    """A result made from others when first asked for (Report.derived), then kept:
    make(predictor, *results) of the results named in `needs` (SOURCE, stages, or derived
    results declared before it); a stage that did not run is passed as None."""
    name: str
    make: Callable
    needs: tuple[str, ...]


class Report:
    """One prediction: the results of the stages that ran, by name (stage(name), `stages`), the
    results derived from them, made when first asked for (derived(name)), and the attributes
    the views read, each reading those results (so new data is a stage or a derived result,
    never a new attribute here)."""

    def __init__(self, predictor: "Predictor", results: dict):
        self._predictor = predictor
        self._results = MappingProxyType(results)
        self._made: dict = {}                   # derived results made so far, by name

    def __repr__(self) -> str:
        return (f"Report({self.path!r}, model={self.model!r}, stages={list(self._results)}, "
                f"derived={list(self._made)})")

    @property
    def stages(self) -> Mapping:
        """The results of the stages that ran, by name, in order (SOURCE first); read-only."""
        return self._results

    def stage(self, name: str):
        """The result of the stage `name` (or SOURCE); None when the stage did not run.
        KeyError: the predictor has no stage of that name."""
        result = self._results.get(name)
        if result is None and name not in self._predictor.stage_names:
            raise KeyError(f"no stage {name!r}: the stages are "
                           f"{sorted(self._predictor.stage_names)}")
        return result

    def derived(self, name: str):
        """The derived result `name`, made the first time it is asked for, then kept.
        KeyError: the predictor declares no derived result of that name."""
        return self._derived(name)

    def _derived(self, name: str):
        made = self._made
        if name in made:
            return made[name]
        entry = self._predictor.derived_by_name.get(name)
        if entry is None:
            raise KeyError(f"no derived result {name!r}: they are "
                           f"{sorted(self._predictor.derived_by_name)}")
        result = made[name] = entry.make(self._predictor, *map(self._result, entry.needs))
        return result

    def computed(self, name: str):
        """The derived result `name` if it has been made already, else None (nothing is run)."""
        return self._made.get(name)

    def _result(self, name: str):
        if name in self._results:
            return self._results[name]
        if name in self._predictor.derived_by_name:
            return self._derived(name)
        return None                                       # a stage that did not run

    # the model's
    @property
    def isa(self) -> str:
        return self._predictor.model.isa

    @property
    def model(self) -> str:
        return self._predictor.model.name

    @property
    def ports(self) -> tuple[str, ...]:
        return self._predictor.ports

    @property
    def r_max(self) -> float | None:
        return self._predictor.model.r_max

    @property
    def fallback(self):
        """The fallback.Fallback forms came from, if any."""
        return self._predictor.fallback

    # the input's
    @property
    def path(self) -> str:
        return self.stage(SOURCE).path

    @property
    def syntax(self) -> str:
        return self.stage(SOURCE).syntax

    @property
    def kernel(self) -> Kernel:
        return self.stage(SOURCE).kernel

    # the stages' (each found once: the results are final)
    @cached_property
    def rows(self) -> list[InstructionRow]:
        return self.derived("rows")

    @cached_property
    def cycles(self) -> float | None:
        """The simulated prediction; 0 for an empty kernel; None: nothing in the model."""
        simulated = self.stage("simulated")
        if simulated is not None:
            return simulated.cycles
        return None if self.stage("matched").rows else 0.0

    @cached_property
    def bottleneck(self) -> list[str]:
        """The port set of the throughput bound (or ["frontend"])."""
        return list(self.derived("bottleneck").ports)

    @cached_property
    def bottleneck_kinds(self) -> list[str]:
        """What the uops bound there do."""
        return list(self.derived("bottleneck").kinds)

    @cached_property
    def port_load(self) -> dict[str, float]:
        found = self.stage("bounds")
        return found.port_load if found is not None else {p: 0.0 for p in self.ports}

    @cached_property
    def bounds(self) -> Bounds | None:
        found = self.stage("bounds")
        return found.bounds if found is not None else None

    @cached_property
    def critical_path(self) -> Path | None:
        found = self.stage("bounds")
        return found.critical_path if found is not None else None

    @cached_property
    def chains(self) -> list[Cycle]:
        found = self.stage("bounds")
        return list(found.chains) if found is not None else []

    @cached_property
    def graph(self) -> Graph | None:
        found = self.stage("bounds")
        return found.graph if found is not None else None

    @cached_property
    def run(self) -> Run | None:
        """The simulated run as the prediction kept it (lean: derived("full run") has every
        record)."""
        simulated = self.stage("simulated")
        return simulated.run if simulated is not None else None

    @cached_property
    def machine(self) -> MachineFacts | None:
        """The machine facts the engines used."""
        annotation = self.stage("annotated")
        return annotation.facts if annotation is not None else None

    @cached_property
    def node_rows(self) -> list[int]:
        """Graph / run node -> its instruction."""
        annotation = self.stage("annotated")
        return list(annotation.node_rows) if annotation is not None else []

    @cached_property
    def assumed_facts(self) -> Mapping:
        """The facts the model lacks, as the prediction took them: key -> value, in the order
        the stages met them (each stage result's `assumed`; model/facts.py words each for the
        Assumed line); read-only."""
        return _assumed(self._results.values())

    @property
    def criticality(self) -> Criticality | None:
        """What each bottleneck costs and how they interact (criticality.analyse)."""
        return self.derived("criticality")

    @property
    def computed_criticality(self) -> Criticality | None:
        """The criticality if it has been computed already, else None (no simulations run)."""
        return self.computed("criticality")

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
                 fallback=None, compiled: bool = False, stages: tuple[Stage, ...] | None = None,
                 derived: tuple[Derived, ...] | None = None):
        """fallback: a fallback.Fallback (its merged model replaces `model`): forms the model
        lacks are matched in the fallback's. compiled: where the C passes are not built, run
        the simulation compiled by numba (simulation_jit: ~0.6 s to load once, then many
        times faster; for many kernels). stages, derived: the tables predict and its Report
        run (STAGES, DERIVED by default; e.g. STAGES + (Stage(...),) to add one)."""
        self.stages = STAGES if stages is None else tuple(stages)
        self.derived = DERIVED if derived is None else tuple(derived)
        self.stage_names, self.derived_by_name = _check_tables(self.stages, self.derived)
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
        """The stages of the table in order, each on the earlier results it needs; a stage
        whose needs are missing or whose `when` fails is skipped (an empty kernel, nothing in
        the model). The Report keeps the results by name."""
        results = {SOURCE: Source(kernel, syntax, path)}
        for stage in self.stages:
            if not all(name in results for name in stage.needs):
                continue
            inputs = [results[name] for name in stage.needs]
            if stage.when is None or stage.when(*inputs):
                results[stage.name] = stage.make(self, *inputs)
        return Report(self, results)

    def _match(self, source: Source) -> Matched:
        """Stage 1, "matched": each instruction's form (or why none) and semantics."""
        rows, sems = [], []
        syntax = source.syntax
        for insn in source.kernel.instructions:
            m, key, whose, short, sem = self._instruction(insn, syntax)
            rows.append(InstructionRow(insn.line, insn.text, key, m.form, short, m.approx,
                                       m.reason, whose))
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
        # accesses across a cache line run as the model's measured facts say (line_splits.py)
        # stores split at a smaller block where the model says so (store_split_bytes); the
        # fact is read, and said where assumed, only where a store would split at the
        # smallest block the probes try and not at the line
        addresses = SymbolicAddresses(nodes) \
            if could_split(nodes, min(STORE_SPLIT_BLOCKS)) else None
        store_block = int(reader.value("store_split_bytes")) if addresses is not None and \
            sub_line_store_splits(nodes, STORE_SPLIT_BLOCKS, addresses) else None
        splits = line_splits(nodes, addresses, store_block=store_block)
        split_loads = frozenset((s.node, s.access) for s in splits
                                if not s.store and s.share >= 1.0)
        annotated, splits, variants = measured_splits(annotated, splits, node_rows,
                                                      self._split_variant)
        extra = {False: 0, True: 0}
        if any(s.share >= 1.0 for s in splits):
            extra = {store: int(reader.value(key)) if any(
                s.store == store and s.share >= 1.0 for s in splits) else 0
                for store, key in ((False, "split_load_extra"), (True, "split_store_extra"))}
            annotated = apply_splits(annotated, splits, node_rows, self._access_uops,
                                     extra[False], extra[True])
        elif splits:
            annotated = apply_splits(annotated, splits, node_rows, self._access_uops, 0, 0)
        split_accesses = sum(s.share * extra[s.store] for s in splits)
        return Annotation(tuple(annotated), facts, reader.assumptions(), tuple(nodes),
                          tuple(node_rows), tuple(mains), variants, split_loads, split_accesses)

    def _split_variant(self, form: str):
        """(the split variant of `form`, its uops in the model or None); (None, None) for a
        form without one."""
        variant = split_variant(form)
        return (variant, self.model.uops.get(variant)) if variant else (None, None)

    def _bounds(self, matched: Matched, annotation: Annotation) -> BoundsFound:
        """Stage 3, "bounds": the port schedule, the dependence graph's chains and critical
        path, and every bound kind's value (bottlenecks.BOUND_KINDS)."""
        model, facts = self.model, annotation.facts
        schedule = self._port_schedule(annotation.annotated)
        graph = build_graph(list(annotation.nodes), facts.load_latency, facts.forwarding(),
                            facts.bypass())
        reader = FactReader(facts.pipeline)
        assume_forwarding(reader, graph.forwarded)
        for pair in sorted(graph.crossed, key=sorted):
            reader.value(BYPASS_KEYS[pair])             # said where the model lacks it
        chains = tuple(_on_rows(c, annotation.node_rows) for c in loop_carried_chains(graph))
        path_ = critical_path(graph, [node.latency for node in annotation.nodes])
        path_ = Path(path_.length, tuple(dict.fromkeys(annotation.node_rows[i]
                                                       for i in path_.nodes)))
        evidence = Evidence(schedule.cycles, schedule.neck, tuple(self._names(schedule.neck)),
                            chains, sum(a.slot for a in annotation.annotated), model.r_max,
                            facts.taken_branch, facts.window, bytes_moved(annotation.nodes),
                            float(reader.value("memory_bytes_per_cycle") or 0),
                            self._split_load_cycles(annotation, reader),
                            accesses_started(annotation.nodes, annotation.split_accesses),
                            float(reader.value("memory_accesses_per_cycle") or 0))
        return BoundsFound(Bounds.of(evidence), evidence, schedule.balance, schedule.pressure,
                           schedule.load, graph, chains, path_, reader.assumptions())

    @staticmethod
    def _split_load_cycles(annotation: Annotation, reader: FactReader) -> float | None:
        """The vector loads' cycles where a split one runs alone in its cycle (the pipeline's
        split_load_alone and vector_loads_per_cycle; None where the model does not say so or
        no vector load crosses a line)."""
        if not annotation.split_loads or not reader.value("split_load_alone"):
            return None
        per_cycle = reader.value("vector_loads_per_cycle")
        return vector_split_cycles(list(annotation.nodes), annotation.split_loads,
                                   int(per_cycle)) if per_cycle else None

    def _simulate(self, annotation: Annotation, found: BoundsFound) -> Simulated:
        """Stage 4, "simulated": the out-of-order simulation of the loop, and each
        instruction's slack."""
        node_uops, node_slots = [], []
        for k, main in enumerate(annotation.mains):
            a = annotation.annotated[annotation.node_rows[k]]
            node_uops.append(_uop_cycles(a) if main else ())
            node_slots.append(a.slot if main else 0)
        # the simulation counts whole slots: half slots (a loop of nops) as whole ones of a
        # front end twice as wide, which dispatches and retires the same
        width = self.model.r_max
        if any(s != int(s) for s in node_slots):
            node_slots = [2 * s for s in node_slots]
            width = 2 * width if width else width
        body = Body(tuple(node.latency for node in annotation.nodes), tuple(node_uops),
                    tuple(tuple((e.src, e.distance, e.latency) for e in incoming)
                          for incoming in found.graph.in_edges()),
                    tuple(int(s) for s in node_slots), len(self.ports), found.balance)
        facts = annotation.facts
        core = CoreLimits(width, facts.window, facts.taken_branch)
        # results and retirements are what the slack needs; the views that need more ask
        # for the derived "full run"
        run = simulate_schedule(body, core, keep=TIMES, engine=self.engine, slack=True)
        # the run is exact in the limit; a finite run can sit a hair under a bound
        cycles = max([run.cycles] + [v or 0.0 for v in found.bounds.values.values()])
        slacks: list[float | None] = [None] * len(annotation.annotated)
        for k, s in enumerate(slack(body, core, run, self.engine)):
            i = annotation.node_rows[k]
            slacks[i] = s if slacks[i] is None else min(slacks[i], s)
        return Simulated(body, core, run, cycles, tuple(slacks))

    def _rows(self, matched: Matched, annotation: Annotation | None,
              found: BoundsFound | None, simulated: Simulated | None) -> list[InstructionRow]:
        """Derived "rows": each instruction's row with what the stages that ran found of it
        (uops as executed and latency; port pressure, slack, critical path and chain marks)."""
        if annotation is None:
            return list(matched.rows)
        if found is None or simulated is None:
            return [_row_with_findings(r, a, self._port_names(a))
                    for r, a in zip(matched.rows, annotation.annotated)]
        chains = found.chains
        on_chain = set(chains[0].nodes) if chains else set()
        on_path = set(found.critical_path.nodes)
        return [_row_with_findings(r, a, self._port_names(a), p, s, i in on_path, i in on_chain)
                for i, (r, a, p, s) in enumerate(zip(matched.rows, annotation.annotated,
                                                      found.pressure, simulated.slack))]

    def _bottleneck(self, matched: Matched, annotation: Annotation | None,
                    found: BoundsFound | None) -> NamedBottleneck:
        """Derived "bottleneck": the historical "bottleneck", the ports of the throughput bound,
        or the front end when the issue width (R_max) allows fewer instructions than the
        ports; and the kinds of the uops those ports bound."""
        if found is None:
            return NamedBottleneck()
        evidence, r_max = found.evidence, self.model.r_max
        front_limited = r_max and evidence.slots / r_max > evidence.throughput * (1 + 1e-9)
        if front_limited:
            return NamedBottleneck((FRONTEND_BOTTLENECK,))
        kinds = self._kinds_within(matched.semantics, annotation.annotated, evidence.neck) \
            if evidence.neck else []
        return NamedBottleneck(tuple(evidence.port_names), tuple(kinds))

    def _full_run(self, simulated: Simulated | None) -> Run | None:
        """Derived "full run": the simulated run with every record (dispatch and issue times
        too: a run kept lean simulates again, once)."""
        return None if simulated is None else simulated.run.full()

    def _analyse(self, found: BoundsFound | None,
                 simulated: Simulated | None) -> Criticality | None:
        """Derived "criticality": what each bottleneck costs and how they interact
        (criticality.analyse: a simulation per bottleneck and pair); None when the Predictor
        was made without it."""
        if not self.criticality or simulated is None:
            return None
        return analyse(simulated.body, simulated.core, simulated.run,
                       event_classes(found.evidence), engine=self.engine)

    def _port_names(self, a: Annotated) -> list:
        """An instruction's uops as executed, told in port names: [(ports, count)]."""
        return [(self._names(mask), count) for mask, count in a.uops]

    def _names(self, mask: int) -> list[str]:
        names = self._mask_names.get(mask)
        if names is None:
            names = self._mask_names[mask] = [p for i, p in enumerate(self.ports)
                                              if mask >> i & 1]
        return list(names)

    def _access_uops(self, a: Annotated, store: bool) -> tuple[tuple[int, int], ...]:
        """The uops of an instruction that do its load (or its store, the commit included):
        each uop attributed to a kind by the ports its kind's forms use (kinds.py); the plain
        load's address uops where none is."""
        if self._port_kinds is None:
            self._port_kinds = self.port_kinds()
        kind = STORES if store else LOADS
        kinds = self._instruction_kinds(a.semantics)
        if kinds == (kind,):
            return tuple(a.uops)
        uops = tuple(u for u in a.uops if (store and u[0] == self._commit_mask) or
                     (u[0] != self._commit_mask and
                      self._port_kinds.attribute(kinds, u[0]) == kind))
        return uops or self._address_uops()

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

    def _port_schedule(self, annotated) -> PortSchedule:
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
            return PortSchedule(0.0, 0, tuple([1.0] * n_ports), tuple({} for _ in annotated),
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
        return PortSchedule(cycles, neck, tuple(x / total for x in load), tuple(pressures),
                            {ports[p]: load[p] for p in range(n_ports)})


def _row_with_findings(r: InstructionRow, a: Annotated, uops: list, pressure=None,
                       slack_=None, on_path: bool = False,
                       on_chain: bool = False) -> InstructionRow:
    """A matched row with what the later stages found (one constructor call: a kernel has
    many rows and dataclasses.replace is slow)."""
    return InstructionRow(r.line, r.text, r.key, r.form, r.form_short, r.approx, r.reason,
                          r.source, uops, {} if pressure is None else pressure, a.node.latency,
                          a, slack_, on_path, on_chain)


def _assumed(results) -> Mapping:
    """What the stages assumed of the machine (each result's `assumed`), in order, read-only."""
    stages = [x.assumed for x in results if hasattr(x, "assumed")]
    return MappingProxyType(dict(pair for assumed in stages for pair in assumed))


def _on_rows(cycle: Cycle, node_rows: list[int]) -> Cycle:
    """A dependency cycle of graph nodes, told in instructions (an instruction and its
    address update are one instruction)."""
    rows = tuple(dict.fromkeys(node_rows[i] for i in cycle.nodes))
    return Cycle(cycle.ratio, cycle.latency, cycle.iterations, rows, cycle.edges, cycle.resources)


def _has_instructions(matched: Matched) -> bool:
    """An empty kernel is matched, and no more (0 cycles)."""
    return bool(matched.rows)


def _knows_any(matched: Matched, annotation: Annotation) -> bool:
    """With no instruction in the model, nothing is bounded or simulated (no prediction)."""
    return any(r.form for r in matched.rows)


def _check_tables(stages: tuple[Stage, ...], derived: tuple[Derived, ...]) -> tuple:
    """(the names of SOURCE and the stages, the derived results by name): each name once, each
    stage needing SOURCE or earlier stages, each derived result the stages or derived results
    before it."""
    names: set[str] = {SOURCE}
    for stage in stages:
        _check_entry(stage, names, "stage")
        names.add(stage.name)
    stage_names = frozenset(names)
    by_name: dict[str, Derived] = {}
    for entry in derived:
        _check_entry(entry, names, "derived result")
        names.add(entry.name)
        by_name[entry.name] = entry
    return stage_names, MappingProxyType(by_name)


def _check_entry(entry, known: set[str], what: str) -> None:
    if entry.name in known:
        raise ValueError(f"the {what} {entry.name!r} is named twice")
    missing = [n for n in entry.needs if n not in known]
    if missing:
        raise ValueError(f"the {what} {entry.name!r} needs {', '.join(map(repr, missing))}, "
                         "which no earlier entry makes")


# The stages predict runs, in order (module docstring): name, what makes it, what it needs.
STAGES: tuple[Stage, ...] = (
    Stage("matched", Predictor._match, (SOURCE,)),
    Stage("annotated", Predictor._annotate, ("matched",), when=_has_instructions),
    Stage("bounds", Predictor._bounds, ("matched", "annotated"), when=_knows_any),
    Stage("simulated", Predictor._simulate, ("annotated", "bounds")),
)

# The results made when first asked for (Report.derived), from the stages' and each other's.
DERIVED: tuple[Derived, ...] = (
    Derived("rows", Predictor._rows, ("matched", "annotated", "bounds", "simulated")),
    Derived("bottleneck", Predictor._bottleneck, ("matched", "annotated", "bounds")),
    Derived("full run", Predictor._full_run, ("simulated",)),
    Derived("criticality", Predictor._analyse, ("bounds", "simulated")),
)
