/* The plain serial loop of the laplace app's update (3-d, anisotropic
 * spacing, Devito's order, f32, no contraction), the baseline the app is
 * measured against on one thread. Build and run:
 *   gcc -O3 -ffp-contract=off benches/c/laplace.c -o laplace_c
 *   ./laplace_c 130 130 130 20 [out.dat]
 * Prints the loop's seconds; writes the whole array (raw f32) if asked. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long s0 = argc > 1 ? atol(argv[1]) : 130, s1 = argc > 2 ? atol(argv[2]) : 130,
         s2 = argc > 3 ? atol(argv[3]) : 130, iters = argc > 4 ? atol(argv[4]) : 20;
    long n = s0 * s1 * s2, p = s1 * s2;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    if (!a || !b) return 1;
    for (long i = 0; i < s0; i++)
        for (long j = 0; j < s1; j++)
            for (long k = 0; k < s2; k++) {
                float v = j == 0 ? 3.0f : j == s1 - 1 ? 4.0f : k == 0 ? 5.0f : k == s2 - 1 ? 6.0f : 0.0f;
                a[i * p + j * s2 + k] = b[i * p + j * s2 + k] = v;
            }
    float hi = 1.0f / (float)(s0 - 1), hj = 1.0f / (float)(s1 - 1), hk = 1.0f / (float)(s2 - 1);
    float r1 = hi * hi, r2 = hj * hj, r3 = hk * hk;
    float r0 = 1.0f / (((r1 * r2) + (r1 * r3)) + (r2 * r3));
    double t0 = now();
    for (long it = 0; it < iters; it++) {
        for (long i = 1; i < s0 - 1; i++)
            for (long j = 1; j < s1 - 1; j++)
                for (long k = 1; k < s2 - 1; k++) {
                    long c = i * p + j * s2 + k;
                    b[c] = (0.5f * r0) * (r2 * ((r3 * a[c - p]) + (r3 * a[c + p])) +
                                          r1 * ((((r2 * a[c - 1]) + (r2 * a[c + 1])) + (r3 * a[c - s2])) +
                                                (r3 * a[c + s2])));
                }
        float *t = a; a = b; b = t;
    }
    double s = now() - t0;
    printf("loop_seconds %.6f\n", s);
    if (argc > 5) {
        FILE *f = fopen(argv[5], "wb");
        if (!f || fwrite(a, sizeof(float), n, f) != (size_t)n) return 1;
        fclose(f);
    }
    return 0;
}
