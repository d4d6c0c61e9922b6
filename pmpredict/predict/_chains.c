/* The loop-carried dependency chains and the critical path of one iteration, in C: the same
 * algorithms as the plain Python of pmpredict/predict/deps.py (loop_carried_cycles,
 * _forward_longest, _max_cycle_mean, _tight_cycle, loop_carried_chains, critical_path), step
 * for step, so that the results are bit-identical: the same IEEE operations in the same order
 * (built with -ffp-contract=off, no fast-math), the same strict comparisons and loop orders,
 * hence the same choice among ties, the same tolerances.
 *
 * The graph comes in as n and a sequence of (src, dst, latency, distance) per edge, in
 * graph.edges order; results name edges by their index in that sequence, so that the Python
 * side hands back the very Edge objects.
 *
 *   cycles(n, edges, exclude, limit, positive_only) -> [(ratio, latency, iterations,
 *                                                       nodes, edge_indices), ...]
 *   critical_path(n, edges, node_latency) -> (length, nodes)
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define NEG (-HUGE_VAL)
#define TOL 1e-9                  /* deps._TOL: relative tolerance of "longer" */
#define TIGHT 1e-7                /* of "tight" in deps._tight_cycle */
/* integer latencies are summed as doubles: within this bound every sum of them stays exact,
   as Python's integer sums are */
#define MAX_INT_LATENCY 2147483648.0
#define MAX_DISTANCE 2147483647L


/* --- the graph ------------------------------------------------------------------------------ */

typedef struct {
    Py_ssize_t n;                 /* nodes */
    Py_ssize_t count;             /* edges */
    Py_ssize_t *src, *dst;
    double *latency;
    long *distance;
    unsigned char *integral;      /* the latency was a Python int: sums of ints stay ints */
} Graph;

static void *
new_array(Py_ssize_t count, size_t size)
{
    if (count < 0 || (size_t)count > (size_t)PY_SSIZE_T_MAX / size) {
        PyErr_NoMemory();
        return NULL;
    }
    void *p = PyMem_Malloc(count ? (size_t)count * size : 1);
    if (p == NULL)
        PyErr_NoMemory();
    return p;
}

static void
graph_free(Graph *g)
{
    PyMem_Free(g->src);
    PyMem_Free(g->latency);
    PyMem_Free(g->distance);
    PyMem_Free(g->integral);
    memset(g, 0, sizeof *g);
}

/* A latency: a float, or an int (kept apart: Python keeps sums of ints as ints). */
static int
as_latency(PyObject *obj, double *value, unsigned char *integral)
{
    if (PyFloat_Check(obj)) {
        *value = PyFloat_AS_DOUBLE(obj);
        *integral = 0;
        return 0;
    }
    if (PyLong_Check(obj)) {
        double v = PyLong_AsDouble(obj);
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            v = HUGE_VAL;
        }
        if (!(fabs(v) <= MAX_INT_LATENCY)) {
            PyErr_SetString(PyExc_ValueError, "an integer latency must lie within +-2**31");
            return -1;
        }
        *value = v;
        *integral = 1;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a latency must be a float or an int, not %.200s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* An int; -1 with an exception set when it is not one. Out-of-range ints become `fallback`. */
static int
as_index(PyObject *obj, const char *what, Py_ssize_t fallback, Py_ssize_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.200s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(obj);
    if (v == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        v = fallback;
    }
    *out = v;
    return 0;
}

static int
parse_graph(Py_ssize_t n, PyObject *rows, Graph *g)
{
    memset(g, 0, sizeof *g);
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "the number of nodes must not be negative");
        return -1;
    }
    PyObject *seq = PySequence_Fast(rows, "edges must be a sequence of "
                                          "(src, dst, latency, distance)");
    if (seq == NULL)
        return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    g->n = n;
    g->count = count;
    g->src = new_array(count, 2 * sizeof *g->src);
    g->latency = new_array(count, sizeof *g->latency);
    g->distance = new_array(count, sizeof *g->distance);
    g->integral = new_array(count, sizeof *g->integral);
    if (!g->src || !g->latency || !g->distance || !g->integral)
        goto fail;
    g->dst = g->src + count;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *fields = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, k),
                                           "an edge must be (src, dst, latency, distance)");
        if (fields == NULL)
            goto fail;
        if (PySequence_Fast_GET_SIZE(fields) != 4) {
            Py_DECREF(fields);
            PyErr_SetString(PyExc_ValueError, "an edge must be (src, dst, latency, distance)");
            goto fail;
        }
        PyObject **item = PySequence_Fast_ITEMS(fields);
        Py_ssize_t src, dst, distance;
        int bad = as_index(item[0], "an edge's src", -1, &src) < 0
            || as_index(item[1], "an edge's dst", -1, &dst) < 0
            || as_latency(item[2], &g->latency[k], &g->integral[k]) < 0
            || as_index(item[3], "an edge's distance", PY_SSIZE_T_MAX, &distance) < 0;
        Py_DECREF(fields);
        if (bad)
            goto fail;
        if (src < 0 || src >= n || dst < 0 || dst >= n) {
            PyErr_Format(PyExc_ValueError, "edge %zd: node out of range(%zd)", k, n);
            goto fail;
        }
        if (distance > MAX_DISTANCE || distance < -MAX_DISTANCE) {
            PyErr_Format(PyExc_ValueError, "edge %zd: distance out of range", k);
            goto fail;
        }
        g->src[k] = src;
        g->dst[k] = dst;
        g->distance[k] = (long)distance;
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    graph_free(g);
    return -1;
}

/* The distance-0 in-edges of each node, in edge order (Graph.in_edges() filtered), as a
   compressed row: node i's are edge[first[i]] .. edge[first[i + 1] - 1]. Edges touching an
   excluded node (excluded may be NULL) are left out. */
typedef struct {
    Py_ssize_t *first;            /* n + 1 */
    Py_ssize_t *edge;             /* up to count */
    Py_ssize_t *fill;             /* n: room to build them */
} InEdges;

static void
zero_in_edges(const Graph *g, const unsigned char *excluded, InEdges *in)
{
    Py_ssize_t n = g->n;
    memset(in->first, 0, (size_t)(n + 1) * sizeof *in->first);
    for (Py_ssize_t k = 0; k < g->count; k++)
        if (g->distance[k] == 0 && !(excluded && (excluded[g->src[k]] || excluded[g->dst[k]])))
            in->first[g->dst[k] + 1]++;
    for (Py_ssize_t i = 0; i < n; i++) {
        in->first[i + 1] += in->first[i];
        in->fill[i] = in->first[i];
    }
    for (Py_ssize_t k = 0; k < g->count; k++)
        if (g->distance[k] == 0 && !(excluded && (excluded[g->src[k]] || excluded[g->dst[k]])))
            in->edge[in->fill[g->dst[k]]++] = k;
}


/* --- growable arrays of indices (a cycle's nodes and edges) -------------------------------- */

typedef struct {
    Py_ssize_t *item;
    Py_ssize_t size, capacity;
} Indices;

static int
push(Indices *a, Py_ssize_t value)
{
    if (a->size == a->capacity) {
        Py_ssize_t capacity = a->capacity ? 2 * a->capacity : 16;
        Py_ssize_t *item = PyMem_Realloc(a->item, (size_t)capacity * sizeof *item);
        if (item == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        a->item = item;
        a->capacity = capacity;
    }
    a->item[a->size++] = value;
    return 0;
}

static PyObject *
indices_tuple(const Indices *a)
{
    PyObject *t = PyTuple_New(a->size);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < a->size; k++) {
        PyObject *v = PyLong_FromSsize_t(a->item[k]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}


/* --- the loop-carried bound ---------------------------------------------------------------- */

/* deps._forward_longest: longest distance-0 paths from `start` (program order is a
   topological order); pred[i] is the edge index of the last improvement, -1 for none. */
static void
forward_longest(const Graph *g, const InEdges *in, Py_ssize_t start, double *dist,
                Py_ssize_t *pred)
{
    for (Py_ssize_t i = 0; i < g->n; i++) {
        dist[i] = NEG;
        pred[i] = -1;
    }
    dist[start] = 0.0;
    for (Py_ssize_t i = start + 1; i < g->n; i++)
        for (Py_ssize_t p = in->first[i]; p < in->first[i + 1]; p++) {
            Py_ssize_t k = in->edge[p];
            double from = dist[g->src[k]];
            if (from != NEG && from + g->latency[k] > dist[i]) {
                dist[i] = from + g->latency[k];
                pred[i] = k;
            }
        }
}

/* Room for the search over m heads: the dense matrices and Karp's walks. */
typedef struct {
    Py_ssize_t m;
    double *weight;               /* m x m: NEG where no path */
    double *walks;                /* (m + 1) x m */
    double *potential;            /* m */
    Py_ssize_t *choice;           /* m x m: the carried edge ending weight's path */
    Py_ssize_t *cycle;            /* m */
    Py_ssize_t *seen;             /* m */
    unsigned char *tight;         /* m x m */
    unsigned char *alive;         /* m */
} Heads;

static void
heads_free(Heads *h)
{
    PyMem_Free(h->weight);
    PyMem_Free(h->choice);
    PyMem_Free(h->tight);
    memset(h, 0, sizeof *h);
}

static int
heads_new(Heads *h, Py_ssize_t m)
{
    memset(h, 0, sizeof *h);
    if (m > PY_SSIZE_T_MAX / 2 / (m + 3)) {      /* 2 m (m + 1) doubles, at most */
        PyErr_NoMemory();
        return -1;
    }
    h->m = m;
    Py_ssize_t square = m * m;
    h->weight = new_array(square + (m + 1) * m + m, sizeof(double));
    h->choice = new_array(square + 2 * m, sizeof(Py_ssize_t));
    h->tight = new_array(square + m, 1);
    if (!h->weight || !h->choice || !h->tight) {
        heads_free(h);
        return -1;
    }
    h->walks = h->weight + square;
    h->potential = h->walks + (m + 1) * m;
    h->cycle = h->choice + square;
    h->seen = h->cycle + m;
    h->alive = h->tight + square;
    return 0;
}

/* deps._tight_cycle: a cycle of mean `mean` (the maximum) among the edges that are tight
   under the potentials of longest paths with weights w - mean; its head positions go to
   h->cycle[0 .. *length - 1]. */
static int
tight_cycle(Heads *h, double mean, Py_ssize_t *length)
{
    Py_ssize_t m = h->m;
    const double *weight = h->weight;
    double *pot = h->potential;
    unsigned char *tight = h->tight, *alive = h->alive;

    double largest = 0.0;         /* max(abs(w) ...) with default=0: the first, then any > */
    int any = 0;
    for (Py_ssize_t k = 0; k < m * m; k++)
        if (weight[k] != NEG && (!any || fabs(weight[k]) > largest)) {
            largest = fabs(weight[k]);
            any = 1;
        }
    double scale = 1.0 + fabs(mean) + largest;

    for (Py_ssize_t u = 0; u < m; u++)
        pot[u] = 0.0;
    for (Py_ssize_t pass = 0; pass < m; pass++) {
        int changed = 0;
        for (Py_ssize_t u = 0; u < m; u++)
            for (Py_ssize_t v = 0; v < m; v++) {
                double w = weight[u * m + v];
                if (w != NEG && pot[u] + w - mean > pot[v] + TOL * scale) {
                    pot[v] = pot[u] + w - mean;
                    changed = 1;
                }
            }
        if (!changed)
            break;
    }
    for (Py_ssize_t u = 0; u < m; u++)
        for (Py_ssize_t v = 0; v < m; v++) {
            double w = weight[u * m + v];
            tight[u * m + v] = w != NEG && fabs(pot[u] + w - mean - pot[v]) <= TIGHT * scale;
        }

    /* the heads that can keep walking on tight edges (the fixpoint does not depend on the
       order of removals) */
    for (Py_ssize_t u = 0; u < m; u++)
        alive[u] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (Py_ssize_t u = 0; u < m; u++) {
            if (!alive[u])
                continue;
            int onward = 0;
            for (Py_ssize_t v = 0; v < m && !onward; v++)
                onward = tight[u * m + v] && alive[v];
            if (!onward) {
                alive[u] = 0;
                changed = 1;
            }
        }
    }
    Py_ssize_t u = 0;
    while (u < m && !alive[u])
        u++;
    if (u == m) {
        PyErr_SetString(PyExc_ValueError, "no tight cycle: are the latencies finite numbers?");
        return -1;
    }
    /* walk from the lowest living head, always to the lowest living tight successor, until
       one repeats */
    Py_ssize_t *cycle = h->cycle, *seen = h->seen;
    for (Py_ssize_t v = 0; v < m; v++)
        seen[v] = -1;
    Py_ssize_t steps = 0;
    while (seen[u] < 0) {
        seen[u] = steps;
        cycle[steps++] = u;
        Py_ssize_t v = 0;
        while (!(tight[u * m + v] && alive[v]))
            v++;
        u = v;
    }
    *length = steps - seen[u];
    memmove(cycle, cycle + seen[u], (size_t)*length * sizeof *cycle);
    return 0;
}

/* deps._max_cycle_mean: Karp's maximum cycle mean of h->weight and a cycle attaining it (in
   h->cycle). 1: found, 0: no cycle, -1: error. */
static int
max_cycle_mean(Heads *h, Py_ssize_t *length)
{
    Py_ssize_t m = h->m;
    const double *weight = h->weight;
    if (m == 1) {                 /* one head: its only cycle is its loop (most loops' case) */
        if (weight[0] == NEG)
            return 0;
        h->cycle[0] = 0;
        *length = 1;
        return 1;
    }
    /* walks[k * m + v]: the heaviest walk of exactly k edges ending at v (from any start) */
    double *walks = h->walks;
    for (Py_ssize_t v = 0; v < m; v++)
        walks[v] = 0.0;
    for (Py_ssize_t k = 1; k <= m; k++) {
        const double *prev = walks + (k - 1) * m;
        double *row = walks + k * m;
        for (Py_ssize_t v = 0; v < m; v++)
            row[v] = NEG;
        for (Py_ssize_t u = 0; u < m; u++) {
            if (prev[u] == NEG)
                continue;
            const double *wu = weight + u * m;
            for (Py_ssize_t v = 0; v < m; v++)
                if (wu[v] != NEG && prev[u] + wu[v] > row[v])
                    row[v] = prev[u] + wu[v];
        }
    }
    const double *last = walks + m * m;
    double best = NEG;
    for (Py_ssize_t v = 0; v < m; v++) {
        if (last[v] == NEG)
            continue;
        double worst = 0.0;       /* min(...): the first, then any smaller (k = 0 always counts) */
        int any = 0;
        for (Py_ssize_t k = 0; k < m; k++) {
            double at = walks[k * m + v];
            if (at == NEG)
                continue;
            double mean = (last[v] - at) / (double)(m - k);
            if (!any || mean < worst) {
                worst = mean;
                any = 1;
            }
        }
        if (worst > best)         /* max(best, worst) */
            best = worst;
    }
    if (best == NEG)
        return 0;
    return tight_cycle(h, best, length) < 0 ? -1 : 1;
}

/* sum(e.latency for e in segment) + carried.latency as Python computes it: the segment's
   ints summed exactly, then its floats added one by one (Python 3.12 on: with Neumaier's
   compensation, as its sum() does). The segment is path[count - 1], ..., path[0]. */
static double
segment_latency(const Graph *g, const Py_ssize_t *path, Py_ssize_t count, Py_ssize_t carried)
{
    double ints = 0.0, sum = 0.0;
    int floating = 0;
#if PY_VERSION_HEX >= 0x030C0000
    double compensation = 0.0;
#endif
    for (Py_ssize_t p = count - 1; p >= 0; p--) {
        Py_ssize_t k = path[p];
        double x = g->latency[k];
        if (!floating) {
            if (g->integral[k])
                ints += x;
            else {
                sum = ints + x;
                floating = 1;
            }
            continue;
        }
#if PY_VERSION_HEX >= 0x030C0000
        if (g->integral[k]) {
            sum += x;
            continue;
        }
        double t = sum + x;
        if (fabs(sum) >= fabs(x))
            compensation += (sum - t) + x;
        else
            compensation += (x - t) + sum;
        sum = t;
#else
        sum += x;
#endif
    }
    if (!floating)
        sum = ints;
#if PY_VERSION_HEX >= 0x030C0000
    else if (compensation != 0.0 && isfinite(compensation))
        sum += compensation;
#endif
    return sum + g->latency[carried];
}


/* Room for one search over a graph of n nodes and `count` edges, reused from chain to chain. */
typedef struct {
    InEdges in;
    Py_ssize_t *carried;          /* count */
    Py_ssize_t *heads;            /* n */
    Py_ssize_t *position;         /* n: a node's position among the heads, -1: none */
    Py_ssize_t *pred;             /* n */
    Py_ssize_t *segment;          /* n */
    double *dist;                 /* n */
} Work;

static void
work_free(Work *w)
{
    PyMem_Free(w->in.first);
    PyMem_Free(w->dist);
    memset(w, 0, sizeof *w);
}

static int
work_new(Work *w, const Graph *g)
{
    Py_ssize_t n = g->n, count = g->count;
    memset(w, 0, sizeof *w);
    if (n > (PY_SSIZE_T_MAX - 2 * count - 1) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *block = new_array(6 * n + 1 + 2 * count, sizeof *block);
    w->dist = new_array(n, sizeof *w->dist);
    if (block == NULL || w->dist == NULL) {
        PyMem_Free(block);
        PyMem_Free(w->dist);
        w->dist = NULL;
        return -1;
    }
    w->in.first = block;
    w->in.fill = w->in.first + n + 1;
    w->heads = w->in.fill + n;
    w->position = w->heads + n;
    w->pred = w->position + n;
    w->segment = w->pred + n;
    w->in.edge = w->segment + n;
    w->carried = w->in.edge + count;
    return 0;
}

typedef struct {
    double ratio, latency;
    long long iterations;
    Indices nodes, edges;
} Cycle;

/* deps.loop_carried_cycles: the cycle of largest ratio among the edges between nodes not
   excluded. 1: found (out filled), 0: no cycle, -1: error. */
static int
worst_cycle(const Graph *g, const unsigned char *excluded, Work *w, Cycle *out)
{
    Py_ssize_t n = g->n;
    Py_ssize_t ncarried = 0;
    for (Py_ssize_t k = 0; k < g->count; k++)
        if (g->distance[k] > 0 && !excluded[g->src[k]] && !excluded[g->dst[k]])
            w->carried[ncarried++] = k;
    if (ncarried == 0)
        return 0;
    zero_in_edges(g, excluded, &w->in);
    /* the heads of the carried edges, ascending, and each one's position among them */
    for (Py_ssize_t i = 0; i < n; i++)
        w->position[i] = -1;
    for (Py_ssize_t c = 0; c < ncarried; c++)
        w->position[g->dst[w->carried[c]]] = 0;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (w->position[i] == 0) {
            w->position[i] = m;
            w->heads[m++] = i;
        }
    Heads h;
    if (heads_new(&h, m) < 0)
        return -1;
    /* weight[a * m + b]: the longest path from head a through one iteration, ending in a
       carried edge into head b (choice: that carried edge) */
    for (Py_ssize_t k = 0; k < m * m; k++) {
        h.weight[k] = NEG;
        h.choice[k] = -1;
    }
    for (Py_ssize_t a = 0; a < m; a++) {
        forward_longest(g, &w->in, w->heads[a], w->dist, w->pred);
        for (Py_ssize_t c = 0; c < ncarried; c++) {
            Py_ssize_t k = w->carried[c];
            if (w->dist[g->src[k]] == NEG)
                continue;
            double weight = w->dist[g->src[k]] + g->latency[k];
            Py_ssize_t at = a * m + w->position[g->dst[k]];
            if (weight > h.weight[at]) {
                h.weight[at] = weight;
                h.choice[at] = k;
            }
        }
    }
    Py_ssize_t length = 0;
    int status = max_cycle_mean(&h, &length);
    if (status <= 0)
        goto done;
    status = -1;
    /* the cycle's nodes and edges: from each head on it, the distance-0 path to the source
       of the carried edge to the next head, then that edge */
    double total = 0.0;
    long long iterations = 0;
    for (Py_ssize_t c = 0; c < length; c++) {
        Py_ssize_t a = h.cycle[c], s = w->heads[a];
        Py_ssize_t edge = h.choice[a * m + h.cycle[(c + 1) % length]];
        forward_longest(g, &w->in, s, w->dist, w->pred);
        Py_ssize_t steps = 0;
        for (Py_ssize_t j = g->src[edge]; j != s; j = g->src[w->pred[j]]) {
            /* only a distance-0 edge from a node to itself makes this a loop (the Python
               would walk it forever) */
            if (steps == n || w->pred[j] < 0) {
                PyErr_SetString(PyExc_ValueError,
                                "a distance-0 edge from a node to itself makes a cycle");
                goto done;
            }
            w->segment[steps++] = w->pred[j];
        }
        if (push(&out->nodes, s) < 0)
            goto done;
        for (Py_ssize_t p = steps - 1; p >= 0; p--)
            if (push(&out->nodes, g->dst[w->segment[p]]) < 0
                    || push(&out->edges, w->segment[p]) < 0)
                goto done;
        if (push(&out->edges, edge) < 0)
            goto done;
        total += segment_latency(g, w->segment, steps, edge);
        iterations += g->distance[edge];
    }
    out->latency = total;
    out->iterations = iterations;
    out->ratio = total / (double)iterations;
    status = 1;
done:
    heads_free(&h);
    return status;
}

static PyObject *
cycle_tuple(const Cycle *c)
{
    PyObject *ratio = PyFloat_FromDouble(c->ratio);
    PyObject *latency = PyFloat_FromDouble(c->latency);
    PyObject *iterations = PyLong_FromLongLong(c->iterations);
    PyObject *nodes = indices_tuple(&c->nodes);
    PyObject *edges = indices_tuple(&c->edges);
    PyObject *t = NULL;
    if (ratio && latency && iterations && nodes && edges)
        t = PyTuple_Pack(5, ratio, latency, iterations, nodes, edges);
    Py_XDECREF(ratio);
    Py_XDECREF(latency);
    Py_XDECREF(iterations);
    Py_XDECREF(nodes);
    Py_XDECREF(edges);
    return t;
}

PyDoc_STRVAR(cycles_doc,
"cycles(n, edges, exclude, limit, positive_only) -> list\n\n"
"The worst loop-carried dependency cycle among nodes not in `exclude` (an iterable of ints),\n"
"then the worst among the nodes on no cycle found so far, and so on, at most `limit`; with\n"
"`positive_only`, the search stops at a cycle of ratio <= 0 without reporting it\n"
"(deps.loop_carried_chains; deps.loop_carried_cycles is limit 1, positive_only False).\n"
"`edges`: a sequence of (src, dst, latency, distance), in graph.edges order. Each cycle is\n"
"(ratio, latency, iterations, nodes, edge_indices): node indices in cycle order, edge\n"
"indices into `edges`.");

static PyObject *
chains_cycles(PyObject *self, PyObject *args)
{
    Py_ssize_t n, limit;
    PyObject *rows, *exclude;
    int positive_only;
    if (!PyArg_ParseTuple(args, "nOOnp:cycles", &n, &rows, &exclude, &limit, &positive_only))
        return NULL;
    Graph g;
    if (parse_graph(n, rows, &g) < 0)
        return NULL;
    PyObject *result = NULL, *iter = NULL, *item;
    Work w;
    memset(&w, 0, sizeof w);
    unsigned char *excluded = NULL;
    /* without a carried edge there is no cycle: no room to make for the n nodes */
    int carried = 0;
    for (Py_ssize_t k = 0; k < g.count && !carried; k++)
        carried = g.distance[k] > 0;
    if (!carried || limit <= 0) {
        result = PyList_New(0);
        goto done;
    }
    excluded = new_array(n, 1);
    if (excluded == NULL || work_new(&w, &g) < 0)
        goto done;
    memset(excluded, 0, (size_t)n);
    iter = PyObject_GetIter(exclude);
    if (iter == NULL)
        goto done;
    while ((item = PyIter_Next(iter)) != NULL) {
        Py_ssize_t node;
        int bad = as_index(item, "an excluded node", -1, &node) < 0;
        Py_DECREF(item);
        if (bad)
            goto done;
        if (node >= 0 && node < n)         /* others are on no edge: nothing to leave out */
            excluded[node] = 1;
    }
    if (PyErr_Occurred())
        goto done;
    result = PyList_New(0);
    if (result == NULL)
        goto done;
    while (PyList_GET_SIZE(result) < limit) {
        Cycle c;
        memset(&c, 0, sizeof c);
        int found = worst_cycle(&g, excluded, &w, &c);
        PyObject *entry = NULL;
        if (found == 1 && !(positive_only && c.ratio <= 0)) {
            entry = cycle_tuple(&c);
            for (Py_ssize_t k = 0; k < c.nodes.size; k++)
                excluded[c.nodes.item[k]] = 1;
        }
        PyMem_Free(c.nodes.item);
        PyMem_Free(c.edges.item);
        if (found < 0 || (entry == NULL && PyErr_Occurred()))
            goto fail;
        if (entry == NULL)        /* no cycle left, or (positive_only) one that costs nothing */
            break;
        int appended = PyList_Append(result, entry);
        Py_DECREF(entry);
        if (appended < 0)
            goto fail;
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_XDECREF(iter);
    PyMem_Free(excluded);
    work_free(&w);
    graph_free(&g);
    return result;
}


/* --- the critical path of one iteration ---------------------------------------------------- */

PyDoc_STRVAR(critical_path_doc,
"critical_path(n, edges, node_latency) -> (length, nodes)\n\n"
"deps.critical_path: the longest path through one iteration (distance-0 edges), a node\n"
"without a producer finishing node_latency[i] after the start. `edges` as for cycles();\n"
"`nodes` in path order. The length is an int where Python's would be (all ints on it).");

static PyObject *
chains_critical_path(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    PyObject *rows, *latencies;
    if (!PyArg_ParseTuple(args, "nOO:critical_path", &n, &rows, &latencies))
        return NULL;
    Graph g;
    if (parse_graph(n, rows, &g) < 0)
        return NULL;
    if (n == 0) {
        graph_free(&g);
        return Py_BuildValue("(d())", 0.0);
    }
    PyObject *result = NULL, *seq = NULL;
    Work w;
    memset(&w, 0, sizeof w);
    double *finish = NULL;
    unsigned char *integral = NULL;
    seq = PySequence_Fast(latencies, "node_latency must be a sequence");
    if (seq == NULL)
        goto done;
    if (PySequence_Fast_GET_SIZE(seq) < n) {
        PyErr_SetString(PyExc_ValueError, "node_latency has fewer than n entries");
        goto done;
    }
    integral = new_array(n, 1);
    if (integral == NULL || work_new(&w, &g) < 0)
        goto done;
    finish = w.dist;
    Py_ssize_t *via = w.pred;
    zero_in_edges(&g, NULL, &w.in);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (as_latency(PySequence_Fast_GET_ITEM(seq, i), &finish[i], &integral[i]) < 0)
            goto done;
        via[i] = -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        for (Py_ssize_t p = w.in.first[i]; p < w.in.first[i + 1]; p++) {
            Py_ssize_t k = w.in.edge[p], s = g.src[k];
            if (finish[s] + g.latency[k] > finish[i] + TOL * (1.0 + finish[i])) {
                finish[i] = finish[s] + g.latency[k];
                integral[i] = integral[s] && g.integral[k];
                via[i] = s;
            }
        }
    /* max(range(n), key=lambda i: (finish[i], -i)): the first of the longest */
    Py_ssize_t end = 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (finish[i] > finish[end])
            end = i;
    Py_ssize_t count = 1;
    for (Py_ssize_t j = end; via[j] >= 0; j = via[j])
        if (++count > n) {        /* edges against program order can make a loop */
            PyErr_SetString(PyExc_ValueError, "the distance-0 edges make a cycle");
            goto done;
        }
    PyObject *nodes = PyTuple_New(count);
    if (nodes == NULL)
        goto done;
    Py_ssize_t j = end;
    for (Py_ssize_t p = count - 1; p >= 0; p--, j = via[j]) {
        PyObject *v = PyLong_FromSsize_t(j);
        if (v == NULL) {
            Py_DECREF(nodes);
            goto done;
        }
        PyTuple_SET_ITEM(nodes, p, v);
    }
    PyObject *length = integral[end] ? PyLong_FromDouble(finish[end])
                                     : PyFloat_FromDouble(finish[end]);
    if (length == NULL) {
        Py_DECREF(nodes);
        goto done;
    }
    result = PyTuple_Pack(2, length, nodes);
    Py_DECREF(length);
    Py_DECREF(nodes);
done:
    Py_XDECREF(seq);
    PyMem_Free(integral);
    work_free(&w);
    graph_free(&g);
    return result;
}


static PyMethodDef chains_methods[] = {
    {"cycles", chains_cycles, METH_VARARGS, cycles_doc},
    {"critical_path", chains_critical_path, METH_VARARGS, critical_path_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef chains_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pmpredict.predict._chains",
    .m_doc = "The loop-carried chains and the critical path of pmpredict.predict.deps, in C "
             "(bit-identical to its Python).",
    .m_size = -1,
    .m_methods = chains_methods,
};

PyMODINIT_FUNC
PyInit__chains(void)
{
    return PyModule_Create(&chains_module);
}
