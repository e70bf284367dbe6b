/*
 * params.h - what the prefill family's host code (C) and its kernels
 * (HIP/CUDA C++, compiled at run time) share, written once: the arguments
 * of mla_prefill and of mla_prefill_merge.
 *
 * The host includes it as a C header; the JIT puts it right after the
 * prelude in every prefill variant's text (family.c, sources).  Pointers
 * are device addresses (64-bit integers on the host), typed by the kernels.
 * Every tensor is addressed as rows of (token, head): element c of the row
 * of token t, head h is at ptr + t * t_stride + h * h_stride + c (elements),
 * so the host passes the engine's views as they are and the contiguous
 * layouts are just one choice of strides (the host fills them).
 */
#ifndef MT_MLA_PREFILL_PARAMS_H
#define MT_MLA_PREFILL_PARAMS_H

#ifdef __cplusplus
typedef unsigned long long mt_prefill_ptr; /* device code: cast to the kernel's types */
#else
#include <stdint.h>
typedef uint64_t mt_prefill_ptr;
#endif

/* One tensor seen as rows of (token, head). */
typedef struct mt_prefill_rows {
    mt_prefill_ptr ptr;
    long long t_stride, h_stride;  /* elements; h_stride 0 for a row shared by all heads (k_pe) */
} mt_prefill_rows;

/* mla_prefill's argument.  Request b's new tokens are rows cu_q[b] ..
 * cu_q[b + 1] of q, out and lse; its keys rows cu_k[b] .. cu_k[b + 1] of
 * k, k_pe and v.  causal = 1: the keys are the request's context followed
 * by its new tokens (context = keys - new tokens), and new token i sees the
 * context and new tokens 0..i; causal = 0: every key. */
typedef struct mt_prefill_params {
    mt_prefill_rows q;      /* D columns, q dtype */
    mt_prefill_rows k;      /* columns 0 .. nope - 1 of each key, kv dtype */
    mt_prefill_rows k_pe;   /* columns nope .. D - 1 (the rope part), kv dtype */
    mt_prefill_rows v;      /* DL columns, kv dtype */
    mt_prefill_rows out;    /* DL columns, q dtype */
    mt_prefill_rows lse;    /* one fp32 per row, natural log */
    mt_prefill_ptr cu_q;    /* [batch + 1] int32 */
    mt_prefill_ptr cu_k;    /* [batch + 1] int32 */
    /* fp8 (the wgmma path): v transposed by mla_prefill_vt into the
     * workspace, [batch][n_heads][DL][vt_keys] (wgmma_fp8.cuh says why
     * and in which key order); 0 for 16-bit types */
    mt_prefill_ptr vt;
    int batch, n_heads;
    int nope;               /* columns of k read from k; the rest from k_pe */
    int causal;
    float scale;            /* softmax scale (fp8: times q's and k's scales) */
    float v_scale;          /* out's factor: fp8 v's scale, 1 otherwise */
    int vt_keys;            /* keys per (request, head) row of vt: a multiple of the kv tile >= every request's */
    int zero;               /* always 0 (the launch sets nothing here): wgmma.cu adds it to registers it must
                               keep alive */
} mt_prefill_params;

/* mla_prefill_merge's argument: two attention states of the same rows
 * (out_a, lse_a), (out_b, lse_b) -> (out, lse), as if their keys had been
 * one set (lse = -inf or +inf: an empty state). */
typedef struct mt_prefill_merge_params {
    mt_prefill_rows out_a, lse_a, out_b, lse_b, out, lse;
    int tokens, n_heads;
} mt_prefill_merge_params;

/* Threads of a merge work-group (a thread per output element). */
#define MT_PREFILL_MERGE_THREADS 256

/* Threads the persistent form's work-group has past its block_threads
 * consumers: the producer warpgroup (wgmma_persistent.cu; launch.c sizes
 * the launch by it). */
#define MT_PREFILL_PRODUCER_THREADS 128

#endif
