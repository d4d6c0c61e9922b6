/* simulation_arrays' run_schedule, slack_pass and steady_step in C: the same machine, the
 * same arithmetic in the same order (IEEE doubles, no contraction: built with
 * -ffp-contract=off), so a run is identical to the plain Python one (tests/test_schedule.py
 * checks that). Built by the package's install as pmpredict.predict._simcore; where it could
 * not be built the numba engine stands in (simulation_native.available()).
 *
 * Why C and not only numba: numba costs ~0.8 s to import and load its cached code in every
 * process, more than predicting 2,000 blocks takes; this module loads in a millisecond.
 *
 * Arrays come as buffers (array.array, memoryview, numpy): doubles ('d') and 64-bit ints
 * ('q'), laid out as simulation_arrays' docstring says; the ports' records 32-bit ints ('i'). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ISSUE_DELAY 1.0
#define RETIRE_DELAY 1.0
#define BY_FRONT_END 0
#define BY_WINDOW 1
#define OUT_OF_CAPACITY (-1)
#define CHECK_EVERY 24
#define SKIP_EVEN ((int64_t)1 << 60)
#define SKIP_ODD ((int64_t)1 << 61)
#define PORT_BITS (SKIP_EVEN - 1)

static double periodic_step(const double *ends, int64_t stride, int64_t offset, int64_t first,
                            int64_t last)
{
    int64_t m = last - first;
    for (int64_t p = 1; p <= m / 4; p++) {
        int64_t span = 3 * p > 24 ? 3 * p : 24;
        if (span + p > m)
            break;
        double step = ends[offset + (last - 1) * stride] - ends[offset + (last - 1 - p) * stride];
        int ok = 1;
        for (int64_t j = last - span; j < last; j++) {
            double d = ends[offset + j * stride] - ends[offset + (j - p) * stride];
            if (fabs(d - step) > 1e-9 * (1 + fabs(step))) {
                ok = 0;
                break;
            }
        }
        if (ok)
            return step / (double)p;
    }
    return NAN;
}

static double steady_step(const double *ends, int64_t stride, int64_t offset, int64_t first,
                          int64_t last)
{
    if (last - first < 2)
        return 0.0;
    double step = periodic_step(ends, stride, offset, first, last);
    if (isnan(step))
        return (ends[offset + (last - 1) * stride] - ends[offset + first * stride])
               / (double)(last - 1 - first);
    return step;
}

/* the ports' occupied cycles as 32-bit ints: a cycle number fits (the capacity is checked),
 * and a long kernel's run needs half the memory */
static int64_t first_free(int32_t *free_, int64_t base, int64_t cycle)
{
    int64_t c = cycle;
    while (free_[base + c] != 0)
        c = free_[base + c] - 1;
    int64_t top = c;
    c = cycle;
    while (free_[base + c] != 0) {
        int64_t nxt = free_[base + c] - 1;
        free_[base + c] = (int32_t)(top + 1);
        c = nxt;
    }
    return top;
}

typedef struct {
    const double *latency;
    const int64_t *uop_off, *uop_mask, *edge_off, *edge_src, *edge_dist;
    const double *edge_w;
    const int64_t *slots;
    const double *share;
    int64_t n, n_ports;
} Body;

/* dispatch, issue, ready_at and the two whys may be NULL: not kept (a lean run) */
typedef struct {
    double *dispatch, *issue, *ready_at, *result, *retire;
    int64_t *why_dispatch, *why_ready;
} Records;

static int64_t run_schedule(const Body *b, double width, int64_t window, double taken_branch,
                            int64_t ideal_ports, int64_t iterations, int fixed,
                            int64_t first_check, int32_t *free_, int64_t capacity, int64_t *load,
                            Records *r)
{
    int64_t n = b->n;
    double cur = 0.0, used = 0.0, rcur = 0.0, rused = 0.0;
    double first_of_prev = -INFINITY;
    int64_t check = fixed ? iterations : first_check;
    for (int64_t k = 0; k < iterations; k++) {
        if (k == check) {
            double step = periodic_step(r->retire, n, n - 1, k / 2, k);
            if (!isnan(step))
                return k;
            check += CHECK_EVERY;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t t = k * n + i;
            int64_t why = BY_FRONT_END;
            int64_t slot = b->slots[i];
            if (slot && used + (double)slot > width + 1e-9) {
                cur = cur + 1;
                used = 0.0;
            }
            double d = cur;
            if (i == 0 && taken_branch > 0 && first_of_prev + taken_branch > d)
                d = first_of_prev + taken_branch;
            if (window > 0 && t >= window && r->retire[t - window] + 1 > d) {
                d = r->retire[t - window] + 1;
                why = BY_WINDOW;
            }
            if (d > cur) {
                cur = d;
                used = 0.0;
            }
            used += (double)slot;
            if (i == 0)
                first_of_prev = d;
            if (r->dispatch)
                r->dispatch[t] = d;
            if (r->why_dispatch)
                r->why_dispatch[t] = why;
            double lat = b->latency[i];
            double ready = d + ISSUE_DELAY + lat;
            int64_t why_r = -1;
            for (int64_t e = b->edge_off[i]; e < b->edge_off[i + 1]; e++) {
                int64_t s = t - i + b->edge_src[e] - b->edge_dist[e] * n;
                if (s >= 0 && r->result[s] + b->edge_w[e] > ready) {
                    ready = r->result[s] + b->edge_w[e];
                    why_r = s;
                }
            }
            if (r->ready_at)
                r->ready_at[t] = ready;
            if (r->why_ready)
                r->why_ready[t] = why_r;
            double earliest = ready - lat;
            int64_t c0 = (int64_t)floor(earliest + 1e-9);
            if (c0 + 1 >= capacity)
                return OUT_OF_CAPACITY;
            double first = -1.0, last = -1.0;
            for (int64_t u = b->uop_off[i]; u < b->uop_off[i + 1]; u++) {
                int64_t mask = b->uop_mask[u];
                int64_t c;
                if (mask > PORT_BITS) {
                    if (((mask & SKIP_EVEN) != 0 && k % 2 == 0)
                        || ((mask & SKIP_ODD) != 0 && k % 2 == 1))
                        continue;
                    mask &= PORT_BITS;
                }
                if (ideal_ports != 0 && (mask & ~ideal_ports) == 0) {
                    c = c0;
                } else {
                    int64_t best_c = -1, best_p = -1;
                    double best_r = 0.0;
                    int64_t m = mask;
                    int64_t p = 0;
                    while (m != 0) {
                        if (p >= b->n_ports)
                            return -2;          /* a port the body has no share for */
                        if (m & 1) {
                            c = first_free(free_, p * capacity, c0);
                            if (c + 1 >= capacity)
                                return OUT_OF_CAPACITY;
                            double ratio = b->share[p] > 0 ? (double)load[p] / b->share[p]
                                                           : INFINITY;
                            if (best_p < 0 || c < best_c || (c == best_c && ratio < best_r)) {
                                best_c = c;
                                best_r = ratio;
                                best_p = p;
                            }
                        }
                        m >>= 1;
                        p += 1;
                    }
                    c = best_c;
                    free_[best_p * capacity + c] = (int32_t)(c + 2);
                    load[best_p] += 1;
                }
                double start = (double)c >= earliest - 1e-9 ? (double)c : earliest;
                if (first < 0 || start < first)
                    first = start;
                if (start > last)
                    last = start;
            }
            double res;
            if (first >= 0) {
                double a = ready + (first - earliest);
                double bb = last + (lat < 1.0 ? lat : 1.0);
                res = bb > a ? bb : a;
                if (r->issue)
                    r->issue[t] = first;
            } else {
                res = ready;
                if (r->issue)
                    r->issue[t] = earliest;
            }
            r->result[t] = res;
            double rt = res + RETIRE_DELAY;
            if (t > 0 && r->retire[t - 1] > rt)
                rt = r->retire[t - 1];
            rt = ceil(rt - 1e-9);
            if (rt > rcur) {
                rcur = rt;
                rused = 0.0;
            } else if (slot && rused + (double)slot > width + 1e-9) {
                rcur = rcur + 1;
                rused = 0.0;
            }
            rused += (double)slot;
            r->retire[t] = rcur;
        }
    }
    return iterations;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int slack_pass(const Body *b, int64_t iterations, int64_t window, const double *result,
                      const double *retire, int64_t measured_from, double *late_result,
                      double *late_retire, double *late_dispatch, double *slack)
{
    /* the measured instances only (latest times flow to earlier instances alone): instance t
     * at u = t - start of the late arrays */
    int64_t n = b->n, total = n * iterations;
    int64_t start = measured_from * n;
    late_retire[total - 1 - start] = retire[total - 1];
    for (int64_t t = total - 1; t >= start; t--) {
        int64_t i = t % n, u = t - start;
        if (t + 1 < total) {
            if (late_retire[u + 1] < late_retire[u])
                late_retire[u] = late_retire[u + 1];
            if (late_dispatch[u + 1] < late_dispatch[u])
                late_dispatch[u] = late_dispatch[u + 1];
        }
        if (window > 0 && t + window < total && late_dispatch[u + window] - 1 < late_retire[u])
            late_retire[u] = late_dispatch[u + window] - 1;
        if (late_retire[u] - RETIRE_DELAY < late_result[u])
            late_result[u] = late_retire[u] - RETIRE_DELAY;
        double x = late_result[u] - b->latency[i] - ISSUE_DELAY;
        if (x < late_dispatch[u])
            late_dispatch[u] = x;
        for (int64_t e = b->edge_off[i]; e < b->edge_off[i + 1]; e++) {
            int64_t s = t - i + b->edge_src[e] - b->edge_dist[e] * n;
            if (s >= start && late_result[u] - b->edge_w[e] < late_result[s - start])
                late_result[s - start] = late_result[u] - b->edge_w[e];
        }
    }
    int64_t most = iterations - measured_from + 1;
    double *values = malloc(sizeof(double) * (size_t)(most > 0 ? most : 1));
    if (values == NULL)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t count = 0;
        for (int64_t t = start + i; t < total; t += n)
            values[count++] = late_result[t - start] - result[t];
        if (count > 0) {
            qsort(values, (size_t)count, sizeof(double), compare_doubles);
            double v = values[count / 2];
            slack[i] = v > 0.0 ? v : 0.0;
        } else {
            slack[i] = 0.0;
        }
    }
    free(values);
    return 0;
}

/* ---- the Python side: buffers in, numbers out ---- */

typedef struct {
    Py_buffer views[24];
    int count;
} Held;

static void release(Held *h)
{
    for (int k = 0; k < h->count; k++)
        PyBuffer_Release(&h->views[k]);
    h->count = 0;
}

/* a buffer of `itemsize`-byte items ('d' or 'q'), writable when asked */
static void *take(Held *h, PyObject *obj, char kind, int writable, Py_ssize_t *len);

/* a record the caller may leave out: an empty buffer is NULL, not written */
static int take_optional(Held *h, PyObject *obj, char kind, Py_ssize_t need, void **out)
{
    Py_ssize_t len;
    void *p = take(h, obj, kind, 1, &len);
    if (p == NULL)
        return -1;
    if (len != 0 && len < need) {
        PyErr_SetString(PyExc_ValueError, "_simcore: arrays shorter than the run");
        return -1;
    }
    *out = len == 0 ? NULL : p;
    return 0;
}

static void *take(Held *h, PyObject *obj, char kind, int writable, Py_ssize_t *len)
{
    Py_buffer *v = &h->views[h->count];
    if (PyObject_GetBuffer(obj, v, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS
                                    | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return NULL;
    h->count++;
    const char *fmt = v->format ? v->format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')
        fmt++;
    int ok = kind == 'i' ? v->itemsize == 4 && fmt[0] == 'i'
             : v->itemsize == 8 && (kind == 'd' ? fmt[0] == 'd' : (fmt[0] == 'q' || fmt[0] == 'l'));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "_simcore: a buffer of '%c' (%d-byte items) expected, got '%s'",
                     kind, kind == 'i' ? 4 : 8, fmt);
        return NULL;
    }
    if (len)
        *len = v->len / v->itemsize;
    return v->buf;
}

static int take_body(Held *h, PyObject *body, Body *b)
{
    if (!PyTuple_Check(body) || PyTuple_GET_SIZE(body) != 9) {
        PyErr_SetString(PyExc_TypeError, "_simcore: body must be a BodyArrays (9 arrays)");
        return -1;
    }
    Py_ssize_t n, n_ports;
    if (!(b->latency = take(h, PyTuple_GET_ITEM(body, 0), 'd', 0, &n))
        || !(b->uop_off = take(h, PyTuple_GET_ITEM(body, 1), 'q', 0, NULL))
        || !(b->uop_mask = take(h, PyTuple_GET_ITEM(body, 2), 'q', 0, NULL))
        || !(b->edge_off = take(h, PyTuple_GET_ITEM(body, 3), 'q', 0, NULL))
        || !(b->edge_src = take(h, PyTuple_GET_ITEM(body, 4), 'q', 0, NULL))
        || !(b->edge_dist = take(h, PyTuple_GET_ITEM(body, 5), 'q', 0, NULL))
        || !(b->edge_w = take(h, PyTuple_GET_ITEM(body, 6), 'd', 0, NULL))
        || !(b->slots = take(h, PyTuple_GET_ITEM(body, 7), 'q', 0, NULL))
        || !(b->share = take(h, PyTuple_GET_ITEM(body, 8), 'd', 0, &n_ports)))
        return -1;
    b->n = n;
    b->n_ports = n_ports;
    return 0;
}

static PyObject *py_run_schedule(PyObject *self, PyObject *args)
{
    PyObject *body, *free_obj, *load_obj, *records;
    double width, taken_branch;
    long long window, ideal_ports, iterations, first_check, capacity;
    int fixed;
    if (!PyArg_ParseTuple(args, "OdLdLLpLOLOO", &body, &width, &window, &taken_branch,
                          &ideal_ports, &iterations, &fixed, &first_check, &free_obj, &capacity,
                          &load_obj, &records))
        return NULL;
    Held h = {.count = 0};
    Body b;
    Records r;
    int32_t *free_;
    int64_t *load;
    Py_ssize_t n_free, n_rec, n_retire;
    if (take_body(&h, body, &b) < 0)
        goto fail;
    if (!PyTuple_Check(records) || PyTuple_GET_SIZE(records) != 7) {
        PyErr_SetString(PyExc_TypeError, "_simcore: records must be Records (7 arrays)");
        goto fail;
    }
    if (!(free_ = take(&h, free_obj, 'i', 1, &n_free)) || !(load = take(&h, load_obj, 'q', 1, NULL))
        || !(r.result = take(&h, PyTuple_GET_ITEM(records, 3), 'd', 1, &n_rec))
        || !(r.retire = take(&h, PyTuple_GET_ITEM(records, 4), 'd', 1, &n_retire)))
        goto fail;
    if (n_retire < n_rec)
        n_rec = n_retire;
    /* the others may be left out (empty): a run kept lean */
    if (take_optional(&h, PyTuple_GET_ITEM(records, 0), 'd', b.n * iterations, (void **)&r.dispatch)
        || take_optional(&h, PyTuple_GET_ITEM(records, 1), 'd', b.n * iterations, (void **)&r.issue)
        || take_optional(&h, PyTuple_GET_ITEM(records, 2), 'd', b.n * iterations, (void **)&r.ready_at)
        || take_optional(&h, PyTuple_GET_ITEM(records, 5), 'q', b.n * iterations,
                         (void **)&r.why_dispatch)
        || take_optional(&h, PyTuple_GET_ITEM(records, 6), 'q', b.n * iterations,
                         (void **)&r.why_ready))
        goto fail;
    /* every record n * iterations long at least, the ports' records n_ports * capacity */
    if (capacity > INT32_MAX - 2) {
        PyErr_SetString(PyExc_ValueError, "_simcore: a run of more than 2^31 cycles");
        goto fail;
    }
    if (n_rec < b.n * iterations || n_free < b.n_ports * capacity) {
        PyErr_SetString(PyExc_ValueError, "_simcore: arrays shorter than the run");
        goto fail;
    }
    int64_t done;
    Py_BEGIN_ALLOW_THREADS
    done = run_schedule(&b, width, window, taken_branch, ideal_ports, iterations, fixed,
                        first_check, free_, capacity, load, &r);
    Py_END_ALLOW_THREADS
    release(&h);
    if (done == -2) {
        PyErr_SetString(PyExc_ValueError, "_simcore: a uop mask names a port beyond the body's");
        return NULL;
    }
    return PyLong_FromLongLong(done);
fail:
    release(&h);
    return NULL;
}

static PyObject *py_slack_pass(PyObject *self, PyObject *args)
{
    PyObject *body, *result_obj, *retire_obj, *lr_obj, *lt_obj, *ld_obj, *slack_obj;
    long long iterations, window, measured_from;
    if (!PyArg_ParseTuple(args, "OLLOOLOOOO", &body, &iterations, &window, &result_obj,
                          &retire_obj, &measured_from, &lr_obj, &lt_obj, &ld_obj, &slack_obj))
        return NULL;
    Held h = {.count = 0};
    Body b;
    const double *result, *retire;
    double *lr, *lt, *ld, *slack;
    Py_ssize_t n_res, n_late, n_slack;
    if (take_body(&h, body, &b) < 0
        || !(result = take(&h, result_obj, 'd', 0, &n_res))
        || !(retire = take(&h, retire_obj, 'd', 0, NULL))
        || !(lr = take(&h, lr_obj, 'd', 1, &n_late)) || !(lt = take(&h, lt_obj, 'd', 1, NULL))
        || !(ld = take(&h, ld_obj, 'd', 1, NULL)) || !(slack = take(&h, slack_obj, 'd', 1, &n_slack)))
        goto fail;
    if (b.n == 0 || iterations < 1 || measured_from < 0 || measured_from >= iterations
        || n_res < b.n * iterations || n_late < b.n * (iterations - measured_from)
        || n_slack < b.n) {
        PyErr_SetString(PyExc_ValueError, "_simcore: arrays shorter than the run");
        goto fail;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = slack_pass(&b, iterations, window, result, retire, measured_from, lr, lt, ld, slack);
    Py_END_ALLOW_THREADS
    release(&h);
    if (failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
fail:
    release(&h);
    return NULL;
}

static PyObject *py_steady_step(PyObject *self, PyObject *args)
{
    PyObject *ends_obj;
    long long stride, offset, first, last;
    if (!PyArg_ParseTuple(args, "OLLLL", &ends_obj, &stride, &offset, &first, &last))
        return NULL;
    Held h = {.count = 0};
    Py_ssize_t len;
    const double *ends = take(&h, ends_obj, 'd', 0, &len);
    if (ends == NULL) {
        release(&h);
        return NULL;
    }
    if (last - first >= 2 && (offset + (last - 1) * stride >= len || offset + first * stride < 0)) {
        release(&h);
        PyErr_SetString(PyExc_ValueError, "_simcore: ends shorter than the run");
        return NULL;
    }
    double step = steady_step(ends, stride, offset, first, last);
    release(&h);
    return PyFloat_FromDouble(step);
}

/* ---- the whole simulation in one call: the body as Python sequences in, the run out ---- */

/* the body's sequences read into flat arrays (owned by the Flat, freed by drop_flat) */
typedef struct {
    Body b;
    double *latency, *edge_w, *share;
    int64_t *uop_off, *uop_mask, *edge_off, *edge_src, *edge_dist, *slots;
    double per;                 /* the capacity estimate's sum (simulation._capacity) */
} Flat;

static void drop_flat(Flat *f)
{
    free(f->latency); free(f->edge_w); free(f->share); free(f->uop_off); free(f->uop_mask);
    free(f->edge_off); free(f->edge_src); free(f->edge_dist); free(f->slots);
}

static int read_flat(PyObject *latency, PyObject *uops, PyObject *edges, PyObject *slots,
                     Py_ssize_t n_ports, PyObject *share, Flat *f)
{
    memset(f, 0, sizeof(*f));
    PyObject *lat = PySequence_Fast(latency, "latency: a sequence");
    PyObject *up = PySequence_Fast(uops, "uops: a sequence");
    PyObject *ed = PySequence_Fast(edges, "edges: a sequence");
    PyObject *sl = PySequence_Fast(slots, "slots: a sequence");
    PyObject *sh = PySequence_Fast(share, "share: a sequence");
    int ok = 0;
    if (!lat || !up || !ed || !sl || !sh)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(lat);
    if (PySequence_Fast_GET_SIZE(up) != n || PySequence_Fast_GET_SIZE(ed) != n
        || PySequence_Fast_GET_SIZE(sl) != n) {
        PyErr_SetString(PyExc_ValueError, "_simcore: latency, uops, edges and slots differ in length");
        goto done;
    }
    Py_ssize_t n_uops = 0, n_edges = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t a = PySequence_Size(PySequence_Fast_GET_ITEM(up, i));
        Py_ssize_t e = PySequence_Size(PySequence_Fast_GET_ITEM(ed, i));
        if (a < 0 || e < 0)
            goto done;
        n_uops += a;
        n_edges += e;
    }
    f->latency = malloc(sizeof(double) * (n + 1));
    f->slots = malloc(sizeof(int64_t) * (n + 1));
    f->uop_off = malloc(sizeof(int64_t) * (n + 1));
    f->edge_off = malloc(sizeof(int64_t) * (n + 1));
    f->uop_mask = malloc(sizeof(int64_t) * (n_uops + 1));
    f->edge_src = malloc(sizeof(int64_t) * (n_edges + 1));
    f->edge_dist = malloc(sizeof(int64_t) * (n_edges + 1));
    f->edge_w = malloc(sizeof(double) * (n_edges + 1));
    f->share = malloc(sizeof(double) * (n_ports + 1));
    if (!f->latency || !f->slots || !f->uop_off || !f->edge_off || !f->uop_mask || !f->edge_src
        || !f->edge_dist || !f->edge_w || !f->share) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t u = 0, k = 0;
    f->uop_off[0] = 0;
    f->edge_off[0] = 0;
    f->per = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double l = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(lat, i));
        long long slot = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sl, i));
        if (PyErr_Occurred())
            goto done;
        f->latency[i] = l;
        f->slots[i] = slot;
        PyObject *masks = PySequence_Fast(PySequence_Fast_GET_ITEM(up, i), "uops: sequences");
        if (!masks)
            goto done;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(masks);
        for (Py_ssize_t j = 0; j < m; j++)
            f->uop_mask[u++] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(masks, j));
        Py_DECREF(masks);
        f->uop_off[i + 1] = u;
        PyObject *ins = PySequence_Fast(PySequence_Fast_GET_ITEM(ed, i), "edges: sequences");
        if (!ins)
            goto done;
        double most = l;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(ins); j++) {
            PyObject *edge = PySequence_Fast_GET_ITEM(ins, j);
            if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 3) {
                Py_DECREF(ins);
                PyErr_SetString(PyExc_TypeError, "_simcore: an edge is (src, distance, weight)");
                goto done;
            }
            f->edge_src[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(edge, 0));
            f->edge_dist[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(edge, 1));
            f->edge_w[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(edge, 2));
            if (f->edge_w[k] > most)
                most = f->edge_w[k];
            if (f->edge_src[k] < 0 || f->edge_src[k] >= n || f->edge_dist[k] < 0) {
                Py_DECREF(ins);
                PyErr_SetString(PyExc_ValueError, "_simcore: an edge from outside the body");
                goto done;
            }
            k++;
        }
        Py_DECREF(ins);
        f->edge_off[i + 1] = k;
        f->per += most + (double)m + 2;
        if (PyErr_Occurred())
            goto done;
    }
    Py_ssize_t n_share = PySequence_Fast_GET_SIZE(sh);
    for (Py_ssize_t p = 0; p < n_ports; p++) {
        f->share[p] = n_share ? PyFloat_AsDouble(PySequence_Fast_GET_ITEM(sh, p < n_share ? p : 0))
                              : 1.0;
    }
    if (n_share && n_share != n_ports) {
        PyErr_SetString(PyExc_ValueError, "_simcore: a share per port");
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    f->b = (Body){f->latency, f->uop_off, f->uop_mask, f->edge_off, f->edge_src, f->edge_dist,
                  f->edge_w, f->slots, f->share, n, n_ports};
    ok = 1;
done:
    Py_XDECREF(lat); Py_XDECREF(up); Py_XDECREF(ed); Py_XDECREF(sl); Py_XDECREF(sh);
    if (!ok)
        drop_flat(f);
    return ok ? 0 : -1;
}

/* a bytearray of `count` 8-byte items, written in C and viewed as 'd' or 'q' in Python */
static PyObject *new_items(int64_t count, char **data)
{
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(count * 8));
    if (out)
        *data = PyByteArray_AS_STRING(out);
    return out;
}

/* simulate(latency, uops, edges, slots, n_ports, share, width, window, taken_branch,
 *          ideal_ports, iterations, fixed, first_check, keep, want_slack)
 * keep: 0 nothing, 1 results and retirements, 2 every record. Returns (iterations, cycles,
 * records or None, slack list or None); records: bytearrays (dispatch, issue, ready, result,
 * retire, why_dispatch, why_ready), the ones not kept None. */
static PyObject *py_simulate(PyObject *self, PyObject *args)
{
    PyObject *latency, *uops, *edges, *slots, *share;
    Py_ssize_t n_ports;
    double width, taken_branch;
    long long window, ideal_ports, iterations, first_check;
    int fixed, keep, want_slack;
    if (!PyArg_ParseTuple(args, "OOOOnOdLdLLpLip", &latency, &uops, &edges, &slots, &n_ports,
                          &share, &width, &window, &taken_branch, &ideal_ports, &iterations,
                          &fixed, &first_check, &keep, &want_slack))
        return NULL;
    if (n_ports < 1 || n_ports > 60 || iterations < 1) {
        PyErr_SetString(PyExc_ValueError, "_simcore: 1 to 60 ports and at least one iteration");
        return NULL;
    }
    Flat f;
    if (read_flat(latency, uops, edges, slots, n_ports, share, &f) < 0)
        return NULL;
    int64_t n = f.b.n, total = n * iterations;
    PyObject *keep_obj[7] = {NULL};
    double *own[7] = {NULL};               /* records not kept: scratch owned here */
    Records r;
    double **dptr[5] = {&r.dispatch, &r.issue, &r.ready_at, &r.result, &r.retire};
    int64_t **iptr[2] = {&r.why_dispatch, &r.why_ready};
    PyObject *out = NULL, *slack_list = Py_None, *records = Py_None;
    int32_t *free_ = NULL;
    int64_t *load = NULL;
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    for (int a = 0; a < 7; a++) {
        int needed = a == 3 || a == 4;                 /* results and retirements: always */
        int kept = keep == 2 || (keep == 1 && needed);
        char *data = NULL;
        if (kept) {
            keep_obj[a] = new_items(total, &data);
            if (!keep_obj[a])
                goto fail;
        } else if (needed) {
            own[a] = malloc(sizeof(double) * (size_t)(total > 0 ? total : 1));
            if (!own[a]) {
                PyErr_NoMemory();
                goto fail;
            }
            data = (char *)own[a];
        }
        if (a < 5)
            *dptr[a] = (double *)data;
        else
            *iptr[a - 5] = (int64_t *)data;
    }
    double capacity_f = 64 + (double)iterations * (f.per + taken_branch) / 4;
    int64_t capacity = (int64_t)capacity_f, done;
    load = calloc((size_t)n_ports, sizeof(int64_t));
    for (;;) {
        if (capacity > INT32_MAX - 2) {
            PyErr_SetString(PyExc_ValueError, "_simcore: a run of more than 2^31 cycles");
            goto fail;
        }
        free_ = calloc((size_t)(n_ports * capacity), sizeof(int32_t));
        if (!free_ || !load) {
            PyErr_NoMemory();
            goto fail;
        }
        Py_BEGIN_ALLOW_THREADS
        done = run_schedule(&f.b, width, window, taken_branch, ideal_ports, iterations, fixed,
                            first_check, free_, capacity, load, &r);
        Py_END_ALLOW_THREADS
        free(free_);
        free_ = NULL;
        if (done == -2) {
            PyErr_SetString(PyExc_ValueError, "_simcore: a uop mask names a port beyond the body's");
            goto fail;
        }
        if (done != OUT_OF_CAPACITY)
            break;
        capacity *= 4;
        memset(load, 0, sizeof(int64_t) * (size_t)n_ports);
    }
    int64_t half = done / 2;
    double cycles = steady_step(r.retire, n, n - 1, half, done);
    if (want_slack && n > 0) {
        int64_t late_n = n * (done - half);
        double *late = malloc(sizeof(double) * (size_t)(3 * late_n + n + 1));
        if (!late) {
            PyErr_NoMemory();
            goto fail;
        }
        for (int64_t t = 0; t < 3 * late_n; t++)
            late[t] = INFINITY;
        double *values = late + 3 * late_n;
        int failed;
        Py_BEGIN_ALLOW_THREADS
        failed = slack_pass(&f.b, done, window, r.result, r.retire, half, late, late + late_n,
                            late + 2 * late_n, values);
        Py_END_ALLOW_THREADS
        if (failed) {
            free(late);
            PyErr_NoMemory();
            goto fail;
        }
        Py_DECREF(slack_list);
        slack_list = PyList_New(n);
        for (int64_t i = 0; slack_list && i < n; i++)
            PyList_SET_ITEM(slack_list, i, PyFloat_FromDouble(values[i]));
        free(late);
        if (!slack_list)
            goto fail;
    }
    if (keep) {
        Py_DECREF(records);
        records = PyTuple_New(7);
        if (!records)
            goto fail;
        for (int a = 0; a < 7; a++) {
            PyObject *item = keep_obj[a] ? keep_obj[a] : Py_None;
            Py_INCREF(item);
            PyTuple_SET_ITEM(records, a, item);
        }
    }
    out = Py_BuildValue("(LdOO)", (long long)done, cycles, records, slack_list);
fail:
    for (int a = 0; a < 7; a++) {
        Py_XDECREF(keep_obj[a]);
        free(own[a]);
    }
    free(free_);
    free(load);
    drop_flat(&f);
    Py_XDECREF(records);
    Py_XDECREF(slack_list);
    return out;
}

static PyMethodDef methods[] = {
    {"run_schedule", py_run_schedule, METH_VARARGS,
     "run_schedule(body, width, window, taken_branch, ideal_ports, iterations, fixed, "
     "first_check, free, capacity, load, records) -> iterations simulated, or -1"},
    {"slack_pass", py_slack_pass, METH_VARARGS,
     "slack_pass(body, iterations, window, result, retire, measured_from, late_result, "
     "late_retire, late_dispatch, slack)"},
    {"simulate", py_simulate, METH_VARARGS,
     "simulate(latency, uops, edges, slots, n_ports, share, width, window, taken_branch, "
     "ideal_ports, iterations, fixed, first_check, keep, want_slack) -> (iterations, cycles, "
     "records, slack): the whole run in one call (simulation.simulate's fast path)"},
    {"steady_step", py_steady_step, METH_VARARGS,
     "steady_step(ends, stride, offset, first, last) -> cycles per iteration"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_simcore",
                                    "The simulation's passes in C (see simulation_native.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__simcore(void)
{
    return PyModule_Create(&module);
}
