/*
 * wgmma64_epilogue.cuh - the end of an item on the three 64-row paths
 * (wgmma64.cu, wgmma64_seesaw.cu, wgmma64_fp8.cu): results staged as rows
 * in the idle KV stages, then stored; partial rows by the copy engine.
 */
#if TILE_Q != 64 || BLOCK_THREADS != 256
#error "the 64-row epilogue takes tile_q 64 and 256 threads"
#endif

/* The item's results staged as rows in the idle stages, then stored, or
 * stored straight from the accumulators (8 bytes per lane, 8 rows per warp
 * store).  Staged where that measured faster (reports/PERFLOG.md session
 * 16): views (every store places its row through strides: 11% faster
 * staged, T8_ROWS_STAGED in wgmma_t16.cu says why), and fp32 partial rows
 * when there are more than 32 of them (128 heads with splits: B=8 x 1024
 * 52 -> 39 us); 16 heads' 16 partial rows and results going to out lost
 * 1-6% staged. */
#define W64_ALWAYS_STAGED (VIEWS && NUM_SPLITS == 1 && !SPLIT_REDUCE) /* with splits, views place no partial row */
#define W64_ROW_FLOATS (DL + 8) /* a staged row, padded: a warp's float2 stores (8 rows x 4 lanes) meet a bank at most twice */

__device__ __forceinline__ bool w64_staged(int dest, int q_rows_here) {
    return W64_ALWAYS_STAGED || (!DEST_DIRECT(dest) && q_rows_here > 32);
}

/* Staged partial rows (fp32: a piece of a cut request, or a split) leave
 * through the copy engine, one bulk copy per row (they lie consecutive in
 * o_part), issued by the lanes of warp W64_BULK_WARP (lane i: rows i and
 * i + 32), each lane its own bulk group.  The work-group goes on to its next item while the 128 KB
 * drain: stored by a thread loop, a tile's partial held every SM ~7 us
 * (reports/PERFLOG.md session 22, item 4; session 23 measured the
 * difference).  The stages they are read from are reused, and the
 * work-group ends, once the copies have read them (w64_staged_rows_read:
 * before the barrier that opens the next item, and at the end; the
 * writes are done before the grid is, which is what the reduce waits for,
 * as for any store). */
#define W64_BULK_WARP 4
__device__ __forceinline__ void w64_bulk_store(void *dst, const void *src, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(mt_smem_addr(src)),
                 "r"(bytes)
                 : "memory");
}

/* On the fixed-split grid (wgmma64.cu), results for out without views
 * (the contiguous layout, where a tile's rows lie consecutive too) are
 * staged as rows of out's 16-bit type and leave by bulk copies the same
 * way: 128 heads B=128 x 1024 97.8 -> 92.1 us, x 4096 287.8 -> 283.6
 * (reports/PERFLOG.md session 23).  Not in the length-aware form, where
 * the same made every ragged 128-head batch 1-6% slower (its whole
 * requests' rows, stored straight from the accumulators, leave while the
 * next item starts), nor on the overlapped and fp8 paths (not measured). */
#define W64_OUT16_HALVES (DL + 8) /* a staged 16-bit row, padded: a warp's 4-byte stores (8 rows x 4 lanes) meet 32 banks */
__device__ __forceinline__ bool w64_out16(int dest) { return !VIEWS && !GROUPS_PER_CU && DEST_DIRECT(dest); }
__device__ __forceinline__ mt_u32 w64_pack_out(float x, float y) {
    return (mt_u32)store_out(x) | (mt_u32)store_out(y) << 16;
}

/* Every thread of the work-group, each having staged its values in
 * `stage` (fp32 rows W64_ROW_FLOATS apart, or 16-bit rows
 * W64_OUT16_HALVES apart for w64_out16): the rows go to out (views
 * placing them) or to the partial slot. */
__device__ __forceinline__ void w64_store_staged(const mt_views &prm, mt_u16 *out, float *o_part, int b, int dest,
                                                 int rows, int row0, int q_rows_here, const void *stage, int tid) {
    const float *o_rows = (const float *)stage;
    const bool bulk = !DEST_DIRECT(dest) || w64_out16(dest);
    if (bulk) mt_fence_proxy_async(); /* the staged rows, for the copy engine */
    __syncthreads();
    if (w64_out16(dest)) {
        if (tid / MT_WARP == W64_BULK_WARP) {
            const mt_u16 *o16 = (const mt_u16 *)stage;
            const int r = tid % MT_WARP;
            mt_u16 *dst = out_row(prm, out, b, row0 + r);
            if (r < q_rows_here) w64_bulk_store(dst, o16 + r * W64_OUT16_HALVES, DL * 2);
            if (r + 32 < q_rows_here) w64_bulk_store(dst + 32 * DL, o16 + (r + 32) * W64_OUT16_HALVES, DL * 2);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    } else if (!bulk) {
        for (int k = tid; k < q_rows_here * (DL / 8); k += 256) {
            const int r = k / (DL / 8), c = 8 * (k - r * (DL / 8));
            const float *src = o_rows + r * W64_ROW_FLOATS + c;
            store_o8(prm, out, o_part, b, dest, rows, row0 + r, c, *(const float4 *)src, *(const float4 *)(src + 4));
        }
    } else if (tid / MT_WARP == W64_BULK_WARP) {
        const int r = tid % MT_WARP;
        float *dst = o_part + (PART_ROW(b, dest, rows, row0) + r) * DL;
        if (r < q_rows_here) w64_bulk_store(dst, o_rows + r * W64_ROW_FLOATS, DL * sizeof(float));
        if (r + 32 < q_rows_here) w64_bulk_store(dst + 32 * DL, o_rows + (r + 32) * W64_ROW_FLOATS, DL * sizeof(float));
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}

/* The last item's copies have read the stages (a no-op without any). */
__device__ __forceinline__ void w64_staged_rows_read(int tid) {
    if (tid / MT_WARP == W64_BULK_WARP) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
