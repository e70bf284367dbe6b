/*
 * constraints.c - which points of the prefill family's space may run for a
 * problem on a target (the check the sweep and `mla-tune compile` prune
 * with, and every variant a plan builds is validated by).
 */
#include <stdlib.h>
#include <string.h>

#include "mla_prefill.h"

mt_status mt_mla_prefill_check_static(const mt_problem_static *s) {
    if (s->d < 1 || s->d > 512 || s->dl < 1 || s->dl > 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: need qk head dim 1..512 and v head dim 1..512 (got D=%d, Dl=%d)", s->d, s->dl);
    if (s->page_size != 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: k and v are rows of tokens, not pages: page size must be 1 (got %d)",
                       s->page_size);
    /* fp8: e4m3 (OCP) q, k and v together, per-tensor scales (the wgmma
     * path's k32 products; out in bf16) */
    const int fp8 = mt_dtype_is_fp8(s->q_dtype) || mt_dtype_is_fp8(s->kv_dtype);
    if (fp8 && (s->q_dtype != MT_FP8_E4M3 || s->kv_dtype != MT_FP8_E4M3))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: fp8 prefill takes q, k and v all fp8e4m3 (got q %s, k/v %s)",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    return MT_OK;
}

/* mma=1: the matrix units, one 16-bit type for q and k/v (the
 * instructions take one), 16 rows per warp / wave, whole k16 steps of D
 * and Dl; the fragments live in registers.  32-wide warps: mma.sync
 * m16n8k16 (NVIDIA sm_80+, mma_sync.cu); 64-wide wavefronts: MFMA 16x16x16
 * (AMD CDNA, mfma.cu). */
static mt_status check_matrix_units(const int *values, const mt_problem_static *s, const mt_target *t) {
    int threads = values[MT_PF_BLOCK_THREADS], tile_q = values[MT_PF_TILE_Q], kv = values[MT_PF_KV_TILE];
    int nvidia = strncmp(t->arch, "sm_", 3) == 0, cdna = strncmp(t->arch, "gfx9", 4) == 0;
    if (t->warp_size == 32 ? !nvidia || atoi(t->arch + 3) < 80 : t->warp_size != 64 || !cdna)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: mma=1 runs on mma.sync (NVIDIA sm_80 or newer) or MFMA (AMD CDNA, gfx9*), "
                       "not on %s", t->arch);
    const char *unit = t->warp_size == 32 ? "warp" : "wave";
    if (s->q_dtype != s->kv_dtype)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=1 needs q and k/v of one type (q %s, k/v %s)",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    if (tile_q != 16 * (threads / t->warp_size))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: mma=1 gives each %s 16 rows: tile_q must be 16 x %d %ss (got tile_q=%d)", unit,
                       threads / t->warp_size, unit, tile_q);
    if (s->d % 16 != 0 || s->dl % 16 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=1 needs D and Dl multiples of 16 (D=%d, Dl=%d)",
                       s->d, s->dl);
    /* q, scores and output fragments per thread: 4 registers per 16 x 8
     * tile on mma.sync, per 16 x 16 tile on MFMA (64 lanes) */
    int regs = t->warp_size == 32 ? s->d / 16 * 4 + kv / 8 * 4 + s->dl / 8 * 4
                                  : s->d / 16 * 2 + kv / 16 * 4 + s->dl / 16 * 4;
    if (regs > 200)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: mma=1 with D=%d, kv_tile=%d, Dl=%d keeps %d fragment registers per thread "
                       "(> 200, would spill)", s->d, kv, s->dl, regs);
    return MT_OK;
}

/* mma=2: wgmma on Hopper, a warpgroup per 64 rows, the products at the
 * widths wgmma.cu has (kv_tile keys for S, Dl columns for O), whole
 * 64-column blocks of D (the 128-byte swizzle), one 16-bit type; the
 * scores, P and O live in registers. */
static mt_status check_warpgroups(const int *values, const mt_problem_static *s, const mt_target *t) {
    int threads = values[MT_PF_BLOCK_THREADS], tile_q = values[MT_PF_TILE_Q], kv = values[MT_PF_KV_TILE];
    if (strcmp(t->arch, "sm_90") != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=2 runs on wgmma (NVIDIA sm_90), not on %s", t->arch);
    if (s->q_dtype != s->kv_dtype)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=2 needs q and k/v of one type (q %s, k/v %s)",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    if ((tile_q != 64 && tile_q != 128) || threads != 2 * tile_q)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: mma=2 gives each warpgroup (128 threads) 64 rows: tile_q 64 on 128 threads or "
                       "128 on 256 (got tile_q=%d, block_threads=%d)", tile_q, threads);
    if (kv != 64 && kv != 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=2 takes kv_tile 64 or 128 (got %d)", kv);
    if (s->d % 64 != 0 || (s->dl != 64 && s->dl != 128))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: mma=2 needs D a multiple of 64 and Dl 64 or 128 (D=%d, Dl=%d)", s->d, s->dl);
    return MT_OK;
}

mt_status mt_mla_prefill_check(const int *values, const mt_problem_static *s, const mt_target *t) {
    mt_status st = mt_mla_prefill_check_static(s);
    if (st != MT_OK) return st;
    int threads = values[MT_PF_BLOCK_THREADS], tile_q = values[MT_PF_TILE_Q];
    if (t->warp_size > 0 && threads % t->warp_size != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: block_threads=%d is not a multiple of %s's warp (%d)",
                       threads, t->arch, t->warp_size);
    if (mt_dtype_is_fp8(s->kv_dtype) && values[MT_PF_MMA] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: fp8 runs on the wgmma path only (mma=2, sm_90), not mma=%d", values[MT_PF_MMA]);
    if (values[MT_PF_PERSISTENT] != 0 && values[MT_PF_MMA] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: persistent=1 is a form of the wgmma path (mma=2), not of mma=%d",
                       values[MT_PF_MMA]);
    if (values[MT_PF_OUT_STORES] != 4 && values[MT_PF_MMA] != 2)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: out_stores=%d is a form of the wgmma path's epilogue (mma=2), not of mma=%d",
                       values[MT_PF_OUT_STORES], values[MT_PF_MMA]);
    if (values[MT_PF_MMA] == 1 && (st = check_matrix_units(values, s, t)) != MT_OK) return st;
    if (values[MT_PF_MMA] == 2 && (st = check_warpgroups(values, s, t)) != MT_OK) return st;
    /* SIMT: the output tile lives in registers, spread over the threads:
     * past 64 floats per thread it spills */
    int per_thread = (tile_q * s->dl + threads - 1) / threads;
    if (values[MT_PF_MMA] == 0 && per_thread > 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: tile_q=%d x Dl=%d over %d threads keeps %d output accumulators per thread "
                       "(> 64, would spill)", tile_q, s->dl, threads, per_thread);
    size_t smem = mt_mla_prefill_shared_bytes(values, s);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: tile_q=%d kv_tile=%d needs %zu bytes of shared memory, "
                       "%s allows %zu", tile_q, values[MT_PF_KV_TILE], smem, t->arch, t->shared_max);
    return MT_OK;
}
