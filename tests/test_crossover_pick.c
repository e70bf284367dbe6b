/*
 * The crossover rule (runtime/api/crossover_pick.h), on points made here:
 * an exact point, interpolation between two measured sq (the numbers
 * checked), sq outside the measured range, the nearest context, head
 * count and device by ratio (where ratio and difference disagree), the
 * boundary (a crossing between points, at a point, from the first point,
 * none) agreeing with the pick at every sq, the dtype and arch filters,
 * the source of mixed points, and the flop rule with no points, its
 * boundary for 128 heads at context 4096 computed here from the model.
 */
#define _GNU_SOURCE
#include <math.h>

#include "check.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/crossover_pick.h"

static mt_crossover_point pts[256];
static int n_pts;

static void add(int cus, int heads, int context, int sq, double mqa, double mha) {
    mt_crossover_point *p = &pts[n_pts++];
    memset(p, 0, sizeof *p);
    snprintf(p->arch, sizeof p->arch, "sm_90");
    snprintf(p->source, sizeof p->source, "user");
    p->compute_units = cus, p->n_heads = heads, p->context = context, p->sq = sq;
    p->q_dtype = MT_BF16, p->kv_dtype = MT_BF16;
    p->mqa_ms = mqa, p->mha_ms = mha;
}

/* The main curve (132 CUs, 128 heads, context 4096):
 *   sq    32   64   128  256
 *   MQA   1.0  2.0  4.0  8.0
 *   MHA   2.0  3.0  3.5  5.0
 * MHA - MQA is +1 at 64 and -0.5 at 128: zero at 64 + 64 x 1/1.5 = 106.67,
 * so MHA from sq 107 (at 106: MQA 3.3125, MHA 3.328125; at 107: 3.34375,
 * 3.3359375). */
static void main_curve(int cus, int heads, int context) {
    add(cus, heads, context, 128, 4.0, 3.5);  /* out of order on purpose */
    add(cus, heads, context, 32, 1.0, 2.0);
    add(cus, heads, context, 256, 8.0, 5.0);
    add(cus, heads, context, 64, 2.0, 3.0);
}

static mlt_form_info pick(const char *arch, int cus, int heads, int sq, int context) {
    mt_crossover_query q = {.arch = arch, .compute_units = cus, .n_heads = heads, .q_dtype = MT_BF16,
                            .kv_dtype = MT_BF16, .sq = sq, .context = context};
    mlt_form_info info;
    memset(&info, 0x5a, sizeof info);  /* every field must be written */
    mt_crossover_pick(pts, n_pts, &q, &info);
    return info;
}

static void test_exact_interpolated_outside(void) {
    n_pts = 0;
    main_curve(132, 128, 4096);
    mlt_form_info f = pick("sm_90", 132, 128, 64, 4096);
    CHECK(f.measured == 1 && strcmp(f.source, "user") == 0 && f.form == MLT_FORM_MQA);
    CHECK(f.lo_sq == 64 && f.hi_sq == 64 && f.mqa_ms == 2.0 && f.mha_ms == 3.0);
    CHECK(f.key_compute_units == 132 && f.key_n_heads == 128 && f.key_context == 4096 && f.boundary_sq == 107);
    CHECK_MSG(strstr(f.why, "MQA 2.000 ms vs MHA 3.000 ms, measured at sq 64 at context 4096; there MHA from sq 107"),
              "%s", f.why);
    /* halfway between 64 and 128: (2 + 4) / 2 and (3 + 3.5) / 2 */
    f = pick("sm_90", 132, 128, 96, 4096);
    CHECK(f.lo_sq == 64 && f.hi_sq == 128 && f.mqa_ms == 3.0 && f.mha_ms == 3.25 && f.form == MLT_FORM_MQA);
    CHECK_MSG(strstr(f.why, "interpolated between sq 64 and 128"), "%s", f.why);
    /* three quarters: 2 + 2 x 0.75 = 3.5, 3 + 0.5 x 0.75 = 3.375: MHA */
    f = pick("sm_90", 132, 128, 112, 4096);
    CHECK(f.mqa_ms == 3.5 && f.mha_ms == 3.375 && f.form == MLT_FORM_MHA);
    CHECK_MSG(strncmp(f.why, "MHA 3.375 ms vs MQA 3.500 ms", 28) == 0, "%s", f.why);
    /* outside: the nearest point's times, not a line beyond it */
    f = pick("sm_90", 132, 128, 8, 4096);
    CHECK(f.lo_sq == 32 && f.hi_sq == 32 && f.mqa_ms == 1.0 && f.mha_ms == 2.0 && f.form == MLT_FORM_MQA);
    CHECK_MSG(strstr(f.why, "sq 8 is below the measured 32..256: sq 32's times"), "%s", f.why);
    f = pick("sm_90", 132, 128, 1024, 4096);
    CHECK(f.lo_sq == 256 && f.hi_sq == 256 && f.mqa_ms == 8.0 && f.mha_ms == 5.0 && f.form == MLT_FORM_MHA);
    CHECK_MSG(strstr(f.why, "above the measured 32..256"), "%s", f.why);
    /* the boundary and the pick agree at every sq */
    int disagree = 0;
    for (int sq = 1; sq <= MT_DECODE_MAX_SQ; sq++) {
        f = pick("sm_90", 132, 128, sq, 4096);
        disagree += (f.form == MLT_FORM_MHA) != (sq >= 107) || f.boundary_sq != 107;
    }
    CHECK_MSG(disagree == 0, "%d sq where the pick and the boundary 107 disagree", disagree);
}

static void test_boundaries(void) {
    /* MHA - MQA exactly 0 at a measured point (64): MHA from 64, not 63 */
    n_pts = 0;
    add(132, 128, 4096, 32, 1.0, 2.0);
    add(132, 128, 4096, 64, 2.0, 2.0);
    add(132, 128, 4096, 128, 4.0, 3.0);
    mlt_form_info f = pick("sm_90", 132, 128, 64, 4096);
    CHECK(f.boundary_sq == 64 && f.form == MLT_FORM_MHA);
    CHECK(pick("sm_90", 132, 128, 63, 4096).form == MLT_FORM_MQA);
    /* MHA already at the first point: its times stand below it, MHA from 1 */
    n_pts = 0;
    add(132, 128, 4096, 16, 2.0, 1.0);
    add(132, 128, 4096, 32, 3.0, 2.0);
    f = pick("sm_90", 132, 128, 1, 4096);
    CHECK(f.boundary_sq == 1 && f.form == MLT_FORM_MHA);
    CHECK_MSG(strstr(f.why, "there MHA from sq 1"), "%s", f.why);
    /* MQA everywhere: no boundary */
    n_pts = 0;
    add(132, 128, 4096, 16, 1.0, 2.0);
    add(132, 128, 4096, 1024, 3.0, 4.0);
    f = pick("sm_90", 132, 128, 500, 4096);
    CHECK(f.boundary_sq == 0 && f.form == MLT_FORM_MQA);
    CHECK_MSG(strstr(f.why, "there MQA at every sq"), "%s", f.why);
    /* noise: MHA wins at 64, loses at 128, wins at 256: the boundary is
     * the first sq of MHA; the pick follows the times */
    n_pts = 0;
    add(132, 128, 4096, 32, 1.0, 3.0);
    add(132, 128, 4096, 64, 2.0, 1.0);  /* crossing at 32 + 32 x 2/3 = 53.3: from 54 */
    add(132, 128, 4096, 128, 4.0, 6.0);
    add(132, 128, 4096, 256, 8.0, 5.0);
    CHECK(pick("sm_90", 132, 128, 53, 4096).form == MLT_FORM_MQA);
    CHECK(pick("sm_90", 132, 128, 54, 4096).boundary_sq == 54);
    CHECK(pick("sm_90", 132, 128, 128, 4096).form == MLT_FORM_MQA);
    CHECK(pick("sm_90", 132, 128, 256, 4096).form == MLT_FORM_MHA);
}

static void test_nearest(void) {
    /* contexts 1024, 4096 and 16384, told apart by their crossing */
    n_pts = 0;
    for (int c = 1024; c <= 16384; c *= 4) {
        add(132, 128, c, 64, 1.0, 2.0);
        add(132, 128, c, 128, c == 1024 ? 4.0 : 2.0, 3.0); /* 1024: MHA wins at 128 */
    }
    /* 2048 is x2 from both 1024 and 4096: the tie goes to the larger */
    mlt_form_info f = pick("sm_90", 132, 128, 128, 2048);
    CHECK(f.key_context == 4096 && f.form == MLT_FORM_MQA);
    CHECK_MSG(strstr(f.why, "at context 4096 (nearest to 2048, x2.00); there"), "%s", f.why);
    /* 1500: x1.46 from 1024, x2.73 from 4096 */
    f = pick("sm_90", 132, 128, 128, 1500);
    CHECK(f.key_context == 1024 && f.form == MLT_FORM_MHA);
    /* 9000: x2.20 from 4096, x1.82 from 16384 (by difference 4096 is nearer) */
    CHECK(pick("sm_90", 132, 128, 128, 9000).key_context == 16384);
    /* 0 counts as 1: 1024 is nearest; with a context-0 curve, that */
    CHECK(pick("sm_90", 132, 128, 128, 0).key_context == 1024);
    add(132, 128, 0, 64, 1.0, 0.5);
    add(132, 128, 1, 64, 1.0, 0.5);
    CHECK(pick("sm_90", 132, 128, 128, 0).key_context == 0);
    CHECK(pick("sm_90", 132, 128, 128, 1).key_context == 1);

    /* heads 16 and 128: 60 is nearer 128 by ratio (x2.13 against x3.75),
     * nearer 16 by difference */
    n_pts = 0;
    main_curve(132, 16, 4096);
    main_curve(132, 128, 4096);
    f = pick("sm_90", 132, 60, 96, 4096);
    CHECK(f.key_n_heads == 128);
    CHECK_MSG(strstr(f.why, "at context 4096, 128 heads (nearest to 60, x2.13); there"), "%s", f.why);
    CHECK(pick("sm_90", 132, 30, 96, 4096).key_n_heads == 16);
    CHECK(pick("sm_90", 132, 16, 96, 4096).key_n_heads == 16);

    /* devices of 132 and 78 compute units (an H100 and an H20): 114 is
     * nearer 132 (x1.16 against x1.46), 100 nearer 78 (x1.28 against x1.32),
     * an unknown device (0) takes the largest */
    n_pts = 0;
    main_curve(132, 128, 4096);
    main_curve(78, 128, 4096);
    f = pick("sm_90", 114, 128, 96, 4096);
    CHECK(f.key_compute_units == 132);
    CHECK_MSG(strstr(f.why, ", the 132-CU device (nearest to 114, x1.16)"), "%s", f.why);
    CHECK(pick("sm_90", 100, 128, 96, 4096).key_compute_units == 78);
    CHECK(pick("sm_90", 78, 128, 96, 4096).key_compute_units == 78);
    f = pick("sm_90", 0, 128, 96, 4096);
    CHECK(f.key_compute_units == 132 && strstr(f.why, "the largest device measured (132 CUs)"));
    /* the device is chosen first: a 78-CU device's 16-head curve is not
     * taken over the 132-CU device's 128 heads for a 132-CU query */
    add(78, 16, 4096, 64, 1.0, 2.0);
    CHECK(pick("sm_90", 132, 16, 96, 4096).key_n_heads == 128);
}

/* The flop model written out again here, in long double: no shared code. */
static int flop_boundary_here(int n, int context) {
    for (int sq = 1; sq <= 1024; sq++) {
        long double pairs = (long double)sq * context + (long double)sq * (sq + 1) / 2;
        long double mqa = 2.0L * n * pairs * (576 + 512) + 2.0L * sq * n * 128 * 512 + 2.0L * sq * n * 512 * 128;
        long double mha = 2.0L * (context + sq) * 512 * n * 256 + 2.0L * n * pairs * (192 + 128);
        if (mha <= mqa) return sq;
    }
    return 0;
}

static void test_flop_rule(void) {
    /* MQA - MHA = N (1536 pairs - 262144 context): MHA from the first sq
     * with pairs >= 170.67 x 4096 = 699050.7; sq 167 has 684032 + 14028 =
     * 698060 pairs, sq 168 has 688128 + 14196 = 702324 */
    CHECK(flop_boundary_here(128, 4096) == 168);
    CHECK(mt_crossover_flop_boundary(128, 4096) == 168);
    CHECK(mt_crossover_flop_boundary(16, 4096) == 168); /* the heads cancel */
    CHECK(mt_crossover_flop_boundary(128, 0) == 1);     /* no context: decompressing the chunk costs what absorbing does */
    CHECK(mt_crossover_flop_boundary(128, 100) == flop_boundary_here(128, 100));
    CHECK(mt_crossover_flop_boundary(128, 1 << 30) == flop_boundary_here(128, 1 << 30));
    double mqa, mha;
    mt_crossover_flops(128, 168, 4096, &mqa, &mha);
    CHECK(mha <= mqa && mqa == 2.0 * 128 * 702324 * 1088 + 4.0 * 168 * 128 * 65536);
    /* no points at all, points of another arch, of other dtypes: the rule */
    n_pts = 0;
    mlt_form_info f = pick("sm_90", 132, 128, 168, 4096);
    CHECK(f.measured == 0 && strcmp(f.source, "rule") == 0 && f.form == MLT_FORM_MHA && f.boundary_sq == 168);
    CHECK(f.mqa_ms == 0 && f.mha_ms == 0 && f.key_n_heads == 0 && f.key_context == 0 && f.key_compute_units == 0);
    CHECK(f.lo_sq == 0 && f.hi_sq == 0);
    CHECK_MSG(strstr(f.why, "no crossover measured for sm_90 with bf16/bf16: the flop rule (MHA does no more flops "
                            "than MQA from sq 168 at context 4096) picks MHA at sq 168"), "%s", f.why);
    CHECK(pick("sm_90", 132, 128, 167, 4096).form == MLT_FORM_MQA);
    main_curve(132, 128, 4096);
    pts[0].kv_dtype = pts[1].kv_dtype = pts[2].kv_dtype = pts[3].kv_dtype = MT_FP8_E4M3;
    CHECK(pick("sm_90", 132, 128, 96, 4096).measured == 0);
    CHECK(pick("gfx942", 304, 128, 96, 4096).measured == 0);
    mt_crossover_query q = {.arch = "sm_90", .compute_units = 132, .n_heads = 128, .q_dtype = MT_BF16,
                            .kv_dtype = MT_FP8_E4M3, .sq = 96, .context = 4096};
    mt_crossover_pick(pts, n_pts, &q, &f);
    CHECK(f.measured == 1 && f.mqa_ms == 3.0);
}

static void test_sources(void) {
    n_pts = 0;
    main_curve(132, 128, 4096);
    snprintf(pts[0].source, sizeof pts[0].source, "system"); /* sq 128 */
    CHECK(strcmp(pick("sm_90", 132, 128, 96, 4096).source, "user+system") == 0);
    CHECK(strcmp(pick("sm_90", 132, 128, 128, 4096).source, "system") == 0);
    CHECK(strcmp(pick("sm_90", 132, 128, 48, 4096).source, "user") == 0);
}

int main(void) {
    test_exact_interpolated_outside();
    test_boundaries();
    test_nearest();
    test_flop_rule();
    test_sources();
    return check_summary("test_crossover_pick");
}
