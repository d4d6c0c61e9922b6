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
    through a small hash table;
  * the uops split into connected components (port sets that overlap); the
    optimum is the max over components, so each is solved alone;
  * a component of at most 6 uops: enumerate its 2^d uop subsets with
    incremental mass and port union (no subset tests);
  * a larger one: Dinkelbach iteration on max-flow feasibility (start at a
    lower bound, schedule greedily, repair with augmenting paths; a blocked
    port set is denser and becomes the next bound), on int64 bitsets. On
    random 10-port mappings this is ~5x faster than a sum-over-subsets
    transform over the port lattice, which stays as the path for components
    of more than 62 distinct uops;
  * beyond both (more than 62 uops on more than 16 ports) the experiment is
    solved with the LP.
The optional peak rate R_max caps throughput: cycles = max(port bound, n / R_max).

Arrays (the data layer's MachineModel.to_arrays / ExperimentSet.to_arrays):
  masks int64[F, U], counts float64[F, U]    uop port masks and counts per form (count 0 = none)
  ptr int64[E+1], forms int64[nnz], mults float64[nnz]   experiments in CSR form; form -1 = unknown
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

# bottleneck code when the R_max cap, not a port set, limits throughput
FRONTEND = -1
# engine marker: the experiment is too large for the numba paths; solved with the LP instead
TOO_LARGE = -2.0
# largest port-class lattice the sum-over-subsets path allocates (2^16 entries)
_MAX_SOS_BITS = 16
_MAX_ENUM_UOPS = 16
_REL_TOL = 1e-12
# components with at most this many distinct uops are solved by subset enumeration
_ENUM_PREFERRED_UOPS = 6
METHOD_AUTO, METHOD_ENUM, METHOD_SOS, METHOD_FLOW = 0, 1, 2, 3


@intrinsic
def _ctpop(typingctx, x):
    """LLVM's ctpop: one popcnt instruction on any x86-64 or AArch64 host."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@njit(cache=True, inline="always")
def _popcount(x):
    return _ctpop(x)


@njit(cache=True, inline="always")
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


@njit(cache=True)
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


@njit(cache=True)
def _solve_sos(umask, umass, idx, n, comp_mask, lattice, sizes, class_ports):
    """Sum-over-subsets over the port classes of one component; returns (num, den, mask)."""
    # port classes: ports with the same membership signature over the component's uops
    k = 0
    rest = comp_mask
    while rest:
        p = rest & -rest
        rest ^= p
        found = -1
        for c in range(k):
            q = class_ports[c] & -class_ports[c]  # a representative port of class c
            same = True
            for j in range(n):
                m = umask[idx[j]]
                if ((m & p) != 0) != ((m & q) != 0):
                    same = False
                    break
            if same:
                found = c
                break
        if found >= 0:
            class_ports[found] |= p
        else:
            class_ports[k] = p
            k += 1
    size = 1 << k
    for q in range(size):
        lattice[q] = 0.0
    for j in range(n):
        m = umask[idx[j]]
        cm = 0
        for c in range(k):
            if class_ports[c] & m:
                cm |= 1 << c
        lattice[cm] += umass[idx[j]]
    sizes[0] = 0
    for b in range(k):
        lo = 1 << b
        w = _popcount(class_ports[b])
        for q in range(lo, lo << 1):
            sizes[q] = sizes[q - lo] + w
    # zeta transform: lattice[Q] = mass of uops whose class set is a subset of Q
    h = 1
    while h < size:
        for base in range(0, size, h << 1):
            for j in range(base, base + h):
                lattice[j + h] += lattice[j]
        h <<= 1
    best_num = 0.0
    best_den = 1.0
    best_q = 0
    for q in range(1, size):
        c = _better(lattice[q], sizes[q], best_num, best_den)
        if c > 0 or (c == 0 and sizes[q] > best_den):
            best_num = lattice[q]
            best_den = sizes[q]
            best_q = q
    mask = 0
    for c in range(k):
        if best_q >> c & 1:
            mask |= class_ports[c]
    return best_num, best_den, mask


@njit(cache=True, inline="always")
def _bit_index(b):
    return trailing_zeros(b)


# layout of the flow solver's work buffers (slices of make_scratch()'s arrays)
_FLOW_MAX_UOPS = 62          # uop sets are int64 bitmasks


@njit(cache=True, inline="always")
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


@njit(cache=True)
def _augment(lmask, n, deficit_a, a, x, cap, users, queue, via_uop, via_port, tol):
    """Push deficit_a of local uop a through one augmenting path (BFS over ports).

    Returns (amount pushed, 0), or (0, V) when no port with slack is reachable:
    then V is a set of saturated ports whose confined uops carry more than its capacity.
    """
    visited = 0
    expanded = 1 << a        # uops whose ports are already in the queue
    head = 0
    tail = 0
    visited, tail = _enqueue_ports(lmask[a], a, -1, visited, tail, queue, via_uop, via_port)
    while head < tail:
        p = queue[head]
        head += 1
        if cap[p] > tol:
            amount = min(deficit_a, cap[p])
            q = p
            while via_port[q] >= 0:
                amount = min(amount, x[via_uop[q] * 64 + via_port[q]])
                q = via_port[q]
            cap[p] -= amount
            q = p
            while True:
                u = via_uop[q]
                x[u * 64 + q] += amount
                pp = via_port[q]
                if pp < 0:
                    break
                x[u * 64 + pp] -= amount
                q = pp
            return amount, 0
        # a uop running on p may move to another of its ports
        cand = users[p] & ~expanded
        while cand:
            ub = cand & -cand
            cand ^= ub
            u = _bit_index(ub)
            if x[u * 64 + p] > tol:
                expanded |= ub
                visited, tail = _enqueue_ports(lmask[u] & ~visited, u, p, visited, tail, queue,
                                               via_uop, via_port)
    return 0.0, visited


@njit(cache=True)
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
    users = work_i[256:320]                  # users[p]: local uops that may run on p
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
        r = lmass[a] / _popcount(lmask[a])
        if r > lam:
            lam = r
    tol = _REL_TOL * 64.0 * total
    rest = cmask
    while rest:
        b = rest & -rest
        rest ^= b
        p = _bit_index(b)
        cap[p] = lam
        users[p] = 0
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
            users[p] |= 1 << a
        share = min(1.0, r / room) if room > 0.0 else 0.0
        while m:
            b = m & -m
            m ^= b
            p = _bit_index(b)
            take = cap[p] * share
            x[a * 64 + p] = take
            cap[p] -= take
            r -= take
        if r > tol:
            starved |= 1 << a
            lmass[a] = r
        else:
            lmass[a] = 0.0
    while starved:
        a = _bit_index(starved & -starved)
        pushed, blocked = _augment(lmask, n, lmass[a], a, x, cap, users, queue, via_uop,
                                   via_port, tol)
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
    # ports that can shed load to a port with slack are not in the bottleneck
    reach = 0
    rest = cmask
    while rest:
        b = rest & -rest
        rest ^= b
        if cap[_bit_index(b)] > tol:
            reach |= b
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


@njit(cache=True)
def solve_uops(umask, umass, d, scratch_f, scratch_i, idx, comp, method=0):
    """Bottleneck of d distinct uops (umask[:d], umass[:d]); returns (cycles, port mask).

    scratch_f / scratch_i: buffers from make_scratch(); idx, comp: int64[>= d].
    Returns cycles = -1.0 when a component is too large for both methods (the
    caller falls back to the LP).
    """
    for j in range(d):
        comp[j] = -1
    best_num = 0.0
    best_den = 1.0
    best_mask = 0
    n_comp = 0
    for start in range(d):
        if comp[start] >= 0 or umass[start] <= 0.0:
            continue
        # grow the connected component of `start` (uops sharing ports): close the port
        # set under overlap first, then collect its uops
        cmask = umask[start]
        grown = True
        while grown:
            grown = False
            for j in range(start + 1, d):
                m = umask[j]
                if m & cmask and m & ~cmask and umass[j] > 0.0:
                    cmask |= m
                    grown = True
        n = 0
        for j in range(start, d):
            if comp[j] < 0 and umass[j] > 0.0 and umask[j] & cmask:
                comp[j] = n_comp
                idx[n] = j
                n += 1
        n_comp += 1
        if n == 1:
            num = umass[start]
            den = float(_popcount(cmask))
            mask = cmask
        elif n <= _ENUM_PREFERRED_UOPS and method != METHOD_FLOW or method == METHOD_ENUM:
            if n > _MAX_ENUM_UOPS:
                return -1.0, 0
            num, den, mask = _solve_enum(umask, umass, idx, n, scratch_f, scratch_i)
        elif method == METHOD_SOS:
            if _popcount(cmask) > _MAX_SOS_BITS:
                return -1.0, 0
            num, den, mask = _solve_sos(umask, umass, idx, n, cmask, scratch_f, scratch_i,
                                        scratch_i[1 << _MAX_SOS_BITS:])
        elif n <= _FLOW_MAX_UOPS:
            num, den, mask = _solve_flow(umask, umass, idx, n, cmask, scratch_f, scratch_i)
        elif _popcount(cmask) <= _MAX_SOS_BITS:
            num, den, mask = _solve_sos(umask, umass, idx, n, cmask, scratch_f, scratch_i,
                                        scratch_i[1 << _MAX_SOS_BITS:])
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


_MAX_DISTINCT = 256          # distinct uops per experiment
_HASH_SLOTS = 512            # > 2 x _MAX_DISTINCT keeps probe chains short


@njit(cache=True)
def make_scratch():
    """Work buffers for solve_uops: 2^16 lattice entries (+ 64 port-class slots)."""
    size = 1 << max(_MAX_SOS_BITS, _MAX_ENUM_UOPS)
    return np.zeros(size, dtype=np.float64), np.zeros(size + 64, dtype=np.int64)


@njit(cache=True)
def new_workspace():
    """All buffers one thread needs to simulate experiments (reused across calls)."""
    scratch_f, scratch_i = make_scratch()
    return (scratch_f, scratch_i,
            np.zeros(_MAX_DISTINCT, dtype=np.int64),     # umask: merged uops' port masks
            np.zeros(_MAX_DISTINCT, dtype=np.float64),   # umass: their masses
            np.zeros(_MAX_DISTINCT, dtype=np.int64),     # idx: a component's uops
            np.zeros(_MAX_DISTINCT, dtype=np.int64),     # comp: component of each uop
            np.zeros(_HASH_SLOTS + 1, dtype=np.int64),   # slot_stamp: live hash slots + counter
            np.zeros(_HASH_SLOTS, dtype=np.int64))       # slot_uop: hash slot -> uop


@njit(cache=True)
def experiment_cycles(masks, counts, ptr, forms, mults, e, r_max, ws, method=METHOD_AUTO):
    """Simulate experiment e of a CSR set under one mapping; returns (cycles, bottleneck mask).

    ws comes from new_workspace(). NaN cycles for an unknown form (index -1),
    TOO_LARGE when the numba paths cannot solve it (the caller uses the LP).
    """
    scratch_f, scratch_i, umask, umass, idx, comp, slot_stamp, slot_uop = ws
    # merge uops with equal port masks; an open-addressing table keyed by the mask,
    # cleared by stamping (slot_stamp[h] == stamp means slot h is live)
    d = 0
    n_insn = 0.0
    stamp = slot_stamp[_HASH_SLOTS] + 1       # the extra last entry counts the calls
    slot_stamp[_HASH_SLOTS] = stamp
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
            h = (m ^ (m >> 7) ^ (m >> 17) ^ (m >> 31)) & (_HASH_SLOTS - 1)
            while slot_stamp[h] == stamp and umask[slot_uop[h]] != m:
                h = (h + 1) & (_HASH_SLOTS - 1)
            if slot_stamp[h] == stamp:
                umass[slot_uop[h]] += c * mult
            else:
                if d == _MAX_DISTINCT:
                    return TOO_LARGE, 0
                slot_stamp[h] = stamp
                slot_uop[h] = d
                umask[d] = m
                umass[d] = c * mult
                d += 1
    cycles, bmask = solve_uops(umask, umass, d, scratch_f, scratch_i, idx, comp, method)
    if cycles < 0.0:
        return TOO_LARGE, 0
    if r_max > 0.0:
        cap = n_insn / r_max
        if cap > cycles * (1.0 + _REL_TOL):
            return cap, FRONTEND
    return cycles, bmask


@njit(cache=True)
def _simulate_batch(masks, counts, ptr, forms, mults, r_max, method):
    n_exp = ptr.shape[0] - 1
    cycles = np.empty(n_exp, dtype=np.float64)
    bottleneck = np.zeros(n_exp, dtype=np.int64)
    ws = new_workspace()
    for e in range(n_exp):
        cycles[e], bottleneck[e] = experiment_cycles(masks, counts, ptr, forms, mults, e, r_max,
                                                     ws, method)
    return cycles, bottleneck


@njit(cache=True, parallel=True)
def _simulate_population(masks, counts, ptr, forms, mults, r_max):
    n_pop = masks.shape[0]
    n_exp = ptr.shape[0] - 1
    out = np.empty((n_pop, n_exp), dtype=np.float64)
    for p in prange(n_pop):
        ws = new_workspace()
        for e in range(n_exp):
            out[p, e] = experiment_cycles(masks[p], counts[p], ptr, forms, mults, e, r_max, ws,
                                          METHOD_AUTO)[0]
    return out


# --- Python entry points ---------------------------------------------------------


def _rate(r_max) -> float:
    return float(r_max) if r_max else 0.0


def simulate_arrays(masks, counts, ptr, forms, mults, r_max=None, method=METHOD_AUTO):
    """One mapping x many experiments -> (cycles float64[E], bottleneck int64[E]).

    cycles is NaN for an experiment with a form the mapping lacks; bottleneck is a
    port mask, or FRONTEND when the R_max cap decides.
    """
    cycles, bottleneck = _simulate_batch(masks, counts, ptr, forms, mults, _rate(r_max), method)
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
