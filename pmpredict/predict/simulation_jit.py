"""simulation_arrays' functions compiled by numba, over numpy arrays: the engine for predicting
many kernels in one process (Predictor(..., compiled=True)). The same source as the plain
Python a single prediction runs; numba keeps the machine code in its cache (cache=True), so
a later process loads it instead of compiling.

Importing this module imports numba and numpy (~0.3 s): only the batch path does.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import register_jitable

from pmpredict.predict import simulation_arrays as _plain

# the helpers the two passes call, made callable from compiled code (the Python functions
# themselves are unchanged)
register_jitable(_plain.periodic_step)
register_jitable(_plain.first_free)

run_schedule = njit(cache=True)(_plain.run_schedule)
slack_pass = njit(cache=True)(_plain.slack_pass)
steady_step = njit(cache=True)(_plain.steady_step)


def floats(rows, n, value=0.0):
    return list(np.full((rows, n), value, dtype=np.float64))     # one allocation, row views


def ints(rows, n):
    return list(np.zeros((rows, n), dtype=np.int64))


def records(total, lean=False):
    return _plain.Records(*floats(5, total), *ints(2, total))


def port_records(n):
    return np.zeros(n, dtype=np.int64)


def float_array(values):
    return np.asarray(values, dtype=np.float64)


def int_array(values):
    return np.asarray(values, dtype=np.int64)


def to_list(array):
    return array.tolist()
