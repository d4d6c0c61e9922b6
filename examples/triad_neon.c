/* STREAM triad on AArch64 (NEON, fused multiply-add): a[i] = b[i] + s * c[i].
 * Compiled with:  aarch64-linux-gnu-gcc -O3 -S triad_neon.c */
void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}
