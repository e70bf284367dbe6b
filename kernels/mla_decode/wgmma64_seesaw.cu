/*
 * wgmma64_seesaw.cu - the 64-row warpgroup path with the overlapped
 * ("seesaw") schedule: wg_schedule = 1 (mma = 2, tile_q 64, NVIDIA Hopper,
 * 16-bit KV).  Compiled instead of wgmma64.cu, whose schedule it replaces:
 * there warpgroup 0 computes every chunk's scores and softmax while
 * warpgroup 1 waits, so the matrix units idle through each softmax.
 *
 * The schedule (the one DeepSeek's FlashMLA deep-dive calls "seesaw";
 * written here from its description).  Each warpgroup owns half of O's
 * columns: O_L = O[:, 0:256] in warpgroup 0's registers, O_R = O[:, 256:512]
 * in warpgroup 1's (128 fp32 per thread, the wgmma accumulator layout).
 * Chunks (64 keys) go in pairs (A, B) = (2p, 2p + 1); m is the rows'
 * running max (log2 domain), the same in both warpgroups:
 *   wg0: S_A = Q K_A^T; m_A = max(m, rowmax S_A); P_A = 2^(S_A - m_A);
 *        publish m_A; O_L = O_L * 2^(m - m_A) + P_A V_A,L (P from registers)
 *   wg1: S_B = Q K_B^T (at the same time as S_A); waits for m_A;
 *        m_B = max(m_A, rowmax S_B); P_B = 2^(S_B - m_B); P_B to shared
 *        memory, publish m_B; O_R = O_R * 2^(m - m_B) + P_B V_B,R
 *   wg0: waits for m_B; P_A' = P_A * 2^(m_A - m_B) to shared memory;
 *        O_L = O_L * 2^(m_A - m_B) + P_B V_B,L (P_B from shared memory)
 *   wg1: waits for P_A'; O_R += P_A' V_A,R
 * so one warpgroup's softmax runs while the other's products keep the
 * matrix units busy, and each chunk's scores are computed once.  The row
 * sums follow the same factors (wg0 sums P_A', wg1 P_B; added at the end).
 *
 * Where P goes: a chunk's last 64-column block (its rope part, D > DL)
 * is read by the scores only, so once a warpgroup's S of that chunk is done
 * the block holds its P (64 x 64, 16-bit, the 128-byte swizzle of every
 * block): no P buffer of its own, and the shared memory is Q + two stages
 * (+ 1.8 KB), as on the plain path.
 *
 * Copies: two stages (Q 72 KB + 2 x 72 KB of 227 KB leave no room for a
 * third), chunk A of every pair in one, chunk B in the other, each chunk
 * copied in two parts with an mbarrier each, so that the half of a stage
 * that one warpgroup is done with is refilled without waiting for the other:
 *   part 0: the owner's own V half (blocks 0-3 for A, 4-7 for B): read by
 *     the owner's S and its own P V only, refilled by the owner as soon as
 *     that P V is done (mid-pair);
 *   part 1: the other V half and the rope blocks (P): refilled by the other
 *     warpgroup once its P V with this chunk is done (end of the pair).
 * The owner's S of the next chunk in that stage starts on part 0 (the
 * k-steps taken in that order) while part 1 is still arriving.
 *
 * Named barriers (0 is __syncthreads; each is arrived at by one warpgroup
 * and waited on by the other, once per pair, which the order of the steps
 * keeps from running ahead by a pair):
 *   SS_BAR_MA  wg0 -> wg1: m_A is in sm_a
 *   SS_BAR_MB  wg1 -> wg0: m_B is in sm_b, P_B in chunk B's P block
 *   SS_BAR_PA  wg0 -> wg1: P_A' is in chunk A's P block, and wg0's P V with
 *              chunk A is done
 *   SS_BAR_Z0/1 within one warpgroup: the last chunk's rows past the end
 *              are zeroed
 *
 * Everything else is the plain path's: the length-aware items, fixed
 * splits with partials or the cluster merge, masking of the first chunk
 * (keys before the split) and of rows' limits, zeroed key rows past the
 * last key (P V must not meet a NaN), views, the staged epilogue.
 *
 * Shared memory (kept equal to mt_mla_decode_shared_bytes), from the first
 * 1024-byte boundary:
 *   q_s        [D/64][64 rows][128 B]         Q
 *   kv_s       2 x [D/64][64 keys][128 B]     the stages (last block: P)
 *   sm_a, sm_b [64] f32 each                  m_A, m_B per row; at the end the sums
 *   row_limit  [64] int
 *   full       [2 stages][2 parts] mbarrier
 */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if TILE_Q != 64 || BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != 2 || DL != 512 || D % 64 != 0 || \
    KV_FP8 || Q_CONVERT
#error "mma=2 takes tile_q 64, 256 threads, 64-key chunks, 2 stages, Dl 512, D % 64 == 0, q and KV of one 16-bit type"
#endif
#if D < DL + 64 || D / 64 > 32
#error "wg_schedule=1 keeps P in a chunk's last (rope) block: it needs D >= Dl + 64"
#endif
#define SS_BLOCK_BYTES (64 * 128)               /* 64 rows x 64 16-bit columns */
#define SS_TILE_BYTES ((D / 64) * SS_BLOCK_BYTES) /* 64 rows x D */
#define SS_PIECES (D / 8)                       /* 16-byte pieces per row */
#define SS_P_BLOCK (D / 64 - 1)                 /* a stage's block that holds P once the scores are done */
#define SS_ALL_BLOCKS ((1u << (D / 64)) - 1u)
#define SS_OWN_BLOCKS(role) (0xfu << (4 * (role))) /* the V half of warpgroup `role`: part 0 of its chunks */
#define SS_BAR_MA 2
#define SS_BAR_MB 3
#define SS_BAR_PA 4
#define SS_BAR_Z0 5 /* + warpgroup */

/* O rows r0 / r1 of this thread *= a0 / a1, skipped while the whole warp's
 * rows keep their max (the factor is then exactly 1). */
__device__ __forceinline__ void ss_rescale_rows(float *acc, float a0, float a1) {
    if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        acc[4 * j] *= a0, acc[4 * j + 1] *= a0;
        acc[4 * j + 2] *= a1, acc[4 * j + 3] *= a1;
    }
}

/* Issued by one thread: the copies of the column blocks in `mask` (bit j =
 * block j) of the chunk starting at key k0 into `stage`, the boxes holding
 * keys below tile_end; they complete on `full`. */
__device__ __forceinline__ void ss_issue_blocks(unsigned char *stage, const mt_tensor_map *map, const int *pages,
                                                int k0, int tile_end, unsigned mask, mt_u64 *full) {
    const int boxes = min(64 / BOX_ROWS, (tile_end - k0 + BOX_ROWS - 1) / BOX_ROWS);
    mt_mbar_expect_tx(full, (unsigned)(boxes * __popc(mask) * BOX_ROWS * 128));
    for (int bx = 0; bx < boxes; bx++) {
        const int key = k0 + bx * BOX_ROWS;
        const int row = pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE;
#pragma unroll
        for (int blk = 0; blk < D / 64; blk++)
            if ((mask >> blk) & 1u) mt_tma_load_2d(stage + blk * SS_BLOCK_BYTES + bx * BOX_ROWS * 128, map, blk * 64, row, full);
    }
}

/* The scores of the chunk in `stage` owned by warpgroup ROLE: s[32] = Q K^T
 * (36 k-steps of m64n64k16), part 0's blocks (ROLE's V half) first, then
 * part 1's as they arrive; returns with the products done. */
template <int ROLE>
__device__ __forceinline__ void ss_scores(float *s, mt_u64 q_desc, const unsigned char *stage, mt_u64 *full,
                                          unsigned parity) {
    const mt_u64 k_desc = mt_wgmma_desc(stage, 16, 1024);
#pragma unroll
    for (int i = 0; i < 32; i++) s[i] = 0.0f;
    mt_mbar_wait(&full[0], parity);
    mt_wgmma_fence();
#pragma unroll
    for (int blk = 4 * ROLE; blk < 4 * ROLE + 4; blk++)
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            const int off = (blk * SS_BLOCK_BYTES + ks * 32) >> 4;
            mt_wgmma_m64n64k16_ss<MMA_FP16>(s, q_desc + off, k_desc + off, 1);
        }
    mt_mbar_wait(&full[1], parity);
    /* a fence after the wait's loop, with products in flight: without one
     * ptxas fences on its own in the divergent path and serializes every
     * wgmma of the kernel (C7520) */
    mt_wgmma_fence();
#pragma unroll
    for (int blk = 0; blk < D / 64; blk++) {
        if (blk >= 4 * ROLE && blk < 4 * ROLE + 4) continue;
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            const int off = (blk * SS_BLOCK_BYTES + ks * 32) >> 4;
            mt_wgmma_m64n64k16_ss<MMA_FP16>(s, q_desc + off, k_desc + off, 1);
        }
    }
    mt_wgmma_commit();
    mt_wgmma_wait<0>();
    mt_wgmma_pin<32>(s);
}

/* Scores of keys a row must not see -> -inf: only in a chunk that starts
 * before the split's first key or crosses a row's limit (a row's 64 scores
 * live in the 4 lanes of a quad: s[4j + e] row r0, s[4j + 2 + e] row r1,
 * key k0 + 8j + 2 quad + e). */
__device__ __forceinline__ void ss_mask(float *s, int k0, int k_begin, int lim0, int lim1, int quad) {
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
}

/* The raw scores' row maxima over the quad (the scale is positive, so it
 * is applied after). */
__device__ __forceinline__ void ss_row_max(const float *s, float *mx0, float *mx1) {
    float a = MT_NEG_INF, c = MT_NEG_INF;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        a = fmaxf(a, fmaxf(s[4 * j], s[4 * j + 1]));
        c = fmaxf(c, fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    a = fmaxf(a, mt_shfl_xor(a, 1)), c = fmaxf(c, mt_shfl_xor(c, 1));
    a = fmaxf(a, mt_shfl_xor(a, 2)), c = fmaxf(c, mt_shfl_xor(c, 2));
    *mx0 = a, *mx1 = c;
}

/* 2^(from - to): the factor that moves sums at max `from` to max `to`
 * (0 while `from` is -inf: nothing was summed). */
__device__ __forceinline__ float ss_factor(float from, float to) { return from == MT_NEG_INF ? 0.0f : mt_exp2f(from - to); }

/* p = 2^(s * s_scale - m) in place (masked scores give 0 against a finite
 * max; a row with no key yet has m = -inf and subtracts 0), their sums
 * over this thread's keys, and P packed as the A operand of the 4 k-steps
 * of P V (pf[kk]: rows r0 / r1, keys 16 kk .. 16 kk + 15). */
__device__ __forceinline__ void ss_softmax(float *s, float s_scale, float m0, float m1, float *ps0, float *ps1,
                                           mt_u32 (*pf)[4]) {
    const float sub0 = m0 == MT_NEG_INF ? 0.0f : m0, sub1 = m1 == MT_NEG_INF ? 0.0f : m1;
    float a = 0.0f, c = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        s[4 * j] = mt_exp2f(fmaf(s[4 * j], s_scale, -sub0));
        s[4 * j + 1] = mt_exp2f(fmaf(s[4 * j + 1], s_scale, -sub0));
        s[4 * j + 2] = mt_exp2f(fmaf(s[4 * j + 2], s_scale, -sub1));
        s[4 * j + 3] = mt_exp2f(fmaf(s[4 * j + 3], s_scale, -sub1));
        a += s[4 * j] + s[4 * j + 1], c += s[4 * j + 2] + s[4 * j + 3];
        pf[j >> 1][(j & 1) * 2] = pack_mma(s[4 * j], s[4 * j + 1]);
        pf[j >> 1][(j & 1) * 2 + 1] = pack_mma(s[4 * j + 2], s[4 * j + 3]);
    }
    *ps0 = a, *ps1 = c;
}

/* This thread's P values (times f0 / f1 per row) into the P block, in the
 * layout of the A operand in shared memory (64 rows x 64 keys, K-major,
 * 128-byte swizzle), then made visible to the other warpgroup's wgmma. */
__device__ __forceinline__ void ss_store_p(unsigned char *pblk, const float *p, float f0, float f1, int r0, int r1,
                                           int quad) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        *(mt_u32 *)(pblk + mt_swizzle128(r0, j, 64) + quad * 4) = pack_mma(p[4 * j] * f0, p[4 * j + 1] * f0);
        *(mt_u32 *)(pblk + mt_swizzle128(r1, j, 64) + quad * 4) = pack_mma(p[4 * j + 2] * f1, p[4 * j + 3] * f1);
    }
    mt_fence_proxy_async();
}

/* acc += P V_half over the chunk's 64 keys: P from registers (pf) or from
 * a P block (p_desc), V half `half` of the stage (MN-major, 4 blocks). */
__device__ __forceinline__ void ss_pv_rs(float *acc, mt_u32 (*pf)[4], const unsigned char *stage, int half) {
    const mt_u64 v_desc = mt_wgmma_desc(stage + half * 4 * SS_BLOCK_BYTES, SS_BLOCK_BYTES, 1024);
#pragma unroll
    for (int kk = 0; kk < 4; kk++) mt_wgmma_m64n256k16_rs<MMA_FP16>(acc, pf[kk], v_desc + kk * (2048 >> 4), 1);
}
__device__ __forceinline__ void ss_pv_ss(float *acc, const unsigned char *stage, int half) {
    const mt_u64 v_desc = mt_wgmma_desc(stage + half * 4 * SS_BLOCK_BYTES, SS_BLOCK_BYTES, 1024);
    const mt_u64 p_desc = mt_wgmma_desc(stage + SS_P_BLOCK * SS_BLOCK_BYTES, 16, 1024);
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
        mt_wgmma_m64n256k16_ss<MMA_FP16>(acc, p_desc + kk * (32 >> 4), v_desc + kk * (2048 >> 4), 1);
}

__device__ __forceinline__ void
mla_decode_body(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched, const mt_tensor_map &kv_map, const mt_views prm) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle pattern repeats every 1024 bytes of the shared address */
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *kv_s = q_s + SS_TILE_BYTES;
    float *sm_a = (float *)(kv_s + 2 * SS_TILE_BYTES);
    float *sm_b = sm_a + 64;
    int *row_limit = (int *)(sm_b + 64);
    mt_u64 *full = (mt_u64 *)(row_limit + 64); /* [stage * 2 + part] */

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
    const int quad = lane & 3;
    const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's accumulator rows */
    const int rows = sq * n_heads;
    if (tid == 0) {
#pragma unroll
        for (int i = 0; i < 4; i++) mt_mbar_init(&full[i], 1);
        mt_mbar_init_fence();
    }
    const mt_items items = group_items(sched, rows);
    int chunk_base = 0; /* chunks of the earlier items: the stages' phases run on across items */
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) {
        w64_staged_rows_read(tid);
        __syncthreads(); /* the previous item is done with Q, the stages and the row values */
    }
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* Q by cp.async (its own group, the oldest); rows past the request's are zeros */
    const int q_rows_here = min(64, rows - row0);
    for (int i = tid; i < 64 * SS_PIECES; i += 256) {
        const int r = i / SS_PIECES, u = i - r * SS_PIECES;
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + mt_swizzle128(r, u, 64), valid ? q_at(prm, q, b, row0 + r, u * 8) : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);
    const int kb0 = k_begin & ~63;
    const int n_chunks = tile_end > k_begin ? (tile_end - kb0 + 63) / 64 : 0;
    /* chunk ci of the item: stage (chunk_base + ci) & 1, phase parity
     * ((chunk_base + ci) >> 1) & 1 on both of its part barriers; its owner
     * (the warpgroup computing its scores) is ci & 1 */
    auto stage_of = [&](int ci) { return kv_s + ((chunk_base + ci) & 1) * SS_TILE_BYTES; };
    auto full_of = [&](int ci) { return full + ((chunk_base + ci) & 1) * 2; };
    auto parity_of = [&](int ci) { return (unsigned)((chunk_base + ci) >> 1) & 1u; };
    /* chunk ci's part `part`, issued by one thread */
    auto issue_part = [&](int ci, int part) {
        const unsigned own = SS_OWN_BLOCKS(ci & 1);
        ss_issue_blocks(stage_of(ci), &kv_map, pages, kb0 + ci * 64, tile_end, part ? SS_ALL_BLOCKS & ~own : own,
                        full_of(ci) + part);
    };
    /* the first pair, each chunk by a thread of its owner */
    if ((tid & 127) == 0 && wg < n_chunks) issue_part(wg, 0), issue_part(wg, 1);
    mt_cp_async_wait<0>(); /* Q */
    mt_fence_proxy_async();
    __syncthreads();

    const float s_scale = scale * kv_scale * LOG2E; /* scores in the log2 domain */
    const int lim0 = min(row_limit[r0], tile_end), lim1 = min(row_limit[r1], tile_end);
    float m0 = MT_NEG_INF, m1 = MT_NEG_INF; /* the rows' running max (log2 domain), as both warpgroups know it */
    float l0 = 0.0f, l1 = 0.0f;             /* this thread's part of the rows' sums at that max */
    float acc[128];                         /* O_L (warpgroup 0) or O_R (warpgroup 1) */
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.0f;
    const mt_u64 q_desc = mt_wgmma_desc(q_s, 16, 1024);

    for (int ca = 0; ca < n_chunks; ca += 2) {
        const int cb = ca + 1;
        const bool has_b = cb < n_chunks; /* the last pair of an odd count has chunk A only */
        unsigned char *st_a = stage_of(ca), *st_b = stage_of(cb);
        const int k0a = kb0 + ca * 64, k0b = kb0 + cb * 64;
        float s[32];        /* scores, then P, of this warpgroup's chunk */
        mt_u32 pf[4][4];    /* that P as the A operand of P V */
        if (wg == 0) {
            /* ---- warpgroup 0: chunk A's scores and softmax, P_A V_A,L, then P_B V_B,L ---- */
            if (k0a + 64 > tile_end) { /* the last chunk: rows past the end zeroed (whole rows of every block) */
                mt_mbar_wait(full_of(ca), parity_of(ca));
                mt_mbar_wait(full_of(ca) + 1, parity_of(ca));
                zero_key_rows<128>(st_a, tile_end - k0a, tid, 128);
                mt_fence_proxy_async();
                mt_bar_sync(SS_BAR_Z0, 128);
            }
            ss_scores<0>(s, q_desc, st_a, full_of(ca), parity_of(ca));
            ss_mask(s, k0a, k_begin, lim0, lim1, quad);
            float mx0, mx1;
            ss_row_max(s, &mx0, &mx1);
            const float ma0 = fmaxf(m0, mx0 * s_scale), ma1 = fmaxf(m1, mx1 * s_scale);
            if (quad == 0) sm_a[r0] = ma0, sm_a[r1] = ma1;
            mt_bar_arrive(SS_BAR_MA, 256);
            const float fa0 = ss_factor(m0, ma0), fa1 = ss_factor(m1, ma1);
            float ps0, ps1;
            ss_softmax(s, s_scale, ma0, ma1, &ps0, &ps1, pf);
            ss_rescale_rows(acc, fa0, fa1);
            mt_wgmma_fence();
            ss_pv_rs(acc, pf, st_a, 0);
            mt_wgmma_commit();
            /* m_B from warpgroup 1 while P_A V_A,L runs */
            float mb0 = ma0, mb1 = ma1;
            if (has_b) {
                mt_bar_sync(SS_BAR_MB, 256);
                mb0 = sm_b[r0], mb1 = sm_b[r1];
            }
            const float fb0 = ss_factor(ma0, mb0), fb1 = ss_factor(ma1, mb1);
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
            mt_wgmma_pin_a<16>(&pf[0][0]);
            /* chunk A's V_L half is free (read by S_A and P_A V_A,L only): the next A chunk's part 0 */
            if (tid == 0 && ca + 2 < n_chunks) issue_part(ca + 2, 0);
            /* P_A at m_B for warpgroup 1, in chunk A's P block (S_A is done with it) */
            ss_store_p(st_a + SS_P_BLOCK * SS_BLOCK_BYTES, s, fb0, fb1, r0, r1, quad);
            mt_bar_arrive(SS_BAR_PA, 256);
            l0 = (l0 * fa0 + ps0) * fb0, l1 = (l1 * fa1 + ps1) * fb1;
            m0 = mb0, m1 = mb1;
            if (has_b) {
                ss_rescale_rows(acc, fb0, fb1);
                mt_wgmma_fence();
                ss_pv_ss(acc, st_b, 0);
                mt_wgmma_commit();
                mt_wgmma_wait<0>();
                mt_wgmma_pin<128>(acc);
                /* chunk B's V_L half and P block are free (S_B finished before
                 * P_B was written; P_B V_B,L is done): the next B chunk's part 1 */
                if (tid == 0 && cb + 2 < n_chunks) issue_part(cb + 2, 1);
            }
        } else {
            /* ---- warpgroup 1: chunk B's scores and softmax, P_B V_B,R, then P_A' V_A,R ---- */
            float mx0 = MT_NEG_INF, mx1 = MT_NEG_INF;
            if (has_b) {
                if (k0b + 64 > tile_end) {
                    mt_mbar_wait(full_of(cb), parity_of(cb));
                    mt_mbar_wait(full_of(cb) + 1, parity_of(cb));
                    zero_key_rows<128>(st_b, tile_end - k0b, tid - 128, 128);
                    mt_fence_proxy_async();
                    mt_bar_sync(SS_BAR_Z0 + 1, 128);
                }
                ss_scores<1>(s, q_desc, st_b, full_of(cb), parity_of(cb));
                ss_mask(s, k0b, k_begin, lim0, lim1, quad);
                ss_row_max(s, &mx0, &mx1);
            }
            mt_bar_sync(SS_BAR_MA, 256); /* m_A */
            const float ma0 = sm_a[r0], ma1 = sm_a[r1];
            const float fa0 = ss_factor(m0, ma0), fa1 = ss_factor(m1, ma1);
            const float mb0 = fmaxf(ma0, mx0 * s_scale), mb1 = fmaxf(ma1, mx1 * s_scale);
            const float fb0 = ss_factor(ma0, mb0), fb1 = ss_factor(ma1, mb1);
            if (has_b) {
                float ps0, ps1;
                ss_softmax(s, s_scale, mb0, mb1, &ps0, &ps1, pf);
                /* P_B for warpgroup 0, in chunk B's P block (S_B is done with it) */
                ss_store_p(st_b + SS_P_BLOCK * SS_BLOCK_BYTES, s, 1.0f, 1.0f, r0, r1, quad);
                if (quad == 0) sm_b[r0] = mb0, sm_b[r1] = mb1;
                mt_bar_arrive(SS_BAR_MB, 256);
                l0 = l0 * fa0 * fb0 + ps0, l1 = l1 * fa1 * fb1 + ps1;
                ss_rescale_rows(acc, fa0 * fb0, fa1 * fb1);
                mt_wgmma_fence();
                ss_pv_rs(acc, pf, st_b, 1);
                mt_wgmma_commit();
            } else {
                l0 *= fa0, l1 *= fa1;
                ss_rescale_rows(acc, fa0, fa1);
            }
            mt_bar_sync(SS_BAR_PA, 256); /* P_A' (and warpgroup 0's P_A V_A,L is done) */
            /* the rescale of an odd pair, and the barrier's wait with P_B V_B,R
             * in flight (see ss_scores on C7520), need a fence */
            mt_wgmma_fence();
            ss_pv_ss(acc, st_a, 1);
            mt_wgmma_commit();
            if (has_b) {
                mt_wgmma_wait<1>();
                mt_wgmma_pin_a<16>(&pf[0][0]);
                /* chunk B's V_R half is free (read by S_B and P_B V_B,R only): the next B chunk's part 0 */
                if (tid == 128 && cb + 2 < n_chunks) issue_part(cb + 2, 0);
            }
            mt_wgmma_wait<0>();
            mt_wgmma_pin<128>(acc);
            /* chunk A's V_R half and P block are free: the next A chunk's part 1 */
            if (tid == 128 && ca + 2 < n_chunks) issue_part(ca + 2, 1);
            m0 = mb0, m1 = mb1;
        }
    }

    /* the rows' sums: warpgroup 0's part (P_A') meets warpgroup 1's (P_B);
     * warpgroup 1 publishes kv_scale / sum per row and writes lse; then
     * both write their halves of O */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit */
    l0 += mt_shfl_xor(l0, 1), l1 += mt_shfl_xor(l1, 1);
    l0 += mt_shfl_xor(l0, 2), l1 += mt_shfl_xor(l1, 2);
    __syncthreads(); /* both warpgroups are done with sm_a / sm_b and the stages */
    if (wg == 0 && quad == 0) sm_a[r0] = l0, sm_a[r1] = l1;
    __syncthreads();
#if SPLIT_REDUCE
    /* the stages and Q are free now: the partial result and the merge
     * weights go there (cluster_merge) */
    float *o_red = (float *)kv_s, *lse_red = o_red + 64 * RED_STRIDE, *wts = (float *)q_s;
#endif
    if (wg == 1 && quad == 0) {
        const float t0 = l0 + sm_a[r0], t1 = l1 + sm_a[r1];
        sm_b[r0] = t0 > 0.0f ? kv_scale / t0 : 0.0f;
        sm_b[r1] = t1 > 0.0f ? kv_scale / t1 : 0.0f;
#if SPLIT_REDUCE
        lse_red[r0] = row_lse(m0, t0), lse_red[r1] = row_lse(m1, t1);
#else
        if (row0 + r0 < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + r0, row_lse(m0, t0));
        if (row0 + r1 < rows) store_lse(prm, lse, lse_part, b, split, rows, row0 + r1, row_lse(m1, t1));
#endif
    }
    __syncthreads();
    const float inv0 = sm_b[r0], inv1 = sm_b[r1];
    const int g0 = row0 + r0, g1 = row0 + r1;
#if !SPLIT_REDUCE
    const bool staged = w64_staged(split, q_rows_here);
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
