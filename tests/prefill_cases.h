/*
 * prefill_cases.h - what the prefill tests that run kernels share (the
 * CPU emulation's test_prefill_emu and the GPU's test_gpu_prefill): a
 * varlen batch with contexts drawn from a seed, run through any launcher
 * (the family's launch, or the public API) in one of three forms, and
 * compared with the double-precision reference (prefill_reference.h).
 */
#ifndef MT_TEST_PREFILL_CASES_H
#define MT_TEST_PREFILL_CASES_H

#include <stdint.h>

#include "kernels/mla_prefill/mla_prefill.h"

enum { PF_MAX_BATCH = 8 };

typedef enum pf_form {
    PF_WHOLE,      /* one causal call, keys = context + new tokens */
    PF_CHUNKED,    /* a non-causal call over the context, a causal one over the new tokens, the merge */
    PF_NONCAUSAL   /* one non-causal call over context + new tokens */
} pf_form;

typedef struct pf_case {
    mt_problem_static s;     /* d, dl, dtypes; page_size 1 */
    int batch, n_heads;
    int nope;                /* < d: k's rope part is k_pe, one row for all heads */
    int n_new[PF_MAX_BATCH], n_ctx[PF_MAX_BATCH];  /* n_ctx < 0 (PF_WHOLE / PF_NONCAUSAL): keys = n_new + n_ctx,
                                                      fewer than the new tokens (causal: the first -n_ctx see none) */
    int lse_head_major;      /* lse as [N, total_q] (strides {1, total_q}) */
    int out_pad;             /* out's rows Dl + out_pad elements apart (a view; 0: contiguous): 2 leaves them
                                4-byte but not 16-byte aligned */
    double scale;
    double q_scale, k_scale, v_scale;  /* fp8: the stored values' scales (0: 1); the plan's must match */
    uint64_t seed;
    pf_form form;
} pf_case;

/* How a test launches: its own context (a kernels + variant pair, or a
 * plan) and the two calls. */
typedef struct pf_launcher {
    void *ctx;
    mt_status (*run)(void *ctx, const mt_mla_prefill_args *a);
    mt_status (*merge)(void *ctx, const mt_mla_prefill_merge_args *a);
} pf_launcher;

typedef struct pf_result {
    double e_out, e_lse;
    int has_nan, empty_rows;  /* NaN anywhere; rows the reference leaves empty (lse -inf) */
    int ok;
    char error[300];
} pf_result;

/* Draws a case's lengths from its seed: `batch` requests of 1..max_new new
 * tokens after 0..max_ctx context tokens (request 0 with none). */
void pf_draw_lengths(pf_case *c, int max_new, int max_ctx);

/* Runs case c through `l` on backend b and compares it with the reference:
 * out relative error < 1e-2 (bf16 out) / 5e-3 (fp16) / 4e-2 (fp8: P is
 * rounded to e4m3), lse < 1e-3 (fp8: 2e-3), NaN never.  fp8 calls get a
 * workspace and max_k.
 * Outputs are poisoned (NaN) before the calls. */
pf_result pf_run_case(mt_backend *b, const pf_launcher *l, const pf_case *c);

/* The public API as a launcher: mlt_prefill_run / mlt_prefill_merge on
 * `plan` (its problem must be the case's; a case with nope = D passes no
 * k_pe, so the plan's split is then not used). */
struct mlt_prefill_plan;
pf_launcher pf_api_launcher(struct mlt_prefill_plan *plan);

/* One line describing the case (for messages). */
void pf_describe(const pf_case *c, char *buf, size_t size);

#endif
