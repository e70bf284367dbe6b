/*
 * mla_decode.c - variant description and host-side launch of the
 * "mla_decode_simt" family (the kernel is mla_decode.cu).
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
 *                   threads, 16-key chunks; compiled, not yet run);
 *                   2: warpgroup matrix instructions (wgmma) on Hopper
 *                   (sm_90a): 256 threads, 64-key chunks; tile_q 64 with 2
 *                   stages for 16-bit KV; tile_q 16 (transposed products)
 *                   with 2 stages for 16-bit KV, 4 for fp8 KV
 *   kv_stages       mma=1: KV chunks in the cp.async pipeline (stages - 1
 *                   in flight while one is computed); mma=2: copy stages
 *                   (2, or 4 for fp8); mma=0 takes 2 only
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
 *
 * Constraints (checked before compiling, and on every value read from a DB):
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
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const mt_param_desc mla_decode_params[] = {
    {"tile_q", "TILE_Q", {1, 2, 4, 8, 16, 32, 64}, 7, 16,
     "query rows (token x head pairs) one work-group handles", 0, 0},
    {"kv_granularity", "KV_GRANULARITY", {16, 32, 64, 128, 256}, 5, 16,
     "split boundaries fall on multiples of this many keys", 0, 0},
    {"num_splits", "NUM_SPLITS", {1, 2, 4, 8, 16, 32, 64, 128}, 8, 4, "key ranges per request (split-KV)", 0, 0},
    {"block_threads", "BLOCK_THREADS", {128, 256, 512}, 3, 256, "threads per work-group", 0, 0},
    {"kv_chunk", "KV_CHUNK", {16, 32, 64}, 3, 32, "keys staged in shared memory per step", 0, 0},
    {"mma", "MMA", {0, 1, 2}, 3, 0,
     "1: Q K^T and P V on the matrix units (mma.sync on NVIDIA sm_80+, MFMA on AMD CDNA); 2: wgmma on Hopper", 1, 0},
    {"kv_stages", "KV_STAGES", {2, 3, 4}, 3, 2, "mma=1: KV chunks in the asynchronous-copy pipeline", 1, 0},
    {"split_reduce", "SPLIT_REDUCE", {0, 1}, 2, 0,
     "how splits are merged: 0 by the reduce kernel, 1 within a cluster of the splits' work-groups (mma=2)", 1, 0},
    {"groups_per_cu", "GROUPS_PER_CU", {0, 1, 2}, 3, 0,
     "0: a work-group per (row tile, split, request); 1, 2: length-aware: compute units x this many work-groups, "
     "each a stretch of the work cut on the GPU from the lengths", 1,
     1 /* the kernel is the same for 1 and 2: only the grid differs */},
};

int mt_mla_decode_score_slices(int d) { return (d / 16) % 4 == 0 ? 4 : 2; }

size_t mt_mla_decode_shared_bytes(const int *values, const mt_decode_static *s, int warp_size) {
    size_t tile_q = (size_t)values[MT_P_TILE_Q], chunk = (size_t)values[MT_P_KV_CHUNK];
    if (values[MT_P_MMA] == 2 && tile_q == 16) {
        /* must match the transposed path's layout in mla_decode.cu: up to
         * 1023 bytes to a 1024-byte boundary, Q^T (16 rows x d, 16-bit),
         * the stages of 64 keys x d elements, P^T per warpgroup (16 x 64
         * 16-bit), the maxima/sums exchange, row limits, q maxima, an
         * mbarrier per stage */
        size_t blocks = (size_t)s->d / 64, stages = (size_t)values[MT_P_KV_STAGES];
        /* length-aware: warpgroup 1's O^T (16 x 512 floats) meets warpgroup
         * 0's in a buffer of its own, since the stages already hold the
         * next item's chunks */
        size_t merge = values[MT_P_GROUPS_PER_CU] ? 16 * 512 * 4 : 0;
        return 1024 + blocks * 2048 + stages * blocks * 64 * 64 * mt_dtype_size(s->kv_dtype) + 2 * 2048 + 256 * 4 +
               16 * 4 + 8 * 4 + stages * 8 + merge;
    }
    if (values[MT_P_MMA] == 2) {
        /* must match the warpgroup path's layout in mla_decode.cu: up to
         * 1023 bytes to reach a 1024-byte boundary, Q and two stages of
         * 64 rows x d (16-bit), P (64 x 64), row alpha and row limits, an
         * mbarrier per stage */
        return 1024 + 3 * 128 * (size_t)s->d + 64 * 128 + 64 * 4 + 64 * 4 + 2 * 8;
    }
    if (values[MT_P_MMA] && warp_size == 64) {
        /* must match the AMD matrix-core path's layout in mla_decode.cu:
         * partial scores (fp32, one tile per wave), two KV buffers and P in
         * the 16-bit mma type (rows padded by 8), per-row values, the q
         * factor */
        size_t waves = (size_t)values[MT_P_BLOCK_THREADS] / 64, stride = (size_t)s->d + 8;
        return 4 * waves * tile_q * (chunk + 8) + 2 * 2 * chunk * stride + 2 * tile_q * (chunk + 8) + 8 * tile_q + 4;
    }
    if (values[MT_P_MMA]) {
        /* must match the MMA path's layout in mla_decode.cu: q (16-bit rows
         * of d + 8) sharing its bytes with the partial scores (fp32, DG
         * d-slices x rows of chunk + 8), the stages (fp8: raw rows of d
         * bytes plus one converted chunk), P, per-warp row values, row
         * limits, the q factor */
        size_t stride = (size_t)s->d + 8, stages = (size_t)values[MT_P_KV_STAGES];
        size_t warps = (size_t)values[MT_P_BLOCK_THREADS] / 32;
        size_t q_bytes = 2 * tile_q * stride, sp_bytes = 4 * (size_t)mt_mla_decode_score_slices(s->d) * tile_q * (chunk + 8);
        size_t kv = s->kv_dtype == MT_FP8_E4M3 ? stages * chunk * (size_t)s->d + 2 * chunk * stride
                                               : stages * 2 * chunk * stride;
        return (q_bytes > sp_bytes ? q_bytes : sp_bytes) + kv + 2 * tile_q * (chunk + 8) + 4 * warps * tile_q +
               4 * tile_q + 4;
    }
    /* must match SMEM_FLOATS in mla_decode.cu */
    return sizeof(float) * (tile_q * (size_t)s->d + chunk * (size_t)(s->d + 1) + tile_q * chunk + 4 * tile_q);
}

static mt_status check_static(const mt_decode_static *s) {
    if (s->d < 1 || s->d > 1024 || s->dl < 1 || s->dl > s->d)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: need 1 <= Dl <= D <= 1024 (got D=%d, Dl=%d)", s->d,
                       s->dl);
    if (s->page_size < 1 || s->page_size > 1024 || (s->page_size & (s->page_size - 1)))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: page size %d is not a power of two in 1..1024",
                       s->page_size);
    if (s->q_dtype == MT_FP8_E4M3)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: q/out must be bf16 or fp16, not fp8");
    return MT_OK;
}

/* mma=1 on 64-wide wavefronts: the AMD matrix-core path (MFMA 16x16x16).
 * Its shape is narrower than NVIDIA's: 2 or 4 waves, tile_q 16 or 32,
 * 16-key chunks in two LDS buffers loaded through registers (kv_stages 2),
 * all within 64 KiB of LDS. */
static mt_status check_mfma(const int *values, const mt_decode_static *s, const mt_target *t) {
    int threads = values[MT_P_BLOCK_THREADS], tile_q = values[MT_P_TILE_Q], chunk = values[MT_P_KV_CHUNK];
    int waves = threads / 64;
    if ((threads != 128 && threads != 256) || (tile_q != 16 && tile_q != 32) || chunk != 16 ||
        values[MT_P_KV_STAGES] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=1 on %s (MFMA) takes block_threads 128/256, tile_q 16/32, kv_chunk 16, "
                       "kv_stages 2 (got %d, %d, %d, %d)", t->arch, threads, tile_q, chunk, values[MT_P_KV_STAGES]);
    if (s->d % (16 * waves) != 0 || s->dl % (16 * waves) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=1 on %s needs D and Dl multiples of %d (D=%d, Dl=%d)",
                       t->arch, 16 * waves, s->d, s->dl);
    /* registers live across a chunk: the wave's Q slice, its scores, its
     * output tiles and the next chunk on its way (256 architectural VGPRs) */
    int mtiles = tile_q / 16, kv_bytes = s->kv_dtype == MT_FP8_E4M3 ? 1 : 2;
    int q_regs = mtiles * (s->d / 16 / waves) * 2, s_regs = mtiles * (chunk / 16) * 4;
    int acc = mtiles * (s->dl / waves / 16) * 4;
    int pre = (chunk * s->d * kv_bytes / 16 + threads - 1) / threads * 4;
    if (q_regs + s_regs + acc + pre > 256)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=1 tile_q=%d on %d waves keeps %d registers per lane live (Q %d + scores %d + "
                       "output %d + next chunk %d > 256)", tile_q, waves, q_regs + s_regs + acc + pre, q_regs, s_regs,
                       acc, pre);
    size_t smem = mt_mla_decode_shared_bytes(values, s, 64);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=1 needs %zu bytes of LDS, %s allows %zu", smem,
                       t->arch, t->shared_max);
    return MT_OK;
}

/* mma=2: the warpgroup paths (wgmma), Hopper only, fixed shapes: two
 * warpgroups on a 64-row tile with 64-key chunks in two stages (16-bit
 * KV), or the transposed 16-row tile (tile_q 16: 16-bit KV with two
 * stages, fp8 KV with four); Dl = 512, D in 64-column swizzle blocks.
 * With 16-bit KV, wgmma reads both operands in one 16-bit type, so q and
 * KV must share it (mixed types take mma=1).  Chunks arrive through the
 * tensor copy engine a page (or 64 keys of one) at a time: pages of 16+
 * keys. */
static mt_status check_wgmma(const int *values, const mt_decode_static *s, const mt_target *t) {
    if (strcmp(t->arch, "sm_90") != 0 && strcmp(t->arch, "sm_90a") != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 (wgmma) runs on Hopper (sm_90) only, not %s",
                       t->arch);
    /* the shapes: the 64-row tile (16-bit KV) and the transposed 16-row
     * tile (both KV widths; its own path in mla_decode.cu) */
    int fp8 = s->kv_dtype == MT_FP8_E4M3, tile_q = values[MT_P_TILE_Q], stages = fp8 ? 4 : 2;
    if ((tile_q != 16 && (fp8 || tile_q != 64)) || values[MT_P_BLOCK_THREADS] != 256 || values[MT_P_KV_CHUNK] != 64 ||
        values[MT_P_KV_STAGES] != stages)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=2 with %s KV takes tile_q %s, block_threads 256, kv_chunk 64, kv_stages %d "
                       "(got %d, %d, %d, %d)", mt_dtype_name(s->kv_dtype), fp8 ? "16" : "64 or 16", stages,
                       values[MT_P_TILE_Q], values[MT_P_BLOCK_THREADS], values[MT_P_KV_CHUNK], values[MT_P_KV_STAGES]);
    if (s->d % 64 != 0 || s->dl != 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs D %% 64 == 0 and Dl == 512 (D=%d, Dl=%d)",
                       s->d, s->dl);
    if (!fp8 && s->kv_dtype != s->q_dtype)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs q and KV of one type (q %s, KV %s)",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    if (s->page_size < 16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=2 copies whole pages of at least 16 keys (page size %d: use mma=1)",
                       s->page_size);
    size_t smem = mt_mla_decode_shared_bytes(values, s, t->warp_size);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs %zu bytes of shared memory, %s allows %zu",
                       smem, t->arch, t->shared_max);
    return MT_OK;
}

/* split_reduce=1: the merge in a cluster exists on the 64-row warpgroup
 * path (16-bit KV); a cluster holds at most 16 work-groups (H100), each
 * merges DL / splits columns four at a time, and the partial result (64
 * rows of DL + 8 floats and the row lse) must fit where the two KV stages
 * were. */
static mt_status check_split_reduce(const int *values, const mt_decode_static *s) {
    int splits = values[MT_P_NUM_SPLITS];
    if (values[MT_P_MMA] != 2 || values[MT_P_TILE_Q] != 64 || s->kv_dtype == MT_FP8_E4M3)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: split_reduce=1 (merge in a cluster) exists on the 64-row mma=2 path (16-bit KV) "
                       "only");
    if (splits < 2 || splits > 16 || s->dl % (4 * splits) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: split_reduce=1 takes 2..16 splits that divide Dl into multiples of 4 columns "
                       "(num_splits=%d, Dl=%d)", splits, s->dl);
    if (64 * ((size_t)s->dl + 8) * 4 + 64 * 4 > 2 * 128 * (size_t)s->d)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: split_reduce=1 keeps 64 partial rows of Dl=%d floats where the KV stages of D=%d "
                       "were: too large", s->dl, s->d);
    return MT_OK;
}

/* groups_per_cu > 0: the length-aware form; the schedule decides the
 * pieces, so num_splits is 1 and split_reduce 0.  On the warpgroup paths
 * (64-key chunks starting on multiples of 64) the schedule cuts on 16 or
 * 64 keys: finer cuts would read a chunk twice. */
static mt_status check_length_aware(const int *values) {
    if (values[MT_P_NUM_SPLITS] != 1 || values[MT_P_SPLIT_REDUCE] != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: groups_per_cu=%d (length-aware) takes num_splits 1 and split_reduce 0: the "
                       "schedule splits (got num_splits %d, split_reduce %d)", values[MT_P_GROUPS_PER_CU],
                       values[MT_P_NUM_SPLITS], values[MT_P_SPLIT_REDUCE]);
    if (values[MT_P_MMA] == 2 && values[MT_P_KV_GRANULARITY] != 16 && values[MT_P_KV_GRANULARITY] != 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: length-aware mma=2 variants cut on 16 or 64 keys (got kv_granularity %d)",
                       values[MT_P_KV_GRANULARITY]);
    return MT_OK;
}

static mt_status mla_decode_check(const int *values, const mt_decode_static *s, const mt_target *t) {
    mt_status st = check_static(s);
    if (st != MT_OK) return st;
    int threads = values[MT_P_BLOCK_THREADS];
    if (t->warp_size > 0 && threads % t->warp_size != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: block_threads=%d is not a multiple of %s's warp (%d)",
                       threads, t->arch, t->warp_size);
    if (values[MT_P_GROUPS_PER_CU]) {
        st = check_length_aware(values);
        if (st != MT_OK) return st;
    } else if (values[MT_P_NUM_SPLITS] == 1 && values[MT_P_KV_GRANULARITY] != 16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: kv_granularity=%d has no effect without splits (num_splits=1 takes 16 only)",
                       values[MT_P_KV_GRANULARITY]);
    if (values[MT_P_SPLIT_REDUCE]) {
        st = check_split_reduce(values, s);
        if (st != MT_OK) return st;
    }
    if (values[MT_P_MMA] == 2) return check_wgmma(values, s, t);
    if (values[MT_P_MMA] && t->warp_size == 64) return check_mfma(values, s, t);
    if (values[MT_P_MMA]) {
        if (t->warp_size != 32)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_decode: mma=1 has paths for 32-wide warps (mma.sync) and 64-wide wavefronts (MFMA); "
                           "%s has %d-wide ones", t->arch, t->warp_size);
        if (strncmp(t->arch, "sm_", 3) == 0 && atoi(t->arch + 3) < 80)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=1 needs sm_80 or newer, not %s", t->arch);
        int tile_q = values[MT_P_TILE_Q], chunk = values[MT_P_KV_CHUNK], warps = threads / 32;
        if (tile_q < 16 || (threads != 128 && threads != 256) || chunk < 32)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_decode: mma=1 takes tile_q 16/32/64, block_threads 128/256, kv_chunk 32/64 "
                           "(got %d, %d, %d)", tile_q, threads, chunk);
        if (s->d % 32 != 0 || s->dl % (16 * warps) != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_decode: mma=1 needs D %% 32 == 0 and Dl %% %d == 0 (D=%d, Dl=%d)", 16 * warps, s->d,
                           s->dl);
        /* registers that live across a chunk (mla_decode.cu's matrix-unit
         * path): the warp's Q slice, its partial scores, its output tiles */
        int slices = mt_mla_decode_score_slices(s->d), mtiles = tile_q / 16;
        int keys_per_warp = chunk / (warps / slices), sn = keys_per_warp / 8;
        int q_regs = mtiles * (s->d / 16 / slices) * 4;
        int s_regs = mtiles * sn * 4 * (mtiles * sn <= 2 ? 2 : 1);
        int acc = mtiles * (s->dl / warps / 8) * 4;
        /* 232: tile_q 32 on 4 warps with 32-key chunks (Q 72 + scores 32 +
         * output 128) still compiles with ~100 bytes of spills (sm_90); it
         * stays valid so that databases tuned before the d-split score step
         * still load.  Anything larger spills heavily. */
        if (q_regs + s_regs + acc > 232)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_decode: mma=1 tile_q=%d, %d warps, kv_chunk=%d keeps %d registers per thread live "
                           "(Q %d + scores %d + output %d > 232, would spill)", tile_q, warps, chunk,
                           q_regs + s_regs + acc, q_regs, s_regs, acc);
        size_t smem = mt_mla_decode_shared_bytes(values, s, t->warp_size);
        if (smem > t->shared_max)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=1 needs %zu bytes of shared memory, %s allows %zu",
                           smem, t->arch, t->shared_max);
        return MT_OK;
    }
    if (values[MT_P_KV_STAGES] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kv_stages=%d applies to mma=1 only (mma=0 takes 2)",
                       values[MT_P_KV_STAGES]);
    int cols = (s->dl + threads - 1) / threads;
    if (values[MT_P_TILE_Q] * cols > 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: tile_q=%d x %d output columns per thread = %d accumulators (> 64, would spill)",
                       values[MT_P_TILE_Q], cols, values[MT_P_TILE_Q] * cols);
    size_t smem = mt_mla_decode_shared_bytes(values, s, t->warp_size);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: needs %zu bytes of shared memory per group, %s allows %zu (tile_q=%d, kv_chunk=%d)",
                       smem, t->arch, t->shared_max, values[MT_P_TILE_Q], values[MT_P_KV_CHUNK]);
    return MT_OK;
}

const mt_family mt_family_mla_decode_simt = {
    .name = "mla_decode_simt",
    .source = "mla_decode/mla_decode.cu",
    .params = mla_decode_params,
    .n_params = (int)(sizeof mla_decode_params / sizeof mla_decode_params[0]),
    .check = mla_decode_check,
};

int mt_mla_decode_groups(const mt_variant *v, int compute_units) {
    return v->values[MT_P_GROUPS_PER_CU] * (compute_units > 0 ? compute_units : 1);
}

size_t mt_mla_decode_schedule_bytes(const mt_variant *v, int compute_units) {
    int groups = mt_mla_decode_groups(v, compute_units); /* stretches are at most this many */
    return groups ? mt_schedule_bytes(groups < MT_SCHEDULE_MAX_STRETCHES ? groups : MT_SCHEDULE_MAX_STRETCHES) : 0;
}

/* The schedule's view of a call of a length-aware variant. */
static mt_schedule_shape schedule_shape(const mt_variant *v, int batch, int n_heads, int sq, int compute_units) {
    return (mt_schedule_shape){.batch = batch, .sq = sq, .n_heads = n_heads, .tile_q = v->values[MT_P_TILE_Q],
                               .granularity = v->values[MT_P_KV_GRANULARITY],
                               .n_groups = mt_mla_decode_groups(v, compute_units)};
}

void mt_mla_decode_entry_names(const mt_variant *v, const char *names[3]) {
    names[0] = MT_MLA_DECODE_KERNEL, names[1] = MT_MLA_REDUCE_KERNEL;
    names[2] = v->values[MT_P_GROUPS_PER_CU] ? MT_MLA_SCHEDULE_KERNEL : NULL;
}

/* The rows of fp32 partial results a call leaves in the workspace for the
 * reduce (0: none), which holds o_part [rows][Dl] then lse_part [rows]:
 * [B, splits, Sq x N] with splits; length-aware, [slots, tile_q] (two
 * pieces at most per stretch, a slot per piece and tile: schedule.h).  A
 * cluster merge (split_reduce) needs none. */
static size_t partial_rows(const mt_variant *v, int batch, int n_heads, int sq, int compute_units) {
    if (v->values[MT_P_GROUPS_PER_CU]) {
        if (n_heads <= 0 || sq <= 0) return 0;
        mt_schedule_shape sh = schedule_shape(v, batch, n_heads, sq, compute_units);
        return 2 * (size_t)mt_schedule_work_groups(&sh) * (size_t)v->values[MT_P_TILE_Q];
    }
    size_t splits = (size_t)v->values[MT_P_NUM_SPLITS];
    if (splits <= 1 || v->values[MT_P_SPLIT_REDUCE] || batch <= 0 || n_heads <= 0 || sq <= 0) return 0;
    return splits * (size_t)batch * (size_t)sq * (size_t)n_heads;
}

/* Length-aware variants keep the schedule at the workspace's start (a
 * multiple of 256 bytes, so the partials stay aligned). */
size_t mt_mla_decode_workspace_bytes(const mt_variant *v, const mt_decode_static *s, int batch, int n_heads,
                                     int sq, int compute_units) {
    return mt_mla_decode_schedule_bytes(v, compute_units) +
           partial_rows(v, batch, n_heads, sq, compute_units) * ((size_t)s->dl + 1) * sizeof(float);
}

mt_status mt_mla_decode_check_args(const mt_variant *v, const mt_decode_static *s, const mt_mla_decode_args *a) {
    if (!v || !s || !a) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: null argument");
    if (v->family != &mt_family_mla_decode_simt)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: variant of family '%s' given",
                       v->family ? v->family->name : "(none)");
    mt_status st = check_static(s);
    if (st != MT_OK) return st;
    if (a->n_heads < 1 || a->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: head count %d outside 1..128", a->n_heads);
    if (a->sq < 1 || a->sq > 8)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: Sq=%d outside 1..8", a->sq);
    if (a->batch < 1 || a->batch > 65535)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: batch %d outside 1..65535", a->batch);
    if (a->warp_size != 32 && a->warp_size != 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: warp width %d (the target's: 32 or 64)", a->warp_size);
    if (a->page_size != s->page_size)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: page size %d not supported by this variant (compiled for %d)",
                       a->page_size, s->page_size);
    if (a->max_blocks < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: block table has %d columns", a->max_blocks);
    if (!(a->scale > 0.0f) || a->scale != a->scale || a->scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: softmax scale %g is not a positive finite number",
                       (double)a->scale);
    if (!(a->kv_scale > 0.0f) || a->kv_scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kv scale %g is not a positive finite number",
                       (double)a->kv_scale);
    /* the kernels read and write rows in 16-byte pieces (q, KV, out, the
     * partials in the workspace) and 4-byte words: a misaligned pointer
     * would fault on the GPU, so it is refused here */
    struct { mt_devptr p; const char *name; unsigned align; } ptrs[] = {
        {a->q, "q", 16}, {a->kv, "kv cache", 16}, {a->block_table, "block table", 4},
        {a->seq_lens, "sequence lengths", 4}, {a->out, "out", 16}, {a->lse, "lse", 4}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        if (!ptrs[i].p) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer is null", ptrs[i].name);
        if (ptrs[i].p % ptrs[i].align != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer 0x%llx is not %u-byte aligned",
                           ptrs[i].name, (unsigned long long)ptrs[i].p, ptrs[i].align);
    }
    if (v->values[MT_P_GROUPS_PER_CU]) {
        mt_schedule_shape sh = schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
        mt_status st2 = mt_schedule_check(&sh);
        if (st2 != MT_OK) return st2;
        if (a->schedule % 16 != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: schedule pointer 0x%llx is not 16-byte aligned",
                           (unsigned long long)a->schedule);
    }
    size_t need = mt_mla_decode_workspace_bytes(v, s, a->batch, a->n_heads, a->sq, a->compute_units);
    if (need > 0 && (!a->workspace || a->workspace_bytes < need))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: workspace of %zu bytes needed, %zu given%s", need,
                       a->workspace_bytes, a->workspace ? "" : " (null pointer)");
    if (need > 0 && a->workspace % 16 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: workspace pointer 0x%llx is not 16-byte aligned",
                       (unsigned long long)a->workspace);
    return MT_OK;
}

mt_status mt_mla_decode_schedule(mt_backend *b, const mt_mla_decode_kernels *k, const mt_variant *v,
                                 const mt_mla_decode_args *a, mt_devptr dst, mt_stream stream) {
    if (!v->values[MT_P_GROUPS_PER_CU])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: variant has fixed splits; it takes no schedule");
    if (!k || !k->schedule) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: scheduling kernel missing");
    if (!dst || dst % 16 != 0 || !a->seq_lens)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: schedule needs 16-byte aligned memory and the lengths "
                       "(schedule 0x%llx, lengths 0x%llx)", (unsigned long long)dst, (unsigned long long)a->seq_lens);
    mt_schedule_shape sh = schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
    int batch = a->batch, tiles = mt_schedule_tiles(&sh), stretches = mt_schedule_stretches(&sh);
    mt_devptr lens = a->seq_lens;
    void *args[] = {&lens, &batch, &tiles, &stretches, &dst};
    unsigned grid[3] = {1, 1, 1}, block[3] = {1024, 1, 1}; /* SCHED_THREADS in mla_decode.cu */
    return mt_backend_launch(b, k->schedule, grid, block, 0, stream, args);
}

/* groups_per_cu > 0: the schedule (given, or built now at the workspace's
 * start), decode over stretches x row tiles work-groups (about compute
 * units x groups_per_cu), and the reduce over the cut requests (a fixed
 * grid: how many were cut is known on the GPU only).  Workspace after the
 * schedule: o_part [slots][tile_q][Dl], then lse_part [slots][tile_q]. */
static mt_status launch_length_aware(mt_backend *b, const mt_mla_decode_kernels *k, const mt_variant *v,
                                     const mt_decode_static *s, const mt_mla_decode_args *a, mt_stream stream,
                                     void **args, const unsigned block[3], size_t shared, mt_devptr *sched,
                                     mt_devptr o_part, mt_devptr lse_part) {
    if (!k->reduce || !k->schedule) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kernel function missing");
    mt_status st = MT_OK;
    if (!*sched) {
        *sched = a->workspace;
        st = mt_mla_decode_schedule(b, k, v, a, *sched, stream);
        if (st != MT_OK) return st;
    }
    mt_schedule_shape sh = schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
    int stretches = mt_schedule_stretches(&sh);
    unsigned grid[3] = {(unsigned)mt_schedule_work_groups(&sh), 1, 1};
    st = mt_backend_launch(b, k->decode, grid, block, shared, stream, args);
    if (st != MT_OK) return st;
    int rows = a->sq * a->n_heads;
    mt_devptr out = a->out, lse = a->lse;
    void *rargs[] = {&o_part, &lse_part, &out, &lse, &rows, &stretches, sched};
    unsigned rgrid[3] = {(unsigned)(a->compute_units > 0 ? a->compute_units : 1), (unsigned)((s->dl + 63) / 64), 1};
    unsigned rblock[3] = {256, 1, 1};
    return mt_backend_launch_dependent(b, k->reduce, rgrid, rblock, 0, stream, rargs);
}

mt_status mt_mla_decode_launch(mt_backend *b, const mt_mla_decode_kernels *k, const mt_variant *v,
                               const mt_decode_static *s, const mt_mla_decode_args *a, mt_stream stream) {
    mt_status st = mt_mla_decode_check_args(v, s, a);
    if (st != MT_OK) return st;
    int splits = v->values[MT_P_NUM_SPLITS], in_cluster = v->values[MT_P_SPLIT_REDUCE];
    if (!k || !k->decode || (splits > 1 && !in_cluster && !k->reduce))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kernel function missing");
    int rows = a->sq * a->n_heads;
    int tile_q = v->values[MT_P_TILE_Q];
    int length_aware = v->values[MT_P_GROUPS_PER_CU] != 0;
    /* the workspace: the schedule (length-aware), o_part, then lse_part (partial_rows) */
    size_t part_rows = partial_rows(v, a->batch, a->n_heads, a->sq, a->compute_units);
    mt_devptr o_part = part_rows ? a->workspace + mt_mla_decode_schedule_bytes(v, a->compute_units) : 0;
    mt_devptr lse_part = part_rows ? o_part + part_rows * (size_t)s->dl * sizeof(float) : 0;
    int n_heads = a->n_heads, sq = a->sq, max_blocks = a->max_blocks;
    float scale = a->scale, kv_scale = a->kv_scale;
    mt_devptr q = a->q, kv = a->kv, bt = a->block_table, lens = a->seq_lens, out = a->out, lse = a->lse;
    /* mma=2 also takes the KV cache's tensor map (its copy engine reads
     * 64-column boxes of a page, or of 64 keys of one); the cache's length
     * is not an argument, so the map spans 2^31 rows: only rows the block
     * table names are ever asked for */
    _Alignas(64) unsigned char kv_map[MT_TENSOR_MAP_BYTES];
    /* sched: the length-aware variants' schedule (0 otherwise); kv_map is
     * read by the mma=2 paths only (a launch passes a kernel only the
     * arguments it declares) */
    mt_devptr sched = a->schedule;
    void *args[] = {&q, &kv, &bt, &lens, &out, &lse, &o_part, &lse_part, &n_heads, &sq, &max_blocks, &scale, &kv_scale,
                    &sched, kv_map};
    if (v->values[MT_P_MMA] == 2) {
        unsigned box_rows = s->page_size < 64 ? (unsigned)s->page_size : 64u;
        unsigned elem = s->kv_dtype == MT_FP8_E4M3 ? 1u : 2u; /* 64 columns: 64- or 128-byte box rows */
        st = mt_backend_tensor_map_2d(b, kv, elem, (uint64_t)s->d, 1ull << 31, (uint64_t)s->d * elem, 64, box_rows,
                                      kv_map);
        if (st != MT_OK) return st;
    }
    unsigned block[3] = {(unsigned)v->values[MT_P_BLOCK_THREADS], 1, 1};
    size_t shared = mt_mla_decode_shared_bytes(v->values, s, a->warp_size);
    if (length_aware)
        return launch_length_aware(b, k, v, s, a, stream, args, block, shared, &sched, o_part, lse_part);
    unsigned grid[3] = {(unsigned)((rows + tile_q - 1) / tile_q), (unsigned)splits, (unsigned)a->batch};
    if (in_cluster) {
        /* the splits of a row tile are one cluster; they merge among
         * themselves (split_reduce in mla_decode.cu) */
        unsigned cluster[3] = {1, (unsigned)splits, 1};
        return mt_backend_launch_cluster(b, k->decode, grid, block, cluster, shared, stream, args);
    }
    st = mt_backend_launch(b, k->decode, grid, block, shared, stream, args);
    if (st != MT_OK || splits == 1) return st;
    /* NULL after the five: a backend that records launches (test_variant)
     * tells this reduce from the length-aware one, which takes seven */
    void *rargs[] = {&o_part, &lse_part, &out, &lse, &rows, NULL};
    /* the reduce's shape in mla_decode.cu: with 2 or 4 splits, REDUCE_ROWS
     * (4) rows of 32 threads each; with 8 or more, REDUCE_GROUPS (8) x 32
     * threads per 64 columns (REDUCE_COLS) of a row */
    unsigned rgrid[3] = {(unsigned)rows, (unsigned)a->batch, (unsigned)((s->dl + 63) / 64)};
    unsigned rblock[3] = {256, 1, 1};
    if (splits < 8) rgrid[0] = (unsigned)((rows + 3) / 4), rgrid[2] = 1, rblock[0] = 128;
    /* the reduce may be scheduled while decode's last work-groups run; it
     * waits for their results in the kernel (mt_grid_dependency_wait) */
    return mt_backend_launch_dependent(b, k->reduce, rgrid, rblock, 0, stream, rargs);
}
