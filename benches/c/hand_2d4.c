/* The straightforward hand-written baseline EPSILOD-style codes are compared
 * with: one Jacobi step of 2d4 per sweep over two ping-pong arrays, rows
 * shared among OpenMP threads. Build and run:
 *   gcc -O3 -march=native -fopenmp benches/c/hand_2d4.c -o hand_2d4
 *   OMP_NUM_THREADS=2 ./hand_2d4 4098 100
 * Prints the loop's seconds and cell updates per second (interior cells
 * times iterations), the figure `epsilod run 2d4` reports. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 4098;
    long iters = argc > 2 ? atol(argv[2]) : 100;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
    if (!a || !b) return 1;
#pragma omp parallel for
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            a[i * n + j] = b[i * n + j] = (i == 0 || j == 0 || i == n - 1 || j == n - 1) ? 1.0f : 0.0f;
    double t0 = omp_get_wtime();
    for (long it = 0; it < iters; it++) {
#pragma omp parallel for
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                b[i * n + j] = (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]) / 4.0f;
        float *t = a; a = b; b = t;
    }
    double s = omp_get_wtime() - t0;
    double cells = (double)(n - 2) * (n - 2) * iters;
    printf("loop_seconds %.6f cell_updates_per_second %.4e check %.6f\n", s, cells / s, a[(n / 2) * n + n / 2]);
    return 0;
}
