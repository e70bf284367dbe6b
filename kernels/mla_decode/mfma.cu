/*
 * mfma.cu - the matrix-core path on AMD CDNA (mma = 1, wavefronts of 64:
 * gfx942, gfx950): MFMA 16x16x16 (and 16x16x32 on gfx950: the score step,
 * and P V with 32-key chunks).
 */
#if MMA != 1
#error "the AMD matrix-core path is mma=1 (mma=2 is NVIDIA Hopper's wgmma)"
#endif

/* ---- the matrix-unit path (AMD, MFMA) -------------------------------------
 * Compiled for gfx942 and gfx950 in CI and run there in the HIP CPU
 * emulation (test_amd_emu); no AMD GPU has run it yet (see README).
 * The same computation as the NVIDIA path, shaped for 64-wide wavefronts,
 * 16x16x16 MFMA (on gfx950 16x16x32: the score step always, P V two
 * 16-key tiles at a time) and 64 KiB of LDS (160 KiB on gfx950),
 * without asynchronous copies:
 *
 * NWV = BLOCK_THREADS / 64 waves (2 or 4); KV chunks of 16 keys, or 32
 * where the LDS holds two buffers of them (gfx950).
 * Scores: wave w takes the d-slice w (D / NWV dims) and all keys of the
 * chunk; its slice of Q is in registers for the whole work-group, loaded
 * straight from global memory as MFMA A fragments (no LDS copy).  The NWV
 * partial score tiles meet in LDS (s_part).
 * Softmax: wave w owns rows w*RPW ..; LPR lanes per row, KPL keys per lane;
 * max and sum by shuffles within the row's lanes.
 * O += P V: wave w owns output columns w*CPW ..; the V operand (4 keys of
 * one column per lane, 8 in a 16x16x32) is gathered with 16-bit LDS reads.
 * KV: two LDS buffers of one chunk each, in the mma type; chunk i+1 is read
 * from global memory into registers while chunk i is computed, then
 * converted and stored into the other buffer (fp8: converted exactly to
 * fp16 on the way).  Three barriers per chunk.
 *
 * LDS (bytes, kept equal to mt_mla_decode_shared_bytes for 64-wide targets):
 *   s_part  [NWV][TILE_Q][KV_CHUNK+8] f32
 *   kv_s    [2][KV_CHUNK][D+8]        mma type
 *   p_s     [TILE_Q][KV_CHUNK+8]      mma type
 *   red     [TILE_Q] f32, row_limit [TILE_Q] int, q factor f32 */
#define NWV (BLOCK_THREADS / 64)
#define MT_TILES (TILE_Q / 16)
#define KSA (D / 16 / NWV)           /* k-steps of this wave's d-slice */
#define SNA (KV_CHUNK / 16)          /* 16-key tiles per chunk */
#define RPW (TILE_Q / NWV)           /* softmax: rows per wave */
#define LPR (64 / RPW)               /* softmax: lanes per row */
#define KPL (KV_CHUNK / LPR)         /* softmax: keys per lane (>= 1) */
#define CPW (DL / NWV)               /* output columns per wave */
#define ON (CPW / 16)                /* 16-column tiles per wave */
#define KS_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define SP_STRIDE (KV_CHUNK + 8)
#define PIECE_ELEMS (16 / (int)sizeof(kv_t))          /* elements per 16-byte global load */
#define KV_PIECES (KV_CHUNK * (D / PIECE_ELEMS))
#define KV_PER_THREAD ((KV_PIECES + BLOCK_THREADS - 1) / BLOCK_THREADS)

__device__ __forceinline__ mt_u16 to_mma(float v) {
#if MMA_FP16
    return mt_f32_to_f16(v);
#else
    return mt_f32_to_bf16(v);
#endif
}

__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched,
                const mt_views prm) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    float *s_part = (float *)smem_bytes;
    mt_u16 *kv_s = (mt_u16 *)(smem_bytes + NWV * TILE_Q * SP_STRIDE * 4);
    mt_u16 *p_s = kv_s + 2 * KV_CHUNK * KS_STRIDE;
    float *red = (float *)(p_s + TILE_Q * P_STRIDE);
    int *row_limit = (int *)(red + TILE_Q);
    float *q_factor_s = (float *)(row_limit + TILE_Q);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, wave = tid / 64, lane = tid % 64;
    const int l16 = lane & 15, l4 = lane >> 4; /* fragment roles: row / column in 16, k group of 4 */
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item is done with shared memory */
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* this wave's slice of Q: A fragments (4 consecutive d of one row per
     * lane), 8 bytes each, straight from global memory */
    const int q_rows_here = min(TILE_Q, rows - row0);
    mt_u32x2 qf[MT_TILES][KSA];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++) {
            const int r = m * 16 + l16, d0 = (wave * KSA + ks) * 16 + l4 * 4;
            qf[m][ks] = r < q_rows_here ? *(const mt_u32x2 *)q_at(prm, q, b, row0 + r, d0) : (mt_u32x2){0u, 0u};
        }
#if Q_CONVERT
#if Q_DTYPE == 0
    /* bf16 q into fp16: the tile's largest |q| picks the factor */
    float amax = 0.0f;
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++) amax = fmaxf(amax, fmaxf(bf16_pair_absmax(qf[m][ks][0]), bf16_pair_absmax(qf[m][ks][1])));
    amax = mt_warp_max(amax);
    if (lane == 0) red[wave] = amax;
    __syncthreads();
    if (tid == 0) {
        float mx = 0.0f;
        for (int w = 0; w < NWV; w++) mx = fmaxf(mx, red[w]);
        q_factor_s[0] = q_fp16_factor(mx);
    }
    __syncthreads();
    const float q_factor = q_factor_s[0];
#else
    const float q_factor = 1.0f;
#endif
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++)
#pragma unroll
            for (int e = 0; e < 2; e++) qf[m][ks][e] = q_pair_to_mma(qf[m][ks][e], q_factor);
#else
    const float q_factor = 1.0f;
#endif
    (void)q_factor_s;
    __syncthreads(); /* row_limit is complete */
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);
    const int n_chunks = tile_end > k_begin ? (tile_end - k_begin + KV_CHUNK - 1) / KV_CHUNK : 0;

    /* KV chunk [k0, k0 + KV_CHUNK) -> registers (16 bytes per piece; keys
     * past tile_end are zeros so P V never meets stale data) -> LDS buffer */
    mt_u32x4 pre[KV_PER_THREAD];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int j = 0; j < KV_PER_THREAD; j++) {
            const int i = tid + j * BLOCK_THREADS, c = i / (D / PIECE_ELEMS), u = i - c * (D / PIECE_ELEMS);
            const int key = k0 + c;
            pre[j] = (mt_u32x4){0u, 0u, 0u, 0u};
            if ((KV_PIECES % BLOCK_THREADS == 0 || i < KV_PIECES) && key < tile_end)
                pre[j] = *(const mt_u32x4 *)(kv + ((size_t)pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE) * D +
                                             u * PIECE_ELEMS);
        }
    };
    auto store = [&](int buf) {
        mt_u16 *dst = kv_s + buf * KV_CHUNK * KS_STRIDE;
#pragma unroll
        for (int j = 0; j < KV_PER_THREAD; j++) {
            const int i = tid + j * BLOCK_THREADS, c = i / (D / PIECE_ELEMS), u = i - c * (D / PIECE_ELEMS);
            if (KV_PIECES % BLOCK_THREADS != 0 && i >= KV_PIECES) break;
#if KV_FP8
            mt_u32 h[8];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                h[2 * e] = kv_fp8x2_to_f16x2((mt_u16)(pre[j][e] & 0xffffu));
                h[2 * e + 1] = kv_fp8x2_to_f16x2((mt_u16)(pre[j][e] >> 16));
            }
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 16) = (mt_u32x4){h[0], h[1], h[2], h[3]};
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 16 + 8) = (mt_u32x4){h[4], h[5], h[6], h[7]};
#else
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 8) = pre[j];
#endif
        }
    };

    const float s_scale = scale * kv_scale * LOG2E / q_factor;
    const int srow = wave * RPW + lane / LPR, skey = (lane % LPR) * KPL;
    const int slim = min(row_limit[srow], tile_end);
    float m_run = MT_NEG_INF, l_run = 0.0f; /* running max (log2 domain) and sum of row srow */
    mt_f32x4 acc[MT_TILES][ON];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int t = 0; t < ON; t++) acc[m][t] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};

    if (n_chunks > 0) {
        fetch(k_begin);
        store(0);
    }
    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = k_begin + ci * KV_CHUNK, buf = ci & 1;
        const bool more = ci + 1 < n_chunks;
        __syncthreads(); /* chunk ci is in its buffer; chunk ci-1's readers are done */
        if (more) fetch(k0 + KV_CHUNK);
        const mt_u16 *kc = kv_s + buf * KV_CHUNK * KS_STRIDE;

        /* partial S over this wave's d-slice, all keys of the chunk */
        {
            mt_f32x4 s_acc[MT_TILES][SNA];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SNA; j++) s_acc[m][j] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};
#if defined(MT_HAVE_MFMA_K32)
            /* gfx950: two k-steps per 16x16x32 instruction.  A lane's eight
             * A values are its four of step ks then its four of step ks + 1,
             * its eight B values the same d's of its key: the instruction
             * sums over all 32 k whatever d each one stands for, so A and B
             * only have to pair them alike.  An odd last step takes 16x16x16. */
            constexpr int KS_PAIRED = KSA / 2 * 2;
#pragma unroll
            for (int ks = 0; ks < KS_PAIRED; ks += 2)
#pragma unroll
                for (int j = 0; j < SNA; j++) {
                    const mt_u16 *kr = kc + (j * 16 + l16) * KS_STRIDE + (wave * KSA + ks) * 16 + l4 * 4;
                    const mt_u32x2 b0 = *(const mt_u32x2 *)kr, b1 = *(const mt_u32x2 *)(kr + 16);
                    const mt_u32x4 bk = {b0[0], b0[1], b1[0], b1[1]};
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++)
                        s_acc[m][j] = mt_mfma_16x16x32(
                            s_acc[m][j], (mt_u32x4){qf[m][ks][0], qf[m][ks][1], qf[m][ks + 1][0], qf[m][ks + 1][1]}, bk,
                            MMA_FP16);
                }
#else
            constexpr int KS_PAIRED = 0;
#endif
#pragma unroll
            for (int ks = KS_PAIRED; ks < KSA; ks++)
#pragma unroll
                for (int j = 0; j < SNA; j++) {
                    const mt_u32x2 bk = *(const mt_u32x2 *)(kc + (j * 16 + l16) * KS_STRIDE + (wave * KSA + ks) * 16 + l4 * 4);
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++) s_acc[m][j] = mt_mfma_16x16x16(s_acc[m][j], qf[m][ks], bk, MMA_FP16);
                }
            float *sp = s_part + wave * (TILE_Q * SP_STRIDE);
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SNA; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) sp[(m * 16 + l4 * 4 + e) * SP_STRIDE + j * 16 + l16] = s_acc[m][j][e];
        }
        __syncthreads();

        /* online softmax of row srow over keys skey .. skey + KPL - 1 */
        {
            float s[KPL];
            float mx = MT_NEG_INF;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                float v = 0.0f;
#pragma unroll
                for (int d = 0; d < NWV; d++) v += s_part[(d * TILE_Q + srow) * SP_STRIDE + skey + e];
                s[e] = k0 + skey + e < slim ? v * s_scale : MT_NEG_INF;
                mx = fmaxf(mx, s[e]);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) mx = fmaxf(mx, mt_shfl_xor(mx, o));
            const float mn = fmaxf(m_run, mx);
            const float alpha = m_run == MT_NEG_INF ? 0.0f : mt_exp2f(m_run - mn);
            float ps = 0.0f;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                const float p = s[e] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e] - mn);
                ps += p;
                p_s[srow * P_STRIDE + skey + e] = to_mma(p);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) ps += mt_shfl_xor(ps, o);
            l_run = l_run * alpha + ps;
            m_run = mn;
            if (lane % LPR == 0) red[srow] = alpha;
        }
        __syncthreads(); /* P and alpha complete */

        /* O = O * alpha + P V over this wave's columns */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            float a[4];
#pragma unroll
            for (int e = 0; e < 4; e++) a[e] = red[m * 16 + l4 * 4 + e];
#pragma unroll
            for (int t = 0; t < ON; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[m][t][e] *= a[e];
        }
#if defined(MT_HAVE_MFMA_K32)
        /* gfx950: 32 keys per instruction, in the CDNA4 16x16x32 operand
         * layout (AMD Instinct MI355X ISA, matrix operand layout;
         * composable_kernel's xdlops tables; the prelude's mt_mfma_16x16x32):
         * lane l holds A = P[l % 16][8 * (l / 16) + i], its row's eight
         * consecutive keys (one 16-byte LDS read), and B = V[8 * (l / 16) +
         * i][l % 16], i = 0..7.  A lone last 16-key tile takes 16x16x16. */
        constexpr int PV_PAIRED = SNA / 2 * 2;
#pragma unroll
        for (int ks = 0; ks < PV_PAIRED; ks += 2) {
            mt_u32x4 pa[MT_TILES];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++) pa[m] = *(const mt_u32x4 *)(p_s + (m * 16 + l16) * P_STRIDE + ks * 16 + l4 * 8);
            const mt_u16 *v_rows = kc + (ks * 16 + l4 * 8) * KS_STRIDE + wave * CPW + l16;
#pragma unroll
            for (int t = 0; t < ON; t++) {
                const mt_u16 *v = v_rows + t * 16;
                mt_u32x4 bv;
#pragma unroll
                for (int e = 0; e < 4; e++) bv[e] = (mt_u32)v[2 * e * KS_STRIDE] | ((mt_u32)v[(2 * e + 1) * KS_STRIDE] << 16);
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) acc[m][t] = mt_mfma_16x16x32(acc[m][t], pa[m], bv, MMA_FP16);
            }
        }
#else
        constexpr int PV_PAIRED = 0;
#endif
#pragma unroll
        for (int ks = PV_PAIRED; ks < SNA; ks++) {
            mt_u32x2 pa[MT_TILES];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++) pa[m] = *(const mt_u32x2 *)(p_s + (m * 16 + l16) * P_STRIDE + ks * 16 + l4 * 4);
            const mt_u16 *v_rows = kc + (ks * 16 + l4 * 4) * KS_STRIDE + wave * CPW + l16;
#pragma unroll
            for (int t = 0; t < ON; t++) {
                const mt_u16 *v = v_rows + t * 16;
                const mt_u32x2 bv = {(mt_u32)v[0] | ((mt_u32)v[KS_STRIDE] << 16),
                                     (mt_u32)v[2 * KS_STRIDE] | ((mt_u32)v[3 * KS_STRIDE] << 16)};
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) acc[m][t] = mt_mfma_16x16x16(acc[m][t], pa[m], bv, MMA_FP16);
            }
        }
        if (more) store(buf ^ 1); /* its last readers finished before this chunk's first barrier */
    }

    /* the owners publish 1/sum per row and write lse */
    __syncthreads();
    if (lane % LPR == 0) {
        red[srow] = l_run > 0.0f ? kv_scale / l_run : 0.0f;
        if (row0 + srow < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + srow, row_lse(m_run, l_run));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = m * 16 + l4 * 4 + e, grow = row0 + r;
            if (grow >= rows) continue;
            const float inv = red[r];
#pragma unroll
            for (int t = 0; t < ON; t++) {
                store_o(prm, out, o_part, b, split, rows, grow, wave * CPW + t * 16 + l16, acc[m][t][e] * inv);
            }
        }
    } /* items */
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const MT_GRID_CONST mt_decode_params p) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), views_of(p));
}
