/*
 * mla_decode.h - the "mla_decode_simt" family (kernels/mla_decode.cu): its
 * variant description, its resource model, and the host side of a launch
 * (argument checks, grid, workspace).
 */
#ifndef MT_MLA_DECODE_H
#define MT_MLA_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/gpu/backend.h"
#include "kernels/variant.h"

extern const mt_family mt_family_mla_decode_simt;

/* parameter positions in mt_variant.values for this family */
enum { MT_P_TILE_Q, MT_P_KV_GRANULARITY, MT_P_NUM_SPLITS, MT_P_BLOCK_THREADS, MT_P_KV_CHUNK, MT_P_MMA, MT_P_KV_STAGES,
       MT_P_SPLIT_REDUCE, MT_P_GROUPS_PER_CU };

/* Entry points in the compiled module (mla_schedule only in length-aware
 * variants, groups_per_cu > 0). */
#define MT_MLA_DECODE_KERNEL "mla_decode"
#define MT_MLA_REDUCE_KERNEL "mla_reduce"
#define MT_MLA_SCHEDULE_KERNEL "mla_schedule"

/* A variant's functions in a loaded module; schedule is 0 unless the
 * variant is length-aware, reduce is 0 when it never splits. */
typedef struct mt_mla_decode_kernels {
    mt_function decode, reduce, schedule;
} mt_mla_decode_kernels;

/* The variant's entry points, in the order of mt_mla_decode_kernels:
 * decode, reduce, and mla_schedule or NULL when the variant has none. */
void mt_mla_decode_entry_names(const mt_variant *v, const char *names[3]);

/* Dynamic shared memory one work-group needs on a target with this warp
 * width (the matrix-unit path has one layout per vendor: 32 NVIDIA, 64 AMD). */
size_t mt_mla_decode_shared_bytes(const int *values, const mt_decode_static *s, int warp_size);

/* The matrix-unit path's score step splits D over this many warp slices
 * (DG in mla_decode.cu): 4 when D/16 is a multiple of 4, else 2. */
int mt_mla_decode_score_slices(int d);

/* The arguments of one decode call, all device pointers. */
typedef struct mt_mla_decode_args {
    int batch;              /* B */
    int n_heads;            /* N, 1..128 */
    int sq;                 /* query tokens per request, 1..8 */
    int max_blocks;         /* block-table columns */
    int page_size;          /* tokens per KV page: must be the variant's */
    int warp_size;          /* the target's warp width, 32 or 64 (which layout the code has) */
    float scale;            /* softmax scale */
    float kv_scale;         /* per-tensor dequantisation scale (1 unless fp8) */
    mt_devptr q;            /* [B, Sq, N, D] q_dtype */
    mt_devptr kv;           /* [num_blocks, page_size, D] kv_dtype */
    mt_devptr block_table;  /* [B, max_blocks] int32 */
    mt_devptr seq_lens;     /* [B] int32 */
    mt_devptr out;          /* [B, Sq, N, Dl] q_dtype */
    mt_devptr lse;          /* [B, Sq, N] fp32 */
    mt_devptr workspace;    /* mt_mla_decode_workspace_bytes() bytes, or 0 if that is 0 */
    size_t workspace_bytes;
    mt_devptr schedule;     /* length-aware variants: a schedule mt_mla_decode_schedule built for
                               this call's lengths, or 0 to build one in the workspace first */
    int compute_units;      /* the device's SMs / CUs: length-aware variants run groups_per_cu per unit */
} mt_mla_decode_args;

/* Bytes of workspace a variant needs for this call shape (0 without
 * splits) on a device of `compute_units` (length-aware variants: a
 * schedule and their partial results, at most two per work-group). */
size_t mt_mla_decode_workspace_bytes(const mt_variant *v, const mt_decode_static *s, int batch,
                                     int n_heads, int sq, int compute_units);

/* Work-groups of a length-aware variant on a device of `compute_units`
 * (0 for other variants). */
int mt_mla_decode_groups(const mt_variant *v, int compute_units);

/* Bytes of a schedule of a length-aware variant on a device of
 * `compute_units`, for any batch and shape (0 for other variants). */
size_t mt_mla_decode_schedule_bytes(const mt_variant *v, int compute_units);

/* Launches mla_schedule: the schedule of a length-aware variant for the
 * lengths at a->seq_lens, into `dst` (mt_mla_decode_schedule_bytes bytes,
 * 16-byte aligned).  Graph-safe: nothing depends on host-side lengths. */
mt_status mt_mla_decode_schedule(mt_backend *b, const mt_mla_decode_kernels *k, const mt_variant *v,
                                 const mt_mla_decode_args *a, mt_devptr dst, mt_stream stream);

/* Rejects bad arguments before anything is launched, naming the one at fault. */
mt_status mt_mla_decode_check_args(const mt_variant *v, const mt_decode_static *s,
                                   const mt_mla_decode_args *a);

/* Checks the arguments, then launches decode (and reduce when the variant
 * splits; length-aware variants first build their schedule unless
 * a->schedule gives one) on `stream`. */
mt_status mt_mla_decode_launch(mt_backend *b, const mt_mla_decode_kernels *k, const mt_variant *v,
                               const mt_decode_static *s, const mt_mla_decode_args *a, mt_stream stream);

#endif
