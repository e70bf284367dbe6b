/*
 * mfma.cu - the prefill family's matrix-unit path on AMD CDNA (mma = 1 on
 * 64-wide wavefronts: gfx90a, gfx942, gfx950): Q K^T and P V on
 * v_mfma_f32_16x16x16 (bf16 / f16) with fp32 accumulators, in the 16-bit
 * type q and k/v share.  Compiled for gfx942 / gfx950 and run on the CPU
 * emulation of AMD's lane layouts in CI; never on AMD hardware.
 *
 * Work-group (tile, head, request) as in simt.cu; each wave owns 16 of the
 * TILE_Q = 16 x waves new tokens.  Both products are computed transposed,
 * S^T = K Q^T and O^T = V^T P^T, so that every value a lane holds belongs
 * to ONE row, lane % 16 (prelude.h: D[4 (l / 16) + i][l % 16]):
 *   - S^T's accumulators are the scores of row l % 16 with keys
 *     16 t + 4 (l / 16) + i: the row's maximum and sum reduce over the
 *     lane's values and the lanes l % 16 + 16 j (shuffles by 16 and 32);
 *   - those probabilities, packed, are exactly P^T's B operand
 *     (B[key 4 (l / 16) + i][row l % 16]): P never goes through LDS;
 *   - O^T's accumulators are columns 16 n + 4 (l / 16) + i of the same
 *     row, so the softmax rescale is the lane's own factor.
 * Shared memory (the same layout as mma_sync.cu; family.c,
 * mt_mla_prefill_shared_bytes): q_s [TILE_Q][D + 8], k_s [KV_TILE][D + 8],
 * v_s [KV_TILE][DL + 8], 16-bit.  Registers per lane: q (D / 16 x 2), the
 * scores (KV_TILE / 16 x 4), the output (DL / 16 x 4).
 */
#if MT_HIP
#define PA_QK_STRIDE (D + 8)
#define PA_V_STRIDE (DL + 8)
#define PA_KSTEPS (D / 16)
#define PA_S_TILES (KV_TILE / 16)
#define PA_O_TILES (DL / 16)
#define PA_FP16 (KV_DTYPE == 1)

/* four consecutive 16-bit values of shared memory as an MFMA operand */
__device__ __forceinline__ mt_u32x2 pa_four(const mt_u16 *p) {
    mt_u32x2 r;
    r.x = (mt_u32)p[0] | ((mt_u32)p[1] << 16);
    r.y = (mt_u32)p[2] | ((mt_u32)p[3] << 16);
    return r;
}

__device__ __forceinline__ mt_u32 pa_pack(float lo, float hi) {
    return PA_FP16 ? ((mt_u32)mt_f32_to_f16(lo) | ((mt_u32)mt_f32_to_f16(hi) << 16))
                   : ((mt_u32)mt_f32_to_bf16(lo) | ((mt_u32)mt_f32_to_bf16(hi) << 16));
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) mla_prefill(const mt_prefill_params p) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    mt_u16 *q_s = (mt_u16 *)smem_bytes;
    mt_u16 *k_s = q_s + TILE_Q * PA_QK_STRIDE;
    mt_u16 *v_s = k_s + KV_TILE * PA_QK_STRIDE;

    const int wave = threadIdx.x / 64, lane = threadIdx.x % 64, group = lane / 16;
    const pf_tile tile = pf_tile_of(p);
    if (tile.rows <= 0) return; /* the whole work-group */
    const int q0 = tile.q0, rows = tile.rows, head = tile.head, q_first = tile.q_first;
    pf_stage_q16(p, tile, q_s, PA_QK_STRIDE);
    __syncthreads();
    /* this lane's row of q as the B operand of K Q^T, per k16 step */
    const int r_tile = wave * 16 + lane % 16, row = q0 + r_tile; /* the lane's row, in the request */
    mt_u32x2 qf[PA_KSTEPS];
#pragma unroll
    for (int ks = 0; ks < PA_KSTEPS; ks++) qf[ks] = pa_four(q_s + r_tile * PA_QK_STRIDE + ks * 16 + 4 * group);

    const int limit = pf_row_limit(p, tile, row);
    const float s_scale = p.scale * PF_LOG2E;
    float m = MT_NEG_INF, l = 0.0f;
    mt_f32x4 o[PA_O_TILES];
#pragma unroll
    for (int t = 0; t < PA_O_TILES; t++) o[t] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};

    for (int k0 = 0; k0 < tile.key_end; k0 += KV_TILE) {
        __syncthreads(); /* the previous tile's readers are done */
        pf_stage_kv16(p, tile, k0, k_s, PA_QK_STRIDE, v_s, PA_V_STRIDE);
        __syncthreads();

        /* S^T = K Q^T: s[t][i] = score of row `row` with key k0 + 16 t + 4 group + i */
        mt_f32x4 s[PA_S_TILES];
        float mx = MT_NEG_INF;
#pragma unroll
        for (int t = 0; t < PA_S_TILES; t++) {
            s[t] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int ks = 0; ks < PA_KSTEPS; ks++)
                s[t] = mt_mfma_16x16x16(s[t], pa_four(k_s + (t * 16 + lane % 16) * PA_QK_STRIDE + ks * 16 + 4 * group),
                                        qf[ks], PA_FP16);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int key = k0 + t * 16 + 4 * group + i;
                s[t][i] = key < limit ? s[t][i] * s_scale : MT_NEG_INF;
                mx = fmaxf(mx, s[t][i]);
            }
        }
        /* the row's keys are over this lane and lanes +-16, +-32 */
        mx = fmaxf(mx, mt_shfl_xor(mx, 16));
        mx = fmaxf(mx, mt_shfl_xor(mx, 32));
        const float m_new = fmaxf(m, mx);
        const float base = m_new == MT_NEG_INF ? 0.0f : m_new; /* no key yet: exp2(-inf - 0) = 0, not NaN */
        const float alpha = mt_exp2f(m - base);
        m = m_new;
        l *= alpha;
#pragma unroll
        for (int t = 0; t < PA_O_TILES; t++) o[t] *= alpha;
        /* O^T += V^T P^T, k over the tile's keys in 16s */
#pragma unroll
        for (int t = 0; t < PA_S_TILES; t++) {
            float e[4];
#pragma unroll
            for (int i = 0; i < 4; i++) e[i] = mt_exp2f(s[t][i] - base), l += e[i];
            mt_u32x2 pf;
            pf.x = pa_pack(e[0], e[1]), pf.y = pa_pack(e[2], e[3]);
            const mt_u16 *vk = v_s + (t * 16 + 4 * group) * PA_V_STRIDE + lane % 16;
#pragma unroll
            for (int n = 0; n < PA_O_TILES; n++) {
                /* A[column 16 n + lane % 16][key 4 group + i] = v of that key and column */
                mt_u32x2 va;
                va.x = (mt_u32)vk[n * 16] | ((mt_u32)vk[PA_V_STRIDE + n * 16] << 16);
                va.y = (mt_u32)vk[2 * PA_V_STRIDE + n * 16] | ((mt_u32)vk[3 * PA_V_STRIDE + n * 16] << 16);
                o[n] = mt_mfma_16x16x16(o[n], va, pf, PA_FP16);
            }
        }
    }
    l += mt_shfl_xor(l, 16);
    l += mt_shfl_xor(l, 32);
    if (row - q0 < rows) {
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        mt_u16 *out = pf_row<mt_u16>(p.out, q_first + row, head);
#pragma unroll
        for (int n = 0; n < PA_O_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) out[n * 16 + 4 * group + i] = pf_store_out(o[n][i] * inv);
        if (group == 0) *pf_row<float>(p.lse, q_first + row, head) = l > 0.0f ? (m + mt_log2f(l)) * PF_LN2 : MT_NEG_INF;
    }
}
#endif
