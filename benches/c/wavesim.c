/* The plain serial loop of the wavesim app's update (three time levels in
 * two buffers, the Laplacian clamped at the user domain's edge, f32, no
 * contraction), the baseline the app is measured against on one thread.
 * Build and run (link libm: the initial wave is glibc's expf, as the app's):
 *   gcc -O3 -ffp-contract=off benches/c/wavesim.c -o wavesim_c -lm
 *   ./wavesim_c 2050 2050 20 [out.dat]
 * Sizes are the global array (user domain + 2), as `--size`. Prints the
 * loop's seconds; writes the user domain (raw f32) if asked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static long S1, SY, SX;
static float CX, CY, SGX, SGY;

static float u0(long g0, long g1) {
    float dx = (float)(g1 - 1) - CX, dy = (float)(g0 - 1) - CY;
    return 1.0f * expf(-((dx * dx) / ((2.0f * SGX) * SGX) + (dy * dy) / ((2.0f * SGY) * SGY)));
}

/* The clamped Laplacian of the buffer `f` at global (g0, g1). */
static inline float lap(const float *f, long g0, long g1, float k) {
    long c = g0 * S1 + g1;
    float cc = f[c];
    float up = g0 < SY ? f[c + S1] : cc, um = g0 > 1 ? f[c - S1] : cc;
    float rp = g1 < SX ? f[c + 1] : cc, rm = g1 > 1 ? f[c - 1] : cc;
    return k * ((up - cc) - (cc - um)) + k * ((rp - cc) - (cc - rm));
}

int main(int argc, char **argv) {
    long s0 = argc > 1 ? atol(argv[1]) : 2050, s1 = argc > 2 ? atol(argv[2]) : 2050;
    long iters = argc > 3 ? atol(argv[3]) : 20;
    float dt = 0.25f;
    S1 = s1; SY = s0 - 2; SX = s1 - 2;
    CX = (float)SX / 4.0f; CY = (float)SY / 4.0f; SGX = (float)SX / 8.0f; SGY = (float)SY / 8.0f;
    float *a = malloc(s0 * s1 * sizeof(float)), *b = malloc(s0 * s1 * sizeof(float));
    if (!a || !b) return 1;
    for (long i = 0; i < s0; i++)
        for (long j = 0; j < s1; j++) a[i * s1 + j] = b[i * s1 + j] = u0(i, j);
    float k = (dt / 1.0f) * (dt / 1.0f);
    for (long i = 1; i < s0 - 1; i++)
        for (long j = 1; j < s1 - 1; j++)
            b[i * s1 + j] = (float)((double)a[i * s1 + j] + 0.5 * (double)lap(a, i, j, k));
    double t0 = now();
    for (long it = 0; it < iters; it++) {
        for (long i = 1; i < s0 - 1; i++)
            for (long j = 1; j < s1 - 1; j++) {
                long c = i * s1 + j;
                b[c] = ((2.0f * a[c]) - b[c]) + lap(a, i, j, k);
            }
        float *t = a; a = b; b = t;
    }
    double s = now() - t0;
    printf("loop_seconds %.6f\n", s);
    if (argc > 4) {
        FILE *f = fopen(argv[4], "wb");
        if (!f) return 1;
        for (long i = 1; i < s0 - 1; i++)
            if (fwrite(a + i * s1 + 1, sizeof(float), s1 - 2, f) != (size_t)(s1 - 2)) return 1;
        fclose(f);
    }
    return 0;
}
