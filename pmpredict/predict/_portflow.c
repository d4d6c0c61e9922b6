/* port_bound.optimum's integer part in C: Dinkelbach's iteration over max-flow feasibility,
 * the same algorithm as port_bound's _Flow and _integer_optimum in the same order of
 * operations (the same breadth-first searches, the same augmenting paths, the same amounts
 * pushed), so the flow found, hence the schedule among the optimal ones, is the plain Python
 * one to the unit (tests/test_port_bound_native.py checks that). Built by the package's
 * install as pmpredict.predict._portflow; where it could not be built port_bound runs the
 * plain Python code.
 *
 * Why C: optimum runs once per predicted block, ~50 us of Python each.
 *
 * optimum(masks, masses) -> (t, neck, rows) or None
 *   masks   port bitmasks of the uops (ints in [1, 2**64)), masks[u] the ports of uop u
 *   masses  their scaled masses (ints >= 0), each a multiple of lcm(1..|ports used|) as
 *           port_bound scales them, so that every t of the iteration is exact
 *   t       the optimum, in the masses' unit
 *   neck    the bottleneck port mask (the ports from which the sink cannot be reached in
 *           the residual network at t)
 *   rows    per uop, ((port, amount), ...) for the amounts > 0, ports ascending
 * None where the exact integers would not fit in int64 (a mask of more than 64 ports, a
 * total mass above 2**62): the caller runs the Python code, whose ints are unbounded. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_PORTS 64
/* every quantity (t, loads, flows, a group's mass) is at most the total mass */
#define MAX_TOTAL ((int64_t)1 << 62)

typedef struct {
    Py_ssize_t n;                 /* uops */
    int width;                    /* highest port + 1: the row length of x */
    uint64_t used;                /* the ports of any uop */
    const uint64_t *masks;
    const int64_t *masses;
    const uint8_t *ports;         /* each uop's ports, ascending: ports[first[u] .. first[u+1]) */
    const Py_ssize_t *first;
    int64_t cap;                  /* t: each port's capacity */
    int64_t *x;                   /* x[u * width + p]: uop u's flow on port p */
    int64_t load[MAX_PORTS];
    int64_t *left;                /* unrouted mass */
    /* the search's marks: the uop a port was reached from (-1: not reached), the port a uop
     * was reached through (-1: the start), whether a uop was reached */
    Py_ssize_t via_port[MAX_PORTS];
    int *via_uop;
    uint8_t *seen;
    Py_ssize_t *queue;
} Flow;

/* _Flow._push: apply the path found by augment, from the start uop to the free `port`. */
static int push(Flow *f, Py_ssize_t start, int port)
{
    int64_t amount = f->left[start];
    if (f->cap - f->load[port] < amount)
        amount = f->cap - f->load[port];
    Py_ssize_t u = f->via_port[port];
    while (u != start) {
        int remove = f->via_uop[u];
        if (f->x[u * f->width + remove] < amount)
            amount = f->x[u * f->width + remove];
        u = f->via_port[remove];
    }
    int add = port;
    u = f->via_port[port];
    for (;;) {
        f->x[u * f->width + add] += amount;
        if (u == start)
            break;
        int remove = f->via_uop[u];
        f->x[u * f->width + remove] -= amount;
        add = remove;
        u = f->via_port[remove];
    }
    f->load[port] += amount;
    f->left[start] -= amount;
    return amount > 0;
}

/* _Flow._augment: a shortest path uop -> port (-> uop -> port)* to a port below its cap,
 * breadth first, the ports of a uop in ascending order, the uops displaced in index order. */
static int augment(Flow *f, Py_ssize_t start)
{
    for (int p = 0; p < f->width; p++)
        f->via_port[p] = -1;
    memset(f->seen, 0, (size_t)f->n);
    f->seen[start] = 1;
    f->via_uop[start] = -1;
    Py_ssize_t head = 0, tail = 0;
    f->queue[tail++] = start;
    while (head < tail) {
        Py_ssize_t u = f->queue[head++];
        for (Py_ssize_t k = f->first[u]; k < f->first[u + 1]; k++) {
            int p = f->ports[k];
            if (f->via_port[p] >= 0)
                continue;
            f->via_port[p] = u;
            if (f->load[p] < f->cap)
                return push(f, start, p);
            for (Py_ssize_t v = 0; v < f->n; v++) {
                if (!f->seen[v] && f->x[v * f->width + p] > 0) {
                    f->seen[v] = 1;
                    f->via_uop[v] = p;
                    f->queue[tail++] = v;
                }
            }
        }
    }
    return 0;
}

/* _Flow.__init__: a maximum flow at capacity cap, from nothing, uop by uop. 1 if all the
 * mass fits. */
static int route(Flow *f, int64_t cap)
{
    f->cap = cap;
    memset(f->x, 0, sizeof(int64_t) * (size_t)f->n * (size_t)f->width);
    memset(f->load, 0, sizeof f->load);
    memcpy(f->left, f->masses, sizeof(int64_t) * (size_t)f->n);
    int fits = 1;
    for (Py_ssize_t u = 0; u < f->n; u++) {
        while (f->left[u] > 0 && augment(f, u))
            ;
        if (f->left[u] > 0)
            fits = 0;
    }
    return fits;
}

/* _Flow.residual_reach_from_source, then the next t: mass(S) // |ports(S)| over the uops S
 * reachable from the source and their ports. A closure, so the order of the search does
 * not matter here. */
static int64_t next_t(Flow *f)
{
    uint64_t reached_ports = 0;
    Py_ssize_t head = 0, tail = 0;
    for (Py_ssize_t u = 0; u < f->n; u++) {
        f->seen[u] = f->left[u] > 0;
        if (f->seen[u])
            f->queue[tail++] = u;
    }
    while (head < tail) {
        Py_ssize_t u = f->queue[head++];
        for (Py_ssize_t k = f->first[u]; k < f->first[u + 1]; k++) {
            int p = f->ports[k];
            if (reached_ports >> p & 1)
                continue;
            reached_ports |= (uint64_t)1 << p;
            for (Py_ssize_t v = 0; v < f->n; v++) {
                if (!f->seen[v] && f->x[v * f->width + p] > 0) {
                    f->seen[v] = 1;
                    f->queue[tail++] = v;
                }
            }
        }
    }
    int64_t mass = 0;
    for (Py_ssize_t u = 0; u < f->n; u++)
        if (f->seen[u])
            mass += f->masses[u];
    return mass / __builtin_popcountll(reached_ports);
}

/* _Flow.cannot_reach_sink as a mask: the used ports from which no residual path leads to a
 * port below its cap (a uop with flow on q could move it to p: q reaches p if p does). */
static uint64_t cannot_reach_sink(const Flow *f)
{
    uint64_t reach = 0;
    int queue[MAX_PORTS];
    int head = 0, tail = 0;
    for (int p = 0; p < f->width; p++) {
        if ((f->used >> p & 1) && f->load[p] < f->cap) {
            reach |= (uint64_t)1 << p;
            queue[tail++] = p;
        }
    }
    while (head < tail) {
        int p = queue[head++];
        for (Py_ssize_t u = 0; u < f->n; u++) {
            if (!(f->masks[u] >> p & 1))
                continue;
            for (Py_ssize_t k = f->first[u]; k < f->first[u + 1]; k++) {
                int q = f->ports[k];
                if (!(reach >> q & 1) && f->x[u * f->width + q] > 0) {
                    reach |= (uint64_t)1 << q;
                    queue[tail++] = q;
                }
            }
        }
    }
    return f->used & ~reach;
}

/* A mask as uint64: 1 done, 0 wider than 64 bits (the Python code's case), -1 error set.
 * Any integer (__index__: numpy's too); a float is a TypeError. */
static int read_mask(PyObject *item, uint64_t *out)
{
    PyObject *number = PyNumber_Index(item);
    if (number == NULL)
        return -1;
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    int status = 1;
    if (value == -1 && PyErr_Occurred()) {
        status = -1;
    } else if (overflow > 0) {
        unsigned long long wide = PyLong_AsUnsignedLongLong(number);
        if (wide == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            status = 0;
        } else {
            *out = wide;
        }
    } else if (overflow < 0 || value <= 0) {
        PyErr_SetString(PyExc_ValueError, "optimum: masks must be positive port bitmasks");
        status = -1;
    } else {
        *out = (uint64_t)value;
    }
    Py_DECREF(number);
    return status;
}

/* A mass as int64: 1 done, 0 too large (the Python code's case), -1 error set. */
static int read_mass(PyObject *item, int64_t *out)
{
    PyObject *number = PyNumber_Index(item);
    if (number == NULL)
        return -1;
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    Py_DECREF(number);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (overflow < 0 || (!overflow && value < 0)) {
        PyErr_SetString(PyExc_ValueError, "optimum: masses must be >= 0");
        return -1;
    }
    if (overflow > 0 || value > MAX_TOTAL)
        return 0;
    *out = value;
    return 1;
}

static PyObject *build_result(const Flow *f, int64_t t)
{
    PyObject *rows = PyTuple_New(f->n);
    if (rows == NULL)
        return NULL;
    for (Py_ssize_t u = 0; u < f->n; u++) {
        Py_ssize_t count = 0;
        for (Py_ssize_t k = f->first[u]; k < f->first[u + 1]; k++)
            count += f->x[u * f->width + f->ports[k]] > 0;
        PyObject *row = PyTuple_New(count);
        if (row == NULL)
            goto fail;
        PyTuple_SET_ITEM(rows, u, row);
        Py_ssize_t i = 0;
        for (Py_ssize_t k = f->first[u]; k < f->first[u + 1]; k++) {
            int64_t amount = f->x[u * f->width + f->ports[k]];
            if (amount <= 0)
                continue;
            PyObject *pair = Py_BuildValue("(iL)", (int)f->ports[k], (long long)amount);
            if (pair == NULL)
                goto fail;
            PyTuple_SET_ITEM(row, i++, pair);
        }
    }
    return Py_BuildValue("(LKN)", (long long)t, (unsigned long long)cannot_reach_sink(f), rows);
fail:
    Py_DECREF(rows);
    return NULL;
}

static PyObject *portflow_optimum(PyObject *self, PyObject *args)
{
    PyObject *masks_arg, *masses_arg;
    if (!PyArg_ParseTuple(args, "OO:optimum", &masks_arg, &masses_arg))
        return NULL;
    PyObject *masks_seq = PySequence_Fast(masks_arg, "optimum: masks must be a sequence");
    if (masks_seq == NULL)
        return NULL;
    PyObject *masses_seq = PySequence_Fast(masses_arg, "optimum: masses must be a sequence");
    if (masses_seq == NULL) {
        Py_DECREF(masks_seq);
        return NULL;
    }
    PyObject *result = NULL;
    void *block = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(masks_seq);
    if (PySequence_Fast_GET_SIZE(masses_seq) != n) {
        PyErr_SetString(PyExc_ValueError, "optimum: as many masses as masks");
        goto done;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "optimum: no uops");
        goto done;
    }
    if ((size_t)n > (size_t)PY_SSIZE_T_MAX / (MAX_PORTS * sizeof(int64_t) * 2)) {
        PyErr_NoMemory();
        goto done;
    }
    /* one block: masks, masses, left, x (n x 64 at most), ports, first, via_uop, seen, queue */
    size_t n_ = (size_t)n;
    size_t size = n_ * sizeof(uint64_t) + 2 * n_ * sizeof(int64_t)
                  + n_ * MAX_PORTS * sizeof(int64_t) + (n_ + 1) * sizeof(Py_ssize_t)
                  + n_ * sizeof(Py_ssize_t) + n_ * sizeof(int) + n_ * MAX_PORTS + n_;
    block = PyMem_Malloc(size);
    if (block == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    char *cursor = block;
    uint64_t *masks = (uint64_t *)cursor;       cursor += n_ * sizeof(uint64_t);
    int64_t *masses = (int64_t *)cursor;        cursor += n_ * sizeof(int64_t);
    int64_t *left = (int64_t *)cursor;          cursor += n_ * sizeof(int64_t);
    int64_t *x = (int64_t *)cursor;             cursor += n_ * MAX_PORTS * sizeof(int64_t);
    Py_ssize_t *first = (Py_ssize_t *)cursor;   cursor += (n_ + 1) * sizeof(Py_ssize_t);
    Py_ssize_t *queue = (Py_ssize_t *)cursor;   cursor += n_ * sizeof(Py_ssize_t);
    int *via_uop = (int *)cursor;               cursor += n_ * sizeof(int);
    uint8_t *ports = (uint8_t *)cursor;         cursor += n_ * MAX_PORTS;
    uint8_t *seen = (uint8_t *)cursor;

    int64_t total = 0;
    uint64_t used = 0;
    for (Py_ssize_t u = 0; u < n; u++) {
        int ok = read_mask(PySequence_Fast_GET_ITEM(masks_seq, u), &masks[u]);
        if (ok < 0)
            goto done;
        int fits = ok;
        ok = read_mass(PySequence_Fast_GET_ITEM(masses_seq, u), &masses[u]);
        if (ok < 0)
            goto done;
        if (!fits || !ok || masses[u] > MAX_TOTAL - total) {
            /* keep reading: a bad argument further on is still an error */
            total = MAX_TOTAL + 1;
            continue;
        }
        total += masses[u];
        used |= masks[u];
    }
    if (total > MAX_TOTAL) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t u = 0; u < n; u++) {
        first[u] = k;
        for (int p = 0; p < MAX_PORTS; p++)
            if (masks[u] >> p & 1)
                ports[k++] = (uint8_t)p;
    }
    first[n] = k;

    Flow f = {.n = n, .width = MAX_PORTS - __builtin_clzll(used), .used = used, .masks = masks,
              .masses = masses, .ports = ports, .first = first, .x = x, .left = left,
              .via_uop = via_uop, .seen = seen, .queue = queue};
    int64_t t = total / __builtin_popcountll(used);
    while (!route(&f, t)) {
        int64_t next = next_t(&f);
        if (next <= t) {
            /* only where the masses were not scaled so that every mass(S) / |ports(S)| is
             * an integer: the Python code would go round forever */
            PyErr_SetString(PyExc_ValueError,
                            "optimum: masses must be multiples of lcm(1..ports used)");
            goto done;
        }
        t = next;
    }
    result = build_result(&f, t);
done:
    PyMem_Free(block);
    Py_DECREF(masks_seq);
    Py_DECREF(masses_seq);
    return result;
}

static PyMethodDef methods[] = {
    {"optimum", portflow_optimum, METH_VARARGS,
     "optimum(masks, masses) -> (t, neck, rows) or None: port_bound's exact throughput bound "
     "over integer (scaled) masses; rows[u] = ((port, amount), ...) for amounts > 0; None "
     "where the integers would exceed int64 (the caller runs the Python code)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_portflow",
    "port_bound.optimum's max-flow iteration in C (the same algorithm as the Python code).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__portflow(void)
{
    return PyModule_Create(&module);
}
