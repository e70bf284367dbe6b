/*
 * crossover_run.c - both prefill forms of one chunk, timed (crossover_run.h).
 */
#include "crossover_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "runtime/gpu/blaslt_gemm.h"

enum { LATENT = 512, ROPE = 64, D = LATENT + ROPE, NOPE = 128, V = 128, PAGE = 64 };

/* Device buffers of one point, in one list so they are made and freed alike. */
enum {
    B_CACHE, B_TABLE, B_LENS, B_Q_NOPE, B_W_UK, B_Q_MQA, B_OUT_LATENT, B_W_UV, B_OUT, B_LSE, B_DECODE_WS, B_W_KV,
    B_KV, B_Q_MHA, B_CU_Q, B_CU_K, B_GEMM_WS, N_BUFFERS
};

typedef struct xo {
    const mt_crossover_setup *s;
    mt_backend *b;
    mt_devptr buf[N_BUFFERS];
    size_t bytes[N_BUFFERS];
    mt_gemm absorb, output, decompress;
    mlt_plan *decode;
    mlt_prefill_plan *prefill;
    mlt_decode_args da;
    mlt_prefill_args pa;
} xo;

static mt_status api(mlt_status st, const char *what) {
    return st == MLT_OK ? MT_OK : mt_fail(MT_ERR_VENDOR, "%s: %s", what, mlt_last_error());
}

/* ---- the parts and the forms, as mt_time_runs takes them ---- */
static mt_status run_absorb(void *arg, mt_stream st) {
    xo *x = arg;
    return mt_gemm_run(&x->absorb, x->buf[B_Q_NOPE], x->buf[B_W_UK], x->buf[B_Q_MQA], st);
}
static mt_status run_mqa_attention(void *arg, mt_stream st) {
    xo *x = arg;
    return api(mlt_plan_run(x->decode, &x->da, (void *)st), "MQA attention");
}
static mt_status run_output(void *arg, mt_stream st) {
    xo *x = arg;
    return mt_gemm_run(&x->output, x->buf[B_OUT_LATENT], x->buf[B_W_UV], x->buf[B_OUT], st);
}
static mt_status run_mqa(void *arg, mt_stream st) {
    mt_status r = run_absorb(arg, st);
    if (r == MT_OK) r = run_mqa_attention(arg, st);
    return r == MT_OK ? run_output(arg, st) : r;
}
static mt_status run_decompress(void *arg, mt_stream st) {
    xo *x = arg;
    return mt_gemm_run(&x->decompress, x->buf[B_CACHE], x->buf[B_W_KV], x->buf[B_KV], st);
}
static mt_status run_mha_attention(void *arg, mt_stream st) {
    xo *x = arg;
    return api(mlt_prefill_run(x->prefill, &x->pa, (void *)st), "MHA attention");
}
static mt_status run_mha(void *arg, mt_stream st) {
    mt_status r = run_decompress(arg, st);
    return r == MT_OK ? run_mha_attention(arg, st) : r;
}

/* The median of reps timed runs of fn, in ms. */
static mt_status median_ms(xo *x, mt_timed_fn fn, double *out) {
    double *ms = calloc((size_t)x->s->reps, sizeof *ms);
    if (!ms) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st = mt_time_runs(x->b, NULL, &x->s->g->flush, x->s->warmup, x->s->reps, fn, x, ms);
    if (st == MT_OK) *out = mt_sorted_median(ms, x->s->reps);
    free(ms);
    return st;
}

/* Fails when the last form's output [sq, N, V] holds a non-finite value. */
static mt_status check_out(xo *x, const char *form, mt_dtype t) {
    uint16_t *host = malloc(x->bytes[B_OUT]);
    if (!host) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    const size_t n = x->bytes[B_OUT] / 2;
    mt_status st = mt_backend_copy_to_host(x->b, host, x->buf[B_OUT], x->bytes[B_OUT], NULL);
    const long bad = st == MT_OK ? mt_bench_count_non_finite(host, n, t) : 0;
    free(host);
    if (st == MT_OK && bad) st = mt_fail(MT_ERR_VENDOR, "%s form: %ld of %zu outputs are not finite", form, bad, n);
    return st;
}

/* Buffers, fills, GEMM descriptions and plans of point p. */
static mt_status setup(xo *x, const mt_crossover_point *p) {
    const size_t n = (size_t)p->n_heads, sq = (size_t)p->sq, tokens = (size_t)p->context + sq;
    const size_t pages = (tokens + PAGE - 1) / PAGE, e = 2; /* bytes per element: bf16 / fp16 */
    const size_t sizes[N_BUFFERS] = {
        [B_CACHE] = pages * PAGE * D * e, [B_TABLE] = pages * 4, [B_LENS] = 4, [B_Q_NOPE] = sq * n * NOPE * e,
        [B_W_UK] = n * NOPE * LATENT * e, [B_Q_MQA] = sq * n * D * e, [B_OUT_LATENT] = sq * n * LATENT * e,
        [B_W_UV] = n * LATENT * V * e, [B_OUT] = sq * n * V * e, [B_LSE] = sq * n * 4, [B_DECODE_WS] = 0,
        [B_W_KV] = LATENT * n * (NOPE + V) * e, [B_KV] = tokens * n * (NOPE + V) * e,
        [B_Q_MHA] = sq * n * (NOPE + ROPE) * e, [B_CU_Q] = 8, [B_CU_K] = 8, [B_GEMM_WS] = (size_t)32 << 20};
    memcpy(x->bytes, sizes, sizeof sizes);
    /* the decode plan first: its workspace is a buffer too */
    mlt_decode_problem dp = {.n_heads = p->n_heads, .sq = p->sq, .d = D, .dl = LATENT, .page_size = PAGE,
                             .q_dtype = (mlt_dtype)p->q_dtype, .kv_dtype = (mlt_dtype)p->kv_dtype,
                             .softmax_scale = (float)(1.0 / sqrt((double)(NOPE + ROPE))), .kv_scale = 1.0f,
                             .max_batch = 1};
    mt_status st = api(mlt_plan_create(x->s->g->rt, &dp, &x->decode), "MQA attention plan");
    if (st != MT_OK) return st;
    x->bytes[B_DECODE_WS] = mlt_plan_workspace_size(x->decode);
    mlt_prefill_problem pp;
    mlt_prefill_problem_default(&pp);
    pp.n_heads = p->n_heads, pp.q_dtype = (mlt_dtype)p->q_dtype, pp.kv_dtype = (mlt_dtype)p->kv_dtype;
    st = api(mlt_prefill_plan_create(x->s->g->rt, &pp, &x->prefill), "MHA attention plan");
    for (int i = 0; i < N_BUFFERS && st == MT_OK; i++)
        if (x->bytes[i]) st = mt_backend_mem_alloc(x->b, x->bytes[i], &x->buf[i]);
    if (st != MT_OK) return st;
    /* random inputs (each its own seed); the rope columns of q_mqa are
     * filled here, its nope columns by the absorb GEMM */
    const int fills[] = {B_CACHE, B_Q_NOPE, B_W_UK, B_Q_MQA, B_OUT_LATENT, B_W_UV, B_W_KV, B_Q_MHA};
    for (size_t i = 0; i < sizeof fills / sizeof fills[0] && st == MT_OK; i++)
        st = mt_bench_gpu_fill(x->s->g, x->buf[fills[i]], x->bytes[fills[i]] / e, p->q_dtype, 11 + (unsigned)i);
    int32_t *table = malloc(x->bytes[B_TABLE]);
    if (!table) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < pages; i++) table[i] = (int32_t)i; /* pages in token order */
    const int32_t lens = (int32_t)tokens, cu_q[2] = {0, (int32_t)sq}, cu_k[2] = {0, (int32_t)tokens};
    if (st == MT_OK) st = mt_backend_copy_to_device(x->b, x->buf[B_TABLE], table, x->bytes[B_TABLE], NULL);
    if (st == MT_OK) st = mt_backend_copy_to_device(x->b, x->buf[B_LENS], &lens, 4, NULL);
    if (st == MT_OK) st = mt_backend_copy_to_device(x->b, x->buf[B_CU_Q], cu_q, 8, NULL);
    if (st == MT_OK) st = mt_backend_copy_to_device(x->b, x->buf[B_CU_K], cu_k, 8, NULL);
    free(table);
    if (st != MT_OK) return st;
    /* the GEMMs, row-major, per head a batch entry where the weights are per head */
    const mt_gemm_type gt = p->q_dtype == MT_BF16 ? MT_GEMM_BF16 : MT_GEMM_F16;
    const mt_devptr ws = x->buf[B_GEMM_WS];
    const int N = p->n_heads;
    mt_gemm_shape absorb = {.m = p->sq, .n = LATENT, .k = NOPE, .batch = N, .lda = (int64_t)N * NOPE,
                            .ldb = LATENT, .ldc = (int64_t)N * D, .stride_a = NOPE, .stride_b = NOPE * LATENT,
                            .stride_c = D, .type = gt};
    mt_gemm_shape output = {.m = p->sq, .n = V, .k = LATENT, .batch = N, .lda = (int64_t)N * LATENT, .ldb = V,
                            .ldc = (int64_t)N * V, .stride_a = LATENT, .stride_b = LATENT * V, .stride_c = V,
                            .type = gt};
    mt_gemm_shape decompress = {.m = (int)tokens, .n = N * (NOPE + V), .k = LATENT, .batch = 1, .lda = D,
                                .ldb = (int64_t)N * (NOPE + V), .ldc = (int64_t)N * (NOPE + V), .type = gt};
    st = mt_gemm_create(x->s->lt, &absorb, ws, x->bytes[B_GEMM_WS], &x->absorb);
    if (st == MT_OK) st = mt_gemm_create(x->s->lt, &output, ws, x->bytes[B_GEMM_WS], &x->output);
    if (st == MT_OK) st = mt_gemm_create(x->s->lt, &decompress, ws, x->bytes[B_GEMM_WS], &x->decompress);
    if (st != MT_OK) return st;
    /* the attention calls */
    x->da = (mlt_decode_args){.batch = 1, .seq_len_hint = (int)tokens, .max_blocks_per_seq = (int)pages,
                              .q = (const void *)(uintptr_t)x->buf[B_Q_MQA],
                              .kv_cache = (const void *)(uintptr_t)x->buf[B_CACHE],
                              .block_table = (const int32_t *)(uintptr_t)x->buf[B_TABLE],
                              .seq_lens = (const int32_t *)(uintptr_t)x->buf[B_LENS],
                              .out = (void *)(uintptr_t)x->buf[B_OUT_LATENT],
                              .lse = (float *)(uintptr_t)x->buf[B_LSE],
                              .workspace = (void *)(uintptr_t)x->buf[B_DECODE_WS],
                              .workspace_size = x->bytes[B_DECODE_WS]};
    const int64_t kv_row = (int64_t)N * (NOPE + V);
    x->pa = (mlt_prefill_args){.batch = 1, .max_seqlen_q = p->sq, .causal = 1,
                               .cu_seqlens_q = (const int32_t *)(uintptr_t)x->buf[B_CU_Q],
                               .cu_seqlens_k = (const int32_t *)(uintptr_t)x->buf[B_CU_K],
                               .q = (const void *)(uintptr_t)x->buf[B_Q_MHA],
                               .k = (const void *)(uintptr_t)x->buf[B_KV],
                               .k_pe = (const void *)(uintptr_t)(x->buf[B_CACHE] + LATENT * e),
                               .v = (const void *)(uintptr_t)(x->buf[B_KV] + NOPE * e),
                               .out = (void *)(uintptr_t)x->buf[B_OUT], .lse = (float *)(uintptr_t)x->buf[B_LSE],
                               .k_strides = {kv_row, NOPE + V}, .v_strides = {kv_row, NOPE + V},
                               .k_pe_strides = {D, 0}};
    return MT_OK;
}

static void teardown(xo *x) {
    mt_gemm_destroy(&x->absorb), mt_gemm_destroy(&x->output), mt_gemm_destroy(&x->decompress);
    for (int i = 0; i < N_BUFFERS; i++)
        if (x->buf[i]) mt_backend_mem_free(x->b, x->buf[i]);
    if (x->decode) mlt_plan_destroy(x->decode);
    if (x->prefill) mlt_prefill_plan_destroy(x->prefill);
}

mt_status mt_crossover_measure(const mt_crossover_setup *s, mt_crossover_point *p) {
    if (p->q_dtype != p->kv_dtype || (p->q_dtype != MT_BF16 && p->q_dtype != MT_FP16))
        return mt_fail(MT_ERR_UNSUPPORTED, "crossover: q and kv of one 16-bit type (bf16 or fp16), got %s/%s",
                       mt_dtype_name(p->q_dtype), mt_dtype_name(p->kv_dtype));
    xo x = {.s = s, .b = s->g->b};
    mt_status st = setup(&x, p);
    if (st == MT_OK) st = median_ms(&x, run_mqa, &p->mqa_ms);
    if (st == MT_OK) st = check_out(&x, "MQA", p->q_dtype);
    if (st == MT_OK) st = median_ms(&x, run_mha, &p->mha_ms);
    if (st == MT_OK) st = check_out(&x, "MHA", p->q_dtype);
    if (st == MT_OK) st = median_ms(&x, run_absorb, &p->mqa_absorb_ms);
    if (st == MT_OK) st = median_ms(&x, run_mqa_attention, &p->mqa_attention_ms);
    if (st == MT_OK) st = median_ms(&x, run_output, &p->mqa_output_ms);
    if (st == MT_OK) st = median_ms(&x, run_decompress, &p->mha_decompress_ms);
    if (st == MT_OK) st = median_ms(&x, run_mha_attention, &p->mha_attention_ms);
    if (st == MT_OK) {
        mlt_choice_info c;
        const int tokens = p->context + p->sq;
        if (mlt_plan_explain(x.decode, 1, tokens, 0, &c) == MLT_OK)
            snprintf(p->mqa_variant, sizeof p->mqa_variant, "%s", c.variant);
        if (mlt_prefill_plan_explain_call(x.prefill, 1, p->sq, 1, &c) == MLT_OK)
            snprintf(p->mha_variant, sizeof p->mha_variant, "%s", c.variant);
        const size_t v = s->lt->version;
        snprintf(p->blas, sizeof p->blas, "%s %zu.%zu.%zu", mt_blaslt_vendor_name(s->lt->vendor), v / 10000,
                 v / 100 % 100, v % 100);
    }
    teardown(&x);
    return st;
}
