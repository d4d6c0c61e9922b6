"""Measurement on the host by timing alone (no performance counters).

Public API:
- measure_experiment_set(experiments, *, cache_dir, progress=None, should_stop=None)
  -> ExperimentSet (MeasurementStopped when should_stop() ends it early)
- default_forms() -> list[str]
- measure_block(asm_text, syntax="att", cache_dir=None) -> BlockMeasurement

The names load on first use (PEP 562): importing one module of the package, e.g. calibrate's
CPU identity to find this machine's model, does not load the experiment machinery (numpy).
"""

from __future__ import annotations

import importlib

# public name -> the module of this package that defines it
_EXPORTS = {
    "BlockMeasurement": "block_measurement", "BlockTiming": "block_measurement",
    "UnrollVariant": "block_measurement", "default_cache_dir": "cache",
    "default_forms": "host_forms", "load_form_list": "host_forms",
    "MeasureOptions": "experiment_runs", "MeasurementStopped": "experiment_runs",
    "Progress": "experiment_runs", "measure_experiment_set": "experiment_runs",
    "HostError": "runner",
}
__all__ = sorted(_EXPORTS) + ["measure_block"]


def measure_block(asm_text: str, syntax: str = "att", **kwargs):
    """A basic block timed on this host (block.measure_block): a BlockMeasurement."""
    # deferred: block.py parses assembly (lark), which measuring experiments does not need
    from pmpredict.measure.block import measure_block as _measure_block
    return _measure_block(asm_text, syntax, **kwargs)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
