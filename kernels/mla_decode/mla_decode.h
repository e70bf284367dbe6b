/*
 * mla_decode.h - the MLA decode family ("mla_decode"; read as
 * "mla_decode_simt" too, its name before the matrix-unit paths): its
 * parameters, its paths, and the host side of a launch.  Callers outside
 * this folder go through mt_family_mla_decode (kernels/family.h); the
 * functions below are what its hooks are made of, open to tests.
 *
 * Files: family.c (parameters, path choice, sources, shared memory),
 * constraints.c (which points may run where), launch.c (arguments,
 * workspace, grids), heuristic.c (the built-in rule), schedule.c (the host
 * model of the length-aware schedule), mla_reference.c (the CPU reference);
 * the device side is common.cuh, one .cu per path, reduce.cu, schedule.cu,
 * with params.h shared by both sides.
 */
#ifndef MT_MLA_DECODE_H
#define MT_MLA_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/family.h"
#include "kernels/mla_decode/schedule.h"

extern const mt_family mt_family_mla_decode;

/* parameter positions in mt_variant.values for this family */
enum { MT_P_TILE_Q, MT_P_KV_GRANULARITY, MT_P_NUM_SPLITS, MT_P_BLOCK_THREADS, MT_P_KV_CHUNK, MT_P_MMA, MT_P_KV_STAGES,
       MT_P_SPLIT_REDUCE, MT_P_GROUPS_PER_CU, MT_P_REQUEST_COST, MT_P_SNAP_KEYS, MT_P_WG_SCHEDULE,
       MT_P_SNAP_CAP };

/* The kernel code a variant runs: one source file each (family.c). */
typedef enum mt_decode_path {
    MT_PATH_SIMT,       /* mma=0: simt.cu */
    MT_PATH_MMA_SYNC,   /* mma=1 on 32-wide warps (NVIDIA sm_80+): mma_sync.cu */
    MT_PATH_MFMA,       /* mma=1 on 64-wide wavefronts (AMD CDNA): mfma.cu */
    MT_PATH_WGMMA64,    /* mma=2, tile_q 64, 16-bit KV (Hopper): wgmma64.cu */
    MT_PATH_WGMMA_T16,  /* mma=2, tile_q 16 (or 32, fp8 KV; Hopper): wgmma_t16.cu */
    MT_PATH_WGMMA64_FP8 /* mma=2, tile_q 64, fp8 KV (Hopper): wgmma64_fp8.cu */
} mt_decode_path;

/* The one place a variant's path is decided (for problem s: the KV type
 * chooses between the 64-row paths). */
mt_decode_path mt_decode_path_of(const int *values, const mt_problem_static *s, int warp_size);
const char *mt_decode_path_name(mt_decode_path p);   /* "simt", "mma_sync", ... */

/* The most query tokens per request a decode call takes: speculative
 * decoding's few, and a prefill chunk run in the absorbed (MQA) form,
 * causal among them (issue 29's crossover measures chunks up to 512). */
enum { MT_DECODE_MAX_SQ = 1024 };

/* Entry points, in mt_kernels order: decode, reduce (0 when the variant
 * never merges), mla_schedule (0 unless length-aware). */
enum { MT_DECODE_FN, MT_REDUCE_FN, MT_SCHEDULE_FN };
#define MT_MLA_DECODE_KERNEL "mla_decode"
#define MT_MLA_REDUCE_KERNEL "mla_reduce"
#define MT_MLA_SCHEDULE_KERNEL "mla_schedule"

/* Dynamic shared memory one work-group needs on a target with this warp
 * width (the matrix-unit path has one layout per vendor: 32 NVIDIA, 64 AMD). */
size_t mt_mla_decode_shared_bytes(const int *values, const mt_problem_static *s, int warp_size);

/* The matrix-unit path's score step splits D over this many warp slices
 * (DG in mma_sync.cu): 4 when D/16 is a multiple of 4, else 2. */
int mt_mla_decode_score_slices(int d);

/* The family's constraints (constraints.c): the problem's facts alone, and
 * a point of the space on a target. */
mt_status mt_mla_decode_check_static(const mt_problem_static *s);
mt_status mt_mla_decode_check(const int *values, const mt_problem_static *s, const mt_target *t);

/* The arguments of one decode call, all device pointers. */
typedef struct mt_mla_decode_args {
    int batch;              /* B */
    int n_heads;            /* N, 1..128 */
    int sq;                 /* query tokens per request, 1..MT_DECODE_MAX_SQ */
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
    /* views (views.c has the rules): all 0 for the contiguous layouts above */
    mt_devptr q_pe;               /* 0: q is one tensor of D columns; else q holds the first Dl, q_pe the rest */
    long long q_strides[3];       /* elements per request, token, head of q (all 0: contiguous) */
    long long q_pe_strides[3];
    long long out_strides[3];
    long long lse_strides[3];
    mt_devptr kv_scale_ptr;       /* a float in device memory, read at run time instead of kv_scale, or 0 */
} mt_mla_decode_args;

/* The views' rules (views.c), and the kernels' form of them. */
struct mt_decode_params;
mt_status mt_mla_decode_check_views(const mt_problem_static *s, const mt_mla_decode_args *a);
void mt_mla_decode_fill_views(const mt_problem_static *s, const mt_mla_decode_args *a, struct mt_decode_params *p);

/* Bytes of workspace a variant needs for this call shape (0 without
 * splits) on a device of `compute_units` (length-aware variants: a
 * schedule and their partial results, at most two per work-group). */
size_t mt_mla_decode_workspace_bytes(const mt_variant *v, const mt_problem_static *s, int batch,
                                     int n_heads, int sq, int compute_units);

/* Work-groups of a length-aware variant on a device of `compute_units`
 * (0 for other variants). */
int mt_mla_decode_groups(const mt_variant *v, int compute_units);

/* The schedule's view of a call of length-aware variant v (schedule.h): the
 * launch's, and the host model's in tests. */
mt_schedule_shape mt_mla_decode_schedule_shape(const mt_variant *v, int batch, int n_heads, int sq, int compute_units);

/* Bytes of a schedule of a length-aware variant on a device of
 * `compute_units`, for any batch and shape (0 for other variants). */
size_t mt_mla_decode_schedule_bytes(const mt_variant *v, int compute_units);

/* Launches mla_schedule: the schedule of a length-aware variant for the
 * lengths at a->seq_lens, into `dst` (mt_mla_decode_schedule_bytes bytes,
 * 16-byte aligned).  Graph-safe: nothing depends on host-side lengths. */
mt_status mt_mla_decode_schedule(mt_backend *b, const mt_kernels *k, const mt_variant *v,
                                 const mt_mla_decode_args *a, mt_devptr dst, mt_stream stream);

/* Rejects bad arguments before anything is launched, naming the one at fault. */
mt_status mt_mla_decode_check_args(const mt_variant *v, const mt_problem_static *s,
                                   const mt_mla_decode_args *a);
/* The same for building a step's schedule, which reads only the lengths:
 * the call's shape (heads, Sq, batch) and seq_lens; no other tensor. */
mt_status mt_mla_decode_check_schedule_args(const mt_variant *v, const mt_problem_static *s,
                                            const mt_mla_decode_args *a);

/* Checks the arguments, then launches decode (and reduce when the variant
 * splits; length-aware variants first build their schedule unless
 * a->schedule gives one) on `stream`. */
mt_status mt_mla_decode_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v,
                               const mt_problem_static *s, const mt_mla_decode_args *a, mt_stream stream);

/* The built-in rule (heuristic.c): the family hooks' parts. */
/* Whether `splits` splits of tiles of `tile_rows` rows pay for merging in
 * a cluster: their fp32 partials' round trip through memory (written and
 * read) is at least a quarter of a tile's KV bytes at `len` keys
 * (heuristic.c says where the quarter comes from).  The rule and the
 * rescale of a DB's winner (family.c) both ask. */
int mt_mla_decode_cluster_pays(const mt_problem_static *s, int tile_rows, int splits, int len);
/* Whether values' splits could merge in a cluster (split_reduce 1) on this
 * problem: the 64-row mma=2 path, 2..16 splits dividing Dl, room for the
 * partial rows (constraints.c). */
int mt_mla_decode_can_cluster(const int *values, const mt_problem_static *s);
mt_status mt_mla_decode_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set);
int mt_mla_decode_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                                 int compute_units);
void mt_mla_decode_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size);
int mt_mla_decode_heuristic_batch_cap(const mt_heuristic_set *set, int i, const mt_shape *shape, int compute_units);

#endif
