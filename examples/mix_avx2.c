/* AVX2 integer kernel: a[i] = (b[i] + c[i]) ^ (b[i] << 3).
 * Compiled with:  gcc -O3 -mavx2 -S mix_avx2.c  (and -masm=intel for mix_avx2_intel.s) */
#include <stdint.h>

void mix(int32_t *restrict a, const int32_t *restrict b, const int32_t *restrict c, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = (b[i] + c[i]) ^ (b[i] << 3);
}
