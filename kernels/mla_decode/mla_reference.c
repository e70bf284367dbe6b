/*
 * mla_reference.c - double-precision CPU reference of MLA decode (see
 * mla_reference.h).  Per request, the KV rows it uses are converted to
 * double once; then each query row is a plain two-pass softmax.  Requests
 * are spread over threads.
 */
#include "mla_reference.h"

#include <math.h>
#include <stdlib.h>

#include "kernels/attention_row.h"
#include "kernels/dtype.h"
#include "runtime/base/parallel.h"

typedef struct ref_work {
    const mt_mla_host_problem *p;
    double *out, *lse;
} ref_work;

static void reference_request(const mt_mla_host_problem *p, int b, double *out, double *lse) {
    const int d = p->s.d, dl = p->s.dl, page = p->s.page_size;
    const int len = p->seq_lens[b] > 0 ? p->seq_lens[b] : 0;
    const int rows = p->sq * p->n_heads;
    double *kv = malloc(sizeof(double) * ((size_t)len * d + 1));
    double *scores = malloc(sizeof(double) * ((size_t)len + 1));
    double *qrow = malloc(sizeof(double) * (size_t)d);
    for (int j = 0; j < len; j++) {
        size_t token = (size_t)p->block_table[(size_t)b * p->max_blocks + j / page] * page + (size_t)(j % page);
        for (int k = 0; k < d; k++) kv[(size_t)j * d + k] = (double)mt_host_load(p->s.kv_dtype, p->kv, token * d + k) * p->kv_scale;
    }
    for (int row = 0; row < rows; row++) {
        int t = row / p->n_heads;
        int limit = len - p->sq + t + 1;
        if (limit > len) limit = len;
        size_t r = (size_t)b * rows + row;
        for (int k = 0; k < d && limit > 0; k++) qrow[k] = mt_host_load(p->s.q_dtype, p->q, r * d + k);
        /* a key row is its value row too (its first dl values) */
        lse[r] = mt_attention_row(qrow, kv, (size_t)d, kv, (size_t)d, limit, d, dl, p->scale, scores, out + r * dl);
    }
    free(kv);
    free(scores);
    free(qrow);
}

static void reference_one(void *ctx, int b) {
    const ref_work *w = ctx;
    reference_request(w->p, b, w->out, w->lse);
}

void mt_mla_reference(const mt_mla_host_problem *p, double *out, double *lse, int threads) {
    if (threads <= 0) threads = mt_parallel_cpus(64);
    if (threads > 64) threads = 64;
    ref_work w = {.p = p, .out = out, .lse = lse};
    mt_parallel_for(p->batch, threads, reference_one, &w); /* a request per call */
}

double mt_relative_error(const double *a, const double *b, long n) {
    double diff = 0, norm = 0;
    for (long i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        if (isinf(a[i]) || isinf(b[i])) {
            if (a[i] != b[i]) return INFINITY;
            continue;
        }
        diff += (a[i] - b[i]) * (a[i] - b[i]);
        norm += b[i] * b[i];
    }
    if (norm == 0) return diff == 0 ? 0 : INFINITY;
    return sqrt(diff / norm);
}
