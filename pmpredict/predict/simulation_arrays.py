"""The out-of-order simulation and its slack pass over flat arrays: the one implementation
of simulation.py's machine, written in the subset of Python numba compiles.

Engine layer: numbers and arrays in, numbers out, no I/O, no objects. A single prediction
runs these functions as plain Python over lists (no numba import: a CLI call stays fast);
simulation_jit.py compiles the very same functions with numba for predicting many kernels.
tests/test_schedule.py checks that both give identical runs.

Layout. A body of n instructions; instance t = iteration * n + i. Per instruction i:
latency[i]; its uops' port masks uop_mask[uop_off[i]:uop_off[i + 1]] (one per uop cycle;
SKIP_EVEN / SKIP_ODD above the port bits leave a uop out on those iterations);
its incoming edges edge_src/edge_dist/edge_w[edge_off[i]:edge_off[i + 1]]; slots[i].
`share[p]`: port p's share of the optimal schedule (the tie-breaker). The ports' occupied
cycles: a "next free cycle" union-find per port, port p's cycle c at free[p * capacity + c]
(0: free, else 1 + a later cycle to look at), path-compressed.
"""

from __future__ import annotations

import math
from collections import namedtuple

# pipeline stages between events, in cycles (as llvm-mca's timeline shows them): an instruction
# issues at the earliest the cycle after its dispatch, and retires the cycle after its result
ISSUE_DELAY = 1.0
RETIRE_DELAY = 1.0

# why an instance dispatched when it did (why_dispatch)
BY_FRONT_END = 0
BY_WINDOW = 1

# run_schedule's answer when a uop would start beyond the ports' `capacity` cycles
OUT_OF_CAPACITY = -1

CHECK_EVERY = 24          # iterations between two looks for a periodic steady state

# flags above the port bits of a uop mask: the uop is left out on even / odd iterations (a
# store committed with the one before it every other iteration: store_commits.paired_stores)
SKIP_EVEN = 1 << 60
SKIP_ODD = 1 << 61
PORT_BITS = SKIP_EVEN - 1


# the arguments, grouped (namedtuples: numba compiles functions that take them)
# one iteration of the loop, as the Layout above says
BodyArrays = namedtuple("BodyArrays", "latency uop_off uop_mask edge_off edge_src edge_dist "
                                      "edge_w slots share")
# the core: width (math.inf when unlimited), window (0 when unlimited), a taken branch's cost,
# and a port mask whose uops (those confined to it) run without port limit
Limits = namedtuple("Limits", "width window taken_branch ideal_ports")
# per instance t: when it dispatched, issued, was ready, had its result, retired, and why it
# dispatched (BY_FRONT_END / BY_WINDOW) and became ready (the instance it waited for, or -1)
Records = namedtuple("Records", "dispatch issue ready_at result retire why_dispatch why_ready")


def periodic_step(ends, stride, offset, first, last):
    """Cycles per iteration if the values ends[offset + j * stride], first <= j < last (the
    times the iterations end) have become periodic: the same increment over p iterations,
    repeated over a long enough stretch. NaN if they have not."""
    m = last - first
    for p in range(1, m // 4 + 1):
        span = max(3 * p, 24)
        if span + p > m:             # the last `span` ends and the p before them are given
            break
        step = ends[offset + (last - 1) * stride] - ends[offset + (last - 1 - p) * stride]
        ok = True
        for j in range(last - span, last):
            d = ends[offset + j * stride] - ends[offset + (j - p) * stride]
            if abs(d - step) > 1e-9 * (1 + abs(step)):
                ok = False
                break
        if ok:
            return step / p
    return math.nan


def steady_step(ends, stride, offset, first, last):
    """Cycles per iteration from the times the iterations end (as periodic_step reads them):
    exact when they are periodic, else the mean increment."""
    if last - first < 2:
        return 0.0
    step = periodic_step(ends, stride, offset, first, last)
    if math.isnan(step):
        return (ends[offset + (last - 1) * stride] - ends[offset + first * stride]) / (last - 1 - first)
    return step


def first_free(free, base, cycle):
    """The first free cycle >= `cycle` of the port whose cycles start at free[base]; -1 when
    it lies beyond the port's capacity."""
    c = cycle
    while free[base + c] != 0:
        c = free[base + c] - 1
    # path compression: every cycle visited now points at the free one
    top = c
    c = cycle
    while free[base + c] != 0:
        nxt = free[base + c] - 1
        free[base + c] = top + 1
        c = nxt
    return top


def run_schedule(body, limits, iterations, fixed, first_check, free, capacity, load, records):
    """Simulate `iterations` iterations (fixed), or until the iterations' ends are periodic
    (looked at from iteration first_check on, every CHECK_EVERY): returns the iterations
    simulated, or OUT_OF_CAPACITY. body: BodyArrays; limits: Limits; records: Records of
    n * iterations each, filled here. `free` (n_ports * capacity) and `load` (n_ports) must
    be zero."""
    latency, uop_off, uop_mask, edge_off, edge_src, edge_dist, edge_w, slots, share = body
    width, window, taken_branch, ideal_ports = limits
    dispatch, issue, ready_at, result, retire, why_dispatch, why_ready = records
    n = len(latency)
    cur = 0.0                          # front end: current cycle and slots used in it
    used = 0.0
    rcur = 0.0                         # retirement: current cycle and slots retired in it
    rused = 0.0
    first_of_prev = -math.inf
    check = iterations if fixed else first_check
    k = 0
    while k < iterations:
        if k == check:
            step = periodic_step(retire, n, n - 1, k // 2, k)
            if not math.isnan(step):
                return k
            check += CHECK_EVERY
        for i in range(n):
            t = k * n + i
            # --- dispatch: in order, `width` slots a cycle, a free window entry
            why = BY_FRONT_END
            slot = slots[i]
            if slot and used + slot > width + 1e-9:
                cur = cur + 1
                used = 0.0
            d = cur
            if i == 0 and taken_branch > 0 and first_of_prev + taken_branch > d:
                d = first_of_prev + taken_branch
            if window > 0 and t >= window and retire[t - window] + 1 > d:
                d = retire[t - window] + 1
                why = BY_WINDOW
            if d > cur:
                cur = d
                used = 0.0
            used += slot
            if i == 0:
                first_of_prev = d
            dispatch[t] = d
            why_dispatch[t] = why
            # --- when the result could be ready, from data alone
            lat = latency[i]
            ready = d + ISSUE_DELAY + lat
            why_r = -1
            for e in range(edge_off[i], edge_off[i + 1]):
                s = t - i + edge_src[e] - edge_dist[e] * n
                if s >= 0 and result[s] + edge_w[e] > ready:
                    ready = result[s] + edge_w[e]
                    why_r = s
            ready_at[t] = ready
            why_ready[t] = why_r
            earliest = ready - lat
            # a port runs one uop a cycle; a uop may start in the cycle its inputs arrive in,
            # as soon as they are there (a sub-cycle latency, or a fractional one measured as
            # an average, then chains at its own rate, as the hardware measured it)
            c0 = int(math.floor(earliest + 1e-9))
            if c0 + 1 >= capacity:
                return OUT_OF_CAPACITY
            # --- uops: earliest free cycle on an allowed port, oldest first; ties go to the
            # port the optimal schedule leaves emptiest, then the lowest
            first = -1.0
            last = -1.0
            for u in range(uop_off[i], uop_off[i + 1]):
                mask = uop_mask[u]
                if mask > PORT_BITS:
                    if ((mask & SKIP_EVEN) != 0 and k % 2 == 0) or \
                            ((mask & SKIP_ODD) != 0 and k % 2 == 1):
                        continue
                    mask &= PORT_BITS
                if ideal_ports != 0 and (mask & ~ideal_ports) == 0:
                    c = c0
                else:
                    best_c = -1
                    best_r = 0.0
                    best_p = -1
                    m = mask
                    p = 0
                    while m != 0:
                        if m & 1:
                            c = first_free(free, p * capacity, c0)
                            if c + 1 >= capacity:
                                return OUT_OF_CAPACITY
                            ratio = load[p] / share[p] if share[p] > 0 else math.inf
                            if best_p < 0 or c < best_c or (c == best_c and ratio < best_r):
                                best_c = c
                                best_r = ratio
                                best_p = p
                        m >>= 1
                        p += 1
                    c = best_c
                    free[best_p * capacity + c] = c + 2          # taken: look at c + 1 next
                    load[best_p] += 1
                start = float(c) if c >= earliest - 1e-9 else earliest
                if first < 0 or start < first:
                    first = start
                if start > last:
                    last = start
            if first >= 0:
                res = max(ready + (first - earliest), last + min(1.0, lat))
                issue[t] = first
            else:
                res = ready
                issue[t] = earliest
            result[t] = res
            # --- retirement: in order, `width` a cycle (a fused pair is one), once the
            # result is there
            r = res + RETIRE_DELAY
            if t > 0 and retire[t - 1] > r:
                r = retire[t - 1]
            r = float(math.ceil(r - 1e-9))
            if r > rcur:
                rcur = r
                rused = 0.0
            elif slot and rused + slot > width + 1e-9:
                rcur = rcur + 1
                rused = 0.0
            rused += slot
            retire[t] = rcur
        k += 1
    return iterations


def slack_pass(body, iterations, window, result, retire, measured_from, late, slack):
    """Slack of each instruction: the median over the measured iterations of how much later
    its result could come, every other time fixed, without delaying the end of the run. A
    backward pass over the run's constraints (data edges, dispatch order, the window,
    retirement order) finds the latest time of every instance. Latest times flow only to
    earlier instances, so the pass stops at the first measured one: late holds three scratch
    arrays (result, retire, dispatch) for the measured instances, n * (iterations -
    measured_from), filled with math.inf by the caller, instance t at t - n * measured_from.
    body: BodyArrays; the answer goes to slack (n)."""
    latency, _, _, edge_off, edge_src, edge_dist, edge_w, _, _ = body
    late_result, late_retire, late_dispatch = late
    n = len(latency)
    total = n * iterations
    start = measured_from * n
    late_retire[total - 1 - start] = retire[total - 1]
    for t in range(total - 1, start - 1, -1):
        i = t % n
        u = t - start
        if t + 1 < total:
            if late_retire[u + 1] < late_retire[u]:
                late_retire[u] = late_retire[u + 1]
            if late_dispatch[u + 1] < late_dispatch[u]:
                late_dispatch[u] = late_dispatch[u + 1]
        if window > 0 and t + window < total and late_dispatch[u + window] - 1 < late_retire[u]:
            late_retire[u] = late_dispatch[u + window] - 1
        if late_retire[u] - RETIRE_DELAY < late_result[u]:
            late_result[u] = late_retire[u] - RETIRE_DELAY
        x = late_result[u] - latency[i] - ISSUE_DELAY
        if x < late_dispatch[u]:
            late_dispatch[u] = x
        for e in range(edge_off[i], edge_off[i + 1]):
            s = t - i + edge_src[e] - edge_dist[e] * n
            if s >= start and late_result[u] - edge_w[e] < late_result[s - start]:
                late_result[s - start] = late_result[u] - edge_w[e]
    for i in range(n):
        values = sorted([late_result[t - start] - result[t] for t in range(start + i, total, n)])
        slack[i] = max(0.0, values[len(values) // 2]) if len(values) > 0 else 0.0


# the containers these functions run over as plain Python: lists (indexing a list is what
# CPython does fastest); simulation_jit.py gives numpy arrays to the compiled functions
def floats(rows, n, value=0.0):
    """`rows` arrays of n floats, all `value`."""
    return [[value] * n for _ in range(rows)]


def ints(rows, n):
    """`rows` arrays of n zeros."""
    return [[0] * n for _ in range(rows)]


def records(total, lean=False):
    """Records of `total` instances (lean: the engine may leave out all but results and
    retirements; plain Python keeps them all)."""
    return Records(*floats(5, total), *ints(2, total))


def port_records(n):
    """The ports' occupied cycles (run_schedule's `free`), n zeros."""
    return [0] * n


def float_array(values):
    return [float(v) for v in values]


def int_array(values):
    return [int(v) for v in values]


def to_list(array):
    return array
