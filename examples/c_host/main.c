/* Calls kernels built by `aotx build kernels.py -o build/` through build/kernels.h.
 *
 *   cc -O2 -Wall -I build main.c build/kernels.so -Wl,-rpath,"$PWD/build" -o main
 *   ./main 1000
 *
 * Input: x[i] = -1 + 2 i / (n - 1) and points[i] = (x[i], 2 x[i], 1 - x[i]).
 * Prints "name index value" lines that tests/runtime/test_c_host.py compares with NumPy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

static int check(const char *what, int32_t status) {
    if (status != AOTX_OK) {
        fprintf(stderr, "%s failed with status %d\n", what, (int)status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 1000;
    if (n < 2) {
        fprintf(stderr, "n must be at least 2\n");
        return 2;
    }
    double *x = malloc(sizeof(double) * n);          /* inputs: caller-allocated, C order */
    double *points = malloc(sizeof(double) * n * 3);
    double *y = malloc(sizeof(double) * n);           /* outputs: caller-allocated too */
    double *d = malloc(sizeof(double) * (n - 1));     /* diffs returns f64[max(0, n - 1)] */
    double means[3], maxnorm;
    if (!x || !points || !y || !d) return 3;
    for (int64_t i = 0; i < n; i++) {
        x[i] = -1.0 + 2.0 * (double)i / (double)(n - 1);
        points[3 * i + 0] = x[i];
        points[3 * i + 1] = 2.0 * x[i];
        points[3 * i + 2] = 1.0 - x[i];
    }
    const int64_t symbols[1] = {n};                   /* the value of the symbolic dim n */

    void *wave_in[KERNELS_WAVE_NUM_INPUTS] = {x};
    void *wave_out[KERNELS_WAVE_NUM_OUTPUTS] = {y};
    if (check("wave", kernels_wave(wave_in, wave_out, symbols))) return 1;

    void *stats_in[KERNELS_STATS_NUM_INPUTS] = {points};
    void *stats_out[KERNELS_STATS_NUM_OUTPUTS] = {means, &maxnorm};   /* a scalar result: 1 element */
    if (check("stats", kernels_stats(stats_in, stats_out, symbols))) return 1;

    void *diffs_in[KERNELS_DIFFS_NUM_INPUTS] = {x};
    void *diffs_out[KERNELS_DIFFS_NUM_OUTPUTS] = {d};
    if (check("diffs", kernels_diffs(diffs_in, diffs_out, symbols))) return 1;

    for (int64_t i = 0; i < n; i += (n / 7 > 0 ? n / 7 : 1)) printf("wave %lld %.17g\n", (long long)i, y[i]);
    printf("wave %lld %.17g\n", (long long)(n - 1), y[n - 1]);
    for (int k = 0; k < 3; k++) printf("means %d %.17g\n", k, means[k]);
    printf("maxnorm 0 %.17g\n", maxnorm);
    printf("diffs 0 %.17g\n", d[0]);
    printf("diffs %lld %.17g\n", (long long)(n - 2), d[n - 2]);
    free(x); free(points); free(y); free(d);
    return 0;
}
