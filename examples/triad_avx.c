/* STREAM triad with AVX (no FMA): a[i] = b[i] + s * c[i].
 * Compiled with:  gcc -O3 -mavx2 -S triad_avx.c */
void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}
