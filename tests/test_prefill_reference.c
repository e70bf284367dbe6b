/*
 * test_prefill_reference.c - the prefill family's host side without a GPU
 * (label unit, so the sanitizer stage runs it too):
 *   - the CPU reference on cases small enough to check by hand: one token
 *     and one key, causal masking among new tokens, a context before them,
 *     no context, fewer keys than new tokens (rows with no key), varlen
 *     offsets, the softmax weights themselves;
 *   - k's rope part given apart (k_pe, one row for all heads) computes what
 *     the concatenated k does;
 *   - the merge: context chunk (non-causal) merged with the new tokens
 *     (causal) equals one call over context + new tokens; empty states;
 *   - the family's constraints and argument checks refuse bad input with a
 *     message naming it; its built-in rule gives a valid default.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "runtime/gpu/backend.h"
#include "kernels/dtype.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "kernels/mla_prefill/params.h"
#include "kernels/mla_prefill/prefill_reference.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd_unit(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void to_bf16(uint16_t *dst, const double *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mt_host_f32_to_bf16((float)src[i]);
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (1.0 + fabs(b)); }

/* a problem of qk dim d, v dim dl over bf16 arrays of doubles given exactly */
typedef struct small {
    uint16_t q[64], k[64], v[64];
    int32_t cu_q[4], cu_k[4];
    double out[64], lse[32];
} small;

static void run_small(small *c, int d, int dl, int batch, int causal, double scale, const double *q, int nq,
                      const double *k, int nk, const double *v) {
    to_bf16(c->q, q, (size_t)nq * d);
    to_bf16(c->k, k, (size_t)nk * d);
    to_bf16(c->v, v, (size_t)nk * dl);
    mt_prefill_host_problem p = {.s = {.d = d, .dl = dl, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                                 .batch = batch, .n_heads = 1, .nope = d, .causal = causal, .scale = scale,
                                 .cu_q = c->cu_q, .cu_k = c->cu_k, .q = c->q, .k = c->k, .v = c->v};
    mt_prefill_reference(&p, c->out, c->lse);
}

static void hand_checked(void) {
    small c;
    /* one token, one key: s = 0.5 * (1*2) = 1, out = v, lse = s */
    {
        double q[] = {1, 0}, k[] = {2, 0}, v[] = {3};
        memcpy(c.cu_q, (int32_t[]){0, 1}, 8), memcpy(c.cu_k, (int32_t[]){0, 1}, 8);
        run_small(&c, 2, 1, 1, 1, 0.5, q, 1, k, 1, v);
        CHECK_MSG(near(c.out[0], 3) && near(c.lse[0], 1), "one token: out %g lse %g", c.out[0], c.lse[0]);
    }
    /* the softmax itself: scores 0 and 1, v 0 and 1: out = e / (1 + e), lse = log(1 + e) */
    {
        double q[] = {1, 0}, k[] = {0, 0, 1, 0}, v[] = {0, 1};
        memcpy(c.cu_q, (int32_t[]){0, 1}, 8), memcpy(c.cu_k, (int32_t[]){0, 2}, 8);
        run_small(&c, 2, 1, 1, 0, 1.0, q, 1, k, 2, v);
        CHECK_MSG(near(c.out[0], M_E / (1 + M_E)) && near(c.lse[0], log(1 + M_E)), "weights: out %g lse %g", c.out[0],
                  c.lse[0]);
    }
    /* q = 0 makes every score 0: out is the mean of the visible v, lse the
     * log of their count, so the mask can be read off the outputs */
    double q0[8] = {0}, k0[16] = {0};
    {
        /* causal, no context: token i sees keys 0..i */
        double v[] = {1, 2, 4};
        memcpy(c.cu_q, (int32_t[]){0, 3}, 8), memcpy(c.cu_k, (int32_t[]){0, 3}, 8);
        run_small(&c, 2, 1, 1, 1, 1.0, q0, 3, k0, 3, v);
        CHECK_MSG(near(c.out[0], 1) && near(c.out[1], 1.5) && near(c.out[2], 7.0 / 3), "causal: %g %g %g", c.out[0],
                  c.out[1], c.out[2]);
        CHECK(near(c.lse[0], 0) && near(c.lse[1], log(2)) && near(c.lse[2], log(3)));
    }
    {
        /* 2 context keys + 2 new tokens: token 0 sees 3 keys, token 1 all 4 */
        double v[] = {1, 2, 4, 8};
        memcpy(c.cu_q, (int32_t[]){0, 2}, 8), memcpy(c.cu_k, (int32_t[]){0, 4}, 8);
        run_small(&c, 2, 1, 1, 1, 1.0, q0, 2, k0, 4, v);
        CHECK_MSG(near(c.out[0], 7.0 / 3) && near(c.out[1], 15.0 / 4), "context: %g %g", c.out[0], c.out[1]);
        CHECK(near(c.lse[0], log(3)) && near(c.lse[1], log(4)));
        /* the same, not causal: both see all 4 */
        run_small(&c, 2, 1, 1, 0, 1.0, q0, 2, k0, 4, v);
        CHECK_MSG(near(c.out[0], 15.0 / 4) && near(c.out[1], 15.0 / 4), "non-causal: %g %g", c.out[0], c.out[1]);
    }
    {
        /* causal with fewer keys than new tokens: the first two see none */
        double v[] = {5};
        memcpy(c.cu_q, (int32_t[]){0, 3}, 8), memcpy(c.cu_k, (int32_t[]){0, 1}, 8);
        run_small(&c, 2, 1, 1, 1, 1.0, q0, 3, k0, 1, v);
        CHECK_MSG(c.out[0] == 0 && c.out[1] == 0 && near(c.out[2], 5), "short: %g %g %g", c.out[0], c.out[1], c.out[2]);
        CHECK(c.lse[0] == -INFINITY && c.lse[1] == -INFINITY && near(c.lse[2], 0));
    }
    {
        /* varlen: request 0 (1 new token, no context) and request 1 (2 new
         * tokens after 1 context key) in one call keep to their own rows */
        double v[] = {3, 1, 2, 4}; /* request 0's key, then request 1's three */
        memcpy(c.cu_q, (int32_t[]){0, 1, 3}, 12), memcpy(c.cu_k, (int32_t[]){0, 1, 4}, 12);
        run_small(&c, 2, 1, 2, 1, 1.0, q0, 3, k0, 4, v);
        CHECK_MSG(near(c.out[0], 3) && near(c.out[1], 1.5) && near(c.out[2], 7.0 / 3), "varlen: %g %g %g", c.out[0],
                  c.out[1], c.out[2]);
        CHECK(near(c.lse[0], 0) && near(c.lse[1], log(2)) && near(c.lse[2], log(3)));
    }
}

enum { N = 3, D = 6, NOPE = 4, DL = 5 };

/* two requests with contexts, random data, 3 heads */
typedef struct random_batch {
    int32_t cu_q[3], cu_k[3], cu_ctx[3], cu_new[3];
    uint16_t q[7 * N * D], k[13 * N * D], v[13 * N * DL];
    uint16_t k_ctx[13 * N * D], v_ctx[13 * N * DL], k_new[13 * N * D], v_new[13 * N * DL];
} random_batch;

static mt_prefill_host_problem problem_of(const random_batch *r, int causal, const int32_t *cu_k, const void *k,
                                          const void *v) {
    return (mt_prefill_host_problem){.s = {.d = D, .dl = DL, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                                     .batch = 2, .n_heads = N, .nope = D, .causal = causal, .scale = 0.7,
                                     .cu_q = r->cu_q, .cu_k = cu_k, .q = r->q, .k = k, .v = v};
}

static void fill(uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mt_host_f32_to_bf16((float)(2 * rnd_unit()));
}

/* request 0: 3 new tokens after 4 context keys; request 1: 4 after 2 */
static void make_batch(random_batch *r) {
    memcpy(r->cu_q, (int32_t[]){0, 3, 7}, sizeof r->cu_q);
    memcpy(r->cu_k, (int32_t[]){0, 7, 13}, sizeof r->cu_k);
    memcpy(r->cu_ctx, (int32_t[]){0, 4, 6}, sizeof r->cu_ctx);
    memcpy(r->cu_new, (int32_t[]){0, 3, 7}, sizeof r->cu_new);
    fill(r->q, sizeof r->q / 2), fill(r->k, sizeof r->k / 2), fill(r->v, sizeof r->v / 2);
    /* the same keys split into the context chunk and the new tokens' keys */
    int ctx[2] = {4, 2}, nctx = 0, nnew = 0;
    for (int b = 0; b < 2; b++)
        for (int j = r->cu_k[b]; j < r->cu_k[b + 1]; j++) {
            int is_ctx = j - r->cu_k[b] < ctx[b], dst = is_ctx ? nctx++ : nnew++;
            memcpy((is_ctx ? r->k_ctx : r->k_new) + (size_t)dst * N * D, r->k + (size_t)j * N * D, 2 * N * D);
            memcpy((is_ctx ? r->v_ctx : r->v_new) + (size_t)dst * N * DL, r->v + (size_t)j * N * DL, 2 * N * DL);
        }
}

static void merge_equals_whole(void) {
    random_batch r;
    make_batch(&r);
    enum { ROWS = 7 * N };
    double whole[ROWS * DL], whole_lse[ROWS], a[ROWS * DL], a_lse[ROWS], b[ROWS * DL], b_lse[ROWS];
    double merged[ROWS * DL], merged_lse[ROWS];
    mt_prefill_host_problem p = problem_of(&r, 1, r.cu_k, r.k, r.v);
    mt_prefill_reference(&p, whole, whole_lse);
    p = problem_of(&r, 0, r.cu_ctx, r.k_ctx, r.v_ctx);
    mt_prefill_reference(&p, a, a_lse);
    p = problem_of(&r, 1, r.cu_new, r.k_new, r.v_new);
    mt_prefill_reference(&p, b, b_lse);
    mt_prefill_merge_reference(ROWS, DL, a, a_lse, b, b_lse, merged, merged_lse);
    int bad = 0;
    for (int i = 0; i < ROWS * DL; i++) bad += !near(merged[i], whole[i]);
    for (int i = 0; i < ROWS; i++) bad += !near(merged_lse[i], whole_lse[i]);
    CHECK_MSG(bad == 0, "context merged with new tokens differs from the whole in %d values", bad);
    /* and the halves are not the whole by themselves (the test can fail) */
    CHECK(!near(a[0], whole[0]) && !near(b_lse[0], whole_lse[0]));

    /* empty states: -inf (ours) and +inf (FlashAttention 2's) weigh 0 */
    double x[2] = {1.5, -2}, lx = 0.25, nan_out[2] = {NAN, NAN}, e_inf = -INFINITY, p_inf = INFINITY, o[2], lo;
    mt_prefill_merge_reference(1, 2, x, &lx, nan_out, &e_inf, o, &lo);
    CHECK_MSG(o[0] == 1.5 && o[1] == -2 && lo == 0.25, "merge with an empty state: %g %g %g", o[0], o[1], lo);
    mt_prefill_merge_reference(1, 2, nan_out, &p_inf, x, &lx, o, &lo);
    CHECK_MSG(o[0] == 1.5 && o[1] == -2 && lo == 0.25, "merge with a +inf state: %g %g %g", o[0], o[1], lo);
    mt_prefill_merge_reference(1, 2, nan_out, &p_inf, nan_out, &e_inf, o, &lo);
    CHECK_MSG(o[0] == 0 && o[1] == 0 && lo == -INFINITY, "two empty states: %g %g %g", o[0], o[1], lo);
    /* equal lse: the mean, lse + log 2 */
    double y[2] = {0.5, 4};
    mt_prefill_merge_reference(1, 2, x, &lx, y, &lx, o, &lo);
    CHECK(near(o[0], 1.0) && near(o[1], 1.0) && near(lo, 0.25 + log(2)));
}

/* k's rope columns apart (k_pe, one row per key for all heads) equal a k
 * whose every head carries those columns */
static void split_rope(void) {
    random_batch r;
    make_batch(&r);
    uint16_t k_nope[13 * N * NOPE], k_pe[13 * (D - NOPE)];
    fill(k_pe, sizeof k_pe / 2);
    for (int j = 0; j < 13; j++)
        for (int h = 0; h < N; h++) {
            memcpy(k_nope + ((size_t)j * N + h) * NOPE, r.k + ((size_t)j * N + h) * D, 2 * NOPE);
            memcpy(r.k + ((size_t)j * N + h) * D + NOPE, k_pe + (size_t)j * (D - NOPE), 2 * (D - NOPE));
        }
    enum { ROWS = 7 * N };
    double joined[ROWS * DL], joined_lse[ROWS], apart[ROWS * DL], apart_lse[ROWS];
    mt_prefill_host_problem p = problem_of(&r, 1, r.cu_k, r.k, r.v);
    mt_prefill_reference(&p, joined, joined_lse);
    p.k = k_nope, p.k_pe = k_pe, p.nope = NOPE;
    mt_prefill_reference(&p, apart, apart_lse);
    CHECK(memcmp(joined, apart, sizeof joined) == 0 && memcmp(joined_lse, apart_lse, sizeof joined_lse) == 0);
}

static void refused(mt_status st, const char *needle) {
    CHECK_MSG(st == MT_ERR_INVALID_ARGUMENT && strstr(mt_last_error(), needle),
              "expected a refusal naming '%s', got %s: %s", needle, mt_status_name(st), mt_last_error());
}

static void constraints_and_rule(void) {
    mt_target sm90, gfx942;
    CHECK_OK(mt_target_for_arch("sm_90", &sm90));
    CHECK_OK(mt_target_for_arch("gfx942", &gfx942));
    mt_problem_static s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    CHECK(mt_family_find("mla_prefill") == &mt_family_mla_prefill);
    CHECK(mt_family_for_kind("mla_prefill") == &mt_family_mla_prefill);
    mt_variant v;
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=16,kv_tile=32,block_threads=128,mma=0", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    CHECK_OK(mt_variant_validate(&v, &s, &gfx942));
    /* 64 queries x 64 keys of 192 + 128 columns: ~200 KB, over gfx942's 64 KiB */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=256,mma=0", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    refused(mt_variant_validate(&v, &s, &gfx942), "bytes of shared memory");
    /* 64 x 128 outputs over 64 threads: 128 accumulators per thread */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=16,block_threads=64,mma=0", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "128 output accumulators per thread");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=1,kv_tile=16,block_threads=64,mma=0", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &gfx942)); /* one wave of 64 */
    mt_problem_static fp8 = s, paged = s, wide = s;
    fp8.kv_dtype = MT_FP8_E4M3, paged.page_size = 64, wide.d = 576;
    refused(mt_variant_validate(&v, &fp8, &sm90), "all fp8e4m3"); /* bf16 q over fp8 k/v */
    fp8.q_dtype = MT_FP8_E4M3;
    refused(mt_variant_validate(&v, &fp8, &sm90), "fp8 runs on the wgmma path only");
    {   /* e4m3 on the wgmma path: its tiles half as wide, v^T in a workspace, out in bf16 */
        mt_variant w;
        CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=256,mma=2", &w));
        CHECK_OK(mt_variant_validate(&w, &fp8, &sm90));
        CHECK(mt_mla_prefill_shared_bytes(w.values, &fp8) == 1024 + 128 * 192 + 2 * 128 * (192 + 128) + 64);
        CHECK(mt_mla_prefill_out_dtype(&fp8) == MT_BF16 && mt_mla_prefill_out_dtype(&s) == s.q_dtype);
        CHECK(mt_mla_prefill_vt_keys(1) == 128 && mt_mla_prefill_vt_keys(128) == 128 && mt_mla_prefill_vt_keys(129) == 256);
        CHECK(mt_mla_prefill_workspace_bytes(w.values, &fp8, 3, 16, 1000) == (size_t)3 * 16 * 128 * 1024);
        CHECK(mt_mla_prefill_workspace_bytes(w.values, &s, 3, 16, 1000) == 0); /* 16-bit v is read as it is */
        refused(mt_variant_validate(&w, &fp8, &gfx942), "not on gfx942");
    }
    refused(mt_variant_validate(&v, &paged, &sm90), "page size must be 1");
    refused(mt_variant_validate(&v, &wide, &sm90), "qk head dim");
    /* mma=1: 16 rows per warp (mma.sync) or wave (MFMA), one 16-bit type */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=128,mma=1", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    refused(mt_variant_validate(&v, &s, &gfx942), "tile_q must be 16 x 2 waves");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=32,kv_tile=64,block_threads=128,mma=1", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &gfx942));
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=256,mma=1", &v));
    refused(mt_variant_validate(&v, &s, &gfx942), "bytes of shared memory"); /* 68.6 KB of LDS */
    const mt_target sm75 = {.arch = "sm_75", .warp_size = 32, .shared_max = 65536}; /* no mma.sync m16n8k16 */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=32,kv_tile=32,block_threads=64,mma=1", &v));
    refused(mt_variant_validate(&v, &s, &sm75), "not on sm_75");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=128,mma=1", &v));
    mt_problem_static mixed = s;
    mixed.q_dtype = MT_FP16;
    refused(mt_variant_validate(&v, &mixed, &sm90), "one type");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=32,kv_tile=64,block_threads=128,mma=1", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "tile_q must be 16 x 4 warps");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=32,kv_tile=64,block_threads=64,mma=3", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "mma=3 is not an allowed value");
    /* mma=2: wgmma on sm_90 only, a warpgroup per 64 rows, kv_tile 64 / 128,
     * whole 64-column blocks of D, Dl 64 or 128, one 16-bit type */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=256,mma=2", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    CHECK(mt_mla_prefill_shared_bytes(v.values, &s) == 214080); /* 1 KB align + q 48 KB + 2 x (k 48 + v 32 KB) + 8 barriers */
    refused(mt_variant_validate(&v, &s, &gfx942), "mma=2 runs on wgmma (NVIDIA sm_90), not on gfx942");
    const mt_target sm80 = {.arch = "sm_80", .warp_size = 32, .shared_max = 232448};
    refused(mt_variant_validate(&v, &s, &sm80), "not on sm_80");
    refused(mt_variant_validate(&v, &mixed, &sm90), "mma=2 needs q and k/v of one type");
    mt_problem_static d160 = s, dl256 = s;
    d160.d = 160, dl256.dl = 256;
    refused(mt_variant_validate(&v, &d160, &sm90), "D a multiple of 64");
    refused(mt_variant_validate(&v, &dl256, &sm90), "Dl 64 or 128");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=128,mma=2", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "tile_q 64 on 128 threads or 128 on 256");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=32,block_threads=128,mma=2", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "kv_tile 64 or 128");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=128,mma=2", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    /* out_stores: 16-byte stores of out on the wgmma path only; 4 or 16 */
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=16", &v));
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=32,block_threads=256,mma=1,out_stores=16", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "out_stores=16 is a form of the wgmma path's epilogue (mma=2)");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=8", &v));
    refused(mt_variant_validate(&v, &s, &sm90), "out_stores=8 is not an allowed value");

    /* the rule: the measured choice of the target where it fits, else the
     * declared default */
    mt_shape shape = {.s = s, .n_heads = 16, .sq = 1};
    mt_heuristic_set set;
    CHECK_OK(mt_mla_prefill_heuristic_set(&shape, &gfx942, &set));
    CHECK(set.n == 1 && set.aware == -1 && mt_variant_validate(&set.variants[0], &s, &gfx942) == MT_OK);
    char why[200];
    mt_mla_prefill_heuristic_explain(&set, 0, why, sizeof why);
    CHECK_MSG(strstr(why, "tile_q=16,kv_tile=32,block_threads=128,mma=0") && strstr(why, "untuned"), "%s", why);
    /* sm_90, 16-bit: the grid form past 1024 new tokens per request (the
     * dispatcher's call: seq_len = the longest request's new tokens), the
     * persistent form up to it */
    CHECK_OK(mt_mla_prefill_heuristic_set(&shape, &sm90, &set));
    CHECK(set.n == 2);
    const mt_call long_call = {.batch = 2, .seq_len = 4096, .max_len = 4096};
    const mt_call short_call = {.batch = 32, .seq_len = 1024, .max_len = 1024};
    int pick = mt_mla_prefill_heuristic_pick(&set, &shape, &long_call, 132);
    mt_mla_prefill_heuristic_explain(&set, pick, why, sizeof why);
    CHECK_MSG(pick == 0 && strstr(why, "tile_q=128,kv_tile=128,block_threads=256,mma=2,out_stores=16 (untuned; the "
                                       "grid form"), "%s", why);
    pick = mt_mla_prefill_heuristic_pick(&set, &shape, &short_call, 132);
    mt_mla_prefill_heuristic_explain(&set, pick, why, sizeof why);
    CHECK_MSG(pick == 1 && strstr(why, "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16 "
                                       "(untuned; the persistent form"), "%s", why);
    mt_problem_static fp8s = s;
    fp8s.q_dtype = fp8s.kv_dtype = MT_FP8_E4M3;
    /* fp8: the grid 64 x 64 for short requests and for long ones at few
     * heads, the persistent 128 x 128 from 512 new tokens a request up to
     * 1024, or at any length from 64 heads */
    mt_shape fp8_shape = {.s = fp8s, .n_heads = 16, .sq = 1};
    CHECK_OK(mt_mla_prefill_heuristic_set(&fp8_shape, &sm90, &set));
    CHECK(set.n == 2);
    const struct {
        int heads, tokens, pick;
    } fp8_picks[] = {{16, 256, 0}, {16, 511, 0}, {16, 512, 1}, {16, 1024, 1}, {16, 1025, 0}, {16, 8192, 0},
                     {63, 8192, 0}, {64, 8192, 1}, {128, 256, 0}, {128, 1024, 1}, {128, 8192, 1}};
    for (size_t i = 0; i < sizeof fp8_picks / sizeof fp8_picks[0]; i++) {
        fp8_shape.n_heads = fp8_picks[i].heads;
        const mt_call call = {.batch = 1, .seq_len = fp8_picks[i].tokens, .max_len = fp8_picks[i].tokens};
        pick = mt_mla_prefill_heuristic_pick(&set, &fp8_shape, &call, 132);
        mt_mla_prefill_heuristic_explain(&set, pick, why, sizeof why);
        CHECK_MSG(pick == fp8_picks[i].pick &&
                      strstr(why, pick ? "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16 "
                                         "(untuned; fp8, the persistent form"
                                       : "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=16 (untuned; fp8, "
                                         "the grid form"),
                  "fp8, %d heads, %d new tokens: %s", fp8_picks[i].heads, fp8_picks[i].tokens, why);
    }
    mt_shape mixed_shape = {.s = mixed, .n_heads = 16, .sq = 1}; /* the wgmma point does not fit: the default */
    CHECK_OK(mt_mla_prefill_heuristic_set(&mixed_shape, &sm90, &set));
    mt_mla_prefill_heuristic_explain(&set, 0, why, sizeof why);
    CHECK_MSG(set.n == 1 && strstr(why, "mma=0"), "%s", why);
}

/* A backend that records the wgmma launch: its tensor maps' shapes and
 * the launch's block, for wgmma_launch below. */
static int maps_made, launches;
static uint64_t map_dims[3][3], map_strides[3][2];
static mt_devptr map_base[3];
static unsigned launch_block[3], first_grid[3], last_grid[3];
static mt_status record_map(mt_backend *b, mt_devptr base, unsigned elem, const uint64_t dims[3],
                            const uint64_t strides[2], const unsigned box[3], void *out) {
    (void)b, (void)elem;
    /* k, k_pe, 16-bit v: 64 columns of a head over 128 tokens; fp8's v^T: 64 keys over 128 columns */
    CHECK((box[0] == 64 && box[1] == 1 && box[2] == 128) || (box[0] == 64 && box[1] == 128 && box[2] == 1));
    if (maps_made < 3) {
        memcpy(map_dims[maps_made], dims, sizeof map_dims[0]), memcpy(map_strides[maps_made], strides, sizeof map_strides[0]);
        map_base[maps_made] = base;
    }
    maps_made++;
    memset(out, 0, MT_TENSOR_MAP_BYTES);
    return MT_OK;
}
static mt_status record_launch(mt_backend *b, mt_function f, const unsigned g[3], const unsigned bl[3], size_t sh,
                               mt_stream st, void **args) {
    (void)b, (void)f, (void)g, (void)sh, (void)st, (void)args;
    memcpy(launch_block, bl, sizeof launch_block);
    if (launches++ == 0) memcpy(first_grid, g, sizeof first_grid);
    memcpy(last_grid, g, sizeof last_grid);
    return MT_OK;
}

/* The persistent form (persistent=1): a grid of one work-group an SM (its
 * launch bounds give one the register file), never more than the grid
 * form's tiles, one dimension, each of block_threads consumers and a
 * producer warpgroup; compute_units is required; a batch whose tiles pass
 * 31 bits is refused; only mma=2 has the form; a variant without it parses
 * and prints as before (the databases' names). */
static mt_status any_map(mt_backend *b, mt_devptr base, unsigned elem, const uint64_t dims[3],
                         const uint64_t strides[2], const unsigned box[3], void *out) {
    (void)b, (void)base, (void)elem, (void)dims, (void)strides, (void)box;
    memset(out, 0, MT_TENSOR_MAP_BYTES);
    return MT_OK;
}
static void persistent_launch(void) {
    const mt_backend_iface iface = {.launch = record_launch, .tensor_map_3d = any_map};
    mt_backend b = {.name = "recording", .iface = &iface, .has_driver = 1};
    mt_problem_static s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    mt_kernels k;
    memset(&k, 0, sizeof k);
    k.fn[MT_PREFILL_FN] = (mt_function)(uintptr_t)0x1000, k.fn[MT_PREFILL_VT_FN] = (mt_function)(uintptr_t)0x2000;
    const mt_devptr p = 0x100000;
    mt_mla_prefill_args a = {.batch = 2, .n_heads = 16, .max_q = 300, .nope = 192, .causal = 1, .scale = 0.07f,
                             .cu_q = p, .cu_k = p + 64, .q = {.ptr = p}, .k = {.ptr = p + 0x10000},
                             .v = {.ptr = p + 0x30000}, .out = {.ptr = p}, .lse = {.ptr = p}, .compute_units = 132};
    static const struct {
        const char *variant;
        int fp8, compute_units;
        unsigned grid;
    } cases[] = {
        {"tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1", 0, 132, 96}, /* 3 x 16 x 2 tiles */
        {"tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1", 0, 40, 40},  /* one an SM */
        {"tile_q=64,kv_tile=64,block_threads=128,mma=2,persistent=1", 0, 40, 40},    /* 105 KB: one all the same */
        {"tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1", 1, 40, 40},  /* fp8 */
        {"tile_q=128,kv_tile=128,block_threads=256,mma=2", 0, 40, 3},                /* the grid form */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_variant v;
        CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, cases[i].variant, &v));
        mt_problem_static si = s;
        if (cases[i].fp8) si.q_dtype = si.kv_dtype = MT_FP8_E4M3;
        mt_mla_prefill_args ai = a;
        ai.compute_units = cases[i].compute_units;
        if (cases[i].fp8) ai.max_k = 300, ai.v_scale = 1.0f, ai.workspace = p + 0x800000, ai.workspace_bytes = 1 << 24;
        launches = 0;
        CHECK_OK(mt_mla_prefill_launch(&b, &k, &v, &si, &ai, NULL));
        const int persistent = v.values[MT_PF_PERSISTENT];
        CHECK_MSG(last_grid[0] == cases[i].grid && last_grid[1] == (persistent ? 1u : 16u) &&
                      last_grid[2] == (persistent ? 1u : 2u),
                  "%s: grid %u x %u x %u, want %u", cases[i].variant, last_grid[0], last_grid[1], last_grid[2],
                  cases[i].grid);
        const unsigned threads = (unsigned)v.values[MT_PF_BLOCK_THREADS] + (persistent ? MT_PREFILL_PRODUCER_THREADS : 0);
        CHECK_MSG(launch_block[0] == threads, "%s: %u threads, want %u (the consumers%s)", cases[i].variant,
                  launch_block[0], threads, persistent ? " and the producer warpgroup" : "");
    }
    mt_variant v;
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1", &v));
    a.compute_units = 0;
    refused(mt_mla_prefill_launch(NULL, &k, &v, &s, &a, NULL), "compute_units must be >= 1 (got 0)");
    a.compute_units = 132, a.batch = 65535, a.n_heads = 128, a.max_q = 1 << 20;
    refused(mt_mla_prefill_launch(NULL, &k, &v, &s, &a, NULL), "too many for the persistent variant");

    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    CHECK_OK(mt_variant_validate(&v, &s, &t));
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=32,block_threads=128,mma=1,persistent=1", &v));
    refused(mt_variant_validate(&v, &s, &t), "persistent=1 is a form of the wgmma path (mma=2), not of mma=1");
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=32,block_threads=128,mma=1", &v));
    CHECK(v.values[MT_PF_PERSISTENT] == 0);
    char name[160];
    mt_variant_format(&v, name, sizeof name);
    CHECK_MSG(strcmp(name, "tile_q=64,kv_tile=32,block_threads=128,mma=1") == 0, "%s", name);
}

/* The wgmma path's host side: the three maps (k's first nope columns,
 * k_pe as one row for all heads when apart, v), a token extent of 2^31 (the
 * kernel asks only for boxes inside the batch's keys), 2 x tile_q threads;
 * a backend without 3-D maps fails naming it; bad map arguments refused. */
static void wgmma_launch(void) {
    const mt_backend_iface iface = {.launch = record_launch, .tensor_map_3d = record_map};
    mt_backend b = {.name = "recording", .iface = &iface, .has_driver = 1};
    mt_problem_static s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    mt_variant w;
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=256,mma=2", &w));
    mt_kernels k;
    memset(&k, 0, sizeof k);
    k.fn[MT_PREFILL_FN] = (mt_function)(uintptr_t)0x1000;
    const mt_devptr p = 0x100000;
    mt_mla_prefill_args a = {.batch = 2, .n_heads = 16, .max_q = 300, .nope = 128, .causal = 1, .scale = 0.07f,
                             .cu_q = p, .cu_k = p + 64, .q = {.ptr = p}, .k = {.ptr = p + 0x10000},
                             .k_pe = {.ptr = p + 0x20000}, .v = {.ptr = p + 0x30000}, .out = {.ptr = p},
                             .lse = {.ptr = p}};
    CHECK_OK(mt_mla_prefill_launch(&b, &k, &w, &s, &a, NULL));
    CHECK(maps_made == 3 && launches == 1 && launch_block[0] == 256);
    /* k: [tokens, 16, 128]; k_pe: [tokens, 64] shared; v: [tokens, 16, 128] */
    CHECK(map_base[0] == p + 0x10000 && map_dims[0][0] == 128 && map_dims[0][1] == 16 && map_dims[0][2] == 1ull << 31);
    CHECK(map_strides[0][0] == 256 && map_strides[0][1] == 16 * 256);
    CHECK(map_base[1] == p + 0x20000 && map_dims[1][0] == 64 && map_dims[1][1] == 1 && map_strides[1][1] == 128);
    CHECK(map_dims[2][0] == 128 && map_dims[2][1] == 16 && map_strides[2][0] == 256 && map_strides[2][1] == 4096);
    /* k holding all D columns (nope = D, no k_pe): k's map spans them, no k_pe map */
    maps_made = 0;
    a.nope = 192, a.k_pe.ptr = 0;
    CHECK_OK(mt_mla_prefill_launch(&b, &k, &w, &s, &a, NULL));
    CHECK(maps_made == 2 && map_dims[0][0] == 192 && map_dims[0][1] == 16 && map_strides[0][0] == 384 &&
          map_strides[0][1] == 16 * 384 && map_dims[1][0] == 128);
    /* fp8: v transposed into the workspace by a kernel of its own first,
     * v's map over v^T ([request][head][column][key], keys rounded up to
     * 128), k's over 1-byte elements */
    mt_problem_static s8 = s;
    s8.q_dtype = s8.kv_dtype = MT_FP8_E4M3;
    k.fn[MT_PREFILL_VT_FN] = (mt_function)(uintptr_t)0x2000;
    a.nope = 128, a.k_pe.ptr = p + 0x20000, a.max_k = 1000, a.v_scale = 0.5f, a.workspace = p + 0x800000;
    a.workspace_bytes = (size_t)2 * 16 * 128 * 1024;
    maps_made = 0, launches = 0;
    CHECK_OK(mt_mla_prefill_launch(&b, &k, &w, &s8, &a, NULL));
    CHECK(launches == 2 && launch_block[0] == 256 && first_grid[0] == 16 && first_grid[1] == 16 && first_grid[2] == 2);
    CHECK(maps_made == 3 && map_strides[0][0] == 128 && map_strides[0][1] == 16 * 128);
    CHECK(map_base[2] == a.workspace && map_dims[2][0] == 1024 && map_dims[2][1] == 128 && map_dims[2][2] == 32 &&
          map_strides[2][0] == 1024 && map_strides[2][1] == 128 * 1024);
    a.workspace_bytes -= 1; /* one byte short */
    CHECK_STATUS(mt_mla_prefill_launch(&b, &k, &w, &s8, &a, NULL), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "workspace of 4194304 bytes") != NULL, "%s", mt_last_error());
    a.workspace_bytes += 1, a.v_scale = 0.0f;
    CHECK_STATUS(mt_mla_prefill_launch(&b, &k, &w, &s8, &a, NULL), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "v scale 0") != NULL, "%s", mt_last_error());
    a.v_scale = 0.5f, a.nope = 192, a.k_pe.ptr = 0, a.max_k = 0, a.workspace = 0, a.workspace_bytes = 0;
    /* the wrapper's own checks, before the backend */
    unsigned char map[MT_TENSOR_MAP_BYTES];
    const uint64_t dims[3] = {64, 16, 100}, bad_strides[2] = {136, 2176};
    const unsigned box[3] = {64, 1, 128}, narrow[3] = {16, 1, 128};
    CHECK_STATUS(mt_backend_tensor_map_3d(&b, p, 2, dims, bad_strides, box, map), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "multiples of 16 bytes") != NULL);
    const uint64_t strides[2] = {128, 2048};
    CHECK_STATUS(mt_backend_tensor_map_3d(&b, p, 2, dims, strides, narrow, map), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "boxes of 16 columns") != NULL);
    const mt_backend_iface no_maps = {.launch = record_launch};
    b.iface = &no_maps;
    CHECK_STATUS(mt_mla_prefill_launch(&b, &k, &w, &s, &a, NULL), MT_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(mt_last_error(), "tensor_map_3d") != NULL, "%s", mt_last_error());
}

static void argument_checks(void) {
    mt_problem_static s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_FP16};
    const mt_devptr p = 0x10000;
    const mt_mla_prefill_args good = {.batch = 2, .n_heads = 16, .max_q = 5, .nope = 192, .causal = 1,
                                      .scale = 0.07f, .cu_q = p, .cu_k = p + 64, .q = {.ptr = p}, .k = {.ptr = p},
                                      .v = {.ptr = p}, .out = {.ptr = p}, .lse = {.ptr = p}};
    CHECK_OK(mt_mla_prefill_check_args(&s, &good));
    mt_mla_prefill_args a = good;
    a.cu_q = 0;
    refused(mt_mla_prefill_check_args(&s, &a), "cu_seqlens_q");
    a = good, a.nope = 128;
    refused(mt_mla_prefill_check_args(&s, &a), "k_pe is NULL");
    a.k_pe.ptr = p;
    CHECK_OK(mt_mla_prefill_check_args(&s, &a));
    a = good, a.k_pe.ptr = p;
    refused(mt_mla_prefill_check_args(&s, &a), "leaves it no columns");
    a = good, a.nope = 193;
    refused(mt_mla_prefill_check_args(&s, &a), "nope 193");
    a = good, a.causal = 2;
    refused(mt_mla_prefill_check_args(&s, &a), "causal 2");
    a = good, a.max_q = 0;
    refused(mt_mla_prefill_check_args(&s, &a), "max_q 0");
    a = good, a.n_heads = 129;
    refused(mt_mla_prefill_check_args(&s, &a), "head count 129");
    a = good, a.scale = NAN;
    refused(mt_mla_prefill_check_args(&s, &a), "softmax scale");
    a = good, a.v.ptr = p + 1;
    refused(mt_mla_prefill_check_args(&s, &a), "v is not aligned");
    a = good, a.out.t_stride = 128;
    refused(mt_mla_prefill_check_args(&s, &a), "out has a zero head stride");
    a = good, a.lse.t_stride = 1, a.lse.h_stride = 1000;
    CHECK_OK(mt_mla_prefill_check_args(&s, &a)); /* head-major lse */
    a = good, a.q.h_stride = -1;
    refused(mt_mla_prefill_check_args(&s, &a), "q has a negative stride");

    /* the wgmma variant copies rows in 16-byte pieces and k in 64-column
     * blocks: refused before anything is launched (no backend needed) */
    mt_problem_static same = s;
    same.kv_dtype = MT_BF16;
    mt_variant w;
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=128,kv_tile=128,block_threads=256,mma=2", &w));
    mt_kernels kernels;
    memset(&kernels, 0, sizeof kernels);
    kernels.fn[MT_PREFILL_FN] = (mt_function)(uintptr_t)0x1000; /* never called: every case below is refused */
    a = good, a.q.ptr = p + 8;
    refused(mt_mla_prefill_launch(NULL, &kernels, &w, &same, &a, NULL), "q's rows 16-byte aligned");
    a = good, a.k.t_stride = 16 * 196, a.k.h_stride = 196;
    refused(mt_mla_prefill_launch(NULL, &kernels, &w, &same, &a, NULL), "k's rows 16-byte aligned");
    a = good, a.nope = 96, a.k_pe.ptr = p;
    refused(mt_mla_prefill_launch(NULL, &kernels, &w, &same, &a, NULL), "nope 96 must be a multiple of 64");
    a = good, a.out.ptr = p + 2;
    refused(mt_mla_prefill_launch(NULL, &kernels, &w, &same, &a, NULL), "out's rows 4-byte aligned");

    const mt_mla_prefill_merge_args mgood = {.tokens = 9, .n_heads = 16, .out_a = {.ptr = p}, .lse_a = {.ptr = p + 4},
                                             .out_b = {.ptr = p}, .lse_b = {.ptr = p + 8}, .out = {.ptr = p},
                                             .lse = {.ptr = p + 12}};
    CHECK_OK(mt_mla_prefill_check_merge_args(&s, &mgood));
    mt_mla_prefill_merge_args m = mgood;
    m.lse.ptr = m.lse_b.ptr;
    refused(mt_mla_prefill_check_merge_args(&s, &m), "lse is lse_b");
    m = mgood, m.out_b.ptr = 0;
    refused(mt_mla_prefill_check_merge_args(&s, &m), "out_b is NULL");
    m = mgood, m.tokens = -1;
    refused(mt_mla_prefill_check_merge_args(&s, &m), "tokens -1");
}

int main(void) {
    hand_checked();
    merge_equals_whole();
    split_rope();
    constraints_and_rule();
    argument_checks();
    wgmma_launch();
    persistent_launch();
    return check_summary("test_prefill_reference");
}
