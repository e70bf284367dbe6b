/*
 * bench_gpu.c - the benches' tools on the GPU (bench_gpu.h).
 */
#include "bench_gpu.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/sources.h"
#include "tuner/kernels/tuner_kernels.h"

mt_status mt_bench_gpu_open(mt_bench_gpu *g, int flush_write) {
    g->b = mt_runtime_backend(g->rt);
    const mt_device_info *info = mt_runtime_device(g->rt);
    char *src = NULL;
    const mt_code_object *obj = NULL;
    mt_status st = mt_kernel_source(mt_tuner_kernel_files, "bench_kernels.cu", &src);
    mt_jit_request req = {.source = src, .source_name = "bench_kernels.cu", .arch = info->arch};
    if (st == MT_OK) st = mt_jit_compile(mt_runtime_jit(g->rt), &req, &obj, NULL);
    if (st == MT_OK) st = mt_jit_function(mt_runtime_jit(g->rt), obj, "mt_fill_random", &g->fill);
    if (st == MT_OK)
        st = mt_l2_flush_create(g->b, mt_runtime_jit(g->rt), info->arch, (size_t)256 << 20,
                                flush_write ? MT_FLUSH_WRITE : MT_FLUSH_READ, &g->flush);
    free(src);
    return st;
}

mt_status mt_bench_gpu_fill(const mt_bench_gpu *g, mt_devptr p, size_t n, mt_dtype t, unsigned seed) {
    unsigned long long count = n;
    int dtype = (int)t;
    void *args[] = {&p, &count, &dtype, &seed};
    unsigned grid[3] = {1024, 1, 1}, block[3] = {256, 1, 1};
    return mt_backend_launch(g->b, g->fill, grid, block, 0, NULL, args);
}

long mt_bench_count_non_finite(const void *host, size_t n, mt_dtype t) {
    long bad = 0;
    for (size_t i = 0; i < n; i++) bad += !isfinite(mt_host_load(t, host, i));
    return bad;
}

void mt_bench_gpu_close(mt_bench_gpu *g) {
    mt_l2_flush_destroy(&g->flush);
    if (g->rt) mlt_runtime_destroy(g->rt);
    g->rt = NULL;
}
