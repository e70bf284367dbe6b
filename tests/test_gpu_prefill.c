/*
 * test_gpu_prefill.c - the prefill family on a GPU (label gpu; exit 77,
 * skipped, without one), against the double-precision reference
 * (prefill_cases.h: varlen batches with contexts, out relative error
 * < 1e-2 bf16 / 5e-3 fp16, lse < 1e-3, NaN never, outputs poisoned first):
 *   - through the public API (mlt_prefill_plan_create, mlt_prefill_run,
 *     mlt_prefill_merge) for 1, 16 and 128 heads, bf16 and fp16 (and fp16
 *     q over bf16 k/v), in the three forms: one causal call over context +
 *     new tokens, the chunked form (context call, new-token call, merge),
 *     and a non-causal call with k's rope part apart and lse head-major;
 *   - through the family's launch, every mma.sync variant (mma=1, the
 *     path no CPU emulation covers) and SIMT variants spread over the
 *     whole valid space of the device, causal and chunked;
 *   - the wgmma path's forms added later (the space above holds their
 *     defaults only): the persistent form, bf16 and fp8, over as many
 *     work-groups as the SMs hold and over a few that stream many tiles,
 *     and 16-byte stores of out (out_stores=16), on contiguous out rows
 *     and on rows 4- but not 16-byte aligned;
 *   - bad arguments through the API fail naming the argument.
 * MLA_TUNE_TEST_SEED=N changes the draw (default 29);
 * MLA_TUNE_TEST_PREFILL_ONLY=forms (or its older name, persistent) runs
 * those forms' cases alone (the whole test: 24 s on an H200, session 30;
 * it took over 5 minutes while the CPU reference ran on one core).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernels/build.h"
#include "prefill_cases.h"
#include "runtime/api/api_internal.h"
#include "runtime/base/parallel.h"

static int failed_cases, passed_cases;

static void record(const pf_case *c, const char *how, const pf_result *r) {
    char what[300];
    pf_describe(c, what, sizeof what);
    CHECK_MSG(r->ok, "%s %s: out error %.3g, lse error %.3g%s %s", how, what, r->e_out, r->e_lse,
              r->has_nan ? ", NaN" : "", r->error);
    printf("%-4s %s %s: out %.2e lse %.2e, %d empty rows\n", r->ok ? "ok" : "BAD", how, what, r->e_out, r->e_lse,
           r->empty_rows);
    r->ok ? passed_cases++ : failed_cases++;
}

/* ---- through the public API ---- */

static void through_api(mlt_runtime *rt, uint64_t seed) {
    static const struct {
        int n_heads, batch, max_new, max_ctx;
        mlt_dtype q, kv;
    } problems[] = {
        {16, 4, 300, 700, MLT_BF16, MLT_BF16}, {128, 3, 80, 200, MLT_BF16, MLT_BF16},
        {1, 6, 500, 900, MLT_FP16, MLT_FP16},  {16, 2, 130, 100, MLT_FP16, MLT_BF16},
        {16, 3, 300, 600, MLT_FP8_E4M3, MLT_FP8_E4M3}, {128, 2, 90, 250, MLT_FP8_E4M3, MLT_FP8_E4M3},
    };
    const int fp8_runs = strncmp(mlt_runtime_arch(rt), "sm_90", 5) == 0; /* the wgmma path's */
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) {
        mlt_prefill_problem pp;
        mlt_prefill_problem_default(&pp);
        pp.n_heads = problems[i].n_heads, pp.q_dtype = problems[i].q, pp.kv_dtype = problems[i].kv;
        const int fp8 = pp.q_dtype == MLT_FP8_E4M3;
        if (fp8 && !fp8_runs) continue;
        if (fp8) pp.q_scale = 0.5f, pp.k_scale = 2.0f, pp.v_scale = 0.25f; /* each where the result shows it */
        mlt_prefill_plan *plan = NULL;
        mlt_status st = mlt_prefill_plan_create(rt, &pp, &plan);
        CHECK_MSG(st == MLT_OK, "plan for %d heads: %s", pp.n_heads, mlt_last_error());
        if (st != MLT_OK) continue;
        mlt_choice_info info;
        CHECK(mlt_prefill_plan_explain(plan, &info) == MLT_OK);
        /* the built-in rule, or a prefill key of the DBs this host has */
        CHECK_MSG(strcmp(info.family, "mla_prefill") == 0 && info.why[0] &&
                      (info.reason == MLT_CHOICE_HEURISTIC) == (strcmp(info.source, "heuristic") == 0),
                  "%s: %s", info.family, info.why);
        printf("plan N=%d %s/%s runs %s (%s)\n", pp.n_heads, mt_dtype_name((mt_dtype)pp.q_dtype),
               mt_dtype_name((mt_dtype)pp.kv_dtype), info.variant, info.why);
        pf_launcher l = pf_api_launcher(plan);
        for (int form = PF_WHOLE; form <= PF_NONCAUSAL; form++) {
            pf_case c = {.s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = (mt_dtype)pp.q_dtype,
                               .kv_dtype = (mt_dtype)pp.kv_dtype},
                         .batch = problems[i].batch, .n_heads = pp.n_heads, .nope = 192, .scale = pp.softmax_scale,
                         .q_scale = pp.q_scale, .k_scale = pp.k_scale, .v_scale = pp.v_scale,
                         .seed = seed + 10 * i + form, .form = (pf_form)form};
            pf_draw_lengths(&c, problems[i].max_new, problems[i].max_ctx);
            if (form == PF_NONCAUSAL) c.nope = pp.qk_nope_dim, c.lse_head_major = 1;
            pf_result r = pf_run_case(mt_runtime_backend(rt), &l, &c);
            record(&c, "api", &r);
        }
        mlt_prefill_plan_destroy(plan);
    }
}

static void api_refusals(mlt_runtime *rt) {
    mlt_prefill_problem pp;
    mlt_prefill_problem_default(&pp);
    pp.kv_dtype = MLT_FP8_E4M3;
    mlt_prefill_plan *plan = NULL;
    CHECK(mlt_prefill_plan_create(rt, &pp, &plan) == MLT_ERR_INVALID_ARGUMENT && !plan);
    CHECK_MSG(strstr(mlt_last_error(), "all MLT_FP8_E4M3") != NULL, "%s", mlt_last_error());
    mlt_prefill_problem_default(&pp);
    pp.q_dtype = pp.kv_dtype = MLT_FP8_E4M3, pp.v_scale = 0.0f;
    CHECK(mlt_prefill_plan_create(rt, &pp, &plan) == MLT_ERR_INVALID_ARGUMENT && !plan);
    CHECK_MSG(strstr(mlt_last_error(), "v_scale 0") != NULL, "%s", mlt_last_error());
    if (strncmp(mlt_runtime_arch(rt), "sm_90", 5) == 0) { /* an fp8 call without its workspace or max_seqlen_k */
        pp.v_scale = 1.0f;
        CHECK(mlt_prefill_plan_create(rt, &pp, &plan) == MLT_OK);
        void *m8 = NULL;
        CHECK(mlt_device_alloc(rt, 1 << 16, &m8) == MLT_OK);
        CHECK(mlt_prefill_workspace_size(plan, 2, 300) == (size_t)2 * 128 * 128 * 384);
        mlt_prefill_args a8 = {.batch = 2, .max_seqlen_q = 1, .causal = 1, .cu_seqlens_q = m8, .cu_seqlens_k = m8,
                               .q = m8, .k = m8, .v = m8, .out = m8, .lse = m8, .max_seqlen_k = 300};
        CHECK(mlt_prefill_run(plan, &a8, NULL) == MLT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mlt_last_error(), "workspace of 12582912 bytes") != NULL, "%s", mlt_last_error());
        a8.max_seqlen_k = 0, a8.workspace = m8, a8.workspace_size = 1 << 16;
        CHECK(mlt_prefill_run(plan, &a8, NULL) == MLT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mlt_last_error(), "max_k") != NULL, "%s", mlt_last_error());
        mlt_device_free(rt, m8);
        mlt_prefill_plan_destroy(plan);
        plan = NULL;
    }
    mlt_prefill_problem_default(&pp);
    pp.n_heads = 0;
    CHECK(mlt_prefill_plan_create(rt, &pp, &plan) == MLT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mlt_last_error(), "n_heads 0") != NULL, "%s", mlt_last_error());
    mlt_prefill_problem_default(&pp);
    pp.n_heads = 4;
    if (mlt_prefill_plan_create(rt, &pp, &plan) != MLT_OK) {
        CHECK_MSG(0, "plan: %s", mlt_last_error());
        return;
    }
    void *mem = NULL;
    CHECK(mlt_device_alloc(rt, 1 << 16, &mem) == MLT_OK);
    mlt_prefill_args a = {.batch = 1, .max_seqlen_q = 1, .causal = 1, .cu_seqlens_q = NULL, .cu_seqlens_k = mem,
                          .q = mem, .k = mem, .v = mem, .out = mem, .lse = mem};
    CHECK(mlt_prefill_run(plan, &a, NULL) == MLT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mlt_last_error(), "cu_seqlens_q") != NULL, "%s", mlt_last_error());
    mlt_prefill_merge_args m = {.tokens = 1, .out_a = mem, .lse_a = mem, .out_b = mem, .lse_b = mem, .out = mem,
                                .lse = mem};
    CHECK(mlt_prefill_merge(plan, &m, NULL) == MLT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mlt_last_error(), "lse is lse_a") != NULL, "%s", mlt_last_error());
    mlt_device_free(rt, mem);
    mlt_prefill_plan_destroy(plan);
}

/* ---- through the family, over its space ---- */

typedef struct family_ctx {
    mt_backend *b;
    mt_kernels k;
    const mt_variant *v;
    const mt_problem_static *s;
    int compute_units; /* the persistent form's grid: the GPU's SMs, or fewer to stream more tiles each */
} family_ctx;

static mt_status family_run(void *ctx, const mt_mla_prefill_args *a) {
    family_ctx *f = ctx;
    mt_mla_prefill_args with_units = *a;
    with_units.compute_units = f->compute_units;
    return mt_mla_prefill_launch(f->b, &f->k, f->v, f->s, &with_units, NULL);
}
static mt_status family_merge(void *ctx, const mt_mla_prefill_merge_args *a) {
    family_ctx *f = ctx;
    return mt_mla_prefill_merge_launch(f->b, &f->k, f->s, a, NULL);
}

/* ---- compile-ahead: what the cases below build, compiled on every core
 * first (test_gpu_mla's way), so that the cases find it in the JIT: 40
 * variants in 6.7 s on the H200's 16 cores (session 30) ---- */

enum { AHEAD_MAX = 1024 };
typedef struct ahead_list {
    mt_jit *jit;
    mt_target t;
    mt_variant v[AHEAD_MAX];
    mt_problem_static s[AHEAD_MAX];
    int n;
} ahead_list;

static void ahead_add(ahead_list *a, const mt_variant *v, const mt_problem_static *s) {
    if (a->n < AHEAD_MAX) a->v[a->n] = *v, a->s[a->n++] = *s;
}
static void ahead_compile(void *ctx, int i) {
    ahead_list *a = ctx;
    const mt_code_object *obj = NULL;
    (void)mt_build_compile(a->jit, &a->v[i], &a->s[i], &a->t, &obj, NULL); /* a failure shows in its case */
}
static void compile_ahead(mlt_runtime *rt, ahead_list *a) {
    a->jit = mt_runtime_jit(rt);
    mt_target_from_device(mt_runtime_device(rt), &a->t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_parallel_for(a->n, 16, ahead_compile, a);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("compiled %d variants ahead in %.1f s\n", a->n,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

static const mt_problem_static S16 = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
static const mt_problem_static S8 = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_FP8_E4M3,
                                     .kv_dtype = MT_FP8_E4M3};
static const mt_problem_static SMALL = {.d = 128, .dl = 64, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};

/* The points over_the_space runs: every matrix-unit one and SIMT ones
 * `step` apart (n of them in *points, the caller frees). */
static int space_points(const mt_target *t, mt_variant **points, int *n) {
    mt_space sp;
    mt_space_full(&mt_family_mla_prefill, &sp);
    CHECK_OK(mt_space_list(&sp, &S16, t, points, n, NULL));
    const int want = 12;
    return *n > want ? *n / want : 1;
}
static int space_point_runs(const mt_variant *v, int i, int step) {
    return v->values[MT_PF_MMA] != 0 || i % step == 0;
}

static void over_the_space(mlt_runtime *rt, uint64_t seed) {
    mt_target t;
    mt_target_from_device(mt_runtime_device(rt), &t);
    const mt_problem_static s = S16;
    mt_variant *points = NULL;
    int n = 0;
    const int step = space_points(&t, &points, &n);
    printf("%d valid variants on %s; every matrix-unit one and 1 SIMT in %d run\n", n, t.arch, step);
    for (int i = 0; i < n; i++) {
        if (!space_point_runs(&points[i], i, step)) continue;
        family_ctx f = {.b = mt_runtime_backend(rt), .v = &points[i], .s = &s, .compute_units = mt_runtime_device(rt)->compute_units};
        char name[160];
        mt_variant_format(&points[i], name, sizeof name);
        mt_status st = mt_build_variant(mt_runtime_jit(rt), &points[i], &s, &t, &f.k);
        CHECK_MSG(st == MT_OK, "%s: %s", name, mt_last_error());
        if (st != MT_OK) continue;
        pf_launcher l = {.ctx = &f, .run = family_run, .merge = family_merge};
        for (int form = PF_WHOLE; form <= PF_CHUNKED; form++) {
            pf_case c = {.s = s, .batch = 5, .n_heads = 8, .nope = 192, .scale = 1 / sqrt(192.0),
                         .seed = seed + 100 + 2 * i + form, .form = (pf_form)form};
            pf_draw_lengths(&c, 150, 300);
            pf_result r = pf_run_case(f.b, &l, &c);
            record(&c, name, &r);
        }
        /* the wgmma path copies the batch's last key tile with its warp's
         * lanes when the copy engine's box would pass the keys' end: that
         * tile's k and v must be in before the arrival (a missing commit
         * let them come late, PERFLOG session 18); eight more draws with a
         * short last request */
        for (int rep = 0; points[i].values[MT_PF_MMA] == 2 && rep < 8; rep++) {
            pf_case c = {.s = s, .batch = 2, .n_heads = 4, .nope = 192, .scale = 1 / sqrt(192.0),
                         .seed = seed + 1000 + 10 * i + rep, .form = rep % 2 ? PF_NONCAUSAL : PF_WHOLE};
            pf_draw_lengths(&c, 60, 200);
            pf_result r = pf_run_case(f.b, &l, &c);
            record(&c, name, &r);
        }
        /* fp8 e4m3 on the wgmma path (wgmma_fp8.cuh): v^T through the
         * workspace, P rounded to e4m3, the scales; causal, chunked, and
         * k's rope part apart */
        if (points[i].values[MT_PF_MMA] == 2) {
            const mt_problem_static s8 = S8;
            family_ctx g = {.b = f.b, .v = &points[i], .s = &s8, .compute_units = mt_runtime_device(rt)->compute_units};
            st = mt_build_variant(mt_runtime_jit(rt), &points[i], &s8, &t, &g.k);
            CHECK_MSG(st == MT_OK, "%s in fp8: %s", name, mt_last_error());
            pf_launcher gl = {.ctx = &g, .run = family_run, .merge = family_merge};
            for (int form = PF_WHOLE; st == MT_OK && form <= PF_NONCAUSAL; form++) {
                pf_case c = {.s = s8, .batch = 3, .n_heads = 6, .nope = form == PF_NONCAUSAL ? 128 : 192,
                             .scale = 1 / sqrt(192.0), .q_scale = 0.5, .k_scale = 2.0, .v_scale = 0.25,
                             .seed = seed + 3000 + 3 * i + form, .form = (pf_form)form};
                pf_draw_lengths(&c, 200, 400);
                pf_result r = pf_run_case(f.b, &gl, &c);
                record(&c, name, &r);
            }
        }
        /* the wgmma path's other shapes: qk 128 (64 + 64 with k_pe apart),
         * v 64 (the N = 64 product of P V) */
        if (points[i].values[MT_PF_MMA] == 2) {
            const mt_problem_static small = SMALL;
            family_ctx g = {.b = f.b, .v = &points[i], .s = &small, .compute_units = mt_runtime_device(rt)->compute_units};
            st = mt_build_variant(mt_runtime_jit(rt), &points[i], &small, &t, &g.k);
            CHECK_MSG(st == MT_OK, "%s at D=128, Dl=64: %s", name, mt_last_error());
            pf_launcher gl = {.ctx = &g, .run = family_run, .merge = family_merge};
            for (int form = PF_WHOLE; st == MT_OK && form <= PF_CHUNKED; form++) {
                pf_case c = {.s = small, .batch = 3, .n_heads = 5, .nope = 64, .scale = 1 / sqrt(128.0),
                             .seed = seed + 2000 + 2 * i + form, .form = (pf_form)form};
                pf_draw_lengths(&c, 150, 300);
                pf_result r = pf_run_case(f.b, &gl, &c);
                record(&c, name, &r);
            }
        }
    }
    free(points);
}

/* The persistent form at its two ends (two warpgroups over 128-key tiles,
 * one work-group an SM; one over 64-key tiles, two an SM), and 16-byte
 * stores of out in both forms. */
#define LATER_FORMS                                                                                            \
    "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1",                                             \
        "tile_q=64,kv_tile=64,block_threads=128,mma=2,persistent=1",                                           \
        "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16",                           \
        "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=16"

/* What over_the_space and later_forms build, for compile_ahead. */
static void list_ahead(mlt_runtime *rt, int only_later, ahead_list *a) {
    mt_target t;
    mt_target_from_device(mt_runtime_device(rt), &t);
    if (!only_later) {
        mt_variant *points = NULL;
        int n = 0;
        const int step = space_points(&t, &points, &n);
        for (int i = 0; i < n; i++) {
            if (!space_point_runs(&points[i], i, step)) continue;
            ahead_add(a, &points[i], &S16);
            if (points[i].values[MT_PF_MMA] == 2) ahead_add(a, &points[i], &S8), ahead_add(a, &points[i], &SMALL);
        }
        free(points);
    }
    if (strcmp(t.arch, "sm_90") != 0) return;
    static const char *const later[] = {LATER_FORMS};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        mt_variant v;
        if (mt_variant_parse(&mt_family_mla_prefill, later[i], &v) != MT_OK) continue;
        ahead_add(a, &v, &S16), ahead_add(a, &v, &S8);
    }
}

/* The wgmma path's forms added later (LATER_FORMS; the full space above
 * holds only their defaults): each point in bf16 and fp8, whole, chunked
 * and non-causal, a persistent grid sized for the GPU's SMs and for 3 (a
 * few work-groups, each streaming dozens of tiles across requests and
 * heads); the second of the two runs writes out as a view whose rows are
 * Dl + 2 elements apart (4-byte aligned, not 16: out_stores=16 takes its
 * 4-byte stores there).  In the whole and non-causal forms one request
 * has fewer keys than new tokens, so tiles that stream no key sit between
 * tiles that do. */
static void later_forms(mlt_runtime *rt, uint64_t seed) {
    mt_target t;
    mt_target_from_device(mt_runtime_device(rt), &t);
    if (strcmp(t.arch, "sm_90") != 0) {
        printf("later forms: the wgmma path's, not on %s\n", t.arch);
        return;
    }
    static const char *const points[] = {LATER_FORMS};
    const int units[2] = {mt_runtime_device(rt)->compute_units, 3};
    for (int i = 0; i < (int)(sizeof points / sizeof points[0]); i++) {
        mt_variant v;
        CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, points[i], &v));
        for (int fp8 = 0; fp8 < 2; fp8++) {
            const mt_problem_static s = fp8 ? S8 : S16;
            family_ctx f = {.b = mt_runtime_backend(rt), .v = &v, .s = &s};
            mt_status st = mt_build_variant(mt_runtime_jit(rt), &v, &s, &t, &f.k);
            CHECK_MSG(st == MT_OK, "%s %s: %s", points[i], mt_dtype_name(s.kv_dtype), mt_last_error());
            if (st != MT_OK) continue;
            pf_launcher l = {.ctx = &f, .run = family_run, .merge = family_merge};
            for (int u = 0; u < 2; u++)
                for (int form = PF_WHOLE; form <= PF_NONCAUSAL; form++) {
                    f.compute_units = units[u];
                    pf_case c = {.s = s, .batch = 6, .n_heads = 8, .nope = form == PF_NONCAUSAL ? 128 : 192,
                                 .scale = 1 / sqrt(192.0), .seed = seed + 5000 + 100 * i + 10 * u + 3 * fp8 + form,
                                 .form = (pf_form)form};
                    if (fp8) c.q_scale = 0.5, c.k_scale = 2.0, c.v_scale = 0.25;
                    pf_draw_lengths(&c, 300, 400);
                    if (form != PF_CHUNKED) c.n_new[3] = 200, c.n_ctx[3] = -150; /* 50 keys for 200 new tokens */
                    c.out_pad = u == 1 ? 2 : 0;
                    pf_result r = pf_run_case(f.b, &l, &c);
                    char how[200];
                    if (v.values[MT_PF_PERSISTENT]) snprintf(how, sizeof how, "%s on %d SMs", points[i], units[u]);
                    else snprintf(how, sizeof how, "%s", points[i]);
                    record(&c, how, &r);
                }
        }
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a hang shows the last case that finished */
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.log_level = MLT_LOG_QUIET;
    mlt_runtime *rt = NULL;
    mlt_status st = mlt_runtime_create(&o, &rt);
    if (st == MLT_ERR_NO_BACKEND || st == MLT_ERR_NO_DEVICE) {
        printf("SKIP: %s\n", mlt_last_error());
        return CHECK_SKIP_CODE;
    }
    CHECK_MSG(st == MLT_OK, "runtime: %s", mlt_last_error());
    if (st != MLT_OK) return check_summary("test_gpu_prefill");
    const char *env = getenv("MLA_TUNE_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : 29;
    printf("%s, seed %llu\n", mlt_runtime_arch(rt), (unsigned long long)seed);
    const char *only = getenv("MLA_TUNE_TEST_PREFILL_ONLY");
    if (only && strcmp(only, "forms") != 0 && strcmp(only, "persistent") != 0) {
        printf("MLA_TUNE_TEST_PREFILL_ONLY=%s: only 'forms' (or 'persistent') is known\n", only);
        mlt_runtime_destroy(rt);
        return 2;
    }
    static ahead_list ahead; /* ~100 KB: not on the stack */
    list_ahead(rt, only != NULL, &ahead);
    compile_ahead(rt, &ahead);
    if (!only) {
        through_api(rt, seed);
        api_refusals(rt);
        over_the_space(rt, seed);
    } else {
        printf("MLA_TUNE_TEST_PREFILL_ONLY=%s: the API, refusal and whole-space cases skipped\n", only);
    }
    later_forms(rt, seed);
    printf("%d prefill cases passed, %d failed\n", passed_cases, failed_cases);
    mlt_runtime_destroy(rt);
    return check_summary("test_gpu_prefill");
}
