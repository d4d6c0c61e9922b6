/* Sorting and searching: the integer and pointer code of every standard library. */
#include <stddef.h>
#include <string.h>

void insertion_sort(int *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        int x = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

static void swap(int *a, int *b) { int t = *a; *a = *b; *b = t; }

void quick_sort(int *a, long lo, long hi) {
    while (lo < hi) {
        int pivot = a[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) swap(&a[i++], &a[j--]);
        }
        if (j - lo < hi - i) { quick_sort(a, lo, j); lo = i; }
        else { quick_sort(a, i, hi); hi = j; }
    }
}

void merge_sort(double *a, double *tmp, size_t n) {
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

long lower_bound(const long *a, long n, long key) {
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = (lo + hi) >> 1;
        if (a[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

size_t unique(int *a, size_t n) {
    if (n == 0) return 0;
    size_t w = 1;
    for (size_t r = 1; r < n; r++)
        if (a[r] != a[w - 1]) a[w++] = a[r];
    return w;
}

void counting_sort(unsigned char *a, size_t n) {
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[a[i]]++;
    size_t k = 0;
    for (int v = 0; v < 256; v++)
        for (size_t c = count[v]; c > 0; c--) a[k++] = (unsigned char)v;
}

struct record { int key; short flags; char name[10]; double weight; };

static int by_key(const void *x, const void *y) {
    const struct record *a = x, *b = y;
    return (a->key > b->key) - (a->key < b->key);
}

void sort_records(struct record *r, size_t n,
                  void (*sorter)(void *, size_t, size_t, int (*)(const void *, const void *))) {
    sorter(r, n, sizeof *r, by_key);
}

void reverse(short *a, size_t n) {
    for (size_t i = 0, j = n ? n - 1 : 0; i < j; i++, j--) {
        short t = a[i]; a[i] = a[j]; a[j] = t;
    }
}
