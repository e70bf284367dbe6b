/*
 * constraints.c - which points of the prefill family's space may run for a
 * problem on a target (the check the sweep and `mla-tune compile` prune
 * with, and every variant a plan builds is validated by).
 */
#include "mla_prefill.h"

mt_status mt_mla_prefill_check_static(const mt_problem_static *s) {
    if (s->d < 1 || s->d > 512 || s->dl < 1 || s->dl > 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: need qk head dim 1..512 and v head dim 1..512 (got D=%d, Dl=%d)", s->d, s->dl);
    if (s->page_size != 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: k and v are rows of tokens, not pages: page size must be 1 (got %d)",
                       s->page_size);
    /* the fp8 form (per-tensor scales) is part of issue 29 still to build */
    if (mt_dtype_is_fp8(s->q_dtype) || mt_dtype_is_fp8(s->kv_dtype))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: q/k/v must be bf16 or fp16 (got q %s, k/v %s): fp8 prefill is not built yet",
                       mt_dtype_name(s->q_dtype), mt_dtype_name(s->kv_dtype));
    return MT_OK;
}

mt_status mt_mla_prefill_check(const int *values, const mt_problem_static *s, const mt_target *t) {
    mt_status st = mt_mla_prefill_check_static(s);
    if (st != MT_OK) return st;
    int threads = values[MT_PF_BLOCK_THREADS], tile_q = values[MT_PF_TILE_Q];
    if (values[MT_PF_MMA] != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: mma=%d: only the SIMT path (mma=0) is built",
                       values[MT_PF_MMA]);
    if (t->warp_size > 0 && threads % t->warp_size != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: block_threads=%d is not a multiple of %s's warp (%d)",
                       threads, t->arch, t->warp_size);
    /* the output tile lives in registers, spread over the threads: past 64
     * floats per thread it spills */
    int per_thread = (tile_q * s->dl + threads - 1) / threads;
    if (per_thread > 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: tile_q=%d x Dl=%d over %d threads keeps %d output accumulators per thread "
                       "(> 64, would spill)", tile_q, s->dl, threads, per_thread);
    size_t smem = mt_mla_prefill_shared_bytes(values, s);
    if (smem > t->shared_max)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: tile_q=%d kv_tile=%d needs %zu bytes of shared memory, "
                       "%s allows %zu", tile_q, values[MT_PF_KV_TILE], smem, t->arch, t->shared_max);
    return MT_OK;
}
