/*
 * wgmma_t16.cu - the transposed warpgroup path (mma = 2, tile_q 16, or
 * 32 with fp8 KV; NVIDIA Hopper, wgmma): products computed as K Q^T so 16
 * (32) query rows fill the instruction's narrow side; 16-bit or fp8 KV.
 */
/* ---- the transposed warpgroup path (NVIDIA sm_90a, wgmma) ---------------
 * For 16 query rows (16 heads), where the 64-row tile of the path below
 * would waste three quarters of every product: the products are
 * transposed so the 64 rows a wgmma needs are keys and output columns, and
 * the 16 query rows (heads) are its N:
 *   S^T [64 keys x 16]   = K [64 x D] . Q^T
 *   O^T [512 x 16]      += V^T [512 x 64] . P^T
 * with Q^T and P^T (16 rows each, K-major) in shared memory.  With fp8 KV
 * the A operands come from registers: the fp8 bytes are converted to fp16
 * on the way in (exact), so no converted copy of a chunk is kept in shared
 * memory; there a tile may also take 32 rows (tile_q 32: N = 32, O^T 128
 * registers a thread), so 64+ heads read and convert each chunk once per 32
 * of them: the conversion, not the products, is most of a chunk's time
 * (H100: 1.6x faster than 16 rows at 64 and 128 heads, B=128).  With 16-bit KV (q of the same type) the A operands are read
 * from the stage by descriptor, K as stored (K-major) and V^T from the V
 * rows as stored (MN-major), in the 128-byte swizzle of the path below; a
 * chunk then costs a quarter of that path's products, which matters where
 * the bytes do not hide the arithmetic: a call's last chunk, and every
 * chunk of the short per-split ranges of small batches.
 *
 * Work split: the two warpgroups take alternate 64-key chunks (warpgroup w
 * the chunks w, w+2, ...), each with its own online softmax and O^T, and
 * copy stages of its own (fp8: two, so chunk i+2 of a warpgroup is in
 * flight while it computes chunk i; 16-bit: one, 73.7 KB, while the other
 * warpgroup's chunk is in flight); they merge at the end as two splits
 * would.  So a warpgroup never waits for the other one, and one converts
 * or computes the softmax while the other's products run.
 *
 * fp8 chunks come through the tensor copy engine as 64-byte-wide boxes
 * (one per 64 columns, page piece) in the 64-byte swizzle, so that both
 * the 16-byte K loads and the transposing V loads (ldmatrix.trans) of a
 * warp hit 32 distinct banks; 16-bit chunks as 128-byte-wide boxes in the
 * 128-byte swizzle the wgmma descriptors read.
 *
 * K as the A operand: lane (g, q) of warp wi holds keys 16wi+g and
 * 16wi+g+8.  Per 64-column block it loads 16 bytes of each key row
 * (columns 16q .. 16q+15), and those feed the four k16 steps of the block:
 * step s takes bytes 4s..4s+3, i.e. the reduction index runs over D in a
 * permuted order (t8_dim below).  Q^T is stored in the same order, so the
 * dot products are unchanged.
 * V^T as the A operand: ldmatrix.trans over 8 keys x 16 columns (as
 * 16-bit pairs) gives a lane 2 keys x 2 columns; one byte permute and two
 * conversions make the two A registers of columns 2g and 2g+1.  Rows g and
 * g+8 of an m64 tile are the columns 16wi+2g and 16wi+2g+1 of a 64-column
 * block, so each lane ends with adjacent output columns (pair stores).
 *
 * Shared memory (kept equal to mt_mla_decode_shared_bytes; N = T8_N, 16 or 32):
 *   q_s        [D/64][N rows][128 B]   Q^T, 128-byte swizzle: fp8 KV: fp16, permuted
 *                                      columns; 16-bit KV: q as given
 *   kv_s       KV_STAGES x [D/64][64 keys][64 or 128 B]  the stages (fp8: raw,
 *                                      64-byte swizzle; 16-bit: 128-byte swizzle);
 *                                      at the end warpgroup 1's O^T for the merge
 *   p_s        2 x [N rows][128 B]     P^T of each warpgroup's chunk, the mma type
 *   red        [2 wg][2][4 warps][N]   column maxima (double-buffered), then sums and maxima
 *   row_limit  [N] int, q_amax [8] f32, stage_full [KV_STAGES] mbarrier
 *   length-aware only (N 16): o_x [16 x 512] f32 (warpgroup 1's O^T at an
 *   item's end), q_stage [16 rows][D] 16-bit (an item's q rows, copied ahead)
 * Fixed shape (checked in mla_decode.c): 256 threads, 64-key chunks, 4
 * stages for fp8 KV and 2 for 16-bit KV (q of the same type), DL 512,
 * D % 64 == 0, PAGE_SIZE >= 16. */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != (KV_FP8 ? 4 : 2) || DL != 512 || D % 64 != 0 || \
    (!KV_FP8 && Q_CONVERT) || !(TILE_Q == 16 || (TILE_Q == 32 && KV_FP8 && !GROUPS_PER_CU))
#error "mma=2 with tile_q 16 takes 256 threads, 64-key chunks, 4 stages (fp8 KV) or 2 (16-bit KV, q of its type), Dl 512, D % 64 == 0; tile_q 32 fp8 KV and fixed splits"
#endif
/* T8_N query rows (heads) are the products' N: 16, or 32 with fp8 KV, where
 * 64+ heads would otherwise read every chunk once per 16 of them.  A lane
 * holds T8_H of them (head 8 (h / 2) + 2 qd + h % 2 in slot h) and T8_ACC
 * accumulators per 64-row product (slots 4 (h / 2) + h % 2, and + 2 for
 * the row 8 below). */
#define T8_N TILE_Q
#define T8_H (T8_N / 4)
#define T8_ACC (T8_N / 2)
#define T8_ROW_BYTES (KV_FP8 ? 64 : 128)        /* a stage row of 64 columns */
#define T8_BLOCK_BYTES (64 * T8_ROW_BYTES)      /* 64 keys x 64 columns */
#define T8_STAGE_BYTES ((D / 64) * T8_BLOCK_BYTES)
#define T8_STAGES_PER_WG (KV_STAGES / 2)
#define T8_Q_BLOCK_BYTES (T8_N * 128)           /* T8_N rows x 64 16-bit columns */
#define T8_P_BYTES (T8_N * 128)                 /* P^T of a warpgroup: T8_N rows x 64 keys, 16-bit */
#define T8_RED_FLOATS (8 * T8_N)                /* a warpgroup's exchange: 2 chunks x 4 warps x T8_N */

/* d[T8_ACC] (+)= A[64 x 16] * B[16 x T8_N], A (fp16) in registers, B
 * K-major in shared memory: the prelude's m64n16k16 form, or its m64n32k16
 * twin (here, as only this path has 32 columns). */
#if T8_N == 32
#define T8_WGMMA_N32_RS                                                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "                                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "               \
                 "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"                                          \
                 : MT_OUT8(0), MT_OUT8(8)                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
#endif
__device__ __forceinline__ void t8_wgmma_rs(float *d, const mt_u32 *a, mt_u64 b_desc, int accumulate) {
#if T8_N == 32
    T8_WGMMA_N32_RS;
#else
    mt_wgmma_m64n16k16_rs<1>(d, a, b_desc, accumulate);
#endif
}

/* Byte offset of 16-byte piece c (0..3) of row r in a block of 64-byte
 * rows stored in the copy engine's 64-byte swizzle (blocks 512-byte aligned). */
__device__ __forceinline__ int t8_swizzle64(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

/* The column of q / K that position p (0..15) of k16 step ks holds (the
 * order the K registers are filled in: lane q's bytes 4s..4s+3 of its 16). */
__device__ __forceinline__ int t8_dim(int ks, int p) {
    return 64 * (ks >> 2) + 16 * ((p & 7) >> 1) + 4 * (ks & 3) + (p >= 8 ? 2 : 0) + (p & 1);
}

/* f16x2 of the two fp8 e4m3 bytes in the low / high half of w (the halves
 * split by a mov, so no shift is needed for the high one); fnuz KV, which
 * has no instruction, through the prelude's exact software form */
__device__ __forceinline__ mt_u32 t8_cvt_lo(mt_u32 w) {
#if KV_DTYPE == 3
    return kv_fp8x2_to_f16x2((mt_u16)(w & 0xffffu));
#else
    mt_u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(r) : "r"(w));
    return r;
#endif
}
__device__ __forceinline__ mt_u32 t8_cvt_hi(mt_u32 w) {
#if KV_DTYPE == 3
    return kv_fp8x2_to_f16x2((mt_u16)(w >> 16));
#else
    mt_u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}" : "=r"(r) : "r"(w));
    return r;
#endif
}

/* ---- work items on this path ------------------------------------------------
 * The items (mt_item) of a work-group, one or a stretch of the length-aware
 * schedule, each with its chunk loop's bound (tile_end).  Each warpgroup's
 * chunks form one stream over all the items of the work-group: a stage
 * freed by the last chunk of one item is refilled with the first chunk of
 * the next, so the copies never wait for an item's end. */
struct t8_item {
    mt_item i;
    int tile_end;
};
#if GROUPS_PER_CU
#define T8_MERGE_BYTES (T8_N * 512 * 4) /* warpgroup 1's O^T at an item's end */
#define T8_Q_STAGE_BYTES (T8_N * D * 2) /* the next item's q rows, as stored */
#else
#define T8_MERGE_BYTES 0
#define T8_Q_STAGE_BYTES 0
#endif

/* How an item's results leave: staged (1) as rows in shared memory, then
 * stored in 16-byte pieces by a loop, or direct (0) from the accumulators,
 * a store per register.  The direct form, unrolled, is 36 KB of code, and
 * 110 KB when each store places its row through the call's strides (views):
 * that kernel ran the same instructions (+1.5%) in 38% more time, most
 * likely fetching its code.  Staged, a views plan on the ragged B=32
 * long-tail batch took 65.8 us instead of 99.6, and plain length-aware
 * calls 0-4% less; but a fixed-split grid of few keys per work-group (B=1)
 * took 1.2-2.5 us more, so it keeps the direct form (reports/PERFLOG.md
 * session 16), views or not: with splits its rows go to partials, which
 * views do not place (a views plan's B=1 x 16384 took 24.4 us staged
 * against 20.5 for the plain plan). */
#define T8_ROWS_STAGED (GROUPS_PER_CU || (VIEWS && NUM_SPLITS == 1))

/* The item's result rows in o_x, row-major [T8_N][512] floats: eight-column
 * groups swapped by row pair ((r >> 1) & 3), so the stores of a warp (rows
 * 2qd + c, columns g) meet 32 banks; a group stays whole, so a row is read
 * back in 16-byte pieces. */
__device__ __forceinline__ int t8_out_at(int r, int col) { return r * 512 + (col ^ (((r >> 1) & 3) << 3)); }

__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched, const mt_tensor_map &kv_map, const mt_views prm) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *kv_s = q_s + (D / 64) * T8_Q_BLOCK_BYTES;
    unsigned char *p_s = kv_s + KV_STAGES * T8_STAGE_BYTES;
    float *red = (float *)(p_s + 2 * T8_P_BYTES);
    int *row_limit = (int *)(red + 2 * T8_RED_FLOATS);
    float *q_amax = (float *)(row_limit + T8_N);
    mt_u64 *stage_full = (mt_u64 *)(q_amax + 8);
    /* where warpgroup 1's O^T meets warpgroup 0's: the stages when they
     * are idle at the end (one item), a buffer of its own otherwise */
    float *o_x = GROUPS_PER_CU ? (float *)(stage_full + KV_STAGES) : (float *)kv_s;
    /* length-aware: q's rows of an item are copied here (asynchronously,
     * during the item before), and Q^T is built from this copy: a load of
     * q from memory at an item's start waited behind the KV stream for
     * 5-7 us, the price of every extra item (reports/PERFLOG.md session 15) */
    mt_u16 *q_stage = (mt_u16 *)(o_x + T8_MERGE_BYTES / 4);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    MT_TRACE_DECL;
    MT_TRACE_MARK(0);
    (void)seq_lens;
    const int tid = threadIdx.x, wg = tid >> 7, wtid = tid & 127, wi = wtid >> 5, lane = tid & 31;
    const int g = lane >> 2, qd = lane & 3;
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    const int first_item = 0, end_item = items.count;
    auto item_at_t8 = [&](int i) {
        t8_item it;
        it.i = item_at(items, i, seq_lens);
        it.tile_end = tile_key_end(it.i.row0, rows, it.i.len, sq, n_heads, it.i.k_end);
        return it;
    };
    MT_TRACE_MARK(1); /* the first item is known */
    /* q's rows of item i into q_stage, as one group of asynchronous copies
     * (length-aware only; rows past the request's are never read) */
    auto stage_q = [&](int i) {
#if GROUPS_PER_CU
        const mt_item n = item_at(items, i, seq_lens);
        const int here = min(T8_N, rows - n.row0);
        for (int k = tid; k < here * (D / 8); k += 256) {
            const int r = k / (D / 8), u = k - r * (D / 8);
            mt_cp_async16(q_stage + r * D + u * 8, q_at(prm, q, n.b, n.row0 + r, u * 8), 16);
        }
        mt_cp_async_commit();
#else
        (void)i;
#endif
    };
    if (first_item < end_item) stage_q(first_item);
    /* warpgroup w takes chunks w, w + 2, ... of an item (its local chunk
     * li is the item's chunk w + 2 li) */
    auto chunks_of = [&](const t8_item &it, int w) {
        const int n = it.tile_end > it.i.k_begin ? (it.tile_end - (it.i.k_begin & ~63) + 63) / 64 : 0;
        return n > w ? (n - w + 1) / 2 : 0;
    };
    /* a warpgroup's copy cursor: (item, local chunk) of the next chunk of
     * its stream to issue; item == end_item when none is left */
    struct cursor { int item, li; };
    auto settle = [&](int w, cursor &c) {
        while (c.item < end_item && c.li >= chunks_of(item_at_t8(c.item), w)) c.item++, c.li = 0;
    };
    auto issue = [&](int w, cursor &c, int st) {
        const t8_item it = item_at_t8(c.item);
        issue_chunk_copies<T8_ROW_BYTES>(kv_s + st * T8_STAGE_BYTES, &kv_map, block_table + (size_t)it.i.b * max_blocks,
                                         (it.i.k_begin & ~63) + 64 * (w + 2 * c.li), it.tile_end, &stage_full[st]);
        c.li++;
        settle(w, c);
    };
    /* position p of warpgroup w's stream uses stage T8_STAGES_PER_WG w + p % T8_STAGES_PER_WG */
    cursor cur = {first_item, 0}; /* this warpgroup's, kept by its thread wtid 0 */
    if (tid == 0) {
        for (int i = 0; i < KV_STAGES; i++) mt_mbar_init(&stage_full[i], 1);
        mt_mbar_init_fence();
    }
    __syncthreads(); /* the barriers are initialised */
    if (wtid == 0) {
        /* each warpgroup's first thread issues its stream's first chunks,
         * the two side by side (each walks the lengths and the block table
         * to its chunks: dependent loads from memory, which one thread
         * issuing both streams paid twice in a row, 4.5 us before the last
         * copy went out), and before Q^T is built, so q's trip to memory
         * overlaps theirs */
        settle(wg, cur);
        for (int p = 0; p < T8_STAGES_PER_WG && cur.item < end_item; p++) issue(wg, cur, T8_STAGES_PER_WG * wg + p);
    }
    MT_TRACE_MARK(2); /* the warpgroup's first copies are issued */

    const mt_u64 q_desc = mt_wgmma_desc(q_s, 16, 1024);
    unsigned char *p_w = p_s + wg * T8_P_BYTES;
    const mt_u64 p_desc = mt_wgmma_desc(p_w, 16, 1024);
    float *red_w = red + wg * T8_RED_FLOATS;
    const int bar_wg = 1 + wg, key_r = 16 * wi + g;
    int pos = 0; /* this warpgroup's position in its stream */

    for (int ii = first_item; ii < end_item; ii++) {
    const t8_item it = item_at_t8(ii);
    const int b = it.i.b, split = it.i.dest, row0 = it.i.row0, len = it.i.len, k_begin = it.i.k_begin;
    const int tile_end = it.tile_end;
    const int kb0 = k_begin & ~63;
#if GROUPS_PER_CU
    mt_cp_async_wait<0>(); /* this thread's copies of the item's q rows */
    __syncthreads(); /* everyone's; and the last item's merge is done with Q^T, red and o_x */
#endif
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);
    /* q's element `col` of the tile's row r */
    auto q_src = [&](int r, int col) -> const mt_u16 * {
#if GROUPS_PER_CU
        return q_stage + r * D + col;
#else
        return q_at(prm, q, b, row0 + r, col);
#endif
    };

    /* Q^T: piece u (8 positions) of row r holds q columns t8_dim(u / 2,
     * 8 (u % 2) + 0..7), read as 4 pairs; bf16 q is scaled by a power of
     * two into fp16's range first (q_fp16_factor, divided out of the
     * scores) */
    const int q_rows_here = min(T8_N, rows - row0);
    float q_factor = 1.0f;
#if !KV_FP8
    /* 16-bit KV: Q^T is q as given, 16-byte pieces in the 128-byte swizzle */
    for (int i = tid; i < T8_N * (D / 8); i += 256) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        const uint4 w = r < q_rows_here ? *(const uint4 *)q_src(r, u * 8) : make_uint4(0u, 0u, 0u, 0u);
        *(uint4 *)(q_s + mt_swizzle128(r, u, T8_N)) = w;
    }
#else
#if Q_DTYPE == 0
    {
        float amax = 0.0f;
        for (int i = tid; i < q_rows_here * (D / 2); i += 256) {
            const int r = i / (D / 2);
            amax = fmaxf(amax, bf16_pair_absmax(*(const mt_u32 *)q_src(r, 2 * (i - r * (D / 2)))));
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
    for (int i = tid; i < T8_N * (D / 8); i += 256) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        mt_u32 w[4] = {0u, 0u, 0u, 0u};
        if (r < q_rows_here) {
#pragma unroll
            for (int pp = 0; pp < 4; pp++)
                w[pp] = q_pair_to_mma(*(const mt_u32 *)q_src(r, t8_dim(u >> 1, 8 * (u & 1) + 2 * pp)),
                                      q_factor);
        }
        *(uint4 *)(q_s + mt_swizzle128(r, u, T8_N)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
#endif
    mt_fence_proxy_async(); /* Q^T, for the wgmma */
    __syncthreads();
    if (ii == first_item) MT_TRACE_MARK(3); /* Q^T is built */
    if (ii + 1 < end_item) stage_q(ii + 1); /* q_stage is free again */
    const int n_mine = chunks_of(it, wg);

    /* this lane's heads: slot 2j + e is head 8j + 2 qd + e */
    int lim[T8_H], lim_min = tile_end;
#pragma unroll
    for (int h = 0; h < T8_H; h++) {
        lim[h] = min(row_limit[8 * (h >> 1) + 2 * qd + (h & 1)], tile_end);
        lim_min = min(lim_min, lim[h]);
    }
    const float s_scale = scale * kv_scale * LOG2E / q_factor; /* scores in the log2 domain */
    float m_run[T8_H], l_run[T8_H];
#pragma unroll
    for (int h = 0; h < T8_H; h++) m_run[h] = MT_NEG_INF, l_run[h] = 0.0f;
    float o[8][T8_ACC];
#pragma unroll
    for (int t = 0; t < 8; t++)
#pragma unroll
        for (int i = 0; i < T8_ACC; i++) o[t][i] = 0.0f;

    for (int li = 0; li < n_mine; li++, pos++) {
        const int k0 = kb0 + 64 * (wg + 2 * li), st = T8_STAGES_PER_WG * wg + pos % T8_STAGES_PER_WG;
        unsigned char *stg = kv_s + st * T8_STAGE_BYTES;
        mt_mbar_wait(&stage_full[st], (unsigned)(pos / T8_STAGES_PER_WG) & 1u);
        if (ii == first_item && li == 0) MT_TRACE_MARK(4); /* the first chunk has landed */
        if (k0 + 64 > tile_end) {
            zero_key_rows<T8_ROW_BYTES>(stg, tile_end - k0, wtid, 128);
#if !KV_FP8
            mt_fence_proxy_async(); /* the zeros, for the wgmma */
#endif
            mt_bar_sync(bar_wg, 128);
        }

        /* S^T = K Q^T: per 64-column block, 16 bytes of each of this lane's
         * two keys -> the A registers of 4 k16 steps (two register sets,
         * so one block converts while the previous one's products run) */
        float s[T8_ACC];
#pragma unroll
        for (int i = 0; i < T8_ACC; i++) s[i] = 0.0f;
#if !KV_FP8
        /* 16-bit KV: K (A, K-major) and Q^T (B) by descriptor, 4 k16 steps
         * per 64-column block */
        {
            const mt_u64 k_desc = mt_wgmma_desc(stg, 16, 1024);
            mt_wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < D / 16; ks++)
                mt_wgmma_m64n16k16_ss<MMA_FP16, 0>(s, k_desc + (((ks >> 2) * T8_BLOCK_BYTES + (ks & 3) * 32) >> 4),
                                                   q_desc + (((ks >> 2) * T8_Q_BLOCK_BYTES + (ks & 3) * 32) >> 4),
                                                   ks != 0);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
        }
#else
        mt_u32 af[2][16];
        /* the next block's bytes are loaded before this block is converted,
         * so the shared-memory latency hides behind the conversions */
        uint4 next_lo = *(const uint4 *)(stg + t8_swizzle64(key_r, qd));
        uint4 next_hi = *(const uint4 *)(stg + t8_swizzle64(key_r + 8, qd));
#pragma unroll
        for (int j = 0; j < D / 64; j++) {
            const uint4 lo = next_lo, hi = next_hi;
            if (j + 1 < D / 64) {
                next_lo = *(const uint4 *)(stg + (j + 1) * T8_BLOCK_BYTES + t8_swizzle64(key_r, qd));
                next_hi = *(const uint4 *)(stg + (j + 1) * T8_BLOCK_BYTES + t8_swizzle64(key_r + 8, qd));
            }
            const mt_u32 wl[4] = {lo.x, lo.y, lo.z, lo.w}, wh[4] = {hi.x, hi.y, hi.z, hi.w};
            mt_u32 *a = af[j & 1];
#pragma unroll
            for (int ss = 0; ss < 4; ss++) {
                a[4 * ss + 0] = t8_cvt_lo(wl[ss]), a[4 * ss + 1] = t8_cvt_lo(wh[ss]);
                a[4 * ss + 2] = t8_cvt_hi(wl[ss]), a[4 * ss + 3] = t8_cvt_hi(wh[ss]);
            }
            mt_wgmma_fence();
#pragma unroll
            for (int ss = 0; ss < 4; ss++)
                t8_wgmma_rs(s, a + 4 * ss, q_desc + ((j * T8_Q_BLOCK_BYTES + ss * 32) >> 4), (j | ss) != 0);
            mt_wgmma_commit();
            if (j > 0) {
                mt_wgmma_wait<1>();
                mt_wgmma_pin_a<16>(af[(j - 1) & 1]);
            }
        }
        mt_wgmma_wait<0>();
        mt_wgmma_pin_a<16>(af[(D / 64 - 1) & 1]);
#endif
        mt_wgmma_pin<T8_ACC>(s);
        if (ii == first_item && li == 0) MT_TRACE_MARK(5); /* its scores are done */

        /* online softmax per head (a column of S^T): mask (only a chunk
         * that starts before the split or crosses a limit), column max over
         * the lane's two keys, the 8 lanes of its quad column and the 4 warps
         * (through red, double-buffered by chunk) */
        const int ka = k0 + key_r, kb = ka + 8;
        if (k0 < k_begin || k0 + 64 > lim_min) {
#pragma unroll
            for (int h = 0; h < T8_H; h++) {
                const int i = 4 * (h >> 1) + (h & 1);
                if (ka < k_begin || ka >= lim[h]) s[i] = MT_NEG_INF;
                if (kb < k_begin || kb >= lim[h]) s[i + 2] = MT_NEG_INF;
            }
        }
        float cm[T8_H];
#pragma unroll
        for (int h = 0; h < T8_H; h++) {
            const int i = 4 * (h >> 1) + (h & 1);
            cm[h] = fmaxf(s[i], s[i + 2]);
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 4));
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 8));
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 16));
        }
        float *rb = red_w + (li & 1) * 4 * T8_N;
        if (g == 0) {
#pragma unroll
            for (int h = 0; h < T8_H; h++) rb[wi * T8_N + 8 * (h >> 1) + 2 * qd + (h & 1)] = cm[h];
        }
        mt_bar_sync(bar_wg, 128);
        float alpha[T8_H];
        bool rescale = false;
#pragma unroll
        for (int h = 0; h < T8_H; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            const float cmax = fmaxf(fmaxf(rb[hd], rb[T8_N + hd]), fmaxf(rb[2 * T8_N + hd], rb[3 * T8_N + hd]));
            const float mn = fmaxf(m_run[h], cmax * s_scale);
            alpha[h] = m_run[h] == MT_NEG_INF ? 0.0f : mt_exp2f(m_run[h] - mn);
            const float sub = mn == MT_NEG_INF ? 0.0f : mn;
            m_run[h] = mn;
            const int i = 4 * (h >> 1) + (h & 1);
            const float pa = mt_exp2f(fmaf(s[i], s_scale, -sub)), pb = mt_exp2f(fmaf(s[i + 2], s_scale, -sub));
            l_run[h] = l_run[h] * alpha[h] + pa + pb;
            const mt_u32 pp = pack_mma(pa, pb);
            *(mt_u16 *)(p_w + mt_swizzle128(hd, key_r >> 3, T8_N) + (key_r & 7) * 2) = (mt_u16)(pp & 0xffffu);
            *(mt_u16 *)(p_w + mt_swizzle128(hd, (key_r + 8) >> 3, T8_N) + (key_r & 7) * 2) = (mt_u16)(pp >> 16);
            rescale |= alpha[h] != 1.0f;
        }
        mt_fence_proxy_async(); /* P^T, for the wgmma */
        if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
            for (int t = 0; t < 8; t++)
#pragma unroll
                for (int h = 0; h < T8_H; h++) {
                    const int i = 4 * (h >> 1) + (h & 1);
                    o[t][i] *= alpha[h], o[t][i + 2] *= alpha[h];
                }
        }
        mt_bar_sync(bar_wg, 128); /* P^T is whole */

#if !KV_FP8
        /* O^T += V^T P^T: per 64-column block t, V^T (A, MN-major: the
         * block's 64 columns by 16 keys per k16 step) by descriptor */
        mt_wgmma_fence();
#pragma unroll
        for (int t = 0; t < DL / 64; t++) {
            const mt_u64 v_desc = mt_wgmma_desc(stg + t * T8_BLOCK_BYTES, T8_BLOCK_BYTES, 1024);
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                mt_wgmma_m64n16k16_ss<MMA_FP16, 1>(o[t], v_desc + ((kk * 2048) >> 4), p_desc + ((kk * 32) >> 4), 1);
        }
        mt_wgmma_commit();
        mt_wgmma_wait<0>();
#else
        /* O^T += V^T P^T: per 64-column block t, two ldmatrix.trans of 4 x
         * (8 keys x 16 columns) give the A registers of its 4 k16 steps */
        mt_u32 vf[2][16], next_v[2][4]; /* next_v: the next block's bytes, loaded ahead as for K */
#pragma unroll
        for (int half = 0; half < 2; half++)
            mt_ldmatrix_x4_trans(next_v[half], stg + t8_swizzle64(32 * half + 8 * (lane >> 3) + (lane & 7), wi));
#pragma unroll
        for (int t = 0; t < DL / 64; t++) {
            mt_u32 *a = vf[t & 1], raw[2][4];
#pragma unroll
            for (int half = 0; half < 2; half++)
#pragma unroll
                for (int i = 0; i < 4; i++) raw[half][i] = next_v[half][i];
            if (t + 1 < DL / 64) {
#pragma unroll
                for (int half = 0; half < 2; half++)
                    mt_ldmatrix_x4_trans(next_v[half], stg + (t + 1) * T8_BLOCK_BYTES +
                                                           t8_swizzle64(32 * half + 8 * (lane >> 3) + (lane & 7), wi));
            }
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const mt_u32 *r = raw[half];
#pragma unroll
                for (int mi = 0; mi < 4; mi++) {
                    /* r[mi] = (key 2qd: columns 2g, 2g+1 | key 2qd+1: the same) */
                    const mt_u32 w = __byte_perm(r[mi], 0u, 0x3120);
                    const int at = 4 * (2 * half + (mi >> 1)) + 2 * (mi & 1);
                    a[at] = t8_cvt_lo(w), a[at + 1] = t8_cvt_hi(w);
                }
            }
            mt_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) t8_wgmma_rs(o[t], a + 4 * kk, p_desc + ((kk * 32) >> 4), 1);
            mt_wgmma_commit();
            if (t > 0) {
                mt_wgmma_wait<1>();
                mt_wgmma_pin_a<16>(vf[(t - 1) & 1]);
            }
        }
        mt_wgmma_wait<0>();
        mt_wgmma_pin_a<16>(vf[(DL / 64 - 1) & 1]);
#endif
#pragma unroll
        for (int t = 0; t < 8; t++) mt_wgmma_pin<T8_ACC>(o[t]);
        mt_bar_sync(bar_wg, 128); /* the stage and P^T are free */
        if (wtid == 0 && cur.item < end_item) issue(wg, cur, st);
        MT_TRACE_MARK(6); /* the latest chunk is done */
    }

    /* merge the two warpgroups: sums over the warpgroup, then warpgroup 1
     * hands its maxima, sums and O^T to warpgroup 0 through shared memory */
#pragma unroll
    for (int h = 0; h < T8_H; h++) {
        l_run[h] += mt_shfl_xor(l_run[h], 4);
        l_run[h] += mt_shfl_xor(l_run[h], 8);
        l_run[h] += mt_shfl_xor(l_run[h], 16);
    }
    if (g == 0) {
#pragma unroll
        for (int h = 0; h < T8_H; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            red_w[wi * T8_N + hd] = l_run[h];
            if (wi == 0) red_w[4 * T8_N + hd] = m_run[h];
        }
    }
    __syncthreads(); /* both are done with the item (one item: every copy has landed and been read) */
    if (wg == 1) {
#pragma unroll
        for (int t = 0; t < 8; t++)
#pragma unroll
            for (int i = 0; i < T8_ACC; i++) o_x[(t * T8_ACC + i) * 128 + wtid] = o[t][i];
    }
    __syncthreads();
    /* warpgroup 0 merges the two: each head's factors (and its lse) */
    if (wg == 0) {
        float f0[T8_H], f1[T8_H];
        const float *red1 = red + T8_RED_FLOATS; /* warpgroup 1's */
#pragma unroll
        for (int h = 0; h < T8_H; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            const float l0 = red[hd] + red[T8_N + hd] + red[2 * T8_N + hd] + red[3 * T8_N + hd];
            const float l1 = red1[hd] + red1[T8_N + hd] + red1[2 * T8_N + hd] + red1[3 * T8_N + hd];
            const float m0 = red[4 * T8_N + hd], m1 = red1[4 * T8_N + hd], mx = fmaxf(m0, m1);
            f0[h] = m0 == MT_NEG_INF ? 0.0f : mt_exp2f(m0 - mx);
            f1[h] = m1 == MT_NEG_INF ? 0.0f : mt_exp2f(m1 - mx);
            const float l = l0 * f0[h] + l1 * f1[h];
            if (wi == 0 && g == 0 && row0 + hd < rows) {
                store_lse(prm, lse, lse_part, b, split, rows, row0 + hd, row_lse(mx, l));
            }
            const float inv = l > 0.0f ? kv_scale / l : 0.0f;
            f0[h] *= inv, f1[h] *= inv;
        }
#if T8_ROWS_STAGED
        /* merged into its registers, then the rows into o_x, row-major */
#pragma unroll
        for (int t = 0; t < 8; t++)
#pragma unroll
            for (int h = 0; h < T8_H; h++) {
                const int i = 4 * (h >> 1) + (h & 1);
                o[t][i] = o[t][i] * f0[h] + o_x[(t * T8_ACC + i) * 128 + wtid] * f1[h];
                o[t][i + 2] = o[t][i + 2] * f0[h] + o_x[(t * T8_ACC + i + 2) * 128 + wtid] * f1[h];
            }
        mt_bar_sync(bar_wg, 128); /* warpgroup 0 has read o_x: it takes the rows now */
#endif
#pragma unroll
        for (int t = 0; t < 8; t++) {
#pragma unroll
            for (int h = 0; h < T8_H; h++) {
                /* fp8: accumulator rows g and g + 8 are adjacent columns (the
                 * V^T rows were permuted); 16-bit: columns g and g + 8 (V^T
                 * read in order) */
                const int hd = 8 * (h >> 1) + 2 * qd + (h & 1), i = 4 * (h >> 1) + (h & 1);
                const int col = 64 * t + 16 * wi + (KV_FP8 ? 2 * g : g), step = KV_FP8 ? 1 : 8;
#if T8_ROWS_STAGED
                o_x[t8_out_at(hd, col)] = o[t][i];
                o_x[t8_out_at(hd, col + step)] = o[t][i + 2];
#else
                const float v0 = o[t][i] * f0[h] + o_x[(t * T8_ACC + i) * 128 + wtid] * f1[h];
                const float v1 = o[t][i + 2] * f0[h] + o_x[(t * T8_ACC + i + 2) * 128 + wtid] * f1[h];
                if (row0 + hd >= rows) continue;
#if KV_FP8
                store_o_pair(prm, out, o_part, b, split, rows, row0 + hd, col, v0, v1);
#else
                store_o(prm, out, o_part, b, split, rows, row0 + hd, col, v0);
                store_o(prm, out, o_part, b, split, rows, row0 + hd, col + step, v1);
#endif
#endif
            }
        }
    }
#if T8_ROWS_STAGED
    __syncthreads();
    /* the rows to out (or to the item's partial slot) in 16-byte pieces by
     * every thread: a loop, where the direct form is a store per
     * accumulator register, unrolled, each placing its row */
    for (int k = tid; k < q_rows_here * (DL / 8); k += 256) {
        const int r = k / (DL / 8), c = 8 * (k - r * (DL / 8));
        const float *src = o_x + t8_out_at(r, c);
        store_o8(prm, out, o_part, b, split, rows, row0 + r, c, *(const float4 *)src, *(const float4 *)(src + 4));
    }
#endif
    } /* items */
    MT_TRACE_MARK(7);
    /* kinds 0 and 1: the warpgroups' first threads; the reduce prints them */
    if (wtid == 0) MT_TRACE_KEEP(wg, wg, 2);
}

extern "C" __global__ void __launch_bounds__(256, 1)
mla_decode(const MT_GRID_CONST mt_decode_params p, const __grid_constant__ mt_tensor_map kv_map) {
    mla_decode_body(MT_DECODE_BODY_ARGS(p), kv_map, views_of(p));
}
