/*
 * mla_prefill.h - the MLA prefill family ("mla_prefill", problem kind
 * "mla_prefill"): attention in the compute-friendly (MHA) form engines run
 * for prefill (docs/prefill.md): the latent cache decompressed per head, so
 * q, k and v have one head each per query head; qk head dim D = nope + rope
 * (DeepSeek: 128 + 64), v head dim DL (128); varlen over requests
 * (cu_seqlens), causal among a request's new tokens after a non-causal
 * context; out plus the natural-log LSE, and the merge of two such states.
 *
 * Callers outside this folder go through mt_family_mla_prefill
 * (kernels/family.h); the functions below are what its hooks are made of,
 * open to the runtime's prefill API and the tests.
 *
 * Files: family.c (parameters, sources, shared memory, the family),
 * constraints.c (which points may run where), launch.c (arguments, grids),
 * heuristic.c (the built-in rule), prefill_reference.c (the CPU
 * reference); the device side is common.cuh, simt.cu, merge.cu, with
 * params.h shared by both sides.
 */
#ifndef MT_MLA_PREFILL_H
#define MT_MLA_PREFILL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/family.h"

extern const mt_family mt_family_mla_prefill;

/* Tuning keys (mt_problem_key in db/, read by the tuner and the runtime's
 * prefill plans, docs/prefill.md): kind "mla_prefill", page size 1,
 *   sq       new tokens per request
 *   batch    requests
 *   seq_len  keys per request (= max_len): context + new tokens when
 *            causal, the context chunk's keys when not
 *   lengths  MT_PREFILL_CAUSAL or MT_PREFILL_NON_CAUSAL
 * MT_PREFILL_MAX_TOKENS bounds sq and seq_len. */
#define MT_PREFILL_CAUSAL "causal"
#define MT_PREFILL_NON_CAUSAL "non-causal"
enum { MT_PREFILL_MAX_TOKENS = 1 << 20 };

/* parameter positions in mt_variant.values for this family */
enum { MT_PF_TILE_Q, MT_PF_KV_TILE, MT_PF_BLOCK_THREADS, MT_PF_MMA, MT_PF_PERSISTENT, MT_PF_OUT_STORES };

/* Entry points, in mt_kernels order. */
enum { MT_PREFILL_FN, MT_PREFILL_MERGE_FN, MT_PREFILL_VT_FN /* mma=2 only */ };
#define MT_MLA_PREFILL_KERNEL "mla_prefill"
#define MT_MLA_PREFILL_MERGE_KERNEL "mla_prefill_merge"
#define MT_MLA_PREFILL_VT_KERNEL "mla_prefill_vt"

/* A tensor of rows (token, head) on the host side: its device address and
 * strides in elements (both 0: contiguous, filled in by the launch). */
typedef struct mt_prefill_view {
    mt_devptr ptr;
    long long t_stride, h_stride;
} mt_prefill_view;

/* The arguments of one prefill call.  See params.h for what the rows
 * mean; q [total_q, N, D], k [total_k, N, D] (or [.., nope] with k_pe
 * [total_k, D - nope] shared by the heads), v [total_k, N, DL], out
 * [total_q, N, DL], lse [total_q, N] fp32 when contiguous. */
typedef struct mt_mla_prefill_args {
    int batch;               /* requests, >= 1 */
    int n_heads;             /* 1..128 */
    int max_q;               /* the most new tokens of any request: the grid covers this many */
    int max_k;               /* the most keys of any request (fp8: sizes v^T's rows; 0 otherwise) */
    int compute_units;       /* the GPU's SMs: a persistent variant's grid (0 refused there) */
    float v_scale;           /* fp8: v's dequantisation scale (out's factor); 16-bit: 1 */
    mt_devptr workspace;     /* fp8: mt_mla_prefill_workspace_bytes(), 16-byte aligned; 16-bit: 0 */
    size_t workspace_bytes;
    int nope;                /* columns of k in k; 0 < nope <= D (D: k_pe unused) */
    int causal;              /* 0 or 1 */
    float scale;             /* softmax scale */
    mt_devptr cu_q, cu_k;    /* [batch + 1] int32 each, non-decreasing from 0 */
    mt_prefill_view q, k, k_pe, v, out, lse;   /* k_pe.ptr 0: k holds all D columns */
} mt_mla_prefill_args;

/* The arguments of one merge: rows of DL columns (q dtype) and their lse. */
typedef struct mt_mla_prefill_merge_args {
    int tokens, n_heads;
    mt_prefill_view out_a, lse_a, out_b, lse_b, out, lse;
} mt_mla_prefill_merge_args;

/* out's type: q's, except bf16 for fp8 q. */
mt_dtype mt_mla_prefill_out_dtype(const mt_problem_static *s);

/* Device workspace a call needs: fp8 on the wgmma path keeps v transposed
 * there (wgmma_fp8.cuh), batch x heads x Dl x max_k rounded up to 128
 * bytes; 0 otherwise.  And v^T's keys per row (max_k rounded up). */
size_t mt_mla_prefill_workspace_bytes(const int *values, const mt_problem_static *s, int batch, int n_heads,
                                      int max_k);
int mt_mla_prefill_vt_keys(int max_k);

/* Dynamic shared memory (LDS) one work-group of the prefill kernel needs. */
size_t mt_mla_prefill_shared_bytes(const int *values, const mt_problem_static *s);

/* The family's constraints (constraints.c): the problem's facts alone, and
 * a point of the space on a target. */
mt_status mt_mla_prefill_check_static(const mt_problem_static *s);
mt_status mt_mla_prefill_check(const int *values, const mt_problem_static *s, const mt_target *t);

/* Rejects bad arguments before anything is launched, naming the one at
 * fault (launch.c). */
mt_status mt_mla_prefill_check_args(const mt_problem_static *s, const mt_mla_prefill_args *a);
mt_status mt_mla_prefill_check_merge_args(const mt_problem_static *s, const mt_mla_prefill_merge_args *a);

/* Checks the arguments, then launches (launch.c). */
mt_status mt_mla_prefill_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                                const mt_mla_prefill_args *a, mt_stream stream);
mt_status mt_mla_prefill_merge_launch(mt_backend *b, const mt_kernels *k, const mt_problem_static *s,
                                      const mt_mla_prefill_merge_args *a, mt_stream stream);

/* The built-in rule (heuristic.c). */
mt_status mt_mla_prefill_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set);
int mt_mla_prefill_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                                  int compute_units);
void mt_mla_prefill_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size);

#endif
