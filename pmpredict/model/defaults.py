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
    "address_update_latency": 1.0,   # base register -> its write-back update
    # the stack engine's sync uop before an explicit use of the stack pointer (one ALU operation)
    "stack_sync_latency": 1.0,
    # stores that pair (pipeline paired_stores) commit together within one aligned block of
    # this many bytes (measured on Zen 4: 32)
    "paired_store_bytes": 32,
}
