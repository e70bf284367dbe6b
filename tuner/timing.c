/*
 * timing.c - flushes and event timing, and the host's clock (see timing.h).
 */
#define _GNU_SOURCE
#include "timing.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/sources.h"
#include "tuner/kernels/tuner_kernels.h"

mt_status mt_l2_flush_create(mt_backend *b, mt_jit *jit, const char *arch, size_t bytes, mt_flush_mode mode,
                             mt_l2_flush *f) {
    memset(f, 0, sizeof *f);
    f->b = b, f->mode = mode, f->bytes = bytes & ~(size_t)7;
    char *src = NULL;
    const mt_code_object *obj = NULL;
    mt_status st = mt_kernel_source(mt_tuner_kernel_files, "bench_kernels.cu", &src);
    mt_jit_request req = {.source = src, .source_name = "bench_kernels.cu", .arch = arch};
    if (st == MT_OK) st = mt_jit_compile(jit, &req, &obj, NULL);
    if (st == MT_OK) st = mt_jit_function(jit, obj, "mt_l2_evict_read", &f->evict);
    free(src);
    if (st == MT_OK) st = mt_backend_mem_alloc(b, f->bytes, &f->buf);
    if (st == MT_OK) st = mt_backend_mem_alloc(b, sizeof(unsigned long long), &f->sink);
    /* zeros: every thread's xor is 0, never the 1 the kernel is given */
    if (st == MT_OK) st = mt_backend_mem_set(b, f->buf, 0, f->bytes, NULL);
    if (st == MT_OK) st = mt_backend_stream_sync(b, NULL);
    if (st != MT_OK) mt_l2_flush_destroy(f);
    return st;
}

void mt_l2_flush_destroy(mt_l2_flush *f) {
    if (!f->b) return;
    mt_backend_mem_free(f->b, f->buf);
    mt_backend_mem_free(f->b, f->sink);
    memset(f, 0, sizeof *f);
}

mt_status mt_l2_flush_run(const mt_l2_flush *f, int i, mt_stream s) {
    if (f->mode == MT_FLUSH_WRITE) return mt_backend_mem_set(f->b, f->buf, (uint8_t)i, f->bytes, s);
    unsigned long long n = f->bytes / 8, never = 1;
    mt_devptr buf = f->buf, sink = f->sink;
    void *args[] = {&buf, &n, &never, &sink};
    unsigned grid[3] = {1024, 1, 1}, block[3] = {256, 1, 1};
    return mt_backend_launch(f->b, f->evict, grid, block, 0, s, args);
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

mt_status mt_time_runs(mt_backend *b, mt_stream s, const mt_l2_flush *flush, int warmup, int reps, mt_timed_fn fn,
                       void *arg, double *ms) {
    mt_status st = MT_OK;
    for (int i = 0; i < warmup && st == MT_OK; i++) st = fn(arg, s);
    if (st != MT_OK) return st;
    mt_event *ev = calloc((size_t)reps * 2, sizeof *ev);
    if (!ev) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < reps * 2 && st == MT_OK; i++) st = mt_backend_event_create(b, &ev[i]);
    for (int i = 0; i < reps && st == MT_OK; i++) {
        if (flush) st = mt_l2_flush_run(flush, i, s);
        if (st == MT_OK) st = mt_backend_event_record(b, ev[2 * i], s);
        if (st == MT_OK) st = fn(arg, s);
        if (st == MT_OK) st = mt_backend_event_record(b, ev[2 * i + 1], s);
    }
    if (st == MT_OK) st = mt_backend_stream_sync(b, s);
    for (int i = 0; i < reps && st == MT_OK; i++) {
        float t = 0;
        st = mt_backend_event_elapsed(b, ev[2 * i], ev[2 * i + 1], &t);
        ms[i] = t;
    }
    if (st == MT_OK) qsort(ms, (size_t)reps, sizeof *ms, compare_doubles);
    for (int i = 0; i < reps * 2; i++)
        if (ev[i]) mt_backend_event_destroy(b, ev[i]);
    free(ev);
    return st;
}

double mt_sorted_median(const double *v, int n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

double mt_sorted_percentile(const double *v, int n, int pct) {
    int i = n * pct / 100;
    return v[i < n ? i : n - 1];
}

double mt_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
