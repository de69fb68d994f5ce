/* The plain serial loop of the gas-sim app's update (D3Q19 lattice
 * Boltzmann, cells of 19 f32, a one-cell zero border never written; keep
 * (+inf) and bounce-back (-inf) cells as epsilod-apps/src/gas.rs, f32, no
 * contraction), the baseline the app is measured against on one thread.
 * Build and run (sizes are the global array's, the user domain + 2):
 *   gcc -O3 -ffp-contract=off benches/c/gas.c -o gas_c
 *   ./gas_c 66 66 66 50 [out.dat]
 * Prints the loop's seconds; writes the user domain's cells (raw f32) if
 * asked, the bits `epsilod run gas-sim --output out.dat` writes. With
 * `copy` in place of the file, times as many copies of the same array
 * instead (the bandwidth roofline; built with -fopenmp, a thread a core):
 *   gcc -O3 -fopenmp benches/c/gas.c -o gas_c && ./gas_c 130 130 66 50 copy */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define Q 19
/* Lattice velocities (x, y, z); array offsets are (y, x, z). */
static const int EX[Q] = {0, -1, 1, 0, 0, 0, 0, -1, -1, 1, 1, -1, -1, 1, 1, 0, 0, 0, 0};
static const int EY[Q] = {0, 0, 0, -1, 1, 0, 0, -1, 1, -1, 1, 0, 0, 0, 0, -1, -1, 1, 1};
static const int EZ[Q] = {0, 0, 0, 0, 0, -1, 1, 0, 0, 0, 0, -1, 1, -1, 1, -1, 1, -1, 1};
static const int OPP[Q] = {0, 2, 1, 4, 3, 6, 5, 10, 9, 8, 7, 14, 13, 12, 11, 18, 17, 16, 15};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float weight(int q) { return q == 0 ? 1.0f / 3.0f : q <= 6 ? 1.0f / 18.0f : 1.0f / 36.0f; }

static float feq(int q, float p, float vx, float vy, float vz) {
    const float C = 1.0f;
    float e = (C * (float)EX[q]) * vx + (C * (float)EY[q]) * vy + (C * (float)EZ[q]) * vz;
    float vv = vx * vx + vy * vy + vz * vz;
    return weight(q) * p * (1.0f + (1.0f / (C * C)) * (3.0f * e + (9.0f / (2.0f * C * C)) * e * e - 1.5f * vv));
}

int main(int argc, char **argv) {
    long s0 = argc > 1 ? atol(argv[1]) : 66, s1 = argc > 2 ? atol(argv[2]) : 66,
         s2 = argc > 3 ? atol(argv[3]) : 66, iters = argc > 4 ? atol(argv[4]) : 50;
    long n = s0 * s1 * s2, p1 = s1 * s2;
    float *a = calloc(n * Q, sizeof(float)), *b = calloc(n * Q, sizeof(float));
    if (!a || !b) return 1;
    long sx = s1 - 2, sy = s0 - 2, sz = s2 - 2;
    for (long i = 1; i < s0 - 1; i++)
        for (long j = 1; j < s1 - 1; j++)
            for (long k = 1; k < s2 - 1; k++) {
                long x = j - 1, y = i - 1, z = k - 1;
                float *c = a + (i * p1 + j * s2 + k) * Q;
                for (int q = 0; q < Q; q++) c[q] = feq(q, 1.0f, 0.1f, 0.0f, 0.0f);
                int wall = x <= 1 || y <= 1 || z <= 1 || x >= sx - 2 || y >= sy - 2 || z >= sz - 2;
                int sphere = (x - 50) * (x - 50) + (y - 50) * (y - 50) + (z - 8) * (z - 8) <= 225;
                if (wall || sphere) {
                    int keep = x <= 1 || x >= sx - 1 || y <= 1 || y >= sy - 1 || z <= 1 || z >= sz - 1;
                    c[0] = keep ? INFINITY : -INFINITY;
                }
                for (int q = 0; q < Q; q++) b[(i * p1 + j * s2 + k) * Q + q] = c[q];
            }
    if (argc > 5 && strcmp(argv[5], "copy") == 0) {
        double t0 = now();
        for (long it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
            for (long i = 0; i < s0; i++) memcpy(b + i * p1 * Q, a + i * p1 * Q, p1 * Q * sizeof(float));
            float *t = a; a = b; b = t;
        }
        double s = now() - t0, bytes = 2.0 * n * Q * sizeof(float) * iters;
        printf("copy_seconds %.6f GB/s %.2f\n", s, bytes / s * 1e-9);
        return 0;
    }
    long off[Q];
    for (int q = 0; q < Q; q++) off[q] = ((long)EY[q] * p1 + (long)EX[q] * s2 + EZ[q]) * Q;
    const float C = 1.0f, k = 1.0f / 0.65f;
    double t0 = now();
    for (long it = 0; it < iters; it++) {
        for (long i = 1; i < s0 - 1; i++)
            for (long j = 1; j < s1 - 1; j++)
                for (long kk = 1; kk < s2 - 1; kk++) {
                    long c = (i * p1 + j * s2 + kk) * Q;
                    float *out = b + c;
                    if (a[c] == INFINITY) {
                        for (int q = 0; q < Q; q++) out[q] = a[c + q];
                        continue;
                    }
                    float d[Q];
                    d[0] = a[c];
                    for (int q = 1; q < Q; q++) d[q] = a[c + off[q] + q];
                    if (d[0] == -INFINITY) {
                        out[0] = d[0];
                        for (int q = 1; q < Q; q++) out[q] = d[OPP[q]];
                        continue;
                    }
                    float p = 0.0f;
                    for (int q = 0; q < Q; q++) p += d[q];
                    float vx = 0.0f, vy = 0.0f, vz = 0.0f;
                    for (int q = 0; q < Q; q++) {
                        vx += (C * (float)EX[q]) * d[q];
                        vy += (C * (float)EY[q]) * d[q];
                        vz += (C * (float)EZ[q]) * d[q];
                    }
                    if (p != 0.0f) {
                        float r = 1.0f / p;
                        vx = vx * r;
                        vy = vy * r;
                        vz = vz * r;
                    }
                    for (int q = 0; q < Q; q++) out[q] = d[q] + k * (feq(q, p, vx, vy, vz) - d[q]);
                }
        float *t = a; a = b; b = t;
    }
    double s = now() - t0;
    printf("loop_seconds %.6f\n", s);
    if (argc > 5) {
        FILE *f = fopen(argv[5], "wb");
        if (!f) return 1;
        for (long i = 1; i < s0 - 1; i++)
            for (long j = 1; j < s1 - 1; j++)
                if (fwrite(a + (i * p1 + j * s2 + 1) * Q, sizeof(float), (s2 - 2) * Q, f) != (size_t)((s2 - 2) * Q))
                    return 1;
        fclose(f);
    }
    return 0;
}
