/*
 * ceilings.c - the copy and matrix-unit ceilings (see ceilings.h).
 */
#include "ceilings.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/sources.h"
#include "tuner/kernels/tuner_kernels.h"
#include "timing.h"

/* Median ms of `n` (<= 16) runs of fn after one warm-up run, or -1. */
static double median_ms(mt_backend *b, mt_stream s, int n, mt_timed_fn fn, void *arg) {
    double ms[16];
    return mt_time_runs(b, s, NULL, 1, n, fn, arg, ms) == MT_OK ? mt_sorted_median(ms, n) : -1;
}

typedef struct copy_job { mt_backend *b; mt_devptr dst, src; size_t bytes; } copy_job;
static mt_status run_copy(void *arg, mt_stream s) {
    copy_job *c = arg;
    return mt_backend_copy_on_device(c->b, c->dst, c->src, c->bytes, s);
}

double mt_ceiling_copy_gbps(mt_backend *b, mt_stream s) {
    copy_job c = {b, 0, 0, (size_t)1 << 30};
    double result = 0;
    mt_status st = mt_backend_mem_alloc(b, c.bytes, &c.src);
    if (st == MT_OK) st = mt_backend_mem_alloc(b, c.bytes, &c.dst);
    if (st == MT_OK) st = mt_backend_mem_set(b, c.src, 0x5a, c.bytes, s);
    if (st == MT_OK) {
        double ms = median_ms(b, s, 9, run_copy, &c);
        if (ms > 0) result = 2.0 * (double)c.bytes / (ms * 1e-3) / 1e9;
    }
    mt_backend_mem_free(b, c.src);
    mt_backend_mem_free(b, c.dst);
    return result;
}

typedef struct mma_job { mt_backend *b; mt_function f; unsigned groups; mt_devptr out; int iters; } mma_job;
static mt_status run_mma(void *arg, mt_stream s) {
    mma_job *m = arg;
    unsigned grid[3] = {m->groups, 1, 1}, block[3] = {256, 1, 1};
    void *args[] = {&m->out, &m->iters};
    return mt_backend_launch(m->b, m->f, grid, block, 0, s, args);
}

/* Times `kernel` of bench_kernels.cu (args: out, iters) on `groups`
 * groups of 256 threads and converts with the FLOPs one group does per
 * iteration; 0 when anything fails. */
static double matrix_peak_tflops(mt_backend *b, mt_jit *jit, const char *arch, const char *kernel, unsigned groups,
                                 int iters, double flops_per_group_iter, mt_stream s) {
    char *src = NULL;
    const mt_code_object *obj = NULL;
    mma_job m = {.b = b, .groups = groups, .iters = iters};
    mt_status st = mt_kernel_source(mt_tuner_kernel_files, "bench_kernels.cu", &src);
    mt_jit_request req = {.source = src, .source_name = "bench_kernels.cu", .arch = arch};
    if (st == MT_OK) st = mt_jit_compile(jit, &req, &obj, NULL);
    if (st == MT_OK) st = mt_jit_function(jit, obj, kernel, &m.f);
    if (st == MT_OK) st = mt_backend_mem_alloc(b, (size_t)m.groups * 256 * sizeof(float), &m.out);
    double result = 0;
    if (st == MT_OK) {
        double ms = median_ms(b, s, 7, run_mma, &m);
        if (ms > 0) result = flops_per_group_iter * m.iters * m.groups / (ms * 1e-3) / 1e12;
    }
    mt_backend_mem_free(b, m.out);
    free(src);
    return result;
}

double mt_ceiling_mma_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s) {
    if (strncmp(arch, "sm_", 3) != 0 || atoi(arch + 3) < 80 || compute_units < 1) return 0;
    /* 8 warps per group, 8 m16n8k16 products per warp and iteration */
    return matrix_peak_tflops(b, jit, arch, "mt_mma_peak", 4u * (unsigned)compute_units, 4096,
                              2.0 * 16 * 8 * 16 * 8 * 8, s);
}

double mt_ceiling_matrix_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s) {
    double mma = mt_ceiling_mma_tflops(b, jit, arch, compute_units, s);
    double wgmma = mt_ceiling_wgmma_tflops(b, jit, arch, compute_units, s);
    return wgmma > mma ? wgmma : mma;
}

double mt_ceiling_wgmma_fp8_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s) {
    if (strcmp(arch, "sm_90") != 0 || compute_units < 1) return 0;
    /* 2 warpgroups per group, 8 m64n256k32 products per warpgroup and iteration */
    return matrix_peak_tflops(b, jit, arch, "mt_wgmma_fp8_peak", (unsigned)compute_units, 2048,
                              2.0 * 64 * 256 * 32 * 8 * 2, s);
}

double mt_ceiling_wgmma_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s) {
    if (strcmp(arch, "sm_90") != 0 || compute_units < 1) return 0;
    /* 2 warpgroups per group, 8 m64n256k16 products per warpgroup and iteration */
    return matrix_peak_tflops(b, jit, arch, "mt_wgmma_peak", (unsigned)compute_units, 2048,
                              2.0 * 64 * 256 * 16 * 8 * 2, s);
}
