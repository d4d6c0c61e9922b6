/* Strings and hashing: open addressing, FNV-1a, word counting, string scanning. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct entry { const char *key; uint32_t hash; uint32_t len; long value; };
struct map { struct entry *slots; size_t mask; size_t used; };

uint32_t fnv1a(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 16777619u; }
    return h;
}

uint64_t murmur_mix(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static struct entry *find_slot(struct map *m, const char *key, size_t len, uint32_t h) {
    size_t i = h & m->mask;
    for (;;) {
        struct entry *e = &m->slots[i];
        if (!e->key || (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0))
            return e;
        i = (i + 1) & m->mask;
    }
}

int map_grow(struct map *m) {
    size_t n = (m->mask + 1) * 2;
    struct entry *old = m->slots, *slots = calloc(n, sizeof *slots);
    if (!slots) return -1;
    size_t oldn = m->mask + 1;
    m->slots = slots; m->mask = n - 1;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].key) *find_slot(m, old[i].key, old[i].len, old[i].hash) = old[i];
    free(old);
    return 0;
}

long *map_put(struct map *m, const char *key, size_t len) {
    if (4 * (m->used + 1) > 3 * (m->mask + 1) && map_grow(m)) return NULL;
    uint32_t h = fnv1a(key, len);
    struct entry *e = find_slot(m, key, len, h);
    if (!e->key) { e->key = key; e->hash = h; e->len = (uint32_t)len; e->value = 0; m->used++; }
    return &e->value;
}

size_t count_words(struct map *m, const char *text, size_t n) {
    size_t words = 0, i = 0;
    while (i < n) {
        while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) i++;
        size_t start = i;
        while (i < n && text[i] != ' ' && text[i] != '\n' && text[i] != '\t') i++;
        if (i > start) { long *v = map_put(m, text + start, i - start); if (v) ++*v; words++; }
    }
    return words;
}

size_t my_strlen(const char *s) { const char *p = s; while (*p) p++; return (size_t)(p - s); }

int my_strcmp(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return (unsigned char)*a - (unsigned char)*b;
}

void to_lower(char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z') s[i] += 'a' - 'A';
}

const char *find_char(const char *s, size_t n, char c) {
    for (size_t i = 0; i < n; i++) if (s[i] == c) return s + i;
    return NULL;
}

uint64_t hash_ints(const int32_t *v, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) h = murmur_mix(h ^ (uint64_t)(uint32_t)v[i]) + (h << 6);
    return h;
}
