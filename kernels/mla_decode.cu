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

#define MMA_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define COLS_PER_WARP (DL / 4)
#define N_TILES (COLS_PER_WARP / 8)
#define KV_SAME (KV_DTYPE == Q_DTYPE)
#define IS_FP16 (Q_DTYPE == 1)

__device__ __forceinline__ mt_u16 to_q_type(float v) {
#if Q_DTYPE == 0
    return mt_f32_to_bf16(v);
#else
    return mt_f32_to_f16(v);
#endif
}

__device__ __forceinline__ mt_u32 pack2(float lo, float hi) {
    return (mt_u32)to_q_type(lo) | ((mt_u32)to_q_type(hi) << 16);
}

extern "C" __global__ void __launch_bounds__(128)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale) {
    extern __shared__ float smem[];
    mt_u16 *q_s = (mt_u16 *)smem;
    mt_u16 *kv_s = q_s + 16 * MMA_STRIDE;
    mt_u16 *p_s = kv_s + 2 * KV_CHUNK * MMA_STRIDE;
    float *red_max = (float *)(p_s + 16 * P_STRIDE);
    float *red_sum = red_max + 64;
    int *row_limit = (int *)(red_sum + 64);

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int b = blockIdx.z, split = blockIdx.y;
    const int rows = sq * n_heads;
    const int row0 = blockIdx.x * 16;
    const int len = seq_lens[b];
    int per_split = (len + NUM_SPLITS - 1) / NUM_SPLITS;
    per_split = (per_split + KV_GRANULARITY - 1) / KV_GRANULARITY * KV_GRANULARITY;
    const int k_begin = min(len, split * per_split);
    const int k_end = min(len, k_begin + per_split);
    const int *pages = block_table + (size_t)b * max_blocks;

    if (tid < 16) {
        int row = row0 + tid;
        row_limit[tid] = row < rows ? max(0, min(len, len - sq + row / n_heads + 1)) : 0;
    }
    for (int i = tid; i < 16 * (D / 8); i += 128) {
        int r = i / (D / 8), u = i - r * (D / 8);
        int row = row0 + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row < rows) v = *(const uint4 *)(q + ((size_t)b * rows + row) * D + u * 8);
        *(uint4 *)(q_s + r * MMA_STRIDE + u * 8) = v;
    }
    __syncthreads();
    int tile_end = 0;
    for (int r = 0; r < 16; r++) tile_end = max(tile_end, row_limit[r]);
    tile_end = min(tile_end, k_end);

    /* stage keys [k0, k0 + 64) into buffer buf; keys past tile_end read as 0 */
    auto load_chunk = [&](int k0, int buf) {
        for (int i = tid; i < KV_CHUNK * (D / 8); i += 128) {
            int c = i / (D / 8), u = i - c * (D / 8);
            int key = k0 + c;
            mt_u16 *dst = kv_s + (buf * KV_CHUNK + c) * MMA_STRIDE + u * 8;
            const kv_t *src = kv;
            int valid = key < tile_end;
            if (valid) src = kv + ((size_t)pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE) * D + u * 8;
#if KV_SAME
            mt_cp_async16(dst, src, valid ? 16 : 0);
#else
            mt_u32 packed[4] = {0, 0, 0, 0};
            if (valid)
                for (int e = 0; e < 4; e++) packed[e] = pack2(load_kv(src + 2 * e), load_kv(src + 2 * e + 1));
            *(uint4 *)dst = make_uint4(packed[0], packed[1], packed[2], packed[3]);
#endif
        }
        mt_cp_async_commit();
    };

    float acc_o[N_TILES][4];
#pragma unroll
    for (int t = 0; t < N_TILES; t++) acc_o[t][0] = acc_o[t][1] = acc_o[t][2] = acc_o[t][3] = 0.0f;
    float m_r[2] = {MT_NEG_INF, MT_NEG_INF}, l_r[2] = {0.0f, 0.0f};
    const float s_scale = scale * kv_scale * LOG2E;
    const int r0 = lane >> 2, quad = lane & 3;
    const int n_chunks = tile_end > k_begin ? (tile_end - k_begin + KV_CHUNK - 1) / KV_CHUNK : 0;
    if (n_chunks > 0) load_chunk(k_begin, 0);
    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = k_begin + ci * KV_CHUNK, buf = ci & 1;
        if (ci + 1 < n_chunks) {
            load_chunk(k0 + KV_CHUNK, buf ^ 1);
            mt_cp_async_wait<1>();
        } else {
            mt_cp_async_wait<0>();
        }
        __syncthreads();

        /* S = Q K^T for this warp's 16 keys */
        float s_acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        const mt_u16 *k_base = kv_s + (buf * KV_CHUNK + warp * 16) * MMA_STRIDE;
#pragma unroll 4
        for (int kk = 0; kk < D; kk += 16) {
            const int cc = kk + quad * 2;
            mt_u32 a[4], bq[2][2];
            a[0] = *(const mt_u32 *)(q_s + r0 * MMA_STRIDE + cc);
            a[1] = *(const mt_u32 *)(q_s + (r0 + 8) * MMA_STRIDE + cc);
            a[2] = *(const mt_u32 *)(q_s + r0 * MMA_STRIDE + cc + 8);
            a[3] = *(const mt_u32 *)(q_s + (r0 + 8) * MMA_STRIDE + cc + 8);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const mt_u16 *krow = k_base + (j * 8 + r0) * MMA_STRIDE;
                bq[j][0] = *(const mt_u32 *)(krow + cc);
                bq[j][1] = *(const mt_u32 *)(krow + cc + 8);
                mt_mma_16816(s_acc[j], a, bq[j], IS_FP16);
            }
        }
        /* mask, scale, this warp's row maxima */
        const int lim0 = min(row_limit[r0], tile_end), lim1 = min(row_limit[r0 + 8], tile_end);
        float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = k0 + warp * 16 + j * 8 + quad * 2 + e;
                s_acc[j][e] = key < lim0 ? s_acc[j][e] * s_scale : MT_NEG_INF;
                s_acc[j][2 + e] = key < lim1 ? s_acc[j][2 + e] * s_scale : MT_NEG_INF;
                mx0 = fmaxf(mx0, s_acc[j][e]);
                mx1 = fmaxf(mx1, s_acc[j][2 + e]);
            }
        mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 1));
        mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 2));
        mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 1));
        mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 2));
        if (quad == 0) red_max[warp * 16 + r0] = mx0, red_max[warp * 16 + r0 + 8] = mx1;
        __syncthreads();
        float cm0 = MT_NEG_INF, cm1 = MT_NEG_INF;
#pragma unroll
        for (int w = 0; w < 4; w++) cm0 = fmaxf(cm0, red_max[w * 16 + r0]), cm1 = fmaxf(cm1, red_max[w * 16 + r0 + 8]);
        const float mn0 = fmaxf(m_r[0], cm0), mn1 = fmaxf(m_r[1], cm1);
        const float alpha0 = m_r[0] == MT_NEG_INF ? 0.0f : mt_exp2f(m_r[0] - mn0);
        const float alpha1 = m_r[1] == MT_NEG_INF ? 0.0f : mt_exp2f(m_r[1] - mn1);
        float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            float p[4];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                p[e] = s_acc[j][e] == MT_NEG_INF ? 0.0f : mt_exp2f(s_acc[j][e] - mn0);
                p[2 + e] = s_acc[j][2 + e] == MT_NEG_INF ? 0.0f : mt_exp2f(s_acc[j][2 + e] - mn1);
            }
            ps0 += p[0] + p[1];
            ps1 += p[2] + p[3];
            const int col = warp * 16 + j * 8 + quad * 2;
            *(mt_u32 *)(p_s + r0 * P_STRIDE + col) = pack2(p[0], p[1]);
            *(mt_u32 *)(p_s + (r0 + 8) * P_STRIDE + col) = pack2(p[2], p[3]);
        }
        ps0 += mt_shfl_xor(ps0, 1);
        ps0 += mt_shfl_xor(ps0, 2);
        ps1 += mt_shfl_xor(ps1, 1);
        ps1 += mt_shfl_xor(ps1, 2);
        if (quad == 0) red_sum[warp * 16 + r0] = ps0, red_sum[warp * 16 + r0 + 8] = ps1;
        __syncthreads();
        float cs0 = 0.0f, cs1 = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) cs0 += red_sum[w * 16 + r0], cs1 += red_sum[w * 16 + r0 + 8];
        l_r[0] = l_r[0] * alpha0 + cs0;
        l_r[1] = l_r[1] * alpha1 + cs1;
        m_r[0] = mn0;
        m_r[1] = mn1;

        /* O = O * alpha + P V over this warp's columns */
#pragma unroll
        for (int t = 0; t < N_TILES; t++) {
            acc_o[t][0] *= alpha0, acc_o[t][1] *= alpha0;
            acc_o[t][2] *= alpha1, acc_o[t][3] *= alpha1;
        }
        const mt_u16 *v_base = kv_s + buf * KV_CHUNK * MMA_STRIDE + warp * COLS_PER_WARP;
#pragma unroll
        for (int ks = 0; ks < KV_CHUNK; ks += 16) {
            const int cc = ks + quad * 2;
            mt_u32 a[4];
            a[0] = *(const mt_u32 *)(p_s + r0 * P_STRIDE + cc);
            a[1] = *(const mt_u32 *)(p_s + (r0 + 8) * P_STRIDE + cc);
            a[2] = *(const mt_u32 *)(p_s + r0 * P_STRIDE + cc + 8);
            a[3] = *(const mt_u32 *)(p_s + (r0 + 8) * P_STRIDE + cc + 8);
            const mt_u16 *v_rows = v_base + (ks + (lane & 15)) * MMA_STRIDE;
#pragma unroll
            for (int t = 0; t < N_TILES; t++) {
                mt_u32 bv[2];
                mt_ldmatrix_x2_trans(bv, v_rows + t * 8);
                mt_mma_16816(acc_o[t], a, bv, IS_FP16);
            }
        }
        __syncthreads();  /* this buffer and p_tile are free for the next chunk */
    }

    /* write: rows r0 and r0 + 8 of the tile, two columns per n-tile */
    const float inv0 = l_r[0] > 0.0f ? kv_scale / l_r[0] : 0.0f;
    const float inv1 = l_r[1] > 0.0f ? kv_scale / l_r[1] : 0.0f;
    const int g0 = row0 + r0, g1 = row0 + r0 + 8;
#pragma unroll
    for (int t = 0; t < N_TILES; t++) {
        const int col = warp * COLS_PER_WARP + t * 8 + quad * 2;
#if NUM_SPLITS == 1
        if (g0 < rows) *(mt_u32 *)(out + ((size_t)b * rows + g0) * DL + col) = pack2(acc_o[t][0] * inv0, acc_o[t][1] * inv0);
        if (g1 < rows) *(mt_u32 *)(out + ((size_t)b * rows + g1) * DL + col) = pack2(acc_o[t][2] * inv1, acc_o[t][3] * inv1);
#else
        float *part = o_part + ((size_t)b * NUM_SPLITS + split) * rows * DL;
        if (g0 < rows) *(float2 *)(part + (size_t)g0 * DL + col) = make_float2(acc_o[t][0] * inv0, acc_o[t][1] * inv0);
        if (g1 < rows) *(float2 *)(part + (size_t)g1 * DL + col) = make_float2(acc_o[t][2] * inv1, acc_o[t][3] * inv1);
#endif
    }
    if (warp == 0 && quad == 0) {
        const float l0 = l_r[0] > 0.0f ? (m_r[0] + mt_log2f(l_r[0])) * LN2 : MT_NEG_INF;
        const float l1 = l_r[1] > 0.0f ? (m_r[1] + mt_log2f(l_r[1])) * LN2 : MT_NEG_INF;
#if NUM_SPLITS == 1
        if (g0 < rows) lse[(size_t)b * rows + g0] = l0;
        if (g1 < rows) lse[(size_t)b * rows + g1] = l1;
#else
        if (g0 < rows) lse_part[((size_t)b * NUM_SPLITS + split) * rows + g0] = l0;
        if (g1 < rows) lse_part[((size_t)b * NUM_SPLITS + split) * rows + g1] = l1;
#endif
    }
}
#endif /* MMA */

#ifndef REDUCE_THREADS
#define REDUCE_THREADS 128
#endif

/* Merges the NUM_SPLITS partial results of one row.  Grid: (rows, B). */
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
mla_reduce(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows) {
    const int row = blockIdx.x, b = blockIdx.y;
    const float *lp = lse_part + (size_t)b * NUM_SPLITS * rows + row;
    float m = MT_NEG_INF;
#pragma unroll
    for (int s = 0; s < NUM_SPLITS; s++) m = fmaxf(m, lp[(size_t)s * rows]);
    float w[NUM_SPLITS];
    float total = 0.0f;
#pragma unroll
    for (int s = 0; s < NUM_SPLITS; s++) {
        float l = lp[(size_t)s * rows];
        w[s] = (l == MT_NEG_INF) ? 0.0f : __expf(l - m);
        total += w[s];
    }
    float inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int col = threadIdx.x; col < DL; col += REDUCE_THREADS) {
        float acc = 0.0f;
#pragma unroll
        for (int s = 0; s < NUM_SPLITS; s++)
            if (w[s] != 0.0f)
                acc += w[s] * o_part[(((size_t)b * NUM_SPLITS + s) * rows + row) * DL + col];
        out[((size_t)b * rows + row) * DL + col] = store_out(acc * inv);
    }
    if (threadIdx.x == 0) lse[(size_t)b * rows + row] = total > 0.0f ? m + __logf(total) : MT_NEG_INF;
}
