/* The hand-written baseline for 3-d stencils: one step of 3d6 (the six
 * face neighbours summed, divided by 6) per sweep over two ping-pong
 * arrays, planes shared among OpenMP threads. Build and run:
 *   gcc -O3 -march=native -fopenmp benches/c/hand_3d6.c -o hand_3d6
 *   OMP_NUM_THREADS=2 ./hand_3d6 408 20
 * A third argument, `varied`, fills every cell with i mod 97 instead of
 * EPSILOD's basic init: long runs then stay clear of subnormal floats.
 * Prints the loop's seconds and cell updates per second (interior cells
 * times iterations), the figure `epsilod run 3d6` reports. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 408;
    long iters = argc > 2 ? atol(argv[2]) : 20;
    long plane = n * n;
    int varied = argc > 3 && strcmp(argv[3], "varied") == 0;
    if (argc > 4 || (argc > 3 && !varied)) {
        fprintf(stderr, "usage: %s [N] [ITERS] [varied]\n", argv[0]);
        return 2;
    }
    float *a = malloc(sizeof(float) * plane * n), *b = malloc(sizeof(float) * plane * n);
    if (n < 3 || iters < 1 || !a || !b) return 1;
#pragma omp parallel for
    for (long i = 0; i < n; i++)
        for (long j = 0; j < plane; j++) a[i * plane + j] = b[i * plane + j] =
                varied ? (float)((i * plane + j) % 97) : i == 0 ? 1.0f : 0.0f;
    double t0 = omp_get_wtime();
    for (long it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++) {
                const float *c = a + i * plane + j * n;
                float *o = b + i * plane + j * n;
                for (long k = 1; k < n - 1; k++)
                    o[k] = (c[k - plane] + c[k + plane] + c[k - n] + c[k + n] + c[k - 1] + c[k + 1]) / 6.0f;
            }
        float *t = a;
        a = b;
        b = t;
    }
    double s = omp_get_wtime() - t0;
    double cells = (double)(n - 2) * (n - 2) * (n - 2) * iters;
    printf("loop_seconds %.6f cell_updates_per_second %.4e check %.6f\n", s, cells / s,
           a[(n / 2) * plane + (n / 2) * n + n / 2]);
    return 0;
}
