"""Every machine-wide fact a model can state (its `pipeline`), declared once.

A fact has a key (the model file's `pipeline` key), a kind, a description, and what the
engines do where a model lacks it: take another fact's value (`falls_back_to`), else the
value `assumed` here; an assumption with a `wording` is said with the prediction (the Assumed
line, `assumptions` in JSON), one without is the rule switched off (no pairing, no commit
port: the engines' plain behaviour, not a claim about the machine). `probe` names what
measures the fact on the host: a reader of the front-end probes (measure/probes.py, which
declares the keys each reader produces) or a latency chain (measure/chains.py, `chains:`
and the reference's name).

PIPELINE_KEYS, PIPELINE_FLAGS and the assumed defaults (model/defaults.py) are derived from
this table; engines read facts through `FactReader`, which records what was assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

FLAG, COUNT, CYCLES, BYTES, ENTRIES = "flag", "count", "cycles", "bytes", "entries"


@dataclass(frozen=True)
class Fact:
    key: str
    kind: str                       # FLAG (0 or 1), COUNT, CYCLES, BYTES, ENTRIES
    description: str
    assumed: float | None = None    # where the model lacks it (and its fallback): None: no value
    # the Assumed line's words for the assumed value ("{:g}": the value); None: not said
    wording: str | None = None
    falls_back_to: str | None = None    # the fact whose value stands in where this one is absent
    probe: str | None = None            # what measures it on the host (see the docstring)


def _fusion(first: str, mnemonic: str) -> Fact:
    return Fact(f"macro_fusion_{mnemonic}", FLAG,
                f"1 if {first} + jcc fuse into one uop, else 0", falls_back_to="macro_fusion",
                probe="fusion")


FACTS: tuple[Fact, ...] = (
    Fact("window", ENTRIES, "reorder-buffer entries (instructions in flight)", 192,
         "window {:g} instructions", probe="window"),
    Fact("load_latency", CYCLES, "L1 load-to-use latency, cycles (address ready -> value ready)",
         5.0, "load latency {:g}", probe="chains:load_latency"),        # 4-5 on recent cores
    Fact("store_forward_latency", CYCLES,
         "store -> load of the same address, cycles (data ready -> value ready): "
         "general-purpose data, base + displacement", 5.0, "store forwarding {:g}",
         probe="chains:store_forward_latency"),
    Fact("store_forward_latency_indexed", CYCLES,
         "the same through an address with an index register (store_forward_latency where "
         "absent, assumed)", wording="store forwarding through an indexed address {:g}",
         falls_back_to="store_forward_latency", probe="chains:store_forward_latency_indexed"),
    Fact("store_forward_latency_vector", CYCLES,
         "the same for vector data, a store wider than 64 bits (store_forward_latency where "
         "absent, assumed)", wording="vector store forwarding {:g}",
         falls_back_to="store_forward_latency", probe="chains:store_forward_latency_vector"),
    Fact("store_forward_latency_load_op", CYCLES,
         "the same into the load of a load-op (add r, [base + disp]; store_forward_latency "
         "where absent, assumed)", wording="store forwarding into a load-op {:g}",
         falls_back_to="store_forward_latency", probe="chains:store_forward_latency_load_op"),
    Fact("store_forward_latency_narrow", CYCLES,
         "the same into a load narrower than the store, inside it (a byte of a stored word; "
         "store_forward_latency where absent, assumed)",
         wording="store forwarding into a narrower load {:g}",
         falls_back_to="store_forward_latency", probe="chains:store_forward_latency_narrow"),
    Fact("store_forward_latency_short", CYCLES,
         "the same from a store of one or two bytes (8/16-bit data) into a load of those "
         "bytes (store_forward_latency where absent, assumed)",
         wording="store forwarding from a byte or word store {:g}",
         falls_back_to="store_forward_latency", probe="chains:store_forward_latency_short"),
    Fact("store_forward_latency_partial", CYCLES,
         "a store -> a load that reads some of its bytes and others beside them (a wider load "
         "over a narrower store, a load across its end): forwarding fails and the load waits "
         "for the store, cycles (data ready -> value ready)",
         wording="a load partly over an earlier store: its forwarding stall not counted",
         probe="chains:store_forward_latency_partial"),
    # a core that renames a memory word from its last store (Zen 2-4) may do so only when the
    # store is far enough back in program order (measured on Zen 3: 7.5, 3.1 and 1.06 cycles a
    # link; through rsp 1.0 back to back): what the engine reads, not a constant of one core
    Fact("rmw_chain_1", CYCLES,
         "cycles a link of read-modify-writes of one place takes back to back (add [rbx + 64], "
         "1 repeated): the load of each reads the store of the one before",
         wording="read-modify-writes of one place: each link as back to back (renaming not "
         "measured)",
         probe="chains:rmw_chain_1"),
    Fact("rmw_chain_2", CYCLES,
         "the same with one independent one-cycle instruction between links (rmw_chain_1 where "
         "absent, assumed)", wording="read-modify-writes of one place two instructions apart: "
         "as back to back", falls_back_to="rmw_chain_1", probe="chains:rmw_chain_2"),
    Fact("rmw_chain_3", CYCLES,
         "the same with two independent one-cycle instructions between links; the engine takes "
         "it for any longer distance (rmw_chain_2 where absent, assumed)",
         wording="read-modify-writes of one place three or more instructions apart: as closer "
         "ones", falls_back_to="rmw_chain_2", probe="chains:rmw_chain_3"),
    Fact("rmw_chain_stack", CYCLES,
         "rmw_chain_1 through the stack pointer (add [rsp + 64], 1 repeated; rmw_chain_1 where "
         "absent, assumed)", wording="read-modify-writes through rsp: as through other registers",
         falls_back_to="rmw_chain_1", probe="chains:rmw_chain_stack"),
    # a vector value between operations of two kinds (vector ALU, FP arithmetic, shuffles)
    # may take a cycle more on some cores (the Zen 3 reduction tails: movhlps,
    # shufps, addps and addss 6.9-7.1 cycles where the forms' latencies sum to 5); Zen 4: 0
    Fact("bypass_vector_fp", CYCLES, "cycles a vector value takes beyond the latencies "
         "between a vector ALU operation (vpand, vpaddd) and an FP one (vmulps, vaddps), "
         "either way (half the round trip vpand; vmulps)", 0.0,
         "a vector value between vector ALU and FP operations: no extra cycle",
         probe="chains:bypass_vector_fp"),
    Fact("bypass_vector_shuffle", CYCLES, "the same between a vector ALU operation and a "
         "shuffle (half the round trip vpand; vpshufd)", 0.0,
         "a vector value between vector ALU operations and shuffles: no extra cycle",
         probe="chains:bypass_vector_shuffle"),
    Fact("bypass_fp_shuffle", CYCLES, "the same between an FP operation and a shuffle (half "
         "the round trip vmulps; vshufps)", 0.0,
         "a vector value between FP operations and shuffles: no extra cycle",
         probe="chains:bypass_fp_shuffle"),
    # a count of 0 leaves the flags as they were, so a shift by cl may wait for the flags an
    # instruction before it wrote; Zen 4: 0 (`test rdx, rdx; shl rdx, cl` as fast as `shl
    # rdx, cl` alone, where the dependency predicted 2.00 cycles a link for 1.00)
    Fact("shift_count_flags", CYCLES, "cycles a shift by a count in a register (shl r, cl) "
         "waits for the flags an instruction before it wrote, which a count of 0 would keep "
         "(the link of test rdx, rdx; shl rdx, cl less shl rdx, cl alone; under half a cycle: "
         "it does not wait, and the engine drops the dependency)", 1.0,
         "a shift by a count in a register waits for the flags before it",
         probe="chains:shift_count_flags"),
    # a logical vector shift by its element width or more shifts every bit out: its result is
    # 0 whatever its source; Zen 4 does not wait for the source (`vpslld xmm0, xmm0, 42`
    # repeated 0.50 cycles a link, as its two ports allow, where a shift by 3 takes 1.00)
    Fact("shift_out_latency", CYCLES, "cycles a link of a logical vector shift by at least its "
         "element width takes (vpslld xmm0, xmm0, 42 repeated); below three quarters of the "
         "form's latency the core does not wait for the source (the link runs at the form's "
         "throughput), and the engine drops that dependency",
         wording="a vector shift by its element width or more waits for its source",
         probe="chains:shift_out_latency"),
    # one taken branch a cycle: a loop iteration takes at least a cycle
    Fact("taken_branch", CYCLES, "front-end cycles a taken loop branch costs at least per "
         "iteration", 1.0, "a taken loop branch {:g} cycle", probe="loops"),
    # cmp/test + jcc fuse into one uop on every x86 core since Core 2 and Zen
    Fact("macro_fusion", FLAG, "1 if cmp/test + jcc fuse into one uop, else 0 (the other first "
         "instructions: their own keys, else as cmp, assumed)", 1, probe="fusion"),
    _fusion("add r, r/imm", "add"),
    _fusion("sub r, r/imm", "sub"),
    _fusion("and r, r/imm", "and"),
    _fusion("inc r", "inc"),
    _fusion("dec r", "dec"),
    Fact("address_update_latency", CYCLES, "cycles from a base register to its write-back "
         "update (AArch64 pre/post-index, push/pop, string ops)", 1.0),
    Fact("load_op_slots", COUNT, "front-end slots of a load-op (add r, [base + disp]): 1 "
         "micro-fused, 2 unlaminated", 1, probe="load-ops"),
    Fact("indexed_load_op_slots", COUNT, "front-end slots of a load-op with an index register "
         "(add r, [base + index + disp])", 1, probe="load-ops"),
    Fact("vector_load_op_slots", COUNT, "front-end slots of a vector load-op (vpaddd x, x, "
         "[base + disp]; load_op_slots where absent)", falls_back_to="load_op_slots",
         probe="load-ops"),
    Fact("indexed_vector_load_op_slots", COUNT, "front-end slots of a vector load-op with an "
         "index register (vpaddd x, x, [base + index + disp]; indexed_load_op_slots where "
         "absent)", falls_back_to="indexed_load_op_slots", probe="load-ops"),
    Fact("atomic_cycles", CYCLES, "cycles a locked read-modify-write takes back to back (atomics "
         "are serialised: the least each costs in a loop)", probe="chains:atomic_cycles"),
    Fact("paired_stores", FLAG, "1 if two consecutive stores into one aligned block of "
         "paired_store_bytes commit at once, else 0", 0, probe="stores"),
    # measured on Zen 4: 32
    Fact("paired_store_bytes", BYTES, "the size of the aligned block within which stores pair "
         "(bytes)", 32, probe="stores"),
    # Zen 4: two 8-byte stores to one block commit together, two 16-byte ones do not
    Fact("paired_store_width", BYTES, "the widest store that pairs (bytes): 8, 16 or 32", 8,
         "only stores of up to {:g} bytes pair", probe="wide stores"),
    # Zen 4: 0, two vmovsd to one block a store a cycle
    Fact("paired_store_vector", FLAG, "1 if stores of a vector register's data pair as "
         "general-purpose ones do, else 0", 1, "vector-register stores pair as others do",
         probe="wide stores"),
    # Zen 4: 16, `vmovsd qword ptr [rsi], xmm3; mov qword ptr [rsi + 8], r11` 1.00 cycles a
    # loop in either order, with `vmovdqu xmmword ptr [rsi]` 1.00 (two vmovsd 2.00, a ymm
    # store and a register's in one block 2.00)
    Fact("paired_store_mixed", BYTES, "where two stores of vector registers do not pair "
         "(paired_store_vector 0): the widest vector-register store that pairs with a store of "
         "another kind (a general-purpose register's, an immediate), bytes; 0: none", 0,
         "a vector-register store pairs with no other store", probe="mixed stores"),
    Fact("paired_store_leftover", FLAG, "1 if the stores a run of same-block stores leaves over "
         "share commits (a loop's stores then commit at max(stores that start a block, half of "
         "all) cycles), 0 if they commit alone", 0,
         "the stores a run of stores into one block leaves over commit alone",
         probe="leftover stores"),
    # Zen 4: 0, two stores into one block that loads read back a store a cycle (2.00 a copy)
    Fact("paired_store_forwarded", FLAG, "1 if a store that a later load reads (forwarded or "
         "renamed) pairs as others do, 0 if it commits alone", 1,
         "a store a load reads back pairs as others do", probe="forwarded stores"),
    # Zen 4: 0, `setne byte ptr [rdi + 445]` alone 1.00 cycles (`mov byte ptr [rdi + 445], al`
    # 0.50, paired with itself), `setne; sete` into one block 2.00, `mov; setne` 1.00
    Fact("paired_store_flags", FLAG, "1 if two stores of a condition (setcc to memory: a byte "
         "made from the flags) pair with each other as other stores do, 0 if not (each still "
         "pairs with another kind of store)", 1,
         "stores of a condition (setcc to memory) pair with each other", probe="flag stores"),
    Fact("nop_fusion", FLAG, "1 if a nop shares the front-end slot of the general-purpose "
         "instruction (or nop) before it, one nop a slot (two nops one slot), else 0", 0,
         "a nop takes a front-end slot of its own", probe="nops"),
    Fact("nop_fusion_vector", FLAG, "1 if a nop shares the front-end slot of the vector "
         "instruction before it, else 0", 0, probe="nops"),
    # every recent x86 core runs a load or store across a cache line as two accesses (Zen 4:
    # four split 8-byte loads 2.67 cycles, aligned 1.33; two split stores 4.00, aligned 2.00)
    Fact("split_load_extra", COUNT, "times more a load that crosses a cache line runs its "
         "access's uops (a stream of split loads against the same loads within a line, less 1)",
         1, "a load across a cache line runs its access {:g} more time", probe="splits"),
    Fact("split_store_extra", COUNT, "times more a store that crosses a cache line runs its "
         "access's uops, its commit included", 1,
         "a store across a cache line runs its access {:g} more time", probe="splits"),
    # Zen 4 splits a store at a 32-byte boundary inside a line too (an 8-byte store at +28
    # alone 2.00 cycles, at +24 0.50; a 16-byte one at +24 2.00, at +16 1.00)
    Fact("store_split_bytes", BYTES, "the aligned block a store must stay inside to run its "
         "access once (64: a line; 32 or 16 where a store across such a block inside a line "
         "costs what a store across a line does)", 64,
         "stores split only at a cache line's end", probe="splits"),
    # Zen 4: `vpaddd ymm8, ymm9, ymm9; movdqu xmm0, [m]; paddd xmm0, xmm0` 2.00 cycles a loop,
    # the same with vpaddd xmm8 1.00 (the legacy movdqu merges into xmm0's old value)
    Fact("sse_upper_merge", FLAG, "1 if a legacy-SSE write of an xmm register waits for the "
         "register's old value (its upper half) while a 256- or 512-bit AVX write has left the "
         "upper halves dirty (no vzeroupper since), else 0", 0,
         "a legacy-SSE write after 256-bit AVX (no vzeroupper) taken as not waiting for its "
         "register's upper half", probe="upper"),
    # the Zen 3 daxpy: 16 loads and 8 stores of 32 bytes, 13.3 cycles where the
    # forms' ports allow 8; Zen 4: the probe's group as fast as its loads alone, no limit
    Fact("memory_bytes_per_cycle", BYTES, "bytes of loads and stores together the L1 serves "
         "a cycle, where groups of two 32-byte loads and a 32-byte store run slower than their "
         "loads alone and their stores alone (0: no such limit seen, the ports hold it)", 0,
         probe="streams"),
    # Zen 4: 3, four 8-byte loads and four stores that pair 2.67 cycles a loop (the loads
    # alone 1.33, the stores 2.00); three 8-byte loads and two stores 1.67
    Fact("memory_accesses_per_cycle", COUNT, "loads and stores together the core starts a "
         "cycle (address generations: a read-modify-write two), where four loads and four "
         "stores run slower than the loads alone and the stores alone (0: no such limit seen, "
         "the ports hold it)", 0, probe="accesses"),
    # Zen 4: 1, `vmovdqu xmm0, [rsi + 120]` (across a line) 1.00 cycles a loop, `movss` 0.50,
    # the two 2.00 (no port mapping gives more than the sum); two vector loads a cycle
    Fact("split_load_alone", FLAG, "1 if a vector load across a cache line runs alone in its "
         "cycle (the vector loads after it wait for the next: a loop's vector loads take a "
         "cycle per split one and ceil(k / vector_loads_per_cycle) per run of k others "
         "between them), else 0", 0, probe="vector splits"),
    # two loads a cycle on every recent x86 core
    Fact("vector_loads_per_cycle", COUNT, "vector loads (movss xmm, [m]) the core runs a "
         "cycle, as split_load_alone counts them", 2, probe="vector splits"),
    Fact("store_commits", COUNT, "stores committed to the cache a cycle apart from pairing, "
         "whatever their forms (the engine gives each store a uop on that many commit ports)",
         0, probe="store commits"),
    # the sync uop is one ALU operation
    Fact("stack_sync_latency", CYCLES, "cycles the stack engine's sync uop adds before an "
         "explicit use of the stack pointer", 1.0, probe="stack"),
    # Zen 4: 0, only writes sync
    Fact("stack_sync_reads", FLAG, "1 if an explicit read of the stack pointer (mov rbp, rsp; "
         "an address through it) waits for the stack sync as a write does, 0 if only writes "
         "do", 1, "a read of the stack pointer waits for the stack sync", probe="stack"),
)

BY_KEY = {f.key: f for f in FACTS}
# model.pipeline's keys and what each means (a model file may hold any of them)
PIPELINE_KEYS = {f.key: f.description for f in FACTS}
# pipeline keys whose value is a yes/no fact: 0 or 1
PIPELINE_FLAGS = frozenset(f.key for f in FACTS if f.kind == FLAG)
# the fact that says whether a first instruction (its mnemonic) + jcc macro-fuse; a first
# instruction without a fact of its own goes as cmp (macro_fusion), assumed
FUSION_KEYS = {"cmp": "macro_fusion", "test": "macro_fusion",
               **{f.key[len("macro_fusion_"):]: f.key for f in FACTS
                  if f.key.startswith("macro_fusion_")}}
# the fact of each kind of store forwarding besides the plain one: the kind is the field of
# predict.deps.Forwarding that carries it
FORWARDING_KEYS = {f.key[len("store_forward_latency_"):]: f.key for f in FACTS
                   if f.key.startswith("store_forward_latency_")}
# the facts of a read-modify-write chain through one place, by program-order distance between
# its links (1, 2, 3 or more instructions) and through rsp: predict.deps.Forwarding.rmw
RMW_CHAIN_KEYS = ("rmw_chain_1", "rmw_chain_2", "rmw_chain_3", "rmw_chain_stack")
# the vector operations' domains a value may take extra cycles between (predict/kinds.py
# bypass_domain), and the fact of each pair, either way
VECTOR_ALU_DOMAIN, FP_DOMAIN, SHUFFLE_DOMAIN = "vector ALU", "FP", "shuffles"
BYPASS_KEYS = {frozenset((VECTOR_ALU_DOMAIN, FP_DOMAIN)): "bypass_vector_fp",
               frozenset((VECTOR_ALU_DOMAIN, SHUFFLE_DOMAIN)): "bypass_vector_shuffle",
               frozenset((FP_DOMAIN, SHUFFLE_DOMAIN)): "bypass_fp_shuffle"}
# the aligned blocks inside a line the split probes try a store across (store_split_bytes)
STORE_SPLIT_BLOCKS = (32, 16)
# the facts measured by a latency chain (measure/chains.py: the reference of the same name)
CHAIN_FACTS = tuple(f.key for f in FACTS if (f.probe or "").startswith("chains:"))


def fusion_key(mnemonic: str) -> str:
    """The fact of `mnemonic` + jcc fusing (macro_fusion_<mnemonic> for one without a fact)."""
    return FUSION_KEYS.get(mnemonic, f"macro_fusion_{mnemonic}")


def wording(key: str, value) -> str:
    """An assumed fact as the Assumed line says it: "window 192 instructions", "macro-fusion
    of add + jcc"."""
    if key.startswith("macro_fusion"):
        first = key[len("macro_fusion_"):] or "cmp/test"
        return f"{'' if value else 'no '}macro-fusion of {first} + jcc"
    fact = BY_KEY.get(key)
    text = fact.wording if fact and fact.wording else key.replace("_", " ") + " {:g}"
    return text.format(value)


def fact_value(pipeline, key: str):
    """The fact's value in a model's pipeline; where the model lacks it, its fallback's, else
    its assumed value."""
    value = pipeline.get(key)
    if value is not None:
        return value
    fact = BY_KEY[key]
    return fact_value(pipeline, fact.falls_back_to) if fact.falls_back_to else fact.assumed


class FactReader:
    """A model's pipeline as the engines read it for one kernel (fact_value), with a record of
    the assumptions that are said (a fact with a wording, or any `assume` names), in the order
    the engines met them. `assumptions()` is the frozen record a stage returns."""

    def __init__(self, pipeline):
        self.pipeline = pipeline if pipeline is not None else {}
        self._assumed: dict[str, float] = {}

    def given(self, key: str) -> bool:
        return self.pipeline.get(key) is not None

    def value(self, key: str, record: bool = True):
        """The fact's value (fact_value); where the model lacks it and the fact's assumption
        is one that is said, recorded (when `record`)."""
        value = fact_value(self.pipeline, key)
        if record and not self.given(key) and BY_KEY[key].wording is not None:
            self._assumed[key] = value
        return value

    def assume(self, key: str, value) -> None:
        """Record that the kernel's prediction took `value` for a fact the model lacks."""
        self._assumed[key] = value

    def assumptions(self) -> tuple[tuple[str, float], ...]:
        return tuple(self._assumed.items())
