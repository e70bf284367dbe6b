/*
 * family.c - the decode family's description: its parameters, which path
 * and source files a variant compiles, its shared memory, and the family
 * struct every caller goes through (constraints.c, launch.c and
 * heuristic.c hold the rest of its hooks).
 *
 * Parameters (names as configs and the database spell them):
 *   tile_q          query rows (token x head pairs) per work-group
 *   kv_granularity  split boundaries fall on multiples of this many keys
 *   num_splits      key ranges per request; > 1 adds the reduce kernel
 *   block_threads   threads per work-group
 *   kv_chunk        keys staged in shared memory per step
 *   mma             0: SIMT arithmetic; 1: matrix units: mma.sync on NVIDIA
 *                   sm_80+ (tile_q 16/32/64, 128/256 threads, 32/64-key
 *                   chunks), MFMA on AMD CDNA (tile_q 16/32, 128/256
 *                   threads, 16-key chunks, 32 where the LDS allows:
 *                   gfx950; compiled and CPU-emulated, not yet run);
 *                   2: warpgroup matrix instructions (wgmma) on Hopper
 *                   (sm_90a): 256 threads, 64-key chunks; tile_q 64 with 2
 *                   stages (fp8 KV: each chunk converted once to fp16 in
 *                   shared memory); tile_q 16 (transposed products) with 2
 *                   stages for 16-bit KV, 4 for fp8 KV (also tile_q 32)
 *   kv_stages       mma=1: KV chunks in the cp.async pipeline (stages - 1
 *                   in flight while one is computed); mma=2: copy stages
 *                   (2, or 4 for fp8 on the transposed path); mma=0
 *                   takes 2 only
 *   split_reduce    how the splits' partial results are merged: 0, by the
 *                   reduce kernel from the workspace; 1, the splits of a row
 *                   tile run as one thread-block cluster and merge through
 *                   each other's shared memory (no workspace, one kernel;
 *                   the 64-row mma=2 path, 2..16 splits)
 *   groups_per_cu   0: a work-group per (row tile, split, request); 1, 2:
 *                   length-aware: compute units x this many work-groups,
 *                   each running a stretch of the work that mla_schedule
 *                   cuts on the GPU from the lengths in device memory
 *                   (schedule.h; cuts on kv_granularity), every path, with
 *                   num_splits 1 and split_reduce 0
 *   request_cost    length-aware: the keys' worth the schedule charges each
 *                   request for its query loads, merges and stores
 *   snap_keys       length-aware: a stretch's end closer than share / 16 +
 *                   this many keys (at most share / snap_cap) to its
 *                   request's edge moves to the edge, uncut
 *                   (both read by mla_schedule at run time: variants that
 *                   differ in them alone share a code object)
 *   snap_cap        length-aware: the snap distance's cap, share / this: 4
 *                   (a quarter), or 2 (a half: fewer requests cut, more
 *                   imbalance; at 128 heads each cut passes 128 KB of fp32
 *                   partials per tile through memory: reports/PERFLOG.md
 *                   session 22).  Compiled into mla_schedule (SNAP_CAP)
 *   wg_schedule     the 64-row mma=2 path's schedule: 0, warpgroup 0
 *                   computes every chunk's scores and softmax, then both
 *                   their halves of P V (wgmma64.cu); 1, overlapped: the
 *                   warpgroups compute the scores of alternate chunks, the
 *                   rows' maxima chained through shared memory, so one's
 *                   softmax runs under the other's products
 *                   (wgmma64_seesaw.cu; needs D >= Dl + 64: P goes in a
 *                   chunk's rope block)
 *
 * Constraints (constraints.c; checked before compiling, and on every value
 * read from a DB):
 *   - shared memory (mt_mla_decode_shared_bytes) <= the target's limit;
 *   - tile_q * ceil(dl / block_threads) <= 64: the output accumulator lives
 *     in registers, and past 64 floats per thread it spills;
 *   - block_threads is a multiple of the target's warp width;
 *   - with num_splits = 1, kv_granularity changes nothing: only 16 is kept,
 *     so the space holds no duplicate kernels (likewise kv_stages = 2 only
 *     with mma = 0);
 *   - mma = 1: D % 32 == 0; each warp owns an even number of 8-column
 *     output tiles; the registers live across a chunk (the warp's slice of
 *     Q, its partial scores, its output accumulators) stay <= 232;
 *   - the problem: 1 <= dl <= d <= 1024, page size a power of two <= 1024.
 */
#include "mla_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const mt_param_desc mla_decode_params[] = {
    {"tile_q", "TILE_Q", {1, 2, 4, 8, 16, 32, 64}, 7, 16,
     "query rows (token x head pairs) one work-group handles", 0, 0, 0},
    {"kv_granularity", "KV_GRANULARITY", {16, 32, 64, 128, 256}, 5, 16,
     "split boundaries fall on multiples of this many keys", 0, 0, 0},
    {"num_splits", "NUM_SPLITS", {1, 2, 4, 8, 16, 32, 64, 128}, 8, 4, "key ranges per request (split-KV)", 0, 0, 0},
    {"block_threads", "BLOCK_THREADS", {128, 256, 512}, 3, 256, "threads per work-group", 0, 0, 0},
    {"kv_chunk", "KV_CHUNK", {16, 32, 64}, 3, 32, "keys staged in shared memory per step", 0, 0, 0},
    {"mma", "MMA", {0, 1, 2}, 3, 0,
     "1: Q K^T and P V on the matrix units (mma.sync on NVIDIA sm_80+, MFMA on AMD CDNA); 2: wgmma on Hopper", 1, 0, 0},
    {"kv_stages", "KV_STAGES", {2, 3, 4}, 3, 2, "mma=1: KV chunks in the asynchronous-copy pipeline", 1, 0, 0},
    {"split_reduce", "SPLIT_REDUCE", {0, 1}, 2, 0,
     "how splits are merged: 0 by the reduce kernel, 1 within a cluster of the splits' work-groups (mma=2)", 1, 0, 0},
    {"groups_per_cu", "GROUPS_PER_CU", {0, 1, 2}, 3, 0,
     "0: a work-group per (row tile, split, request); 1, 2: length-aware: compute units x this many work-groups, "
     "each a stretch of the work cut on the GPU from the lengths", 1,
     1 /* the kernel is the same for 1 and 2: only the grid differs */, 0},
    {"request_cost", "REQUEST_COST", {64, 128, 256, 512, 1024, 2048}, 6, MT_SCHEDULE_OVERHEAD,
     "length-aware: keys charged per request when the schedule balances the stretches", 1, 1, 1},
    {"snap_keys", "SNAP_KEYS", {0, 64, 256, 512, 1024}, 5, MT_SCHEDULE_SNAP_KEYS,
     "length-aware: a stretch end this close (plus share / 16) to a request's edge moves to it", 1, 1, 1},
    {"wg_schedule", "WG_SCHEDULE", {0, 1}, 2, 0,
     "64-row mma=2 path: 0 warpgroup 0 computes the scores and softmax of every chunk; 1 overlapped (the "
     "warpgroups take alternate chunks' scores, maxima chained, one's softmax under the other's products)", 1, 0, 1},
    {"snap_cap", "SNAP_CAP", {2, 4}, 2, MT_SCHEDULE_SNAP_CAP,
     "length-aware: the snap distance is at most share / this (4: a quarter; 2: a half, fewer cut requests)", 1, 0,
     1},
};

int mt_mla_decode_score_slices(int d) { return (d / 16) % 4 == 0 ? 4 : 2; }

size_t mt_mla_decode_shared_bytes(const int *values, const mt_problem_static *s, int warp_size) {
    size_t tile_q = (size_t)values[MT_P_TILE_Q], chunk = (size_t)values[MT_P_KV_CHUNK];
    if (values[MT_P_MMA] == 2 && (tile_q == 16 || tile_q == 32)) {
        /* must match the transposed path's layout in wgmma_t16.cu: up to
         * 1023 bytes to a 1024-byte boundary, Q^T (tile_q rows x d,
         * 16-bit), the stages of 64 keys x d elements, P^T per warpgroup
         * (tile_q x 64 16-bit), the maxima/sums exchange (2 warpgroups x 2
         * chunks x 4 warps x tile_q floats), row limits, q maxima, an
         * mbarrier per stage */
        size_t blocks = (size_t)s->d / 64, stages = (size_t)values[MT_P_KV_STAGES];
        /* length-aware: warpgroup 1's O^T (tile_q x 512 floats) meets
         * warpgroup 0's in a buffer of its own, since the stages already
         * hold the next item's chunks; and the next item's q rows (tile_q x
         * d, 16-bit) are copied ahead into one */
        size_t merge = values[MT_P_GROUPS_PER_CU] ? tile_q * 512 * 4 + tile_q * (size_t)s->d * 2 : 0;
        return 1024 + blocks * tile_q * 128 + stages * blocks * 64 * 64 * mt_dtype_size(s->kv_dtype) +
               2 * tile_q * 128 + 16 * tile_q * 4 + tile_q * 4 + 8 * 4 + stages * 8 + merge;
    }
    if (values[MT_P_MMA] == 2 && mt_dtype_is_fp8(s->kv_dtype)) {
        /* must match the fp8 64-row path's layout in wgmma64_fp8.cu: up to
         * 1023 bytes to a 1024-byte boundary, Q and two converted chunks
         * (64 rows x d, fp16 each), P (64 x 64), row alpha, row limits, q
         * maxima */
        return 1024 + 3 * 128 * (size_t)s->d + 64 * 128 + 64 * 4 + 64 * 4 + 8 * 4;
    }
    if (values[MT_P_MMA] == 2 && values[MT_P_WG_SCHEDULE]) {
        /* must match the overlapped path's layout in wgmma64_seesaw.cu: up
         * to 1023 bytes to a 1024-byte boundary, Q and two stages of 64 rows
         * x d (16-bit; P lives in a stage's rope block), the rows' maxima
         * of both warpgroups, row limits, an mbarrier per stage and part */
        return 1024 + 3 * 128 * (size_t)s->d + 3 * 64 * 4 + 4 * 8;
    }
    if (values[MT_P_MMA] == 2) {
        /* must match the warpgroup path's layout in wgmma64.cu: up to
         * 1023 bytes to reach a 1024-byte boundary, Q and two stages of
         * 64 rows x d (16-bit), P (64 x 64), row alpha and row limits, an
         * mbarrier per stage */
        return 1024 + 3 * 128 * (size_t)s->d + 64 * 128 + 64 * 4 + 64 * 4 + 2 * 8;
    }
    if (values[MT_P_MMA] && warp_size == 64) {
        /* must match the AMD matrix-core path's layout in mfma.cu:
         * partial scores (fp32, one tile per wave), two KV buffers and P in
         * the 16-bit mma type (rows padded by 8), per-row values, the q
         * factor */
        size_t waves = (size_t)values[MT_P_BLOCK_THREADS] / 64, stride = (size_t)s->d + 8;
        return 4 * waves * tile_q * (chunk + 8) + 2 * 2 * chunk * stride + 2 * tile_q * (chunk + 8) + 8 * tile_q + 4;
    }
    if (values[MT_P_MMA]) {
        /* must match the MMA path's layout in mma_sync.cu: q (16-bit rows
         * of d + 8) sharing its bytes with the partial scores (fp32, DG
         * d-slices x rows of chunk + 8), the stages (fp8: raw rows of d
         * bytes plus one converted chunk), P, per-warp row values, row
         * limits, the q factor */
        size_t stride = (size_t)s->d + 8, stages = (size_t)values[MT_P_KV_STAGES];
        size_t warps = (size_t)values[MT_P_BLOCK_THREADS] / 32;
        size_t q_bytes = 2 * tile_q * stride, sp_bytes = 4 * (size_t)mt_mla_decode_score_slices(s->d) * tile_q * (chunk + 8);
        size_t kv = mt_dtype_is_fp8(s->kv_dtype) ? stages * chunk * (size_t)s->d + 2 * chunk * stride
                                               : stages * 2 * chunk * stride;
        return (q_bytes > sp_bytes ? q_bytes : sp_bytes) + kv + 2 * tile_q * (chunk + 8) + 4 * warps * tile_q +
               4 * tile_q + 4;
    }
    /* must match SMEM_FLOATS in common.cuh */
    return sizeof(float) * (tile_q * (size_t)s->d + chunk * (size_t)(s->d + 1) + tile_q * chunk + 4 * tile_q);
}

mt_decode_path mt_decode_path_of(const int *values, const mt_problem_static *s, int warp_size) {
    if (values[MT_P_MMA] == 2 && values[MT_P_TILE_Q] == 64)
        return mt_dtype_is_fp8(s->kv_dtype) ? MT_PATH_WGMMA64_FP8 : MT_PATH_WGMMA64;
    if (values[MT_P_MMA] == 2) return MT_PATH_WGMMA_T16;
    if (values[MT_P_MMA]) return warp_size == 64 ? MT_PATH_MFMA : MT_PATH_MMA_SYNC;
    return MT_PATH_SIMT;
}

const char *mt_decode_path_name(mt_decode_path p) {
    static const char *const names[] = {"simt", "mma_sync", "mfma", "wgmma64", "wgmma_t16", "wgmma64_fp8"};
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

/* A variant merges partial results with mla_reduce: length-aware ones
 * (the cut requests), and fixed splits unless they merge in a cluster. */
static int has_reduce(const int *x) {
    return x[MT_P_GROUPS_PER_CU] || (x[MT_P_NUM_SPLITS] > 1 && !x[MT_P_SPLIT_REDUCE]);
}

/* params.h (the host/device structs), the common part, what the path
 * shares with its kind, the path, then the merge and the schedule when the
 * variant has them (reduce.cu uses schedule.cu's helpers: it comes last). */
static int mla_decode_sources(const mt_variant *v, const mt_problem_static *s, int warp_size,
                              const char *names[MT_MAX_SOURCES]) {
    static const char *const path_file[] = {"mla_decode/simt.cu",    "mla_decode/mma_sync.cu",
                                            "mla_decode/mfma.cu",    "mla_decode/wgmma64.cu",
                                            "mla_decode/wgmma_t16.cu", "mla_decode/wgmma64_fp8.cu"};
    const int *x = v->values;
    mt_decode_path path = mt_decode_path_of(x, s, warp_size);
    int n = 0;
    names[n++] = "mla_decode/params.h";
    names[n++] = "mla_decode/common.cuh";
    if (path != MT_PATH_SIMT) names[n++] = "mla_decode/mma_common.cuh";
    if (path == MT_PATH_WGMMA64 || path == MT_PATH_WGMMA_T16 || path == MT_PATH_WGMMA64_FP8)
        names[n++] = "mla_decode/wgmma_common.cuh";
    if (path == MT_PATH_WGMMA64 || path == MT_PATH_WGMMA64_FP8) names[n++] = "mla_decode/wgmma64_epilogue.cuh";
    names[n++] = path == MT_PATH_WGMMA64 && x[MT_P_WG_SCHEDULE] ? "mla_decode/wgmma64_seesaw.cu" : path_file[path];
    if (x[MT_P_GROUPS_PER_CU]) names[n++] = "mla_decode/schedule.cu";
    if (has_reduce(x)) names[n++] = "mla_decode/reduce.cu";
    return n;
}

static void mla_decode_entries(const mt_variant *v, const char *names[MT_MAX_ENTRIES]) {
    const int *x = v->values;
    names[MT_DECODE_FN] = MT_MLA_DECODE_KERNEL;
    names[MT_REDUCE_FN] = has_reduce(x) ? MT_MLA_REDUCE_KERNEL : NULL;
    names[MT_SCHEDULE_FN] = x[MT_P_GROUPS_PER_CU] ? MT_MLA_SCHEDULE_KERNEL : NULL;
}

static size_t family_shared_bytes(const mt_variant *v, const mt_problem_static *s, int warp_size) {
    return mt_mla_decode_shared_bytes(v->values, s, warp_size);
}

static size_t family_workspace_bytes(const mt_variant *v, const mt_shape *shape, int batch, int compute_units) {
    return mt_mla_decode_workspace_bytes(v, &shape->s, batch, shape->n_heads, shape->sq, compute_units);
}

static mt_status family_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                               const void *args, mt_stream stream) {
    return mt_mla_decode_launch(b, k, v, s, args, stream);
}

static mt_status family_schedule(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                                 const void *args, mt_devptr dst, mt_stream stream) {
    mt_status st = mt_mla_decode_check_schedule_args(v, s, args);
    return st == MT_OK ? mt_mla_decode_schedule(b, k, v, args, dst, stream) : st;
}

static int family_length_aware(const mt_variant *v) { return v->values[MT_P_GROUPS_PER_CU] > 0; }

/* A grid variant's best split count is the one that fills the GPU for
 * its key's batch: the winners of one shape keep batch x num_splits
 * nearly constant (16 heads, 16384 keys: 64 splits at batch 2, 32 at 4, 8
 * at 16, 2 at 64).  So a call of another batch runs the key's winner with
 * num_splits x key_batch / batch, to the nearest power of two (in log2)
 * within the parameter's 1..128; one split takes kv_granularity 16
 * (constraints.c: it has no effect there) and the cluster merge keeps to
 * its 2..16 splits.  Each key of the shipped H100 databases held out and
 * looked up from the rest (`mla-tune holdout`, reports/PERFLOG.md session
 * 27): the nearest key's splits as measured ran 1.19x the key's best
 * (geomean of 189 keys, up to 2.14x), rescaled 1.05x.  Two refinements
 * (session 30), priced the same way on the H100's DBs and on two H200
 * sweeps, neither worse anywhere: the H100 fast-decode DB's held-out keys
 * 1.046x -> 1.034x (broad 1.044x, merged 1.047x, as before), the H200
 * sweep of 8-64 heads at B=16/64 x 1024/8192 1.346x -> 1.127x:
 *
 * - More splits than the key's are merged in a cluster only where the
 *   cluster pays at that count (mt_mla_decode_cluster_pays, at the key's
 *   length): a winner of 2 splits in clusters of 2 at B=64 x 8192 ran its
 *   8 splits at B=16 in clusters of 8 1.4x slower than through the reduce
 *   kernel (H200, 64 heads), while at 1024 keys the clusters kept winning.
 * - On a device whose memory bandwidth per compute unit is at least
 *   FILL_GBPS_PER_UNIT, a key whose grid left units idle keeps its splits
 *   at larger batches while the grid fits one wave and a split keeps
 *   FILL_MIN_KEYS keys (then the most that do; never fewer than the
 *   rescaling above).  There a key's short splits say how short a split
 *   may be, not how many work-groups draw the bandwidth: on the H200 (4.8
 *   TB/s, 37 GB/s a unit) B=64 x 1024 ran 1 split 1.09-1.47x slower than 2
 *   (8-64 heads, 64 work-groups against 128), 128 heads B=12 x 1024 2
 *   splits 1.23x slower than 4; but B=16 x 1024 ran 8 splits of 128 keys
 *   1.3-1.5x slower than 4 of 256 (run 3 of session 30, before the
 *   floor).  On the H100 (3.35 TB/s, 25 GB/s a unit) the key's
 *   work-groups are right: half the units draw its bandwidth, and filling
 *   made its DBs' held-out keys worse (fast-decode 1.046x -> 1.069x).  28
 *   GB/s sits between the two devices by either figure (peak 25.4 / 37.2,
 *   the copy ceiling measured 22.8 / 32.2).  With both, the shipped (H100)
 *   DBs' answers on the H200, priced by two H200 sweeps of 27 shapes
 *   between their keys: 1.066x the best -> 1.030x (worst 1.50x -> 1.19x).
 *
 * - Two splits merge in a cluster where the path can (since
 *   session 31), whatever the key's merge: a pair's cluster costs no
 *   occupancy to speak of, and the reduce kernel's second pass has a fixed
 *   cost (about 6 us on the H200 even with nothing to merge) that the
 *   bytes test above does not see.  Measured where both were swept (the
 *   64-row path, 2 splits, cluster against reduce kernel): the H100 broad
 *   DB's 190 keys 1.025x faster in the cluster (156 of them; the reduce
 *   at most 9% faster, at 65536 keys), the two H200 sweeps' 27 keys 1.04x
 *   (25; at B=64 x 1024, 8-64 heads, 1.09-1.15x).
 *
 * Length-aware variants cut by the lengths on the GPU: they run as they
 * are. */
#define FILL_GBPS_PER_UNIT 28.0
#define FILL_MIN_KEYS 256
static int family_rescale(const mt_variant *v, const mt_shape *shape, const mt_rescale_call *c, mt_variant *out) {
    const int *x = v->values;
    const int key_splits = x[MT_P_NUM_SPLITS];
    if (x[MT_P_GROUPS_PER_CU] || c->key_batch < 1 || c->batch < 1 || c->key_batch == c->batch) return 0;
    const double want = (double)key_splits * c->key_batch / c->batch;
    int splits = 1;
    while (splits < 128 && want >= splits * 1.4142135623730951) splits *= 2;
    const int rows = shape->n_heads * shape->sq, tile_rows = rows < x[MT_P_TILE_Q] ? rows : x[MT_P_TILE_Q];
    const long tiles = (rows + x[MT_P_TILE_Q] - 1) / x[MT_P_TILE_Q], units = c->compute_units;
    if (c->memory_gbps >= FILL_GBPS_PER_UNIT * (double)units && c->batch > c->key_batch &&
        tiles * c->key_batch * key_splits < units) {
        /* halved until the call's grid fits one wave and a split has
         * FILL_MIN_KEYS keys (at the key's length) */
        int fill = key_splits;
        while (fill > 1 && (tiles * c->batch * fill > units || (long)c->key_len < (long)FILL_MIN_KEYS * fill)) fill /= 2;
        if (fill > splits) splits = fill;
    }
    if (splits == key_splits) return 0;
    *out = *v;
    out->values[MT_P_NUM_SPLITS] = splits;
    if (splits == 1) out->values[MT_P_KV_GRANULARITY] = 16;
    if (splits == 2) { /* a pair merges in a cluster where the path can (above) */
        out->values[MT_P_SPLIT_REDUCE] = mt_mla_decode_can_cluster(out->values, &shape->s);
    } else if (splits < 2 || splits > 16 ||
               (splits > key_splits && !mt_mla_decode_cluster_pays(&shape->s, tile_rows, splits, c->key_len))) {
        out->values[MT_P_SPLIT_REDUCE] = 0;
    }
    return 1;
}

static const char *const old_names[] = {"mla_decode_simt", NULL};

const mt_family mt_family_mla_decode = {
    .name = "mla_decode",
    .aliases = old_names,
    .kind = "mla_decode",
    .params = mla_decode_params,
    .n_params = (int)(sizeof mla_decode_params / sizeof mla_decode_params[0]),
    .files = NULL,
    .check = mt_mla_decode_check,
    .sources = mla_decode_sources,
    .entries = mla_decode_entries,
    .shared_bytes = family_shared_bytes,
    .workspace_bytes = family_workspace_bytes,
    .launch = family_launch,
    .schedule_bytes = mt_mla_decode_schedule_bytes,
    .schedule = family_schedule,
    .length_aware = family_length_aware,
    .rescale = family_rescale,
    .heuristic_set = mt_mla_decode_heuristic_set,
    .heuristic_pick = mt_mla_decode_heuristic_pick,
    .heuristic_explain = mt_mla_decode_heuristic_explain,
    .heuristic_batch_cap = mt_mla_decode_heuristic_batch_cap,
};
