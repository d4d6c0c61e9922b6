"""The exact bottleneck simulator, and the LP it must agree with.

Throughput of an experiment under a port mapping is the optimum t of the LP

    minimise t  s.t.  sum_p x[u,p] = mass(u)   for every uop u   (x >= 0, p in ports(u))
                      sum_u x[u,p] <= t        for every port p

(PMEvo, PLDI 2020). By the bottleneck characterisation (a max-flow / Hall
argument) t = max over port sets Q of mass(uops with ports(u) subset of Q) / |Q|.
Equivalently, t = max over *sets of uops* S of mass(S) / |union of ports(S)|,
which needs no subset test. The argmax sets are closed under union, so the
largest one is unique: that is the reported bottleneck (the ports that are
saturated in every optimal schedule).

How the engine keeps this cheap (measured in benchmarks/bench_sim.py):
  * uops with the same port set are merged (mass = count x multiplicity),
    through a small hash table that is never cleared (stamped entries);
  * at most 6 distinct uops: enumerate their 2^d uop subsets with
    incremental mass and port union (no subset tests);
  * on at most 8 ports: the port lattice, mass(subset of Q) for every Q by a
    zeta transform over rows of 8 doubles (vector instructions);
  * otherwise Dinkelbach iteration on max-flow feasibility (start at a lower
    bound, schedule greedily, repair with augmenting paths; a blocked port set
    is denser and becomes the next bound), on int64 bitsets, over the whole
    set of uops: on random 10-port mappings it is faster than the lattice;
  * beyond 62 distinct uops the uops split into connected components (port
    sets that overlap), solved alone by the methods above (the lattice up to
    16 ports); beyond all of them the experiment is solved with the LP.
Per experiment nothing is allocated and nothing is reference-counted: the
buffers live in a per-thread workspace, and the engine's functions are
compiled without numba's reference counting (see _kernel).
The optional peak rate R_max caps throughput: cycles = max(port bound, n / R_max).

Arrays (the data layer's MachineModel.to_arrays / ExperimentSet.to_arrays):
  masks int64[F, U], counts float64[F, U]    uop port masks and counts per form (count 0 = none)
  ptr int64[E+1], forms int64[nnz], mults float64[nnz]   experiments in CSR form; form -1 = unknown
"""

from __future__ import annotations

import threading
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

# bottleneck code when the R_max cap, not a port set, limits throughput
FRONTEND = -1
# engine marker: the experiment is too large for the numba paths; solved with the LP instead
TOO_LARGE = -2.0
# largest uop-subset enumeration (2^n entries) and port lattice (2^k entries) the engine builds
_MAX_ENUM_UOPS = 16
_MAX_LATTICE_BITS = 16
_REL_TOL = 1e-12
# automatic choice (measured in benchmarks/bench_sim.py): at most this many distinct uops,
# enumerate their subsets; else, on at most this many ports, the port lattice; else max-flow
_ENUM_PREFERRED_UOPS = 6
_LATTICE_PREFERRED_BITS = 8
METHOD_AUTO, METHOD_ENUM, METHOD_SOS, METHOD_FLOW = 0, 1, 2, 3


# The engine proper: functions that only read and write arrays they are given. Compiled
# without numba's reference counting (_nrt=False): with it, every call passing arrays
# increments and decrements each array's count (atomic operations) unless LLVM happens to
# inline the callee, which cost more than half of the time per experiment on small ones.
# They cannot allocate; the callers below (new_workspace, the batch loops) do.
_kernel = njit(cache=True, _nrt=False)
_inline_kernel = njit(cache=True, _nrt=False, inline="always")


@intrinsic
def _ctpop(typingctx, x):
    """LLVM's ctpop: one popcnt instruction on any x86-64 or AArch64 host."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@_inline_kernel
def _popcount(x):
    return _ctpop(x)


@_inline_kernel
def _better(num, den, best_num, best_den):
    """Compare num/den against best_num/best_den: 1 greater, 0 equal (within tolerance), -1 less."""
    a = num * best_den
    b = best_num * den
    tol = _REL_TOL * max(abs(a), abs(b))
    if a > b + tol:
        return 1
    if a >= b - tol:
        return 0
    return -1


@_kernel
def _solve_enum(umask, umass, idx, n, sub_mass, sub_union):
    """Max over subsets S of the n uops idx[:n] of mass(S)/|ports(S)|; returns (num, den, mask)."""
    best_num = 0.0
    best_den = 1.0
    best_mask = 0
    sub_mass[0] = 0.0
    sub_union[0] = 0
    for b in range(n):
        lo = 1 << b
        m = umask[idx[b]]
        w = umass[idx[b]]
        for s in range(lo, lo << 1):
            ms = sub_mass[s - lo] + w
            un = sub_union[s - lo] | m
            sub_mass[s] = ms
            sub_union[s] = un
            den = _popcount(un)
            c = _better(ms, den, best_num, best_den)
            if c > 0 or (c == 0 and den > best_den):
                best_num = ms
                best_den = den
                best_mask = un
    return best_num, best_den, best_mask


# --- port lattice: rows of 8 doubles, added as whole vectors ---------------------------
# numba does not vectorize "row r += row r - h" itself (it cannot tell the two rows of one
# array apart), and scalar adds made this path 3x slower; these emit 8-wide vector
# operations (one AVX-512 or two AVX2 registers, four NEON).
_ROW = 8
_ROW_VEC = ir.VectorType(ir.DoubleType(), _ROW)


def _row_pointer(context, builder, array_type, array, offset):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [offset], inbounds=True), _ROW_VEC.as_pointer())


@intrinsic
def _row_add(typingctx, lat, dst, src):
    """lat[dst:dst+8] += lat[src:src+8]"""
    def codegen(context, builder, signature, args):
        to = _row_pointer(context, builder, signature.args[0], args[0], args[1])
        frm = _row_pointer(context, builder, signature.args[0], args[0], args[2])
        total = builder.fadd(builder.load(to, typ=_ROW_VEC, align=8),
                             builder.load(frm, typ=_ROW_VEC, align=8))
        builder.store(total, to, align=8)
        return context.get_dummy_value()
    return types.void(lat, dst, src), codegen


@intrinsic
def _row_add_scaled(typingctx, lat, dst, w, table, src):
    """lat[dst:dst+8] += w * table[src:src+8]"""
    def codegen(context, builder, signature, args):
        to = _row_pointer(context, builder, signature.args[0], args[0], args[1])
        frm = _row_pointer(context, builder, signature.args[3], args[3], args[4])
        scale = builder.insert_element(ir.Constant(_ROW_VEC, ir.Undefined), args[2],
                                       ir.Constant(ir.IntType(32), 0))
        scale = builder.shuffle_vector(scale, ir.Constant(_ROW_VEC, ir.Undefined),
                                       ir.Constant(ir.VectorType(ir.IntType(32), _ROW), [0] * _ROW))
        total = builder.fadd(builder.load(to, typ=_ROW_VEC, align=8),
                             builder.fmul(scale, builder.load(frm, typ=_ROW_VEC, align=8)))
        builder.store(total, to, align=8)
        return context.get_dummy_value()
    return types.void(lat, dst, w, table, src), codegen


@intrinsic
def _double_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(bits), codegen


# _SUBSET_ROW[l * 8 + k] = 1 if the low port bits l are a subset of k: a uop's low three
# ports spread over the 8 columns of its row
_SUBSET_ROW = np.array([float(low & ~k == 0) for low in range(_ROW) for k in range(_ROW)])


@_kernel
def _solve_lattice(umask, umass, idx, n, cmask, lat, ratio, ratio_bits, inv_size):
    """Max over port sets Q of the n uops idx[:n] of mass(uops confined to Q) / |Q|; returns
    (num, den, mask) of the largest maximising Q.

    lat, ratio (and ratio_bits, ratio viewed as int64): 2^max(k, 3) entries for the k ports
    of cmask; inv_size[q] = 1 / popcount(q) for the first entries. Exact sums: every uop's mass is added to
    each Q that contains it by the zeta transform, no division until the final ratios.
    """
    k = _popcount(cmask)
    size = 1 << max(k, 3)
    contiguous = cmask == (1 << k) - 1        # ports 0..k-1: indices need no compression
    for q in range(size):
        lat[q] = 0.0
    for a in range(n):
        m = umask[idx[a]]
        if not contiguous:
            m = _compress(m, cmask)
        _row_add_scaled(lat, m & ~(_ROW - 1), umass[idx[a]], _SUBSET_ROW, (m & (_ROW - 1)) * _ROW)
    # zeta transform over the high port bits: row r += row r - h for every row with bit h
    # set, lowest bit first; the low three bits were spread by _SUBSET_ROW above
    h = _ROW
    while h < size:
        for base in range(0, size, 2 * h):
            for r in range(base, base + h, _ROW):
                _row_add(lat, r + h, r)
        h <<= 1
    # best ratio: ratios are >= 0, so their bit patterns order like their values and the
    # max is an integer max (which vectorizes; a float max with NaN rules does not)
    tabulated = min(size, inv_size.shape[0])
    for q in range(tabulated):
        ratio[q] = lat[q] * inv_size[q]
    for q in range(tabulated, size):
        ratio[q] = lat[q] / _popcount(q)
    top_bits = 0
    for q in range(size):
        top_bits = max(top_bits, ratio_bits[q])
    top = _double_from_bits(top_bits)
    if top <= 0.0:
        return 0.0, 1.0, 0
    # the maximising sets are closed under union: their union is the largest
    floor = top * (1.0 - _REL_TOL)
    best = 0
    for q in range(size):
        best |= q if ratio[q] >= floor else 0
    mask = best if contiguous else _expand(best, cmask)
    return lat[best], float(_popcount(best)), mask


@_inline_kernel
def _compress(m, cmask):
    """The bits of m at cmask's set positions, packed to the bottom (pext)."""
    out = 0
    i = 0
    while cmask:
        low = cmask & -cmask
        cmask ^= low
        if m & low:
            out |= 1 << i
        i += 1
    return out


@_inline_kernel
def _expand(c, cmask):
    """Inverse of _compress (pdep)."""
    out = 0
    while c and cmask:
        low = cmask & -cmask
        cmask ^= low
        if c & 1:
            out |= low
        c >>= 1
    return out


@_inline_kernel
def _bit_index(b):
    return trailing_zeros(b)


_FLOW_MAX_UOPS = 62          # uop sets are int64 bitmasks


@_inline_kernel
def _enqueue_ports(ports, u, from_port, visited, tail, queue, via_uop, via_port):
    """BFS step: queue every port of `ports`, reached through uop u from from_port (-1: start)."""
    while ports:
        b = ports & -ports
        ports ^= b
        q = _bit_index(b)
        visited |= b
        via_uop[q] = u
        via_port[q] = from_port
        queue[tail] = q
        tail += 1
    return visited, tail


@_inline_kernel
def _slack(cap, cmask, tol):
    """The ports of cmask with cap > tol."""
    slack = 0
    rest = cmask
    while rest:
        b = rest & -rest
        rest ^= b
        if cap[_bit_index(b)] > tol:
            slack |= b
    return slack


@_kernel
def _augment(lmask, deficit_a, a, x, cap, carriers, slack, queue, via_uop, via_port, tol):
    """Push deficit_a of local uop a through one augmenting path (BFS over ports).

    slack: the ports with cap > tol. Returns (amount pushed, 0, slack after the push), or
    (0, V, slack) when no port with slack is reachable: then V is a set of saturated ports
    whose confined uops carry more than its capacity.
    """
    visited, tail = _enqueue_ports(lmask[a], a, -1, 0, 0, queue, via_uop, via_port)
    hit = lmask[a] & slack          # stop at the first port with slack, as soon as it is queued
    expanded = 1 << a               # uops whose ports are already in the queue
    head = 0
    while hit == 0 and head < tail:
        p = queue[head]
        head += 1
        # a uop running on p may move to another of its ports
        cand = carriers[p] & ~expanded
        expanded |= cand
        while cand and hit == 0:
            ub = cand & -cand
            cand ^= ub
            u = _bit_index(ub)
            new = lmask[u] & ~visited
            visited, tail = _enqueue_ports(new, u, p, visited, tail, queue, via_uop, via_port)
            hit = new & slack
    if hit == 0:
        return 0.0, visited, slack
    end = _bit_index(hit & -hit)
    amount = min(deficit_a, cap[end])
    q = end
    while via_port[q] >= 0:
        amount = min(amount, x[via_uop[q] * 64 + via_port[q]])
        q = via_port[q]
    cap[end] -= amount
    if cap[end] <= tol:
        slack &= ~(1 << end)
    q = end
    while True:
        u = via_uop[q]
        x[u * 64 + q] += amount
        carriers[q] |= 1 << u
        pp = via_port[q]
        if pp < 0:
            break
        x[u * 64 + pp] -= amount
        if x[u * 64 + pp] <= tol:
            carriers[pp] &= ~(1 << u)
        q = pp
    return amount, 0, slack


@_kernel
def _solve_flow(umask, umass, idx, n, cmask, work_f, work_i):
    """Exact bottleneck of one component by Dinkelbach iteration on max-flow feasibility.

    Start from a lower bound (whole component, densest single uop) and try to
    schedule every uop with at most lam cycles per port: proportional greedy,
    then augmenting paths. If a uop is left starved, the saturated ports V it
    cannot escape are denser: raise lam to mass(V)/|V| and continue from the
    same flow. At the optimum, the maximal tight set is the set of ports from
    which no port with slack can be reached in the residual graph.
    Returns (mass, number of ports, port mask) of that tight set.
    """
    x = work_f[:n * 64]                      # x[a * 64 + p]: cycles of local uop a on port p
    cap = work_f[n * 64:n * 64 + 64]         # slack of each port
    lmass = work_f[n * 64 + 64:n * 64 + 64 + n]          # the part not yet scheduled
    lorig = work_f[n * 64 + 64 + n:n * 64 + 64 + 2 * n]   # the uop's whole mass
    lmask = work_i[192:192 + n]
    carriers = work_i[256:320]               # carriers[p]: local uops with load on p (x > tol)
    queue = work_i[:64]
    via_uop = work_i[64:128]
    via_port = work_i[128:192]
    # local copies, narrowest uops first (counting sort by port count): the greedy
    # start then leaves few uops starved
    buckets = work_i[320:384]
    widest = _popcount(cmask) + 1
    for w in range(widest):
        buckets[w] = 0
    for a in range(n):
        buckets[_popcount(umask[idx[a]])] += 1
    acc = 0
    for w in range(widest):
        c = buckets[w]
        buckets[w] = acc
        acc += c
    total = 0.0
    for a in range(n):
        j = idx[a]
        w = _popcount(umask[j])
        pos = buckets[w]
        buckets[w] = pos + 1
        lmask[pos] = umask[j]
        lmass[pos] = umass[j]
        lorig[pos] = umass[j]
        total += umass[j]
    lam = total / _popcount(cmask)
    for a in range(n):
        if lmass[a] > lam * _popcount(lmask[a]):       # a multiply: 17 divisions cost more
            lam = lmass[a] / _popcount(lmask[a])
    tol = _REL_TOL * 64.0 * total
    rest = cmask
    while rest:
        b = rest & -rest
        rest ^= b
        p = _bit_index(b)
        cap[p] = lam
        carriers[p] = 0
    # greedy start: each uop spreads over its ports in proportion to their slack
    starved = 0
    for a in range(n):
        m = lmask[a]
        r = lmass[a]
        room = 0.0
        rest = m
        while rest:
            b = rest & -rest
            rest ^= b
            p = _bit_index(b)
            room += cap[p]
        share = min(1.0, r / room) if room > 0.0 else 0.0
        while m:
            b = m & -m
            m ^= b
            p = _bit_index(b)
            take = cap[p] * share
            x[a * 64 + p] = take
            if take > tol:
                carriers[p] |= 1 << a
            cap[p] -= take
            r -= take
        if r > tol:
            starved |= 1 << a
            lmass[a] = r
        else:
            lmass[a] = 0.0
    slack = _slack(cap, cmask, tol)
    while starved:
        a = _bit_index(starved & -starved)
        pushed, blocked, slack = _augment(lmask, lmass[a], a, x, cap, carriers, slack, queue,
                                          via_uop, via_port, tol)
        if blocked == 0:
            lmass[a] -= pushed
            if lmass[a] <= tol:
                starved &= starved - 1
            continue
        # infeasible at lam: the blocked set is denser; raise every port's capacity
        confined = 0.0
        for u in range(n):
            if (lmask[u] & ~blocked) == 0:
                confined += lorig[u]
        denser = confined / _popcount(blocked)
        if denser <= lam:
            break           # rounding noise: lam is the optimum already
        rest = cmask
        while rest:
            b = rest & -rest
            rest ^= b
            cap[_bit_index(b)] += denser - lam
        lam = denser
        slack = _slack(cap, cmask, tol)
    # ports that can shed load to a port with slack are not in the bottleneck
    reach = slack
    done = 0
    grown = reach != 0
    while grown:
        grown = False
        for a in range(n):
            if (done >> a) & 1 or (lmask[a] & reach) == 0:
                continue
            done |= 1 << a
            m = lmask[a] & ~reach
            while m:
                b = m & -m
                m ^= b
                if x[a * 64 + _bit_index(b)] > tol:
                    reach |= b
                    grown = True
    tight = cmask & ~reach
    if tight == 0:
        tight = cmask
    mass = 0.0
    for a in range(n):
        j = idx[a]
        if (umask[j] & ~tight) == 0:
            mass += umass[j]
    return mass, float(_popcount(tight)), tight


Workspace = namedtuple("Workspace", [
    "scratch_f", "scratch_i",                  # enumeration's subset table; the flow solver's arrays
    "lat", "ratio", "ratio_bits", "inv_size",  # the port lattice (ratio_bits: ratio as int64)
    "umask", "umass",                          # an experiment's merged uops: port masks, masses
    "idx", "comp",                             # the uops of one component; component of each uop
    "slot", "slot_key",                        # merge hash table: stamp and uop, port mask
])
_MAX_DISTINCT = 256          # distinct uops per experiment (a power of two: slot's low bits)
_HASH_SLOTS = 4096           # 16 x _MAX_DISTINCT keeps probe chains short
_FLOW_FLOATS = _FLOW_MAX_UOPS * 64 + 64 + 2 * _FLOW_MAX_UOPS
_INV_SIZES = 1 << 12         # 1/|Q| is tabulated for lattices up to 2^12 entries


@njit(cache=True)
def new_workspace():
    """All buffers one thread needs to simulate experiments (reused across experiments).

    The large ones are sized for the largest enumeration and lattice (2^16 entries) but not
    initialised: the operating system maps a page when it is first touched, so the memory
    (and the page faults) an experiment costs are those of the entries its method uses.
    """
    big = 1 << max(_MAX_ENUM_UOPS, _MAX_LATTICE_BITS)
    ratio = np.empty(big)
    inv_size = np.empty(_INV_SIZES)
    inv_size[0] = 0.0
    for q in range(1, _INV_SIZES):
        inv_size[q] = 1.0 / _popcount(q)
    return Workspace(np.empty(max(big, _FLOW_FLOATS)), np.empty(big, dtype=np.int64),
                     np.empty(big), ratio, ratio.view(np.int64), inv_size,
                     np.empty(_MAX_DISTINCT, dtype=np.int64), np.empty(_MAX_DISTINCT),
                     np.empty(_MAX_DISTINCT, dtype=np.int64), np.empty(_MAX_DISTINCT, dtype=np.int64),
                     np.zeros(_HASH_SLOTS + 1, dtype=np.int64), np.empty(_HASH_SLOTS, dtype=np.int64))


@_inline_kernel
def _enum(umask, umass, idx, n, ws):
    return _solve_enum(umask, umass, idx, n, ws.scratch_f, ws.scratch_i)


@_inline_kernel
def _lattice(umask, umass, idx, n, cmask, ws):
    return _solve_lattice(umask, umass, idx, n, cmask, ws.lat, ws.ratio, ws.ratio_bits, ws.inv_size)


@_inline_kernel
def solve_uops(umask, umass, d, ws, method=METHOD_AUTO):
    """Bottleneck of d distinct uops (umask[:d], umass[:d]); returns (cycles, port mask).

    ws: from new_workspace(). Returns cycles = -1.0 when a component is too large for
    every method (the caller falls back to the LP).
    """
    if method == METHOD_AUTO:
        # solve the whole set at once: splitting it into connected components first costs
        # more than it saves
        idx = ws.idx
        # counters start as np.int64(0), not 0: a literal 0 reaching a kernel through a loop's
        # phi makes numba compile the kernel a second time, for Literal[int](0) (cold compile
        # of the simulator: _solve_flow three times, 2.8-3.7 s each, on a Zen 3 guest)
        union = np.int64(0)
        for j in range(d):
            idx[j] = j
            union |= umask[j]
        if d <= _ENUM_PREFERRED_UOPS:
            num, den, mask = _enum(umask, umass, idx, d, ws)
            return (num / den, mask) if num > 0.0 else (0.0, 0)
        if _popcount(union) <= _LATTICE_PREFERRED_BITS:
            num, den, mask = _lattice(umask, umass, idx, d, union, ws)
            return (num / den, mask) if num > 0.0 else (0.0, 0)
        if d <= _FLOW_MAX_UOPS:
            num, den, mask = _solve_flow(umask, umass, idx, d, union, ws.scratch_f, ws.scratch_i)
            return (num / den, mask) if num > 0.0 else (0.0, 0)
    return _solve_components(umask, umass, d, ws, method)


@_kernel
def _solve_components(umask, umass, d, ws, method):
    """solve_uops one connected component (uops sharing ports) at a time: the optimum is
    the best component's."""
    idx = ws.idx
    comp = ws.comp
    for j in range(d):
        comp[j] = -1
    best_num = 0.0
    best_den = 1.0
    best_mask = 0
    n_comp = 0
    for start in range(d):
        if comp[start] >= 0 or umass[start] <= 0.0:
            continue
        # grow the connected component of `start`: close the port set under overlap first,
        # then collect its uops
        cmask = umask[start]
        grown = True
        while grown:
            grown = False
            for j in range(start + 1, d):
                m = umask[j]
                if m & cmask and m & ~cmask and umass[j] > 0.0:
                    cmask |= m
                    grown = True
        n = np.int64(0)
        for j in range(start, d):
            if comp[j] < 0 and umass[j] > 0.0 and umask[j] & cmask:
                comp[j] = n_comp
                idx[n] = j
                n += 1
        n_comp += 1
        k = _popcount(cmask)
        if n == 1:
            num = umass[start]
            den = float(k)
            mask = cmask
        elif method == METHOD_ENUM or method == METHOD_AUTO and n <= _ENUM_PREFERRED_UOPS:
            if n > _MAX_ENUM_UOPS:
                return -1.0, 0
            num, den, mask = _enum(umask, umass, idx, n, ws)
        elif method == METHOD_SOS or method == METHOD_AUTO and k <= _LATTICE_PREFERRED_BITS:
            if k > _MAX_LATTICE_BITS:
                return -1.0, 0
            num, den, mask = _lattice(umask, umass, idx, n, cmask, ws)
        elif n <= _FLOW_MAX_UOPS:
            num, den, mask = _solve_flow(umask, umass, idx, n, cmask, ws.scratch_f, ws.scratch_i)
        elif k <= _MAX_LATTICE_BITS:
            num, den, mask = _lattice(umask, umass, idx, n, cmask, ws)
        else:
            return -1.0, 0
        c = _better(num, den, best_num, best_den)
        if c > 0:
            best_num = num
            best_den = den
            best_mask = mask
        elif c == 0 and num > 0.0:
            # equal ratio on disjoint components: their union is tight too
            best_num += num
            best_den += den
            best_mask |= mask
    if best_num <= 0.0:
        return 0.0, 0
    return best_num / best_den, best_mask


@_inline_kernel
def experiment_cycles(masks, counts, ptr, forms, mults, e, r_max, ws, method=METHOD_AUTO):
    """Simulate experiment e of a CSR set under one mapping; returns (cycles, bottleneck mask).

    ws comes from new_workspace(). NaN cycles for an unknown form (index -1),
    TOO_LARGE when the numba paths cannot solve it (the caller uses the LP).
    """
    umask, umass, slot, slot_key = ws.umask, ws.umass, ws.slot, ws.slot_key
    # merge uops with equal port masks through an open-addressing table keyed by the mask;
    # slot[h] = stamp * _MAX_DISTINCT + uop, live when its stamp is this call's, so nothing needs
    # clearing (the extra last entry counts the calls). Masks of ports 0..11 are their own
    # hash: no collisions on any real machine's ports.
    d = np.int64(0)
    n_insn = 0.0
    stamp = slot[_HASH_SLOTS] + 1
    slot[_HASH_SLOTS] = stamp
    live = stamp * _MAX_DISTINCT
    for t in range(ptr[e], ptr[e + 1]):
        f = forms[t]
        if f < 0:
            return np.nan, 0
        mult = mults[t]
        n_insn += mult
        for j in range(masks.shape[1]):
            c = counts[f, j]
            if c <= 0.0:
                continue
            m = masks[f, j]
            h = (m ^ (m >> 12) ^ (m >> 24) ^ (m >> 36) ^ (m >> 48)) & (_HASH_SLOTS - 1)
            while slot[h] >= live and slot_key[h] != m:
                h = (h + 1) & (_HASH_SLOTS - 1)
            if slot[h] >= live:
                umass[slot[h] & (_MAX_DISTINCT - 1)] += c * mult
            else:
                if d == _MAX_DISTINCT:
                    return TOO_LARGE, 0
                slot[h] = live | d
                slot_key[h] = m
                umask[d] = m
                umass[d] = c * mult
                d += 1
    cycles, bmask = solve_uops(umask, umass, d, ws, method)
    if cycles < 0.0:
        return TOO_LARGE, 0
    if r_max > 0.0:
        cap = n_insn / r_max
        if cap > cycles * (1.0 + _REL_TOL):
            return cap, FRONTEND
    return cycles, bmask


@_kernel
def _simulate_into(masks, counts, ptr, forms, mults, r_max, method, ws, cycles, bottleneck):
    for e in range(ptr.shape[0] - 1):
        cycles[e], bottleneck[e] = experiment_cycles(masks, counts, ptr, forms, mults, e, r_max,
                                                     ws, method)


@njit(cache=True)
def _simulate_batch(masks, counts, ptr, forms, mults, r_max, method, ws):
    n_exp = ptr.shape[0] - 1
    cycles = np.empty(n_exp, dtype=np.float64)
    bottleneck = np.empty(n_exp, dtype=np.int64)
    _simulate_into(masks, counts, ptr, forms, mults, r_max, method, ws, cycles, bottleneck)
    return cycles, bottleneck


@njit(cache=True, parallel=True)
def _simulate_population(masks, counts, ptr, forms, mults, r_max):
    n_pop = masks.shape[0]
    n_exp = ptr.shape[0] - 1
    out = np.empty((n_pop, n_exp), dtype=np.float64)
    for p in prange(n_pop):
        ws = new_workspace()
        _simulate_into(masks[p], counts[p], ptr, forms, mults, r_max, METHOD_AUTO, ws, out[p],
                       np.empty(n_exp, dtype=np.int64))
    return out


# --- Python entry points ---------------------------------------------------------


def _rate(r_max) -> float:
    return float(r_max) if r_max else 0.0


_thread = threading.local()


def _workspace():
    """This thread's workspace, made once: a new one per call would be mapped afresh (page
    faults) every time."""
    if not hasattr(_thread, "workspace"):
        _thread.workspace = new_workspace()
    return _thread.workspace


def simulate_arrays(masks, counts, ptr, forms, mults, r_max=None, method=METHOD_AUTO):
    """One mapping x many experiments -> (cycles float64[E], bottleneck int64[E]).

    cycles is NaN for an experiment with a form the mapping lacks; bottleneck is a
    port mask, or FRONTEND when the R_max cap decides.
    """
    cycles, bottleneck = _simulate_batch(masks, counts, ptr, forms, mults, _rate(r_max), method,
                                         _workspace())
    for e in np.flatnonzero(cycles == TOO_LARGE):
        cycles[e], bottleneck[e] = _lp_experiment(masks, counts, forms[ptr[e]:ptr[e + 1]],
                                                  mults[ptr[e]:ptr[e + 1]], r_max)
    return cycles, bottleneck


def simulate_population(masks, counts, ptr, forms, mults, r_max=None):
    """Many mappings x many experiments: masks int64[P, F, U], counts float64[P, F, U] -> float64[P, E].

    Parallel over the population (numba prange); the inference engine's fitness loop.
    """
    out = _simulate_population(masks, counts, ptr, forms, mults, _rate(r_max))
    for p, e in zip(*np.nonzero(out == TOO_LARGE)):
        out[p, e] = _lp_experiment(masks[p], counts[p], forms[ptr[e]:ptr[e + 1]],
                                   mults[ptr[e]:ptr[e + 1]], r_max)[0]
    return out


def simulate(model, experiments):
    """Simulate an ExperimentSet under a MachineModel -> (cycles, bottleneck masks)."""
    masks, counts = model.to_arrays()
    ptr, forms, mults = experiments.to_arrays(model.form_index())
    return simulate_arrays(masks, counts, ptr, forms, mults, model.r_max)


def uop_masses(masks, counts, forms, mults):
    """Merge the uops of one experiment: (distinct masks int64[d], masses float64[d], n_insn)."""
    mass: dict[int, float] = {}
    for f, m in zip(forms, mults):
        for j in range(masks.shape[1]):
            if counts[f, j] > 0:
                key = int(masks[f, j])
                mass[key] = mass.get(key, 0.0) + float(counts[f, j]) * float(m)
    keys = sorted(mass)
    return (np.array(keys, dtype=np.int64), np.array([mass[k] for k in keys]), float(np.sum(mults)))


def _lp_experiment(masks, counts, forms, mults, r_max):
    if np.any(forms < 0):
        return np.nan, 0
    umask, umass, n_insn = uop_masses(masks, counts, forms, mults)
    n_ports = int(max((int(m).bit_length() for m in umask), default=1))
    cycles, load, _ = lp_schedule(umask, umass, n_ports, n_insn, r_max)
    return cycles, bottleneck_from_load(load, cycles) if cycles > 0 else 0


def bottleneck_from_load(load, cycles, tol=1e-9) -> int:
    """Ports loaded to the optimum in a schedule (a superset hint; the engine's mask is exact)."""
    mask = 0
    for p, x in enumerate(load):
        if x >= cycles - tol * max(1.0, cycles):
            mask |= 1 << p
    return mask


def lp_schedule(umask, umass, n_ports, n_insn=0.0, r_max=None):
    """Reference LP (scipy HiGHS): the optimal cycles and one optimal schedule.

    Returns (cycles, load float64[n_ports], assignment) where assignment[i] maps
    port index -> cycles of uop i on that port. Independent of the engine above:
    the tests compare the two.
    """
    # deferred: scipy.optimize (~0.3 s): the LP is for tests and the rare TOO_LARGE experiment
    from scipy.optimize import linprog

    variables = [(i, p) for i, m in enumerate(umask) for p in range(n_ports) if int(m) >> p & 1]
    n_var = len(variables) + 1          # last variable: t
    if not variables:
        cap = n_insn / r_max if r_max else 0.0
        return cap, np.zeros(n_ports), [{} for _ in umask]
    c = np.zeros(n_var)
    c[-1] = 1.0
    a_eq = np.zeros((len(umask), n_var))
    a_ub = np.zeros((n_ports, n_var))
    for v, (i, p) in enumerate(variables):
        a_eq[i, v] = 1.0
        a_ub[p, v] = 1.0
    a_ub[:, -1] = -1.0
    lower_t = n_insn / r_max if r_max else 0.0
    bounds = [(0, None)] * len(variables) + [(lower_t, None)]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(n_ports), A_eq=a_eq, b_eq=np.asarray(umass, float),
                  bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"LP failed: {res.message}")
    assignment = [{} for _ in umask]
    load = np.zeros(n_ports)
    for v, (i, p) in enumerate(variables):
        x = float(res.x[v])
        if x > 1e-12:
            assignment[i][p] = x
            load[p] += x
    return float(res.x[-1]), load, assignment
