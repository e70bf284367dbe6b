/*
 * wgmma_common.cuh - what both warpgroup paths (wgmma64.cu, wgmma_t16.cu)
 * share: the cluster merge of splits and the tensor-copy chunk loads.
 */
#if !MT_CUDA || !defined(MT_HAVE_WGMMA)
#error "the warpgroup paths need NVIDIA Hopper (sm_90a): wgmma and the tensor copy engine"
#endif
#if SPLIT_REDUCE
/* split_reduce=1: the NUM_SPLITS blocks of a row tile form one cluster
 * (launched with cluster shape 1 x NUM_SPLITS x 1, so the cluster rank is
 * the split) and merge their partial results through distributed shared
 * memory instead of a workspace and the reduce kernel.  Each block leaves
 * its rows' normalised O (o_red, fp32, rows RED_STRIDE floats apart: the
 * pad spreads a warp's row-pair stores over the banks) and lse (lse_red) in
 * its own shared memory; after a cluster barrier, block r merges output
 * columns [r, r + 1) * DL / NUM_SPLITS of every row from all blocks, with
 * the reduce kernel's weights (lse = log sum_i exp(lse_i), o = sum_i
 * exp(lse_i - lse) o_i), and writes them; a second barrier keeps every
 * block's shared memory alive until the others have read it.  wts is
 * scratch for the weights, [NUM_SPLITS][64]. */
#if NUM_SPLITS < 2 || NUM_SPLITS > 16 || DL % (4 * NUM_SPLITS) != 0
#error "split_reduce=1 takes 2..16 splits, each merging a multiple of 4 columns"
#endif
#define RED_STRIDE (DL + 8)
__device__ __forceinline__ void cluster_merge(const mt_views &prm, const float *o_red, const float *lse_red,
                                              float *wts, mt_u16 *out, float *lse, int b, int rows, int row0, int rows_here, int tid,
                                              int threads) {
    const unsigned rank = mt_cluster_rank();
    mt_cluster_sync(); /* every block's o_red and lse_red are written */
    for (int i = tid; i < NUM_SPLITS * rows_here; i += threads) {
        const int sp = i / rows_here, r = i - sp * rows_here;
        wts[sp * 64 + r] = mt_dsmem_load(mt_dsmem_addr(lse_red + r, sp));
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
        if (rank == 0) *lse_at(prm, lse, b, row0 + tid) = merged_lse(m, total);
    }
    __syncthreads();
    unsigned peer[NUM_SPLITS]; /* o_red in each block of the cluster */
#pragma unroll
    for (int sp = 0; sp < NUM_SPLITS; sp++) peer[sp] = mt_dsmem_addr(o_red, sp);
    const int cols = DL / NUM_SPLITS, quads = cols / 4;
    for (int i = tid; i < rows_here * quads; i += threads) {
        const int r = i / quads, col = (int)rank * cols + (i - r * quads) * 4;
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
/* ---- chunk copies shared by both warpgroup paths below ------------------
 * A stage holds one 64-key chunk as D/64 blocks of 64 key rows, each row
 * ROW_BYTES wide (64 columns: 128 bytes of 16-bit KV, 64 of fp8), written
 * by the tensor copy engine in the swizzle of that width. */
#if PAGE_SIZE >= 16
#define BOX_ROWS (PAGE_SIZE < 64 ? PAGE_SIZE : 64) /* keys per copy: a page, or 64 keys of one */

/* Issued by one thread: the copies of the chunk starting at key k0 (a
 * multiple of 64) into `stage`, one box per column block and page piece,
 * only the boxes holding keys below tile_end; they complete on `full`. */
template <int ROW_BYTES>
__device__ __forceinline__ void issue_chunk_copies(unsigned char *stage, const mt_tensor_map *map, const int *pages,
                                                   int k0, int tile_end, mt_u64 *full) {
    const int boxes = min(64 / BOX_ROWS, (tile_end - k0 + BOX_ROWS - 1) / BOX_ROWS);
    mt_mbar_expect_tx(full, (unsigned)(boxes * (D / 64) * BOX_ROWS * ROW_BYTES));
    for (int bx = 0; bx < boxes; bx++) {
        const int key = k0 + bx * BOX_ROWS;
        const int row = pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE;
#pragma unroll
        for (int blk = 0; blk < D / 64; blk++)
            mt_tma_load_2d(stage + blk * 64 * ROW_BYTES + bx * BOX_ROWS * ROW_BYTES, map, blk * 64, row, full);
    }
}
#else
/* Pages of fewer than 16 keys (SGLang's page 1): a copy-engine box per page
 * and column block is 576 boxes per chunk at page 1, and issued by a warp
 * they took 4x the time of this (reports/PERFLOG.md session 26), so the
 * key rows are gathered by cp.async instead (the 64-row 16-bit path only: constraints.c), issued
 * by the 128 threads of one warpgroup (t = 0..127) while the other computes
 * the scores: warp w copies key rows w, w + 4, ..., its lanes a row's D/8
 * 16-byte pieces into the stage's swizzled blocks (the layout the boxes
 * write).  Rows at or past tile_end are zero-filled (no source bytes), so
 * P V meets no NaN from a page's unused tail.  One commit group; the issuers
 * wait for it and fence it for the matrix units before the work-group
 * barrier that hands the stage over (W64_GATHER in wgmma64.cu). */
#define W64_GATHER 1
__device__ __forceinline__ void gather_chunk_rows(unsigned char *stage, const mt_u16 *kv, const int *pages, int k0,
                                                  int tile_end, int t) {
    const int warp = t >> 5, lane = t & 31;
    /* the warp's 16 block-table entries first, one per lane (lanes 0-15:
     * rows warp + 4 * lane), handed to the row copies by shuffles: a load
     * per row put its latency before each row's copies, and the chunk took
     * 3x the copy engine's time (reports/PERFLOG.md session 26) */
    const int my_key = k0 + warp + 4 * (lane & 15);
    const int my_row = my_key < tile_end ? pages[my_key / PAGE_SIZE] * PAGE_SIZE + my_key % PAGE_SIZE : 0;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        const int r = warp + 4 * i;
        const int valid = k0 + r < tile_end ? 16 : 0;
        const mt_u16 *row = kv + (size_t)__shfl_sync(0xffffffffu, my_row, i) * D;
        for (int u = lane; u < D / 8; u += 32) mt_cp_async16(stage + mt_swizzle128(r, u, 64), row + u * 8, valid);
    }
    mt_cp_async_commit();
}
#endif

/* The last chunk: zeroes key rows first..63 of every block (whole rows, so
 * the swizzle does not matter); a page's unused tail may hold anything, and
 * P V must not meet a NaN.  `tid` counts from 0 over `threads` threads. */
template <int ROW_BYTES>
__device__ __forceinline__ void zero_key_rows(unsigned char *stage, int first, int tid, int threads) {
    const int per_row = (D / 64) * (ROW_BYTES / 16); /* 16-byte pieces of a key over all blocks */
    for (int i = tid; i < (64 - first) * per_row; i += threads) {
        const int r = first + i / per_row, rem = i % per_row;
        *(uint4 *)(stage + (rem / (ROW_BYTES / 16)) * 64 * ROW_BYTES + r * ROW_BYTES + (rem % (ROW_BYTES / 16)) * 16) =
            make_uint4(0u, 0u, 0u, 0u);
    }
}
