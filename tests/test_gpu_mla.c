/*
 * GPU test (label "gpu"): the MLA decode kernels against the CPU reference
 * on randomly drawn shapes.
 *
 * Coverage, drawn per case: heads 1, 3, 8, 16, 64, 128; Sq 1..8 (causal),
 * and one case in 12 a prefill chunk in the absorbed form (Sq 9..512);
 * page size 1, 16, 64 through a shuffled block table; ragged lengths up to
 * 20000 including 0 and fewer keys than Sq; every q/kv dtype pair (bf16,
 * fp16 q; bf16, fp16, fp8 e4m3 KV in both encodings, OCP and fnuz, with a
 * per-tensor scale; fnuz through every path, mma=2 included); a random valid
 * variant of the full space for this GPU (so many tile_q, kv_granularity,
 * num_splits, block_threads, kv_chunk values).  Fresh random data per case;
 * out, lse and the workspace are poisoned with NaN before every launch.
 *
 * One case in 4 runs a length-aware variant (groups_per_cu > 0) on a ragged
 * batch with one long request among short ones; for those, the schedule the
 * GPU built must equal the host's (kernels/mla_decode/schedule.c) word for word, a run
 * from a schedule built separately (mlt_plan_schedule's path) must give the
 * same bits, and every other one is captured in a CUDA graph, replayed after
 * new lengths are written to the device, and must equal a direct call with
 * those lengths bit for bit.
 *
 * First, the prelude's fp8 conversions on all 256 codes of both encodings
 * (tests/fp8_codes.h).
 *
 * Pass: ||out - ref|| / ||ref|| < 1e-2 (bf16 out) or 5e-3 (fp16 out), lse
 * relative error < 1e-3 with -inf exactly where a row has no keys, NaN never.
 *
 * MLA_TUNE_TEST_SEED sets the seed (printed), MLA_TUNE_TEST_CASES the count.
 */
#define _GNU_SOURCE
#include <math.h>
#include <time.h>

#include "check.h"
#include "fp8_codes.h"
#include "kernels/dtype.h"
#include "kernels/sources.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_decode/mla_reference.h"
#include "kernels/mla_decode/schedule.h"
#include "decode_variants.h"
#include "runtime/base/parallel.h"
#include "runtime/gpu/jit.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}
static int rnd_int(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

typedef struct test_case {
    mt_problem_static s;
    mt_variant v;
    int n_heads, sq, batch;
    int *lens;
    double scale, kv_scale;
    const mt_code_object *obj;
    mt_status compile_status;
    char error[300];
} test_case;

typedef struct compile_ctx {
    mt_jit *jit;
    const mt_target *target;
    test_case *cases;
    int only;
} compile_ctx;

/* Compiles case i's variant (an mt_parallel_for body). */
static void compile_case(void *ctx, int i) {
    const compile_ctx *c = ctx;
    if (c->only >= 0 && i != c->only) return;
    test_case *tc = &c->cases[i];
    tc->compile_status = mt_build_compile(c->jit, &tc->v, &tc->s, c->target, &tc->obj, NULL);
    if (tc->compile_status != MT_OK) snprintf(tc->error, sizeof tc->error, "%.299s", mt_last_error());
}

typedef struct variant_list {
    mt_variant *items;
    int n;
} variant_list;

static void fill_storage(void *dst, mt_dtype t, size_t n, double kv_scale) {
    for (size_t i = 0; i < n; i++) mt_host_store(t, dst, i, (float)(rnd_unit() / kv_scale));
}

/* Issue 27: the same call through views, on the variant built for views
 * (VIEWS=1), equals the contiguous call on the plain build bit for bit: q
 * in two parts (ql_nope with padded rows, q_pe stored head-major), out with
 * padded rows, lse as [B, N, Sq] (FlashMLA's), and the kv scale read from
 * device memory (the call's own set wrong, so only the device one can give
 * the right answer).  The plain build refuses the views.  Returns 1 when
 * it ran (D > Dl, Dl % 8). */
static int check_views(mt_backend *b, mt_stream stream, mt_jit *jit, const mt_target *target, const test_case *tc,
                       const mt_mla_decode_args *base, const uint16_t *q, const uint16_t *out16, const float *lse32,
                       int case_index) {
    const int d = tc->s.d, dl = tc->s.dl, dr = d - dl, n = tc->n_heads, sq = tc->sq, bsz = tc->batch;
    if (dr <= 0 || dl % 8 != 0) return 0;
    mt_problem_static vs = tc->s;
    vs.views = 1;
    mt_kernels vfns;
    CHECK_OK(mt_build_variant(jit, &tc->v, &vs, target, &vfns));
    const long long qs = dl + 8, os = dl + 16; /* padded row strides (multiples of 8) */
    const size_t rows = (size_t)bsz * sq * n;
    uint16_t *nope = calloc(rows * (size_t)qs, 2), *pe = calloc(rows * (size_t)dr, 2);
    for (int bb = 0; bb < bsz; bb++)
        for (int t = 0; t < sq; t++)
            for (int h = 0; h < n; h++) {
                const size_t row = ((size_t)bb * sq + t) * n + h, pe_row = ((size_t)bb * n + h) * sq + t;
                memcpy(nope + row * (size_t)qs, q + row * (size_t)d, (size_t)dl * 2);
                memcpy(pe + pe_row * (size_t)dr, q + row * (size_t)d + dl, (size_t)dr * 2);
            }
    mt_devptr dnope, dpe, dout, dlse, dscale;
    const float scale = base->kv_scale;
    CHECK_OK(mt_backend_mem_alloc(b, rows * (size_t)qs * 2, &dnope));
    CHECK_OK(mt_backend_mem_alloc(b, rows * (size_t)dr * 2, &dpe));
    CHECK_OK(mt_backend_mem_alloc(b, rows * (size_t)os * 2, &dout));
    CHECK_OK(mt_backend_mem_alloc(b, rows * 4, &dlse));
    CHECK_OK(mt_backend_mem_alloc(b, 16, &dscale));
    CHECK_OK(mt_backend_copy_to_device(b, dnope, nope, rows * (size_t)qs * 2, stream));
    CHECK_OK(mt_backend_copy_to_device(b, dpe, pe, rows * (size_t)dr * 2, stream));
    CHECK_OK(mt_backend_copy_to_device(b, dscale, &scale, 4, stream));
    CHECK_OK(mt_backend_mem_set(b, dout, 0xff, rows * (size_t)os * 2, stream));
    CHECK_OK(mt_backend_mem_set(b, dlse, 0xff, rows * 4, stream));
    mt_mla_decode_args a = *base;
    a.q = dnope, a.q_pe = dpe, a.out = dout, a.lse = dlse, a.kv_scale = 7.0f, a.kv_scale_ptr = dscale;
    a.q_strides[0] = (long long)sq * n * qs, a.q_strides[1] = (long long)n * qs, a.q_strides[2] = qs;
    a.q_pe_strides[0] = (long long)n * sq * dr, a.q_pe_strides[1] = dr, a.q_pe_strides[2] = (long long)sq * dr;
    a.out_strides[0] = (long long)sq * n * os, a.out_strides[1] = (long long)n * os, a.out_strides[2] = os;
    a.lse_strides[0] = (long long)n * sq, a.lse_strides[1] = 1, a.lse_strides[2] = sq;
    a.schedule = 0;
    CHECK_STATUS(mt_mla_decode_launch(b, &vfns, &tc->v, &tc->s, &a, stream), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "create the plan with views = 1") != NULL, "%s", mt_last_error());
    CHECK_OK(mt_mla_decode_launch(b, &vfns, &tc->v, &vs, &a, stream));
    uint16_t *vout = malloc(rows * (size_t)os * 2);
    float *vlse = malloc(rows * 4);
    CHECK_OK(mt_backend_copy_to_host(b, vout, dout, rows * (size_t)os * 2, stream));
    CHECK_OK(mt_backend_copy_to_host(b, vlse, dlse, rows * 4, stream));
    int diff = 0;
    for (int bb = 0; bb < bsz; bb++)
        for (int t = 0; t < sq; t++)
            for (int h = 0; h < n; h++) {
                const size_t row = ((size_t)bb * sq + t) * n + h, lrow = ((size_t)bb * n + h) * sq + t;
                diff += memcmp(vout + row * (size_t)os, out16 + row * (size_t)dl, (size_t)dl * 2) != 0;
                diff += memcmp(&vlse[lrow], &lse32[row], 4) != 0;
            }
    CHECK_MSG(diff == 0, "case %d: %d rows differ between the contiguous call and the same call through views",
              case_index, diff);
    free(nope), free(pe), free(vout), free(vlse);
    mt_backend_mem_free(b, dnope), mt_backend_mem_free(b, dpe), mt_backend_mem_free(b, dout);
    mt_backend_mem_free(b, dlse), mt_backend_mem_free(b, dscale);
    return 1;
}

/* Runs a length-aware case again three ways, against the outputs of its
 * one-call run (out16 / lse32, already checked against the reference):
 *   1. the schedule the GPU built at the workspace's start equals the
 *      host's (kernels/mla_decode/schedule.c) word for word;
 *   2. a schedule built separately (mt_mla_decode_schedule: the step-level
 *      call) and passed in gives the same bits;
 *   3. (capture) the call captured in a graph, replayed after shorter
 *      lengths are written to the device, equals a direct call with those
 *      lengths bit for bit.
 * Returns 1 when the graph check ran. */
static int check_length_aware(mt_backend *b, mt_stream stream, const mt_kernels *fns, const test_case *tc,
                              const mt_mla_decode_args *a, const uint16_t *out16, const float *lse32,
                              size_t out_elems, size_t lse_elems, int capture) {
    mt_schedule_shape sh = mt_mla_decode_schedule_shape(&tc->v, tc->batch, tc->n_heads, tc->sq, a->compute_units);
    const int stretches = mt_schedule_stretches(&sh);
    size_t entry_bytes = mt_schedule_entry_bytes(stretches);
    size_t sched_bytes = mt_mla_decode_schedule_bytes(&tc->v, a->compute_units);
    int32_t *want = malloc(entry_bytes), *got = malloc(entry_bytes);
    CHECK_OK(mt_schedule_build(&sh, tc->lens, want));
    CHECK_OK(mt_backend_copy_to_host(b, got, a->workspace, entry_bytes, stream));
    /* the header, the starts and the cut requests the host found (the GPU
     * writes no more: the rest of the workspace keeps its poison) */
    size_t words = 4 * (size_t)(2 + stretches + want[1]);
    int first_diff = -1;
    for (size_t w = 0; w < words && first_diff < 0; w++)
        if (got[w] != want[w]) first_diff = (int)w;
    CHECK_MSG(first_diff < 0, "schedule word %d: GPU %d, host %d (%d stretches, %d cut requests on the host)",
              first_diff, first_diff >= 0 ? got[first_diff] : 0, first_diff >= 0 ? want[first_diff] : 0, stretches,
              want[1]);

    uint16_t *o2 = malloc(out_elems * 2);
    float *l2 = malloc(lse_elems * 4);
    mt_devptr dsched = 0;
    CHECK_OK(mt_backend_mem_alloc(b, sched_bytes, &dsched));
    mt_mla_decode_args step = *a;
    step.schedule = dsched;
    CHECK_OK(mt_backend_mem_set(b, a->out, 0xff, out_elems * 2, stream));
    CHECK_OK(mt_backend_mem_set(b, a->lse, 0xff, lse_elems * 4, stream));
    CHECK_OK(mt_backend_mem_set(b, a->workspace, 0xff, a->workspace_bytes, stream));
    CHECK_OK(mt_mla_decode_schedule(b, fns, &tc->v, a, dsched, stream));
    CHECK_OK(mt_mla_decode_launch(b, fns, &tc->v, &tc->s, &step, stream));
    CHECK_OK(mt_backend_copy_to_host(b, o2, a->out, out_elems * 2, stream));
    CHECK_OK(mt_backend_copy_to_host(b, l2, a->lse, lse_elems * 4, stream));
    CHECK_MSG(memcmp(o2, out16, out_elems * 2) == 0 && memcmp(l2, lse32, lse_elems * 4) == 0,
              "a run from a separately built schedule differs from the one-call run");

    int graphed = 0;
    mt_graph g = NULL;
    if (capture && mt_backend_graph_begin(b, stream) == MT_OK) {
        /* captured with the case's lengths; replayed with new ones, each
         * at most the old (the block table still covers them) */
        mt_status st = mt_mla_decode_launch(b, fns, &tc->v, &tc->s, a, stream);
        mt_status st_end = mt_backend_graph_end(b, stream, &g);
        CHECK_MSG(st == MT_OK && st_end == MT_OK, "capture: %s", mt_last_error());
        int *lens2 = malloc(sizeof(int) * (size_t)tc->batch);
        for (int r = 0; r < tc->batch; r++) lens2[r] = tc->lens[(r + 1) % tc->batch] <= tc->lens[r]
                                                          ? tc->lens[(r + 1) % tc->batch] : rnd_int(0, tc->lens[r]);
        CHECK_OK(mt_backend_copy_to_device(b, a->seq_lens, lens2, sizeof(int) * (size_t)tc->batch, stream));
        CHECK_OK(mt_backend_mem_set(b, a->out, 0xff, out_elems * 2, stream));
        CHECK_OK(mt_backend_mem_set(b, a->lse, 0xff, lse_elems * 4, stream));
        if (g) CHECK_OK(mt_backend_graph_launch(b, g, stream));
        CHECK_OK(mt_backend_copy_to_host(b, o2, a->out, out_elems * 2, stream));
        CHECK_OK(mt_backend_copy_to_host(b, l2, a->lse, lse_elems * 4, stream));
        uint16_t *o3 = malloc(out_elems * 2);
        float *l3 = malloc(lse_elems * 4);
        CHECK_OK(mt_backend_mem_set(b, a->out, 0xff, out_elems * 2, stream));
        CHECK_OK(mt_backend_mem_set(b, a->lse, 0xff, lse_elems * 4, stream));
        CHECK_OK(mt_mla_decode_launch(b, fns, &tc->v, &tc->s, a, stream));
        CHECK_OK(mt_backend_copy_to_host(b, o3, a->out, out_elems * 2, stream));
        CHECK_OK(mt_backend_copy_to_host(b, l3, a->lse, lse_elems * 4, stream));
        CHECK_MSG(memcmp(o2, o3, out_elems * 2) == 0 && memcmp(l2, l3, lse_elems * 4) == 0,
                  "graph replay after a length change differs from a direct call");
        /* and the replay did use the new lengths: the direct call with the
         * old ones gave other bits unless nothing changed */
        int changed = memcmp(lens2, tc->lens, sizeof(int) * (size_t)tc->batch) != 0;
        CHECK_MSG(!changed || memcmp(o3, out16, out_elems * 2) != 0 || memcmp(l3, lse32, lse_elems * 4) != 0,
                  "new lengths gave the old outputs");
        CHECK_OK(mt_backend_copy_to_device(b, a->seq_lens, tc->lens, sizeof(int) * (size_t)tc->batch, stream));
        free(lens2), free(o3), free(l3);
        mt_backend_graph_destroy(b, g);
        graphed = 1;
    }
    free(want), free(got), free(o2), free(l2);
    mt_backend_mem_free(b, dsched);
    return graphed;
}

int main(void) {
    mt_backend *b = NULL;
    if (mt_backend_discover(&b) != MT_OK) {
        printf("SKIP: %s\n", mt_last_error());
        return CHECK_SKIP_CODE;
    }
    mt_device_info info;
    CHECK_OK(mt_backend_device_info(b, 0, &info));
    CHECK_OK(mt_backend_set_device(b, 0));
    mt_target target;
    mt_target_from_device(&info, &target);

    /* a line at a time: under ctest stdout is a pipe, and a hang must
     * show the last case that finished */
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *seed_env = getenv("MLA_TUNE_TEST_SEED"), *cases_env = getenv("MLA_TUNE_TEST_CASES");
    /* MLA_TUNE_TEST_ONLY=i: draw every case as usual, run case i only */
    const char *only_env = getenv("MLA_TUNE_TEST_ONLY");
    const int only = only_env ? atoi(only_env) : -1;
    /* MLA_TUNE_TEST_FOCUS=wgmma64: the 64-row warpgroup path wherever it runs (decode_variants.h) */
    const char *focus_env = getenv("MLA_TUNE_TEST_FOCUS");
    const int focus_wg64 = focus_env && strcmp(focus_env, "wgmma64") == 0;
    /* MLA_TUNE_TEST_FOCUS=chunks: every case a prefill chunk (Sq 9..512) */
    const int focus_chunks = focus_env && strcmp(focus_env, "chunks") == 0;
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);
    int n_cases = cases_env ? atoi(cases_env) : 144;
    rng_state = seed * 2654435761u + 1;
    printf("seed %llu, %d cases on %s (%s)\n", (unsigned long long)seed, n_cases, info.name, info.arch);

    static const int heads[] = {1, 3, 8, 16, 64, 128}, pages[] = {1, 16, 64}, lmax_class[] = {16, 300, 3000, 20000};
    static const mt_dtype q_types[] = {MT_BF16, MT_FP16},
                          kv_types[] = {MT_BF16, MT_FP16, MT_FP8_E4M3, MT_FP8_E4M3_FNUZ};
    enum { N_KV = sizeof kv_types / sizeof kv_types[0], N_DT = 2 * N_KV };
    test_case *cases = calloc((size_t)n_cases, sizeof *cases);
    /* one case in 8 takes another Dl than DeepSeek's 512 (only the SIMT
     * family takes those): 500, a multiple of 4 but not of 128, and 511,
     * odd, so the kernels' and the reduce's column guards and their
     * element-wise forms run too (Sq 5 and 2, heads and pages varying) */
    static const int dls[] = {512, 500, 511};
    variant_list spaces[3][3][2][N_KV] = {{{{{0}}}}}; /* by Dl, page, q, kv: built lazily */
    const double budget = 3e9;                 /* reference multiply-adds per case */
    for (int i = 0; i < n_cases; i++) {
        test_case *tc = &cases[i];
        int pi = i % 3, dt = (i + i / N_DT) % N_DT;
        tc->n_heads = heads[i % 6];
        tc->sq = 1 + (i % 8);
        if (focus_chunks || i % 12 == 7) {
            /* a prefill chunk in the absorbed form: many tokens, causal
             * among them, after some context; as long as the reference's
             * budget allows keys past the chunk (the rows of a tile then
             * span several tokens, each with its own key limit) */
            static const int chunk_sq[] = {9, 16, 40, 64, 100, 128, 256, 512};
            tc->sq = chunk_sq[rnd() % 8];
            while (tc->sq > 9 && (double)tc->sq * tc->n_heads * 1088 * (tc->sq + 64) > 3e9) tc->sq /= 2;
            if (tc->sq < 9) tc->sq = 9;
        }
        int di = i % 16 == 4 ? 1 : i % 16 == 9 ? 2 : 0, dl = dls[di];
        tc->s = (mt_problem_static){.d = 576, .dl = dl, .page_size = pages[pi], .q_dtype = q_types[dt / N_KV],
                                   .kv_dtype = kv_types[dt % N_KV]};
        variant_list *vl = &spaces[di][pi][dt / N_KV][dt % N_KV];
        if (!vl->n) {
            mt_space sp;
            mt_space_full(&mt_family_mla_decode, &sp);
            CHECK_OK(mt_space_list(&sp, &tc->s, &target, &vl->items, &vl->n, NULL));
        }
        /* every other case from the matrix-unit paths when this GPU has
         * them (a small part of the space, and the newest code): mma=1, and
         * every other one of those mma=2 where it exists (Hopper, q and KV
         * of one type) */
        int n_mma[3] = {0, 0, 0}, n_aware = 0;
        for (int k = 0; k < vl->n; k++) {
            n_mma[vl->items[k].values[MT_P_MMA]]++;
            n_aware += vl->items[k].values[MT_P_GROUPS_PER_CU] > 0;
        }
        int want = i % 4 == 3 && n_mma[2] > 0 ? 2 : 1;
        if (i % 4 == 2 && n_aware > 0) {
            /* the length-aware form, any path */
            int pick = (int)(rnd() % (uint64_t)n_aware);
            for (int k = 0; k < vl->n; k++)
                if (vl->items[k].values[MT_P_GROUPS_PER_CU] > 0 && pick-- == 0) tc->v = vl->items[k];
        } else if (i % 2 == 1 && n_mma[want] > 0) {
            int pick = (int)(rnd() % (uint64_t)n_mma[want]);
            for (int k = 0; k < vl->n; k++)
                if (vl->items[k].values[MT_P_MMA] == want && pick-- == 0) tc->v = vl->items[k];
        } else {
            tc->v = vl->items[rnd() % (uint64_t)vl->n];
        }
        if (focus_wg64) decode_pick_wgmma64(vl->items, vl->n, rnd(), &tc->v);
        else if (i % 8 == 5) decode_pick_fp8_wide(vl->items, vl->n, &tc->s, i, rnd(), &tc->v);
        decode_draw_wg_schedule(&tc->v, &tc->s, &target, i);
        int rows = tc->sq * tc->n_heads;
        double per_key = (double)rows * (576 + dl);
        int lmax = lmax_class[(i / 3) % 4];
        if (tc->sq > 8 && lmax < tc->sq + 64) lmax = tc->sq + rnd_int(64, 2000); /* a chunk: context before it */
        if (lmax * per_key > budget) lmax = (int)(budget / per_key);
        if (lmax < 1) lmax = 1;
        tc->batch = (int)fmin(8, fmax(1, budget / (lmax * per_key / 2)));
        int aware = tc->v.values[MT_P_GROUPS_PER_CU] > 0;
        if (aware) decode_draw_schedule_costs(&tc->v, rnd());
        if (aware) tc->batch = (int)fmin(16, fmax(2, budget / (lmax * per_key / 4)));
        tc->lens = calloc((size_t)tc->batch, sizeof(int));
        int long_one = rnd_int(0, tc->batch - 1); /* length-aware: one long request, the rest short */
        for (int r = 0; r < tc->batch; r++) {
            int kind = rnd_int(0, 7);
            if (kind == 0) tc->lens[r] = 0;
            else if (kind == 1 && tc->sq > 1) tc->lens[r] = rnd_int(1, tc->sq - 1);
            else if (aware) tc->lens[r] = r == long_one ? lmax : rnd_int(1, lmax / 8 + 1);
            else tc->lens[r] = rnd_int(1, lmax);
        }
        tc->scale = (rnd() & 1 ? 3.0 : 1.0) / sqrt(576.0);
        tc->kv_scale = mt_host_unit_kv_scale(tc->s.kv_dtype);
    }

    /* compile every case's variant on all cores first */
    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(b, NULL, &jit));
    compile_ctx cc = {.jit = jit, .target = &target, .cases = cases, .only = only};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_parallel_for(n_cases, 16, compile_case, &cc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mt_jit_stats js = mt_jit_get_stats(jit);
    printf("compiled %ld variants (%ld from disk) in %.1f s\n", js.compiles, js.disk_hits,
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);

    /* the prelude's fp8 conversions on this GPU: every code of both
     * encodings, scalar and pairs (OCP pairs by cvt.rn.f16x2.e4m3x2 on
     * sm_89+, fnuz in software), against the formats' definitions */
    int fp8_bad[2] = {0, 0};
    CHECK_OK(fp8_codes_check(b, jit, info.arch, fp8_bad));
    CHECK_MSG(fp8_bad[0] == 0 && fp8_bad[1] == 0, "fp8 conversions on %s wrong for %d OCP and %d fnuz codes",
              info.arch, fp8_bad[0], fp8_bad[1]);
    printf("fp8 conversions on %s: %d/256 fp8e4m3 and %d/256 fp8e4m3fnuz codes exact (scalar and pairs)\n",
           info.arch, 256 - fp8_bad[0], 256 - fp8_bad[1]);

    mt_stream stream = NULL;
    CHECK_OK(mt_backend_stream_create(b, &stream));
    double worst_out[2] = {0, 0}, worst_lse = 0;
    int passed = 0, nan_cases = 0, keyless_rows = 0, mma_cases = 0, wgmma_cases = 0, aware_cases = 0, graph_cases = 0;
    int fnuz_cases[3] = {0, 0, 0}; /* fp8e4m3fnuz KV, passed, by path (mma) */
    int view_cases = 0, t32_cases = 0, w64_fp8_cases = 0;
    int ran = 0;
    long total_keys = 0;
    for (int i = 0; i < n_cases; i++) {
        if (only >= 0 && i != only) continue;
        ran++;
        test_case *tc = &cases[i];
        char vname[200];
        mt_variant_format(&tc->v, vname, sizeof vname);
        if (tc->compile_status != MT_OK) {
            CHECK_MSG(0, "case %d: compile failed: %s", i, tc->error);
            continue;
        }
        mt_kernels fns;
        CHECK_OK(mt_build_load(jit, tc->obj, &tc->v, &tc->s, &target, &fns));
        const int aware = tc->v.values[MT_P_GROUPS_PER_CU] > 0;
        const int page = tc->s.page_size, rows = tc->sq * tc->n_heads;
        int max_blocks = 1, total_pages = 0;
        for (int r = 0; r < tc->batch; r++) {
            int nb = (tc->lens[r] + page - 1) / page;
            if (nb > max_blocks) max_blocks = nb;
            total_pages += nb;
            total_keys += tc->lens[r];
        }
        if (total_pages == 0) total_pages = 1;
        /* pages handed out in a shuffled order */
        int *perm = malloc(sizeof(int) * (size_t)total_pages);
        for (int p = 0; p < total_pages; p++) perm[p] = p;
        for (int p = total_pages - 1; p > 0; p--) {
            int j = (int)(rnd() % (uint64_t)(p + 1)), t = perm[p];
            perm[p] = perm[j], perm[j] = t;
        }
        int32_t *table = calloc((size_t)tc->batch * max_blocks, sizeof(int32_t));
        int next_page = 0;
        for (int r = 0; r < tc->batch; r++)
            for (int k = 0; k < (tc->lens[r] + page - 1) / page; k++) table[(size_t)r * max_blocks + k] = perm[next_page++];
        size_t q_elems = (size_t)tc->batch * rows * 576, kv_elems = (size_t)total_pages * page * 576;
        size_t out_elems = (size_t)tc->batch * rows * tc->s.dl, lse_elems = (size_t)tc->batch * rows;
        void *q = malloc(q_elems * 2), *kv = malloc(kv_elems * mt_dtype_size(tc->s.kv_dtype));
        fill_storage(q, tc->s.q_dtype, q_elems, 1.0);
        fill_storage(kv, tc->s.kv_dtype, kv_elems, tc->kv_scale);
        mt_devptr dq, dkv, dtable, dlens, dout, dlse, dws = 0;
        CHECK_OK(mt_backend_mem_alloc(b, q_elems * 2, &dq));
        CHECK_OK(mt_backend_mem_alloc(b, kv_elems * mt_dtype_size(tc->s.kv_dtype), &dkv));
        CHECK_OK(mt_backend_mem_alloc(b, sizeof(int32_t) * (size_t)tc->batch * max_blocks, &dtable));
        CHECK_OK(mt_backend_mem_alloc(b, sizeof(int32_t) * (size_t)tc->batch, &dlens));
        CHECK_OK(mt_backend_mem_alloc(b, out_elems * 2, &dout));
        CHECK_OK(mt_backend_mem_alloc(b, lse_elems * 4, &dlse));
        size_t ws = mt_mla_decode_workspace_bytes(&tc->v, &tc->s, tc->batch, tc->n_heads, tc->sq, info.compute_units);
        if (ws) CHECK_OK(mt_backend_mem_alloc(b, ws, &dws));
        CHECK_OK(mt_backend_copy_to_device(b, dq, q, q_elems * 2, stream));
        CHECK_OK(mt_backend_copy_to_device(b, dkv, kv, kv_elems * mt_dtype_size(tc->s.kv_dtype), stream));
        CHECK_OK(mt_backend_copy_to_device(b, dtable, table, sizeof(int32_t) * (size_t)tc->batch * max_blocks, stream));
        CHECK_OK(mt_backend_copy_to_device(b, dlens, tc->lens, sizeof(int32_t) * (size_t)tc->batch, stream));
        /* poison: 0xffff is NaN in bf16 and fp16, 0xffffffff in fp32 */
        CHECK_OK(mt_backend_mem_set(b, dout, 0xff, out_elems * 2, stream));
        CHECK_OK(mt_backend_mem_set(b, dlse, 0xff, lse_elems * 4, stream));
        if (ws) CHECK_OK(mt_backend_mem_set(b, dws, 0xff, ws, stream));
        mt_mla_decode_args a = {.batch = tc->batch, .n_heads = tc->n_heads, .sq = tc->sq, .max_blocks = max_blocks,
                                .page_size = page, .warp_size = info.warp_size, .scale = (float)tc->scale, .kv_scale = (float)tc->kv_scale,
                                .q = dq, .kv = dkv, .block_table = dtable, .seq_lens = dlens, .out = dout, .lse = dlse,
                                .workspace = dws, .workspace_bytes = ws, .compute_units = info.compute_units};
        CHECK_OK(mt_mla_decode_launch(b, &fns, &tc->v, &tc->s, &a, stream));
        uint16_t *out16 = malloc(out_elems * 2);
        float *lse32 = malloc(lse_elems * 4);
        mt_status st = mt_backend_copy_to_host(b, out16, dout, out_elems * 2, stream);
        if (st == MT_OK) st = mt_backend_copy_to_host(b, lse32, dlse, lse_elems * 4, stream);
        CHECK_MSG(st == MT_OK, "case %d: %s", i, mt_last_error());
        if (st != MT_OK) return check_summary("test_gpu_mla"); /* the context is gone */

        double *got = malloc(sizeof(double) * out_elems), *ref = malloc(sizeof(double) * out_elems);
        double *got_lse = malloc(sizeof(double) * lse_elems), *ref_lse = malloc(sizeof(double) * lse_elems);
        int has_nan = 0;
        for (size_t k = 0; k < out_elems; k++) has_nan |= isnan(got[k] = mt_host_load(tc->s.q_dtype, out16, k));
        for (size_t k = 0; k < lse_elems; k++) {
            has_nan |= isnan(got_lse[k] = lse32[k]);
        }
        mt_mla_host_problem hp = {.s = tc->s, .batch = tc->batch, .n_heads = tc->n_heads, .sq = tc->sq,
                                  .max_blocks = max_blocks, .scale = (float)tc->scale, .kv_scale = (float)tc->kv_scale,
                                  .q = q, .kv = kv, .block_table = table, .seq_lens = tc->lens};
        /* The matrix-unit paths multiply in one operand type; with bf16 KV
         * that is bf16, so fp16 q is rounded to bf16 (README: "Numerics").
         * The reference takes the same rounded q: otherwise a row with one
         * or two keys, whose lse is just its scores, shows bf16's 2^-9
         * rounding of q as a ~1e-3 lse error (session 8's case 106 of seed
         * 1795395824), and the bound would test the documented rounding
         * instead of the kernel.  bf16 q into fp16 (fp16 / fp8 KV) is exact
         * after the kernel's power-of-two scaling: nothing to model. */
        uint16_t *q_rounded = NULL;
        if (tc->v.values[MT_P_MMA] > 0 && tc->s.q_dtype == MT_FP16 && tc->s.kv_dtype == MT_BF16) {
            q_rounded = malloc(q_elems * 2);
            for (size_t k = 0; k < q_elems; k++)
                q_rounded[k] = mt_host_f32_to_bf16(mt_host_f16_to_f32(((const uint16_t *)q)[k]));
            hp.q = q_rounded;
            hp.s.q_dtype = MT_BF16;
        }
        mt_mla_reference(&hp, ref, ref_lse, 0);
        free(q_rounded);
        for (size_t k = 0; k < lse_elems; k++) keyless_rows += isinf(ref_lse[k]) != 0;
        double e_out = mt_relative_error(got, ref, (long)out_elems);
        double e_lse = mt_relative_error(got_lse, ref_lse, (long)lse_elems);
        double tol = tc->s.q_dtype == MT_BF16 ? 1e-2 : 5e-3;
        int ok = !has_nan && e_out < tol && e_lse < 1e-3;
        int qi = tc->s.q_dtype == MT_BF16 ? 0 : 1;
        if (e_out > worst_out[qi]) worst_out[qi] = e_out;
        if (e_lse > worst_lse) worst_lse = e_lse;
        nan_cases += has_nan;
        passed += ok;
        mma_cases += tc->v.values[MT_P_MMA] == 1;
        if (ok && tc->s.kv_dtype == MT_FP8_E4M3_FNUZ) fnuz_cases[tc->v.values[MT_P_MMA]]++;
        wgmma_cases += tc->v.values[MT_P_MMA] == 2;
        t32_cases += ok && tc->v.values[MT_P_MMA] == 2 && tc->v.values[MT_P_TILE_Q] == 32;
        w64_fp8_cases += ok && tc->v.values[MT_P_MMA] == 2 && tc->v.values[MT_P_TILE_Q] == 64 &&
                         mt_dtype_is_fp8(tc->s.kv_dtype);
        char lens_text[64];
        snprintf(lens_text, sizeof lens_text, "%d..%d", tc->lens[0], tc->lens[tc->batch - 1]);
        printf("case %3d %s N=%3d Sq=%d page=%2d Dl=%d B=%d L=%-12s q=%s kv=%-7s %s  err %.2e lse %.2e%s\n", i,
               ok ? "ok  " : "FAIL", tc->n_heads, tc->sq, page, tc->s.dl, tc->batch, lens_text,
               mt_dtype_name(tc->s.q_dtype), mt_dtype_name(tc->s.kv_dtype), vname, e_out, e_lse, has_nan ? " NaN" : "");
        CHECK_MSG(ok, "case %d failed (seed %llu)", i, (unsigned long long)seed);
        if (ok && i % 3 == 0)
            view_cases += check_views(b, stream, jit, &target, tc, &a, (const uint16_t *)q, out16, lse32, i);
        if (aware && ok) {
            aware_cases++;
            graph_cases += check_length_aware(b, stream, &fns, tc, &a, out16, lse32, out_elems, lse_elems, i % 8 == 2);
        }
        free(got), free(ref), free(got_lse), free(ref_lse), free(out16), free(lse32);
        free(q), free(kv), free(table), free(perm);
        mt_backend_mem_free(b, dq), mt_backend_mem_free(b, dkv), mt_backend_mem_free(b, dtable);
        mt_backend_mem_free(b, dlens), mt_backend_mem_free(b, dout), mt_backend_mem_free(b, dlse);
        mt_backend_mem_free(b, dws);
    }
    printf("\n%d/%d cases passed (%d on the matrix-unit path mma=1, %d on the warpgroup path mma=2; "
           "length-aware: %d, their schedule equal to the host's and the step-level run bit-identical; %d replayed "
           "from a CUDA graph after a length change, bit-identical to a direct call; %d run again through views "
           "(q in two parts, strided out, lse [B, N, Sq], kv scale from device memory), bit-identical); worst "
           "relative error: out %.2e (bf16), %.2e (fp16), lse %.2e; NaN in %d cases; %d keyless rows; %ld keys in "
           "all\n",
           passed, ran, mma_cases, wgmma_cases, aware_cases, graph_cases, view_cases, worst_out[0], worst_out[1],
           worst_lse, nan_cases, keyless_rows, total_keys);
    printf("fp8e4m3fnuz KV cases passed: %d SIMT, %d mma=1, %d mma=2\n", fnuz_cases[0], fnuz_cases[1], fnuz_cases[2]);
    printf("fp8 KV on the transposed path with 32-row tiles (tile_q 32): %d cases passed\n", t32_cases);
    printf("fp8 KV on the 64-row path, each chunk converted once (tile_q 64): %d cases passed\n", w64_fp8_cases);
    /* on Hopper the draw must reach both (one case in 8 picks one where it exists) */
    if (only < 0 && n_cases >= 64 && strcmp(info.arch, "sm_90") == 0) CHECK(w64_fp8_cases > 0 && (focus_wg64 || t32_cases > 0));
    if (only < 0) CHECK(keyless_rows > 0); /* the draw must cover requests shorter than Sq */
    if (only < 0 && n_cases >= 16) CHECK(aware_cases > 0 && graph_cases > 0 && view_cases > 0);
    if (only < 0 && n_cases >= 64) CHECK(fnuz_cases[0] > 0 && fnuz_cases[1] > 0 && fnuz_cases[2] > 0);
    mt_jit_destroy(jit);
    mt_backend_stream_destroy(b, stream);
    mt_backend_close(b);
    return check_summary("test_gpu_mla");
}
