"""Measurement on the host by timing alone (no performance counters).

Public API:
- measure_experiment_set(experiments, *, cache_dir, progress=None, should_stop=None)
  -> ExperimentSet (MeasurementStopped when should_stop() ends it early)
- default_forms() -> list[str]
- measure_block(asm_text, syntax="att", cache_dir=None) -> BlockMeasurement
"""

from pmpredict.measure.block_measurement import BlockMeasurement, BlockTiming, UnrollVariant
from pmpredict.measure.cache import default_cache_dir
from pmpredict.measure.host_forms import default_forms, load_form_list
from pmpredict.measure.experiments import (MeasureOptions, MeasurementStopped, Progress,
                                           measure_experiment_set)
from pmpredict.measure.runner import HostError

__all__ = ["BlockMeasurement", "BlockTiming", "HostError", "MeasureOptions",
           "MeasurementStopped", "Progress", "UnrollVariant", "default_cache_dir", "default_forms",
           "load_form_list", "measure_block", "measure_experiment_set"]


def measure_block(asm_text: str, syntax: str = "att", **kwargs) -> BlockMeasurement:
    # deferred: block.py parses assembly (lark), which measuring experiments does not need
    from pmpredict.measure.block import measure_block as _measure_block
    return _measure_block(asm_text, syntax, **kwargs)
