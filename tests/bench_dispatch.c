/*
 * bench_dispatch - host-side cost of one runtime dispatch: the nearest-key
 * lookup plus the launch-argument checks that mlt_plan_run does before the
 * launch (the launch itself excluded).  A benchmark, not a test: it prints
 * nanoseconds per call.  Where the CUDA driver loads, it also times the
 * tensor-map encoding every mma=2 (wgmma + TMA) launch adds on the host.
 *
 *   bench_dispatch [entries] [calls]      (defaults: 36 entries, 20M calls)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/mla_decode/mla_decode.h"
#include "runtime/gpu/backend.h"
#include "runtime/api/dispatch.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    int n_entries = argc > 1 ? atoi(argv[1]) : 36;
    long calls = argc > 2 ? atol(argv[2]) : 20000000L;
    mt_target t;
    mt_target_for_arch("sm_90", &t);
    mt_problem_key shape = {.kind = "mla_decode",
            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
            .n_heads = 16, .sq = 1};
    mt_choice *choices = calloc((size_t)n_entries, sizeof *choices);
    static const int batches[] = {1, 2, 4, 8, 16, 32, 64, 128, 256}, lens[] = {512, 1024, 4096, 16384};
    for (int i = 0; i < n_entries; i++) {
        mt_choice *c = &choices[i];
        snprintf(c->arch, sizeof c->arch, "sm_90");
        c->key = shape;
        c->key.batch = batches[i % 9];
        c->key.seq_len = lens[(i / 9) % 4] + i / 36;
        snprintf(c->family, sizeof c->family, "mla_decode_simt");
        snprintf(c->params, sizeof c->params, "tile_q=%d,kv_granularity=64,num_splits=%d,block_threads=256,kv_chunk=32,mma=0",
                 i % 2 ? 8 : 16, 2 << (i % 3));
        c->median_ms = 0.1;
    }
    mt_dispatch_table table;
    if (mt_dispatch_build(choices, NULL, n_entries, &shape, &t, 132,
                          MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table) != MT_OK) {
        fprintf(stderr, "%s\n", mt_last_error());
        return 1;
    }
    mt_mla_decode_args a = {.batch = 8, .n_heads = 16, .sq = 1, .max_blocks = 256, .page_size = 64, .warp_size = 32, .scale = 0.04f,
                            .kv_scale = 1, .q = 1, .kv = 2, .block_table = 3, .seq_lens = 4, .out = 5, .lse = 6,
                            .workspace = 7, .workspace_bytes = 1u << 30};
    volatile int sink = 0;
    double best = 1e30;
    for (int round = 0; round < 3; round++) {
        double t0 = now_ns();
        for (long i = 0; i < calls; i++) {
            mt_dispatch_result r;
            int batch = 1 + (int)(i & 127), len = 300 + (int)((i * 7919) & 16383);
            mt_dispatch_lookup(&table, batch, len, 0, &r);
            a.batch = batch;
            sink += mt_mla_decode_check_args(&table.variants[r.variant], &shape.s, &a) == MT_OK ? r.variant : -1;
        }
        double per = (now_ns() - t0) / (double)calls;
        if (per < best) best = per;
    }
    printf("dispatch (lookup over %d keys + argument checks): %.1f ns per call (best of 3 x %ld calls)\n", n_entries,
           best, calls);
    mt_dispatch_free(&table);
    free(choices);

    mt_backend *b = NULL;
    if (mt_backend_open("cuda", &b) == MT_OK && b->has_driver && mt_backend_set_device(b, 0) == MT_OK) {
        _Alignas(64) unsigned char map[MT_TENSOR_MAP_BYTES];
        const long encodes = 200000;
        mt_status st = MT_OK;
        double t0 = now_ns();
        for (long i = 0; i < encodes && st == MT_OK; i++)
            st = mt_backend_tensor_map_2d(b, (mt_devptr)1 << 30, 2, 576, 1ull << 31, 1152, 64, 64, map);
        if (st == MT_OK)
            printf("tensor map encode (each mma=2 launch): %.1f ns per call\n", (now_ns() - t0) / (double)encodes);
        else
            printf("tensor map encode: %s\n", mt_last_error());
    } else {
        printf("tensor map encode: not timed (no CUDA driver here)\n");
    }
    if (b) mt_backend_close(b);
    return sink == -12345;
}
