"""What the engines assume for a fact of the machine that a model does not give: the one place
such numbers live. Every use is reported with the prediction (the Assumed line, `assumptions`
in JSON, an instruction's own assumptions), never taken as known. A model states the facts of
its machine in its pipeline (PIPELINE_KEYS in machine.py), measured on the host where it can be.
"""

from __future__ import annotations

ASSUMED = {
    "latency": 1.0,              # an instruction whose latency the model lacks
    "load_latency": 5.0,         # L1 load-to-use (4-5 on recent x86 and Arm cores)
    "store_forward_latency": 5.0,
    "window": 192,               # reorder-buffer entries
    "taken_branch": 1.0,         # one taken branch per cycle: a loop iteration takes >= 1 cycle
    # cmp/test + jcc fuse into one uop (every x86 core since Core 2 and Zen); a first
    # instruction the model has no fusion fact for goes as cmp (model.machine.FUSION_KEYS)
    "macro_fusion": 1,
    "address_update_latency": 1.0,   # base register -> its write-back update
    # the stack engine's sync uop before an explicit use of the stack pointer (one ALU operation)
    "stack_sync_latency": 1.0,
    # ... and an explicit read of it (mov rbp, rsp; an address through rsp) waits for the sync
    # as a write does (1; measured on Zen 4: 0, only writes sync)
    "stack_sync_reads": 1,
    # stores that pair (pipeline paired_stores) commit together within one aligned block of
    # this many bytes (measured on Zen 4: 32)
    "paired_store_bytes": 32,
    # ... and only stores at most this wide (bytes) pair (Zen 4: two 8-byte stores to one block
    # commit together, two 16-byte ones do not)
    "paired_store_width": 8,
    # ... and a vector register's data pairs like general-purpose data (1; measured on Zen 4:
    # 0, two vmovsd to one block a store a cycle)
    "paired_store_vector": 1,
    # ... and the stores a run of same-block stores leaves over (its 3rd, 5th...) commit alone
    # (0), or share commits as far as the loop's stores commit at max(stores that start a
    # block, half of all) cycles (1; measured on Zen 4)
    "paired_store_leftover": 0,
    # a nop takes a front-end slot of its own (0), or shares the slot of the general-purpose
    # instruction (or nop) before it, one nop a slot (1; measured on Zen 4); the same after a
    # vector instruction (Zen 4: a slot of its own)
    "nop_fusion": 0,
    "nop_fusion_vector": 0,
    # a load into part of a register (mov cl, [m]; an AArch64 load into a lane): the old
    # value -> the result, the merge after the load (measured on Zen 4: `movb 24(%rsi), %cl`
    # in a loop 1.0 cycle, not the load's 4 + 1)
    "merge_latency": 1.0,
}
