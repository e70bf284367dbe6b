/*
 * simt.cu - the SIMT path of the prefill family (mma = 0): plain fp32
 * arithmetic on any target and warp width; the always-correct baseline the
 * matrix-unit paths will be checked against.
 *
 * Work-group (tile, head, request) = (blockIdx.x, blockIdx.y, blockIdx.z):
 * TILE_Q consecutive new tokens of one request, one head (MHA: every head
 * its own keys, so tiles never share k / v).  Work-groups past the
 * request's new tokens return at once (the grid covers the longest).
 *
 * Shared memory (family.c, mt_mla_prefill_shared_bytes, must match):
 *   q_tile    [TILE_Q][D]          q * scale * log2(e): scores in base 2
 *   k_tile    [KV_TILE][D + 1]     padded: threads reading a column of
 *                                  consecutive keys hit different banks
 *   v_tile    [KV_TILE][DL]
 *   s_tile    [TILE_Q][KV_TILE]    scores, then probabilities
 *   row_max, row_sum, row_alpha, row_limit  [TILE_Q] each
 * Registers: acc_o, the output tile spread over the threads (output o =
 * tid + i * BLOCK_THREADS is row o / DL, column o % DL).
 *
 * Per KV_TILE keys: stage k and v (zeros past the tile's last key, so a
 * masked key multiplies 0, never stale data); scores with the mask (key j
 * of the request is visible to new token i when j < row_limit: all keys,
 * or with causal the context (keys - new tokens) plus new tokens 0..i);
 * the online softmax per row, one warp per row, lanes striding the keys
 * (any warp width); then acc_o = acc_o * alpha + P V.  A row with no
 * visible key writes out = 0 and lse = -inf.
 */
#define PF_OUT_PER_THREAD ((TILE_Q * DL + BLOCK_THREADS - 1) / BLOCK_THREADS)
#define PF_WARPS (BLOCK_THREADS / MT_WARP)

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) mla_prefill(const mt_prefill_params p) {
    extern __shared__ float smem[];
    float *q_tile = smem;
    float *k_tile = q_tile + TILE_Q * D;
    float *v_tile = k_tile + KV_TILE * (D + 1);
    float *s_tile = v_tile + KV_TILE * DL;
    float *row_max = s_tile + TILE_Q * KV_TILE;
    float *row_sum = row_max + TILE_Q;
    float *row_alpha = row_sum + TILE_Q;
    int *row_limit = (int *)(row_alpha + TILE_Q);

    const int tid = threadIdx.x, warp = tid / MT_WARP, lane = tid % MT_WARP;
    const pf_tile tile = pf_tile_of(p);
    if (tile.rows <= 0) return; /* the whole work-group: no barrier is skipped by part of it */
    const int q0 = tile.q0, rows = tile.rows, head = tile.head, q_first = tile.q_first, key_end = tile.key_end;

    for (int r = tid; r < TILE_Q; r += BLOCK_THREADS) {
        row_limit[r] = pf_row_limit(p, tile, q0 + r);
        row_max[r] = MT_NEG_INF;
        row_sum[r] = 0.0f;
    }
    const float q_scale = p.scale * PF_LOG2E;
    for (int i = tid; i < TILE_Q * D; i += BLOCK_THREADS) {
        const int r = i / D, c = i - r * D;
        q_tile[i] = r < rows ? pf_load_q(pf_row<const mt_u16>(p.q, q_first + q0 + r, head)[c]) * q_scale : 0.0f;
    }

    float acc_o[PF_OUT_PER_THREAD];
#pragma unroll
    for (int i = 0; i < PF_OUT_PER_THREAD; i++) acc_o[i] = 0.0f;

    for (int k0 = 0; k0 < key_end; k0 += KV_TILE) {
        __syncthreads(); /* q_tile and the row values are written; the previous tile's readers are done */
        for (int i = tid; i < KV_TILE * D; i += BLOCK_THREADS) {
            const int j = i / D, c = i - j * D, key = k0 + j;
            float x = 0.0f;
            if (key < key_end) x = pf_load_kv(pf_key_at(p, tile, key, c));
            k_tile[j * (D + 1) + c] = x;
        }
        for (int i = tid; i < KV_TILE * DL; i += BLOCK_THREADS) {
            const int j = i / DL, c = i - j * DL, key = k0 + j;
            v_tile[i] = key < key_end ? pf_load_kv(pf_row<const mt_u16>(p.v, tile.k_first + key, head)[c]) : 0.0f;
        }
        __syncthreads();
        /* scores: consecutive threads take consecutive keys of one row */
        for (int i = tid; i < TILE_Q * KV_TILE; i += BLOCK_THREADS) {
            const int r = i / KV_TILE, j = i - r * KV_TILE;
            const float *qr = q_tile + r * D, *kr = k_tile + j * (D + 1);
            float s = 0.0f;
            for (int c = 0; c < D; c++) s = fmaf(qr[c], kr[c], s);
            s_tile[i] = k0 + j < row_limit[r] ? s : MT_NEG_INF;
        }
        __syncthreads();
        /* the online softmax: one warp per row */
        for (int r = warp; r < TILE_Q; r += PF_WARPS) {
            float m = MT_NEG_INF;
            for (int j = lane; j < KV_TILE; j += MT_WARP) m = fmaxf(m, s_tile[r * KV_TILE + j]);
            m = mt_warp_max(m);
            const float m_old = row_max[r], m_new = fmaxf(m_old, m);
            float sum = 0.0f;
            for (int j = lane; j < KV_TILE; j += MT_WARP) {
                const float s = s_tile[r * KV_TILE + j];
                const float e = s == MT_NEG_INF ? 0.0f : mt_exp2f(s - m_new);
                s_tile[r * KV_TILE + j] = e;
                sum += e;
            }
            sum = mt_warp_sum(sum);
            if (lane == 0) {
                const float alpha = m_old == MT_NEG_INF ? 0.0f : mt_exp2f(m_old - m_new);
                row_alpha[r] = alpha;
                row_sum[r] = row_sum[r] * alpha + sum;
                row_max[r] = m_new;
            }
        }
        __syncthreads();
        /* acc_o = acc_o * alpha + P V */
#pragma unroll
        for (int i = 0; i < PF_OUT_PER_THREAD; i++) {
            const int o = tid + i * BLOCK_THREADS;
            if (o < TILE_Q * DL) {
                const int r = o / DL, c = o - r * DL;
                const float *pr = s_tile + r * KV_TILE;
                float x = acc_o[i] * row_alpha[r];
                for (int j = 0; j < KV_TILE; j++) x = fmaf(pr[j], v_tile[j * DL + c], x);
                acc_o[i] = x;
            }
        }
    }
    __syncthreads(); /* the last tile's row values are final (and visible when no tile ran) */
#pragma unroll
    for (int i = 0; i < PF_OUT_PER_THREAD; i++) {
        const int o = tid + i * BLOCK_THREADS;
        if (o < TILE_Q * DL) {
            const int r = o / DL, c = o - r * DL;
            if (r < rows) {
                const float l = row_sum[r];
                pf_row<mt_u16>(p.out, q_first + q0 + r, head)[c] = pf_store_out(l > 0.0f ? acc_o[i] / l : 0.0f);
            }
        }
    }
    for (int r = tid; r < rows; r += BLOCK_THREADS) {
        const float l = row_sum[r];
        *pf_row<float>(p.lse, q_first + q0 + r, head) = l > 0.0f ? (row_max[r] + mt_log2f(l)) * PF_LN2 : MT_NEG_INF;
    }
}
