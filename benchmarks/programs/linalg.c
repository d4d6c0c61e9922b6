/* Dense numerical kernels in double and float: BLAS-like loops, a stencil, a factorisation. */
#include <math.h>
#include <stddef.h>

double dot(const double *x, const double *y, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

void axpy(float a, const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

void gemm(size_t n, const double *a, const double *b, double *c) {
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (size_t j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
        }
}

void gemv(size_t m, size_t n, const float *a, const float *x, float *y) {
    for (size_t i = 0; i < m; i++) {
        float s = 0;
        for (size_t j = 0; j < n; j++) s += a[i * n + j] * x[j];
        y[i] = s;
    }
}

void jacobi(size_t n, const float *in, float *out) {
    for (size_t i = 1; i + 1 < n; i++)
        for (size_t j = 1; j + 1 < n; j++)
            out[i * n + j] = 0.25f * (in[(i - 1) * n + j] + in[(i + 1) * n + j]
                                      + in[i * n + j - 1] + in[i * n + j + 1]);
}

double norm2(const double *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

int lu(size_t n, double *a) {
    for (size_t k = 0; k < n; k++) {
        double p = a[k * n + k];
        if (fabs(p) < 1e-300) return -1;
        for (size_t i = k + 1; i < n; i++) {
            double l = a[i * n + k] /= p;
            for (size_t j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
        }
    }
    return 0;
}

void minmax(const float *x, size_t n, float *lo, float *hi) {
    float a = x[0], b = x[0];
    for (size_t i = 1; i < n; i++) { a = x[i] < a ? x[i] : a; b = x[i] > b ? x[i] : b; }
    *lo = a; *hi = b;
}

void scale_int(const int *x, double *y, size_t n, double f) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] * f;
}

long sum_long(const int *x, size_t n) {
    long s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

void triad(double *a, const double *b, const double *c, double s, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
