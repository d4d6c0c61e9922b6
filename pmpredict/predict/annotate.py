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

from dataclasses import dataclass, field, replace

from pmpredict.predict.deps import Forwarding, MemRef, Node, Source
from pmpredict.isa.semantics import ADDRESS, DATA, FLAG, MERGE, InstructionSemantics
from pmpredict.isa.base import ATOMIC, BARRIER, VECTOR
from pmpredict.model.defaults import ASSUMED
from pmpredict.model.machine import FORWARDING_KEYS, FUSION_KEYS

# what atomics read and write besides their operands, in the dependency graph: the core runs
# them one after another (each waits for the one before, in this iteration or the last), so
# they form a loop-carried chain of `atomic_cycles` each (measured: a pipeline fact)
ATOMIC_ORDER = "atomics"
# barriers (lfence, mfence) wait for what is in flight: one waits for the one before it, the
# form's measured latency being its time back to back (measure/chains.py BARRIER)
BARRIER_ORDER = "barriers"


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
    slot: int = 1                              # front-end slots (0: fused into the previous one)
    eliminated: bool = False                   # move eliminated at rename
    idiom: str | None = None                   # dependency-breaking idiom: "zero" / "ones"
    fused: bool = False                        # the jump of a macro-fused pair
    # a store committed with the store before it (same 32-byte block): on these iterations
    # (deps.EVEN, ODD; 0: never) it runs `paired_uops` (its address) instead of its `uops`
    paired: int = 0
    paired_uops: tuple[tuple[int, int], ...] = ()
    assumed: list[str] = field(default_factory=list)    # what was assumed for this instruction
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


@dataclass
class PipelineFacts:
    """The machine facts the simulation uses, and which of them were assumed."""
    width: float | None
    window: int
    load_latency: float
    store_forward_latency: float
    taken_branch: float
    macro_fusion: bool
    address_update_latency: float
    assumed: dict[str, float] = field(default_factory=dict)
    load_op_slots: int = 1              # front-end slots of a load-op (2: unlaminated)
    indexed_load_op_slots: int = 1      # ... of a load-op whose address has an index
    paired_stores: bool = False         # two consecutive stores to one block commit at once
    # why the model's measured front end may be wrong (what a disturbed measurement left:
    # measure.probes.doubts), from its provenance
    doubts: tuple[str, ...] = ()
    atomic_cycles: float | None = None  # a locked read-modify-write back to back (measured)
    # the stack engine's sync uop (cycles), and whether the model gives it (else: assumed)
    stack_sync_latency: float = ASSUMED["stack_sync_latency"]
    stack_sync_measured: bool = False
    paired_store_bytes: int = ASSUMED["paired_store_bytes"]   # stores pair within such a block
    # macro-fusion of each first instruction (mnemonic) the model gives (FUSION_KEYS);
    # macro_fusion above is cmp/test's, ASSUMED where the model does not give it
    fusion: dict[str, bool] = field(default_factory=dict)
    vector_load_op_slots: int = 1           # a vector load-op (vpaddd x, x, [base + disp])
    indexed_vector_load_op_slots: int = 1   # ... whose address has an index
    # store -> load forwarding through an indexed address, and of vector data; None: the model
    # does not say (store_forward_latency is taken, and said to be assumed where it is used)
    store_forward_indexed: float | None = None
    store_forward_vector: float | None = None
    store_forward_load_op: float | None = None
    # the widest store (bytes) that pairs, and whether the model does not say (then assumed)
    paired_store_width: int = ASSUMED["paired_store_width"]
    paired_store_width_assumed: bool = True
    # whether stores of a vector register's data pair, and whether the model does not say
    paired_store_vector: bool = bool(ASSUMED["paired_store_vector"])
    paired_store_vector_assumed: bool = True
    # whether the stores a run leaves over share commits, and whether the model does not say
    paired_store_leftover: bool = bool(ASSUMED["paired_store_leftover"])
    paired_store_leftover_assumed: bool = True
    # whether a nop shares the slot of the general-purpose (vector) instruction before it, and
    # whether the model does not say (then assumed)
    nop_fusion: bool = bool(ASSUMED["nop_fusion"])
    nop_fusion_vector: bool = bool(ASSUMED["nop_fusion_vector"])
    nop_fusion_assumed: bool = True
    # whether an explicit read of the stack pointer (mov rbp, rsp; an address through rsp)
    # waits for the stack sync as a write does, and whether the model does not say
    stack_sync_reads: bool = bool(ASSUMED["stack_sync_reads"])
    stack_sync_reads_assumed: bool = True
    # measured facts whose chain did not reproduce (measure.latency._settle): key -> why
    fact_doubts: dict[str, str] = field(default_factory=dict)
    # stores committed a cycle whatever their forms (0: the model does not say, and stores
    # are limited by their forms' ports alone); `commit_mask`: the ports that stand for the
    # commit, past the model's own (commit_ports)
    store_commits: int = 0
    commit_mask: int = 0
    # what a host model's measuring budget left (provenance.host.unmeasured): form -> what it
    # lacks, and the pairs of forms not measured together
    unmeasured_forms: dict[str, str] = field(default_factory=dict)
    unmeasured_pairs: frozenset = frozenset()

    def forwarding(self) -> Forwarding:
        return Forwarding(self.store_forward_latency, self.store_forward_indexed,
                          self.store_forward_vector, self.store_forward_load_op)

    def copy(self) -> "PipelineFacts":
        """A copy whose `assumed` is its own (the one field a kernel changes)."""
        twin = object.__new__(PipelineFacts)
        twin.__dict__.update(self.__dict__)
        twin.assumed = dict(self.assumed)
        return twin

    def assume_forwarding(self, kinds) -> None:
        """Say which forwarding latencies a kernel used without the model giving them."""
        given = {"indexed": self.store_forward_indexed, "vector": self.store_forward_vector,
                 "load_op": self.store_forward_load_op}
        for kind in sorted(kinds):
            if kind in given and given[kind] is None:
                self.assumed[FORWARDING_KEYS[kind]] = self.store_forward_latency

    def fuses(self, mnemonic: str) -> tuple[bool, bool]:
        """(whether `mnemonic` + jcc fuse, whether the model says so): a first instruction
        without a fact of its own goes as cmp."""
        if mnemonic in self.fusion:
            return self.fusion[mnemonic], True
        return self.macro_fusion, False

    def counts(self, beyond_model: str) -> bool:
        """Whether the machine's facts count an instruction that costs more than its form
        (InstructionSemantics.beyond_model): an atomic, when atomic_cycles is measured."""
        return beyond_model == ATOMIC and bool(self.atomic_cycles)


def commit_ports(model) -> tuple[str, ...]:
    """The ports a model's measured store commits stand for (pipeline store_commits: every
    store of a known form takes a uop there, besides its form's; a store that pairs with the
    one before it runs its address uops only, as it commits with that one): named after the
    model's own ports, `store` (or store1, store2...); none where the model does not say."""
    n = int((model.pipeline or {}).get("store_commits") or 0)
    return ("store",) if n == 1 else tuple(f"store{k + 1}" for k in range(n))


def machine_facts(model, loop: bool) -> PipelineFacts:
    """Issue width (r_max), window, load and forwarding latencies, taken-branch cost; a value
    the model does not give is taken from ASSUMED (model/defaults.py) and listed in `assumed`."""
    pipe, assumed = model.pipeline or {}, {}

    def fact(key):
        if pipe.get(key) is not None:
            return pipe[key]
        assumed[key] = ASSUMED[key]
        return ASSUMED[key]

    taken = fact("taken_branch") if loop else 0.0
    front = (model.provenance or {}).get("front_end")
    doubts = front.get("doubts") if isinstance(front, dict) else None
    fusion = pipe.get("macro_fusion")
    sync = pipe.get("stack_sync_latency")
    slots = {key: int(pipe[key]) for key in ("load_op_slots", "indexed_load_op_slots")
             if pipe.get(key) is not None}
    facts = PipelineFacts(
        model.r_max, int(fact("window")), float(fact("load_latency")),
        float(fact("store_forward_latency")), float(taken),
        bool(fusion) if fusion is not None else bool(ASSUMED["macro_fusion"]),
        float(pipe.get("address_update_latency", ASSUMED["address_update_latency"])),
        assumed, int(pipe.get("load_op_slots", 1)), int(pipe.get("indexed_load_op_slots", 1)),
        bool(pipe.get("paired_stores")),
        tuple(str(d) for d in doubts) if isinstance(doubts, list) else (),
        float(pipe["atomic_cycles"]) if pipe.get("atomic_cycles") else None,
        float(sync) if sync is not None else ASSUMED["stack_sync_latency"], sync is not None,
        int(pipe.get("paired_store_bytes", ASSUMED["paired_store_bytes"])))
    facts.fusion = {m: bool(pipe[key]) for m, key in FUSION_KEYS.items()
                    if pipe.get(key) is not None}
    # a class without slots of its own: the integer load-op's (what older models measured)
    facts.vector_load_op_slots = int(pipe.get("vector_load_op_slots",
                                              slots.get("load_op_slots", 1)))
    facts.indexed_vector_load_op_slots = int(pipe.get("indexed_vector_load_op_slots",
                                                      slots.get("indexed_load_op_slots", 1)))
    if pipe.get("paired_store_vector") is not None:
        facts.paired_store_vector = bool(pipe["paired_store_vector"])
        facts.paired_store_vector_assumed = False
    if pipe.get("paired_store_leftover") is not None:
        facts.paired_store_leftover = bool(pipe["paired_store_leftover"])
        facts.paired_store_leftover_assumed = False
    if pipe.get("nop_fusion") is not None:
        facts.nop_fusion = bool(pipe["nop_fusion"])
        facts.nop_fusion_vector = bool(pipe.get("nop_fusion_vector", ASSUMED["nop_fusion_vector"]))
        facts.nop_fusion_assumed = False
    if pipe.get("stack_sync_reads") is not None:
        facts.stack_sync_reads = bool(pipe["stack_sync_reads"])
        facts.stack_sync_reads_assumed = False
    if pipe.get("paired_store_width") is not None:
        facts.paired_store_width = int(pipe["paired_store_width"])
        facts.paired_store_width_assumed = False
    for kind, key in FORWARDING_KEYS.items():
        if pipe.get(key) is not None:
            setattr(facts, f"store_forward_{kind}", float(pipe[key]))
    if pipe.get("store_commits"):
        facts.store_commits = int(pipe["store_commits"])
        facts.commit_mask = ((1 << facts.store_commits) - 1) << len(model.ports)
    unmeasured = ((model.provenance or {}).get("host") or {}).get("unmeasured")
    if isinstance(unmeasured, dict):
        forms = unmeasured.get("forms")
        if isinstance(forms, dict):
            facts.unmeasured_forms = {str(f): str(why) for f, why in forms.items()}
        pairs = unmeasured.get("pairs")
        if isinstance(pairs, list):
            facts.unmeasured_pairs = frozenset(frozenset(map(str, p)) for p in pairs
                                               if isinstance(p, list) and len(p) == 2)
    latencies = (model.provenance or {}).get("latencies")
    fact_doubts = latencies.get("doubts") if isinstance(latencies, dict) else None
    if isinstance(fact_doubts, dict):
        facts.fact_doubts = {str(k): str(v) for k, v in fact_doubts.items() if k in pipe}
    return facts


def _pure_load(sem: InstructionSemantics) -> bool:
    """A load whose only data is the loaded value (mov r, m), not a load-op (add r, m)."""
    return sem.loads and not sem.stores and not any(
        r.role == DATA and r.kind != FLAG for r in sem.reads)


def annotate(forms, semantics, model, loop: bool = True, stack_engine: str = "",
             memo: dict | None = None) -> tuple[list[Annotated], PipelineFacts]:
    """forms[i]: the model form of instruction i (None: not in the model); semantics[i]: its
    InstructionSemantics; stack_engine: the register whose implicit updates (push, pop) the
    front end makes at no latency (the ISA's stack_engine_register). memo: a dict the caller
    keeps across kernels of one model: an instruction's annotation depends on its form and
    semantics alone (until macro-fusion pairs it), so each is made once."""
    if memo is None:
        machine = machine_facts(model, loop)
    else:
        machine = memo.get(("machine facts", loop))
        if machine is None:
            machine = memo[("machine facts", loop)] = machine_facts(model, loop)
        machine = machine.copy()            # a kernel adds what it assumed: to its own copy
    out = []
    for i, (form, sem) in enumerate(zip(forms, semantics)):
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
        _stack_syncs(out, stack_engine, machine)
    for a, b in zip(out, out[1:]):
        if a.semantics.fusion == "first" and b.semantics.fusion == "jcc" and not a.fused \
                and (b.uops or b.form is None) and _fuse(a, b, machine):
            if b.uops:
                a.uops = ()          # the pair runs as the jump's uop; a jump the model
            b.slot, b.fused = 0, True    # lacks leaves the pair the first one's uops
    _share_nop_slots(out, machine)
    return out, machine


def _share_nop_slots(out: list[Annotated], machine: PipelineFacts) -> None:
    """A nop takes no front-end slot of its own where it shares the slot of the instruction
    before it, one nop a slot: after a general-purpose instruction or a nop (the pipeline's
    nop_fusion), after a vector one (nop_fusion_vector). Zen 4: `lea r10, [r9 + 8]` then a nop
    one slot, two nops one slot, a nop after `vpaddd` a slot of its own (measure/probes.py).
    The block repeats, so the first instruction follows the last."""
    if len(out) < 2 or not any(_is_nop(a) for a in out):
        return
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
        if machine.nop_fusion_assumed:          # said only where the fact decides a slot
            machine.assumed["nop_fusion"] = int(machine.nop_fusion)
        if machine.nop_fusion_vector if vector else machine.nop_fusion:
            a.slot = 0
            taken.add(before.index)


def _is_nop(a: Annotated) -> bool:
    return a.semantics.mnemonic == "nop"


def _fuse(a: Annotated, b: Annotated, machine: PipelineFacts) -> bool:
    """Whether the first instruction `a` and the jcc `b` after it macro-fuse: as the model
    says for a's mnemonic; where it does not, as cmp (itself assumed fused where the model
    has no macro_fusion), and then machine.assumed says so under the fact's key (only for
    the first instructions this kernel pairs with a jcc)."""
    mnemonic = a.semantics.mnemonic
    fused, given = machine.fuses(mnemonic)
    if not given:
        machine.assumed[FUSION_KEYS.get(mnemonic, f"macro_fusion_{mnemonic}")] = int(fused)
    return fused


def _one(i: int, form, sem: InstructionSemantics, model, machine: PipelineFacts,
         stack_engine: str = "") -> Annotated:
    assumed = []
    uops = tuple(model.uops.get(form, ())) if form else ()
    base = model.latency.get(form) if form else None
    pure_load = _pure_load(sem)
    if base is None and form and pure_load:
        # a load the model has no latency for (pop: no chain measures it alone) takes the
        # machine's load-to-use latency, not an ALU operation's
        base = machine.load_latency
        assumed.append(f"latency {base:g} assumed (the load latency)")
    elif base is None:
        base = ASSUMED["latency"]
        assumed.append(f"latency {base:g} assumed" if form else
                       f"not in the model: no uops, latency {base:g} assumed")
    eliminated = False
    idiom = sem.idiom
    if sem.move and form and model.move_elimination.get(form):
        eliminated, uops, base = True, (), 0.0
    if idiom:
        takes_port = model.idiom_ports.get(form) if form else None
        if takes_port is None:
            takes_port = idiom != "zero"
            if form:
                assumed.append(f"{idiom} idiom: {'a' if takes_port else 'no'} port assumed")
        if not takes_port:
            uops = ()
        base = 0.0 if idiom == "zero" else base

    load = machine.load_latency

    def operand_latency(operand):
        if form is None or eliminated:
            return None
        return model.operand_latency.get(form, {}).get(operand) if operand is not None else None

    sources = []
    mem_latency = {}
    for m in sem.memory:
        if not m.load:
            continue
        lat = operand_latency(m.operand)
        if lat is None:
            lat = base if pure_load else base + load
        mem_latency[m.operand] = lat
    for r in sem.reads:
        if r.role == ADDRESS:
            owners = [m for m in sem.memory if r.name in (m.base, m.index)
                      and (r.operand is None or m.operand == r.operand)]
            lats = [mem_latency[m.operand] for m in owners if m.load]
            if lats:
                lat = max(lats)
            elif any(not (m.load or m.store) for m in owners):   # lea: the address is its result
                lat = operand_latency(r.operand)
                lat = base if lat is None else lat
            else:
                lat = 0.0                           # a store's address: no register result
        elif sem.stores and not sem.loads and r.kind != FLAG:
            lat = 0.0                               # store data: see store_forward_latency
        elif r.role == MERGE:
            lat = _merge_latency(r, form, base, pure_load, operand_latency(r.operand), assumed)
        else:
            lat = operand_latency(r.operand)
            if lat is None:
                lat = base
        sources.append(Source(r.name, float(lat), r.operand))
    vector = any(r.kind == VECTOR and r.role == DATA for r in sem.reads) if sem.stores and \
        not sem.loads else any(w.kind == VECTOR for w in sem.writes)
    refs = tuple(MemRef(m.address, tuple(x for x in (m.base, m.index) if x), m.width, m.load,
                        m.store, mem_latency.get(m.operand, 0.0), m.operand is None, vector,
                        0.0 if pure_load else base,
                        m.load and not m.store and not sem.stores and not pure_load)
                 for m in sem.memory)
    latency = max([s.latency for s in sources] + [0.0 if (eliminated or idiom == "zero") or
                                                  (sem.stores and not sem.loads) else base])
    updated = _address_updates(sem)
    writes = tuple(dict.fromkeys(w.name for w in sem.writes if w.name not in updated))
    ordered = None
    if machine.counts(sem.beyond_model):                  # known form or not
        ordered = machine.atomic_cycles
        sources.append(Source(ATOMIC_ORDER, ordered))
        writes += (ATOMIC_ORDER,)
    elif sem.beyond_model == BARRIER and form and form in model.latency:
        ordered = model.latency[form]                     # its time back to back (chains.py)
        sources.append(Source(BARRIER_ORDER, ordered))
        writes += (BARRIER_ORDER,)
    bumps = tuple((r, d) for r, d in sem.offsets if r not in updated)
    node = Node(tuple(sources), writes, refs, latency, bumps)
    update = None
    if updated:
        implicit = {w.name for w in sem.writes if w.operand is None}
        sources = tuple(Source(r, 0.0 if r == stack_engine and r in implicit
                               else machine.address_update_latency) for r in updated)
        update = Node(sources, tuple(updated), (), max(s.latency for s in sources),
                      tuple((r, d) for r, d in sem.offsets if r in updated))
    if not sem.known:
        assumed.append("reads/writes guessed (instruction not in the semantics tables)")
    if machine.commit_mask and sem.stores and form:
        uops += ((machine.commit_mask, 1),)           # its commit (see commit_ports)
    return Annotated(i, form, sem, uops, node, update, slot=_slots(sem, machine),
                     eliminated=eliminated, idiom=idiom, assumed=assumed, ordered=ordered)


def _merge_latency(r, form, base: float, pure_load: bool, measured, assumed: list) -> float:
    """The old value of a partially written register -> the result (a MERGE read): the
    merge's own latency. Measured (the model's latency of the destination operand,
    chains.py) where the model has it. Else, for a pure load (`mov cl, [m]`, an AArch64
    load into a lane), the load is not on that path: it starts before the old value is
    there, which only has to arrive for the merge: ASSUMED merge_latency, stated (Zen 4 runs
    `movb 24(%rsi), %cl` in a loop at 1.0 cycle, Raptor Cove at 1.5, not at the load latency
    + 1). Where the instruction computes the new bits itself (`imul cx, dx, 3`, `sete cl`,
    an insert from a register `ins v0.d[1], v1.d[0]`, a merge-masked operation), the merge is
    that operation, one uop taking the old register as one more input: its latency stays
    (Zen 4 measures `imul cx, dx, 3` at 4 cycles from the old rcx, as from dx)."""
    if measured is not None:
        return measured
    if not pure_load:
        return base
    lat = ASSUMED["merge_latency"]
    if form:                      # (not in the model: its whole latency is assumed already)
        assumed.append(f"merge: {lat:g} cycle from the old {r.name}")
    return lat


def _stack_syncs(out: list[Annotated], register: str, facts: PipelineFacts) -> None:
    """The stack engine keeps the offset of implicit updates (push, pop, call) to itself: the
    first instruction that names the register explicitly afterwards (`sub rsp, 8`, `mov rbp,
    rsp`, `mov rax, [rsp + 8]`) waits for a sync uop that applies it to the register. The
    sync is charged to the last implicit update before that use: the machine's
    stack_sync_latency instead of nothing, said to be assumed unless the model gives it
    (measured on Zen 4: push; push; sub rsp, 8 runs at 2 cycles a loop, the sync
    and the sub; push; mov rbp, rsp; and rsp, -32; add rsp, 16 at 3.4). Where the machine's
    reads do not wait for it (stack_sync_reads 0; Zen 4: `pop r8; mov rax, rsp` 0.32 cycles,
    `push rbp; mov rbp, rsp` 0.49, the push alone 0.50), only an explicit write syncs and a
    read is as if the stack pointer were not named."""
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
    for a in out + out:                        # what the previous pass left pending
        explicit = writes(a) or (facts.stack_sync_reads and reads(a))
        if explicit and pending is not None:
            synced.add(pending)
            by_read = by_read or not writes(a)
            pending = None
        elif explicit:
            pending = None
        if implicit_update(a):
            pending = a.index
    for a in out:
        if a.index in synced:
            latencies = tuple(replace(s, latency=s.latency + facts.stack_sync_latency)
                              if s.resource == register else s for s in a.update.reads)
            a.update = replace(a.update, reads=latencies,
                               latency=max(s.latency for s in latencies))
            if not facts.stack_sync_measured:
                a.assumed = a.assumed + [f"stack sync: {facts.stack_sync_latency:g} cycle on "
                                         f"{register}"]
    if by_read and facts.stack_sync_reads_assumed:
        facts.assumed["stack_sync_reads"] = 1


def _slots(sem: InstructionSemantics, machine: PipelineFacts) -> int:
    """Front-end slots: a load-op takes the machine's (2 where it is unlaminated), by class:
    a vector load-op (one whose data is a vector register: vpaddd x, x, [m]) and an integer
    one (add r, [m]), each with and without an index (cores differ by class: Zen 4 splits
    add r, [b + i] and not vpaddd x, x, [b + i])."""
    if not sem.loads or sem.stores or _pure_load(sem):
        return 1
    indexed = any(m.index for m in sem.memory if m.load)
    if any(r.role == DATA and r.kind == VECTOR for r in sem.reads + sem.writes):
        return machine.indexed_vector_load_op_slots if indexed else machine.vector_load_op_slots
    return machine.indexed_load_op_slots if indexed else machine.load_op_slots


def _address_updates(sem: InstructionSemantics) -> tuple[str, ...]:
    """Registers the instruction writes as a side effect of addressing: the base of a
    write-back access, or the implicit pointer of push / pop / string instructions."""
    bases = {m.base for m in sem.memory if m.base and (m.writeback or m.operand is None)}
    return tuple(w.name for w in sem.writes
                 if w.name in bases and (w.operand is None or any(
                     m.writeback and m.base == w.name for m in sem.memory)))
