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
 * Compile-time parameters (the variant; see mla_decode.c for ranges):
 *   TILE_Q, KV_GRANULARITY, NUM_SPLITS, BLOCK_THREADS, KV_CHUNK
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
