/*
 * wgmma64.cu - the 64-row warpgroup path (mma = 2, tile_q 64; NVIDIA
 * Hopper, wgmma): two warpgroups over a 64-row tile, 16-bit KV, optional
 * merge of splits within a cluster (split_reduce = 1).
 */
/* ---- the warpgroup path (NVIDIA sm_90a, wgmma) ---------------------------
 * For the matrix-bound shapes (64+ heads, or 16 heads x 4 speculative
 * tokens): one work-group takes a 64-row tile with two warpgroups (256
 * threads), 64-key chunks in two stages, and splits the work FlashMLA's
 * way:
 *   warpgroup 0: S = Q K^T for the whole 64 x 64 chunk (36 k-steps of
 *     wgmma m64n64k16, Q and K from shared memory), the online softmax in
 *     registers (a row's 64 scores live in the 4 lanes of a quad), P to
 *     shared memory for warpgroup 1, then O[:, 0:256] += P V with P from
 *     its own registers (the accumulator layout is the A operand layout);
 *   warpgroup 1: waits for P (named barrier 1), rescales, then
 *     O[:, 256:512] += P V with P from shared memory.
 * V is the first DL columns of the K tile already in shared memory, used
 * as an MN-major B operand, so each chunk is loaded once.  The chunks come
 * through the tensor copy engine (TMA): chunks start on 64-key boundaries,
 * so a chunk is whole pages (page size >= 64) or whole 64-key pieces of one
 * page, and one thread issues a 64-column x min(64, page) box per column
 * block and page piece (9 copies per chunk at page 64), completing on an
 * mbarrier per stage.  (With cp.async, 72 KB per chunk was 4608 16-byte
 * copies whose issue took a third of the work-group's time.)  Chunk i+1 is
 * in flight while chunk i is computed.  Keys of the first chunk before the
 * split's start are masked; rows past the last key are zeroed in shared
 * memory (a page's unused tail may hold anything, and P V must not meet a
 * NaN).
 *
 * Shared memory (128-byte swizzled tiles, prelude.h; kept equal to
 * mt_mla_decode_shared_bytes), from the first 1024-byte boundary:
 *   q_s        [D/64][64 rows][128 B]   Q (mma type = q's type)
 *   kv_s       2 x [D/64][64 keys][128 B]   the stages
 *   p_s        [64 rows][128 B]         P of the chunk, mma type
 *   row_alpha  [64] f32                 the chunk's rescale per row; at the end kv_scale / sum
 *   row_limit  [64] int
 *   stage_full [2] mbarrier             one per stage: the chunk's bytes are in
 * Fixed shape (checked in mla_decode.c): TILE_Q 64, 256 threads, 64-key
 * chunks, 2 stages, DL 512, D % 64 == 0, q and KV of one 16-bit type.
 * Pages of fewer than 16 keys: the chunks' rows are gathered by warpgroup
 * 1's cp.async instead of the copy engine (W64_GATHER, wgmma_common.cuh). */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if TILE_Q != 64 || BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != 2 || DL != 512 || D % 64 != 0 || \
    KV_FP8 || Q_CONVERT
#error "mma=2 takes tile_q 64, 256 threads, 64-key chunks, 2 stages, Dl 512, D % 64 == 0, q and KV of one 16-bit type"
#endif
#define WG_BLOCK_BYTES (64 * 128)               /* 64 rows x 64 16-bit columns */
#define WG_TILE_BYTES ((D / 64) * WG_BLOCK_BYTES) /* 64 rows x D */
#define WG_PIECES (D / 8)                       /* 16-byte pieces per row */
#if W64_GATHER
#define W64_ISSUER(tid) ((tid) >= 128) /* pages under 16 keys: warpgroup 1 gathers the rows (wgmma_common.cuh) */
#else
#define W64_ISSUER(tid) ((tid) == 128) /* one thread issues the copy engine's boxes */
#endif

/* O rows r0 / r1 of this thread *= a0 / a1, skipped while the whole warp's
 * rows keep their max (the factor is then exactly 1). */
__device__ __forceinline__ void rescale_rows(float *acc, float a0, float a1) {
    if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        acc[4 * j] *= a0, acc[4 * j + 1] *= a0;
        acc[4 * j + 2] *= a1, acc[4 * j + 3] *= a1;
    }
}


__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched, const mt_tensor_map &kv_map, const mt_views prm) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle pattern repeats every 1024 bytes of the shared address */
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *kv_s = q_s + WG_TILE_BYTES;
    unsigned char *p_s = kv_s + 2 * WG_TILE_BYTES;
    float *row_alpha = (float *)(p_s + WG_BLOCK_BYTES);
    int *row_limit = (int *)(row_alpha + 64);
    mt_u64 *stage_full = (mt_u64 *)(row_limit + 64);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
    const int quad = lane & 3;
    const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's accumulator rows */
    const int rows = sq * n_heads;
    if (tid == 0) {
        mt_mbar_init(&stage_full[0], 1);
        mt_mbar_init(&stage_full[1], 1);
        mt_mbar_init_fence();
    }
    const mt_items items = group_items(sched, rows);
    int chunk_base = 0; /* chunks of the earlier items: the stages' phases run on across items */
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) {
        w64_staged_rows_read(tid);
        __syncthreads(); /* the previous item is done with Q, P, row_alpha and row_limit */
    }
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* Q by cp.async (its own group, the oldest); rows past the request's are zeros */
    const int q_rows_here = min(64, rows - row0);
    for (int i = tid; i < 64 * WG_PIECES; i += 256) {
        const int r = i / WG_PIECES, u = i - r * WG_PIECES;
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + mt_swizzle128(r, u, 64), valid ? q_at(prm, q, b, row0 + r, u * 8) : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);

    /* chunk copies, issued by one thread (warpgroup 1's first, idle while
     * scores are computed): the boxes holding keys below tile_end */
    const int kb0 = k_begin & ~63;
#if W64_GATHER
    auto issue_chunk = [&](int k0, int buf) {
        gather_chunk_rows(kv_s + buf * WG_TILE_BYTES, kv, pages, k0, tile_end, tid - 128);
    };
#else
    auto issue_chunk = [&](int k0, int buf) {
        issue_chunk_copies<128>(kv_s + buf * WG_TILE_BYTES, &kv_map, pages, k0, tile_end, &stage_full[buf]);
    };
#endif

    const int n_chunks = tile_end > k_begin ? (tile_end - kb0 + 63) / 64 : 0;
    if (W64_ISSUER(tid) && n_chunks > 0) issue_chunk(kb0, chunk_base & 1);
    mt_cp_async_wait<0>(); /* Q (and, gathered, the first chunk) */
    mt_fence_proxy_async();

    const float s_scale = scale * kv_scale * LOG2E; /* scores in the log2 domain */
    const int lim0 = min(row_limit[r0], tile_end), lim1 = min(row_limit[r1], tile_end);
    float m0 = MT_NEG_INF, m1 = MT_NEG_INF, l0 = 0.0f, l1 = 0.0f; /* warpgroup 0: running max, partial sum */
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.0f;
    /* descriptors of the tiles' starts; a k-step or a key offset adds its
     * byte offset / 16 (no carry: shared addresses stay below 2^18) */
    const mt_u64 q_desc = mt_wgmma_desc(q_s, 16, 1024);
    const mt_u64 p_desc = mt_wgmma_desc(p_s, 16, 1024);

    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = kb0 + ci * 64, cc = chunk_base + ci, buf = cc & 1;
        __syncthreads(); /* chunk ci-1 is consumed (its stage is free); Q is in */
        if (W64_ISSUER(tid) && ci + 1 < n_chunks) issue_chunk(k0 + 64, buf ^ 1);
#if !W64_GATHER /* gathered, the chunk was waited for before the barrier above */
        mt_mbar_wait(&stage_full[buf], (unsigned)(cc >> 1) & 1u);
#endif
        if (k0 + 64 > tile_end) {
            zero_key_rows<128>(kv_s + buf * WG_TILE_BYTES, tile_end - k0, tid, 256);
            mt_fence_proxy_async(); /* the zeros, for the wgmma */
            __syncthreads();
        }
        const unsigned char *kv_c = kv_s + buf * WG_TILE_BYTES;
        const mt_u64 k_desc = mt_wgmma_desc(kv_c, 16, 1024);
        const mt_u64 v_desc = mt_wgmma_desc(kv_c + wg * 4 * WG_BLOCK_BYTES, WG_BLOCK_BYTES, 1024);

        if (wg == 0) {
            float s[32];
#pragma unroll
            for (int i = 0; i < 32; i++) s[i] = 0.0f;
            mt_wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < D / 16; ks++) {
                const int off = ((ks >> 2) * WG_BLOCK_BYTES + (ks & 3) * 32) >> 4;
                mt_wgmma_m64n64k16_ss<MMA_FP16>(s, q_desc + off, k_desc + off, 1);
            }
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<32>(s);

            /* online softmax: mask (only a chunk that starts before the
             * split or crosses a row's limit), row max over the quad on the
             * raw scores (the scale is positive), then p = 2^(s * scale -
             * max) in one FFMA + EX2; masked scores are -inf and give 0
             * against a finite max */
            if (k0 < k_begin || k0 + 64 > lim0 || k0 + 64 > lim1) {
#pragma unroll
                for (int j = 0; j < 8; j++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int key = k0 + j * 8 + quad * 2 + e;
                        if (key < k_begin || key >= lim0) s[4 * j + e] = MT_NEG_INF;
                        if (key < k_begin || key >= lim1) s[4 * j + 2 + e] = MT_NEG_INF;
                    }
            }
            float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                mx0 = fmaxf(mx0, fmaxf(s[4 * j], s[4 * j + 1]));
                mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
            }
            mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 1)), mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 1));
            mx0 = fmaxf(mx0, mt_shfl_xor(mx0, 2)), mx1 = fmaxf(mx1, mt_shfl_xor(mx1, 2));
            const float mn0 = fmaxf(m0, mx0 * s_scale), mn1 = fmaxf(m1, mx1 * s_scale); /* log2 domain */
            const float a0 = m0 == MT_NEG_INF ? 0.0f : mt_exp2f(m0 - mn0);
            const float a1 = m1 == MT_NEG_INF ? 0.0f : mt_exp2f(m1 - mn1);
            const float sub0 = mn0 == MT_NEG_INF ? 0.0f : mn0, sub1 = mn1 == MT_NEG_INF ? 0.0f : mn1;
            mt_u32 pf[4][4]; /* P as the A operand of the 4 k-steps of P V */
            float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float p00 = mt_exp2f(fmaf(s[4 * j], s_scale, -sub0));
                const float p01 = mt_exp2f(fmaf(s[4 * j + 1], s_scale, -sub0));
                const float p10 = mt_exp2f(fmaf(s[4 * j + 2], s_scale, -sub1));
                const float p11 = mt_exp2f(fmaf(s[4 * j + 3], s_scale, -sub1));
                ps0 += p00 + p01, ps1 += p10 + p11;
                const mt_u32 lo = pack_mma(p00, p01), hi = pack_mma(p10, p11);
                pf[j >> 1][(j & 1) * 2] = lo, pf[j >> 1][(j & 1) * 2 + 1] = hi;
                *(mt_u32 *)(p_s + mt_swizzle128(r0, j, 64) + quad * 4) = lo;
                *(mt_u32 *)(p_s + mt_swizzle128(r1, j, 64) + quad * 4) = hi;
            }
            l0 = l0 * a0 + ps0, l1 = l1 * a1 + ps1;
            m0 = mn0, m1 = mn1;
            if (quad == 0) row_alpha[r0] = a0, row_alpha[r1] = a1;
            mt_fence_proxy_async(); /* P, for warpgroup 1's wgmma */
            mt_bar_arrive(1, 256);

            rescale_rows(acc, a0, a1);
            mt_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) mt_wgmma_m64n256k16_rs<MMA_FP16>(acc, pf[kk], v_desc + kk * (2048 >> 4), 1);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
        } else {
            mt_bar_sync(1, 256); /* P and alpha of this chunk are in */
            rescale_rows(acc, row_alpha[r0], row_alpha[r1]);
            mt_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                mt_wgmma_m64n256k16_ss<MMA_FP16>(acc, p_desc + kk * (32 >> 4), v_desc + kk * (2048 >> 4), 1);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
        }
#if W64_GATHER
        /* the issuers' rows of the next chunk have landed; fenced for the
         * matrix units (which read through the async proxy) before the
         * barrier that hands the stage to both warpgroups */
        mt_cp_async_wait<0>();
        mt_fence_proxy_async();
#endif
    }

    /* warpgroup 0 owns the row statistics: it publishes kv_scale / sum per
     * row and writes lse; then both write their halves of O */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit */
    __syncthreads();       /* warpgroup 1 has read the last alpha */
#if SPLIT_REDUCE
    /* the stages and Q are free now: the partial result and the merge
     * weights go there (cluster_merge) */
    float *o_red = (float *)kv_s, *lse_red = o_red + 64 * RED_STRIDE, *wts = (float *)q_s;
#endif
    if (wg == 0) {
        l0 += mt_shfl_xor(l0, 1), l1 += mt_shfl_xor(l1, 1);
        l0 += mt_shfl_xor(l0, 2), l1 += mt_shfl_xor(l1, 2);
        if (quad == 0) {
            row_alpha[r0] = l0 > 0.0f ? kv_scale / l0 : 0.0f;
            row_alpha[r1] = l1 > 0.0f ? kv_scale / l1 : 0.0f;
#if SPLIT_REDUCE
            lse_red[r0] = row_lse(m0, l0), lse_red[r1] = row_lse(m1, l1);
#else
            if (row0 + r0 < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + r0, row_lse(m0, l0));
            if (row0 + r1 < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + r1, row_lse(m1, l1));
#endif
        }
    }
    __syncthreads();
    const float inv0 = row_alpha[r0], inv1 = row_alpha[r1];
    const int g0 = row0 + r0, g1 = row0 + r1;
#if !SPLIT_REDUCE
    const bool staged = w64_staged(split, q_rows_here), out16 = !staged && w64_out16(split);
    float *o_rows = (float *)kv_s; /* every chunk of the item is consumed: the stages are idle */
    mt_u16 *o16 = (mt_u16 *)kv_s;
#endif
#pragma unroll
    for (int j = 0; j < 32; j++) {
        const int col = wg * 256 + j * 8 + quad * 2;
#if SPLIT_REDUCE
        if (g0 < rows) *(float2 *)(o_red + r0 * RED_STRIDE + col) = make_float2(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
        if (g1 < rows)
            *(float2 *)(o_red + r1 * RED_STRIDE + col) = make_float2(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
#else
        if (staged) {
            *(float2 *)(o_rows + r0 * W64_ROW_FLOATS + col) = make_float2(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
            *(float2 *)(o_rows + r1 * W64_ROW_FLOATS + col) = make_float2(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
        } else if (out16) {
            *(mt_u32 *)(o16 + r0 * W64_OUT16_HALVES + col) = w64_pack_out(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
            *(mt_u32 *)(o16 + r1 * W64_OUT16_HALVES + col) = w64_pack_out(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
        } else {
            if (g0 < rows) store_o_pair(prm, out, o_part, b, split, rows, g0, col, acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
            if (g1 < rows) store_o_pair(prm, out, o_part, b, split, rows, g1, col, acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
        }
#endif
    }
#if SPLIT_REDUCE
    cluster_merge(prm, o_red, lse_red, wts, out, lse, b, rows, row0, q_rows_here, tid, 256);
#else
    if (staged || out16) /* the same for the whole work-group */
        w64_store_staged(prm, out, o_part, b, split, rows, row0, q_rows_here, kv_s, tid);
#endif
    chunk_base += n_chunks;
    } /* items */
#if !SPLIT_REDUCE
    w64_staged_rows_read(tid); /* shared memory stays until the copies have read it */
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1)
mla_decode(const MT_GRID_CONST mt_decode_params p, const __grid_constant__ mt_tensor_map kv_map) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), kv_map, views_of(p));
}
