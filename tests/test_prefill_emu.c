/*
 * test_prefill_emu.c - the prefill family's kernels on the CPU emulation
 * of AMD GPUs (the "hip-cpu" backend, label emu; see test_amd_emu.c for
 * what the emulation proves and does not): for gfx942 and gfx950 (64-wide
 * wavefronts), SIMT (mma=0) and MFMA (mma=1) variants built by the one
 * recipe and launched by the family's launch, against the double-precision
 * reference on varlen batches with contexts:
 *   - one causal call over context + new tokens, with a request that has
 *     no context and one with fewer keys than new tokens (empty rows);
 *   - the chunked form: a non-causal call over the context, a causal one
 *     over the new tokens, and the merge kernel (requests without context
 *     give an empty context state, which the merge must skip);
 *   - a non-causal call, k's rope part apart (k_pe shared by the heads),
 *     lse head-major, fp16.
 * And the public API (mlt_prefill_plan_create, run, merge) on the emulated
 * gfx942 (MLA_TUNE_BACKEND=hip-cpu): a plan with the default problem's
 * split (128 + 64), called without k_pe (k holds every column) and with.
 * Negative controls: the same comparison with the softmax scale changed,
 * and the MFMA variant compiled with the emulation's operand lanes
 * permuted (MT_EMU_WRONG_MFMA_LANES), must fail, or the comparison could
 * not see a wrong kernel or a wrong lane layout.
 * Kept to ~30 s of CI (a few variants per target, small batches).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kernels/build.h"
#include "prefill_cases.h"
#include "runtime/api/api_internal.h"

typedef struct emu_ctx {
    mt_backend *b;
    mt_kernels k;
    const mt_variant *v;
    const mt_problem_static *s;
    float scale_error; /* the negative control: multiplies the scale the kernel is given */
} emu_ctx;

static mt_status emu_run(void *ctx, const mt_mla_prefill_args *a) {
    emu_ctx *e = ctx;
    mt_mla_prefill_args changed = *a;
    changed.scale *= e->scale_error;
    return mt_mla_prefill_launch(e->b, &e->k, e->v, e->s, &changed, NULL);
}

static mt_status emu_merge(void *ctx, const mt_mla_prefill_merge_args *a) {
    emu_ctx *e = ctx;
    return mt_mla_prefill_merge_launch(e->b, &e->k, e->s, a, NULL);
}

static int run_and_check(emu_ctx *e, const pf_case *c, const char *variant, int expect_ok) {
    pf_launcher l = {.ctx = e, .run = emu_run, .merge = emu_merge};
    pf_result r = pf_run_case(e->b, &l, c);
    char what[300];
    pf_describe(c, what, sizeof what);
    if (expect_ok)
        CHECK_MSG(r.ok, "%s %s: out error %.3g, lse error %.3g%s %s", variant, what, r.e_out, r.e_lse,
                  r.has_nan ? ", NaN" : "", r.error);
    else
        CHECK_MSG(!r.ok && !r.error[0], "negative control passed (or failed to run: %s): %s %s", r.error, variant, what);
    printf("  %-3s %s %s: out %.2e lse %.2e, %d empty rows\n", !expect_ok ? "neg" : r.ok ? "ok" : "BAD", variant, what, r.e_out, r.e_lse,
           r.empty_rows);
    return r.empty_rows;
}

/* A variant to run on a target; `wrong_lanes`: the MFMA negative control,
 * compiled with the emulation's A-operand lane mapping permuted. */
typedef struct emu_variant {
    const char *text;
    int wrong_lanes;
} emu_variant;

static void on_target(const char *arch, const emu_variant *variants, int n_variants, mt_dtype dtype) {
    setenv("MLA_TUNE_EMU_ARCH", arch, 1);
    mt_backend *b = NULL;
    mt_status st = mt_backend_open("hip-cpu", &b);
    /* no skip: CI installs clang (tests/setup-deps.sh); a missing one fails */
    CHECK_MSG(st == MT_OK, "hip-cpu backend for %s: %s", arch, mt_last_error());
    if (st != MT_OK) return;
    mt_device_info info;
    CHECK_OK(mt_backend_device_info(b, 0, &info));
    mt_target t;
    mt_target_from_device(&info, &t);
    CHECK_MSG(t.warp_size == 64, "%s emulated with %d-wide wavefronts", arch, t.warp_size);
    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(b, NULL, &jit));
    const mt_problem_static s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = dtype, .kv_dtype = dtype};
    for (int i = 0; jit && i < n_variants; i++) {
        mt_variant v;
        emu_ctx e = {.b = b, .v = &v, .s = &s, .scale_error = 1.0f};
        CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, variants[i].text, &v));
        CHECK_OK(mt_variant_validate(&v, &s, &t));
        const char *wrong[] = {"-DMT_EMU_WRONG_MFMA_LANES"};
        const mt_code_object *obj = NULL;
        st = mt_build_compile_with(jit, &v, &s, &t, wrong, variants[i].wrong_lanes ? 1 : 0, &obj, NULL);
        if (st == MT_OK) st = mt_build_load(jit, obj, &v, &s, &t, &e.k);
        CHECK_MSG(st == MT_OK, "%s %s: %s", arch, variants[i].text, mt_last_error());
        if (st != MT_OK) continue;
        char name[200];
        snprintf(name, sizeof name, "%s %s%s", arch, variants[i].text, variants[i].wrong_lanes ? " (lanes permuted)" : "");
        pf_case c = {.s = s, .batch = 3, .n_heads = 2, .nope = 192, .scale = 1.0 / sqrt(192.0), .seed = 77 + i,
                     .form = PF_WHOLE};
        /* whole: 17 new tokens after 9 (several q tiles and key tiles, a
         * ragged last one), 1 after none, 5 with only 2 keys */
        memcpy(c.n_new, (int[]){17, 1, 5}, sizeof(int) * 3), memcpy(c.n_ctx, (int[]){9, 0, -3}, sizeof(int) * 3);
        if (variants[i].wrong_lanes) {
            run_and_check(&e, &c, name, 0);
            continue;
        }
        int empty = run_and_check(&e, &c, name, 1);
        CHECK_MSG(empty == 3 * 2, "the short request should leave 3 tokens x 2 heads empty, not %d rows", empty);
        /* chunked: the merge; request 1 has no context; out's rows 2
         * elements apart past Dl (a view, 4-byte aligned rows) */
        c.form = PF_CHUNKED, c.seed++, c.out_pad = 2;
        memcpy(c.n_new, (int[]){6, 3, 9}, sizeof(int) * 3), memcpy(c.n_ctx, (int[]){21, 0, 4}, sizeof(int) * 3);
        run_and_check(&e, &c, name, 1);
        c.out_pad = 0;
        /* non-causal, rope apart, lse head-major */
        c.form = PF_NONCAUSAL, c.seed++, c.nope = 128, c.lse_head_major = 1;
        memcpy(c.n_new, (int[]){4, 11, 2}, sizeof(int) * 3), memcpy(c.n_ctx, (int[]){5, 0, 30}, sizeof(int) * 3);
        run_and_check(&e, &c, name, 1);
        if (i == 0) {
            e.scale_error = 1.25f; /* the negative control */
            run_and_check(&e, &c, name, 0);
        }
    }
    mt_jit_destroy(jit);
    mt_backend_close(b);
}

static void through_api(void) {
    setenv("MLA_TUNE_BACKEND", "hip-cpu", 1);
    setenv("MLA_TUNE_EMU_ARCH", "gfx942", 1);
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.log_level = MLT_LOG_QUIET;
    mlt_runtime *rt = NULL;
    CHECK_MSG(mlt_runtime_create(&o, &rt) == MLT_OK, "runtime on hip-cpu: %s", mlt_last_error());
    if (!rt) return;
    mlt_prefill_problem pp;
    mlt_prefill_problem_default(&pp);
    pp.n_heads = 3;
    mlt_prefill_plan *plan = NULL;
    CHECK_MSG(mlt_prefill_plan_create(rt, &pp, &plan) == MLT_OK, "prefill plan: %s", mlt_last_error());
    if (plan) {
        pf_launcher l = pf_api_launcher(plan);
        for (int form = PF_WHOLE; form <= PF_NONCAUSAL; form++) {
            pf_case c = {.s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                         .batch = 2, .n_heads = 3, .nope = form == PF_NONCAUSAL ? 128 : 192,
                         .scale = pp.softmax_scale, .seed = 500 + form, .form = (pf_form)form};
            pf_draw_lengths(&c, 12, 20);
            pf_result r = pf_run_case(mt_runtime_backend(rt), &l, &c);
            char what[300];
            pf_describe(&c, what, sizeof what);
            CHECK_MSG(r.ok, "api %s: out error %.3g, lse error %.3g%s %s", what, r.e_out, r.e_lse,
                      r.has_nan ? ", NaN" : "", r.error);
            printf("  %-3s api %s: out %.2e lse %.2e\n", r.ok ? "ok" : "BAD", what, r.e_out, r.e_lse);
        }
    }
    mlt_prefill_plan_destroy(plan);
    mlt_runtime_destroy(rt);
}

int main(void) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* SIMT: the default, and a single wavefront with a tile of 4 tokens
     * over 16-key tiles; MFMA on 2 waves; its negative control */
    static const emu_variant gfx942[] = {{"tile_q=16,kv_tile=32,block_threads=128,mma=0", 0},
                                         {"tile_q=4,kv_tile=16,block_threads=64,mma=0", 0},
                                         {"tile_q=32,kv_tile=32,block_threads=128,mma=1", 0},
                                         {"tile_q=32,kv_tile=32,block_threads=128,mma=1", 1}};
    /* fp16: SIMT on 4 wavefronts, 8 tokens; MFMA on one wave over 64-key tiles */
    static const emu_variant gfx950[] = {{"tile_q=8,kv_tile=32,block_threads=256,mma=0", 0},
                                         {"tile_q=16,kv_tile=64,block_threads=64,mma=1", 0}};
    on_target("gfx942", gfx942, 4, MT_BF16);
    on_target("gfx950", gfx950, 2, MT_FP16);
    through_api();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return check_summary("test_prefill_emu");
}
