/*
 * prefill_reference.h - MLA prefill (the MHA form) and the merge of two
 * attention states on the CPU in double precision: the reference the tests
 * (and later the tuner's verification) compare the kernels with.  Same
 * inputs as the kernels (storage types, varlen rows, k's rope part apart
 * or not), same definition (mla_prefill.h, params.h): a row with no
 * visible key gives out = 0 and lse = -inf.
 */
#ifndef MT_PREFILL_REFERENCE_H
#define MT_PREFILL_REFERENCE_H

#include <stdint.h>

#include "kernels/variant.h"

typedef struct mt_prefill_host_problem {
    mt_problem_static s;        /* d: qk head dim, dl: v head dim, q_dtype (q), kv_dtype (k, k_pe, v) */
    int batch, n_heads;
    int nope;                   /* k's own columns; d - nope come from k_pe (when given) */
    int causal;
    double scale;               /* softmax scale (fp8: times q's and k's scales) */
    double v_scale;             /* fp8: v's scale, out's factor (0 is read as 1) */
    const int32_t *cu_q;        /* [batch + 1] */
    const int32_t *cu_k;        /* [batch + 1] */
    const void *q;              /* [total_q, N, d] */
    const void *k;              /* [total_k, N, d], or [total_k, N, nope] with k_pe */
    const void *k_pe;           /* NULL, or [total_k, d - nope] shared by the heads */
    const void *v;              /* [total_k, N, dl] */
} mt_prefill_host_problem;

/* out: [total_q, N, dl], lse: [total_q, N] (natural log). */
void mt_prefill_reference(const mt_prefill_host_problem *p, double *out, double *lse);

/* The merge of `rows` pairs of states of `dl` columns (merge.cu's
 * definition; lse +-inf is an empty state). */
void mt_prefill_merge_reference(long rows, int dl, const double *out_a, const double *lse_a, const double *out_b,
                                const double *lse_b, double *out, double *lse);

#endif
