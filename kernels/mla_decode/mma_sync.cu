/*
 * mma_sync.cu - the matrix-unit path on NVIDIA (mma = 1, warps of 32,
 * sm_80+): mma.sync m16n8k16 with a cp.async pipeline of KV chunks.
 */
/* ---- the matrix-unit path (NVIDIA) ---------------------------------------
 * Shapes: MT_TILES = TILE_Q / 16 row tiles of 16 rows; NW warps.  Every
 * warp covers all TILE_Q rows in the two matrix products, so one
 * work-group reads each KV tile once for all of its rows: with
 * TILE_Q >= N*Sq a request's KV is read once.
 *
 * Scores S = Q K^T: the warps form a DG x KG grid.  Warp w takes the
 * d-slice dg = w % DG (D/DG dims) and the keys kg = w / DG (KPW keys of the
 * chunk).  Its slice of Q stays in registers for the whole work-group (Q is
 * read from shared memory once, not once per chunk and warp), and every K
 * element of a chunk is read from shared memory by exactly one warp.  The DG
 * partial scores of a (row, key) meet in shared memory (s_part).
 * Softmax: warp w owns rows w*RPW .. w*RPW+RPW-1; LPR lanes share a row and
 * take KPL consecutive keys each, so the row max and sum are warp shuffles
 * (no cross-warp exchange).  The owner keeps the running max and sum of its
 * rows and publishes the rescale factor alpha per row.
 * O += P V: warp w owns output columns w*CPW ..; it reads all of P.
 *
 * The matrix-unit operand type ("mma type"): bf16 when KV is bf16, fp16
 * when KV is fp16 or fp8 (fp8 e4m3 converts exactly to fp16 in one
 * instruction, cvt.rn.f16x2.e4m3x2).  q is converted to the mma type once,
 * when the work-group loads it; bf16 q going to fp16 is first multiplied by
 * a power of two chosen from the tile's largest |q| so nothing overflows
 * (the factor is divided out of the scores exactly).
 *
 * Shared memory (16-bit rows padded by 8 elements so the 8 row addresses of
 * an ldmatrix fall in distinct banks):
 *   q_s     [TILE_Q][D+8]                 mma type; once Q is in registers
 *   s_part  [DG][TILE_Q][KV_CHUNK+8] f32  the same bytes: partial scores
 *   stage   [KV_STAGES][KV_CHUNK][D+8]    KV as stored (16-bit KV), filled
 *           [KV_STAGES][KV_CHUNK][D]      by cp.async  (fp8 KV: raw bytes)
 *   kv16    [KV_CHUNK][D+8]               fp8 KV only: the chunk converted
 *   p_s     [TILE_Q][KV_CHUNK+8]          probabilities, mma type
 *   red     [NW][TILE_Q] floats           alpha per row; at the end 1/sum
 *   row_limit [TILE_Q] ints, q_factor
 * Pipeline: KV_STAGES-1 chunks are in flight while one is computed
 * (cp.async groups); three barriers per chunk (four with fp8).
 */
#define NW (BLOCK_THREADS / 32)
#define MT_TILES (TILE_Q / 16)
#define KSTEPS (D / 16)              /* k-steps of 16 over D */
#define DG (KSTEPS % 4 == 0 ? 4 : 2) /* d-slices of the score step (D % 32 == 0 is required) */
#define KG (NW / DG)                 /* key groups of the score step */
#define KSD (KSTEPS / DG)            /* k-steps per d-slice */
#define KPW (KV_CHUNK / KG)          /* keys per warp in the score step: 8 .. 64 */
#define SN (KPW / 8)                 /* n8 tiles of keys per warp */
#define S_CHAINS (MT_TILES * SN <= 2 ? 2 : 1) /* independent accumulators per score tile */
#define RPW (TILE_Q / NW)            /* softmax: rows per warp */
#define LPR (32 / RPW)               /* softmax: lanes per row */
#define KPL (KV_CHUNK / LPR)         /* softmax: consecutive keys per lane (even) */
#define CPW (DL / NW)                /* output columns per warp */
#define ON (CPW / 8)                 /* n8 tiles of columns per warp (even) */
#define QS_STRIDE (D + 8)
#define KS_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define SP_STRIDE (KV_CHUNK + 8)     /* floats; 8 rows of a fragment store hit distinct banks */
#ifndef KV_STAGES
#define KV_STAGES 2
#endif
/* q_s and s_part share the first region of shared memory */
#define QS_BYTES (TILE_Q * QS_STRIDE * 2)
#define SP_BYTES (DG * TILE_Q * SP_STRIDE * 4)
#define REGION0_BYTES (QS_BYTES > SP_BYTES ? QS_BYTES : SP_BYTES)

__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched,
                const mt_views prm) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    mt_u16 *q_s = (mt_u16 *)smem_bytes;
    float *s_part = (float *)smem_bytes;
    unsigned char *stage_s = smem_bytes + REGION0_BYTES;
#if KV_FP8
    const int stage_bytes = KV_CHUNK * D;
    mt_u16 *kv16 = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
    mt_u16 *p_s = kv16 + KV_CHUNK * KS_STRIDE;
#else
    const int stage_bytes = KV_CHUNK * KS_STRIDE * 2;
    mt_u16 *p_s = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
#endif
    float *red = (float *)(p_s + TILE_Q * P_STRIDE);
    int *row_limit = (int *)(red + NW * TILE_Q); /* then one float: the q factor (bf16 q, fp16 mma) */

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, quad = lane & 3;
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item is done with shared memory */
    const int *pages = block_table + (size_t)b * max_blocks;

    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* q -> shared memory in the mma type, 16 bytes (8 elements) per piece.
     * When q already has the mma type it goes by cp.async (its own group,
     * committed before the KV stages); otherwise all of a thread's pieces
     * are loaded before any is converted, so their latencies overlap. */
    const int q_rows_here = min(TILE_Q, rows - row0);
#define Q_PIECES (TILE_Q * (D / 8))
#define Q_PER_THREAD ((Q_PIECES + BLOCK_THREADS - 1) / BLOCK_THREADS)
#if !Q_CONVERT
    const float q_factor = 1.0f;
    for (int i = tid; i < Q_PIECES; i += BLOCK_THREADS) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + r * QS_STRIDE + u * 8, valid ? q_at(prm, q, b, row0 + r, u * 8) : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
#else
    uint4 qv[Q_PER_THREAD];
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        qv[j] = make_uint4(0, 0, 0, 0);
        if (i < Q_PIECES && r < q_rows_here) qv[j] = *(const uint4 *)q_at(prm, q, b, row0 + r, u * 8);
    }
#if Q_DTYPE == 0
    /* bf16 q into fp16: the tile's largest |q| picks the factor */
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++)
        amax = fmaxf(fmaxf(bf16_pair_absmax(qv[j].x), bf16_pair_absmax(qv[j].y)),
                     fmaxf(fmaxf(bf16_pair_absmax(qv[j].z), bf16_pair_absmax(qv[j].w)), amax));
    amax = mt_warp_max(amax);
    if (lane == 0) red[warp] = amax;
    __syncthreads();
    float *q_factor_s = (float *)(row_limit + TILE_Q);
    if (tid == 0) {
        float m = 0.0f;
        for (int w = 0; w < NW; w++) m = fmaxf(m, red[w]);
        q_factor_s[0] = q_fp16_factor(m);
    }
    __syncthreads();
    const float q_factor = q_factor_s[0];
#else
    const float q_factor = 1.0f;
#endif
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        if (i >= Q_PIECES) break;
        *(uint4 *)(q_s + r * QS_STRIDE + u * 8) = make_uint4(q_pair_to_mma(qv[j].x, q_factor), q_pair_to_mma(qv[j].y, q_factor),
                                                           q_pair_to_mma(qv[j].z, q_factor), q_pair_to_mma(qv[j].w, q_factor));
    }
#endif
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);

    /* Stage keys [k0, k0 + KV_CHUNK) into stage buffer `buf`.  Each thread
     * takes one key row, my_row = tid / TPR, and every TPR-th 16-byte piece
     * of it; its page comes from the block table one chunk ahead
     * (page_of), so that load's latency is hidden behind a chunk of work.
     * Keys past tile_end are zero-filled so P V never meets stale data. */
#define TPR (BLOCK_THREADS / KV_CHUNK)
#define ROW_PIECES (D * (int)sizeof(kv_t) / 16)
    const int my_row = tid / TPR;
    auto page_of = [&](int k0) { return k0 + my_row < tile_end ? pages[(k0 + my_row) / PAGE_SIZE] : 0; };
    auto load_chunk = [&](int k0, int buf, int page) {
        const int key = k0 + my_row;
        const bool valid = key < tile_end;
        const unsigned char *src = (const unsigned char *)kv;
        if (valid) src = (const unsigned char *)(kv + ((size_t)page * PAGE_SIZE + key % PAGE_SIZE) * D);
#if KV_FP8
        unsigned char *dst = stage_s + buf * stage_bytes + my_row * D;
#else
        unsigned char *dst = stage_s + buf * stage_bytes + my_row * KS_STRIDE * 2;
#endif
#pragma unroll
        for (int i = 0; i < (ROW_PIECES + TPR - 1) / TPR; i++) {
            const int u = tid % TPR + i * TPR;
            if (ROW_PIECES % TPR == 0 || u < ROW_PIECES)
                mt_cp_async16(dst + u * 16, valid ? src + u * 16 : src, valid ? 16 : 0);
        }
    };

    const float s_scale = scale * kv_scale * LOG2E / q_factor;
    const int n_chunks = tile_end > k_begin ? (tile_end - k_begin + KV_CHUNK - 1) / KV_CHUNK : 0;

    int prologue_pages[KV_STAGES - 1];
#pragma unroll
    for (int s = 0; s < KV_STAGES - 1; s++) prologue_pages[s] = page_of(k_begin + s * KV_CHUNK);
#pragma unroll
    for (int s = 0; s < KV_STAGES - 1; s++) {
        if (s < n_chunks) load_chunk(k_begin + s * KV_CHUNK, s, prologue_pages[s]);
        mt_cp_async_commit();
    }
    int next_page = page_of(k_begin + (KV_STAGES - 1) * KV_CHUNK); /* for the chunk issued next */
    /* ldmatrix lane roles: A operand (16x16, row-major), K as B operand
     * (two n8 tiles x one k-step: keys 0-7 / 8-15, d 0-7 / 8-15), V as B
     * operand (16 keys x 16 columns, transposed) */
    const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
    const int bk_row = (lane & 7) + ((lane >> 4) & 1) * 8, bk_col = ((lane >> 3) & 1) * 8;
    const int bv_row = (lane & 7) + ((lane >> 3) & 1) * 8, bv_col = (lane >> 4) * 8;
    const int dg = warp % DG, kg = warp / DG;

    /* this warp's slice of Q, in registers for the whole work-group; q's
     * cp.async group is the oldest, so waiting until KV_STAGES - 1 groups
     * remain covers it */
    mt_cp_async_wait<KV_STAGES - 1>();
    __syncthreads();
    mt_u32 qf[MT_TILES][KSD][4];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSD; ks++)
            mt_ldmatrix_x4(qf[m][ks], q_s + (m * 16 + a_row) * QS_STRIDE + (dg * KSD + ks) * 16 + a_col);
    /* (q_s is overwritten by s_part only after the first chunk's barrier) */

    /* softmax role: row `srow` of the tile, keys skey .. skey + KPL - 1 */
    const int srow = warp * RPW + lane / LPR, skey = (lane % LPR) * KPL;
    const int slim = min(row_limit[srow], tile_end);
    float m_run = MT_NEG_INF, l_run = 0.0f; /* running max (log2 domain) and sum of row srow */

    float acc_o[MT_TILES][ON][4];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int t = 0; t < ON; t++) acc_o[m][t][0] = acc_o[m][t][1] = acc_o[m][t][2] = acc_o[m][t][3] = 0.0f;

    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = k_begin + ci * KV_CHUNK, buf = ci % KV_STAGES;
        mt_cp_async_wait<KV_STAGES - 2>();
        __syncthreads(); /* chunk ci has landed for every thread; chunk ci-1 is consumed */
        if (ci + KV_STAGES - 1 < n_chunks) {
            load_chunk(k0 + (KV_STAGES - 1) * KV_CHUNK, (ci + KV_STAGES - 1) % KV_STAGES, next_page);
            next_page = page_of(k0 + KV_STAGES * KV_CHUNK);
        }
        mt_cp_async_commit();
#if KV_FP8
        {
            const unsigned char *raw = stage_s + buf * stage_bytes;
            for (int i = tid; i < KV_CHUNK * (D / 8); i += BLOCK_THREADS) {
                int c = i / (D / 8), u = i - c * (D / 8);
                uint2 v = *(const uint2 *)(raw + c * D + u * 8);
                uint4 o = make_uint4(kv_fp8x2_to_f16x2((mt_u16)(v.x & 0xffffu)), kv_fp8x2_to_f16x2((mt_u16)(v.x >> 16)),
                                     kv_fp8x2_to_f16x2((mt_u16)(v.y & 0xffffu)), kv_fp8x2_to_f16x2((mt_u16)(v.y >> 16)));
                *(uint4 *)(kv16 + c * KS_STRIDE + u * 8) = o;
            }
        }
        __syncthreads();
        const mt_u16 *kv_c = kv16;
#else
        const mt_u16 *kv_c = (const mt_u16 *)(stage_s + buf * stage_bytes);
#endif

        /* partial S over this warp's d-slice for its KPW keys; S_CHAINS
         * independent accumulator chains where the warp has few tiles */
        {
            float s_acc[S_CHAINS][MT_TILES][SN][4];
#pragma unroll
            for (int h = 0; h < S_CHAINS; h++)
#pragma unroll
                for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                    for (int j = 0; j < SN; j++) s_acc[h][m][j][0] = s_acc[h][m][j][1] = s_acc[h][m][j][2] = s_acc[h][m][j][3] = 0.0f;
            const mt_u16 *k_warp = kv_c + (kg * KPW) * KS_STRIDE + dg * KSD * 16;
#pragma unroll
            for (int ks = 0; ks < KSD; ks++) {
#pragma unroll
                for (int j = 0; j < SN; j += 2) {
                    mt_u32 bk[4];
#if SN % 2 == 0
                    mt_ldmatrix_x4(bk, k_warp + (j * 8 + bk_row) * KS_STRIDE + ks * 16 + bk_col);
#else
                    mt_ldmatrix_x2(bk, k_warp + (j * 8 + (lane & 7)) * KS_STRIDE + ks * 16 + bk_col);
#endif
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++) {
                        mt_mma_16816(s_acc[ks % S_CHAINS][m][j], qf[m][ks], &bk[0], MMA_FP16);
#if SN % 2 == 0
                        mt_mma_16816(s_acc[ks % S_CHAINS][m][j + 1], qf[m][ks], &bk[2], MMA_FP16);
#endif
                    }
                }
            }
            float *sp = s_part + dg * (TILE_Q * SP_STRIDE) + kg * KPW + quad * 2;
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SN; j++) {
#pragma unroll
                    for (int h = 1; h < S_CHAINS; h++)
#pragma unroll
                        for (int e = 0; e < 4; e++) s_acc[0][m][j][e] += s_acc[h][m][j][e];
                    *(float2 *)(sp + (m * 16 + g) * SP_STRIDE + j * 8) = make_float2(s_acc[0][m][j][0], s_acc[0][m][j][1]);
                    *(float2 *)(sp + (m * 16 + g + 8) * SP_STRIDE + j * 8) = make_float2(s_acc[0][m][j][2], s_acc[0][m][j][3]);
                }
        }
        __syncthreads();

        /* online softmax of row srow over keys skey..: sum the d-slices,
         * scale, mask; max and sum by shuffles among the row's LPR lanes */
        {
            float s[KPL];
#pragma unroll
            for (int e = 0; e < KPL; e += 2) {
                float2 v = *(const float2 *)(s_part + srow * SP_STRIDE + skey + e);
#pragma unroll
                for (int d = 1; d < DG; d++) {
                    const float2 w = *(const float2 *)(s_part + d * (TILE_Q * SP_STRIDE) + srow * SP_STRIDE + skey + e);
                    v.x += w.x, v.y += w.y;
                }
                s[e] = v.x, s[e + 1] = v.y;
            }
            float mx = MT_NEG_INF;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                s[e] = k0 + skey + e < slim ? s[e] * s_scale : MT_NEG_INF;
                mx = fmaxf(mx, s[e]);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) mx = fmaxf(mx, mt_shfl_xor(mx, o));
            const float mn = fmaxf(m_run, mx);
            const float alpha = m_run == MT_NEG_INF ? 0.0f : mt_exp2f(m_run - mn);
            float ps = 0.0f;
#pragma unroll
            for (int e = 0; e < KPL; e += 2) {
                const float p0 = s[e] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e] - mn);
                const float p1 = s[e + 1] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e + 1] - mn);
                ps += p0 + p1;
                *(mt_u32 *)(p_s + srow * P_STRIDE + skey + e) = pack_mma(p0, p1);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) ps += mt_shfl_xor(ps, o);
            l_run = l_run * alpha + ps;
            m_run = mn;
            if (lane % LPR == 0) red[srow] = alpha;
        }
        __syncthreads(); /* P and alpha complete; both may be rewritten after the next top barrier */

        /* O = O * alpha + P V over this warp's columns (the rescale is
         * skipped while no row's max moved: alpha is then exactly 1) */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            const float a0 = red[m * 16 + g], a1 = red[m * 16 + g + 8];
            if (__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) {
#pragma unroll
                for (int t = 0; t < ON; t++) {
                    acc_o[m][t][0] *= a0, acc_o[m][t][1] *= a0;
                    acc_o[m][t][2] *= a1, acc_o[m][t][3] *= a1;
                }
            }
        }
        const mt_u16 *v_warp = kv_c + warp * CPW;
#pragma unroll
        for (int ks = 0; ks < KV_CHUNK; ks += 16) {
            mt_u32 a[MT_TILES][4];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++) mt_ldmatrix_x4(a[m], p_s + (m * 16 + a_row) * P_STRIDE + ks + a_col);
#pragma unroll
            for (int t = 0; t < ON; t += 2) {
                mt_u32 bv[4];
                mt_ldmatrix_x4_trans(bv, v_warp + (ks + bv_row) * KS_STRIDE + t * 8 + bv_col);
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) {
                    mt_mma_16816(acc_o[m][t], a[m], &bv[0], MMA_FP16);
                    mt_mma_16816(acc_o[m][t + 1], a[m], &bv[2], MMA_FP16);
                }
            }
        }
    }

    /* the owners publish 1/sum per row and write lse */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit */
    __syncthreads();
    if (lane % LPR == 0) {
        red[srow] = l_run > 0.0f ? kv_scale / l_run : 0.0f;
        if (row0 + srow < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + srow, row_lse(m_run, l_run));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++) {
        const float inv0 = red[m * 16 + g], inv1 = red[m * 16 + g + 8];
        const int g0 = row0 + m * 16 + g, g1 = g0 + 8;
#pragma unroll
        for (int t = 0; t < ON; t++) {
            const int col = warp * CPW + t * 8 + quad * 2;
            if (g0 < rows) store_o_pair(prm, out, o_part, b, split, rows, g0, col, acc_o[m][t][0] * inv0, acc_o[m][t][1] * inv0);
            if (g1 < rows) store_o_pair(prm, out, o_part, b, split, rows, g1, col, acc_o[m][t][2] * inv1, acc_o[m][t][3] * inv1);
        }
    }
    } /* items */
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const MT_GRID_CONST mt_decode_params p) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), views_of(p));
}
