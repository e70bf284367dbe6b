/*
 * common.cuh - what the prefill family's kernels share: the storage types
 * of the problem (Q_DTYPE for q and out, KV_DTYPE for k, k_pe and v: 0
 * bf16, 1 fp16; constraints.c refuses the rest) and the row addressing of
 * params.h.  Defines from the build (kernels/variant.h,
 * mt_variant_defines, always all of them): D, DL (qk and v head dims),
 * Q_DTYPE, KV_DTYPE, and each variant's parameters.
 */

#define PF_LOG2E 1.4426950408889634f
#define PF_LN2 0.6931471805599453f

__device__ __forceinline__ float pf_load(mt_u16 h, int dtype) {
    return dtype == 0 ? mt_bf16_to_f32(h) : mt_f16_to_f32(h);
}
__device__ __forceinline__ float pf_load_q(mt_u16 h) { return pf_load(h, Q_DTYPE); }
__device__ __forceinline__ float pf_load_kv(mt_u16 h) { return pf_load(h, KV_DTYPE); }
/* out has q's type, except that fp8 (e4m3, 2) q writes bf16 out */
#define PF_OUT_DTYPE (Q_DTYPE == 2 ? 0 : Q_DTYPE)
__device__ __forceinline__ mt_u16 pf_store_out(float x) {
    return PF_OUT_DTYPE == 0 ? mt_f32_to_bf16(x) : mt_f32_to_f16(x);
}
__device__ __forceinline__ float pf_load_out(mt_u16 h) { return pf_load(h, PF_OUT_DTYPE); }

/* Two floats -> a packed pair of the 16-bit type k and v share (the
 * matrix-unit paths' P, which multiplies v; one type for q and k/v there,
 * so out's too), round to nearest even. */
__device__ __forceinline__ mt_u32 pf_pack16(float lo, float hi) {
    return KV_DTYPE == 1 ? mt_pack_f16x2(lo, hi) : mt_pack_bf16x2(lo, hi);
}

/* The first element of the row (token t, head h) of a tensor. */
template <typename T>
__device__ __forceinline__ T *pf_row(const mt_prefill_rows &r, long long t, int h) {
    return (T *)r.ptr + t * r.t_stride + (long long)h * r.h_stride;
}

/* A work-group's part of a request: new tokens q0 .. q0 + rows - 1 of
 * request b (rows <= 0: the tile is past them, and the work-group returns)
 * for one head, and key_end, the keys any of them sees.  The SIMT and
 * mma.sync paths take (tile, head, request) from blockIdx (pf_tile_of);
 * wgmma.cu orders the blocks otherwise (pw_block_tile). */
struct pf_tile {
    int b, head, q0, rows, key_end;
    int q_first, n_q;   /* the request's new tokens: rows of q, out, lse */
    int k_first, n_k;   /* its keys: rows of k, k_pe, v */
};

__device__ __forceinline__ pf_tile pf_tile_at(const mt_prefill_params &p, int tile, int head, int b) {
    const int *cu_q = (const int *)p.cu_q, *cu_k = (const int *)p.cu_k;
    pf_tile t;
    t.b = b, t.head = head, t.q0 = tile * TILE_Q;
    t.q_first = cu_q[b], t.n_q = cu_q[b + 1] - t.q_first;
    t.k_first = cu_k[b], t.n_k = cu_k[b + 1] - t.k_first;
    t.rows = min(TILE_Q, t.n_q - t.q0);
    /* causal: the context is the first n_k - n_q keys (negative when a
     * request has fewer keys than new tokens) */
    t.key_end = max(0, min(p.causal ? t.n_k - t.n_q + t.q0 + t.rows : t.n_k, t.n_k));
    return t;
}
__device__ __forceinline__ pf_tile pf_tile_of(const mt_prefill_params &p) {
    return pf_tile_at(p, (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
}

/* Keys new token i of the request sees (0 past its new tokens). */
__device__ __forceinline__ int pf_row_limit(const mt_prefill_params &p, const pf_tile &t, int i) {
    if (i >= t.n_q) return 0;
    return max(0, min(p.causal ? t.n_k - t.n_q + i + 1 : t.n_k, t.n_k));
}

/* Column c of key `key` of the request, for the tile's head: k's own
 * columns, then k_pe's (the rope part, one row for all heads). */
__device__ __forceinline__ mt_u16 pf_key_at(const mt_prefill_params &p, const pf_tile &t, int key, int c) {
    return c < p.nope ? pf_row<const mt_u16>(p.k, t.k_first + key, t.head)[c]
                      : pf_row<const mt_u16>(p.k_pe, t.k_first + key, t.head)[c - p.nope];
}

/* The matrix-unit paths' staging (mma_sync.cu, mfma.cu): 16-bit tiles in
 * rows of `stride` elements, zeros past the tile's rows and key_end (a
 * masked key then multiplies 0, never stale data). */
__device__ __forceinline__ void pf_stage_q16(const mt_prefill_params &p, const pf_tile &t, mt_u16 *q_s, int stride) {
    for (int i = threadIdx.x; i < TILE_Q * D; i += BLOCK_THREADS) {
        const int r = i / D, c = i - r * D;
        q_s[r * stride + c] = r < t.rows ? pf_row<const mt_u16>(p.q, t.q_first + t.q0 + r, t.head)[c] : (mt_u16)0;
    }
}
__device__ __forceinline__ void pf_stage_kv16(const mt_prefill_params &p, const pf_tile &t, int k0, mt_u16 *k_s,
                                              int k_stride, mt_u16 *v_s, int v_stride) {
    for (int i = threadIdx.x; i < KV_TILE * D; i += BLOCK_THREADS) {
        const int j = i / D, c = i - j * D, key = k0 + j;
        k_s[j * k_stride + c] = key < t.key_end ? pf_key_at(p, t, key, c) : (mt_u16)0;
    }
    for (int i = threadIdx.x; i < KV_TILE * DL; i += BLOCK_THREADS) {
        const int j = i / DL, c = i - j * DL, key = k0 + j;
        v_s[j * v_stride + c] = key < t.key_end ? pf_row<const mt_u16>(p.v, t.k_first + key, t.head)[c] : (mt_u16)0;
    }
}
