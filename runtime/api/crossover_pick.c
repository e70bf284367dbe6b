/*
 * crossover_pick.c - the rule of crossover_pick.h: which prefill form a
 * chunk takes, from the measured points or, with none, from the flops.
 *
 * Nearness is by ratio (a factor of 2 is as far at 128 heads as at 16, at
 * 1024 tokens of context as at 65536), compared exactly in integers so
 * that a tie is a tie and goes to the larger (the measured device, head
 * count or context with more work, whose crossover a smaller one's is
 * nearer to than the other way round: both forms' costs grow with each).
 * A context of 0 counts as 1 in the ratio, after the exact match: a
 * context of 0 is matched by 0, else by 1.
 *
 * Between two measured sq both forms' times are linear in sq: the work of
 * each grows linearly with the chunk (the attention's pairs add a square
 * term that is small against sq x context when the context is long), and
 * measured points are a few per octave.  Outside the measured sq the
 * nearest point's times stand: extrapolating a line fitted to two noisy
 * points would invent a crossing nobody measured.
 *
 * The boundary is computed with the same interpolation as the pick, at
 * integer sq, so that "MHA from sq B" and the pick at sq B can never
 * disagree.
 */
#define _GNU_SOURCE
#include "crossover_pick.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mla_decode/mla_decode.h"

/* DeepSeek's MLA shapes, which the two forms are defined over
 * (docs/prefill.md): the latent width, the rope width, the no-rope and v
 * widths per head. */
enum { LATENT = 512, ROPE = 64, NOPE = 128, V_DIM = 128 };

/* Causal (new token, key) pairs of a chunk: every new token sees the
 * context and the chunk's tokens up to itself. */
static int64_t pairs_of(int sq, int context) { return (int64_t)sq * context + (int64_t)sq * (sq + 1) / 2; }

/* Exact flops of each form (int64: N 128, context 2^31, sq 1024 stay
 * below 2^63). */
static void flops_exact(int n_heads, int sq, int context, int64_t *mqa, int64_t *mha) {
    int64_t n = n_heads, pairs = pairs_of(sq, context);
    *mqa = 2 * n * pairs * (LATENT + ROPE + LATENT)          /* attention over the latent cache: qk 576, v 512 */
           + 2 * (int64_t)sq * n * NOPE * LATENT             /* absorb: q_nope @ W_UK^T */
           + 2 * (int64_t)sq * n * LATENT * V_DIM;           /* output: out @ W_UV */
    *mha = 2 * ((int64_t)context + sq) * LATENT * n * (NOPE + V_DIM)  /* decompression: k_nope and v per head */
           + 2 * n * pairs * (NOPE + ROPE + V_DIM);                  /* attention: qk 192, v 128 */
}

void mt_crossover_flops(int n_heads, int sq, int context, double *mqa, double *mha) {
    int64_t a, b;
    flops_exact(n_heads, sq, context, &a, &b);
    *mqa = (double)a;
    *mha = (double)b;
}

int mt_crossover_flop_boundary(int n_heads, int context) {
    for (int sq = 1; sq <= MT_DECODE_MAX_SQ; sq++) {
        int64_t mqa, mha;
        flops_exact(n_heads, sq, context, &mqa, &mha);
        if (mha <= mqa) return sq;
    }
    return 0;
}

/* <0: a is nearer x than b by ratio, >0: b is, 0: a tie.  All >= 1. */
static int ratio_cmp(int a, int b, int x) {
    /* the ratio of a to x is hi/lo: compare hi_a / lo_a with hi_b / lo_b */
    int64_t ha = a > x ? a : x, la = a > x ? x : a, hb = b > x ? b : x, lb = b > x ? x : b;
    int64_t l = ha * lb, r = hb * la;
    return l < r ? -1 : l > r ? 1 : 0;
}

static int at_least_1(int v) { return v > 0 ? v : 1; }

/* Is candidate c nearer `want` than the best so far (exact match first,
 * then by ratio with 0 as 1, a tie to the larger)? */
static int nearer(int c, int best, int want) {
    if (c == best) return 0;
    if ((c == want) != (best == want)) return c == want;
    int r = ratio_cmp(at_least_1(c), at_least_1(best), at_least_1(want));
    return r < 0 || (r == 0 && c > best);
}

/* The ratio as a person reads it: 2.00 for a factor of two either way. */
static double ratio_of(int a, int b) {
    double x = at_least_1(a), y = at_least_1(b);
    return x > y ? x / y : y / x;
}

typedef struct curve {
    const mt_crossover_point **p;  /* by sq, one per measured sq */
    int n;
} curve;

static int by_sq(const void *a, const void *b) {
    const mt_crossover_point *x = *(const mt_crossover_point *const *)a, *y = *(const mt_crossover_point *const *)b;
    return (x->sq > y->sq) - (x->sq < y->sq);
}

/* Both forms' times at sq on the curve; *lo / *hi: the curve's points used. */
static void times_at(const curve *c, int sq, double *mqa, double *mha, int *lo, int *hi) {
    int i = 0;
    if (sq <= c->p[0]->sq) i = 0;
    else if (sq >= c->p[c->n - 1]->sq) i = c->n - 1;
    else
        while (c->p[i + 1]->sq <= sq) i++;
    const mt_crossover_point *a = c->p[i];
    if (sq == a->sq || sq < a->sq || i == c->n - 1) {
        *mqa = a->mqa_ms, *mha = a->mha_ms, *lo = *hi = i;
        return;
    }
    const mt_crossover_point *b = c->p[i + 1];
    double f = (double)(sq - a->sq) / (b->sq - a->sq);
    *mqa = a->mqa_ms + (b->mqa_ms - a->mqa_ms) * f;
    *mha = a->mha_ms + (b->mha_ms - a->mha_ms) * f;
    *lo = i, *hi = i + 1;
}

static int mha_at(const curve *c, int sq) {
    double mqa, mha;
    int lo, hi;
    times_at(c, sq, &mqa, &mha, &lo, &hi);
    return mha <= mqa;
}

/* The smallest sq (1..MT_DECODE_MAX_SQ) at which the curve picks MHA, 0
 * when it never does.  Below the first point its times stand, so MHA there
 * is MHA from 1; otherwise the first segment that ends on MHA holds the
 * crossing, found from the linear estimate and settled at integers. */
static int boundary_of(const curve *c) {
    if (mha_at(c, 1)) return 1;
    for (int i = 0; i + 1 < c->n; i++) {
        const mt_crossover_point *a = c->p[i], *b = c->p[i + 1];
        if (!mha_at(c, b->sq)) continue;
        double da = a->mha_ms - a->mqa_ms, db = b->mha_ms - b->mqa_ms;
        double cross = da - db > 0 ? a->sq + da * (b->sq - a->sq) / (da - db) : b->sq;
        int s = (int)ceil(cross);
        if (s <= a->sq) s = a->sq + 1;
        if (s > b->sq) s = b->sq;
        while (s > a->sq + 1 && mha_at(c, s - 1)) s--;
        while (s < b->sq && !mha_at(c, s)) s++;
        return s;
    }
    return 0;
}

static void flop_rule(const mt_crossover_query *q, mlt_form_info *out) {
    int b = mt_crossover_flop_boundary(q->n_heads, q->context);
    out->form = b > 0 && q->sq >= b ? MLT_FORM_MHA : MLT_FORM_MQA;
    out->measured = 0;
    snprintf(out->source, sizeof out->source, "rule");
    out->boundary_sq = b;
    char from[64];
    if (b > 0) snprintf(from, sizeof from, "from sq %d", b);
    else snprintf(from, sizeof from, "at no sq up to %d", MT_DECODE_MAX_SQ);
    snprintf(out->why, sizeof out->why,
             "no crossover measured for %.31s with %s/%s: the flop rule (MHA does no more flops than MQA %s at "
             "context %d) picks %s at sq %d",
             q->arch ? q->arch : "?", mt_dtype_name(q->q_dtype), mt_dtype_name(q->kv_dtype), from, q->context,
             out->form == MLT_FORM_MHA ? "MHA" : "MQA", q->sq);
}

/* "user", "system", or both when the two points interpolated between came
 * from different files. */
static void source_of(const mt_crossover_point *a, const mt_crossover_point *b, char *out, size_t size) {
    if (strcmp(a->source, b->source) == 0) snprintf(out, size, "%s", a->source);
    else snprintf(out, size, "user+system");
}

void mt_crossover_pick(const mt_crossover_point *points, int n, const mt_crossover_query *q, mlt_form_info *out) {
    memset(out, 0, sizeof *out);
    /* 1. the arch and dtypes; the device, heads and context nearest */
    int cus = -1, heads = -1, context = -1, want_cus = q->compute_units;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++) {
            const mt_crossover_point *p = &points[i];
            if (!q->arch || strcmp(p->arch, q->arch) != 0 || p->q_dtype != q->q_dtype || p->kv_dtype != q->kv_dtype)
                continue;
            if (pass == 0) {
                /* an unknown device (0 compute units) takes the largest measured */
                if (cus < 0 || (want_cus > 0 ? nearer(p->compute_units, cus, want_cus) : p->compute_units > cus))
                    cus = p->compute_units;
            } else if (p->compute_units != cus) {
                continue;
            } else if (pass == 1) {
                if (heads < 0 || nearer(p->n_heads, heads, q->n_heads)) heads = p->n_heads;
            } else if (p->n_heads == heads && (context < 0 || nearer(p->context, context, q->context))) {
                context = p->context;
            }
        }
    if (cus < 0) {
        flop_rule(q, out);
        return;
    }
    /* 2. that context's points by sq (one per sq: the first of twins) */
    curve curve_at = {.p = malloc(sizeof *curve_at.p * (size_t)n)}, *c = &curve_at;
    if (!c->p) { /* the rule needs no memory: better than no answer */
        flop_rule(q, out);
        return;
    }
    for (int i = 0; i < n; i++) {
        const mt_crossover_point *p = &points[i];
        if (strcmp(p->arch, q->arch) == 0 && p->q_dtype == q->q_dtype && p->kv_dtype == q->kv_dtype &&
            p->compute_units == cus && p->n_heads == heads && p->context == context)
            c->p[c->n++] = p;
    }
    qsort(c->p, (size_t)c->n, sizeof c->p[0], by_sq);
    int kept = 0;
    for (int i = 0; i < c->n; i++)
        if (kept == 0 || c->p[kept - 1]->sq != c->p[i]->sq) c->p[kept++] = c->p[i];
    c->n = kept;
    /* 3. the faster at sq, and where MHA starts to be */
    int lo, hi;
    times_at(c, q->sq, &out->mqa_ms, &out->mha_ms, &lo, &hi);
    out->form = out->mha_ms <= out->mqa_ms ? MLT_FORM_MHA : MLT_FORM_MQA;
    out->measured = 1;
    source_of(c->p[lo], c->p[hi], out->source, sizeof out->source);
    out->key_compute_units = cus;
    out->key_n_heads = heads;
    out->key_context = context;
    out->lo_sq = c->p[lo]->sq;
    out->hi_sq = c->p[hi]->sq;
    out->boundary_sq = boundary_of(c);
    int first = c->p[0]->sq, last = c->p[c->n - 1]->sq;
    free(c->p);

    /* why, in the words of a person reading a log line */
    char at[96], near[160] = "", bound[64];
    if (out->lo_sq != out->hi_sq)
        snprintf(at, sizeof at, "interpolated between sq %d and %d", out->lo_sq, out->hi_sq);
    else if (q->sq == out->lo_sq)
        snprintf(at, sizeof at, "measured at sq %d", q->sq);
    else
        snprintf(at, sizeof at, "sq %d is %s the measured %d..%d: sq %d's times", q->sq,
                 q->sq < first ? "below" : "above", first, last, out->lo_sq);
    size_t used = 0;
    if (context != q->context)
        used += (size_t)snprintf(near + used, sizeof near - used, " (nearest to %d, x%.2f)", q->context,
                                 ratio_of(context, q->context));
    if (heads != q->n_heads && used < sizeof near)
        used += (size_t)snprintf(near + used, sizeof near - used, ", %d heads (nearest to %d, x%.2f)", heads,
                                 q->n_heads, ratio_of(heads, q->n_heads));
    if (want_cus <= 0 && used < sizeof near)
        snprintf(near + used, sizeof near - used, ", the largest device measured (%d CUs)", cus);
    else if (cus != want_cus && used < sizeof near)
        snprintf(near + used, sizeof near - used, ", the %d-CU device (nearest to %d, x%.2f)", cus, want_cus,
                 ratio_of(cus, want_cus));
    if (out->boundary_sq > 0) snprintf(bound, sizeof bound, "MHA from sq %d", out->boundary_sq);
    else snprintf(bound, sizeof bound, "MQA at every sq");
    snprintf(out->why, sizeof out->why, "%s %.3f ms vs %s %.3f ms, %s at context %d%s; there %s",
             out->form == MLT_FORM_MHA ? "MHA" : "MQA", out->form == MLT_FORM_MHA ? out->mha_ms : out->mqa_ms,
             out->form == MLT_FORM_MHA ? "MQA" : "MHA", out->form == MLT_FORM_MHA ? out->mqa_ms : out->mha_ms, at,
             context, near, bound);
}
