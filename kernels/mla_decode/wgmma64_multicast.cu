/*
 * wgmma64_multicast.cu - the 64-row warpgroup path (wgmma64.cu) with
 * row_multicast = 1 (issue 28): a request's row tiles run as one
 * thread-block cluster and each KV chunk crosses L2 once for all of them.
 *
 * Everything but the chunk copies is wgmma64.cu's, line for line (diff the
 * two; keep them in step): the products, the softmax, the epilogue.  It is
 * a file of its own, and the PTX wrappers below are here rather than in
 * prelude.h, because a variant's source hash is the text of its files
 * (kernels/build.c): editing prelude.h or wgmma64.cu would make every
 * shipped DB row measured on them stale (test_db_validators).  Fold both
 * in at the next re-sweep.
 *
 * Why: with 128 heads (or 16 heads x Sq 8) a request has two or more 64-row
 * tiles, and each tile's work-group read every KV chunk through L2 itself:
 * the keys crossed L2 once per tile, and L2 bandwidth bound the kernel
 * (Nsight Compute, H100, 128 heads B=32 x 16384: L2 90.7%, DRAM 66%, the
 * overlapped schedule wg_schedule=1 no faster).  Here the host launches up
 * to 4 consecutive tiles of a request (and split) as one cluster along x
 * (mt_mla_decode_multicast_ctas; a request of one tile: no cluster, and
 * the copies below are wgmma64.cu's) and each box of a chunk is copied
 * once, into every block of the cluster (TMA multicast):
 *   - all blocks copy the same chunks: up to the last key any row of the
 *     cluster's tiles sees (a tile whose rows see fewer keys masks the
 *     rest, as a row past its causal limit always was);
 *   - block `rank` of `ctas` issues boxes rank, rank + ctas, ... of the
 *     chunk; each block's stage_full expects the whole chunk's bytes (a
 *     peer's bytes may land before this block's expect: the barrier's
 *     phase waits for its one arrival as well);
 *   - a stage is refilled only when every block has consumed what it held:
 *     a block done with a chunk arrives on stage_empty of every block of
 *     the cluster (its own included), and a block's issuing thread waits
 *     on its own stage_empty before it issues its share of the next chunk
 *     into that stage (in every block);
 *   - cluster barriers: after the mbarriers are initialised (a peer's copy
 *     may signal them), and at the end (no block may exit while a peer may
 *     still arrive on its barriers).
 * With split_reduce = 1 the cluster is 2-D: `ctas` row tiles (x) by the
 * splits (y, at most 16 blocks in all), the multicast going to the blocks
 * of one split, and the splits of a tile merging as in wgmma_common.cuh's
 * cluster_merge, their peers ctas ranks apart (cluster_merge_tiles).  The
 * length-aware form is not combined with it (constraints.c).
 *
 * Shared memory: wgmma64.cu's layout, then
 *   stage_empty [2] mbarrier   one per stage: every block of the cluster has consumed it
 * (mt_mla_decode_shared_bytes: 16 bytes more, 230944 at D = 576).
 */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if TILE_Q != 64 || BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != 2 || DL != 512 || D % 64 != 0 || \
    KV_FP8 || Q_CONVERT
#error "mma=2 takes tile_q 64, 256 threads, 64-key chunks, 2 stages, Dl 512, D % 64 == 0, q and KV of one 16-bit type"
#endif
#if GROUPS_PER_CU
#error "row_multicast=1 takes groups_per_cu 0"
#endif
#define WG_BLOCK_BYTES (64 * 128)               /* 64 rows x 64 16-bit columns */
#define WG_TILE_BYTES ((D / 64) * WG_BLOCK_BYTES) /* 64 rows x D */
#define WG_PIECES (D / 8)                       /* 16-byte pieces per row */

/* ---- clusters and multicast copies (sm_90a; see the note above on why
 * these are not in prelude.h) ---- */
/* Blocks of the cluster along x (1 when launched without a cluster), and
 * this block's x within it (mt_cluster_rank is x + y * that size). */
__device__ __forceinline__ unsigned mt_cluster_dim_x(void) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned mt_cluster_x(void) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(r));
    return r;
}
/* mt_tma_load_2d multicast: the box lands at dst's offset in every block
 * of the cluster whose bit is set in `mask` (bit = cluster rank), and
 * completes its bytes on the mbarrier at bar's offset in each of them. */
__device__ __forceinline__ void mt_tma_load_2d_multicast(void *dst, const mt_tensor_map *map, int col, int row,
                                                         mt_u64 *bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(mt_smem_addr(dst)), "l"((mt_u64)map), "r"(col), "r"(row), "r"(mt_smem_addr(bar)), "h"(mask)
                 : "memory");
}
/* Arrives once on the mbarrier at bar's offset in block `rank` of the
 * cluster (this block's own too), releasing this block's earlier accesses
 * to the whole cluster. */
__device__ __forceinline__ void mt_mbar_arrive_cluster(mt_u64 *bar, unsigned rank) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(mt_dsmem_addr(bar, rank))
                 : "memory");
}
/* mt_mbar_wait for a barrier other blocks of the cluster arrive on: what
 * they did before arriving is seen (acquire at cluster scope). */
__device__ __forceinline__ void mt_mbar_wait_cluster(mt_u64 *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(mt_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* The copies of the chunk starting at key k0 into `stage` of the `ctas`
 * blocks of the cluster from rank peer0 on (this block's row of tiles):
 * this block's share (boxes rank, rank + ctas, ... of the column blocks x
 * page pieces holding keys below `end`); `full` is told to expect the
 * whole chunk. */
__device__ __forceinline__ void issue_chunk_multicast(unsigned char *stage, const mt_tensor_map *map,
                                                      const int *pages, int k0, int end, mt_u64 *full,
                                                      unsigned rank, unsigned ctas, unsigned peer0) {
    const int boxes = min(64 / BOX_ROWS, (end - k0 + BOX_ROWS - 1) / BOX_ROWS) * (D / 64);
    mt_mbar_expect_tx(full, (unsigned)(boxes * BOX_ROWS * 128));
    const unsigned short mask = (unsigned short)(((1u << ctas) - 1u) << peer0);
    for (int i = (int)rank; i < boxes; i += (int)ctas) {
        const int bx = i / (D / 64), blk = i - bx * (D / 64), key = k0 + bx * BOX_ROWS;
        const int row = pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE;
        mt_tma_load_2d_multicast(stage + blk * 64 * 128 + bx * BOX_ROWS * 128, map, blk * 64, row, full, mask);
    }
}

#if SPLIT_REDUCE
/* cluster_merge (wgmma_common.cuh: the reduce kernel's weights, through
 * distributed shared memory) in a cluster of `ctas` row tiles (x) by
 * NUM_SPLITS splits (y): this tile's splits are blocks x + sp * ctas, and
 * this block's split, its cluster y, picks the columns it merges. */
__device__ __forceinline__ void cluster_merge_tiles(const mt_views &prm, const float *o_red, const float *lse_red,
                                                    float *wts, mt_u16 *out, float *lse, int b, int rows, int row0,
                                                    int rows_here, int tid, unsigned x, unsigned ctas) {
    const unsigned split = mt_cluster_rank() / ctas;
    mt_cluster_sync(); /* every block's o_red and lse_red are written */
    for (int i = tid; i < NUM_SPLITS * rows_here; i += 256) {
        const int sp = i / rows_here, r = i - sp * rows_here;
        wts[sp * 64 + r] = mt_dsmem_load(mt_dsmem_addr(lse_red + r, x + (unsigned)sp * ctas));
    }
    __syncthreads();
    if (tid < rows_here) {
        float m = MT_NEG_INF, total = 0.0f;
        for (int sp = 0; sp < NUM_SPLITS; sp++) m = fmaxf(m, wts[sp * 64 + tid]);
        for (int sp = 0; sp < NUM_SPLITS; sp++) {
            const float l = wts[sp * 64 + tid], w = split_weight(l, m);
            wts[sp * 64 + tid] = w, total += w;
        }
        const float inv = total > 0.0f ? 1.0f / total : 0.0f;
        for (int sp = 0; sp < NUM_SPLITS; sp++) wts[sp * 64 + tid] *= inv;
        if (split == 0) *lse_at(prm, lse, b, row0 + tid) = merged_lse(m, total);
    }
    __syncthreads();
    unsigned peer[NUM_SPLITS]; /* o_red in each split's block of this tile */
#pragma unroll
    for (int sp = 0; sp < NUM_SPLITS; sp++) peer[sp] = mt_dsmem_addr(o_red, x + (unsigned)sp * ctas);
    const int cols = DL / NUM_SPLITS, quads = cols / 4;
    for (int i = tid; i < rows_here * quads; i += 256) {
        const int r = i / quads, col = (int)split * cols + (i - r * quads) * 4;
        const unsigned off = (unsigned)(r * RED_STRIDE + col) * 4u;
        float4 v[NUM_SPLITS];
#pragma unroll
        for (int sp = 0; sp < NUM_SPLITS; sp++) v[sp] = mt_dsmem_load4(peer[sp] + off);
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
        for (int sp = 0; sp < NUM_SPLITS; sp++) {
            const float w = wts[sp * 64 + r]; /* 0 for a split without keys: its o is not used */
            if (w != 0.0f) a0 += w * v[sp].x, a1 += w * v[sp].y, a2 += w * v[sp].z, a3 += w * v[sp].w;
        }
        mt_u16 *o = out_row(prm, out, b, row0 + r) + col;
#if Q_DTYPE == 0
        *(uint2 *)o = make_uint2(mt_pack_bf16x2(a0, a1), mt_pack_bf16x2(a2, a3));
#else
        *(uint2 *)o = make_uint2(mt_pack_f16x2(a0, a1), mt_pack_f16x2(a2, a3));
#endif
    }
    mt_cluster_sync(); /* the others have read this block's shared memory */
}
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

/* The item's results staged as rows in the idle stages, then stored by a
 * loop in 16-byte pieces, or stored straight from the accumulators (8
 * bytes per lane, 8 rows per warp store).  Staged where that measured
 * faster (reports/PERFLOG.md session 16): views (every store places its
 * row through strides: 11% faster staged, T8_ROWS_STAGED in wgmma_t16.cu
 * says why), and fp32 partial rows when there are more than 32 of them
 * (128 heads with splits: B=8 x 1024 52 -> 39 us); 16 heads' 16 partial
 * rows and results going to out lost 1-6% staged. */
#define W64_ALWAYS_STAGED (VIEWS && NUM_SPLITS == 1 && !SPLIT_REDUCE) /* with splits, views place no partial row */
#define W64_ROW_FLOATS (DL + 8) /* a staged row, padded: a warp's float2 stores (8 rows x 4 lanes) meet a bank at most twice */

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
    mt_u64 *stage_empty = stage_full + 2;
    /* the cluster: ctas row tiles (x; 1 without a cluster) by the splits
     * with split_reduce=1 (y); this block's tile in it, and the rank of
     * the first block of its split's row of tiles */
    const unsigned ctas = mt_cluster_dim_x(), rank = mt_cluster_x(), peer0 = mt_cluster_rank() - rank;

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
    const int quad = lane & 3;
    const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's accumulator rows */
    const int rows = sq * n_heads;
    if (tid == 0) {
        mt_mbar_init(&stage_full[0], 1);
        mt_mbar_init(&stage_full[1], 1);
        mt_mbar_init(&stage_empty[0], (int)ctas); /* one arrival per block of the cluster */
        mt_mbar_init(&stage_empty[1], (int)ctas);
        mt_mbar_init_fence();
    }
    if (ctas > 1) mt_cluster_sync(); /* every block's mbarriers exist before any copy signals them */
    const mt_items items = group_items(sched, rows);
    int chunk_base = 0; /* chunks of the earlier items: the stages' phases run on across items */
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item is done with Q, P, row_alpha and row_limit */
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
    /* the cluster's blocks copy the same chunks: as far as the rows of its
     * last tile see */
    const int tile_end = tile_key_end((int)(blockIdx.x / ctas * ctas + ctas - 1) * 64, rows, len, sq, n_heads, k_end);

    /* chunk copies, issued by one thread (warpgroup 1's first, idle while
     * scores are computed): the boxes holding keys below tile_end */
    const int kb0 = k_begin & ~63;
    auto issue_chunk = [&](int k0, int buf) {
        if (ctas > 1) {
            issue_chunk_multicast(kv_s + buf * WG_TILE_BYTES, &kv_map, pages, k0, tile_end, &stage_full[buf], rank, ctas,
                                  peer0);
            return;
        }
        issue_chunk_copies<128>(kv_s + buf * WG_TILE_BYTES, &kv_map, pages, k0, tile_end, &stage_full[buf]);
    };

    const int n_chunks = tile_end > k_begin ? (tile_end - kb0 + 63) / 64 : 0;
    if (tid == 128 && n_chunks > 0) issue_chunk(kb0, chunk_base & 1);
    mt_cp_async_wait<0>(); /* Q */
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
        /* chunk ci+1 goes into stage buf^1 of every block: this block is
         * done with chunk ci-1 there (tell them all), and waits until all
         * of them are (only where a chunk ci+1 follows: every block skips
         * alike, so the phases stay in step) */
        if (ctas > 1 && tid == 128 && ci >= 1 && ci + 1 < n_chunks) {
            for (unsigned r = 0; r < ctas; r++) mt_mbar_arrive_cluster(&stage_empty[buf ^ 1], peer0 + r);
            mt_mbar_wait_cluster(&stage_empty[buf ^ 1], (unsigned)((cc - 1) >> 1) & 1u);
        }
        if (tid == 128 && ci + 1 < n_chunks) issue_chunk(k0 + 64, buf ^ 1);
        mt_mbar_wait(&stage_full[buf], (unsigned)(cc >> 1) & 1u);
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
    }

    /* warpgroup 0 owns the row statistics: it publishes kv_scale / sum per
     * row and writes lse; then both write their halves of O */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit */
    __syncthreads();       /* warpgroup 1 has read the last alpha */
#if SPLIT_REDUCE
    /* the stages and Q are free now: the partial result and the merge
     * weights go there (cluster_merge_tiles) */
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
    const bool staged = W64_ALWAYS_STAGED || (!DEST_DIRECT(split) && q_rows_here > 32);
    float *o_rows = (float *)kv_s; /* every chunk of the item is consumed: the stages are idle */
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
    cluster_merge_tiles(prm, o_red, lse_red, wts, out, lse, b, rows, row0, q_rows_here, tid, rank, ctas);
#else
    if (staged) { /* the same for the whole work-group */
        __syncthreads();
        for (int k = tid; k < q_rows_here * (DL / 8); k += 256) {
            const int r = k / (DL / 8), c = 8 * (k - r * (DL / 8));
            const float *src = o_rows + r * W64_ROW_FLOATS + c;
            store_o8(prm, out, o_part, b, split, rows, row0 + r, c, *(const float4 *)src, *(const float4 *)(src + 4));
        }
    }
#endif
    chunk_base += n_chunks;
    } /* items */
#if !SPLIT_REDUCE /* (the merge ends with a cluster barrier) */
    if (ctas > 1) mt_cluster_sync(); /* no block of the cluster still arrives on this one's barriers */
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1)
mla_decode(const MT_GRID_CONST mt_decode_params p, const __grid_constant__ mt_tensor_map kv_map) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), kv_map, views_of(p));
}
