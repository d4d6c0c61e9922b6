"""Measurement on the host by timing alone (no performance counters).

Public API:
- measure_experiment_set(experiments, *, cache_dir, progress=None, should_stop=None)
  -> ExperimentSet (MeasurementStopped when should_stop() ends it early)
- default_forms() -> list[str]
- measure_block(asm_text, syntax="att", cache_dir=None) -> dict
"""

from pmpredict.measure.cache import default_cache_dir
from pmpredict.measure.host_forms import default_forms, load_form_list
from pmpredict.measure.experiments import (MeasureOptions, MeasurementStopped, Progress,
                                           measure_experiment_set)
from pmpredict.measure.runner import HostError

__all__ = ["HostError", "MeasureOptions", "MeasurementStopped", "Progress", "default_cache_dir",
           "default_forms", "load_form_list", "measure_block", "measure_experiment_set"]


def measure_block(asm_text: str, syntax: str = "att", **kwargs) -> dict:
    from pmpredict.measure.block import measure_block as _measure_block
    return _measure_block(asm_text, syntax, **kwargs)
