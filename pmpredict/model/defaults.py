"""What the engines assume where a model does not say: the one place such numbers live.

Machine-wide facts are declared, with their assumed values, in model/facts.py; ASSUMED holds
those values and the two assumptions made per instruction. Every use is reported with the
prediction (the Assumed line, `assumptions` in JSON, an instruction's own assumptions), never
taken as known.
"""

from __future__ import annotations

from pmpredict.model.facts import FACTS

ASSUMED = {
    "latency": 1.0,              # an instruction whose latency the model lacks
    # a load into part of a register (mov cl, [m]; an AArch64 load into a lane): the old
    # value -> the result, the merge after the load (measured on Zen 4: `movb 24(%rsi), %cl`
    # in a loop 1.0 cycle, not the load's 4 + 1)
    "merge_latency": 1.0,
    **{f.key: f.assumed for f in FACTS if f.assumed is not None},
}
