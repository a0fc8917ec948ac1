/* A C program that runs the monitoring pipeline through the header `aotx build` wrote.
 *
 *   cc -O2 -Wall -I dist/lib host.c dist/lib/vibration.so -Wl,-rpath,"$PWD/dist/lib" -o host
 *   ./host signal.f64 baseline.f64 1024 4.0
 *
 * signal.f64: the samples, raw float64 (native byte order); baseline.f64: the healthy
 * mean[4] then std[4] of the features. Prints "name index value" lines (deploy.py and
 * tests/examples/test_aot_deploy.py compare them with NumPy) and, on stderr, the CPU time
 * of each kernel (the best of 5 calls).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vibration.h"

static double *read_doubles(const char *path, int64_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return NULL; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    double *data = malloc(bytes > 0 ? (size_t)bytes : 1);
    *count = bytes / (long)sizeof(double);
    if (!data || fread(data, sizeof(double), (size_t)*count, f) != (size_t)*count) {
        fprintf(stderr, "%s: cannot read\n", path);
        fclose(f);
        free(data);
        return NULL;
    }
    fclose(f);
    return data;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs CALL (an int32_t status) 5 times; BEST: the least CPU time of one call. */
#define TIMED(BEST, CALL, NAME)                                    \
    do {                                                           \
        BEST = 1e30;                                               \
        for (int rep = 0; rep < 5; rep++) {                        \
            double start_ = cpu_seconds();                         \
            if (check(NAME, CALL)) return 1;                       \
            double took_ = cpu_seconds() - start_;                 \
            if (took_ < BEST) BEST = took_;                        \
        }                                                          \
    } while (0)

static int check(const char *what, int32_t status) {
    if (status != AOTX_OK) fprintf(stderr, "%s failed with status %d\n", what, (int)status);
    return status != AOTX_OK;
}

static void show(const char *name, const float *f32, const double *f64, int64_t count) {
    int64_t step = count / 5 > 0 ? count / 5 : 1;
    for (int64_t i = 0; i < count; i += step)
        printf("%s %lld %.17g\n", name, (long long)i, f32 ? (double)f32[i] : f64[i]);
    if ((count - 1) % step != 0)
        printf("%s %lld %.17g\n", name, (long long)(count - 1), f32 ? (double)f32[count - 1] : f64[count - 1]);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s signal.f64 baseline.f64 FRAME THRESHOLD\n", argv[0]);
        return 2;
    }
    int64_t n, nb, k = atoll(argv[3]);
    double threshold = atof(argv[4]);
    double *signal = read_doubles(argv[1], &n), *base = read_doubles(argv[2], &nb);
    if (!signal || !base || nb != 8 || k < 2 || n < k) {
        fprintf(stderr, "need a signal of at least FRAME samples and 8 baseline values\n");
        return 2;
    }
    int64_t m = n / k;
    double *smoothed = malloc(sizeof(double) * n);
    float *frames = malloc(sizeof(float) * m * k);
    float *feat[4];
    for (int j = 0; j < 4; j++) feat[j] = malloc(sizeof(float) * m);
    double *zcr = malloc(sizeof(double) * m), *features = malloc(sizeof(double) * m * 4);
    double *score = malloc(sizeof(double) * m);
    int64_t alarms = 0;
    double t[4];

    /* smooth(f64[n]): symbols {n} */
    int64_t sym_n[VIBRATION_SMOOTH_NUM_SYMBOLS] = {n};
    void *s_in[] = {signal}, *s_out[] = {smoothed};
    TIMED(t[0], vibration_smooth(s_in, s_out, sym_n), "smooth");

    /* whole frames of the smoothed signal, as float32 */
    for (int64_t i = 0; i < m * k; i++) frames[i] = (float)smoothed[i];

    /* frame_features(f32[m, k]) and zero_crossing_rate: symbols in the header's order {k, m} */
    int64_t sym_km[VIBRATION_FRAME_FEATURES_NUM_SYMBOLS] = {k, m};
    void *f_in[] = {frames}, *f_out[] = {feat[0], feat[1], feat[2], feat[3]};
    TIMED(t[1], vibration_frame_features(f_in, f_out, sym_km), "frame_features");
    void *z_out[] = {zcr};
    TIMED(t[2], vibration_zero_crossing_rate(f_in, z_out, sym_km), "zero_crossing_rate");

    /* anomaly_score(f64[m, f], f64[f], f64[f], f64): symbols {f, m} */
    for (int64_t i = 0; i < m; i++)
        for (int j = 0; j < 4; j++) features[4 * i + j] = (double)feat[j][i];
    int64_t sym_fm[VIBRATION_ANOMALY_SCORE_NUM_SYMBOLS] = {4, m};
    void *a_in[] = {features, base, base + 4, &threshold}, *a_out[] = {score, &alarms};
    TIMED(t[3], vibration_anomaly_score(a_in, a_out, sym_fm), "anomaly_score");

    show("smooth", NULL, smoothed, n);
    show("rms", feat[0], NULL, m);
    show("peak", feat[1], NULL, m);
    show("crest", feat[2], NULL, m);
    show("kurtosis", feat[3], NULL, m);
    show("zcr", NULL, zcr, m);
    show("score", NULL, score, m);
    printf("alarms 0 %lld\n", (long long)alarms);
    fprintf(stderr, "C host CPU ms: smooth %.3f frame_features %.3f zero_crossing_rate %.3f anomaly_score %.3f\n",
            1e3 * t[0], 1e3 * t[1], 1e3 * t[2], 1e3 * t[3]);
    return 0;
}
