"""simulation_arrays' passes run by the C extension pmpredict.predict._simcore (built by the
package's install), over array.array buffers: the engine every prediction uses where the
extension exists. The same machine and the same arithmetic as the plain Python passes, so a
run is identical (tests/test_schedule.py); it loads in a millisecond where numba's compiled
passes take ~0.8 s to load.

available() says whether the extension was built; without it predictor.engine_for falls
back to numba (many kernels) or plain Python (one).
"""

from __future__ import annotations

import mmap
from array import array

from pmpredict.predict.simulation_arrays import Records

try:
    from pmpredict.predict import _simcore
except ImportError:                     # not built (no C compiler at install): numba stands in
    _simcore = None

# from this many items (512 KB) on, a zeroed array is anonymous memory, zeroed by the kernel
# on first touch: the ports' records are sized for the worst case and mostly never touched,
# and a run that becomes periodic early never reaches most of its records
LAZY_FROM = 1 << 16


def available() -> bool:
    return _simcore is not None


# simulate_body's keep codes (simulation.NONE, TIMES, ALL)
KEEP_CODES = {False: 0, "times": 1, True: 2}


def simulate_body(body, limits, iterations, fixed, first_check, keep, slack):
    """The whole run in one call (simulation.simulate's fast path): (iterations simulated,
    cycles per iteration, the kept records as Records of memoryviews or None (a record not
    kept is None), the slack per instruction or None). body: simulation.Body; limits:
    simulation_arrays.Limits."""
    width, window, taken_branch, ideal_ports = limits
    done, cycles, records, slacks = _simcore.simulate(
        body.latency, body.uops, body.edges, body.slots, body.n_ports, body.balance,
        float(width), window, float(taken_branch), ideal_ports, iterations, fixed, first_check,
        KEEP_CODES[keep], slack)
    if records is not None:
        total = len(body.latency) * done
        kinds = "ddddd" + "qq"
        records = Records(*(None if a is None else memoryview(a).cast(k)[:total]
                            for a, k in zip(records, kinds)))
    return done, cycles, records, slacks


def run_schedule(body, limits, iterations, fixed, first_check, free, capacity, load, records):
    width, window, taken_branch, ideal_ports = limits
    return _simcore.run_schedule(body, float(width), window, float(taken_branch), ideal_ports,
                                 iterations, fixed, first_check, free, capacity, load, records)


def slack_pass(body, iterations, window, result, retire, measured_from, late, slack):
    _simcore.slack_pass(body, iterations, window, result, retire, measured_from, *late, slack)


def steady_step(ends, stride, offset, first, last):
    return _simcore.steady_step(ends, stride, offset, first, last)


def floats(rows, n, value=0.0):
    if value == 0.0 and n >= LAZY_FROM:
        return [_zeros(n, "d") for _ in range(rows)]
    one = array("d", [value])
    return [one * n for _ in range(rows)]


def ints(rows, n):
    if n >= LAZY_FROM:
        return [_zeros(n, "q") for _ in range(rows)]
    return [array("q", bytes(8 * n)) for _ in range(rows)]


def records(total, lean=False):
    """Records of `total` instances; lean: results and retirements only (the passes need
    them), the others empty, which the C passes do not write."""
    if not lean:
        return Records(*floats(5, total), *ints(2, total))
    result, retire = floats(2, total)
    none_f, none_i = array("d"), array("q")
    return Records(none_f, none_f, none_f, result, retire, none_i, none_i)


def port_records(n):
    """The ports' occupied cycles as 32-bit ints (a cycle number fits: half the memory of a
    long kernel's run)."""
    return _zeros(n, "i") if n >= LAZY_FROM else array("i", bytes(4 * n))


def _zeros(n: int, kind: str):
    """n zeros of 8 bytes in anonymous memory: pages the run never reaches cost nothing, and
    a slice is a view, not a copy."""
    return memoryview(mmap.mmap(-1, array(kind).itemsize * n)).cast(kind)


def float_array(values):
    return array("d", values)


def int_array(values):
    return array("q", values)


def to_list(values):
    return values.tolist()
