/*
 * wgmma64_fp8.cu - the 64-row warpgroup path for fp8 KV (mma = 2, tile_q
 * 64; NVIDIA Hopper, wgmma): each fp8 chunk is converted once, by the
 * whole work-group, into an fp16 tile in shared memory that both
 * warpgroups' products read as wgmma64.cu reads a 16-bit chunk.
 */
/* ---- why a path of its own ------------------------------------------------
 * The transposed path (wgmma_t16.cu) converts fp8 in registers on the way
 * into its products, once per 16 or 32 query rows: at 64-128 heads every
 * chunk is converted 2-8 times, and the conversion, not the products, was
 * most of its time (reports/PERFLOG.md session 20: fp8 KV at 128 heads,
 * B=128 x 16384, 1.92 ms against 1.02 for bf16 KV, which moves twice the
 * bytes).  Here a chunk is converted once per 64 rows, off the products'
 * path, and the products run as on the 16-bit 64-row path.
 *
 * The two warpgroups, per 64-key chunk i:
 *   warpgroup 0: S = Q K^T of chunk i (36 k-steps of m64n64k16, Q and the
 *     converted chunk from shared memory), the online softmax, P to shared
 *     memory, O[:, 0:256] += P V (P from registers), as wgmma64.cu;
 *   warpgroup 1: converts chunk i+1 into the other fp16 tile while
 *     warpgroup 0 computes scores (it would idle there: it waits for P),
 *     issues the loads of chunk i+2, then O[:, 256:512] += P V.
 * So the conversion, exact (cvt e4m3x2 -> f16x2; fnuz through the
 * prelude's exact software form), runs beside the score products instead
 * of between chunks (converting by all threads between chunks, with the
 * chunks landing by tensor copies in two raw stages, took 1.54 ms at 128
 * heads B=128 x 16384: PERFLOG session 21).  Chunk i+2's bytes come from
 * memory straight into warpgroup 1's registers (72 a thread: two keys' 576
 * bytes, a quarter each), one chunk of compute ahead of their use; keys
 * past the tile's last one are not loaded and become zeros (a page's tail
 * may hold anything, and P V must not meet a NaN).  With no raw stage in
 * shared memory, the two fp16 tiles fit beside Q.
 * The products run in fp16: fp8 is exact in it, and q is scaled by a power
 * of two into fp16's range (bf16 q: q_fp16_factor over the tile, divided
 * out of the scores exactly).
 *
 * Shared memory (128-byte swizzled tiles; kept equal to
 * mt_mla_decode_shared_bytes), from the first 1024-byte boundary:
 *   q_s        [D/64][64 rows][128 B]   Q, fp16
 *   kv_h       2 x [D/64][64 keys][128 B] converted chunks, fp16 (chunk c in kv_h[c % 2])
 *   p_s        [64 rows][128 B]         P of the chunk, fp16
 *   row_alpha  [64] f32                 the chunk's rescale per row; at the end kv_scale / sum
 *   row_limit  [64] int, q_amax [8] f32
 * At an item's end the tiles hold the staged result rows or the cluster
 * merge's partials, as wgmma64.cu's stages do.  230,944 bytes at D 576,
 * within the H100's 232,448.
 * Fixed shape (checked in constraints.c): TILE_Q 64, 256 threads, 64-key
 * chunks, 2 stages (the fp16 tiles), DL 512, D % 64 == 0, fp8 KV. */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if TILE_Q != 64 || BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != 2 || DL != 512 || D % 64 != 0 || !KV_FP8
#error "mma=2 tile_q 64 with fp8 KV takes 256 threads, 64-key chunks, 2 stages, Dl 512, D % 64 == 0"
#endif
#define F8_BLOCK_BYTES (64 * 128)                /* 64 rows x 64 fp16 columns */
#define F8_TILE_BYTES ((D / 64) * F8_BLOCK_BYTES) /* 64 rows x D, fp16 */
#define F8_PIECES (D / 8)                        /* 16-byte fp16 pieces per row */
#define F8_RAW (2 * (D / 64))                    /* 16-byte fp8 pieces a converting thread holds */

/* O rows r0 / r1 of this thread *= a0 / a1, skipped while the whole warp's
 * rows keep their max (the factor is then exactly 1). */
__device__ __forceinline__ void f8_rescale_rows(float *acc, float a0, float a1) {
    if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        acc[4 * j] *= a0, acc[4 * j + 1] *= a0;
        acc[4 * j + 2] *= a1, acc[4 * j + 3] *= a1;
    }
}

/* Warpgroup 1's share of a chunk: thread w (0..127) holds keys w / 4 and
 * w / 4 + 32 of it, and of each key's 64-column blocks the 16 bytes
 * 16 (w % 4) ..: raw[blk] and raw[D / 64 + blk].  A warp's load then reads
 * 64 whole bytes of each of 8 keys, and its 16-byte stores of the fp16
 * pieces meet 8 distinct bank groups per 8 lanes. */
__device__ __forceinline__ void f8_load_chunk(uint4 *raw, const mt_u8 *kv, const int *pages, int k0, int tile_end,
                                              int w) {
    const int c = w & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int key = k0 + (w >> 2) + 32 * h;
        if (key < tile_end) {
            const mt_u8 *row = kv + ((size_t)pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE) * D + 16 * c;
#pragma unroll
            for (int blk = 0; blk < D / 64; blk++) raw[h * (D / 64) + blk] = __ldg((const uint4 *)(row + 64 * blk));
        } else {
#pragma unroll
            for (int blk = 0; blk < D / 64; blk++) raw[h * (D / 64) + blk] = make_uint4(0u, 0u, 0u, 0u);
        }
    }
}
__device__ __forceinline__ void f8_store_chunk(unsigned char *tile, const uint4 *raw, int w) {
    const int c = w & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = (w >> 2) + 32 * h;
#pragma unroll
        for (int blk = 0; blk < D / 64; blk++) {
            const uint4 v = raw[h * (D / 64) + blk];
            const uint4 lo = make_uint4(kv_fp8x2_to_f16x2((mt_u16)v.x), kv_fp8x2_to_f16x2((mt_u16)(v.x >> 16)),
                                        kv_fp8x2_to_f16x2((mt_u16)v.y), kv_fp8x2_to_f16x2((mt_u16)(v.y >> 16)));
            const uint4 hi = make_uint4(kv_fp8x2_to_f16x2((mt_u16)v.z), kv_fp8x2_to_f16x2((mt_u16)(v.z >> 16)),
                                        kv_fp8x2_to_f16x2((mt_u16)v.w), kv_fp8x2_to_f16x2((mt_u16)(v.w >> 16)));
            *(uint4 *)(tile + mt_swizzle128(r, blk * 8 + 2 * c, 64)) = lo;
            *(uint4 *)(tile + mt_swizzle128(r, blk * 8 + 2 * c + 1, 64)) = hi;
        }
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
    unsigned char *kv_h = q_s + F8_TILE_BYTES; /* two tiles */
    unsigned char *p_s = kv_h + 2 * F8_TILE_BYTES;
    float *row_alpha = (float *)(p_s + F8_BLOCK_BYTES);
    int *row_limit = (int *)(row_alpha + 64);
    float *q_amax = (float *)(row_limit + 64);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    (void)kv_map; /* the chunks come by loads, not tensor copies */
    const mt_u8 *kv8 = (const mt_u8 *)kv;
    const int tid = threadIdx.x, wg = tid >> 7, wtid = tid & 127, lane = tid & 31;
    const int quad = lane & 3;
    const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's accumulator rows */
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    int chunk_base = 0; /* chunks of the earlier items: chunk c of the work-group is in kv_h[c % 2] */
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) {
        w64_staged_rows_read(tid);
        __syncthreads(); /* the previous item is done with Q, P, the tiles and the rows' values */
    }
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);
    const int kb0 = k_begin & ~63;
    const int n_chunks = tile_end > k_begin ? (tile_end - kb0 + 63) / 64 : 0;
    auto tile_of = [&](int ci) { return kv_h + ((chunk_base + ci) & 1) * F8_TILE_BYTES; };

    /* warpgroup 1: the first chunk's loads go out before Q is read, so
     * q's trip to memory overlaps theirs */
    uint4 raw[F8_RAW];
    if (wg == 1 && n_chunks > 0) f8_load_chunk(raw, kv8, pages, kb0, tile_end, wtid);

    /* Q in fp16: bf16 q scaled by the power of two that brings the tile's
     * largest |q| under 2^15; rows past the request's are zeros */
    const int q_rows_here = min(64, rows - row0);
    float q_factor = 1.0f;
#if Q_DTYPE == 0
    {
        float amax = 0.0f;
        for (int i = tid; i < q_rows_here * F8_PIECES; i += 256) {
            const int r = i / F8_PIECES, u = i - r * F8_PIECES;
            const uint4 w = *(const uint4 *)q_at(prm, q, b, row0 + r, u * 8);
            amax = fmaxf(amax, fmaxf(fmaxf(bf16_pair_absmax(w.x), bf16_pair_absmax(w.y)),
                                     fmaxf(bf16_pair_absmax(w.z), bf16_pair_absmax(w.w))));
        }
        amax = mt_warp_max(amax);
        if (lane == 0) q_amax[tid >> 5] = amax;
        __syncthreads();
        amax = 0.0f;
#pragma unroll
        for (int w = 0; w < 8; w++) amax = fmaxf(amax, q_amax[w]);
        q_factor = q_fp16_factor(amax);
    }
#endif
    for (int i = tid; i < 64 * F8_PIECES; i += 256) {
        const int r = i / F8_PIECES, u = i - r * F8_PIECES;
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (r < q_rows_here) {
            w = *(const uint4 *)q_at(prm, q, b, row0 + r, u * 8);
#if Q_DTYPE == 0
            w = make_uint4(q_pair_to_mma(w.x, q_factor), q_pair_to_mma(w.y, q_factor), q_pair_to_mma(w.z, q_factor),
                           q_pair_to_mma(w.w, q_factor));
#endif
        }
        *(uint4 *)(q_s + mt_swizzle128(r, u, 64)) = w;
    }
    if (wg == 1 && n_chunks > 0) {
        f8_store_chunk(tile_of(0), raw, wtid);
        if (n_chunks > 1) f8_load_chunk(raw, kv8, pages, kb0 + 64, tile_end, wtid);
    }
    mt_fence_proxy_async(); /* Q and the first chunk, for the wgmma */
    __syncthreads();        /* they are in, and the rows' key limits */

    const float s_scale = scale * kv_scale * LOG2E / q_factor; /* scores in the log2 domain */
    float m0 = MT_NEG_INF, m1 = MT_NEG_INF, l0 = 0.0f, l1 = 0.0f; /* warpgroup 0: running max, partial sum */
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.0f;
    /* descriptors of the tiles' starts; a k-step or a key offset adds its
     * byte offset / 16 (no carry: shared addresses stay below 2^18) */
    const mt_u64 q_desc = mt_wgmma_desc(q_s, 16, 1024);
    const mt_u64 p_desc = mt_wgmma_desc(p_s, 16, 1024);

    /* each warpgroup its own loop (the registers of one are not live in
     * the other's); per chunk, named barrier 2 (all 256 threads): chunk
     * ci is converted and chunk ci-1's P V done on both sides, so its tile
     * and P are free; barrier 1: warpgroup 0's P of chunk ci is in.
     * Warpgroup 1 holds chunk ci+1's bytes when chunk ci starts. */
    if (wg == 0) {
        const int lim0 = min(row_limit[r0], tile_end), lim1 = min(row_limit[r1], tile_end);
        for (int ci = 0; ci < n_chunks; ci++) {
            const int k0 = kb0 + ci * 64;
            mt_bar_sync(2, 256);
            const mt_u64 k_desc = mt_wgmma_desc(tile_of(ci), 16, 1024);
            const mt_u64 v_desc = mt_wgmma_desc(tile_of(ci), F8_BLOCK_BYTES, 1024);
            float s[32];
#pragma unroll
            for (int i = 0; i < 32; i++) s[i] = 0.0f;
            mt_wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < D / 16; ks++) {
                const int off = ((ks >> 2) * F8_BLOCK_BYTES + (ks & 3) * 32) >> 4;
                mt_wgmma_m64n64k16_ss<1>(s, q_desc + off, k_desc + off, 1);
            }
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<32>(s);

            /* online softmax (wgmma64.cu's): mask only a chunk that starts
             * before the split or crosses a row's limit, row max over the
             * quad on the raw scores (the scale is positive), then p =
             * 2^(s * scale - max) in one FFMA + EX2 */
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
                const mt_u32 lo = mt_pack_f16x2(p00, p01), hi = mt_pack_f16x2(p10, p11);
                pf[j >> 1][(j & 1) * 2] = lo, pf[j >> 1][(j & 1) * 2 + 1] = hi;
                *(mt_u32 *)(p_s + mt_swizzle128(r0, j, 64) + quad * 4) = lo;
                *(mt_u32 *)(p_s + mt_swizzle128(r1, j, 64) + quad * 4) = hi;
            }
            l0 = l0 * a0 + ps0, l1 = l1 * a1 + ps1;
            m0 = mn0, m1 = mn1;
            if (quad == 0) row_alpha[r0] = a0, row_alpha[r1] = a1;
            mt_fence_proxy_async(); /* P, for warpgroup 1's wgmma */
            mt_bar_arrive(1, 256);

            f8_rescale_rows(acc, a0, a1);
            mt_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) mt_wgmma_m64n256k16_rs<1>(acc, pf[kk], v_desc + kk * (2048 >> 4), 1);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
        }
    } else {
        for (int ci = 0; ci < n_chunks; ci++) {
            mt_bar_sync(2, 256);
            if (ci + 1 < n_chunks) {
                /* chunk ci+1 into the tile chunk ci-1 left, while warpgroup
                 * 0 computes chunk ci's scores; then chunk ci+2's loads */
                f8_store_chunk(tile_of(ci + 1), raw, wtid);
                mt_fence_proxy_async(); /* for the wgmma, after the next barrier 2 */
                if (ci + 2 < n_chunks) f8_load_chunk(raw, kv8, pages, kb0 + 64 * (ci + 2), tile_end, wtid);
            }
            const mt_u64 v_desc = mt_wgmma_desc(tile_of(ci) + 4 * F8_BLOCK_BYTES, F8_BLOCK_BYTES, 1024);
            mt_bar_sync(1, 256); /* P and alpha of this chunk are in */
            f8_rescale_rows(acc, row_alpha[r0], row_alpha[r1]);
            mt_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                mt_wgmma_m64n256k16_ss<1>(acc, p_desc + kk * (32 >> 4), v_desc + kk * (2048 >> 4), 1);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
        }
    }

    /* warpgroup 0 owns the row statistics: it publishes kv_scale / sum per
     * row and writes lse; then both write their halves of O */
    __syncthreads(); /* warpgroup 1 has read the last alpha; the tiles are idle */
#if SPLIT_REDUCE
    /* kv_h and the stages are free now: the partial result and the merge
     * weights go there (cluster_merge) */
    float *o_red = (float *)kv_h, *lse_red = o_red + 64 * RED_STRIDE, *wts = (float *)q_s;
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
    const bool staged = w64_staged(split, q_rows_here);
    float *o_rows = (float *)kv_h; /* every chunk of the item is consumed: the tiles are idle */
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
        } else {
            if (g0 < rows) store_o_pair(prm, out, o_part, b, split, rows, g0, col, acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
            if (g1 < rows) store_o_pair(prm, out, o_part, b, split, rows, g1, col, acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
        }
#endif
    }
#if SPLIT_REDUCE
    cluster_merge(prm, o_red, lse_red, wts, out, lse, b, rows, row0, q_rows_here, tid, 256);
#else
    if (staged) /* the same for the whole work-group */
        w64_store_staged(prm, out, o_part, b, split, rows, row0, q_rows_here, o_rows, tid);
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
