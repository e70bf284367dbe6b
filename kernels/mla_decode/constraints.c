/*
 * constraints.c - which points of the decode family's space may run for a
 * problem on a target (the check the sweep prunes with and every DB value
 * is validated by); the reasons are in family.c's header and beside each
 * rule.
 */
#include <stdlib.h>
#include <string.h>

#include "mla_decode.h"

mt_status mt_mla_decode_check_static(const mt_problem_static *s) {
    if (s->d < 1 || s->d > 1024 || s->dl < 1 || s->dl > s->d)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: need 1 <= Dl <= D <= 1024 (got D=%d, Dl=%d)", s->d,
                       s->dl);
    if (s->page_size < 1 || s->page_size > 1024 || (s->page_size & (s->page_size - 1)))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: page size %d is not a power of two in 1..1024",
                       s->page_size);
    if (mt_dtype_is_fp8(s->q_dtype))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: q/out must be bf16 or fp16, not fp8");
    return MT_OK;
}

/* mma=1 on 64-wide wavefronts: the AMD matrix-core path (MFMA 16x16x16;
 * gfx950 16x16x32).  Its shape is narrower than NVIDIA's: 2 or 4 waves,
 * tile_q 16 or 32, 16- or 32-key chunks in two LDS buffers loaded through
 * registers (kv_stages 2), within the LDS (64 KiB on gfx942 holds only
 * 16-key chunks; gfx950's 160 KiB both, and 32 keys let its P V step use
 * 16x16x32). */
static mt_status check_mfma(const int *values, const mt_problem_static *s, const mt_target *t) {
    int threads = values[MT_P_BLOCK_THREADS], tile_q = values[MT_P_TILE_Q], chunk = values[MT_P_KV_CHUNK];
    int waves = threads / 64;
    if ((threads != 128 && threads != 256) || (tile_q != 16 && tile_q != 32) || (chunk != 16 && chunk != 32) ||
        values[MT_P_KV_STAGES] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=1 on %s (MFMA) takes block_threads 128/256, tile_q 16/32, kv_chunk 16/32, "
                       "kv_stages 2 (got %d, %d, %d, %d)", t->arch, threads, tile_q, chunk, values[MT_P_KV_STAGES]);
    if (s->d % (16 * waves) != 0 || s->dl % (16 * waves) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=1 on %s needs D and Dl multiples of %d (D=%d, Dl=%d)",
                       t->arch, 16 * waves, s->d, s->dl);
    /* registers live across a chunk: the wave's Q slice, its scores, its
     * output tiles and the next chunk on its way (256 architectural VGPRs) */
    int mtiles = tile_q / 16, kv_bytes = (int)mt_dtype_size(s->kv_dtype);
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
 * warpgroups on a 64-row tile with 64-key chunks in two stages (16-bit KV,
 * or fp8 KV converted once per chunk: wgmma64_fp8.cu), or the transposed
 * 16-row tile (tile_q 16: 16-bit KV with two stages, fp8 KV with four;
 * tile_q 32 with fp8 KV); Dl = 512, D in 64-column swizzle blocks.
 * With 16-bit KV, wgmma reads both operands in one 16-bit type, so q and
 * KV must share it (mixed types take mma=1).  Chunks arrive through the
 * tensor copy engine a page (or 64 keys of one) at a time: pages of 16+
 * keys; with smaller pages only the 64-row 16-bit path runs, gathering the
 * rows by cp.async (wgmma_common.cuh). */
static mt_status check_wgmma(const int *values, const mt_problem_static *s, const mt_target *t) {
    if (strcmp(t->arch, "sm_90") != 0 && strcmp(t->arch, "sm_90a") != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 (wgmma) runs on Hopper (sm_90) only, not %s",
                       t->arch);
    /* the shapes: the 64-row tile (both KV widths) and the transposed tile
     * of 16 rows (both KV widths) or 32 (fp8 KV: O^T of 32 heads is 128
     * registers a thread); the transposed path keeps 4 raw fp8 stages, the
     * 64-row one 2 (its converted chunk takes the room of the others) */
    int fp8 = mt_dtype_is_fp8(s->kv_dtype), tile_q = values[MT_P_TILE_Q];
    int tile_ok = tile_q == 16 || tile_q == 64 || (fp8 && tile_q == 32);
    int stages = fp8 && tile_q != 64 ? 4 : 2;
    if (!tile_ok || values[MT_P_BLOCK_THREADS] != 256 || values[MT_P_KV_CHUNK] != 64 || values[MT_P_KV_STAGES] != stages)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=2 with %s KV takes tile_q %s, block_threads 256, kv_chunk 64, kv_stages %s "
                       "(got %d, %d, %d, %d)", mt_dtype_name(s->kv_dtype), fp8 ? "16, 32 or 64" : "64 or 16",
                       fp8 ? "4 (tile_q 16, 32) or 2 (tile_q 64)" : "2", values[MT_P_TILE_Q],
                       values[MT_P_BLOCK_THREADS], values[MT_P_KV_CHUNK], values[MT_P_KV_STAGES]);
    if (tile_q == 32 && values[MT_P_GROUPS_PER_CU])
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: mma=2 tile_q=32 has fixed splits only (groups_per_cu 0): its length-aware form "
                       "would need %zu bytes of shared memory", mt_mla_decode_shared_bytes(values, s, t->warp_size));
    if (s->d % 64 != 0 || s->dl != 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs D %% 64 == 0 and Dl == 512 (D=%d, Dl=%d)",
                       s->d, s->dl);
    if (!fp8 && s->kv_dtype != s->q_dtype)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs q and KV of one type (q %s, KV %s)",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    if (s->page_size < 16 && (tile_q != 64 || fp8 || values[MT_P_WG_SCHEDULE]))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: with pages under 16 keys (page size %d) mma=2 gathers rows on the 64-row 16-bit "
                       "path only (tile_q 64, 16-bit KV, wg_schedule 0); the others copy whole pages of at least 16 "
                       "keys: use mma=1 for them", s->page_size);
    size_t smem = mt_mla_decode_shared_bytes(values, s, t->warp_size);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: mma=2 needs %zu bytes of shared memory, %s allows %zu",
                       smem, t->arch, t->shared_max);
    return MT_OK;
}

/* split_reduce=1: the merge in a cluster exists on the 64-row warpgroup
 * paths (16-bit and fp8 KV); a cluster holds at most 16 work-groups (H100), each
 * merges DL / splits columns four at a time, and the partial result (64
 * rows of DL + 8 floats and the row lse) must fit where the two KV stages
 * were. */
static mt_status check_split_reduce(const int *values, const mt_problem_static *s) {
    int splits = values[MT_P_NUM_SPLITS];
    if (values[MT_P_MMA] != 2 || values[MT_P_TILE_Q] != 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: split_reduce=1 (merge in a cluster) exists on the 64-row mma=2 paths only");
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

int mt_mla_decode_can_cluster(const int *values, const mt_problem_static *s) {
    const int ok = check_split_reduce(values, s) == MT_OK;
    if (!ok) mt_clear_error();
    return ok;
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

/* wg_schedule=1: the overlapped schedule of the 64-row warpgroup path
 * (wgmma64_seesaw.cu): Hopper, tile_q 64; each chunk's P goes in its last
 * 64-column block, which only the scores read (the rope part), so D must
 * exceed Dl by a block.  The rest of the path's rules follow in
 * check_wgmma. */
static mt_status check_wg_schedule(const int *values, const mt_problem_static *s, const mt_target *t) {
    if (values[MT_P_MMA] != 2 || values[MT_P_TILE_Q] != 64 ||
        (strcmp(t->arch, "sm_90") != 0 && strcmp(t->arch, "sm_90a") != 0))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: wg_schedule=1 (overlapped warpgroups) exists on the 64-row mma=2 path on sm_90 "
                       "only (got mma=%d, tile_q=%d on %s)", values[MT_P_MMA], values[MT_P_TILE_Q], t->arch);
    if (mt_dtype_is_fp8(s->kv_dtype))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: wg_schedule=1 (overlapped warpgroups) takes 16-bit KV only (KV %s)",
                       mt_dtype_name(s->kv_dtype));
    if (s->d < s->dl + 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: wg_schedule=1 keeps P in a chunk's rope block: needs D >= Dl + 64 (D=%d, Dl=%d)",
                       s->d, s->dl);
    return MT_OK;
}

/* mma=1 on 32-wide warps: mma.sync (NVIDIA sm_80+). */
static mt_status check_mma_sync(const int *values, const mt_problem_static *s, const mt_target *t) {
    int threads = values[MT_P_BLOCK_THREADS];
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
    /* registers that live across a chunk (mma_sync.cu: the matrix-unit
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

/* mma=0: the SIMT path. */
static mt_status check_simt(const int *values, const mt_problem_static *s, const mt_target *t) {
    int threads = values[MT_P_BLOCK_THREADS];
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

mt_status mt_mla_decode_check(const int *values, const mt_problem_static *s, const mt_target *t) {
    mt_status st = mt_mla_decode_check_static(s);
    if (st != MT_OK) return st;
    int threads = values[MT_P_BLOCK_THREADS];
    if (t->warp_size > 0 && threads % t->warp_size != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: block_threads=%d is not a multiple of %s's warp (%d)",
                       threads, t->arch, t->warp_size);
    if (values[MT_P_GROUPS_PER_CU]) {
        st = check_length_aware(values);
        if (st != MT_OK) return st;
    } else if (values[MT_P_REQUEST_COST] != MT_SCHEDULE_OVERHEAD || values[MT_P_SNAP_KEYS] != MT_SCHEDULE_SNAP_KEYS ||
               values[MT_P_SNAP_CAP] != MT_SCHEDULE_SNAP_CAP)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: request_cost=%d, snap_keys=%d and snap_cap=%d shape the length-aware schedule only "
                       "(groups_per_cu=0 takes %d, %d and %d)", values[MT_P_REQUEST_COST], values[MT_P_SNAP_KEYS],
                       values[MT_P_SNAP_CAP], MT_SCHEDULE_OVERHEAD, MT_SCHEDULE_SNAP_KEYS, MT_SCHEDULE_SNAP_CAP);
    else if (values[MT_P_NUM_SPLITS] == 1 && values[MT_P_KV_GRANULARITY] != 16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_decode: kv_granularity=%d has no effect without splits (num_splits=1 takes 16 only)",
                       values[MT_P_KV_GRANULARITY]);
    if (values[MT_P_WG_SCHEDULE]) {
        st = check_wg_schedule(values, s, t);
        if (st != MT_OK) return st;
    }
    if (values[MT_P_SPLIT_REDUCE]) {
        st = check_split_reduce(values, s);
        if (st != MT_OK) return st;
    }
    switch (mt_decode_path_of(values, s, t->warp_size)) {
    case MT_PATH_WGMMA64:
    case MT_PATH_WGMMA64_FP8:
    case MT_PATH_WGMMA_T16: return check_wgmma(values, s, t);
    case MT_PATH_MFMA: return check_mfma(values, s, t);
    case MT_PATH_MMA_SYNC: return check_mma_sync(values, s, t);
    case MT_PATH_SIMT: break;
    }
    return check_simt(values, s, t);
}
