/*
 * simt.cu - the SIMT path of the decode family (mma = 0): plain fp32
 * arithmetic, any target; the simple, always-correct baseline.
 */
__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q,          /* [B, Sq, N, DL] view (q_at) */
                const kv_t *__restrict__ kv,           /* [blocks, PAGE_SIZE, D] */
                const int *__restrict__ block_table,   /* [B, max_blocks] */
                const int *__restrict__ seq_lens,      /* [B] */
                mt_u16 *__restrict__ out,              /* [B, Sq, N, DL] view (store_o) */
                float *__restrict__ lse,               /* [B, Sq, N] view (store_lse) */
                float *__restrict__ o_part,            /* partials (store_o) */
                float *__restrict__ lse_part,          /* partials (store_lse) */
                int n_heads, int sq, int max_blocks, float scale, float kv_scale,
                const int4 *__restrict__ sched,        /* groups_per_cu > 0: mla_schedule's output */
                const mt_views prm) {         /* the call's views (strides, q's rope part) */
    extern __shared__ float smem[];
    float *q_tile = smem;
    float *kv_tile = q_tile + TILE_Q * D;
    float *p_tile = kv_tile + KV_CHUNK * KV_STRIDE;
    float *row_max = p_tile + TILE_Q * KV_CHUNK;
    float *row_sum = row_max + TILE_Q;
    float *row_alpha = row_sum + TILE_Q;
    int *row_limit = (int *)(row_alpha + TILE_Q);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x;
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item's readers of shared memory are done */

    for (int r = tid; r < TILE_Q; r += BLOCK_THREADS) {
        row_limit[r] = row_key_limit(row0 + r, rows, len, sq, n_heads);
        row_max[r] = MT_NEG_INF;
        row_sum[r] = 0.0f;
    }
    const float q_scale = scale * LOG2E;  /* scores in the log2 domain: exp2 later */
    for (int i = tid; i < TILE_Q * D; i += BLOCK_THREADS) {
        int r = i / D, d = i - r * D;
        int row = row0 + r;
        q_tile[i] = row < rows ? load_q(q_at(prm, q, b, row, d)) * q_scale : 0.0f;
    }
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);

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
            store_o(prm, out, o_part, b, split, rows, row, col, acc_o[r][j] * inv);
        }
        if (tid == 0) store_lse(prm, lse, lse_part, b, split, rows, row, row_lse(row_max[r], sum));
    }
    } /* items */
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const MT_GRID_CONST mt_decode_params p) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), views_of(p));
}
