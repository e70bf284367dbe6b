/*
 * family.c - the prefill family's description: its parameters, the source
 * files and entry points of a variant, its shared memory, and the family
 * struct every caller goes through (constraints.c, launch.c and
 * heuristic.c hold the rest of its hooks).
 *
 * Parameters (names as configs and the database will spell them):
 *   tile_q          new tokens (of one request and one head) per work-group
 *   kv_tile         keys staged in shared memory per step
 *   block_threads   threads per work-group
 *   mma             0: SIMT arithmetic (simt.cu), any target; 1: the
 *                   matrix units, 16 rows per warp: mma.sync on NVIDIA
 *                   sm_80+ (mma_sync.cu), MFMA on AMD CDNA (mfma.cu);
 *                   2: wgmma on NVIDIA sm_90, 64 rows per warpgroup
 *                   (wgmma.cu)
 *   persistent      mma=2: 0, a work-group per tile (wgmma.cu); 1, a grid of
 *                   as many work-groups as the SMs hold, each taking every
 *                   G-th tile, the next tile's copies under the current
 *                   one's end (wgmma_persistent.cu; added later, so a
 *                   variant without it is 0 and its text is as before)
 *   out_stores      mma=2: bytes per store of out's rows, 4 (the
 *                   accumulator layout) or 16 (after a transpose within
 *                   each quad, where out's rows are 16-byte aligned; else
 *                   4); added later, omitted at 4
 *
 * Constraints (constraints.c; checked before compiling): shared memory
 * within the target's, whole warps, registers (SIMT: at most 64 output
 * accumulators per thread; mma.sync: q, scores and output fragments),
 * bf16 / fp16 only, no pages (k and v are rows, page size 1).
 */
#include "mla_prefill.h"

#include <stdio.h>

static const mt_param_desc mla_prefill_params[] = {
    {"tile_q", "TILE_Q", {1, 2, 4, 8, 16, 32, 64, 128}, 8, 16, "new tokens (one request, one head) per work-group",
     0, 0, 0},
    {"kv_tile", "KV_TILE", {16, 32, 64, 128}, 4, 32, "keys staged in shared memory per step", 0, 0, 0},
    {"block_threads", "BLOCK_THREADS", {64, 128, 256, 512}, 4, 128, "threads per work-group", 0, 0, 0},
    {"mma", "MMA", {0, 1, 2}, 3, 0,
     "0: SIMT; 1: matrix units, 16 rows per warp (mma.sync on NVIDIA, MFMA on AMD); 2: wgmma, 64 rows per "
     "warpgroup (NVIDIA sm_90)", 0, 0, 0},
    {"persistent", "PERSISTENT", {0, 1}, 2, 0,
     "mma=2: 0, a work-group per tile; 1, as many work-groups as the SMs hold, each over a stream of tiles "
     "(the next tile's q and keys copied while the current one ends)", 1, 0, 1},
    {"out_stores", "OUT_STORES", {4, 16}, 2, 4,
     "mma=2: bytes per store of out's rows: 4, as the accumulators lie; 16, after a transpose within each quad "
     "of lanes (where out's rows are 16-byte aligned, else 4)", 1, 0, 1},
};

size_t mt_mla_prefill_shared_bytes(const int *values, const mt_problem_static *s) {
    if (values[MT_PF_MMA] == 2) {
        /* must match wgmma.cu: 1024 bytes to align the swizzled tiles, the
         * q tile, two stages of k and v tiles (unpadded: 2-byte elements,
         * or 1-byte fp8), the stages' 8 mbarriers */
        size_t kv = (size_t)values[MT_PF_KV_TILE], eb = mt_dtype_size(s->kv_dtype);
        return 1024 + eb * ((size_t)values[MT_PF_TILE_Q] * (size_t)s->d + 2 * kv * (size_t)(s->d + s->dl)) + 64;
    }
    if (values[MT_PF_MMA] == 1) {
        /* must match mma_sync.cu and mfma.cu (one layout): the q tile and
         * the k tile (16-bit rows of D + 8), the v tile (rows of Dl + 8) */
        return 2 * ((size_t)(values[MT_PF_TILE_Q] + values[MT_PF_KV_TILE]) * (size_t)(s->d + 8) +
                    (size_t)values[MT_PF_KV_TILE] * (size_t)(s->dl + 8));
    }
    /* must match the layout at the top of simt.cu: the q tile, the k tile
     * (rows padded by one float against bank conflicts), the v tile, the
     * scores, then per row the max, sum, rescale factor and key limit */
    size_t tile_q = (size_t)values[MT_PF_TILE_Q], kv = (size_t)values[MT_PF_KV_TILE];
    return sizeof(float) * (tile_q * (size_t)s->d + kv * (size_t)(s->d + 1) + kv * (size_t)s->dl + tile_q * kv +
                            4 * tile_q);
}

mt_dtype mt_mla_prefill_out_dtype(const mt_problem_static *s) {
    return mt_dtype_is_fp8(s->q_dtype) ? MT_BF16 : s->q_dtype;
}

/* v^T's rows: whole 128-key tiles (any kv_tile's boxes stay inside) */
int mt_mla_prefill_vt_keys(int max_k) { return max_k < 1 ? 128 : (max_k + 127) / 128 * 128; }

size_t mt_mla_prefill_workspace_bytes(const int *values, const mt_problem_static *s, int batch, int n_heads,
                                      int max_k) {
    if (values[MT_PF_MMA] != 2 || !mt_dtype_is_fp8(s->kv_dtype) || batch < 1 || n_heads < 1) return 0;
    return (size_t)batch * (size_t)n_heads * (size_t)s->dl * (size_t)mt_mla_prefill_vt_keys(max_k);
}

/* params.h (the host/device structs), the dtype helpers, the path, then
 * the merge, which every variant carries so that a plan can merge the
 * states its own calls wrote. */
static int mla_prefill_sources(const mt_variant *v, const mt_problem_static *s, int warp_size,
                               const char *names[MT_MAX_SOURCES]) {
    (void)s; /* fp8 and 16-bit inputs share each path's text */
    int n = 0;
    names[n++] = "mla_prefill/params.h";
    names[n++] = "mla_prefill/common.cuh";
    if (v->values[MT_PF_MMA] == 2) {
        names[n++] = "mla_prefill/wgmma_ops.cuh";
        names[n++] = "mla_prefill/wgmma_fp8.cuh";
        names[n++] = "mla_prefill/wgmma_copy.cuh";
        names[n++] = "mla_prefill/wgmma.cu";
        if (v->values[MT_PF_PERSISTENT]) names[n++] = "mla_prefill/wgmma_persistent.cu";
    } else {
        names[n++] = v->values[MT_PF_MMA] == 0 ? "mla_prefill/simt.cu"
                     : warp_size == 64         ? "mla_prefill/mfma.cu"
                                               : "mla_prefill/mma_sync.cu";
    }
    names[n++] = "mla_prefill/merge.cu";
    return n;
}

static void mla_prefill_entries(const mt_variant *v, const char *names[MT_MAX_ENTRIES]) {
    names[MT_PREFILL_FN] = MT_MLA_PREFILL_KERNEL;
    names[MT_PREFILL_MERGE_FN] = MT_MLA_PREFILL_MERGE_KERNEL;
    names[MT_PREFILL_VT_FN] = v->values[MT_PF_MMA] == 2 ? MT_MLA_PREFILL_VT_KERNEL : NULL;
}

static size_t family_shared_bytes(const mt_variant *v, const mt_problem_static *s, int warp_size) {
    (void)warp_size;
    return mt_mla_prefill_shared_bytes(v->values, s);
}

static size_t family_workspace_bytes(const mt_variant *v, const mt_shape *shape, int batch, int compute_units) {
    (void)v, (void)shape, (void)batch, (void)compute_units;
    return 0;
}

static mt_status family_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                               const void *args, mt_stream stream) {
    return mt_mla_prefill_launch(b, k, v, s, args, stream);
}

/* Nothing is cut by the lengths on the host: the grid covers max_q, and
 * each work-group reads its request's bounds from cu_seqlens on the GPU. */
static int family_length_aware(const mt_variant *v) {
    (void)v;
    return 0;
}

const mt_family mt_family_mla_prefill = {
    .name = "mla_prefill",
    .kind = "mla_prefill",
    .params = mla_prefill_params,
    .n_params = (int)(sizeof mla_prefill_params / sizeof mla_prefill_params[0]),
    .files = NULL,
    .check = mt_mla_prefill_check,
    .sources = mla_prefill_sources,
    .entries = mla_prefill_entries,
    .shared_bytes = family_shared_bytes,
    .workspace_bytes = family_workspace_bytes,
    .launch = family_launch,
    .length_aware = family_length_aware,
    .heuristic_set = mt_mla_prefill_heuristic_set,
    .heuristic_pick = mt_mla_prefill_heuristic_pick,
    .heuristic_explain = mt_mla_prefill_heuristic_explain,
};
