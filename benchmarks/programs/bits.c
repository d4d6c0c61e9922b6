/* Bit manipulation and encodings: CRC, base64, UTF-8, random numbers, hex. */
#include <stddef.h>
#include <stdint.h>

static uint32_t crc_table[256];

void crc32_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

int popcount64(uint64_t x) {
    int n = 0;
    while (x) { x &= x - 1; n++; }
    return n;
}

uint32_t reverse_bits(uint32_t x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encode(const uint8_t *in, size_t n, char *out) {
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18]; out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63]; out[o++] = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64[v >> 18]; out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

int utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n) return 0;
        for (int k = 1; k < len; k++) if ((s[i + k] & 0xc0) != 0x80) return 0;
        i += len;
    }
    return 1;
}

uint64_t xorshift_fill(uint64_t *out, size_t n, uint64_t s) {
    for (size_t i = 0; i < n; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; out[i] = s; }
    return s;
}

int parse_hex(const char *s, uint64_t *out) {
    uint64_t v = 0;
    for (; *s; s++) {
        int d = *s >= '0' && *s <= '9' ? *s - '0' : (*s | 32) >= 'a' && (*s | 32) <= 'f'
                ? (*s | 32) - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

unsigned leading_zeros(uint64_t x) { return x ? (unsigned)__builtin_clzll(x) : 64; }

uint32_t rotl_mix(const uint32_t *v, size_t n) {
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) h = ((h << 5) | (h >> 27)) ^ v[i];
    return h;
}
