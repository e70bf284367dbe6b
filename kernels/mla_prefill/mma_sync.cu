/*
 * mma_sync.cu - the prefill family's matrix-unit path on NVIDIA sm_80+
 * (mma = 1): Q K^T and P V on mma.sync m16n8k16 with fp32 accumulators,
 * in the 16-bit type q and k/v share (constraints.c: bf16 or fp16, one for
 * both).  A first form: no asynchronous copies or pipelining yet (the
 * wgmma path on sm_90 is what the issue's speed needs, docs/prefill.md).
 *
 * Work-group (tile, head, request) as in simt.cu; each warp owns 16 of the
 * TILE_Q = 16 x warps new tokens.  Shared memory (family.c,
 * mt_mla_prefill_shared_bytes, must match), rows padded by 8 elements so
 * ldmatrix's eight row addresses fall in different banks:
 *   q_s  [TILE_Q][D + 8]     the tile's q (16-bit), read once into registers
 *   k_s  [KV_TILE][D + 8]    keys x qk columns: the B operand of Q K^T ([n][k])
 *   v_s  [KV_TILE][DL + 8]   keys x v columns: the B operand of P V ([k][n], transposed loads)
 * Registers per thread: q fragments (D / 16 x 4), scores (KV_TILE / 8 x 4),
 * the output (DL / 8 x 4) for its two rows (lane / 4 and lane / 4 + 8 of
 * the warp's 16), their running max and partial sums (the quad's four
 * threads hold a row's columns; sums are joined at the end).
 */
#if MT_CUDA
#define PM_WARPS (BLOCK_THREADS / 32)
#define PM_QK_STRIDE (D + 8)
#define PM_V_STRIDE (DL + 8)
#define PM_KSTEPS (D / 16)       /* k16 steps of Q K^T */
#define PM_S_TILES (KV_TILE / 8) /* n8 tiles of scores */
#define PM_O_TILES (DL / 8)      /* n8 tiles of the output */
#define PM_FP16 (KV_DTYPE == 1)

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) mla_prefill(const mt_prefill_params p) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    mt_u16 *q_s = (mt_u16 *)smem_bytes;
    mt_u16 *k_s = q_s + TILE_Q * PM_QK_STRIDE;
    mt_u16 *v_s = k_s + KV_TILE * PM_QK_STRIDE;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const pf_tile tile = pf_tile_of(p);
    if (tile.rows <= 0) return; /* the whole work-group */
    const int q0 = tile.q0, rows = tile.rows, head = tile.head, q_first = tile.q_first;
    pf_stage_q16(p, tile, q_s, PM_QK_STRIDE);
    __syncthreads();
    /* the warp's 16 rows as A operands, one per k16 step */
    mt_u32 qf[PM_KSTEPS][4];
#pragma unroll
    for (int ks = 0; ks < PM_KSTEPS; ks++)
        mt_ldmatrix_x4(qf[ks], q_s + (warp * 16 + lane % 16) * PM_QK_STRIDE + ks * 16 + (lane / 16) * 8);

    const int row0 = q0 + warp * 16 + lane / 4, row1 = row0 + 8; /* this thread's two rows, in the request */
    const int limit0 = pf_row_limit(p, tile, row0), limit1 = pf_row_limit(p, tile, row1);
    const float s_scale = p.scale * PF_LOG2E;
    float m0 = MT_NEG_INF, m1 = MT_NEG_INF, l0 = 0.0f, l1 = 0.0f;
    float o[PM_O_TILES][4];
#pragma unroll
    for (int t = 0; t < PM_O_TILES; t++) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;

    for (int k0 = 0; k0 < tile.key_end; k0 += KV_TILE) {
        __syncthreads(); /* the previous tile's readers are done */
        pf_stage_kv16(p, tile, k0, k_s, PM_QK_STRIDE, v_s, PM_V_STRIDE);
        __syncthreads();

        /* S = Q K^T for the warp's 16 rows and the tile's keys */
        float s[PM_S_TILES][4];
#pragma unroll
        for (int t = 0; t < PM_S_TILES; t++) {
            s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < PM_KSTEPS; ks++) {
                mt_u32 bf[2];
                mt_ldmatrix_x2(bf, k_s + (t * 8 + lane % 8) * PM_QK_STRIDE + ks * 16 + ((lane / 8) % 2) * 8);
                mt_mma_16816(s[t], qf[ks], bf, PM_FP16);
            }
        }
        /* mask, the rows' new maxima (a row's columns are spread over the
         * quad: lanes 4g .. 4g + 3) */
        float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
#pragma unroll
        for (int t = 0; t < PM_S_TILES; t++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int key = k0 + t * 8 + 2 * (lane % 4) + e;
                s[t][e] = key < limit0 ? s[t][e] * s_scale : MT_NEG_INF;
                s[t][2 + e] = key < limit1 ? s[t][2 + e] * s_scale : MT_NEG_INF;
                mx0 = fmaxf(mx0, s[t][e]);
                mx1 = fmaxf(mx1, s[t][2 + e]);
            }
        mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 1)), mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 2));
        mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 1)), mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 2));
        const float new0 = fmaxf(m0, mx0), new1 = fmaxf(m1, mx1);
        /* a row that has seen no key yet keeps max -inf: subtract 0 then, so
         * exp2(-inf - 0) = 0 instead of exp2(-inf + inf) = NaN */
        const float base0 = new0 == MT_NEG_INF ? 0.0f : new0, base1 = new1 == MT_NEG_INF ? 0.0f : new1;
        const float alpha0 = mt_exp2f(m0 - base0), alpha1 = mt_exp2f(m1 - base1);
        m0 = new0, m1 = new1;
        l0 *= alpha0, l1 *= alpha1;
#pragma unroll
        for (int t = 0; t < PM_O_TILES; t++) o[t][0] *= alpha0, o[t][1] *= alpha0, o[t][2] *= alpha1, o[t][3] *= alpha1;
#pragma unroll
        for (int t = 0; t < PM_S_TILES; t++) {
            s[t][0] = mt_exp2f(s[t][0] - base0), s[t][1] = mt_exp2f(s[t][1] - base0);
            s[t][2] = mt_exp2f(s[t][2] - base1), s[t][3] = mt_exp2f(s[t][3] - base1);
            l0 += s[t][0] + s[t][1], l1 += s[t][2] + s[t][3];
        }
        /* O += P V: P's accumulators are already the A operand's layout */
#pragma unroll
        for (int kk = 0; kk < KV_TILE / 16; kk++) {
            const mt_u32 a[4] = {pf_pack16(s[2 * kk][0], s[2 * kk][1]), pf_pack16(s[2 * kk][2], s[2 * kk][3]),
                                 pf_pack16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 pf_pack16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int t = 0; t < PM_O_TILES; t += 2) {
                mt_u32 bf[4];
                mt_ldmatrix_x4_trans(bf, v_s + (kk * 16 + lane % 16) * PM_V_STRIDE + t * 8 + (lane / 16) * 8);
                mt_mma_16816(o[t], a, bf, PM_FP16);
                mt_mma_16816(o[t + 1], a, bf + 2, PM_FP16);
            }
        }
    }
    /* a row's sum from its quad; then out = O / l, lse = m + log l */
    l0 += mt_shfl_xor(l0, 1), l0 += mt_shfl_xor(l0, 2);
    l1 += mt_shfl_xor(l1, 1), l1 += mt_shfl_xor(l1, 2);
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
#pragma unroll
    for (int t = 0; t < PM_O_TILES; t++) {
        const int col = t * 8 + 2 * (lane % 4);
        if (row0 - q0 < rows) {
            mt_u16 *out = pf_row<mt_u16>(p.out, q_first + row0, head);
            out[col] = pf_store_out(o[t][0] * inv0), out[col + 1] = pf_store_out(o[t][1] * inv0);
        }
        if (row1 - q0 < rows) {
            mt_u16 *out = pf_row<mt_u16>(p.out, q_first + row1, head);
            out[col] = pf_store_out(o[t][2] * inv1), out[col + 1] = pf_store_out(o[t][3] * inv1);
        }
    }
    if (lane % 4 == 0) {
        if (row0 - q0 < rows)
            *pf_row<float>(p.lse, q_first + row0, head) = l0 > 0.0f ? (m0 + mt_log2f(l0)) * PF_LN2 : MT_NEG_INF;
        if (row1 - q0 < rows)
            *pf_row<float>(p.lse, q_first + row1, head) = l1 > 0.0f ? (m1 + mt_log2f(l1)) * PF_LN2 : MT_NEG_INF;
    }
}
#endif
