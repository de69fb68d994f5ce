/* The copy roofline the apps are held against: copies between two arrays of
 * the same size, back and forth, rows shared among OpenMP threads (a thread
 * a core), each thread touching first the pages it copies. Build and run:
 *   gcc -O3 -fopenmp benches/c/copy.c -o copy_c
 *   ./copy_c BYTES ITERS
 * Copies ITERS times, and on until a second has passed (a short loop of
 * small copies measures the threads' start and barriers, not the memory).
 * Prints the loop's seconds and GB/s counting the bytes read and the bytes
 * written (2 x BYTES a copy), the figure a stencil's bytes per update are
 * divided by. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BYTES ITERS\n", argv[0]);
        return 2;
    }
    long bytes = atol(argv[1]), iters = atol(argv[2]);
    const long chunk = 1 << 16;
    long chunks = (bytes + chunk - 1) / chunk;
    char *a = malloc(chunks * chunk), *b = malloc(chunks * chunk);
    if (bytes <= 0 || iters <= 0 || !a || !b) {
        fprintf(stderr, "copy: BYTES and ITERS must be positive and the arrays fit in memory\n");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long c = 0; c < chunks; c++) {
        memset(a + c * chunk, 1, chunk);
        memset(b + c * chunk, 0, chunk);
    }
    double t0 = omp_get_wtime();
    long it = 0;
    for (; it < iters || omp_get_wtime() - t0 < 1.0; it++) {
#pragma omp parallel for schedule(static)
        for (long c = 0; c < chunks; c++) memcpy(b + c * chunk, a + c * chunk, chunk);
        char *t = a;
        a = b;
        b = t;
    }
    double s = omp_get_wtime() - t0;
    printf("copy_seconds %.6f GB/s %.3f\n", s, 2.0 * chunks * chunk * it / s * 1e-9);
    return 0;
}
