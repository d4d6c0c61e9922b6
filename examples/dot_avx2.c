/* Dot product of doubles: the vector products are independent, but the sum is added in
 * order (no -ffast-math), four vaddsd a vector, all into one register: a loop-carried chain.
 * Compiled with:  gcc -O3 -mavx2 -mfma -S dot_avx2.c */
double dot(const double *a, const double *b, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}
