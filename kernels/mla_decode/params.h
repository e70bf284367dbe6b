/*
 * params.h - what the decode family's host code (C) and its kernels
 * (HIP/CUDA C++, compiled at run time) share, written once: the kernels'
 * argument struct and the schedule's constants and layout.
 *
 * The host includes it as a C header; the JIT puts it right after the
 * prelude in every decode variant's text (family.c, sources), so both sides
 * read the same field list.  Pointers are device addresses: 64-bit integers
 * on the host, typed by each kernel when it unpacks them (common.cuh).
 */
#ifndef MT_MLA_DECODE_PARAMS_H
#define MT_MLA_DECODE_PARAMS_H

#ifdef __cplusplus
typedef unsigned long long mt_param_ptr; /* device code: cast to the kernel's types */
#else
#include <stdint.h>
typedef uint64_t mt_param_ptr;
#endif

/* Where query row `row` = t * N + n (token t, head n) of request b lives
 * in a tensor: at b * b_stride + t * t_stride + n * n_stride elements from
 * its start.  The host always fills them (the contiguous layout when the
 * caller gave no strides). */
typedef struct mt_row_strides {
    long long b, t, n;
} mt_row_strides;

/* The arguments of mla_decode, mla_reduce and mla_schedule, passed by
 * value (plus, on the wgmma paths, the KV cache's tensor map). */
typedef struct mt_decode_params {
    mt_param_ptr q;            /* [B, Sq, N, D] q dtype */
    mt_param_ptr kv;           /* [pages, PAGE_SIZE, D] KV dtype */
    mt_param_ptr block_table;  /* [B, max_blocks] int32 */
    mt_param_ptr seq_lens;     /* [B] int32 */
    mt_param_ptr out;          /* [B, Sq, N, DL] q dtype */
    mt_param_ptr lse;          /* [B, Sq, N] fp32, natural log */
    mt_param_ptr o_part;       /* split / piece partials in the workspace (0 when none) */
    mt_param_ptr lse_part;
    mt_param_ptr schedule;     /* length-aware variants: mla_schedule's output (int4 entries) */
    int batch, n_heads, sq, max_blocks;
    int rows;                  /* Sq x N: query rows per request */
    int tiles;                 /* length-aware: row tiles per request */
    int n_stretches;           /* length-aware: the schedule's stretches */
    float scale;               /* softmax scale */
    float kv_scale;            /* per-tensor dequantisation scale */
    int sched_cost;            /* length-aware: the schedule's keys charged per request (request_cost) */
    int sched_snap;            /* length-aware: its snap distance's fixed part (snap_keys) */
    int pad_;                  /* keeps the 8-byte fields below aligned on both sides */
    mt_param_ptr q_pe;         /* q's columns DL..D-1 (the rope part): q + DL when q is one tensor */
    mt_param_ptr kv_scale_ptr; /* a float in device memory read at run time instead of kv_scale, or 0 */
    mt_row_strides q_str;      /* of q (its first DL columns) */
    mt_row_strides q_pe_str;   /* of q_pe */
    mt_row_strides out_str;
    mt_row_strides lse_str;
} mt_decode_params;

/* ---- the length-aware schedule (schedule.h describes the algorithm) ---- */

/* Threads of mla_schedule's one work-group: a thread per stretch (+1). */
#define MT_SCHEDULE_THREADS 1024
/* The cost charged per request and the snap distance's fixed part come
 * in the struct (sched_cost, sched_snap: tuned per variant; schedule.h
 * says what they do). */

/* Entry positions, in int4 words:
 *   [0]                    stretches, cut requests, reduce units, pieces
 *   [1 + s]                stretch s's start: request, key, its first piece, 0
 *                          ([1 + stretches] is the end of the last one)
 *   [2 + stretches + i]    cut request i: b, first piece, pieces, first unit
 * Piece p of a cut request keeps tile t's partial in slot p * tiles + t. */
#define MT_SCHEDULE_START(s) (1 + (s))
#define MT_SCHEDULE_CUT(n_stretches, i) (2 + (n_stretches) + (i))

#endif
