/*
 * wgmma.cu - the prefill family's warpgroup path (mma = 2; NVIDIA Hopper,
 * sm_90a): both products on wgmma, the matrix units' full width, where
 * mma.sync (mma_sync.cu) reaches about a third of it.
 *
 * A work-group takes TILE_Q new tokens of one request and one head (grid
 * as the other paths: tile, head, request), one warpgroup (128 threads)
 * per 64 of them.  Per KV_TILE keys:
 *   S = Q K^T      wgmma m64nKV_TILEk16, Q and K both from shared memory
 *                  (D / 16 k-steps), fp32 accumulators in registers;
 *   the mask and the online softmax on the accumulators (a row's scores
 *   live in the four lanes of a quad), P packed to 16 bits in registers:
 *   the accumulator layout is the A operand layout of the next product;
 *   O += P V       wgmma m64nDLk16, P from registers, V from shared memory
 *                  (MN-major: key rows as stored, v columns contiguous).
 * The two products of neighbouring tiles overlap: tile j's S = Q K_j^T is
 * issued, then the previous tile's P V, and tile j's softmax runs while
 * the matrix units do that P V (FlashAttention-3's intra-warpgroup
 * overlap; 1.4x on the H100, PERFLOG session 18).  The key tiles come by
 * the tensor copy engine (wgmma_copy.cuh), issued by warp 0 one tile
 * ahead, K and V two stages each: during tile j, K_(j+1) replaces K_(j-1)
 * (released by every warp after S_(j-1)) and V_j replaces V_(j-2)
 * (released after its P V); the warpgroups meet at no barrier per tile,
 * only at the mbarriers of the stages they read.  The grid's tiles run
 * heaviest first across groups of heads (pw_block_tile): a causal tile's
 * keys grow with its position, and the light ones fill the tail.
 *
 * Shared memory (128-byte swizzled tiles, prelude.h; kept equal to
 * mt_mla_prefill_shared_bytes), from the first 1024-byte boundary:
 *   q_s    [D/64][TILE_Q rows][128 B]         Q, warpgroup w's rows from 64w
 *   k      2 x [D/64][KV_TILE keys][128 B]    the K stages
 *   v      2 x [DL/64][KV_TILE keys][128 B]   the V stages
 *   bars   8 mbarriers: k_full[2] v_full[2] k_empty[2] v_empty[2]
 * (fp8 e4m3: rows of 64-byte blocks, v^T in place of v; wgmma_fp8.cuh.)
 * Fixed shape (constraints.c): tile_q 64 or 128 with 2 x tile_q threads,
 * kv_tile 64 or 128, D % 64 == 0, DL 64 or 128, one type (16-bit or e4m3); every
 * q / k / k_pe / v row 16-byte aligned and nope a multiple of 64
 * (launch.c checks the views).
 */

/* 2^x on the special-function unit alone (flushing subnormal results to
 * 0, which a probability that small does not miss); exp2f adds a range
 * fix-up of three instructions around it. */
__device__ __forceinline__ float pw_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* O rows r0 / r1 of this thread *= a0 / a1, skipped while the whole warp's
 * rows keep their max (the factor is then exactly 1). */
__device__ __forceinline__ void pw_rescale(float *o, float a0, float a1) {
    if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
#pragma unroll
    for (int j = 0; j < PW_O / 4; j++) o[4 * j] *= a0, o[4 * j + 1] *= a0, o[4 * j + 2] *= a1, o[4 * j + 3] *= a1;
}

/* The scores of one key tile -> P (16-bit A fragments of P V) and the
 * rows' running max and sum; returns through a0 / a1 the factor O must be
 * scaled by before this tile's P V is added.  Masks only a tile that
 * crosses a row's limit; the rows' max over the quad on the raw scores
 * (the scale is positive), then p = 2^(s * scale - max) in one FFMA + EX2;
 * a masked score is -inf and gives 0 against a finite max. */
__device__ __forceinline__ void pw_softmax(float *s, mt_u32 (*pf)[4], int k0, int lim0, int lim1, float s_scale,
                                           float &m0, float &m1, float &l0, float &l1, float &a0, float &a1) {
    const int quad = threadIdx.x & 3;
    if (k0 + KV_TILE > lim0 || k0 + KV_TILE > lim1) {
#pragma unroll
        for (int j = 0; j < PW_S / 4; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int key = k0 + j * 8 + quad * 2 + e;
                if (key >= lim0) s[4 * j + e] = MT_NEG_INF;
                if (key >= lim1) s[4 * j + 2 + e] = MT_NEG_INF;
            }
    }
    float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
#pragma unroll
    for (int j = 0; j < PW_S / 4; j++) {
        mx0 = fmaxf(mx0, fmaxf(s[4 * j], s[4 * j + 1]));
        mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 1)), mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 1));
    mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 2)), mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 2));
    const float mn0 = fmaxf(m0, mx0 * s_scale), mn1 = fmaxf(m1, mx1 * s_scale);
    /* a row that has seen no key yet keeps max -inf: subtract 0 then */
    a0 = m0 == MT_NEG_INF ? 0.0f : pw_exp2(m0 - mn0);
    a1 = m1 == MT_NEG_INF ? 0.0f : pw_exp2(m1 - mn1);
    const float sub0 = mn0 == MT_NEG_INF ? 0.0f : mn0, sub1 = mn1 == MT_NEG_INF ? 0.0f : mn1;
    float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
    for (int j = 0; j < PW_S / 4; j++) {
        const float p00 = pw_exp2(fmaf(s[4 * j], s_scale, -sub0));
        const float p01 = pw_exp2(fmaf(s[4 * j + 1], s_scale, -sub0));
        const float p10 = pw_exp2(fmaf(s[4 * j + 2], s_scale, -sub1));
        const float p11 = pw_exp2(fmaf(s[4 * j + 3], s_scale, -sub1));
        ps0 += p00 + p01, ps1 += p10 + p11;
#if PW_FP8
        /* k32 step j / 4 holds 8-key blocks 4 (j / 4) .. + 3: registers 0 / 1
         * (rows r0 / r1) the first two blocks' pairs, 2 / 3 the last two's,
         * 16 bits each (v^T's key order matches: wgmma_fp8.cuh) */
        const int kk = j >> 2, a = ((j >> 1) & 1) * 2;
        if ((j & 1) == 0) pf[kk][a] = pw8_pack2(p00, p01), pf[kk][a + 1] = pw8_pack2(p10, p11);
        else pf[kk][a] |= pw8_pack2(p00, p01) << 16, pf[kk][a + 1] |= pw8_pack2(p10, p11) << 16;
#else
        pf[j >> 1][(j & 1) * 2] = pf_pack16(p00, p01);
        pf[j >> 1][(j & 1) * 2 + 1] = pf_pack16(p10, p11);
#endif
    }
    l0 = l0 * a0 + ps0, l1 = l1 * a1 + ps1;
    m0 = mn0, m1 = mn1;
}

/* S = Q K^T of one key tile, issued (the caller commits and waits). */
__device__ __forceinline__ void pw_issue_scores(float *s, mt_u64 q_desc, const unsigned char *k_s) {
    const mt_u64 k_desc = pw_desc(k_s);
    constexpr int per = 64 / PW_KSTEP; /* steps per 64-column block */
#pragma unroll
    for (int ks = 0; ks < D / PW_KSTEP; ks++) {
        const int q_off = ((ks / per) * TILE_Q * PW_ROW + (ks % per) * 32) >> 4;
        const int k_off = ((ks / per) * KV_TILE * PW_ROW + (ks % per) * 32) >> 4;
#if PW_FP8
        pw8_wgmma_ss<KV_TILE>(s, q_desc + q_off, k_desc + k_off, ks > 0);
#else
        pw_wgmma_ss<KV_TILE, PW_FP16>(s, q_desc + q_off, k_desc + k_off, ks > 0);
#endif
    }
}

/* O += P V of one key tile, issued (the caller commits and waits). */
__device__ __forceinline__ void pw_issue_pv(float *o, const mt_u32 (*pf)[4], const unsigned char *v_s) {
#if PW_FP8
    /* v^T: 64-key blocks of DL rows, K-major; two k32 steps per block */
    const mt_u64 v_desc = pw_desc(v_s);
#pragma unroll
    for (int kk = 0; kk < PW_P; kk++) pw8_wgmma_rs<DL>(o, pf[kk], v_desc + (((kk >> 1) * DL * 64 + (kk & 1) * 32) >> 4), 1);
#else
    const mt_u64 v_desc = mt_wgmma_desc(v_s, KV_TILE * 128, 1024);
#pragma unroll
    for (int kk = 0; kk < KV_TILE / 16; kk++) pw_wgmma_rs<DL, PW_FP16>(o, pf[kk], v_desc + ((kk * 2048) >> 4), 1);
#endif
}

/* The next tile's P becomes the A operand of its P V.  The previous P is
 * read in the same step, after the wait that retires the P V that reads
 * it: the tensor cores read a register A operand while the softmax of the
 * next tile runs, and without a later use the compilers see its last use
 * at the wgmma's issue and give its registers to the next P (NVVM merged
 * the two into one PTX register; wrong results on the H100, PERFLOG
 * session 18; an empty asm, mt_wgmma_pin_a, is no use to ptxas).  `zero`
 * is 0 at run time, which neither compiler can see: one LOP3 per register. */
__device__ __forceinline__ void pw_next_p(mt_u32 (*pf)[4], const mt_u32 (*pn)[4], int zero) {
#pragma unroll
    for (int kk = 0; kk < PW_P; kk++)
#pragma unroll
        for (int e = 0; e < 4; e++) pf[kk][e] = pn[kk][e] | (pf[kk][e] & (mt_u32)zero);
}

/* This work-group's tile.  Blocks start in the order of their linear
 * index, so that order is the schedule: request by request, then in groups
 * of up to PW_HEAD_GROUP heads, every head's last (heaviest: a causal
 * tile's keys grow with its position) q tile of the group before any
 * head's earlier ones.  Head by head instead, the last head's heaviest
 * tile started when little else was left and ran alone at the end (16
 * heads x 8192: a tile of 64 key tiles against an SM's share of 252;
 * 522 TFLOP/s).  A group of 4 heads leaves the SMs 4 x 15.5 key tiles each
 * when its heaviest tiles start; a larger group spreads the keys read at
 * once over more heads than L2 serves well (16 heads: 128 heads x 1024
 * tokens 379 -> 353 TFLOP/s; PERFLOG session 18). */
#define PW_HEAD_GROUP 4
/* Tile r of request b in that order (q_tiles x heads of them). */
__device__ __forceinline__ pf_tile pw_tile_in_request(const mt_prefill_params &p, int r, int q_tiles, int heads, int b) {
    const int group = r / (q_tiles * PW_HEAD_GROUP), first = group * PW_HEAD_GROUP;
    const int size = min(PW_HEAD_GROUP, heads - first), i = r - first * q_tiles;
    return pf_tile_at(p, q_tiles - 1 - i / size, first + i % size, b);
}
__device__ __forceinline__ pf_tile pw_block_tile(const mt_prefill_params &p) {
    return pw_tile_in_request(p, (int)(blockIdx.x + gridDim.x * blockIdx.y), (int)gridDim.x, (int)gridDim.y,
                              (int)blockIdx.z);
}

/* The grid form: a work-group per tile (persistent = 0; the persistent
 * form is wgmma_persistent.cu). */
#if !PERSISTENT
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 1)
mla_prefill(const mt_prefill_params p, const __grid_constant__ mt_tensor_map k_map,
            const __grid_constant__ mt_tensor_map k_pe_map, const __grid_constant__ mt_tensor_map v_map) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle pattern repeats every 1024 bytes of the shared address */
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *k_st = q_s + PW_Q_BYTES;      /* 2 stages of K_BYTES */
    unsigned char *v_st = k_st + 2 * PW_K_BYTES; /* 2 stages of V_BYTES */
    mt_u64 *bars = (mt_u64 *)(v_st + 2 * PW_V_BYTES);
    mt_u64 *full_k = bars, *full_v = bars + 2, *empty_k = bars + 4, *empty_v = bars + 6;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, quad = lane & 3;
    const bool producer = tid < 32; /* warp 0 issues the key tiles' copies */
    const int r0 = wg * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's rows in the tile */
    const pw_maps maps = {&k_map, &k_pe_map, &v_map};

    const pf_tile t = pw_block_tile(p);
    if (t.rows <= 0) return;                                            /* the whole work-group */
#if PW_FP8
    if (t.n_k > p.vt_keys) { /* more keys than the call said (max_seqlen_k): NaN, never a silent cut */
        for (int i = tid; i < t.rows * (DL + 1); i += BLOCK_THREADS) {
            const int r = i / (DL + 1), c = i - r * (DL + 1);
            if (c < DL) pf_row<mt_u16>(p.out, t.q_first + t.q0 + r, t.head)[c] = 0x7fc0;
            else *pf_row<float>(p.lse, t.q_first + t.q0 + r, t.head) = __int_as_float(0x7fc00000);
        }
        return;
    }
#endif
    const int n_tiles = (t.key_end + KV_TILE - 1) / KV_TILE;
    if (tid == 0) {
        for (int i = 0; i < 4; i++) mt_mbar_init(&bars[i], 1);                  /* the producer's arrival */
        for (int i = 4; i < 8; i++) mt_mbar_init(&bars[i], BLOCK_THREADS / 32); /* every warp's */
        mt_mbar_init_fence();
    }
    __syncthreads();
    if (producer) /* tiles 0 and 1: both stages' first use */
        for (int j = 0; j < min(n_tiles, 2); j++) {
            pw_produce<false>(p, t, maps, j, j, k_st, full_k, empty_k);
            pw_produce<true>(p, t, maps, j, j, v_st, full_v, empty_v);
        }
    pw_load_q(p, t, q_s);
    mt_cp_async_commit();

    const int lim0 = pf_row_limit(p, t, t.q0 + r0), lim1 = pf_row_limit(p, t, t.q0 + r1);
    const float s_scale = p.scale * PF_LOG2E; /* scores in the log2 domain */
    float m0 = MT_NEG_INF, m1 = MT_NEG_INF, l0 = 0.0f, l1 = 0.0f;
    float o[PW_O];
#pragma unroll
    for (int i = 0; i < PW_O; i++) o[i] = 0.0f;
    /* descriptors of the tiles' starts; a k-step or key offset adds its
     * byte offset / 16 (no carry: shared addresses stay below 2^18) */
    const mt_u64 q_desc = pw_desc(q_s + wg * 64 * PW_ROW);
    mt_u32 pf[PW_P][4]; /* P of the previous tile, the A operand of its P V */
    mt_cp_async_wait<0>();
    mt_fence_proxy_async();
    __syncthreads(); /* everyone's part of Q */

    /* Tile j: S_j = Q K_j is issued, then P_(j-1) V_(j-1), so the softmax of
     * tile j runs while the matrix units multiply the previous tile's P V.
     * A stage is released by each warp once the product reading it is
     * retired: K_j after S_j, V_(j-1) after its P V. */
    for (int j = 0; j < n_tiles; j++) {
        const int st = j & 1, pst = (j - 1) & 1;
        /* K_(j+1) replaces K_(j-1) (released after S_(j-1)), V_j replaces
         * V_(j-2) (released after its P V, in tile j - 1): each a tile ahead */
        if (producer && j >= 1 && j + 1 < n_tiles) pw_produce<false>(p, t, maps, j + 1, j + 1, k_st, full_k, empty_k);
        if (producer && j >= 2) pw_produce<true>(p, t, maps, j, j, v_st, full_v, empty_v);
        mt_mbar_wait(&full_k[st], (unsigned)(j >> 1) & 1u);
        float s[PW_S];
        mt_wgmma_fence();
        pw_issue_scores(s, q_desc, k_st + st * PW_K_BYTES);
        mt_wgmma_commit();
        if (j > 0) {
            mt_mbar_wait(&full_v[pst], (unsigned)((j - 1) >> 1) & 1u);
            pw_issue_pv(o, pf, v_st + pst * PW_V_BYTES);
            mt_wgmma_commit();
            mt_wgmma_wait<1>(); /* S_j */
        } else {
            mt_wgmma_wait<0>();
        }
        mt_wgmma_pin<PW_S>(s);
        if (lane == 0) pw_mbar_arrive(&empty_k[st]); /* this warp is done with K_j */
        mt_u32 pn[PW_P][4];
        float a0, a1;
        pw_softmax(s, pn, j * KV_TILE, lim0, lim1, s_scale, m0, m1, l0, l1, a0, a1);
        mt_wgmma_wait<0>(); /* P_(j-1) V_(j-1) */
        mt_wgmma_pin<PW_O>(o);
        if (j > 0 && lane == 0) pw_mbar_arrive(&empty_v[pst]);
        pw_rescale(o, a0, a1);
        pw_next_p(pf, pn, p.zero);
    }
    if (n_tiles > 0) { /* the last tile's P V */
        const int st = (n_tiles - 1) & 1;
        mt_mbar_wait(&full_v[st], (unsigned)((n_tiles - 1) >> 1) & 1u);
        mt_wgmma_fence();
        pw_issue_pv(o, pf, v_st + st * PW_V_BYTES);
        mt_wgmma_commit();
        mt_wgmma_wait<0>();
        mt_wgmma_pin<PW_O>(o);
        mt_wgmma_pin_a<4 * PW_P>(&pf[0][0]);
    }

    /* a row's sum from its quad; then out = O / l, lse = m + log l */
    l0 += mt_shfl_xor(l0, 1), l1 += mt_shfl_xor(l1, 1);
    l0 += mt_shfl_xor(l0, 2), l1 += mt_shfl_xor(l1, 2);
    /* v_scale: fp8 v's dequantisation, 1 otherwise */
    const float inv0 = l0 > 0.0f ? p.v_scale / l0 : 0.0f, inv1 = l1 > 0.0f ? p.v_scale / l1 : 0.0f;
    const bool in0 = r0 < t.rows, in1 = r1 < t.rows;
    mt_u16 *out0 = pf_row<mt_u16>(p.out, t.q_first + t.q0 + (in0 ? r0 : 0), t.head);
    mt_u16 *out1 = pf_row<mt_u16>(p.out, t.q_first + t.q0 + (in1 ? r1 : 0), t.head);
#if OUT_STORES == 16
    if (pw_out_wide(p.out)) pw_store_out_wide(o, out0, out1, in0, in1, inv0, inv1, quad);
    else
#endif
#pragma unroll
    for (int j = 0; j < PW_O / 4; j++) {
        const int col = j * 8 + quad * 2;
        if (in0) *(mt_u32 *)(out0 + col) = pf_pack16(o[4 * j] * inv0, o[4 * j + 1] * inv0);
        if (in1) *(mt_u32 *)(out1 + col) = pf_pack16(o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
    }
    if (quad == 0) {
        if (in0) *pf_row<float>(p.lse, t.q_first + t.q0 + r0, t.head) = l0 > 0.0f ? (m0 + mt_log2f(l0)) * PF_LN2 : MT_NEG_INF;
        if (in1) *pf_row<float>(p.lse, t.q_first + t.q0 + r1, t.head) = l1 > 0.0f ? (m1 + mt_log2f(l1)) * PF_LN2 : MT_NEG_INF;
    }
}
#endif /* !PERSISTENT */
