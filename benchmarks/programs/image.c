/* 8-bit image processing: conversions, filters, histograms (integer and SIMD-friendly). */
#include <stddef.h>
#include <stdint.h>

void rgb_to_gray(const uint8_t *rgb, uint8_t *gray, size_t n) {
    for (size_t i = 0; i < n; i++)
        gray[i] = (uint8_t)((77 * rgb[3 * i] + 150 * rgb[3 * i + 1] + 29 * rgb[3 * i + 2]) >> 8);
}

void box_blur(const uint8_t *in, uint8_t *out, int w, int h) {
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            int s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) s += in[(y + dy) * w + x + dx];
            out[y * w + x] = (uint8_t)(s / 9);
        }
}

void histogram(const uint8_t *img, size_t n, uint32_t hist[256]) {
    for (size_t i = 0; i < n; i++) hist[img[i]]++;
}

void threshold(uint8_t *img, size_t n, uint8_t t) {
    for (size_t i = 0; i < n; i++) img[i] = img[i] > t ? 255 : 0;
}

void blend(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t n, uint16_t alpha) {
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((a[i] * alpha + b[i] * (256 - alpha)) >> 8);
}

static inline uint8_t clamp(int v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; }

void brightness(uint8_t *img, size_t n, int delta) {
    for (size_t i = 0; i < n; i++) img[i] = clamp(img[i] + delta);
}

void transpose(const uint32_t *in, uint32_t *out, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) out[x * h + y] = in[y * w + x];
}

void to_float(const uint8_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = in[i] * (1.0f / 255.0f);
}

void sobel(const uint8_t *in, int16_t *out, int w, int h) {
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            const uint8_t *p = in + y * w + x;
            int gx = -p[-w - 1] - 2 * p[-1] - p[w - 1] + p[-w + 1] + 2 * p[1] + p[w + 1];
            int gy = -p[-w - 1] - 2 * p[-w] - p[-w + 1] + p[w - 1] + 2 * p[w] + p[w + 1];
            out[y * w + x] = (int16_t)((gx < 0 ? -gx : gx) + (gy < 0 ? -gy : gy));
        }
}

uint64_t sad(const uint8_t *a, const uint8_t *b, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    return s;
}
