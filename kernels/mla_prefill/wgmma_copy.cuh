/*
 * wgmma_copy.cuh - what feeds the prefill family's wgmma path (wgmma.cu):
 * q by cp.async from every thread, once per work-group; the key tiles, k
 * and v, by the tensor copy engine, issued by warp 0 into stages that
 * mbarriers hand between it and the warps (full when a tile's bytes are
 * in, empty when every warp has retired the product that reads it).
 */
/* Copies ROWS rows of BLOCKS 64-column blocks into a swizzled tile of
 * ROWS rows of PW_ROW bytes per block, zeros from row `valid` on, by
 * THREADS threads (the work-group for q, warp 0's lanes for the key tiles'
 * fallback): thread i copies 16-byte piece i % PIECES of rows i / PIECES,
 * i / PIECES + THREADS / PIECES, ...  The 128-byte swizzle moves piece c
 * of row r to c ^ (r % 8), the 64-byte one to c ^ (r / 2 % 4).  src_row0
 * is the first row's first element, rows row_bytes apart. */
template <int ROWS, int BLOCKS, int THREADS>
__device__ __forceinline__ void pw_copy_rows(unsigned char *dst, const unsigned char *src_row0, long long row_bytes,
                                             int valid) {
    constexpr int PIECES = PW_ROW / 16;
    const int i = threadIdx.x % THREADS, piece = i % PIECES;
    for (int r = i / PIECES; r < ROWS; r += THREADS / PIECES) {
        const bool ok = r < valid;
        const int swz = PW_FP8 ? piece ^ ((r >> 1) & 3) : piece ^ (r & 7);
#pragma unroll
        for (int blk = 0; blk < BLOCKS; blk++)
            mt_cp_async16(dst + blk * ROWS * PW_ROW + r * PW_ROW + (swz << 4),
                          ok ? src_row0 + r * row_bytes + blk * PW_ROW + piece * 16 : src_row0, ok ? 16 : 0);
    }
}

/* The tile's q rows -> q_s (zeros past its rows). */
__device__ __forceinline__ void pw_load_q(const mt_prefill_params &p, const pf_tile &t, unsigned char *q_s) {
    pw_copy_rows<TILE_Q, D / 64, BLOCK_THREADS>(
        q_s, (const unsigned char *)pf_row<const pw_elem>(p.q, t.q_first + t.q0, t.head), p.q.t_stride * PW_EB,
        t.rows);
}

/* Warpgroup wg's 64 of the tile's q rows -> q_s, by its 128 threads (the
 * persistent form loads the next tile's rows while the other warpgroup
 * still multiplies by its own). */
__device__ __forceinline__ void pw_load_q_rows_of(const mt_prefill_params &p, const pf_tile &t, unsigned char *q_s,
                                                  int wg) {
    const unsigned char *row0 = (const unsigned char *)pf_row<const pw_elem>(p.q, t.q_first + t.q0 + 64 * wg, t.head);
#pragma unroll
    for (int blk = 0; blk < D / 64; blk++)
        pw_copy_rows<64, 1, 128>(q_s + (blk * TILE_Q + 64 * wg) * PW_ROW, row0 + blk * PW_ROW, p.q.t_stride * PW_EB,
                                 t.rows - 64 * wg);
}

/* ---- the producer warp: key tiles by the tensor copy engine ----------
 * Stages complete on mbarriers: full_k / full_v when a tile's bytes are in
 * (the copy engine counts them), empty_k / empty_v when every consumer warp
 * is past the products that read it.  A box of the maps (launch.c) is 64
 * columns of one head over KV_TILE tokens, landing as the tile's KV_TILE
 * rows of 128 bytes in the 128-byte swizzle.  The maps span 2^31 tokens
 * (the call does not say how many rows k and v have), so a box is asked
 * for only when it ends inside the batch's keys (cu_k[batch]); the last
 * tile of the last request, which may not, is copied by the warp's lanes
 * with cp.async instead, zeros past the tile's last visible key.  Keys
 * past that key inside a TMA box belong to later tokens or requests: real
 * rows, masked, so P is 0 on them. */
struct pw_maps {
    const mt_tensor_map *k, *k_pe, *v;
};

__device__ __forceinline__ void pw_tma_load_3d(void *dst, const mt_tensor_map *map, int col, int head, int row,
                                               mt_u64 *bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(mt_smem_addr(dst)), "l"((mt_u64)map), "r"(col), "r"(head), "r"(row), "r"(mt_smem_addr(bar))
                 : "memory");
}
__device__ __forceinline__ void pw_mbar_arrive(mt_u64 *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mt_smem_addr(bar)) : "memory");
}

/* Column block blk of the k tile: from k below nope, else from k_pe (a
 * map of its own; one row for all heads when its head stride is 0). */
__device__ __forceinline__ void pw_issue_k(const mt_prefill_params &p, const pf_tile &t, const pw_maps &m, int row,
                                           unsigned char *k_s, mt_u64 *full) {
    mt_mbar_expect_tx(full, PW_K_BYTES);
#pragma unroll
    for (int blk = 0; blk < D / 64; blk++) {
        const bool from_k = blk * 64 < p.nope;
        pw_tma_load_3d(k_s + blk * KV_TILE * PW_ROW, from_k ? m.k : m.k_pe, from_k ? blk * 64 : blk * 64 - p.nope,
                       from_k || p.k_pe.h_stride ? t.head : 0, row, full);
    }
}
/* v: 16-bit, 64-column blocks of key rows (MN-major for P V); fp8, v^T
 * from the workspace (wgmma_fp8.cuh): 64-key blocks of DL rows, the map
 * over (key, column, request x head), k0 the tile's first key, heads the
 * call's. */
__device__ __forceinline__ void pw_issue_v(const pf_tile &t, const pw_maps &m, int row, int k0, int heads,
                                           unsigned char *v_s, mt_u64 *full) {
    mt_mbar_expect_tx(full, PW_V_BYTES);
#if PW_FP8
    (void)row;
#pragma unroll
    for (int blk = 0; blk < KV_TILE / 64; blk++)
        pw_tma_load_3d(v_s + blk * DL * PW_ROW, m.v, k0 + blk * 64, 0, t.b * heads + t.head, full);
#else
    (void)k0, (void)heads;
#pragma unroll
    for (int blk = 0; blk < DL / 64; blk++) pw_tma_load_3d(v_s + blk * KV_TILE * 128, m.v, blk * 64, t.head, row, full);
#endif
}

/* The fallback: warp 0's lanes copy the tile (pw_copy_rows), wait for
 * the copies, make them visible to the wgmma, and one lane arrives. */
__device__ __forceinline__ void pw_copy_k(const mt_prefill_params &p, const pf_tile &t, int k0, unsigned char *k_s) {
    const long long row = t.k_first + k0;
#pragma unroll
    for (int blk = 0; blk < D / 64; blk++) {
        const bool from_k = blk * 64 < p.nope;
        const unsigned char *src = from_k ? (const unsigned char *)(pf_row<const pw_elem>(p.k, row, t.head) + blk * 64)
                                          : (const unsigned char *)(pf_row<const pw_elem>(p.k_pe, row, t.head) +
                                                                    (blk * 64 - p.nope));
        pw_copy_rows<KV_TILE, 1, 32>(k_s + blk * KV_TILE * PW_ROW, src,
                                     (from_k ? p.k.t_stride : p.k_pe.t_stride) * PW_EB, t.key_end - k0);
    }
}
__device__ __forceinline__ void pw_copy_v(const mt_prefill_params &p, const pf_tile &t, int k0, unsigned char *v_s) {
#if PW_FP8
    (void)p, (void)t, (void)k0, (void)v_s; /* never: v^T's rows are padded to whole tiles */
#else
    pw_copy_rows<KV_TILE, DL / 64, 32>(v_s, (const unsigned char *)pf_row<const mt_u16>(p.v, t.k_first + k0, t.head),
                                       p.v.t_stride * 2, t.key_end - k0);
#endif
}
__device__ __forceinline__ void pw_copied(mt_u64 *full) {
    mt_cp_async_commit(); /* wait_group waits for committed groups only */
    mt_cp_async_wait<0>();
    mt_fence_proxy_async();
    __syncwarp();
    if ((threadIdx.x & 31) == 0) pw_mbar_arrive(full);
}

/* Key tile j of tile t, the work-group's g-th key tile (its stream: g = j
 * in the grid form, counted across its tiles in the persistent one), its k
 * (K) or v (V) into stage g % 2, by warp 0 (lane 0 asks the copy engine;
 * all lanes copy in the fallback), once every consumer warp has released
 * the stream's tile two before in that stage. */
template <bool V>
__device__ __forceinline__ void pw_produce(const mt_prefill_params &p, const pf_tile &t, const pw_maps &m, int j, int g,
                                           unsigned char *stages, mt_u64 *full, mt_u64 *empty) {
    const int st = g & 1, use = g >> 1, k0 = j * KV_TILE, row = t.k_first + k0;
    unsigned char *dst = stages + st * (V ? PW_V_BYTES : PW_K_BYTES);
    if (use > 0) mt_mbar_wait(&empty[st], (unsigned)(use - 1) & 1u);
    /* the box ends inside the batch's keys (fp8's v^T: always, its rows padded) */
    if ((V && PW_FP8) || row + KV_TILE <= ((const int *)p.cu_k)[p.batch]) {
        if ((threadIdx.x & 31) == 0) {
            if (V) pw_issue_v(t, m, row, k0, PERSISTENT ? p.n_heads : (int)gridDim.y, dst, &full[st]);
            else pw_issue_k(p, t, m, row, dst, &full[st]);
        }
    } else {
        if (V) pw_copy_v(p, t, k0, dst);
        else pw_copy_k(p, t, k0, dst);
        pw_copied(&full[st]);
    }
}
