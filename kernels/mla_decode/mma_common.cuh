/*
 * mma_common.cuh - what the three matrix-unit paths share (mma_sync.cu,
 * mfma.cu, both wgmma paths): the 16-bit mma type and conversions to it.
 */
/* Shared by both matrix-unit paths.  The mma type is bf16 when KV is bf16,
 * fp16 when KV is fp16 or fp8; q is converted to it when its own dtype
 * differs. */
#define MMA_FP16 (KV_DTYPE != 0)
#define KV_FP8 (KV_DTYPE == 2 || KV_DTYPE == 3) /* either encoding */
#define Q_CONVERT ((Q_DTYPE == 0 && MMA_FP16) || (Q_DTYPE == 1 && !MMA_FP16))

/* Two fp8 KV bytes (low first) -> f16x2, exactly, in the KV's encoding. */
__device__ __forceinline__ mt_u32 kv_fp8x2_to_f16x2(mt_u16 two) {
#if KV_DTYPE == 3
    return mt_cvt_e4m3fnuzx2_f16x2(two);
#else
    return mt_cvt_e4m3x2_f16x2(two);
#endif
}

__device__ __forceinline__ mt_u32 pack_mma(float lo, float hi) {
#if MMA_FP16
    return mt_pack_f16x2(lo, hi);
#else
    return mt_pack_bf16x2(lo, hi);
#endif
}

/* bf16 q going to fp16: the larger |value| of a packed bf16 pair, and the
 * power of two that brings the tile's largest |q| (amax) under 2^15 so
 * nothing overflows (the factor is divided out of the scores exactly). */
__device__ __forceinline__ float bf16_pair_absmax(mt_u32 w) {
    return fmaxf(fabsf(mt_bf16_to_f32((mt_u16)(w & 0xffffu))), fabsf(mt_bf16_to_f32((mt_u16)(w >> 16))));
}
__device__ __forceinline__ float q_fp16_factor(float amax) {
    int k = 0;
    if (amax > 0.0f) k = min(126, max(-126, 14 - ilogbf(amax)));
    return ldexpf(1.0f, k);
}

#if MT_CUDA
/* Output columns col and col + 1 of one row (the NVIDIA matrix paths'
 * accumulator pairs), as store_o does for one. */
__device__ __forceinline__ void store_o_pair(const mt_views &p, mt_u16 *out, float *o_part, int b, int dest,
                                             int rows, int row, int col,
                                             float v0, float v1) {
    if (DEST_DIRECT(dest)) {
#if Q_DTYPE == 0
        *(mt_u32 *)(out_row(p, out, b, row) + col) = mt_pack_bf16x2(v0, v1);
#else
        *(mt_u32 *)(out_row(p, out, b, row) + col) = mt_pack_f16x2(v0, v1);
#endif
    } else {
        *(float2 *)(o_part + PART_ROW(b, dest, rows, row) * DL + col) = make_float2(v0, v1);
    }
}
#endif

/* A packed pair of q (q's dtype) -> the mma type; bf16 q is multiplied by
 * q_factor on the way (1 unless it goes to fp16). */
__device__ __forceinline__ mt_u32 q_pair_to_mma(mt_u32 w, float q_factor) {
#if Q_DTYPE == 0
    return pack_mma(mt_bf16_to_f32((mt_u16)(w & 0xffffu)) * q_factor, mt_bf16_to_f32((mt_u16)(w >> 16)) * q_factor);
#else
    (void)q_factor;
    return pack_mma(mt_f16_to_f32((mt_u16)(w & 0xffffu)), mt_f16_to_f32((mt_u16)(w >> 16)));
#endif
}
