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
/* out has q's type */
__device__ __forceinline__ mt_u16 pf_store_out(float x) {
    return Q_DTYPE == 0 ? mt_f32_to_bf16(x) : mt_f32_to_f16(x);
}

/* The first element of the row (token t, head h) of a tensor. */
template <typename T>
__device__ __forceinline__ T *pf_row(const mt_prefill_rows &r, long long t, int h) {
    return (T *)r.ptr + t * r.t_stride + (long long)h * r.h_stride;
}
