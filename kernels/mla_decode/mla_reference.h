/*
 * mla_reference.h - the MLA decode computation on the CPU in double
 * precision: the reference that tests and the tuner's verification compare
 * kernels against.  Same inputs as the kernel (storage types, paged KV
 * through the block table), same definition (docs/DESIGN.md section 2, with
 * keyless rows giving out = 0 and lse = -inf).
 */
#ifndef MT_MLA_REFERENCE_H
#define MT_MLA_REFERENCE_H

#include <stdint.h>

#include "kernels/variant.h"

typedef struct mt_mla_host_problem {
    mt_problem_static s;
    int batch, n_heads, sq, max_blocks;
    double scale, kv_scale;
    const void *q;              /* [B, Sq, N, D] s.q_dtype */
    const void *kv;             /* [num_blocks, page, D] s.kv_dtype */
    const int32_t *block_table; /* [B, max_blocks] */
    const int32_t *seq_lens;    /* [B] */
} mt_mla_host_problem;

/* out: [B, Sq, N, Dl], lse: [B, Sq, N].  Runs on up to `threads` threads
 * (0 = one per CPU). */
void mt_mla_reference(const mt_mla_host_problem *p, double *out, double *lse, int threads);

/* ||a - b|| / ||b|| over n values, treating NaN anywhere as failure (returns
 * INFINITY), and matching infinities of equal sign as equal. */
double mt_relative_error(const double *a, const double *b, long n);

#endif
