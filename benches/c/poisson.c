/* The plain serial loop of the poisson app's update (docs/apps.md-style
 * semantics: global array with its boundary, two point sources found by the
 * global index, f32, no contraction), the baseline the app is measured
 * against on one thread. Build and run:
 *   gcc -O3 -ffp-contract=off benches/c/poisson.c -o poisson_c
 *   ./poisson_c 2050 2050 20 [out.dat]
 * Prints the loop's seconds; writes the whole array (raw f32) if asked, the
 * bits `epsilod run poisson --output out.dat` writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long s0 = argc > 1 ? atol(argv[1]) : 2050, s1 = argc > 2 ? atol(argv[2]) : 2050;
    long iters = argc > 3 ? atol(argv[3]) : 20;
    float *a = calloc(s0 * s1, sizeof(float)), *b = calloc(s0 * s1, sizeof(float));
    if (!a || !b) return 1;
    for (long i = 0; i < s0; i++)
        for (long j = 0; j < s1; j++) {
            float v = 0.0f;
            if (i == s0 - 1) v = (float)j / (float)(s1 - 1);
            else if (i == 0) v = 0.0f;
            else if (j == s1 - 1) v = (float)i / (float)(s0 - 1);
            a[i * s1 + j] = b[i * s1 + j] = v;
        }
    float dx = (2.0f - 0.0f) / (float)(s0 - 1), dy = (1.0f - 0.0f) / (float)(s1 - 1);
    float dx2 = dx * dx, dy2 = dy * dy;
    long p0 = s0 / 4, p1 = s1 / 4, q0 = 3 * s0 / 4, q1 = 3 * s1 / 4;
    double t0 = now();
    for (long it = 0; it < iters; it++) {
        for (long i = 1; i < s0 - 1; i++)
            for (long j = 1; j < s1 - 1; j++) {
                float bb = 0.0f;
                if (i == p0 && j == p1) bb = 2500.0f;
                else if (i == q0 && j == q1) bb = -2500.0f;
                b[i * s1 + j] = ((dy2 * (a[(i - 1) * s1 + j] + a[(i + 1) * s1 + j]) +
                                  dx2 * (a[i * s1 + j - 1] + a[i * s1 + j + 1])) -
                                 (bb * dx2) * dy2) /
                                (2.0f * (dx2 + dy2));
            }
        float *t = a; a = b; b = t;
    }
    double s = now() - t0;
    printf("loop_seconds %.6f\n", s);
    if (argc > 4) {
        FILE *f = fopen(argv[4], "wb");
        if (!f || fwrite(a, sizeof(float), s0 * s1, f) != (size_t)(s0 * s1)) return 1;
        fclose(f);
    }
    return 0;
}
