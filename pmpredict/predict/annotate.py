"""A matched kernel + its instructions' semantics + the model's numbers -> what the dependency
engine and the simulation need, with every assumption written down.

Engine layer (no I/O). For each instruction:
  * its uops as the core executes them: none for an eliminated move or a zero idiom that
    takes no port, none for the first half of a macro-fused pair (the pair runs as the jump's
    uop and takes one dispatch slot);
  * the latency from each source to its result (deps.Source), from the model per operand
    where it has them; a memory operand's latency is the load's (address -> value) for a pure
    load, else the operation's plus the load-to-use latency; store data and store addresses
    cost 0 (the store-forwarding latency counts from the store's data to the load's value);
    the old value of a partially written register (`mov cl, [m]`) costs the merge's own
    latency, not the load's (_merge_latency);
  * what it writes (register families and flags) and its memory accesses (deps.MemRef).
What the model does not know (a latency, the load latency, the window...) is assumed from
ASSUMED (model/defaults.py) and listed, per instruction and per machine fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pmpredict.predict.deps import Forwarding, MemRef, Node, Source
from pmpredict.predict.kinds import bypass_domain
from pmpredict.isa.semantics import ADDRESS, DATA, FLAG, MERGE, InstructionSemantics
from pmpredict.isa.base import (ATOMIC, BARRIER, UPPER_CLEANS, UPPER_DIRTIES, UPPER_KEEPS, VECTOR,
                                RegAccess)
from pmpredict.model.defaults import ASSUMED
from pmpredict.model.facts import (BY_KEY, BYPASS_KEYS, FORWARDING_KEYS, RMW_CHAIN_KEYS,
                                   FactReader, fact_value, fusion_key)

# what atomics read and write besides their operands, in the dependency graph: the core runs
# them one after another (each waits for the one before, in this iteration or the last), so
# they form a loop-carried chain of `atomic_cycles` each (measured: a pipeline fact)
ATOMIC_ORDER = "atomics"
# barriers (lfence, mfence) wait for what is in flight: one waits for the one before it, the
# form's measured latency being its time back to back (measure/chains.py BARRIER)
BARRIER_ORDER = "barriers"
# a vector shift by its element width or more whose link runs below this share of its form's
# latency does not wait for its source (Zen 4: 0.50 a link against 1.00)
SHIFT_OUT_SHARE = 0.75


@dataclass
class Annotated:
    """One kernel instruction as the engines see it."""
    index: int
    form: str | None
    semantics: InstructionSemantics
    uops: tuple[tuple[int, int], ...]          # (port mask, count) as executed
    node: Node
    # the write-back of address registers (ldr x0, [x1], #8; push; movs), a result of its own:
    # due `address_update_latency` after the base, not after the load
    update: Node | None = None
    # front-end slots (0: fused into the previous one; 0.5: a nop of a loop of nops, two a slot)
    slot: float = 1
    eliminated: bool = False                   # move eliminated at rename
    idiom: str | None = None                   # dependency-breaking idiom: "zero" / "ones"
    fused: bool = False                        # the jump of a macro-fused pair
    # a store committed with the store before it (one paired_store_bytes block): on these
    # iterations (store_commits.EVEN, ODD; 0: never) it runs `paired_uops` (its address)
    # instead of its `uops`
    paired: int = 0
    paired_uops: tuple[tuple[int, int], ...] = ()
    assumed: tuple[Note, ...] = ()                     # what was assumed for this instruction
    # an instruction that costs more than its form (semantics' beyond_model): the cycles from
    # one such to the next that the prediction counts (an atomic: the machine's atomic_cycles;
    # a barrier: its form's measured latency); None: not counted (a lower bound)
    ordered: float | None = None

    def at(self, index: int) -> "Annotated":
        """A copy as instruction `index` (shallow: the later steps replace fields, they do not
        change the objects in them). Cheaper than copy.copy, for a memo's entries."""
        twin = object.__new__(Annotated)
        twin.__dict__.update(self.__dict__)
        twin.index = index
        return twin


EMPTY: Mapping = MappingProxyType({})

# what was assumed for one instruction (Note.what): its latency, as an ALU operation's or as
# the load latency; an instruction not in the model; whether an idiom takes a port; a merge
# into a partly written register; the stack sync; reads and writes guessed
LATENCY, LOAD_LATENCY, NOT_IN_MODEL = "latency", "load latency", "not in the model"
IDIOM, MERGE_NOTE, STACK_SYNC, SEMANTICS = "idiom", "merge", "stack sync", "semantics"


@dataclass(frozen=True)
class Note:
    """One assumption made for one instruction: what kind (LATENCY...), the value where it
    has one, and its words in the prediction."""
    what: str
    text: str
    value: float | None = None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class MachineFacts:
    """A model's machine-wide facts as the engines read them (model/facts.py: the model's
    value, else its fallback's, else the assumed value), and what its provenance says about
    them. Read once a model; what one kernel assumed is that kernel's record (FactReader)."""
    pipeline: Mapping
    width: float | None                  # the issue width (the model's r_max)
    loop: bool                           # the kernel ends in its loop branch
    # the ports past the model's own that stand for the measured store commits
    # (store_commits.commit_ports)
    commit_mask: int = 0
    # why the model's measured front end may be wrong (what a disturbed measurement left:
    # measure.probes.doubts), from its provenance
    doubts: tuple[str, ...] = ()
    # measured facts whose chain did not reproduce (measure.latency._settle): key -> why
    fact_doubts: Mapping = field(default_factory=lambda: EMPTY)
    # what a host model's measuring budget left (provenance.host.unmeasured): form -> what it
    # lacks, and the pairs of forms not measured together
    unmeasured_forms: Mapping = field(default_factory=lambda: EMPTY)
    unmeasured_pairs: frozenset = frozenset()

    def value(self, key: str):
        """The fact's value; where the model lacks it, its fallback's or its assumed value."""
        return fact_value(self.pipeline, key)

    def given(self, key: str) -> bool:
        return self.pipeline.get(key) is not None

    def reader(self) -> FactReader:
        """A record of what one kernel assumes, started with the facts every kernel's bounds
        read: the taken branch (a loop), the window, the load and forwarding latencies."""
        reader = FactReader(self.pipeline)
        for key in ("taken_branch",) * self.loop + ("window", "load_latency",
                                                    "store_forward_latency"):
            reader.value(key)
        return reader

    @property
    def window(self) -> int:
        return int(self.value("window"))

    @property
    def taken_branch(self) -> float:
        return float(self.value("taken_branch")) if self.loop else 0.0

    @property
    def load_latency(self) -> float:
        return float(self.value("load_latency"))

    @property
    def store_commits(self) -> int:
        return int(self.value("store_commits") or 0)

    @property
    def atomic_cycles(self) -> float | None:
        return float(self.pipeline["atomic_cycles"]) if self.pipeline.get("atomic_cycles") \
            else None

    def bypass(self) -> dict[frozenset, float]:
        """The extra cycles of a vector value between each pair of domains (deps.build_graph;
        the assumed 0 where the model lacks a pair: said where a kernel crosses it)."""
        return {pair: float(self.value(key)) for pair, key in BYPASS_KEYS.items()}

    def forwarding(self) -> Forwarding:
        """The forwarding latency of each kind the model gives (None: it does not)."""
        rmw = [self.value(key) for key in RMW_CHAIN_KEYS]
        return Forwarding(float(self.value("store_forward_latency")),
                          **{kind: float(self.pipeline[key]) if self.given(key) else None
                             for kind, key in FORWARDING_KEYS.items()},
                          rmw=None if None in rmw else tuple(map(float, rmw)))

    def fuses(self, mnemonic: str) -> tuple[bool, bool]:
        """(whether `mnemonic` + jcc fuse, whether the model says so): a first instruction
        without a fact of its own goes as cmp."""
        key = fusion_key(mnemonic)
        if key in BY_KEY and self.given(key):
            return bool(self.pipeline[key]), True
        return bool(self.value("macro_fusion")), False

    def shift_out_breaks(self, latency: float) -> bool:
        """Whether a vector shift by its element width or more, whose form takes `latency`,
        runs without waiting for its source (shift_out_latency below three quarters of it)."""
        value = self.value("shift_out_latency")
        return value is not None and float(value) < SHIFT_OUT_SHARE * latency

    @property
    def shift_waits_for_flags(self) -> bool:
        """Whether a shift by a count in a register waits for the flags before it, which a
        count of 0 would keep (shift_count_flags: cycles, half a cycle or more)."""
        return float(self.value("shift_count_flags")) >= 0.5

    def counts(self, beyond_model: str) -> bool:
        """Whether the machine's facts count an instruction that costs more than its form
        (InstructionSemantics.beyond_model): an atomic, when atomic_cycles is measured."""
        return beyond_model == ATOMIC and bool(self.atomic_cycles)


def assume_forwarding(reader: FactReader, kinds) -> None:
    """Say which forwarding latencies a kernel used without the model giving them."""
    for kind in sorted(kinds):
        if kind in FORWARDING_KEYS:
            reader.value(FORWARDING_KEYS[kind])
        elif kind == "rmw":
            # without the back-to-back link the others stand for nothing: that one is said
            for key in RMW_CHAIN_KEYS if reader.given(RMW_CHAIN_KEYS[0]) else RMW_CHAIN_KEYS[:1]:
                reader.value(key)


def machine_facts(model, loop: bool) -> MachineFacts:
    """The model's facts (its pipeline, issue width, store commit ports) and what its
    provenance says about them: doubts of its front end and of its measured facts, and what
    a host model's measuring budget left unmeasured."""
    pipe = model.pipeline or {}
    provenance = model.provenance or {}
    front = provenance.get("front_end")
    doubts = front.get("doubts") if isinstance(front, dict) else None
    commits = int(pipe.get("store_commits") or 0)
    unmeasured_forms, unmeasured_pairs = {}, frozenset()
    unmeasured = (provenance.get("host") or {}).get("unmeasured")
    if isinstance(unmeasured, dict):
        forms = unmeasured.get("forms")
        if isinstance(forms, dict):
            unmeasured_forms = {str(f): str(why) for f, why in forms.items()}
        pairs = unmeasured.get("pairs")
        if isinstance(pairs, list):
            unmeasured_pairs = frozenset(frozenset(map(str, p)) for p in pairs
                                         if isinstance(p, list) and len(p) == 2)
    latencies = provenance.get("latencies")
    fact_doubts = latencies.get("doubts") if isinstance(latencies, dict) else None
    return MachineFacts(
        MappingProxyType(dict(pipe)), model.r_max, loop, ((1 << commits) - 1) << len(model.ports),
        tuple(str(d) for d in doubts) if isinstance(doubts, list) else (),
        MappingProxyType({str(k): str(v) for k, v in fact_doubts.items() if k in pipe}
                         if isinstance(fact_doubts, dict) else {}),
        MappingProxyType(unmeasured_forms), unmeasured_pairs)


def _pure_load(sem: InstructionSemantics) -> bool:
    """A load whose only data is the loaded value (mov r, m), not a load-op (add r, m)."""
    return sem.loads and not sem.stores and not any(
        r.role == DATA and r.kind != FLAG for r in sem.reads)


def annotate(forms, semantics, model, loop: bool = True, stack_engine: str = "",
             memo: dict | None = None) -> tuple[list[Annotated], MachineFacts, FactReader]:
    """forms[i]: the model form of instruction i (None: not in the model); semantics[i]: its
    InstructionSemantics; stack_engine: the register whose implicit updates (push, pop) the
    front end makes at no latency (the ISA's stack_engine_register). memo: a dict the caller
    keeps across kernels of one model: an instruction's annotation depends on its form and
    semantics alone (until macro-fusion pairs it), so each is made once.
    Returns the instructions, the machine's facts, and the record of what this kernel
    assumed of them (the later stages add to it)."""
    if memo is None:
        machine = machine_facts(model, loop)
    else:
        machine = memo.get(("machine facts", loop))
        if machine is None:
            machine = memo[("machine facts", loop)] = machine_facts(model, loop)
    reader = machine.reader()
    # a block repeats whether or not it ends in its own branch: cyclic, as the stack syncs
    merging = _upper_merges(semantics)
    if merging and not int(reader.value("sse_upper_merge")):
        merging = {}
    out = []
    for i, (form, sem) in enumerate(zip(forms, semantics)):
        if i in merging:                 # made afresh: the read depends on the kernel
            out.append(_one(i, form, merging[i], model, machine, stack_engine))
            continue
        if memo is None:
            out.append(_one(i, form, sem, model, machine, stack_engine))
            continue
        entry = memo.get((id(sem), form))
        if entry is None or entry[0] is not sem:        # the id of a live object is unique
            entry = memo[(id(sem), form)] = (sem, _one(i, form, sem, model, machine,
                                                       stack_engine))
        out.append(entry[1].at(i))
    if stack_engine:
        # a block repeats whether or not it ends in its own branch (the harness and every
        # peer run it in a loop): what one pass leaves pending syncs in the next
        _stack_syncs(out, stack_engine, machine, reader)
    for a, b in zip(out, out[1:]):
        if a.semantics.fusion == "first" and b.semantics.fusion == "jcc" and not a.fused \
                and (b.uops or b.form is None) and _fuse(a, machine, reader):
            if b.uops:
                a.uops = ()          # the pair runs as the jump's uop; a jump the model
            b.slot, b.fused = 0, True    # lacks leaves the pair the first one's uops
    _share_nop_slots(out, machine, reader)
    if any(sem.count_kept_flags for sem in semantics):
        reader.value("shift_count_flags")           # said where the model lacks it
    if any(sem.shifted_out for sem in semantics):
        reader.value("shift_out_latency")
    return out, machine, reader


def _share_nop_slots(out: list[Annotated], machine: MachineFacts, reader: FactReader) -> None:
    """A nop takes no front-end slot of its own where it shares the slot of the instruction
    before it, one nop a slot: after a general-purpose instruction or a nop (the pipeline's
    nop_fusion), after a vector one (nop_fusion_vector; measured on Zen 4: `lea r10, [r9 + 8]`
    then a nop one slot, two nops one slot, a nop after `vpaddd` a slot of its own,
    measure/probes.py). The block repeats, so the first instruction follows the last: a loop
    of nothing but nops runs two a slot across iterations, half a slot each (Zen 4: `nop`
    alone 0.08 cycles a loop, twelve a cycle at six slots)."""
    if not any(_is_nop(a) for a in out):
        return
    given = machine.given("nop_fusion")
    if all(_is_nop(a) for a in out):
        if not given:
            reader.value("nop_fusion")
        if machine.value("nop_fusion"):
            for a in out:
                a.slot = 0.5
        return
    if len(out) < 2:
        return
    # the vector fact counts only beside the general one (older models measured neither)
    shares = bool(machine.value("nop_fusion"))
    shares_vector = bool(machine.value("nop_fusion_vector") if given
                         else BY_KEY["nop_fusion_vector"].assumed)
    taken = set()                            # instructions whose slot a nop shares already
    # from an instruction that is not a nop: each nop's predecessor is settled before it
    start = next((i for i, a in enumerate(out) if not _is_nop(a)), 0)
    for k in range(len(out)):
        i = (start + k) % len(out)
        a, before = out[i], out[i - 1]
        if not _is_nop(a) or before.slot <= 0 or before.index in taken:
            continue
        vector = any(r.kind == VECTOR and r.role == DATA
                     for r in before.semantics.reads + before.semantics.writes)
        if not given:                         # said only where the fact decides a slot
            reader.value("nop_fusion")
        if shares_vector if vector else shares:
            a.slot = 0
            taken.add(before.index)


def _is_nop(a: Annotated) -> bool:
    return a.semantics.mnemonic == "nop"


def _fuse(a: Annotated, machine: MachineFacts, reader: FactReader) -> bool:
    """Whether the first instruction `a` and the jcc after it macro-fuse: as the model says
    for a's mnemonic; where it does not, as cmp (itself assumed fused where the model has no
    macro_fusion), and then the record says so under the fact's key (only for the first
    instructions this kernel pairs with a jcc)."""
    mnemonic = a.semantics.mnemonic
    fused, given = machine.fuses(mnemonic)
    if not given:
        reader.assume(fusion_key(mnemonic), int(fused))
    return fused


def _upper_merges(semantics) -> dict[int, InstructionSemantics]:
    """Instruction index -> its semantics with a MERGE read of its vector register, for each
    legacy-SSE write of an xmm register (UPPER_KEEPS) that does not read the register already
    and runs while the upper halves are dirty: the last 256/512-bit AVX write before it
    (cyclically) came after the last vzeroupper. A core that keeps the upper half merges
    the new low half into the old register (sse_upper_merge; measured on Zen 4)."""
    if not any(s.upper == UPPER_DIRTIES for s in semantics):
        return {}
    out, n = {}, len(semantics)
    for i, sem in enumerate(semantics):
        if sem.upper != UPPER_KEEPS:
            continue
        before = [semantics[(i - d) % n] for d in range(1, n + 1)]
        last = next((s.upper for s in before if s.upper in (UPPER_DIRTIES, UPPER_CLEANS)), None)
        if last != UPPER_DIRTIES:
            continue
        kept = [w for w in sem.writes if w.kind == VECTOR and w.width == 128
                and w.name.startswith("v")
                and not any(r.name == w.name and r.role in (DATA, MERGE) for r in sem.reads)]
        if kept:
            out[i] = replace(sem, reads=sem.reads + tuple(
                RegAccess(w.name, VECTOR, w.operand, MERGE, 256) for w in kept))
    return out


def _one(i: int, form, sem: InstructionSemantics, model, machine: MachineFacts,
         stack_engine: str = "") -> Annotated:
    """Instruction i as the engines see it: its uops, its dependence-graph node (and its
    address update's), its front-end slots and what was assumed for it."""
    notes: list[Note] = []
    if sem.candidate_idiom and form:
        sem = _as_recognised(sem, form, model, notes)
    uops = tuple(model.uops.get(form, ())) if form else ()
    pure_load = _pure_load(sem)
    base = _base_latency(form, model, machine, pure_load, notes)
    eliminated, idiom = False, sem.idiom
    if sem.move and form and model.move_elimination.get(form):
        eliminated, uops, base = True, (), 0.0
    if idiom:
        uops, base = _idiom(idiom, form, model, uops, base, notes)

    def operand_latency(operand):
        if form is None or eliminated:
            return None
        return model.operand_latency.get(form, {}).get(operand) if operand is not None else None

    mem_latency = {m.operand: _load_latency(operand_latency(m.operand), base, pure_load,
                                            machine.load_latency)
                   for m in sem.memory if m.load}
    kept = sem.count_kept_flags if sem.count_kept_flags and not machine.shift_waits_for_flags \
        else ()
    if sem.shifted_out and machine.shift_out_breaks(base):
        kept = {r.name for r in sem.reads if r.kind == VECTOR and r.role != ADDRESS}
    sources = [Source(r.name, float(_read_latency(r, sem, form, base, pure_load, mem_latency,
                                                  operand_latency, notes)), r.operand)
               for r in sem.reads if r.name not in kept]
    latency = max([s.latency for s in sources] + [0.0 if (eliminated or idiom == "zero") or
                                                  (sem.stores and not sem.loads) else base])
    updated = _address_updates(sem)
    writes = tuple(dict.fromkeys(w.name for w in sem.writes if w.name not in updated))
    ordered = _order(sem, form, model, machine)
    if ordered is not None:
        order = ATOMIC_ORDER if machine.counts(sem.beyond_model) else BARRIER_ORDER
        sources.append(Source(order, ordered))
        writes += (order,)
    bumps = tuple((r, d) for r, d in sem.offsets if r not in updated)
    copies = tuple(c for c in sem.copies if c[0] not in updated)
    domain = None if eliminated or idiom else bypass_domain(model.isa, sem)
    node = Node(tuple(sources), writes, _memory_refs(sem, mem_latency, base, pure_load), latency,
                bumps, copies, domain)
    update = _update_node(sem, updated, stack_engine, machine) if updated else None
    if not sem.known:
        notes.append(Note(SEMANTICS, "reads/writes guessed (instruction not in the semantics "
                                     "tables)"))
    if machine.commit_mask and sem.stores and form:
        uops += ((machine.commit_mask, 1),)      # its commit (store_commits.commit_ports)
    return Annotated(i, form, sem, uops, node, update, slot=_slots(sem, machine),
                     eliminated=eliminated, idiom=idiom, assumed=tuple(notes), ordered=ordered)


def _base_latency(form, model, machine: MachineFacts, pure_load: bool, notes: list) -> float:
    """The instruction's latency: the model's; for a load it lacks (pop: no chain measures it
    alone) the machine's load-to-use latency, not an ALU operation's; else assumed."""
    base = model.latency.get(form) if form else None
    if base is not None:
        return base
    if form and pure_load:
        base = machine.load_latency
        notes.append(Note(LOAD_LATENCY, f"latency {base:g} assumed (the load latency)", base))
        return base
    base = ASSUMED["latency"]
    notes.append(Note(LATENCY, f"latency {base:g} assumed", base) if form else
                 Note(NOT_IN_MODEL, f"not in the model: no uops, latency {base:g} assumed", base))
    return base


def _as_recognised(sem: InstructionSemantics, form, model, notes: list) -> InstructionSemantics:
    """An instruction that is an idiom where the core recognises it (candidate_idiom:
    `vandnpd x, y, y`, `cmp r, r`), as this machine runs it: an idiom reading nothing but its
    address where the model says the core breaks it (idiom_breaks), else as it is; where the
    model does not say, as it is, and noted."""
    recognised = model.idiom_breaks.get(form)
    if recognised is None:
        notes.append(Note(IDIOM, f"{sem.candidate_idiom} idiom on some cores: not measured, "
                                 "assumed not recognised"))
    if not recognised:
        return sem
    return replace(sem, idiom=sem.candidate_idiom,
                   reads=tuple(r for r in sem.reads if r.role == ADDRESS))


def _idiom(idiom: str, form, model, uops, base: float, notes: list) -> tuple:
    """(uops, latency) of a dependency-breaking idiom: no port where the model says so (a zero
    idiom assumed to take none, a ones idiom one); a zero idiom's result is ready at once."""
    takes_port = model.idiom_ports.get(form) if form else None
    if takes_port is None:
        takes_port = idiom != "zero"
        if form:
            notes.append(Note(IDIOM, f"{idiom} idiom: {'a' if takes_port else 'no'} port "
                                     "assumed"))
    return (uops if takes_port else ()), (0.0 if idiom == "zero" else base)


def _load_latency(measured, base: float, pure_load: bool, load: float) -> float:
    """A memory operand's address -> value: the model's per operand; else a pure load's own
    latency, or the operation's plus the load-to-use latency."""
    if measured is not None:
        return measured
    return base if pure_load else base + load


def _read_latency(r, sem: InstructionSemantics, form, base: float, pure_load: bool,
                  mem_latency: dict, operand_latency, notes: list) -> float:
    """The latency from one source (a register, flags) to the result."""
    if r.role == ADDRESS:
        owners = [m for m in sem.memory if r.name in (m.base, m.index)
                  and (r.operand is None or m.operand == r.operand)]
        lats = [mem_latency[m.operand] for m in owners if m.load]
        if lats:
            return max(lats)
        if any(not (m.load or m.store) for m in owners):     # lea: the address is its result
            lat = operand_latency(r.operand)
            return base if lat is None else lat
        return 0.0                                  # a store's address: no register result
    if sem.stores and not sem.loads and r.kind != FLAG:
        return 0.0                                  # store data: see store_forward_latency
    if r.role == MERGE:
        return _merge_latency(r, form, base, pure_load, operand_latency(r.operand), notes)
    lat = operand_latency(r.operand)
    return base if lat is None else lat


def _memory_refs(sem: InstructionSemantics, mem_latency: dict, base: float,
                 pure_load: bool) -> tuple[MemRef, ...]:
    """The instruction's memory accesses as the dependence graph sees them."""
    vector = any(r.kind == VECTOR and r.role == DATA for r in sem.reads) if sem.stores and \
        not sem.loads else any(w.kind == VECTOR for w in sem.writes)
    # setcc to memory: the stored byte is made from the flags, no register holds it
    flags_data = sem.stores and not sem.loads and \
        any(r.role == DATA and r.kind == FLAG for r in sem.reads) and \
        not any(r.role == DATA and r.kind != FLAG for r in sem.reads)
    vector_unit = any(w.kind == VECTOR for w in sem.writes) or \
        any(r.kind == VECTOR and r.role == DATA for r in sem.reads)
    return tuple(MemRef(m.address, tuple(x for x in (m.base, m.index) if x), m.width, m.load,
                        m.store, mem_latency.get(m.operand, 0.0), m.operand is None, vector,
                        0.0 if pure_load else base,
                        m.load and not m.store and not sem.stores and not pure_load,
                        flags_data and m.store, m.load and vector_unit)
                 for m in sem.memory)


def _order(sem: InstructionSemantics, form, model, machine: MachineFacts) -> float | None:
    """The cycles from one instruction that costs more than its form to the next: an atomic
    (known form or not) the machine's atomic_cycles, a barrier its form's measured latency
    (its time back to back, chains.py); None: not counted (a lower bound)."""
    if machine.counts(sem.beyond_model):
        return machine.atomic_cycles
    if sem.beyond_model == BARRIER and form and form in model.latency:
        return model.latency[form]
    return None


def _update_node(sem: InstructionSemantics, updated: tuple[str, ...], stack_engine: str,
                 machine: MachineFacts) -> Node:
    """The write-back of address registers: due address_update_latency after the base (the
    stack engine's implicit updates at once)."""
    implicit = {w.name for w in sem.writes if w.operand is None}
    latency = float(machine.value("address_update_latency"))
    sources = tuple(Source(r, 0.0 if r == stack_engine and r in implicit else latency)
                    for r in updated)
    return Node(sources, tuple(updated), (), max(s.latency for s in sources),
                tuple((r, d) for r, d in sem.offsets if r in updated))


def _merge_latency(r, form, base: float, pure_load: bool, measured, notes: list) -> float:
    """The old value of a partially written register -> the result (a MERGE read): the
    merge's own latency. Measured (the model's latency of the destination operand,
    chains.py) where the model has it. Else, for a pure load (`mov cl, [m]`, an AArch64
    load into a lane), the load is not on that path: it starts before the old value is
    there, which only has to arrive for the merge: ASSUMED merge_latency, stated (measured on
    Zen 4: `movb 24(%rsi), %cl` in a loop 1.0 cycle; on Raptor Cove 1.5; not the load latency
    + 1). Where the instruction computes the new bits itself (`imul cx, dx, 3`, `sete cl`,
    an insert from a register `ins v0.d[1], v1.d[0]`, a merge-masked operation), the merge is
    that operation, one uop taking the old register as one more input: its latency stays
    (measured on Zen 4: `imul cx, dx, 3` 4 cycles from the old rcx, as from dx)."""
    if measured is not None:
        return measured
    if not pure_load:
        return base
    lat = ASSUMED["merge_latency"]
    if form:                      # (not in the model: its whole latency is assumed already)
        notes.append(Note(MERGE_NOTE, f"merge: {lat:g} cycle from the old {r.name}", lat))
    return lat


def _stack_syncs(out: list[Annotated], register: str, machine: MachineFacts,
                 reader: FactReader) -> None:
    """The stack engine keeps the offset of implicit updates (push, pop, call) to itself: the
    first instruction that names the register explicitly afterwards (`sub rsp, 8`, `mov rbp,
    rsp`, `mov rax, [rsp + 8]`) waits for a sync uop that applies it to the register. The
    sync is charged to the last implicit update before that use: the machine's
    stack_sync_latency instead of nothing, said to be assumed unless the model gives it
    (measured on Zen 4: push; push; sub rsp, 8 runs at 2 cycles a loop, the sync
    and the sub; push; mov rbp, rsp; and rsp, -32; add rsp, 16 at 3.4). Where the machine's
    reads do not wait for it (stack_sync_reads 0; measured on Zen 4: `pop r8; mov rax, rsp`
    0.32 cycles, `push rbp; mov rbp, rsp` 0.49, the push alone 0.50), only an explicit write
    syncs and a read is as if the stack pointer were not named."""
    def implicit_update(a):
        return a.update is not None and register in a.update.writes and any(
            w.name == register and w.operand is None for w in a.semantics.writes)

    def writes(a):
        return any(w.name == register and w.operand is not None for w in a.semantics.writes)

    def reads(a):
        return any(r.name == register and r.operand is not None for r in a.semantics.reads) or \
            any(register in (m.base, m.index) and m.operand is not None
                for m in a.semantics.memory)

    if not any(implicit_update(a) for a in out):
        return                                   # no push, pop or call: nothing to sync
    synced, pending, by_read = set(), None, False
    sync_reads = bool(machine.value("stack_sync_reads"))
    for a in out + out:                        # what the previous pass left pending
        explicit = writes(a) or (sync_reads and reads(a))
        if explicit and pending is not None:
            synced.add(pending)
            by_read = by_read or not writes(a)
            pending = None
        elif explicit:
            pending = None
        if implicit_update(a):
            pending = a.index
    sync = float(machine.value("stack_sync_latency"))
    for a in out:
        if a.index in synced:
            latencies = tuple(replace(s, latency=s.latency + sync)
                              if s.resource == register else s for s in a.update.reads)
            a.update = replace(a.update, reads=latencies,
                               latency=max(s.latency for s in latencies))
            if not machine.given("stack_sync_latency"):
                a.assumed = a.assumed + (Note(STACK_SYNC, f"stack sync: {sync:g} cycle on "
                                                          f"{register}", sync),)
    if by_read and not machine.given("stack_sync_reads"):
        reader.value("stack_sync_reads")


def _slots(sem: InstructionSemantics, machine: MachineFacts) -> int:
    """Front-end slots: a load-op takes the machine's (2 where it is unlaminated), by class:
    a vector load-op (one whose data is a vector register: vpaddd x, x, [m]) and an integer
    one (add r, [m]), each with and without an index (cores differ by class; measured on
    Zen 4: add r, [b + i] split, vpaddd x, x, [b + i] not)."""
    if not sem.loads or sem.stores or _pure_load(sem):
        return 1
    indexed = "indexed_" if any(m.index for m in sem.memory if m.load) else ""
    vector = "vector_" if any(r.role == DATA and r.kind == VECTOR
                              for r in sem.reads + sem.writes) else ""
    return int(machine.value(f"{indexed}{vector}load_op_slots"))


def _address_updates(sem: InstructionSemantics) -> tuple[str, ...]:
    """Registers the instruction writes as a side effect of addressing: the base of a
    write-back access, or the implicit pointer of push / pop / string instructions."""
    bases = {m.base for m in sem.memory if m.base and (m.writeback or m.operand is None)}
    return tuple(w.name for w in sem.writes
                 if w.name in bases and (w.operand is None or any(
                     m.writeback and m.base == w.name for m in sem.memory)))
