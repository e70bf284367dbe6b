/*
 * mla_decode.cu - MLA decode attention with split-KV, plain SIMT arithmetic
 * (variant family "mla_decode_simt"; description in mla_decode.c).
 *
 * The math (DESIGN.md section 2), for request b, query token t, head n:
 *   keys j < L_b - Sq + t + 1                        (causal among new tokens)
 *   s_j = scale * dot(q[b,t,n,:D], kv[j,:D])
 *   out[b,t,n,:Dl] = sum_j softmax(s)_j * kv[j,:Dl]
 *   lse[b,t,n] = logsumexp_j s_j                     (natural log, fp32)
 * A row with no keys (L_b < Sq makes the first Sq - L_b tokens keyless)
 * gets out = 0 and lse = -inf.
 *
 * Work decomposition: one work-group per (query-row tile, split, request).
 * The query rows of a request are its Sq*N (token, head) pairs in q's own
 * order (row = t*N + n); a tile is TILE_Q consecutive rows, so a tile may
 * hold several tokens, each with its own causal limit.  The request's keys
 * are cut into NUM_SPLITS ranges whose boundaries fall on multiples of
 * KV_GRANULARITY.  With NUM_SPLITS == 1 the kernel writes out/lse directly;
 * otherwise each split writes a partial (o_i normalised, lse_i) to the
 * workspace and mla_reduce merges them:
 *   lse = log(sum_i exp(lse_i)),  o = sum_i exp(lse_i - lse) * o_i.
 *
 * Tiles and where they live (all fp32):
 *   q_tile    [TILE_Q][D]           shared   query rows, pre-scaled by scale*log2(e)
 *   kv_tile   [KV_CHUNK][D+1]       shared   keys (and values: the first Dl of each)
 *                                            +1 pad so column reads miss no bank
 *   p_tile    [TILE_Q][KV_CHUNK]    shared   scores, then probabilities
 *   row_max, row_sum, row_alpha     shared   online-softmax state per row (log2 domain)
 *   acc_o     [TILE_Q][DL/BLOCK_THREADS]  registers: each thread owns output
 *                                            columns tid, tid+BLOCK_THREADS, ...
 * Pipeline per KV chunk: load (gather through the block table, convert to
 * fp32) -> scores -> online softmax (one warp per row) -> acc_o update.  No
 * asynchronous copies: this family is the simple, always-correct baseline.
 *
 * MMA=1 selects the matrix-unit path (NVIDIA sm_80+, mma.sync m16n8k16):
 *   q_tile    [16][D+8]          shared   16-bit, the query rows as loaded
 *   kv_tile   [2][64][D+8]       shared   two stages: cp.async fills one while
 *                                         the other is used (when KV has q's
 *                                         dtype; other KV dtypes are converted
 *                                         through registers, synchronously)
 *   p_tile    [16][64+8]         shared   probabilities, q's 16-bit type
 *   scores    [16][16] per warp  registers: warp w takes keys 16w..16w+15
 *   acc_o     [16][Dl/4] per warp registers: warp w owns columns w*Dl/4...
 * Per chunk: S = Q K^T on the matrix units, online softmax with the row
 * max / sum combined across the 4 warps through shared memory, P to shared
 * memory, O += P V with V fragments read by ldmatrix.trans.  The +8 padding
 * makes fragment loads and ldmatrix rows hit distinct banks.  Requires
 * TILE_Q = 16, BLOCK_THREADS = 128, KV_CHUNK = 64 (the description checks).
 *
 * Compile-time parameters (the variant; see mla_decode.c for ranges):
 *   TILE_Q, KV_GRANULARITY, NUM_SPLITS, BLOCK_THREADS, KV_CHUNK, MMA
 * and the problem's static facts: D, DL, PAGE_SIZE, Q_DTYPE, KV_DTYPE
 * (0 = bf16, 1 = fp16, 2 = fp8 e4m3).
 */
#ifndef D
#define D 576
#endif
#ifndef DL
#define DL 512
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE 64
#endif
#ifndef Q_DTYPE
#define Q_DTYPE 0
#endif
#ifndef KV_DTYPE
#define KV_DTYPE 0
#endif
#ifndef TILE_Q
#define TILE_Q 16
#endif
#ifndef KV_GRANULARITY
#define KV_GRANULARITY 64
#endif
#ifndef NUM_SPLITS
#define NUM_SPLITS 1
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef KV_CHUNK
#define KV_CHUNK 32
#endif
#ifndef MMA
#define MMA 0
#endif

#define KV_STRIDE (D + 1)
#define COLS_PER_THREAD ((DL + BLOCK_THREADS - 1) / BLOCK_THREADS)
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

#if KV_DTYPE == 2
typedef mt_u8 kv_t;
#else
typedef mt_u16 kv_t;
#endif

__device__ __forceinline__ float load_q(const mt_u16 *p) {
#if Q_DTYPE == 0
    return mt_bf16_to_f32(*p);
#else
    return mt_f16_to_f32(*p);
#endif
}

__device__ __forceinline__ float load_kv(const kv_t *p) {
#if KV_DTYPE == 0
    return mt_bf16_to_f32(*p);
#elif KV_DTYPE == 1
    return mt_f16_to_f32(*p);
#else
    return mt_fp8e4m3_to_f32(*p);
#endif
}

__device__ __forceinline__ mt_u16 store_out(float v) {
#if Q_DTYPE == 0
    return mt_f32_to_bf16(v);
#else
    return mt_f32_to_f16(v);
#endif
}

/* Bytes of dynamic shared memory the host must pass (kept equal to
 * mt_mla_decode_shared_bytes in mla_decode.c). */
#define SMEM_FLOATS (TILE_Q * D + KV_CHUNK * KV_STRIDE + TILE_Q * KV_CHUNK + 4 * TILE_Q)

#if !MMA
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const mt_u16 *__restrict__ q,          /* [B, Sq, N, D] */
           const kv_t *__restrict__ kv,           /* [blocks, PAGE_SIZE, D] */
           const int *__restrict__ block_table,   /* [B, max_blocks] */
           const int *__restrict__ seq_lens,      /* [B] */
           mt_u16 *__restrict__ out,              /* [B, Sq, N, DL] */
           float *__restrict__ lse,               /* [B, Sq, N] */
           float *__restrict__ o_part,            /* [B, NUM_SPLITS, Sq*N, DL] */
           float *__restrict__ lse_part,          /* [B, NUM_SPLITS, Sq*N] */
           int n_heads, int sq, int max_blocks, float scale, float kv_scale) {
    extern __shared__ float smem[];
    float *q_tile = smem;
    float *kv_tile = q_tile + TILE_Q * D;
    float *p_tile = kv_tile + KV_CHUNK * KV_STRIDE;
    float *row_max = p_tile + TILE_Q * KV_CHUNK;
    float *row_sum = row_max + TILE_Q;
    float *row_alpha = row_sum + TILE_Q;
    int *row_limit = (int *)(row_alpha + TILE_Q);

    const int tid = threadIdx.x;
    const int b = blockIdx.z, split = blockIdx.y;
    const int rows = sq * n_heads;
    const int row0 = blockIdx.x * TILE_Q;
    const int len = seq_lens[b];

    /* this split's keys: boundaries on multiples of KV_GRANULARITY */
    int per_split = (len + NUM_SPLITS - 1) / NUM_SPLITS;
    per_split = (per_split + KV_GRANULARITY - 1) / KV_GRANULARITY * KV_GRANULARITY;
    const int k_begin = min(len, split * per_split);
    const int k_end = min(len, k_begin + per_split);

    for (int r = tid; r < TILE_Q; r += BLOCK_THREADS) {
        int row = row0 + r;
        int limit = 0;
        if (row < rows) limit = max(0, min(len, len - sq + row / n_heads + 1));
        row_limit[r] = limit;
        row_max[r] = MT_NEG_INF;
        row_sum[r] = 0.0f;
    }
    const float q_scale = scale * LOG2E;  /* scores in the log2 domain: exp2 later */
    for (int i = tid; i < TILE_Q * D; i += BLOCK_THREADS) {
        int r = i / D, d = i - r * D;
        int row = row0 + r;
        q_tile[i] = row < rows ? load_q(q + ((size_t)b * rows + row) * D + d) * q_scale : 0.0f;
    }
    __syncthreads();
    int tile_end = 0;
    for (int r = 0; r < TILE_Q; r++) tile_end = max(tile_end, row_limit[r]);
    tile_end = min(tile_end, k_end);

    float acc_o[TILE_Q][COLS_PER_THREAD];
#pragma unroll
    for (int r = 0; r < TILE_Q; r++)
#pragma unroll
        for (int j = 0; j < COLS_PER_THREAD; j++) acc_o[r][j] = 0.0f;

    const int warp = tid / MT_WARP, lane = tid % MT_WARP;
    const int *pages = block_table + (size_t)b * max_blocks;

    for (int k0 = k_begin; k0 < tile_end; k0 += KV_CHUNK) {
        __syncthreads();  /* the previous chunk's readers are done */
        for (int i = tid; i < KV_CHUNK * D; i += BLOCK_THREADS) {
            int c = i / D, d = i - c * D;
            int key = k0 + c;
            float v = 0.0f;
            if (key < tile_end) {
                int page = pages[key / PAGE_SIZE];
                v = load_kv(kv + ((size_t)page * PAGE_SIZE + key % PAGE_SIZE) * D + d) * kv_scale;
            }
            kv_tile[c * KV_STRIDE + d] = v;
        }
        __syncthreads();
        for (int i = tid; i < TILE_Q * KV_CHUNK; i += BLOCK_THREADS) {
            int r = i / KV_CHUNK, c = i - r * KV_CHUNK;
            const float *qr = q_tile + r * D;
            const float *kc = kv_tile + c * KV_STRIDE;
            float s = 0.0f;
#pragma unroll 8
            for (int d = 0; d < D; d++) s += qr[d] * kc[d];
            p_tile[i] = (k0 + c < min(row_limit[r], tile_end)) ? s : MT_NEG_INF;
        }
        __syncthreads();
        for (int r = warp; r < TILE_Q; r += BLOCK_THREADS / MT_WARP) {
            float m = MT_NEG_INF;
            for (int c = lane; c < KV_CHUNK; c += MT_WARP) m = fmaxf(m, p_tile[r * KV_CHUNK + c]);
            m = mt_warp_max(m);
            float m_old = row_max[r];
            float m_new = fmaxf(m_old, m);
            float sum = 0.0f;
            for (int c = lane; c < KV_CHUNK; c += MT_WARP) {
                float s = p_tile[r * KV_CHUNK + c];
                float e = (s == MT_NEG_INF) ? 0.0f : mt_exp2f(s - m_new);
                p_tile[r * KV_CHUNK + c] = e;
                sum += e;
            }
            sum = mt_warp_sum(sum);
            if (lane == 0) {
                float alpha = (m_old == MT_NEG_INF) ? 0.0f : mt_exp2f(m_old - m_new);
                row_alpha[r] = alpha;
                row_sum[r] = row_sum[r] * alpha + sum;
                row_max[r] = m_new;
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < COLS_PER_THREAD; j++) {
            int col = tid + j * BLOCK_THREADS;
            if (col < DL) {
#pragma unroll
                for (int r = 0; r < TILE_Q; r++) acc_o[r][j] *= row_alpha[r];
                for (int c = 0; c < KV_CHUNK; c++) {
                    float v = kv_tile[c * KV_STRIDE + col];
#pragma unroll
                    for (int r = 0; r < TILE_Q; r++) acc_o[r][j] += p_tile[r * KV_CHUNK + c] * v;
                }
            }
        }
    }
    __syncthreads();

    /* write: rows with no keys get 0 and -inf */
#pragma unroll
    for (int r = 0; r < TILE_Q; r++) {
        int row = row0 + r;
        if (row >= rows) break;
        float sum = row_sum[r];
        float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
        for (int j = 0; j < COLS_PER_THREAD; j++) {
            int col = tid + j * BLOCK_THREADS;
            if (col >= DL) continue;
            float v = acc_o[r][j] * inv;
#if NUM_SPLITS == 1
            out[((size_t)b * rows + row) * DL + col] = store_out(v);
#else
            o_part[(((size_t)b * NUM_SPLITS + split) * rows + row) * DL + col] = v;
#endif
        }
        if (tid == 0) {
            float l = sum > 0.0f ? (row_max[r] + mt_log2f(sum)) * LN2 : MT_NEG_INF;
#if NUM_SPLITS == 1
            lse[(size_t)b * rows + row] = l;
#else
            lse_part[((size_t)b * NUM_SPLITS + split) * rows + row] = l;
#endif
        }
    }
}


#else /* MMA */

/* ---- the matrix-unit path ------------------------------------------------
 * Shapes: MT_TILES = TILE_Q / 16 row tiles of 16 rows; NW warps.  Each KV
 * chunk of KV_CHUNK keys is split among the warps for the scores (warp w
 * owns keys w*KPW .. w*KPW+KPW-1 of the chunk) and the output columns are
 * split among the warps for P V (warp w owns columns w*CPW ..).  Every warp
 * covers all TILE_Q rows, so one work-group reads each KV tile once for all
 * of its rows: with TILE_Q >= N*Sq a request's KV is read once.
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
 *   q_s     [TILE_Q][D+8]                 mma type
 *   stage   [KV_STAGES][KV_CHUNK][D+8]    KV as stored (16-bit KV), filled
 *           [KV_STAGES][KV_CHUNK][D]      by cp.async  (fp8 KV: raw bytes)
 *   kv16    [KV_CHUNK][D+8]               fp8 KV only: the chunk converted
 *   p_s     [TILE_Q][KV_CHUNK+8]          probabilities, mma type
 *   red     [NW][TILE_Q] floats           per-warp row maxima / sums
 *   row_limit [TILE_Q] ints, q_factor
 * Pipeline: KV_STAGES-1 chunks are in flight while one is computed
 * (cp.async groups); three barriers per chunk (four with fp8).
 */
#define NW (BLOCK_THREADS / 32)
#define MT_TILES (TILE_Q / 16)
#define KPW (KV_CHUNK / NW)          /* keys per warp in the score step: 8 or 16 */
#define SN (KPW / 8)                 /* n8 tiles of keys per warp */
#define CPW (DL / NW)                /* output columns per warp */
#define ON (CPW / 8)                 /* n8 tiles of columns per warp (even) */
#define QS_STRIDE (D + 8)
#define KS_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define MMA_FP16 (KV_DTYPE != 0)
#define KV_FP8 (KV_DTYPE == 2)
#ifndef KV_STAGES
#define KV_STAGES 2
#endif
#define S_CHAINS (MT_TILES * SN <= 2 ? 4 : 2) /* independent accumulators per score tile */

__device__ __forceinline__ mt_u32 pack_mma(float lo, float hi) {
#if MMA_FP16
    return mt_pack_f16x2(lo, hi);
#else
    return mt_pack_bf16x2(lo, hi);
#endif
}
__device__ __forceinline__ mt_u32 pack2_out(float lo, float hi) {
#if Q_DTYPE == 0
    return mt_pack_bf16x2(lo, hi);
#else
    return mt_pack_f16x2(lo, hi);
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    mt_u16 *q_s = (mt_u16 *)smem_bytes;
    unsigned char *stage_s = (unsigned char *)(q_s + TILE_Q * QS_STRIDE);
#if KV_FP8
    const int stage_bytes = KV_CHUNK * D;
    mt_u16 *kv16 = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
    mt_u16 *p_s = kv16 + KV_CHUNK * KS_STRIDE;
#else
    const int stage_bytes = KV_CHUNK * KS_STRIDE * 2;
    mt_u16 *p_s = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
#endif
    float *red = (float *)(p_s + TILE_Q * P_STRIDE);
    int *row_limit = (int *)(red + NW * TILE_Q);
    float *q_factor_s = (float *)(row_limit + TILE_Q);

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, quad = lane & 3;
    const int b = blockIdx.z, split = blockIdx.y;
    const int rows = sq * n_heads;
    const int row0 = blockIdx.x * TILE_Q;
    const int len = seq_lens[b];
    int per_split = (len + NUM_SPLITS - 1) / NUM_SPLITS;
    per_split = (per_split + KV_GRANULARITY - 1) / KV_GRANULARITY * KV_GRANULARITY;
    const int k_begin = min(len, split * per_split);
    const int k_end = min(len, k_begin + per_split);
    const int *pages = block_table + (size_t)b * max_blocks;

    for (int r = tid; r < TILE_Q; r += BLOCK_THREADS) {
        int row = row0 + r;
        row_limit[r] = row < rows ? max(0, min(len, len - sq + row / n_heads + 1)) : 0;
    }

    /* q -> shared memory in the mma type, 16 bytes (8 elements) per piece.
     * When q already has the mma type it goes by cp.async (its own group,
     * committed before the KV stages, so the first wait covers it);
     * otherwise all of a thread's pieces are loaded before any is converted,
     * so their latencies overlap. */
    const mt_u16 *q_rows = q + ((size_t)b * rows + row0) * D;
    const int q_rows_here = min(TILE_Q, rows - row0);
#define Q_PIECES (TILE_Q * (D / 8))
#define Q_PER_THREAD ((Q_PIECES + BLOCK_THREADS - 1) / BLOCK_THREADS)
#define Q_CONVERT ((Q_DTYPE == 0 && MMA_FP16) || (Q_DTYPE == 1 && !MMA_FP16))
#if !Q_CONVERT
    const float q_factor = 1.0f;
    (void)q_factor_s;
    for (int i = tid; i < Q_PIECES; i += BLOCK_THREADS) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + r * QS_STRIDE + u * 8, valid ? q_rows + (size_t)r * D + u * 8 : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
#else
    uint4 qv[Q_PER_THREAD];
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        qv[j] = make_uint4(0, 0, 0, 0);
        if (i < Q_PIECES && r < q_rows_here) qv[j] = *(const uint4 *)(q_rows + (size_t)r * D + u * 8);
    }
#if Q_DTYPE == 0
    /* bf16 q into fp16: scale by 2^k so the tile's largest |q| < 2^15 */
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const mt_u32 w[4] = {qv[j].x, qv[j].y, qv[j].z, qv[j].w};
        for (int e = 0; e < 4; e++)
            amax = fmaxf(amax, fmaxf(fabsf(mt_bf16_to_f32((mt_u16)(w[e] & 0xffffu))), fabsf(mt_bf16_to_f32((mt_u16)(w[e] >> 16)))));
    }
    amax = mt_warp_max(amax);
    if (lane == 0) red[warp] = amax;
    __syncthreads();
    if (tid == 0) {
        float m = 0.0f;
        for (int w = 0; w < NW; w++) m = fmaxf(m, red[w]);
        int k = 0;
        if (m > 0.0f) k = min(126, max(-126, 14 - ilogbf(m)));
        q_factor_s[0] = ldexpf(1.0f, k);
    }
    __syncthreads();
    const float q_factor = q_factor_s[0];
#else
    const float q_factor = 1.0f;
    (void)q_factor_s;
#endif
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        if (i >= Q_PIECES) break;
        mt_u32 w[4] = {qv[j].x, qv[j].y, qv[j].z, qv[j].w};
        for (int e = 0; e < 4; e++)
#if Q_DTYPE == 0
            w[e] = pack_mma(mt_bf16_to_f32((mt_u16)(w[e] & 0xffffu)) * q_factor, mt_bf16_to_f32((mt_u16)(w[e] >> 16)) * q_factor);
#else
            w[e] = pack_mma(mt_f16_to_f32((mt_u16)(w[e] & 0xffffu)), mt_f16_to_f32((mt_u16)(w[e] >> 16)));
#endif
        *(uint4 *)(q_s + r * QS_STRIDE + u * 8) = make_uint4(w[0], w[1], w[2], w[3]);
    }
#endif
    __syncthreads();
    int tile_end = 0;
    for (int r = 0; r < TILE_Q; r++) tile_end = max(tile_end, row_limit[r]);
    tile_end = min(tile_end, k_end);

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
        for (int u = tid % TPR; u < ROW_PIECES; u += TPR)
            mt_cp_async16(dst + u * 16, valid ? src + u * 16 : src, valid ? 16 : 0);
    };

    float acc_o[MT_TILES][ON][4];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int t = 0; t < ON; t++) acc_o[m][t][0] = acc_o[m][t][1] = acc_o[m][t][2] = acc_o[m][t][3] = 0.0f;
    float m_r[MT_TILES][2], l_r[MT_TILES][2];  /* running max (log2 domain) and this warp's share of the sum */
#pragma unroll
    for (int m = 0; m < MT_TILES; m++) m_r[m][0] = m_r[m][1] = MT_NEG_INF, l_r[m][0] = l_r[m][1] = 0.0f;
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
    /* ldmatrix lane roles: A operand (16x16, row-major) and B operand */
    const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
    const int bk_row = lane & 7, bk_col = (lane >> 3) * 8;                          /* K: 8 keys x 32 d */
    const int bv_row = (lane & 7) + ((lane >> 3) & 1) * 8, bv_col = (lane >> 4) * 8; /* V: 16 keys x 16 cols */

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
                uint4 o = make_uint4(mt_cvt_e4m3x2_f16x2((mt_u16)(v.x & 0xffffu)), mt_cvt_e4m3x2_f16x2((mt_u16)(v.x >> 16)),
                                     mt_cvt_e4m3x2_f16x2((mt_u16)(v.y & 0xffffu)), mt_cvt_e4m3x2_f16x2((mt_u16)(v.y >> 16)));
                *(uint4 *)(kv16 + c * KS_STRIDE + u * 8) = o;
            }
        }
        __syncthreads();
        const mt_u16 *kv_c = kv16;
#else
        const mt_u16 *kv_c = (const mt_u16 *)(stage_s + buf * stage_bytes);
#endif

        /* S = Q K^T for this warp's keys.  The d loop is cut into S_CHAINS
         * independent accumulator chains (summed below) so that consecutive
         * products do not wait on each other: with one row tile and one key
         * tile per warp the chain latency, not the units, bounds a chunk. */
        float s_acc[S_CHAINS][MT_TILES][SN][4];
#pragma unroll
        for (int h = 0; h < S_CHAINS; h++)
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SN; j++) s_acc[h][m][j][0] = s_acc[h][m][j][1] = s_acc[h][m][j][2] = s_acc[h][m][j][3] = 0.0f;
        const mt_u16 *k_warp = kv_c + (warp * KPW) * KS_STRIDE;
#pragma unroll
        for (int kk = 0; kk < D; kk += 32) {
            mt_u32 bk[SN][4];
#pragma unroll
            for (int j = 0; j < SN; j++) mt_ldmatrix_x4(bk[j], k_warp + (j * 8 + bk_row) * KS_STRIDE + kk + bk_col);
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) {
                    mt_u32 a[4];
                    mt_ldmatrix_x4(a, q_s + (m * 16 + a_row) * QS_STRIDE + kk + h * 16 + a_col);
#pragma unroll
                    for (int j = 0; j < SN; j++)
                        mt_mma_16816(s_acc[((kk / 16) + h) % S_CHAINS][m][j], a, &bk[j][2 * h], MMA_FP16);
                }
        }
#pragma unroll
        for (int h = 1; h < S_CHAINS; h++)
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SN; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s_acc[0][m][j][e] += s_acc[h][m][j][e];
        /* mask, scale; per-warp row maxima to shared memory */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            const int lim0 = min(row_limit[m * 16 + g], tile_end), lim1 = min(row_limit[m * 16 + g + 8], tile_end);
            float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
#pragma unroll
            for (int j = 0; j < SN; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = k0 + warp * KPW + j * 8 + quad * 2 + e;
                    float v0 = s_acc[0][m][j][e];
                    float v1 = s_acc[0][m][j][2 + e];
                    s_acc[0][m][j][e] = v0 = key < lim0 ? v0 * s_scale : MT_NEG_INF;
                    s_acc[0][m][j][2 + e] = v1 = key < lim1 ? v1 * s_scale : MT_NEG_INF;
                    mx0 = fmaxf(mx0, v0);
                    mx1 = fmaxf(mx1, v1);
                }
            mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 1));
            mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 2));
            mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 1));
            mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 2));
            if (quad == 0) red[warp * TILE_Q + m * 16 + g] = mx0, red[warp * TILE_Q + m * 16 + g + 8] = mx1;
        }
        __syncthreads();
        /* the chunk's row maxima; P = exp2(S - max) to shared memory */
        float alpha[MT_TILES][2];
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            float cm0 = MT_NEG_INF, cm1 = MT_NEG_INF;
#pragma unroll
            for (int w = 0; w < NW; w++)
                cm0 = fmaxf(cm0, red[w * TILE_Q + m * 16 + g]), cm1 = fmaxf(cm1, red[w * TILE_Q + m * 16 + g + 8]);
            const float mn0 = fmaxf(m_r[m][0], cm0), mn1 = fmaxf(m_r[m][1], cm1);
            alpha[m][0] = m_r[m][0] == MT_NEG_INF ? 0.0f : mt_exp2f(m_r[m][0] - mn0);
            alpha[m][1] = m_r[m][1] == MT_NEG_INF ? 0.0f : mt_exp2f(m_r[m][1] - mn1);
            float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
            for (int j = 0; j < SN; j++) {
                float p[4];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    p[e] = s_acc[0][m][j][e] == MT_NEG_INF ? 0.0f : mt_exp2f(s_acc[0][m][j][e] - mn0);
                    p[2 + e] = s_acc[0][m][j][2 + e] == MT_NEG_INF ? 0.0f : mt_exp2f(s_acc[0][m][j][2 + e] - mn1);
                }
                ps0 += p[0] + p[1];
                ps1 += p[2] + p[3];
                const int col = warp * KPW + j * 8 + quad * 2;
                *(mt_u32 *)(p_s + (m * 16 + g) * P_STRIDE + col) = pack_mma(p[0], p[1]);
                *(mt_u32 *)(p_s + (m * 16 + g + 8) * P_STRIDE + col) = pack_mma(p[2], p[3]);
            }
            /* each warp keeps the sum over its own keys; all warps rescale
             * by the same alpha, so the shares add up at the end */
            l_r[m][0] = l_r[m][0] * alpha[m][0] + ps0;
            l_r[m][1] = l_r[m][1] * alpha[m][1] + ps1;
            m_r[m][0] = mn0;
            m_r[m][1] = mn1;
        }
        __syncthreads(); /* P complete; red may be rewritten after the next top barrier */

        /* O = O * alpha + P V over this warp's columns */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++)
#pragma unroll
            for (int t = 0; t < ON; t++) {
                acc_o[m][t][0] *= alpha[m][0], acc_o[m][t][1] *= alpha[m][0];
                acc_o[m][t][2] *= alpha[m][1], acc_o[m][t][3] *= alpha[m][1];
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

    /* the row sums: add the warps' shares */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit (q's group when there were no chunks) */
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++) {
        float s0 = l_r[m][0], s1 = l_r[m][1];
        s0 += mt_shfl_xor(s0, 1);
        s0 += mt_shfl_xor(s0, 2);
        s1 += mt_shfl_xor(s1, 1);
        s1 += mt_shfl_xor(s1, 2);
        if (quad == 0) red[warp * TILE_Q + m * 16 + g] = s0, red[warp * TILE_Q + m * 16 + g + 8] = s1;
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++) {
        float l0 = 0.0f, l1 = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) l0 += red[w * TILE_Q + m * 16 + g], l1 += red[w * TILE_Q + m * 16 + g + 8];
        const float inv0 = l0 > 0.0f ? kv_scale / l0 : 0.0f, inv1 = l1 > 0.0f ? kv_scale / l1 : 0.0f;
        const int g0 = row0 + m * 16 + g, g1 = g0 + 8;
#pragma unroll
        for (int t = 0; t < ON; t++) {
            const int col = warp * CPW + t * 8 + quad * 2;
#if NUM_SPLITS == 1
            if (g0 < rows) *(mt_u32 *)(out + ((size_t)b * rows + g0) * DL + col) = pack2_out(acc_o[m][t][0] * inv0, acc_o[m][t][1] * inv0);
            if (g1 < rows) *(mt_u32 *)(out + ((size_t)b * rows + g1) * DL + col) = pack2_out(acc_o[m][t][2] * inv1, acc_o[m][t][3] * inv1);
#else
            float *part = o_part + ((size_t)b * NUM_SPLITS + split) * rows * DL;
            if (g0 < rows) *(float2 *)(part + (size_t)g0 * DL + col) = make_float2(acc_o[m][t][0] * inv0, acc_o[m][t][1] * inv0);
            if (g1 < rows) *(float2 *)(part + (size_t)g1 * DL + col) = make_float2(acc_o[m][t][2] * inv1, acc_o[m][t][3] * inv1);
#endif
        }
        if (warp == 0 && quad == 0) {
            const float e0 = l0 > 0.0f ? (m_r[m][0] + mt_log2f(l0)) * LN2 : MT_NEG_INF;
            const float e1 = l1 > 0.0f ? (m_r[m][1] + mt_log2f(l1)) * LN2 : MT_NEG_INF;
#if NUM_SPLITS == 1
            if (g0 < rows) lse[(size_t)b * rows + g0] = e0;
            if (g1 < rows) lse[(size_t)b * rows + g1] = e1;
#else
            if (g0 < rows) lse_part[((size_t)b * NUM_SPLITS + split) * rows + g0] = e0;
            if (g1 < rows) lse_part[((size_t)b * NUM_SPLITS + split) * rows + g1] = e1;
#endif
        }
    }
}
#endif /* MMA */

/* The reduce's shape (kept equal to the launch in mla_decode.c): a block of
 * 32 x REDUCE_GROUPS threads takes REDUCE_COLS columns of one row; the 32
 * lanes of a warp take consecutive columns (coalesced), the groups take
 * interleaved subsets of the splits, so every thread has all of its loads
 * (REDUCE_COLS / 32 columns x NUM_SPLITS / REDUCE_GROUPS splits, at most 16)
 * in flight at once: with many splits and a small batch the latency of
 * these L2 reads is the whole cost. */
#define REDUCE_GROUPS (NUM_SPLITS < 8 ? NUM_SPLITS : 8)
#define REDUCE_THREADS (32 * REDUCE_GROUPS)
#define REDUCE_COLS 64
#define REDUCE_CPT (REDUCE_COLS / 32)

/* Merges the NUM_SPLITS partial results of one row.  Grid: (rows, B,
 * ceil(DL / REDUCE_COLS)).  A split that saw no keys has weight 0 and its
 * partial is never written: it is read but not used (select, not multiply,
 * so stale NaN cannot leak in). */
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
mla_reduce(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows) {
    __shared__ float weight[NUM_SPLITS];
    __shared__ float red[REDUCE_GROUPS];
    __shared__ float partial[REDUCE_GROUPS][REDUCE_COLS];
    const int row = blockIdx.x, b = blockIdx.y, tid = threadIdx.x;
    const int lane = tid % 32, group = tid / 32;
    const float *lp = lse_part + (size_t)b * NUM_SPLITS * rows + row;
    /* split weights: exp(lse_i - max), computed by every block (a few loads) */
    float m = MT_NEG_INF;
    for (int s = tid; s < NUM_SPLITS; s += REDUCE_THREADS) m = fmaxf(m, lp[(size_t)s * rows]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, mt_shfl_xor32(m, o));
    if (lane == 0) red[group] = m;
    __syncthreads();
    m = MT_NEG_INF;
    for (int g = 0; g < REDUCE_GROUPS; g++) m = fmaxf(m, red[g]);
    float total = 0.0f;
    for (int s = tid; s < NUM_SPLITS; s += REDUCE_THREADS) {
        const float l = lp[(size_t)s * rows], w = (l == MT_NEG_INF) ? 0.0f : __expf(l - m);
        weight[s] = w;
        total += w;
    }
    for (int o = 16; o > 0; o >>= 1) total += mt_shfl_xor32(total, o);
    __syncthreads(); /* red[] has been read */
    if (lane == 0) red[group] = total;
    __syncthreads();
    total = 0.0f;
    for (int g = 0; g < REDUCE_GROUPS; g++) total += red[g];
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;

    const int col0 = blockIdx.z * REDUCE_COLS;
    const float *base = o_part + ((size_t)b * NUM_SPLITS * rows + row) * DL;
    const size_t split_stride = (size_t)rows * DL;
    float x[NUM_SPLITS / REDUCE_GROUPS][REDUCE_CPT];
#pragma unroll
    for (int i = 0; i < NUM_SPLITS / REDUCE_GROUPS; i++)
#pragma unroll
        for (int c = 0; c < REDUCE_CPT; c++) {
            const int col = col0 + c * 32 + lane;
            x[i][c] = col < DL ? base[(size_t)(group + i * REDUCE_GROUPS) * split_stride + col] : 0.0f;
        }
#pragma unroll
    for (int c = 0; c < REDUCE_CPT; c++) {
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NUM_SPLITS / REDUCE_GROUPS; i++) {
            const float w = weight[group + i * REDUCE_GROUPS];
            acc += w != 0.0f ? w * x[i][c] : 0.0f;
        }
        partial[group][c * 32 + lane] = acc;
    }
    __syncthreads();
    for (int c = tid; c < REDUCE_COLS; c += REDUCE_THREADS) {
        const int col = col0 + c;
        if (col >= DL) continue;
        float acc = 0.0f;
        for (int g = 0; g < REDUCE_GROUPS; g++) acc += partial[g][c];
        out[((size_t)b * rows + row) * DL + col] = store_out(acc * inv);
    }
    if (tid == 0 && blockIdx.z == 0) lse[(size_t)b * rows + row] = total > 0.0f ? m + __logf(total) : MT_NEG_INF;
}
