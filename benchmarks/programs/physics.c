/* Floating-point simulation and signal processing: n-body, FFT, polynomials, conversions. */
#include <math.h>
#include <stddef.h>

struct body { double x, y, z, vx, vy, vz, m; };

void nbody_step(struct body *b, int n, double dt) {
    for (int i = 0; i < n; i++) {
        double ax = 0, ay = 0, az = 0;
        for (int j = 0; j < n; j++) {
            if (i == j) continue;
            double dx = b[j].x - b[i].x, dy = b[j].y - b[i].y, dz = b[j].z - b[i].z;
            double r2 = dx * dx + dy * dy + dz * dz + 1e-9;
            double inv = b[j].m / (r2 * sqrt(r2));
            ax += dx * inv; ay += dy * inv; az += dz * inv;
        }
        b[i].vx += ax * dt; b[i].vy += ay * dt; b[i].vz += az * dt;
    }
    for (int i = 0; i < n; i++) { b[i].x += b[i].vx * dt; b[i].y += b[i].vy * dt; b[i].z += b[i].vz * dt; }
}

void fft(double *re, double *im, int n) {
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) { double t = re[i]; re[i] = re[j]; re[j] = t; t = im[i]; im[i] = im[j]; im[j] = t; }
    }
    for (int len = 2; len <= n; len <<= 1) {
        double ang = -2 * M_PI / len, wr = cos(ang), wi = sin(ang);
        for (int i = 0; i < n; i += len) {
            double cr = 1, ci = 0;
            for (int k = 0; k < len / 2; k++) {
                int a = i + k, b = i + k + len / 2;
                double xr = re[b] * cr - im[b] * ci, xi = re[b] * ci + im[b] * cr;
                re[b] = re[a] - xr; im[b] = im[a] - xi; re[a] += xr; im[a] += xi;
                double t = cr * wr - ci * wi; ci = cr * wi + ci * wr; cr = t;
            }
        }
    }
}

double horner(const double *c, int n, double x) {
    double y = c[n - 1];
    for (int i = n - 2; i >= 0; i--) y = y * x + c[i];
    return y;
}

float fast_exp(float x) {
    x = 1.0f + x / 256.0f;
    for (int i = 0; i < 8; i++) x *= x;
    return x;
}

void quantize(const float *in, short *out, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) {
        float v = in[i] * scale;
        out[i] = (short)(v > 32767.f ? 32767.f : v < -32768.f ? -32768.f : v);
    }
}

double mean_var(const double *x, size_t n, double *var) {
    double m = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - m;
        m += d / (double)(i + 1);
        s += d * (x[i] - m);
    }
    *var = n > 1 ? s / (double)(n - 1) : 0;
    return m;
}

void fir(const float *x, const float *h, float *y, int n, int taps) {
    for (int i = 0; i + taps <= n; i++) {
        float s = 0;
        for (int k = 0; k < taps; k++) s += x[i + k] * h[k];
        y[i] = s;
    }
}

long round_all(const double *x, long *out, size_t n) {
    long s = 0;
    for (size_t i = 0; i < n; i++) { out[i] = lround(x[i]); s += out[i]; }
    return s;
}
