/*
 * prefill_reference.c - the prefill family's CPU reference (see
 * prefill_reference.h): for each request, new token and head, every
 * visible key's score in double, the softmax by the row's maximum, the
 * weighted sum of v, and lse = max + log(sum); (request, head) pairs run
 * on all cores.
 */
#include "prefill_reference.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/attention_row.h"
#include "kernels/dtype.h"
#include "runtime/base/parallel.h"

/* Key j of a request with n_k keys and n_q new tokens is visible to new
 * token i when j < this (the context is the first n_k - n_q keys). */
static long visible_keys(int causal, long n_q, long n_k, long i) {
    long limit = causal ? n_k - n_q + i + 1 : n_k;
    return limit < 0 ? 0 : limit > n_k ? n_k : limit;
}

static double k_at(const mt_prefill_host_problem *p, long key, int h, int c) {
    if (p->k_pe && c >= p->nope)
        return mt_host_load(p->s.kv_dtype, p->k_pe, (size_t)key * (size_t)(p->s.d - p->nope) + (size_t)(c - p->nope));
    size_t width = p->k_pe ? (size_t)p->nope : (size_t)p->s.d;
    return mt_host_load(p->s.kv_dtype, p->k, ((size_t)key * p->n_heads + h) * width + (size_t)c);
}

/* One (request, head): that head's keys and values converted to double
 * once, then each new token's row.  The pairs are spread over threads: one
 * by one, with a conversion per multiply, the reference took most of
 * test_gpu_prefill's five minutes on a 16-core GPU host (session 30). */
typedef struct ref_work {
    const mt_prefill_host_problem *p;
    double *out, *lse;
} ref_work;

static void reference_head(void *ctx, int item) {
    const ref_work *w = ctx;
    const mt_prefill_host_problem *p = w->p;
    const int d = p->s.d, dl = p->s.dl, n = p->n_heads, b = item / n, h = item % n;
    const long q0 = p->cu_q[b], n_q = p->cu_q[b + 1] - q0, k0 = p->cu_k[b], n_k = p->cu_k[b + 1] - k0;
    const double v_scale = p->v_scale > 0.0 ? p->v_scale : 1.0;
    const size_t keys = n_k > 0 ? (size_t)n_k : 0;
    double *kd = malloc(sizeof(double) * (keys * (size_t)(d + dl) + (size_t)d + 1));
    double *score = malloc(sizeof(double) * (keys + 1));
    if (!kd || !score) abort(); /* a test's reference: no way to go on without it */
    double *vd = kd + keys * (size_t)d, *qrow = vd + keys * (size_t)dl;
    for (size_t j = 0; j < keys; j++) {
        for (int c = 0; c < d; c++) kd[j * d + c] = k_at(p, k0 + (long)j, h, c);
        const size_t vrow = ((size_t)k0 + j) * (size_t)n + (size_t)h;
        for (int c = 0; c < dl; c++) vd[j * dl + c] = mt_host_load(p->s.kv_dtype, p->v, vrow * dl + c);
    }
    for (long i = 0; i < n_q; i++) {
        const size_t row = (size_t)(q0 + i) * n + h;
        double *o = w->out + row * dl;
        const long vis = visible_keys(p->causal, n_q, n_k, i);
        for (int c = 0; c < d && vis > 0; c++) qrow[c] = mt_host_load(p->s.q_dtype, p->q, row * d + c);
        w->lse[row] = mt_attention_row(qrow, kd, (size_t)d, vd, (size_t)dl, vis, d, dl, p->scale, score, o);
        for (int c = 0; c < dl; c++) o[c] *= v_scale;
    }
    free(kd);
    free(score);
}

void mt_prefill_reference(const mt_prefill_host_problem *p, double *out, double *lse) {
    ref_work w = {.p = p, .out = out, .lse = lse};
    mt_parallel_for(p->batch * p->n_heads, mt_parallel_cpus(64), reference_head, &w);
}

static double state_lse(double lse) { return lse == INFINITY ? -INFINITY : lse; }

void mt_prefill_merge_reference(long rows, int dl, const double *out_a, const double *lse_a, const double *out_b,
                                const double *lse_b, double *out, double *lse) {
    for (long r = 0; r < rows; r++) {
        const double la = state_lse(lse_a[r]), lb = state_lse(lse_b[r]), m = la > lb ? la : lb;
        double *o = out + r * dl;
        if (m == -INFINITY) {
            for (int c = 0; c < dl; c++) o[c] = 0.0;
            lse[r] = -INFINITY;
            continue;
        }
        const double wa = la == -INFINITY ? 0.0 : exp(la - m), wb = lb == -INFINITY ? 0.0 : exp(lb - m);
        for (int c = 0; c < dl; c++) {
            double x = 0.0;
            if (wa > 0.0) x += wa * out_a[r * dl + c];
            if (wb > 0.0) x += wb * out_b[r * dl + c];
            o[c] = x / (wa + wb);
        }
        lse[r] = m + log(wa + wb);
    }
}
