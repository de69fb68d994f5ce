/* The plain serial loop of the gaussian app's update (a kw x kw blur of the
 * app's checkerboard test image, f32 products accumulated in double and
 * rounded to f32 after every term, then truncated, as
 * epsilod-apps/src/gaussian.rs; no contraction), the baseline the app is
 * measured against on one thread. Build and run (the image's rows and
 * columns, as the app's --size; kw 5 and sigma 1, the app's defaults):
 *   gcc -O3 -ffp-contract=off benches/c/gaussian.c -o gaussian_c -lm
 *   ./gaussian_c 2048 2048 20 [out.dat]
 * Prints the loop's seconds; writes the image (raw f32) if asked, the bits
 * `epsilod run gaussian --output out.dat` writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KW 5
#define R (KW / 2)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long rows = argc > 1 ? atol(argv[1]) : 2048, cols = argc > 2 ? atol(argv[2]) : 2048;
    long iters = argc > 3 ? atol(argv[3]) : 20;
    long s0 = rows + 2 * R, s1 = cols + 2 * R;
    float *a = calloc(s0 * s1, sizeof(float)), *b = calloc(s0 * s1, sizeof(float));
    if (!a || !b) return 1;
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++)
            a[(i + R) * s1 + j + R] = b[(i + R) * s1 + j + R] = (i / 16 + j / 16) % 2 == 0 ? 255.0f : 0.0f;
    /* The weights as the app computes them on the host (glibc's expf). */
    const float sigma = 1.0f, mean = (float)KW / 2.0f;
    float w[KW * KW];
    for (int r = 0; r < KW; r++)
        for (int c = 0; c < KW; c++) {
            volatile float dr = ((float)r - mean) / sigma, dc = ((float)c - mean) / sigma;
            w[r * KW + c] = expf(-0.5f * (dr * dr + dc * dc));
        }
    const double norm = ((2.0 * M_PI) * (double)sigma) * (double)sigma;
    double t0 = now();
    for (long it = 0; it < iters; it++) {
        for (long i = R; i < R + rows; i++)
            for (long j = R; j < R + cols; j++) {
                float sum = 0.0f;
                for (int x = 0; x < KW; x++)
                    for (int y = 0; y < KW; y++) {
                        const float p = a[(i + x - R) * s1 + j + y - R] * w[x * KW + y];
                        sum = (float)((double)sum + (double)p / norm);
                    }
                b[i * s1 + j] = truncf(sum) + 0.0f;
            }
        float *t = a; a = b; b = t;
    }
    double s = now() - t0;
    printf("loop_seconds %.6f\n", s);
    if (argc > 4) {
        FILE *f = fopen(argv[4], "wb");
        if (!f) return 1;
        for (long i = R; i < R + rows; i++)
            if (fwrite(a + i * s1 + R, sizeof(float), cols, f) != (size_t)cols) return 1;
        fclose(f);
    }
    return 0;
}
