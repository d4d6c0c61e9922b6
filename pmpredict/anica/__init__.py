"""AnICA: random differential testing of basic-block throughput predictors, generalised into
abstract blocks (Ritter's dissertation, chapter 8).

The engine is pure: instruction schemes (`schemes`), concrete blocks and their instantiation
(`concrete`), the abstract domain (`domain`), minimisation and generalisation (`algorithm`) and
the resumable campaign loop (`campaign`). Predictors are one black-box callable, `evaluate(blocks)
-> array (len(blocks), P)` of cycles per iteration, NaN where a predictor failed; predictor 0 is
the reference every other one is compared with.
"""
