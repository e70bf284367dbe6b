/*
 * mla_decode.cu - MLA decode attention with split-KV, plain SIMT arithmetic
 * (variant family "mla_decode_simt"; description in mla_decode.c).
 *
 * The math (DESIGN.md section 2), for request b, query token t, head n:
 *   keys j < L_b - Sq + t + 1                        (causal among new tokens)
 *   s_j = scale * dot(q[b,t,n,:D], kv[j,:D])
 *   out[b,t,n,:Dl] = sum_j softmax(s)_j * kv[j,:Dl]
 *   lse[b,t,n] = logsumexp_j s_j                     (natural log, fp32)
 * A row with no keys (L_b < Sq makes the first Sq - L_b tokens keyless)
 * gets out = 0 and lse = -inf.
 *
 * Work decomposition: one work-group per (query-row tile, split, request).
 * The query rows of a request are its Sq*N (token, head) pairs in q's own
 * order (row = t*N + n); a tile is TILE_Q consecutive rows, so a tile may
 * hold several tokens, each with its own causal limit.  The request's keys
 * are cut into NUM_SPLITS ranges whose boundaries fall on multiples of
 * KV_GRANULARITY.  With NUM_SPLITS == 1 the kernel writes out/lse directly;
 * otherwise each split writes a partial (o_i normalised, lse_i) to the
 * workspace and mla_reduce merges them:
 *   lse = log(sum_i exp(lse_i)),  o = sum_i exp(lse_i - lse) * o_i.
 *
 * Tiles and where they live (all fp32):
 *   q_tile    [TILE_Q][D]           shared   query rows, pre-scaled by scale*log2(e)
 *   kv_tile   [KV_CHUNK][D+1]       shared   keys (and values: the first Dl of each)
 *                                            +1 pad so column reads miss no bank
 *   p_tile    [TILE_Q][KV_CHUNK]    shared   scores, then probabilities
 *   row_max, row_sum, row_alpha     shared   online-softmax state per row (log2 domain)
 *   acc_o     [TILE_Q][DL/BLOCK_THREADS]  registers: each thread owns output
 *                                            columns tid, tid+BLOCK_THREADS, ...
 * Pipeline per KV chunk: load (gather through the block table, convert to
 * fp32) -> scores -> online softmax (one warp per row) -> acc_o update.  No
 * asynchronous copies: this family is the simple, always-correct baseline.
 *
 * MMA=1 selects the matrix-unit path (NVIDIA sm_80+, mma.sync m16n8k16,
 * cp.async pipeline; AMD CDNA, MFMA), MMA=2 the warpgroup path (Hopper
 * sm_90a, wgmma); each one's layout is described where it begins, below.
 *
 * Compile-time parameters (the variant; see mla_decode.c for ranges):
 *   TILE_Q, KV_GRANULARITY, NUM_SPLITS, BLOCK_THREADS, KV_CHUNK, MMA, KV_STAGES
 * and the problem's static facts: D, DL, PAGE_SIZE, Q_DTYPE, KV_DTYPE
 * (0 = bf16, 1 = fp16, 2 = fp8 e4m3).
 */
#ifndef D
#define D 576
#endif
#ifndef DL
#define DL 512
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE 64
#endif
#ifndef Q_DTYPE
#define Q_DTYPE 0
#endif
#ifndef KV_DTYPE
#define KV_DTYPE 0
#endif
#ifndef TILE_Q
#define TILE_Q 16
#endif
#ifndef KV_GRANULARITY
#define KV_GRANULARITY 64
#endif
#ifndef NUM_SPLITS
#define NUM_SPLITS 1
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef KV_CHUNK
#define KV_CHUNK 32
#endif
#ifndef MMA
#define MMA 0
#endif
#ifndef SPLIT_REDUCE
#define SPLIT_REDUCE 0
#endif
#ifndef GROUPS_PER_CU
#define GROUPS_PER_CU 0
#endif
#if SPLIT_REDUCE && !(MMA == 2 && TILE_Q == 64)
#error "split_reduce=1 (merge in a cluster) exists on the 64-row warpgroup path only"
#endif
#if GROUPS_PER_CU && (NUM_SPLITS != 1 || SPLIT_REDUCE)
#error "length-aware variants (groups_per_cu > 0) take num_splits 1 and split_reduce 0: the schedule splits"
#endif

#define KV_STRIDE (D + 1)
#define COLS_PER_THREAD ((DL + BLOCK_THREADS - 1) / BLOCK_THREADS)
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

#if KV_DTYPE == 2
typedef mt_u8 kv_t;
#else
typedef mt_u16 kv_t;
#endif

__device__ __forceinline__ float load_q(const mt_u16 *p) {
#if Q_DTYPE == 0
    return mt_bf16_to_f32(*p);
#else
    return mt_f16_to_f32(*p);
#endif
}

__device__ __forceinline__ float load_kv(const kv_t *p) {
#if KV_DTYPE == 0
    return mt_bf16_to_f32(*p);
#elif KV_DTYPE == 1
    return mt_f16_to_f32(*p);
#else
    return mt_fp8e4m3_to_f32(*p);
#endif
}

__device__ __forceinline__ mt_u16 store_out(float v) {
#if Q_DTYPE == 0
    return mt_f32_to_bf16(v);
#else
    return mt_f32_to_f16(v);
#endif
}

/* Bytes of dynamic shared memory the host must pass (kept equal to
 * mt_mla_decode_shared_bytes in mla_decode.c). */
#define SMEM_FLOATS (TILE_Q * D + KV_CHUNK * KV_STRIDE + TILE_Q * KV_CHUNK + 4 * TILE_Q)

/* Split `split` of a request of `len` keys takes keys [*begin, *end): the
 * keys cut into NUM_SPLITS ranges whose boundaries fall on multiples of
 * KV_GRANULARITY (the last ones may be empty). */
__device__ __forceinline__ void split_keys(int len, int split, int *begin, int *end) {
    int per_split = (len + NUM_SPLITS - 1) / NUM_SPLITS;
    per_split = (per_split + KV_GRANULARITY - 1) / KV_GRANULARITY * KV_GRANULARITY;
    *begin = min(len, split * per_split);
    *end = min(len, *begin + per_split);
}

/* How many keys query row `row` (= t * n_heads + n) of a request sees:
 * token t of the Sq new ones sees keys j < len - sq + t + 1; rows past the
 * request's last see none. */
__device__ __forceinline__ int row_key_limit(int row, int rows, int len, int sq, int n_heads) {
    return row < rows ? max(0, min(len, len - sq + row / n_heads + 1)) : 0;
}

/* The tile's rows' key limits (row_limit[0..TILE_Q)), written by the
 * threads of a work-group of BLOCK_THREADS; a barrier must follow. */
__device__ __forceinline__ void fill_row_limits(int *row_limit, int row0, int rows, int len, int sq, int n_heads,
                                                int tid) {
    for (int r = tid; r < TILE_Q; r += BLOCK_THREADS) row_limit[r] = row_key_limit(row0 + r, rows, len, sq, n_heads);
}

/* One past the last key any row of the tile (rows row0 .. row0 + TILE_Q,
 * row0 < rows) sees within the split (keys end at k_end): the chunk loop's
 * bound.  A row's limit grows with its token, so the tile's last row
 * within the request sees the most; no barrier is needed. */
__device__ __forceinline__ int tile_key_end(int row0, int rows, int len, int sq, int n_heads, int k_end) {
    return min(k_end, row_key_limit(min(row0 + TILE_Q, rows) - 1, rows, len, sq, n_heads));
}

/* A row's log-sum-exp (natural log) from its running max in the log2
 * domain and its sum; -inf for a row that saw no key. */
__device__ __forceinline__ float row_lse(float m, float l) { return l > 0.0f ? (m + mt_log2f(l)) * LN2 : MT_NEG_INF; }

/* Merging splits (natural log): the weight of a partial whose lse is
 * lse_i against the largest lse m, 0 for one that saw no key (select, not
 * multiply, so whatever such a partial holds cannot leak in); and the
 * merged lse from m and the sum of the weights. */
__device__ __forceinline__ float split_weight(float lse_i, float m) {
    return lse_i == MT_NEG_INF ? 0.0f : __expf(lse_i - m);
}
__device__ __forceinline__ float merged_lse(float m, float total) {
    return total > 0.0f ? m + __logf(total) : MT_NEG_INF;
}

/* Where the results of query row `row` of request b go.  `dest` is the
 * item's destination (mt_item): with fixed splits (groups_per_cu = 0) the
 * split, and the partials are [B, NUM_SPLITS, Sq*N]; in the length-aware
 * form (groups_per_cu > 0) a slot of the workspace, [slots, TILE_Q], or -1
 * for a request that was not cut, which goes straight to out and lse. */
#if GROUPS_PER_CU
#define DEST_DIRECT(dest) ((dest) < 0)
#define PART_ROW(b, dest, rows, row) ((size_t)(dest) * TILE_Q + (row) % TILE_Q)
#else
#define DEST_DIRECT(dest) (NUM_SPLITS == 1)
#define PART_ROW(b, dest, rows, row) (((size_t)(b) * NUM_SPLITS + (dest)) * (rows) + (row))
#endif
__device__ __forceinline__ void store_lse(float *lse, float *lse_part, int b, int dest, int rows, int row, float v) {
    if (DEST_DIRECT(dest)) lse[(size_t)b * rows + row] = v;
    else lse_part[PART_ROW(b, dest, rows, row)] = v;
}
__device__ __forceinline__ void store_o(mt_u16 *out, float *o_part, int b, int dest, int rows, int row, int col, float v) {
    if (DEST_DIRECT(dest)) out[((size_t)b * rows + row) * DL + col] = store_out(v);
    else o_part[PART_ROW(b, dest, rows, row) * DL + col] = v;
}

/* ---- work items ------------------------------------------------------------
 * A work-group runs a list of items, each one query-row tile of one request
 * and a range of its keys.  With fixed splits (groups_per_cu = 0) the list
 * is one item, from the grid position: tile blockIdx.x, split blockIdx.y of
 * request blockIdx.z.  In the length-aware form (groups_per_cu > 0)
 * mla_schedule cut the requests, laid end to end, into stretches of nearly
 * equal work; a stretch is run by `tiles` work-groups side by side, one per
 * row tile (work-group g: stretch g / tiles, tile g % tiles), so the groups
 * that read a chunk of keys read it at the same time and all but the first
 * find it in L2, as the fixed-split grid's tiles of one split do. */
struct mt_item {
    int b, row0, len, k_begin, k_end; /* keys [k_begin, k_end) of request b, rows row0 .. row0 + TILE_Q */
    int dest;                         /* store_o / store_lse: the split, or the slot (-1: out) */
};

/* The schedule, in int4 words (kernels/schedule.h has its description):
 *   [0]                    stretches, cut requests, reduce units, pieces
 *   [1 + s]                stretch s's start: request, key, its first piece;
 *                          [1 + n_stretches] is the end of the last one
 *   [2 + n_stretches + i]  cut request i: b, first piece, pieces, first unit
 * Piece p of a cut request keeps tile t's partial in slot p * tiles + t. */
#define SCHED_START(sched, s) ((sched)[1 + (s)])
#define SCHED_CUT(sched, n_stretches, i) ((sched)[2 + (n_stretches) + (i)])

struct mt_items {
    int count;      /* items of this work-group */
#if GROUPS_PER_CU
    int4 s0, s1;    /* its stretch's start and the next one's */
    int tiles, tile;  /* row tiles per request; the one this group runs */
    int first_cut;  /* its first item is a piece of a cut request */
#endif
};

__device__ __forceinline__ mt_items group_items(const int4 *sched, int rows) {
    mt_items g;
#if GROUPS_PER_CU
    g.tiles = (rows + TILE_Q - 1) / TILE_Q;
    const int s = blockIdx.x / g.tiles;
    g.tile = blockIdx.x - s * g.tiles;
    g.s0 = SCHED_START(sched, s), g.s1 = SCHED_START(sched, s + 1);
    const int last = g.s1.y > 0 ? g.s1.x : g.s1.x - 1; /* the last request with keys in this stretch */
    g.count = (g.s0.x == g.s1.x && g.s0.y == g.s1.y) ? 0 : last - g.s0.x + 1;
    g.first_cut = g.s0.y > 0 || (g.count == 1 && g.s1.y > 0);
#else
    (void)sched, (void)rows;
    g.count = 1;
#endif
    return g;
}

__device__ __forceinline__ mt_item item_at(const mt_items &g, int i, const int *seq_lens) {
    mt_item it;
#if GROUPS_PER_CU
    it.b = g.s0.x + i, it.row0 = g.tile * TILE_Q;
    it.len = seq_lens[it.b];
    it.k_begin = i == 0 ? g.s0.y : 0;
    it.k_end = it.b == g.s1.x ? g.s1.y : max(it.len, 0);
    /* a piece: the first item cut at its start or end, a later one at its end */
    const int piece = i == 0 ? (g.first_cut ? g.s0.z : -1) : (it.b == g.s1.x ? g.s0.z + g.first_cut : -1);
    it.dest = piece < 0 ? -1 : piece * g.tiles + g.tile;
#else
    (void)g, (void)i;
    it.b = blockIdx.z, it.dest = blockIdx.y, it.row0 = blockIdx.x * TILE_Q;
    it.len = seq_lens[it.b];
    split_keys(it.len, it.dest, &it.k_begin, &it.k_end);
#endif
    return it;
}

#if MMA
/* Shared by both matrix-unit paths.  The mma type is bf16 when KV is bf16,
 * fp16 when KV is fp16 or fp8; q is converted to it when its own dtype
 * differs. */
#define MMA_FP16 (KV_DTYPE != 0)
#define KV_FP8 (KV_DTYPE == 2)
#define Q_CONVERT ((Q_DTYPE == 0 && MMA_FP16) || (Q_DTYPE == 1 && !MMA_FP16))

__device__ __forceinline__ mt_u32 pack_mma(float lo, float hi) {
#if MMA_FP16
    return mt_pack_f16x2(lo, hi);
#else
    return mt_pack_bf16x2(lo, hi);
#endif
}

/* bf16 q going to fp16: the larger |value| of a packed bf16 pair, and the
 * power of two that brings the tile's largest |q| (amax) under 2^15 so
 * nothing overflows (the factor is divided out of the scores exactly). */
__device__ __forceinline__ float bf16_pair_absmax(mt_u32 w) {
    return fmaxf(fabsf(mt_bf16_to_f32((mt_u16)(w & 0xffffu))), fabsf(mt_bf16_to_f32((mt_u16)(w >> 16))));
}
__device__ __forceinline__ float q_fp16_factor(float amax) {
    int k = 0;
    if (amax > 0.0f) k = min(126, max(-126, 14 - ilogbf(amax)));
    return ldexpf(1.0f, k);
}

#if MT_CUDA
/* Output columns col and col + 1 of one row (the NVIDIA matrix paths'
 * accumulator pairs), as store_o does for one. */
__device__ __forceinline__ void store_o_pair(mt_u16 *out, float *o_part, int b, int dest, int rows, int row, int col,
                                             float v0, float v1) {
    if (DEST_DIRECT(dest)) {
#if Q_DTYPE == 0
        *(mt_u32 *)(out + ((size_t)b * rows + row) * DL + col) = mt_pack_bf16x2(v0, v1);
#else
        *(mt_u32 *)(out + ((size_t)b * rows + row) * DL + col) = mt_pack_f16x2(v0, v1);
#endif
    } else {
        *(float2 *)(o_part + PART_ROW(b, dest, rows, row) * DL + col) = make_float2(v0, v1);
    }
}
#endif

/* A packed pair of q (q's dtype) -> the mma type; bf16 q is multiplied by
 * q_factor on the way (1 unless it goes to fp16). */
__device__ __forceinline__ mt_u32 q_pair_to_mma(mt_u32 w, float q_factor) {
#if Q_DTYPE == 0
    return pack_mma(mt_bf16_to_f32((mt_u16)(w & 0xffffu)) * q_factor, mt_bf16_to_f32((mt_u16)(w >> 16)) * q_factor);
#else
    (void)q_factor;
    return pack_mma(mt_f16_to_f32((mt_u16)(w & 0xffffu)), mt_f16_to_f32((mt_u16)(w >> 16)));
#endif
}
#endif

#if MT_CUDA && MMA == 2 && defined(MT_HAVE_WGMMA)
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
__device__ __forceinline__ void cluster_merge(const float *o_red, const float *lse_red, float *wts, mt_u16 *out,
                                              float *lse, int b, int rows, int row0, int rows_here, int tid,
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
        if (rank == 0) lse[(size_t)b * rows + row0 + tid] = merged_lse(m, total);
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
        mt_u16 *o = out + ((size_t)b * rows + row0 + r) * DL + col;
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
#define BOX_ROWS (PAGE_SIZE < 64 ? PAGE_SIZE : 64) /* keys per copy: a page, or 64 keys of one */
#if PAGE_SIZE < 16
#error "mma=2 copies whole pages of at least 16 keys"
#endif

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
#endif

#if !MMA
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const mt_u16 *__restrict__ q,          /* [B, Sq, N, D] */
           const kv_t *__restrict__ kv,           /* [blocks, PAGE_SIZE, D] */
           const int *__restrict__ block_table,   /* [B, max_blocks] */
           const int *__restrict__ seq_lens,      /* [B] */
           mt_u16 *__restrict__ out,              /* [B, Sq, N, DL] */
           float *__restrict__ lse,               /* [B, Sq, N] */
           float *__restrict__ o_part,            /* partials (store_o) */
           float *__restrict__ lse_part,          /* partials (store_lse) */
           int n_heads, int sq, int max_blocks, float scale, float kv_scale,
           const int4 *__restrict__ sched) {      /* groups_per_cu > 0: mla_schedule's output */
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
        q_tile[i] = row < rows ? load_q(q + ((size_t)b * rows + row) * D + d) * q_scale : 0.0f;
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
            store_o(out, o_part, b, split, rows, row, col, acc_o[r][j] * inv);
        }
        if (tid == 0) store_lse(lse, lse_part, b, split, rows, row, row_lse(row_max[r], sum));
    }
    } /* items */
}


#elif MT_CUDA && MMA == 2 && TILE_Q == 16 /* transposed warpgroup path on Hopper */

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
 * memory.  With 16-bit KV (q of the same type) the A operands are read
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
 * Shared memory (kept equal to mt_mla_decode_shared_bytes):
 *   q_s        [D/64][16 rows][128 B]  Q^T, 128-byte swizzle: fp8 KV: fp16, permuted
 *                                      columns; 16-bit KV: q as given
 *   kv_s       KV_STAGES x [D/64][64 keys][64 or 128 B]  the stages (fp8: raw,
 *                                      64-byte swizzle; 16-bit: 128-byte swizzle);
 *                                      at the end warpgroup 1's O^T for the merge
 *   p_s        2 x [16 rows][128 B]    P^T of each warpgroup's chunk, the mma type
 *   red        [2 wg][2][4 warps][16]  column maxima (double-buffered), then sums and maxima
 *   row_limit  [16] int, q_amax [8] f32, stage_full [KV_STAGES] mbarrier
 * Fixed shape (checked in mla_decode.c): 256 threads, 64-key chunks, 4
 * stages for fp8 KV and 2 for 16-bit KV (q of the same type), DL 512,
 * D % 64 == 0, PAGE_SIZE >= 16. */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs sm_90a"
#endif
#if BLOCK_THREADS != 256 || KV_CHUNK != 64 || KV_STAGES != (KV_FP8 ? 4 : 2) || DL != 512 || D % 64 != 0 || \
    (!KV_FP8 && Q_CONVERT)
#error "mma=2 with tile_q 16 takes 256 threads, 64-key chunks, 4 stages (fp8 KV) or 2 (16-bit KV, q of its type), Dl 512, D % 64 == 0"
#endif
#define T8_ROW_BYTES (KV_FP8 ? 64 : 128)        /* a stage row of 64 columns */
#define T8_BLOCK_BYTES (64 * T8_ROW_BYTES)      /* 64 keys x 64 columns */
#define T8_STAGE_BYTES ((D / 64) * T8_BLOCK_BYTES)
#define T8_STAGES_PER_WG (KV_STAGES / 2)
#define T8_Q_BLOCK_BYTES (16 * 128)             /* 16 rows x 64 16-bit columns */

/* Byte offset of 16-byte piece c (0..3) of row r in a block of 64-byte
 * rows stored in the copy engine's 64-byte swizzle (blocks 512-byte aligned). */
__device__ __forceinline__ int t8_swizzle64(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

/* The column of q / K that position p (0..15) of k16 step ks holds (the
 * order the K registers are filled in: lane q's bytes 4s..4s+3 of its 16). */
__device__ __forceinline__ int t8_dim(int ks, int p) {
    return 64 * (ks >> 2) + 16 * ((p & 7) >> 1) + 4 * (ks & 3) + (p >= 8 ? 2 : 0) + (p & 1);
}

/* f16x2 of the two fp8 e4m3 bytes in the low / high half of w (the halves
 * split by a mov, so no shift is needed for the high one) */
__device__ __forceinline__ mt_u32 t8_cvt_lo(mt_u32 w) {
    mt_u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(r) : "r"(w));
    return r;
}
__device__ __forceinline__ mt_u32 t8_cvt_hi(mt_u32 w) {
    mt_u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}" : "=r"(r) : "r"(w));
    return r;
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
#define T8_MERGE_BYTES (16 * 512 * 4) /* warpgroup 1's O^T at an item's end */
#else
#define T8_MERGE_BYTES 0
#endif

extern "C" __global__ void __launch_bounds__(256, 1)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched, const __grid_constant__ mt_tensor_map kv_map) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *kv_s = q_s + (D / 64) * T8_Q_BLOCK_BYTES;
    unsigned char *p_s = kv_s + KV_STAGES * T8_STAGE_BYTES;
    float *red = (float *)(p_s + 2 * 2048);
    int *row_limit = (int *)(red + 256);
    float *q_amax = (float *)(row_limit + 16);
    mt_u64 *stage_full = (mt_u64 *)(q_amax + 8);
    /* where warpgroup 1's O^T meets warpgroup 0's: the stages when they
     * are idle at the end (one item), a buffer of its own otherwise */
    float *o_x = GROUPS_PER_CU ? (float *)(stage_full + KV_STAGES) : (float *)kv_s;

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
        /* the first chunks of both streams go out before Q^T is built, so
         * q's trip to memory overlaps theirs */
        for (int w = 1; w >= 0; w--) {
            cursor c = {first_item, 0};
            settle(w, c);
            for (int p = 0; p < T8_STAGES_PER_WG && c.item < end_item; p++) issue(w, c, T8_STAGES_PER_WG * w + p);
            cur = c;
        }
    } else if (tid == 128) {
        /* warpgroup 1's issuer: past the chunks thread 0 issued for it */
        settle(1, cur);
        for (int p = 0; p < T8_STAGES_PER_WG && cur.item < end_item; p++) cur.li++, settle(1, cur);
    }
    MT_TRACE_MARK(2); /* thread 0: the first copies are issued */

    const mt_u64 q_desc = mt_wgmma_desc(q_s, 16, 1024);
    unsigned char *p_w = p_s + wg * 2048;
    const mt_u64 p_desc = mt_wgmma_desc(p_w, 16, 1024);
    float *red_w = red + wg * 128;
    const int bar_wg = 1 + wg, key_r = 16 * wi + g;
    int pos = 0; /* this warpgroup's position in its stream */

    for (int ii = first_item; ii < end_item; ii++) {
    const t8_item it = item_at_t8(ii);
    const int b = it.i.b, split = it.i.dest, row0 = it.i.row0, len = it.i.len, k_begin = it.i.k_begin;
    const int tile_end = it.tile_end;
    const int kb0 = k_begin & ~63;
    if (ii != first_item) __syncthreads(); /* the last item's merge is done with Q^T, red and o_x */
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* Q^T: piece u (8 positions) of row r holds q columns t8_dim(u / 2,
     * 8 (u % 2) + 0..7), read as 4 pairs; bf16 q is scaled by a power of
     * two into fp16's range first (q_fp16_factor, divided out of the
     * scores) */
    const mt_u16 *q_rows = q + ((size_t)b * rows + row0) * D;
    const int q_rows_here = min(16, rows - row0);
    float q_factor = 1.0f;
#if !KV_FP8
    /* 16-bit KV: Q^T is q as given, 16-byte pieces in the 128-byte swizzle */
    for (int i = tid; i < 16 * (D / 8); i += 256) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        const uint4 w = r < q_rows_here ? *(const uint4 *)(q_rows + (size_t)r * D + u * 8) : make_uint4(0u, 0u, 0u, 0u);
        *(uint4 *)(q_s + mt_swizzle128(r, u, 16)) = w;
    }
#else
#if Q_DTYPE == 0
    {
        float amax = 0.0f;
        for (int i = tid; i < q_rows_here * (D / 2); i += 256)
            amax = fmaxf(amax, bf16_pair_absmax(*(const mt_u32 *)(q_rows + 2 * i)));
        amax = mt_warp_max(amax);
        if (lane == 0) q_amax[tid >> 5] = amax;
        __syncthreads();
        amax = 0.0f;
#pragma unroll
        for (int w = 0; w < 8; w++) amax = fmaxf(amax, q_amax[w]);
        q_factor = q_fp16_factor(amax);
    }
#endif
    for (int i = tid; i < 16 * (D / 8); i += 256) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        mt_u32 w[4] = {0u, 0u, 0u, 0u};
        if (r < q_rows_here) {
#pragma unroll
            for (int pp = 0; pp < 4; pp++)
                w[pp] = q_pair_to_mma(*(const mt_u32 *)(q_rows + (size_t)r * D + t8_dim(u >> 1, 8 * (u & 1) + 2 * pp)),
                                      q_factor);
        }
        *(uint4 *)(q_s + mt_swizzle128(r, u, 16)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
#endif
    mt_fence_proxy_async(); /* Q^T, for the wgmma */
    __syncthreads();
    if (ii == first_item) MT_TRACE_MARK(3); /* Q^T is built */
    const int n_mine = chunks_of(it, wg);

    /* this lane's heads: slot 2j + e is head 8j + 2 qd + e */
    int lim[4];
#pragma unroll
    for (int h = 0; h < 4; h++) lim[h] = min(row_limit[8 * (h >> 1) + 2 * qd + (h & 1)], tile_end);
    const float s_scale = scale * kv_scale * LOG2E / q_factor; /* scores in the log2 domain */
    float m_run[4], l_run[4];
#pragma unroll
    for (int h = 0; h < 4; h++) m_run[h] = MT_NEG_INF, l_run[h] = 0.0f;
    float o[8][8];
#pragma unroll
    for (int t = 0; t < 8; t++)
#pragma unroll
        for (int i = 0; i < 8; i++) o[t][i] = 0.0f;

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
        float s[8];
#pragma unroll
        for (int i = 0; i < 8; i++) s[i] = 0.0f;
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
                mt_wgmma_m64n16k16_rs<1>(s, a + 4 * ss, q_desc + ((j * T8_Q_BLOCK_BYTES + ss * 32) >> 4),
                                         (j | ss) != 0);
            mt_wgmma_commit();
            if (j > 0) {
                mt_wgmma_wait<1>();
                mt_wgmma_pin_a<16>(af[(j - 1) & 1]);
            }
        }
        mt_wgmma_wait<0>();
        mt_wgmma_pin_a<16>(af[(D / 64 - 1) & 1]);
#endif
        mt_wgmma_pin<8>(s);
        if (ii == first_item && li == 0) MT_TRACE_MARK(5); /* its scores are done */

        /* online softmax per head (a column of S^T): mask (only a chunk
         * that starts before the split or crosses a limit), column max over
         * the lane's two keys, the 8 lanes of its quad column and the 4 warps
         * (through red, double-buffered by chunk) */
        const int ka = k0 + key_r, kb = ka + 8;
        if (k0 < k_begin || k0 + 64 > min(min(lim[0], lim[1]), min(lim[2], lim[3]))) {
#pragma unroll
            for (int h = 0; h < 4; h++) {
                const int i = 4 * (h >> 1) + (h & 1);
                if (ka < k_begin || ka >= lim[h]) s[i] = MT_NEG_INF;
                if (kb < k_begin || kb >= lim[h]) s[i + 2] = MT_NEG_INF;
            }
        }
        float cm[4];
#pragma unroll
        for (int h = 0; h < 4; h++) {
            const int i = 4 * (h >> 1) + (h & 1);
            cm[h] = fmaxf(s[i], s[i + 2]);
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 4));
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 8));
            cm[h] = fmaxf(cm[h], mt_shfl_xor(cm[h], 16));
        }
        float *rb = red_w + (li & 1) * 64;
        if (g == 0) {
#pragma unroll
            for (int h = 0; h < 4; h++) rb[wi * 16 + 8 * (h >> 1) + 2 * qd + (h & 1)] = cm[h];
        }
        mt_bar_sync(bar_wg, 128);
        float alpha[4];
#pragma unroll
        for (int h = 0; h < 4; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            const float cmax = fmaxf(fmaxf(rb[hd], rb[16 + hd]), fmaxf(rb[32 + hd], rb[48 + hd]));
            const float mn = fmaxf(m_run[h], cmax * s_scale);
            alpha[h] = m_run[h] == MT_NEG_INF ? 0.0f : mt_exp2f(m_run[h] - mn);
            const float sub = mn == MT_NEG_INF ? 0.0f : mn;
            m_run[h] = mn;
            const int i = 4 * (h >> 1) + (h & 1);
            const float pa = mt_exp2f(fmaf(s[i], s_scale, -sub)), pb = mt_exp2f(fmaf(s[i + 2], s_scale, -sub));
            l_run[h] = l_run[h] * alpha[h] + pa + pb;
            const mt_u32 pp = pack_mma(pa, pb);
            *(mt_u16 *)(p_w + mt_swizzle128(hd, key_r >> 3, 16) + (key_r & 7) * 2) = (mt_u16)(pp & 0xffffu);
            *(mt_u16 *)(p_w + mt_swizzle128(hd, (key_r + 8) >> 3, 16) + (key_r & 7) * 2) = (mt_u16)(pp >> 16);
        }
        mt_fence_proxy_async(); /* P^T, for the wgmma */
        if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f || alpha[2] != 1.0f || alpha[3] != 1.0f)) {
#pragma unroll
            for (int t = 0; t < 8; t++)
#pragma unroll
                for (int h = 0; h < 4; h++) {
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
            for (int kk = 0; kk < 4; kk++) mt_wgmma_m64n16k16_rs<1>(o[t], a + 4 * kk, p_desc + ((kk * 32) >> 4), 1);
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
        for (int t = 0; t < 8; t++) mt_wgmma_pin<8>(o[t]);
        mt_bar_sync(bar_wg, 128); /* the stage and P^T are free */
        if (wtid == 0 && cur.item < end_item) issue(wg, cur, st);
        MT_TRACE_MARK(6); /* the latest chunk is done */
    }

    /* merge the two warpgroups: sums over the warpgroup, then warpgroup 1
     * hands its maxima, sums and O^T to warpgroup 0 through shared memory */
#pragma unroll
    for (int h = 0; h < 4; h++) {
        l_run[h] += mt_shfl_xor(l_run[h], 4);
        l_run[h] += mt_shfl_xor(l_run[h], 8);
        l_run[h] += mt_shfl_xor(l_run[h], 16);
    }
    if (g == 0) {
#pragma unroll
        for (int h = 0; h < 4; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            red_w[wi * 16 + hd] = l_run[h];
            if (wi == 0) red_w[64 + hd] = m_run[h];
        }
    }
    __syncthreads(); /* both are done with the item (one item: every copy has landed and been read) */
    if (wg == 1) {
#pragma unroll
        for (int t = 0; t < 8; t++)
#pragma unroll
            for (int i = 0; i < 8; i++) o_x[(t * 8 + i) * 128 + wtid] = o[t][i];
    }
    __syncthreads();
    if (wg == 0) {
        float f0[4], f1[4];
#pragma unroll
        for (int h = 0; h < 4; h++) {
            const int hd = 8 * (h >> 1) + 2 * qd + (h & 1);
            const float l0 = red[hd] + red[16 + hd] + red[32 + hd] + red[48 + hd];
            const float l1 = red[128 + hd] + red[144 + hd] + red[160 + hd] + red[176 + hd];
            const float m0 = red[64 + hd], m1 = red[192 + hd], mx = fmaxf(m0, m1);
            f0[h] = m0 == MT_NEG_INF ? 0.0f : mt_exp2f(m0 - mx);
            f1[h] = m1 == MT_NEG_INF ? 0.0f : mt_exp2f(m1 - mx);
            const float l = l0 * f0[h] + l1 * f1[h];
            if (wi == 0 && g == 0 && row0 + hd < rows) {
                store_lse(lse, lse_part, b, split, rows, row0 + hd, row_lse(mx, l));
            }
            const float inv = l > 0.0f ? kv_scale / l : 0.0f;
            f0[h] *= inv, f1[h] *= inv;
        }
#pragma unroll
        for (int t = 0; t < 8; t++) {
#pragma unroll
            for (int h = 0; h < 4; h++) {
                const int hd = 8 * (h >> 1) + 2 * qd + (h & 1), i = 4 * (h >> 1) + (h & 1);
                const float v0 = o[t][i] * f0[h] + o_x[(t * 8 + i) * 128 + wtid] * f1[h];
                const float v1 = o[t][i + 2] * f0[h] + o_x[(t * 8 + i + 2) * 128 + wtid] * f1[h];
                if (row0 + hd >= rows) continue;
                /* fp8: accumulator rows g and g + 8 are adjacent columns (the
                 * V^T rows were permuted); 16-bit: columns g and g + 8 (V^T
                 * read in order) */
                const int col = 64 * t + 16 * wi + (KV_FP8 ? 2 * g : g), step = KV_FP8 ? 1 : 8;
                (void)step;
#if KV_FP8
                store_o_pair(out, o_part, b, split, rows, row0 + hd, col, v0, v1);
#else
                store_o(out, o_part, b, split, rows, row0 + hd, col, v0);
                store_o(out, o_part, b, split, rows, row0 + hd, col + step, v1);
#endif
            }
        }
    }
    } /* items */
    MT_TRACE_MARK(7);
    /* kinds 0 and 1: the warpgroups' first threads; the reduce prints them */
    if (wtid == 0) MT_TRACE_KEEP(wg, wg, 2);
}

#elif MT_CUDA && MMA == 2 /* warpgroup path on Hopper */

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
 * chunks, 2 stages, DL 512, D % 64 == 0, q and KV of one 16-bit type,
 * PAGE_SIZE >= 16. */
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

extern "C" __global__ void __launch_bounds__(256, 1)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched, const __grid_constant__ mt_tensor_map kv_map) {
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
    if (ii > 0) __syncthreads(); /* the previous item is done with Q, P, row_alpha and row_limit */
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* Q by cp.async (its own group, the oldest); rows past the request's are zeros */
    const mt_u16 *q_rows = q + ((size_t)b * rows + row0) * D;
    const int q_rows_here = min(64, rows - row0);
    for (int i = tid; i < 64 * WG_PIECES; i += 256) {
        const int r = i / WG_PIECES, u = i - r * WG_PIECES;
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + mt_swizzle128(r, u, 64), valid ? q_rows + (size_t)r * D + u * 8 : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);

    /* chunk copies, issued by one thread (warpgroup 1's first, idle while
     * scores are computed): the boxes holding keys below tile_end */
    const int kb0 = k_begin & ~63;
    auto issue_chunk = [&](int k0, int buf) {
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
            if (row0 + r0 < rows) store_lse(lse, lse_part, b, split, rows, row0 + r0, row_lse(m0, l0));
            if (row0 + r1 < rows) store_lse(lse, lse_part, b, split, rows, row0 + r1, row_lse(m1, l1));
#endif
        }
    }
    __syncthreads();
    const float inv0 = row_alpha[r0], inv1 = row_alpha[r1];
    const int g0 = row0 + r0, g1 = row0 + r1;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        const int col = wg * 256 + j * 8 + quad * 2;
#if SPLIT_REDUCE
        if (g0 < rows) *(float2 *)(o_red + r0 * RED_STRIDE + col) = make_float2(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
        if (g1 < rows)
            *(float2 *)(o_red + r1 * RED_STRIDE + col) = make_float2(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
#else
        if (g0 < rows) store_o_pair(out, o_part, b, split, rows, g0, col, acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
        if (g1 < rows) store_o_pair(out, o_part, b, split, rows, g1, col, acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
#endif
    }
#if SPLIT_REDUCE
    cluster_merge(o_red, lse_red, wts, out, lse, b, rows, row0, q_rows_here, tid, 256);
#endif
    chunk_base += n_chunks;
    } /* items */
}

#elif MT_CUDA /* MMA on NVIDIA */

/* ---- the matrix-unit path (NVIDIA) ---------------------------------------
 * Shapes: MT_TILES = TILE_Q / 16 row tiles of 16 rows; NW warps.  Every
 * warp covers all TILE_Q rows in the two matrix products, so one
 * work-group reads each KV tile once for all of its rows: with
 * TILE_Q >= N*Sq a request's KV is read once.
 *
 * Scores S = Q K^T: the warps form a DG x KG grid.  Warp w takes the
 * d-slice dg = w % DG (D/DG dims) and the keys kg = w / DG (KPW keys of the
 * chunk).  Its slice of Q stays in registers for the whole work-group (Q is
 * read from shared memory once, not once per chunk and warp), and every K
 * element of a chunk is read from shared memory by exactly one warp.  The DG
 * partial scores of a (row, key) meet in shared memory (s_part).
 * Softmax: warp w owns rows w*RPW .. w*RPW+RPW-1; LPR lanes share a row and
 * take KPL consecutive keys each, so the row max and sum are warp shuffles
 * (no cross-warp exchange).  The owner keeps the running max and sum of its
 * rows and publishes the rescale factor alpha per row.
 * O += P V: warp w owns output columns w*CPW ..; it reads all of P.
 *
 * The matrix-unit operand type ("mma type"): bf16 when KV is bf16, fp16
 * when KV is fp16 or fp8 (fp8 e4m3 converts exactly to fp16 in one
 * instruction, cvt.rn.f16x2.e4m3x2).  q is converted to the mma type once,
 * when the work-group loads it; bf16 q going to fp16 is first multiplied by
 * a power of two chosen from the tile's largest |q| so nothing overflows
 * (the factor is divided out of the scores exactly).
 *
 * Shared memory (16-bit rows padded by 8 elements so the 8 row addresses of
 * an ldmatrix fall in distinct banks):
 *   q_s     [TILE_Q][D+8]                 mma type; once Q is in registers
 *   s_part  [DG][TILE_Q][KV_CHUNK+8] f32  the same bytes: partial scores
 *   stage   [KV_STAGES][KV_CHUNK][D+8]    KV as stored (16-bit KV), filled
 *           [KV_STAGES][KV_CHUNK][D]      by cp.async  (fp8 KV: raw bytes)
 *   kv16    [KV_CHUNK][D+8]               fp8 KV only: the chunk converted
 *   p_s     [TILE_Q][KV_CHUNK+8]          probabilities, mma type
 *   red     [NW][TILE_Q] floats           alpha per row; at the end 1/sum
 *   row_limit [TILE_Q] ints, q_factor
 * Pipeline: KV_STAGES-1 chunks are in flight while one is computed
 * (cp.async groups); three barriers per chunk (four with fp8).
 */
#define NW (BLOCK_THREADS / 32)
#define MT_TILES (TILE_Q / 16)
#define KSTEPS (D / 16)              /* k-steps of 16 over D */
#define DG (KSTEPS % 4 == 0 ? 4 : 2) /* d-slices of the score step (D % 32 == 0 is required) */
#define KG (NW / DG)                 /* key groups of the score step */
#define KSD (KSTEPS / DG)            /* k-steps per d-slice */
#define KPW (KV_CHUNK / KG)          /* keys per warp in the score step: 8 .. 64 */
#define SN (KPW / 8)                 /* n8 tiles of keys per warp */
#define S_CHAINS (MT_TILES * SN <= 2 ? 2 : 1) /* independent accumulators per score tile */
#define RPW (TILE_Q / NW)            /* softmax: rows per warp */
#define LPR (32 / RPW)               /* softmax: lanes per row */
#define KPL (KV_CHUNK / LPR)         /* softmax: consecutive keys per lane (even) */
#define CPW (DL / NW)                /* output columns per warp */
#define ON (CPW / 8)                 /* n8 tiles of columns per warp (even) */
#define QS_STRIDE (D + 8)
#define KS_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define SP_STRIDE (KV_CHUNK + 8)     /* floats; 8 rows of a fragment store hit distinct banks */
#ifndef KV_STAGES
#define KV_STAGES 2
#endif
/* q_s and s_part share the first region of shared memory */
#define QS_BYTES (TILE_Q * QS_STRIDE * 2)
#define SP_BYTES (DG * TILE_Q * SP_STRIDE * 4)
#define REGION0_BYTES (QS_BYTES > SP_BYTES ? QS_BYTES : SP_BYTES)

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    mt_u16 *q_s = (mt_u16 *)smem_bytes;
    float *s_part = (float *)smem_bytes;
    unsigned char *stage_s = smem_bytes + REGION0_BYTES;
#if KV_FP8
    const int stage_bytes = KV_CHUNK * D;
    mt_u16 *kv16 = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
    mt_u16 *p_s = kv16 + KV_CHUNK * KS_STRIDE;
#else
    const int stage_bytes = KV_CHUNK * KS_STRIDE * 2;
    mt_u16 *p_s = (mt_u16 *)(stage_s + KV_STAGES * stage_bytes);
#endif
    float *red = (float *)(p_s + TILE_Q * P_STRIDE);
    int *row_limit = (int *)(red + NW * TILE_Q); /* then one float: the q factor (bf16 q, fp16 mma) */

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, quad = lane & 3;
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item is done with shared memory */
    const int *pages = block_table + (size_t)b * max_blocks;

    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* q -> shared memory in the mma type, 16 bytes (8 elements) per piece.
     * When q already has the mma type it goes by cp.async (its own group,
     * committed before the KV stages); otherwise all of a thread's pieces
     * are loaded before any is converted, so their latencies overlap. */
    const mt_u16 *q_rows = q + ((size_t)b * rows + row0) * D;
    const int q_rows_here = min(TILE_Q, rows - row0);
#define Q_PIECES (TILE_Q * (D / 8))
#define Q_PER_THREAD ((Q_PIECES + BLOCK_THREADS - 1) / BLOCK_THREADS)
#if !Q_CONVERT
    const float q_factor = 1.0f;
    for (int i = tid; i < Q_PIECES; i += BLOCK_THREADS) {
        const int r = i / (D / 8), u = i - r * (D / 8);
        const bool valid = r < q_rows_here;
        mt_cp_async16(q_s + r * QS_STRIDE + u * 8, valid ? q_rows + (size_t)r * D + u * 8 : q, valid ? 16 : 0);
    }
    mt_cp_async_commit();
#else
    uint4 qv[Q_PER_THREAD];
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        qv[j] = make_uint4(0, 0, 0, 0);
        if (i < Q_PIECES && r < q_rows_here) qv[j] = *(const uint4 *)(q_rows + (size_t)r * D + u * 8);
    }
#if Q_DTYPE == 0
    /* bf16 q into fp16: the tile's largest |q| picks the factor */
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++)
        amax = fmaxf(fmaxf(bf16_pair_absmax(qv[j].x), bf16_pair_absmax(qv[j].y)),
                     fmaxf(fmaxf(bf16_pair_absmax(qv[j].z), bf16_pair_absmax(qv[j].w)), amax));
    amax = mt_warp_max(amax);
    if (lane == 0) red[warp] = amax;
    __syncthreads();
    float *q_factor_s = (float *)(row_limit + TILE_Q);
    if (tid == 0) {
        float m = 0.0f;
        for (int w = 0; w < NW; w++) m = fmaxf(m, red[w]);
        q_factor_s[0] = q_fp16_factor(m);
    }
    __syncthreads();
    const float q_factor = q_factor_s[0];
#else
    const float q_factor = 1.0f;
#endif
#pragma unroll
    for (int j = 0; j < Q_PER_THREAD; j++) {
        const int i = tid + j * BLOCK_THREADS, r = i / (D / 8), u = i - r * (D / 8);
        if (i >= Q_PIECES) break;
        *(uint4 *)(q_s + r * QS_STRIDE + u * 8) = make_uint4(q_pair_to_mma(qv[j].x, q_factor), q_pair_to_mma(qv[j].y, q_factor),
                                                           q_pair_to_mma(qv[j].z, q_factor), q_pair_to_mma(qv[j].w, q_factor));
    }
#endif
    __syncthreads();
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);

    /* Stage keys [k0, k0 + KV_CHUNK) into stage buffer `buf`.  Each thread
     * takes one key row, my_row = tid / TPR, and every TPR-th 16-byte piece
     * of it; its page comes from the block table one chunk ahead
     * (page_of), so that load's latency is hidden behind a chunk of work.
     * Keys past tile_end are zero-filled so P V never meets stale data. */
#define TPR (BLOCK_THREADS / KV_CHUNK)
#define ROW_PIECES (D * (int)sizeof(kv_t) / 16)
    const int my_row = tid / TPR;
    auto page_of = [&](int k0) { return k0 + my_row < tile_end ? pages[(k0 + my_row) / PAGE_SIZE] : 0; };
    auto load_chunk = [&](int k0, int buf, int page) {
        const int key = k0 + my_row;
        const bool valid = key < tile_end;
        const unsigned char *src = (const unsigned char *)kv;
        if (valid) src = (const unsigned char *)(kv + ((size_t)page * PAGE_SIZE + key % PAGE_SIZE) * D);
#if KV_FP8
        unsigned char *dst = stage_s + buf * stage_bytes + my_row * D;
#else
        unsigned char *dst = stage_s + buf * stage_bytes + my_row * KS_STRIDE * 2;
#endif
#pragma unroll
        for (int i = 0; i < (ROW_PIECES + TPR - 1) / TPR; i++) {
            const int u = tid % TPR + i * TPR;
            if (ROW_PIECES % TPR == 0 || u < ROW_PIECES)
                mt_cp_async16(dst + u * 16, valid ? src + u * 16 : src, valid ? 16 : 0);
        }
    };

    const float s_scale = scale * kv_scale * LOG2E / q_factor;
    const int n_chunks = tile_end > k_begin ? (tile_end - k_begin + KV_CHUNK - 1) / KV_CHUNK : 0;

    int prologue_pages[KV_STAGES - 1];
#pragma unroll
    for (int s = 0; s < KV_STAGES - 1; s++) prologue_pages[s] = page_of(k_begin + s * KV_CHUNK);
#pragma unroll
    for (int s = 0; s < KV_STAGES - 1; s++) {
        if (s < n_chunks) load_chunk(k_begin + s * KV_CHUNK, s, prologue_pages[s]);
        mt_cp_async_commit();
    }
    int next_page = page_of(k_begin + (KV_STAGES - 1) * KV_CHUNK); /* for the chunk issued next */
    /* ldmatrix lane roles: A operand (16x16, row-major), K as B operand
     * (two n8 tiles x one k-step: keys 0-7 / 8-15, d 0-7 / 8-15), V as B
     * operand (16 keys x 16 columns, transposed) */
    const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
    const int bk_row = (lane & 7) + ((lane >> 4) & 1) * 8, bk_col = ((lane >> 3) & 1) * 8;
    const int bv_row = (lane & 7) + ((lane >> 3) & 1) * 8, bv_col = (lane >> 4) * 8;
    const int dg = warp % DG, kg = warp / DG;

    /* this warp's slice of Q, in registers for the whole work-group; q's
     * cp.async group is the oldest, so waiting until KV_STAGES - 1 groups
     * remain covers it */
    mt_cp_async_wait<KV_STAGES - 1>();
    __syncthreads();
    mt_u32 qf[MT_TILES][KSD][4];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSD; ks++)
            mt_ldmatrix_x4(qf[m][ks], q_s + (m * 16 + a_row) * QS_STRIDE + (dg * KSD + ks) * 16 + a_col);
    /* (q_s is overwritten by s_part only after the first chunk's barrier) */

    /* softmax role: row `srow` of the tile, keys skey .. skey + KPL - 1 */
    const int srow = warp * RPW + lane / LPR, skey = (lane % LPR) * KPL;
    const int slim = min(row_limit[srow], tile_end);
    float m_run = MT_NEG_INF, l_run = 0.0f; /* running max (log2 domain) and sum of row srow */

    float acc_o[MT_TILES][ON][4];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int t = 0; t < ON; t++) acc_o[m][t][0] = acc_o[m][t][1] = acc_o[m][t][2] = acc_o[m][t][3] = 0.0f;

    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = k_begin + ci * KV_CHUNK, buf = ci % KV_STAGES;
        mt_cp_async_wait<KV_STAGES - 2>();
        __syncthreads(); /* chunk ci has landed for every thread; chunk ci-1 is consumed */
        if (ci + KV_STAGES - 1 < n_chunks) {
            load_chunk(k0 + (KV_STAGES - 1) * KV_CHUNK, (ci + KV_STAGES - 1) % KV_STAGES, next_page);
            next_page = page_of(k0 + KV_STAGES * KV_CHUNK);
        }
        mt_cp_async_commit();
#if KV_FP8
        {
            const unsigned char *raw = stage_s + buf * stage_bytes;
            for (int i = tid; i < KV_CHUNK * (D / 8); i += BLOCK_THREADS) {
                int c = i / (D / 8), u = i - c * (D / 8);
                uint2 v = *(const uint2 *)(raw + c * D + u * 8);
                uint4 o = make_uint4(mt_cvt_e4m3x2_f16x2((mt_u16)(v.x & 0xffffu)), mt_cvt_e4m3x2_f16x2((mt_u16)(v.x >> 16)),
                                     mt_cvt_e4m3x2_f16x2((mt_u16)(v.y & 0xffffu)), mt_cvt_e4m3x2_f16x2((mt_u16)(v.y >> 16)));
                *(uint4 *)(kv16 + c * KS_STRIDE + u * 8) = o;
            }
        }
        __syncthreads();
        const mt_u16 *kv_c = kv16;
#else
        const mt_u16 *kv_c = (const mt_u16 *)(stage_s + buf * stage_bytes);
#endif

        /* partial S over this warp's d-slice for its KPW keys; S_CHAINS
         * independent accumulator chains where the warp has few tiles */
        {
            float s_acc[S_CHAINS][MT_TILES][SN][4];
#pragma unroll
            for (int h = 0; h < S_CHAINS; h++)
#pragma unroll
                for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                    for (int j = 0; j < SN; j++) s_acc[h][m][j][0] = s_acc[h][m][j][1] = s_acc[h][m][j][2] = s_acc[h][m][j][3] = 0.0f;
            const mt_u16 *k_warp = kv_c + (kg * KPW) * KS_STRIDE + dg * KSD * 16;
#pragma unroll
            for (int ks = 0; ks < KSD; ks++) {
#pragma unroll
                for (int j = 0; j < SN; j += 2) {
                    mt_u32 bk[4];
#if SN % 2 == 0
                    mt_ldmatrix_x4(bk, k_warp + (j * 8 + bk_row) * KS_STRIDE + ks * 16 + bk_col);
#else
                    mt_ldmatrix_x2(bk, k_warp + (j * 8 + (lane & 7)) * KS_STRIDE + ks * 16 + bk_col);
#endif
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++) {
                        mt_mma_16816(s_acc[ks % S_CHAINS][m][j], qf[m][ks], &bk[0], MMA_FP16);
#if SN % 2 == 0
                        mt_mma_16816(s_acc[ks % S_CHAINS][m][j + 1], qf[m][ks], &bk[2], MMA_FP16);
#endif
                    }
                }
            }
            float *sp = s_part + dg * (TILE_Q * SP_STRIDE) + kg * KPW + quad * 2;
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SN; j++) {
#pragma unroll
                    for (int h = 1; h < S_CHAINS; h++)
#pragma unroll
                        for (int e = 0; e < 4; e++) s_acc[0][m][j][e] += s_acc[h][m][j][e];
                    *(float2 *)(sp + (m * 16 + g) * SP_STRIDE + j * 8) = make_float2(s_acc[0][m][j][0], s_acc[0][m][j][1]);
                    *(float2 *)(sp + (m * 16 + g + 8) * SP_STRIDE + j * 8) = make_float2(s_acc[0][m][j][2], s_acc[0][m][j][3]);
                }
        }
        __syncthreads();

        /* online softmax of row srow over keys skey..: sum the d-slices,
         * scale, mask; max and sum by shuffles among the row's LPR lanes */
        {
            float s[KPL];
#pragma unroll
            for (int e = 0; e < KPL; e += 2) {
                float2 v = *(const float2 *)(s_part + srow * SP_STRIDE + skey + e);
#pragma unroll
                for (int d = 1; d < DG; d++) {
                    const float2 w = *(const float2 *)(s_part + d * (TILE_Q * SP_STRIDE) + srow * SP_STRIDE + skey + e);
                    v.x += w.x, v.y += w.y;
                }
                s[e] = v.x, s[e + 1] = v.y;
            }
            float mx = MT_NEG_INF;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                s[e] = k0 + skey + e < slim ? s[e] * s_scale : MT_NEG_INF;
                mx = fmaxf(mx, s[e]);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) mx = fmaxf(mx, mt_shfl_xor(mx, o));
            const float mn = fmaxf(m_run, mx);
            const float alpha = m_run == MT_NEG_INF ? 0.0f : mt_exp2f(m_run - mn);
            float ps = 0.0f;
#pragma unroll
            for (int e = 0; e < KPL; e += 2) {
                const float p0 = s[e] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e] - mn);
                const float p1 = s[e + 1] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e + 1] - mn);
                ps += p0 + p1;
                *(mt_u32 *)(p_s + srow * P_STRIDE + skey + e) = pack_mma(p0, p1);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) ps += mt_shfl_xor(ps, o);
            l_run = l_run * alpha + ps;
            m_run = mn;
            if (lane % LPR == 0) red[srow] = alpha;
        }
        __syncthreads(); /* P and alpha complete; both may be rewritten after the next top barrier */

        /* O = O * alpha + P V over this warp's columns (the rescale is
         * skipped while no row's max moved: alpha is then exactly 1) */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            const float a0 = red[m * 16 + g], a1 = red[m * 16 + g + 8];
            if (__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) {
#pragma unroll
                for (int t = 0; t < ON; t++) {
                    acc_o[m][t][0] *= a0, acc_o[m][t][1] *= a0;
                    acc_o[m][t][2] *= a1, acc_o[m][t][3] *= a1;
                }
            }
        }
        const mt_u16 *v_warp = kv_c + warp * CPW;
#pragma unroll
        for (int ks = 0; ks < KV_CHUNK; ks += 16) {
            mt_u32 a[MT_TILES][4];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++) mt_ldmatrix_x4(a[m], p_s + (m * 16 + a_row) * P_STRIDE + ks + a_col);
#pragma unroll
            for (int t = 0; t < ON; t += 2) {
                mt_u32 bv[4];
                mt_ldmatrix_x4_trans(bv, v_warp + (ks + bv_row) * KS_STRIDE + t * 8 + bv_col);
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) {
                    mt_mma_16816(acc_o[m][t], a[m], &bv[0], MMA_FP16);
                    mt_mma_16816(acc_o[m][t + 1], a[m], &bv[2], MMA_FP16);
                }
            }
        }
    }

    /* the owners publish 1/sum per row and write lse */
    mt_cp_async_wait<0>(); /* nothing may be in flight at exit */
    __syncthreads();
    if (lane % LPR == 0) {
        red[srow] = l_run > 0.0f ? kv_scale / l_run : 0.0f;
        if (row0 + srow < rows) store_lse(lse, lse_part, b, split, rows, row0 + srow, row_lse(m_run, l_run));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++) {
        const float inv0 = red[m * 16 + g], inv1 = red[m * 16 + g + 8];
        const int g0 = row0 + m * 16 + g, g1 = g0 + 8;
#pragma unroll
        for (int t = 0; t < ON; t++) {
            const int col = warp * CPW + t * 8 + quad * 2;
            if (g0 < rows) store_o_pair(out, o_part, b, split, rows, g0, col, acc_o[m][t][0] * inv0, acc_o[m][t][1] * inv0);
            if (g1 < rows) store_o_pair(out, o_part, b, split, rows, g1, col, acc_o[m][t][2] * inv1, acc_o[m][t][3] * inv1);
        }
    }
    } /* items */
}
#else /* MMA on AMD */
#if MMA != 1
#error "the AMD matrix-core path is mma=1 (mma=2 is NVIDIA Hopper's wgmma)"
#endif

/* ---- the matrix-unit path (AMD, MFMA) -------------------------------------
 * Compiled for gfx942 and gfx950 in CI and run there in the HIP CPU
 * emulation (test_amd_emu); no AMD GPU has run it yet (see README).
 * The same computation as the NVIDIA path, shaped for 64-wide wavefronts,
 * 16x16x16 MFMA (the score step on gfx950: 16x16x32) and 64 KiB of LDS,
 * without asynchronous copies:
 *
 * NWV = BLOCK_THREADS / 64 waves (2 or 4); KV chunks of 16 keys.
 * Scores: wave w takes the d-slice w (D / NWV dims) and all keys of the
 * chunk; its slice of Q is in registers for the whole work-group, loaded
 * straight from global memory as MFMA A fragments (no LDS copy).  The NWV
 * partial score tiles meet in LDS (s_part).
 * Softmax: wave w owns rows w*RPW ..; LPR lanes per row, KPL keys per lane;
 * max and sum by shuffles within the row's lanes.
 * O += P V: wave w owns output columns w*CPW ..; the V operand (4 keys of
 * one column per lane) is gathered with four 16-bit LDS reads.
 * KV: two LDS buffers of one chunk each, in the mma type; chunk i+1 is read
 * from global memory into registers while chunk i is computed, then
 * converted and stored into the other buffer (fp8: converted exactly to
 * fp16 on the way).  Three barriers per chunk.
 *
 * LDS (bytes, kept equal to mt_mla_decode_shared_bytes for 64-wide targets):
 *   s_part  [NWV][TILE_Q][KV_CHUNK+8] f32
 *   kv_s    [2][KV_CHUNK][D+8]        mma type
 *   p_s     [TILE_Q][KV_CHUNK+8]      mma type
 *   red     [TILE_Q] f32, row_limit [TILE_Q] int, q factor f32 */
#define NWV (BLOCK_THREADS / 64)
#define MT_TILES (TILE_Q / 16)
#define KSA (D / 16 / NWV)           /* k-steps of this wave's d-slice */
#define SNA (KV_CHUNK / 16)          /* 16-key tiles per chunk */
#define RPW (TILE_Q / NWV)           /* softmax: rows per wave */
#define LPR (64 / RPW)               /* softmax: lanes per row */
#define KPL (KV_CHUNK / LPR)         /* softmax: keys per lane (>= 1) */
#define CPW (DL / NWV)               /* output columns per wave */
#define ON (CPW / 16)                /* 16-column tiles per wave */
#define KS_STRIDE (D + 8)
#define P_STRIDE (KV_CHUNK + 8)
#define SP_STRIDE (KV_CHUNK + 8)
#define PIECE_ELEMS (16 / (int)sizeof(kv_t))          /* elements per 16-byte global load */
#define KV_PIECES (KV_CHUNK * (D / PIECE_ELEMS))
#define KV_PER_THREAD ((KV_PIECES + BLOCK_THREADS - 1) / BLOCK_THREADS)

__device__ __forceinline__ mt_u16 to_mma(float v) {
#if MMA_FP16
    return mt_f32_to_f16(v);
#else
    return mt_f32_to_bf16(v);
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
mla_decode(const mt_u16 *__restrict__ q, const kv_t *__restrict__ kv, const int *__restrict__ block_table,
           const int *__restrict__ seq_lens, mt_u16 *__restrict__ out, float *__restrict__ lse,
           float *__restrict__ o_part, float *__restrict__ lse_part, int n_heads, int sq, int max_blocks, float scale,
           float kv_scale, const int4 *__restrict__ sched) {
    extern __shared__ __align__(16) unsigned char smem_bytes[];
    float *s_part = (float *)smem_bytes;
    mt_u16 *kv_s = (mt_u16 *)(smem_bytes + NWV * TILE_Q * SP_STRIDE * 4);
    mt_u16 *p_s = kv_s + 2 * KV_CHUNK * KS_STRIDE;
    float *red = (float *)(p_s + TILE_Q * P_STRIDE);
    int *row_limit = (int *)(red + TILE_Q);
    float *q_factor_s = (float *)(row_limit + TILE_Q);

    mt_grid_launch_dependents(); /* the reduce may be scheduled now; it waits for our results */
    const int tid = threadIdx.x, wave = tid / 64, lane = tid % 64;
    const int l16 = lane & 15, l4 = lane >> 4; /* fragment roles: row / column in 16, k group of 4 */
    const int rows = sq * n_heads;
    const mt_items items = group_items(sched, rows);
    for (int ii = 0; ii < items.count; ii++) {
    const mt_item it = item_at(items, ii, seq_lens);
    const int b = it.b, split = it.dest, row0 = it.row0, len = it.len, k_begin = it.k_begin, k_end = it.k_end;
    if (ii > 0) __syncthreads(); /* the previous item is done with shared memory */
    const int *pages = block_table + (size_t)b * max_blocks;
    fill_row_limits(row_limit, row0, rows, len, sq, n_heads, tid);

    /* this wave's slice of Q: A fragments (4 consecutive d of one row per
     * lane), 8 bytes each, straight from global memory */
    const mt_u16 *q_rows = q + ((size_t)b * rows + row0) * D;
    const int q_rows_here = min(TILE_Q, rows - row0);
    mt_u32x2 qf[MT_TILES][KSA];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++) {
            const int r = m * 16 + l16, d0 = (wave * KSA + ks) * 16 + l4 * 4;
            qf[m][ks] = r < q_rows_here ? *(const mt_u32x2 *)(q_rows + (size_t)r * D + d0) : (mt_u32x2){0u, 0u};
        }
#if Q_CONVERT
#if Q_DTYPE == 0
    /* bf16 q into fp16: the tile's largest |q| picks the factor */
    float amax = 0.0f;
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++) amax = fmaxf(amax, fmaxf(bf16_pair_absmax(qf[m][ks][0]), bf16_pair_absmax(qf[m][ks][1])));
    amax = mt_warp_max(amax);
    if (lane == 0) red[wave] = amax;
    __syncthreads();
    if (tid == 0) {
        float mx = 0.0f;
        for (int w = 0; w < NWV; w++) mx = fmaxf(mx, red[w]);
        q_factor_s[0] = q_fp16_factor(mx);
    }
    __syncthreads();
    const float q_factor = q_factor_s[0];
#else
    const float q_factor = 1.0f;
#endif
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int ks = 0; ks < KSA; ks++)
#pragma unroll
            for (int e = 0; e < 2; e++) qf[m][ks][e] = q_pair_to_mma(qf[m][ks][e], q_factor);
#else
    const float q_factor = 1.0f;
#endif
    (void)q_factor_s;
    __syncthreads(); /* row_limit is complete */
    const int tile_end = tile_key_end(row0, rows, len, sq, n_heads, k_end);
    const int n_chunks = tile_end > k_begin ? (tile_end - k_begin + KV_CHUNK - 1) / KV_CHUNK : 0;

    /* KV chunk [k0, k0 + KV_CHUNK) -> registers (16 bytes per piece; keys
     * past tile_end are zeros so P V never meets stale data) -> LDS buffer */
    mt_u32x4 pre[KV_PER_THREAD];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int j = 0; j < KV_PER_THREAD; j++) {
            const int i = tid + j * BLOCK_THREADS, c = i / (D / PIECE_ELEMS), u = i - c * (D / PIECE_ELEMS);
            const int key = k0 + c;
            pre[j] = (mt_u32x4){0u, 0u, 0u, 0u};
            if ((KV_PIECES % BLOCK_THREADS == 0 || i < KV_PIECES) && key < tile_end)
                pre[j] = *(const mt_u32x4 *)(kv + ((size_t)pages[key / PAGE_SIZE] * PAGE_SIZE + key % PAGE_SIZE) * D +
                                             u * PIECE_ELEMS);
        }
    };
    auto store = [&](int buf) {
        mt_u16 *dst = kv_s + buf * KV_CHUNK * KS_STRIDE;
#pragma unroll
        for (int j = 0; j < KV_PER_THREAD; j++) {
            const int i = tid + j * BLOCK_THREADS, c = i / (D / PIECE_ELEMS), u = i - c * (D / PIECE_ELEMS);
            if (KV_PIECES % BLOCK_THREADS != 0 && i >= KV_PIECES) break;
#if KV_FP8
            mt_u32 h[8];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                h[2 * e] = mt_cvt_e4m3x2_f16x2((mt_u16)(pre[j][e] & 0xffffu));
                h[2 * e + 1] = mt_cvt_e4m3x2_f16x2((mt_u16)(pre[j][e] >> 16));
            }
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 16) = (mt_u32x4){h[0], h[1], h[2], h[3]};
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 16 + 8) = (mt_u32x4){h[4], h[5], h[6], h[7]};
#else
            *(mt_u32x4 *)(dst + c * KS_STRIDE + u * 8) = pre[j];
#endif
        }
    };

    const float s_scale = scale * kv_scale * LOG2E / q_factor;
    const int srow = wave * RPW + lane / LPR, skey = (lane % LPR) * KPL;
    const int slim = min(row_limit[srow], tile_end);
    float m_run = MT_NEG_INF, l_run = 0.0f; /* running max (log2 domain) and sum of row srow */
    mt_f32x4 acc[MT_TILES][ON];
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int t = 0; t < ON; t++) acc[m][t] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};

    if (n_chunks > 0) {
        fetch(k_begin);
        store(0);
    }
    for (int ci = 0; ci < n_chunks; ci++) {
        const int k0 = k_begin + ci * KV_CHUNK, buf = ci & 1;
        const bool more = ci + 1 < n_chunks;
        __syncthreads(); /* chunk ci is in its buffer; chunk ci-1's readers are done */
        if (more) fetch(k0 + KV_CHUNK);
        const mt_u16 *kc = kv_s + buf * KV_CHUNK * KS_STRIDE;

        /* partial S over this wave's d-slice, all keys of the chunk */
        {
            mt_f32x4 s_acc[MT_TILES][SNA];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SNA; j++) s_acc[m][j] = (mt_f32x4){0.0f, 0.0f, 0.0f, 0.0f};
#if defined(MT_HAVE_MFMA_K32)
            /* gfx950: two k-steps per 16x16x32 instruction.  A lane's eight
             * A values are its four of step ks then its four of step ks + 1,
             * its eight B values the same d's of its key: the instruction
             * sums over all 32 k whatever d each one stands for, so A and B
             * only have to pair them alike.  An odd last step takes 16x16x16. */
            constexpr int KS_PAIRED = KSA / 2 * 2;
#pragma unroll
            for (int ks = 0; ks < KS_PAIRED; ks += 2)
#pragma unroll
                for (int j = 0; j < SNA; j++) {
                    const mt_u16 *kr = kc + (j * 16 + l16) * KS_STRIDE + (wave * KSA + ks) * 16 + l4 * 4;
                    const mt_u32x2 b0 = *(const mt_u32x2 *)kr, b1 = *(const mt_u32x2 *)(kr + 16);
                    const mt_u32x4 bk = {b0[0], b0[1], b1[0], b1[1]};
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++)
                        s_acc[m][j] = mt_mfma_16x16x32(
                            s_acc[m][j], (mt_u32x4){qf[m][ks][0], qf[m][ks][1], qf[m][ks + 1][0], qf[m][ks + 1][1]}, bk,
                            MMA_FP16);
                }
#else
            constexpr int KS_PAIRED = 0;
#endif
#pragma unroll
            for (int ks = KS_PAIRED; ks < KSA; ks++)
#pragma unroll
                for (int j = 0; j < SNA; j++) {
                    const mt_u32x2 bk = *(const mt_u32x2 *)(kc + (j * 16 + l16) * KS_STRIDE + (wave * KSA + ks) * 16 + l4 * 4);
#pragma unroll
                    for (int m = 0; m < MT_TILES; m++) s_acc[m][j] = mt_mfma_16x16x16(s_acc[m][j], qf[m][ks], bk, MMA_FP16);
                }
            float *sp = s_part + wave * (TILE_Q * SP_STRIDE);
#pragma unroll
            for (int m = 0; m < MT_TILES; m++)
#pragma unroll
                for (int j = 0; j < SNA; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) sp[(m * 16 + l4 * 4 + e) * SP_STRIDE + j * 16 + l16] = s_acc[m][j][e];
        }
        __syncthreads();

        /* online softmax of row srow over keys skey .. skey + KPL - 1 */
        {
            float s[KPL];
            float mx = MT_NEG_INF;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                float v = 0.0f;
#pragma unroll
                for (int d = 0; d < NWV; d++) v += s_part[(d * TILE_Q + srow) * SP_STRIDE + skey + e];
                s[e] = k0 + skey + e < slim ? v * s_scale : MT_NEG_INF;
                mx = fmaxf(mx, s[e]);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) mx = fmaxf(mx, mt_shfl_xor(mx, o));
            const float mn = fmaxf(m_run, mx);
            const float alpha = m_run == MT_NEG_INF ? 0.0f : mt_exp2f(m_run - mn);
            float ps = 0.0f;
#pragma unroll
            for (int e = 0; e < KPL; e++) {
                const float p = s[e] == MT_NEG_INF ? 0.0f : mt_exp2f(s[e] - mn);
                ps += p;
                p_s[srow * P_STRIDE + skey + e] = to_mma(p);
            }
#pragma unroll
            for (int o = 1; o < LPR; o <<= 1) ps += mt_shfl_xor(ps, o);
            l_run = l_run * alpha + ps;
            m_run = mn;
            if (lane % LPR == 0) red[srow] = alpha;
        }
        __syncthreads(); /* P and alpha complete */

        /* O = O * alpha + P V over this wave's columns */
#pragma unroll
        for (int m = 0; m < MT_TILES; m++) {
            float a[4];
#pragma unroll
            for (int e = 0; e < 4; e++) a[e] = red[m * 16 + l4 * 4 + e];
#pragma unroll
            for (int t = 0; t < ON; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[m][t][e] *= a[e];
        }
#pragma unroll
        for (int ks = 0; ks < SNA; ks++) {
            mt_u32x2 pa[MT_TILES];
#pragma unroll
            for (int m = 0; m < MT_TILES; m++) pa[m] = *(const mt_u32x2 *)(p_s + (m * 16 + l16) * P_STRIDE + ks * 16 + l4 * 4);
            const mt_u16 *v_rows = kc + (ks * 16 + l4 * 4) * KS_STRIDE + wave * CPW + l16;
#pragma unroll
            for (int t = 0; t < ON; t++) {
                const mt_u16 *v = v_rows + t * 16;
                const mt_u32x2 bv = {(mt_u32)v[0] | ((mt_u32)v[KS_STRIDE] << 16),
                                     (mt_u32)v[2 * KS_STRIDE] | ((mt_u32)v[3 * KS_STRIDE] << 16)};
#pragma unroll
                for (int m = 0; m < MT_TILES; m++) acc[m][t] = mt_mfma_16x16x16(acc[m][t], pa[m], bv, MMA_FP16);
            }
        }
        if (more) store(buf ^ 1); /* its last readers finished before this chunk's first barrier */
    }

    /* the owners publish 1/sum per row and write lse */
    __syncthreads();
    if (lane % LPR == 0) {
        red[srow] = l_run > 0.0f ? kv_scale / l_run : 0.0f;
        if (row0 + srow < rows) store_lse(lse, lse_part, b, split, rows, row0 + srow, row_lse(m_run, l_run));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < MT_TILES; m++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = m * 16 + l4 * 4 + e, grow = row0 + r;
            if (grow >= rows) continue;
            const float inv = red[r];
#pragma unroll
            for (int t = 0; t < ON; t++) {
                store_o(out, o_part, b, split, rows, grow, wave * CPW + t * 16 + l16, acc[m][t][e] * inv);
            }
        }
    } /* items */
}
#endif /* MMA */

#if !GROUPS_PER_CU /* length-aware variants have their own reduce, over the cut requests only */
#if NUM_SPLITS < 8
/* Few splits (2 or 4: the larger batches).  A group of 32 threads merges
 * one whole row: each lane takes REDUCE_VEC consecutive columns in every
 * 32 * REDUCE_VEC (coalesced) of all splits, and works out the splits'
 * weights itself from their lse (the same few words for all lanes, so no
 * exchange and no barrier).  Every load of the row is in flight at once,
 * so the merge costs one trip to L2; REDUCE_ROWS rows per work-group.
 * The wide form below spent 8 column blocks and 3 barriers per row, 4096
 * work-groups at B=32 x 16 rows, 2 waves of them (reports/PERFLOG.md,
 * session 12).  Grid (ceil(rows / REDUCE_ROWS), B); launched as a
 * dependent of decode, as below. */
#define REDUCE_ROWS 4
#define REDUCE_THREADS (32 * REDUCE_ROWS)
#define REDUCE_VEC (DL % 4 == 0 ? 4 : 1)
#define REDUCE_STEPS ((DL + 32 * REDUCE_VEC - 1) / (32 * REDUCE_VEC))
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
mla_reduce(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows) {
    const int lane = threadIdx.x % 32, row = blockIdx.x * REDUCE_ROWS + threadIdx.x / 32, b = blockIdx.y;
    MT_TRACE_DECL;
    MT_TRACE_MARK(0);
    mt_grid_dependency_wait();
    MT_TRACE_MARK(1); /* the decode's results are visible */
    if (row < rows) {
        const float *lp = lse_part + (size_t)b * NUM_SPLITS * rows + row;
        const float *base = o_part + ((size_t)b * NUM_SPLITS * rows + row) * DL;
        const size_t split_stride = (size_t)rows * DL;
        float x[NUM_SPLITS][REDUCE_STEPS][REDUCE_VEC], l[NUM_SPLITS];
#pragma unroll
        for (int sp = 0; sp < NUM_SPLITS; sp++) {
            l[sp] = lp[(size_t)sp * rows];
#pragma unroll
            for (int j = 0; j < REDUCE_STEPS; j++) {
                const int col = (32 * j + lane) * REDUCE_VEC;
                const float *src = base + sp * split_stride + col;
#if REDUCE_VEC == 4
                const float4 v = col < DL ? *(const float4 *)src : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                x[sp][j][0] = v.x, x[sp][j][1] = v.y, x[sp][j][2] = v.z, x[sp][j][3] = v.w;
#else
                x[sp][j][0] = col < DL ? src[0] : 0.0f;
#endif
            }
        }
        /* weights exp(lse_i - max); a split that saw no keys has weight 0
         * and a partial never written (select, not multiply: stale NaN
         * cannot leak in) */
        float m = MT_NEG_INF, total = 0.0f, w[NUM_SPLITS];
#pragma unroll
        for (int sp = 0; sp < NUM_SPLITS; sp++) m = fmaxf(m, l[sp]);
#pragma unroll
        for (int sp = 0; sp < NUM_SPLITS; sp++) w[sp] = split_weight(l[sp], m), total += w[sp];
        const float inv = total > 0.0f ? 1.0f / total : 0.0f;
        mt_u16 *orow = out + ((size_t)b * rows + row) * DL;
#pragma unroll
        for (int j = 0; j < REDUCE_STEPS; j++) {
            const int col = (32 * j + lane) * REDUCE_VEC;
            if (col >= DL) continue;
            mt_u16 h[REDUCE_VEC];
#pragma unroll
            for (int e = 0; e < REDUCE_VEC; e++) {
                float acc = 0.0f;
#pragma unroll
                for (int sp = 0; sp < NUM_SPLITS; sp++) acc += w[sp] != 0.0f ? w[sp] * x[sp][j][e] : 0.0f;
                h[e] = store_out(acc * inv);
            }
#if REDUCE_VEC == 4
            *(uint2 *)(orow + col) = make_uint2(h[0] | (unsigned)h[1] << 16, h[2] | (unsigned)h[3] << 16);
#else
            orow[col] = h[0];
#endif
        }
        if (lane == 0) lse[(size_t)b * rows + row] = merged_lse(m, total);
    }
    MT_TRACE_MARK(2);
    if (threadIdx.x == 0) {
        MT_TRACE_DUMP(2); /* kind 2: the reduce */
        MT_TRACE_PRINT_KEPT();
    }
}
#else /* NUM_SPLITS >= 8 */
/* The reduce's shape (kept equal to the launch in mla_decode.c): a block of
 * 32 x REDUCE_GROUPS threads takes REDUCE_COLS columns of one row; the 32
 * lanes of a warp take consecutive columns (coalesced), the groups take
 * interleaved subsets of the splits, so every thread has all of its loads
 * (REDUCE_COLS / 32 columns x NUM_SPLITS / REDUCE_GROUPS splits, at most 16)
 * in flight at once: with many splits and a small batch the latency of
 * these L2 reads is the whole cost. */
#define REDUCE_GROUPS 8
#define REDUCE_THREADS (32 * REDUCE_GROUPS)
#define REDUCE_COLS 64
#define REDUCE_CPT (REDUCE_COLS / 32)

/* Merges the NUM_SPLITS partial results of one row.  Grid: (rows, B,
 * ceil(DL / REDUCE_COLS)).  Launched as a dependent of the decode kernel
 * (programmatic dependent launch where there is one), so it waits for
 * decode's results before the first read.  The partial outputs are loaded
 * before the split weights are worked out, so the two round trips to L2
 * overlap.  A split that saw no keys has weight 0 and its partial is never
 * written: it is read but not used (select, not multiply, so stale NaN
 * cannot leak in). */
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
mla_reduce(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows) {
    __shared__ float weight[NUM_SPLITS];
    __shared__ float red[REDUCE_GROUPS];
    __shared__ float partial[REDUCE_GROUPS][REDUCE_COLS];
    const int row = blockIdx.x, b = blockIdx.y, tid = threadIdx.x;
    const int lane = tid % 32, group = tid / 32;
    const int col0 = blockIdx.z * REDUCE_COLS;
    const float *lp = lse_part + (size_t)b * NUM_SPLITS * rows + row;
    const float *base = o_part + ((size_t)b * NUM_SPLITS * rows + row) * DL;
    const size_t split_stride = (size_t)rows * DL;
    MT_TRACE_DECL;
    MT_TRACE_MARK(0);
    mt_grid_dependency_wait();
    MT_TRACE_MARK(1); /* the decode's results are visible */

    float x[NUM_SPLITS / REDUCE_GROUPS][REDUCE_CPT];
#pragma unroll
    for (int i = 0; i < NUM_SPLITS / REDUCE_GROUPS; i++)
#pragma unroll
        for (int c = 0; c < REDUCE_CPT; c++) {
            const int col = col0 + c * 32 + lane;
            x[i][c] = col < DL ? base[(size_t)(group + i * REDUCE_GROUPS) * split_stride + col] : 0.0f;
        }

    /* split weights: exp(lse_i - max), computed by every block (a few loads) */
    float m = MT_NEG_INF;
    for (int s = tid; s < NUM_SPLITS; s += REDUCE_THREADS) m = fmaxf(m, lp[(size_t)s * rows]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, mt_shfl_xor32(m, o));
    if (lane == 0) red[group] = m;
    __syncthreads();
    m = MT_NEG_INF;
    for (int g = 0; g < REDUCE_GROUPS; g++) m = fmaxf(m, red[g]);
    float total = 0.0f;
    for (int s = tid; s < NUM_SPLITS; s += REDUCE_THREADS) {
        const float l = lp[(size_t)s * rows], w = split_weight(l, m);
        weight[s] = w;
        total += w;
    }
    for (int o = 16; o > 0; o >>= 1) total += mt_shfl_xor32(total, o);
    __syncthreads(); /* red[] has been read */
    if (lane == 0) red[group] = total;
    __syncthreads();
    total = 0.0f;
    for (int g = 0; g < REDUCE_GROUPS; g++) total += red[g];
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;

#pragma unroll
    for (int c = 0; c < REDUCE_CPT; c++) {
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NUM_SPLITS / REDUCE_GROUPS; i++) {
            const float w = weight[group + i * REDUCE_GROUPS];
            acc += w != 0.0f ? w * x[i][c] : 0.0f;
        }
        partial[group][c * 32 + lane] = acc;
    }
    __syncthreads();
    for (int c = tid; c < REDUCE_COLS; c += REDUCE_THREADS) {
        const int col = col0 + c;
        if (col >= DL) continue;
        float acc = 0.0f;
        for (int g = 0; g < REDUCE_GROUPS; g++) acc += partial[g][c];
        out[((size_t)b * rows + row) * DL + col] = store_out(acc * inv);
    }
    if (tid == 0 && blockIdx.z == 0) lse[(size_t)b * rows + row] = merged_lse(m, total);
    MT_TRACE_MARK(2);
    if (tid == 0) {
        MT_TRACE_DUMP(2); /* kind 2: the reduce */
        MT_TRACE_PRINT_KEPT();
    }
}
#endif /* NUM_SPLITS */
#else /* GROUPS_PER_CU: the length-aware form */

/* ---- the schedule (mla_schedule) ---------------------------------------------
 * Run once per decode step on the GPU, from the lengths in device memory, so
 * a captured graph stays right when the lengths change.  One work-group of
 * SCHED_THREADS threads.  The work: the requests laid end to end, each
 * costing SCHED_OVERHEAD keys (its query loads, merges and stores) plus its
 * keys, cut into n_stretches stretches of nearly equal cost (each run by a
 * work-group per row tile, mt_items).  Each end is placed on its own (so
 * rounding never accumulates): inside a request's overhead it moves to the
 * request's start, inside its keys to the nearest multiple of
 * KV_GRANULARITY; but an end closer than the snap distance (a sixteenth of
 * a share plus SCHED_SNAP_KEYS, at most a quarter share) to an edge of its
 * request moves to that edge: a cut costs a query load and a merge.
 * kernels/schedule.c is the same algorithm on the host; test_gpu_mla checks
 * that both agree word for word.
 *
 * Only a stretch's first and last items can be pieces of a request; pieces
 * are numbered in order along the axis, so a cut request's pieces are
 * consecutive; mla_reduce merges the cut requests only.  Writes the layout
 * described above mt_items. */
#define SCHED_THREADS 1024
#define SCHED_OVERHEAD 64
#define SCHED_SNAP_KEYS 64

/* The reduce's shape for a cut request of n pieces: slot_groups warps share
 * a row (as many as 8-piece rounds need, a power of two up to 8), so 8 /
 * slot_groups rows per work-group of 8 warps; the request's work is one
 * unit per (tile, group of rows).  The host model computes the same
 * (schedule.c). */
__device__ __forceinline__ int red_slot_groups(int n) {
    int g = 1;
    while (g < 8 && 8 * g < n) g *= 2;
    return g;
}
__device__ __forceinline__ int red_units_per_tile(int n) {
    const int rows_per_block = 8 / red_slot_groups(n);
    return (TILE_Q + rows_per_block - 1) / rows_per_block;
}

/* Inclusive prefix sum over the work-group of SCHED_THREADS threads: each
 * warp scans its lanes by shuffles, the first warp scans the warps' totals
 * (part: one per warp), every lane adds the warps' before its own; two
 * barriers and no serial loop (a scan by 32 threads over 32 values each
 * through shared memory took ~1.5 us, three of them most of the kernel). */
#define SCHED_WARPS (SCHED_THREADS / MT_WARP)
template <typename T>
__device__ __forceinline__ T warp_scan(T x, int lane) {
#pragma unroll
    for (int off = 1; off < MT_WARP; off <<= 1) {
        const T y = mt_shfl_up(x, off);
        if (lane >= off) x += y;
    }
    return x;
}
template <typename T>
__device__ __forceinline__ T block_scan(T v, T *part, T *total) {
    const int tid = threadIdx.x, lane = tid % MT_WARP, warp = tid / MT_WARP;
    const T x = warp_scan(v, lane);
    if (lane == MT_WARP - 1) part[warp] = x;
    __syncthreads();
    if (warp == 0) {
        const T w = warp_scan(lane < SCHED_WARPS ? part[lane] : (T)0, lane);
        if (lane < SCHED_WARPS) part[lane] = w;
    }
    __syncthreads();
    const T r = x + (warp > 0 ? part[warp - 1] : (T)0);
    *total = part[SCHED_WARPS - 1];
    __syncthreads(); /* part is free again */
    return r;
}

/* The lengths are read in runs: thread i takes requests [i * per, (i + 1) *
 * per), per = ceil(batch / SCHED_THREADS), so the prefix is kept per run in
 * shared memory (runs[i] = cost before run i) and a request is found by a
 * binary search over the runs, then a walk inside one. */
extern "C" __global__ void __launch_bounds__(SCHED_THREADS)
mla_schedule(const int *__restrict__ seq_lens, int batch, int tiles, int n_stretches, int4 *__restrict__ sched) {
    __shared__ unsigned long long runs[SCHED_THREADS + 1], part_u64[SCHED_WARPS];
    __shared__ int part_i[SCHED_WARPS], cut_first[SCHED_THREADS + 1];
    __shared__ int2 pos_s[SCHED_THREADS + 1];
    const int tid = threadIdx.x, S = n_stretches, per = (batch + SCHED_THREADS - 1) / SCHED_THREADS;
    auto cost = [&](int b) { return SCHED_OVERHEAD + (unsigned long long)max(0, seq_lens[b]); };

    /* 1. the cost of each run, and the prefix over runs */
    unsigned long long mine = 0;
    for (int b = tid * per; b < min(batch, tid * per + per); b++) mine += cost(b);
    unsigned long long total;
    runs[tid + 1] = block_scan(mine, part_u64, &total);
    if (tid == 0) runs[0] = 0;
    __syncthreads();
    const unsigned long long share = (total + S - 1) / S;
    const unsigned long long snap = min(share / 16 + SCHED_SNAP_KEYS, share / 4);

    /* 2. the end of stretch s, as (request, key) */
    if (tid == 0) pos_s[0] = make_int2(0, 0);
    if (tid < S) {
        const unsigned long long end = tid + 1 == S ? total : (total * (unsigned long long)(tid + 1) + S / 2) / S;
        int2 to = make_int2(batch, 0);
        if (end < total) {
            /* the run holding `end` (runs[q] <= end < runs[q + 1]), then the request in it */
            int lo = 0, hi = SCHED_THREADS - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (runs[mid] <= end) lo = mid;
                else hi = mid - 1;
            }
            int r = lo * per;
            unsigned long long start = runs[lo], c = cost(r);
            while (r + 1 < batch && end >= start + c) start += c, c = cost(++r);
            const int keys = (int)(c - SCHED_OVERHEAD);
            const unsigned long long to_start = end - start, to_end = start + c - end;
            const long long k = (long long)to_start - SCHED_OVERHEAD;
            if (to_start <= snap && to_start <= to_end) to = make_int2(r, 0);
            else if (to_end <= snap) to = make_int2(r + 1, 0);
            else if (k <= 0) to = make_int2(r, 0);
            else {
                const long long rk = (k + KV_GRANULARITY / 2) / KV_GRANULARITY * KV_GRANULARITY;
                to = rk >= keys ? make_int2(r + 1, 0) : make_int2(r, (int)rk);
            }
        }
        pos_s[tid + 1] = to;
    }
    __syncthreads();

    /* 3. the pieces each stretch has (0, 1 or 2) and its first one; whether
     * it opens a cut request (holds its first piece): both counted in one
     * scan, pieces in the low 16 bits */
    int pieces = 0, first_cut = 0, opens = 0, offset = 0, last = 0;
    if (tid < S) {
        const int2 s0 = pos_s[tid], s1 = pos_s[tid + 1];
        last = s1.y > 0 ? s1.x : s1.x - 1;
        const int count = (s0.x == s1.x && s0.y == s1.y) ? 0 : last - s0.x + 1;
        first_cut = count > 0 && (s0.y > 0 || (count == 1 && s1.y > 0));
        const int last_cut = count > 1 && s1.y > 0;
        pieces = first_cut + last_cut;
        if (first_cut && s0.y == 0) opens = 1;
        else if (last_cut) opens = 1, offset = first_cut;
    }
    int both;
    const int incl = block_scan(pieces | opens << 16, part_i, &both);
    const int first_piece = (incl & 0xffff) - pieces, cut_index = (incl >> 16) - opens;
    const int n_pieces = both & 0xffff, n_cut = both >> 16;
    if (tid <= S) {
        const int2 p = pos_s[tid];
        sched[1 + tid] = make_int4(p.x, p.y, tid < S ? first_piece : n_pieces, 0);
    }
    /* 4. the cut requests: every piece belongs to one, and a request's
     * pieces are consecutive, so its count runs to the next one's first;
     * then the reduce's units before each (a prefix) */
    if (opens) cut_first[cut_index] = first_piece + offset;
    if (tid == 0) cut_first[n_cut] = n_pieces;
    __syncthreads();
    const int n = opens ? cut_first[cut_index + 1] - cut_first[cut_index] : 0;
    const int units = opens ? tiles * red_units_per_tile(n) : 0;
    int n_units;
    const int first_unit = block_scan(units, part_i, &n_units) - units;
    if (opens) {
        const int r = first_cut && pos_s[tid].y == 0 ? pos_s[tid].x : last;
        SCHED_CUT(sched, S, cut_index) = make_int4(r, cut_first[cut_index], n, first_unit);
    }
    if (tid == 0) sched[0] = make_int4(S, n_cut, n_units, n_pieces);
}

/* Merges the requests the schedule cut, tile by tile.  A unit is 8 / g
 * rows of one tile of a cut request (g = red_slot_groups of its piece
 * count): a work-group of 8 warps takes 64 columns (two per lane) of them,
 * the g warps of a row its pieces in turn, 8 at a time, every load of a
 * round issued before any is used, so a round costs one trip to L2.  The
 * grid is fixed (a captured graph replays it whatever the lengths): its
 * work-groups take the units in turn, finding a unit's request by a
 * binary search over the requests' first units (in shared memory).
 * Launched as a dependent of decode. */
#define RED_COLS_PAIR (DL % 2 == 0)
extern "C" __global__ void __launch_bounds__(256)
mla_reduce(const float *__restrict__ o_part, const float *__restrict__ lse_part, mt_u16 *__restrict__ out,
           float *__restrict__ lse, int rows, int n_stretches, const int4 *__restrict__ sched) {
    __shared__ float m_s[8], l_s[8];
    __shared__ float2 acc_s[8][32];
    __shared__ int unit_first[SCHED_THREADS];
    mt_grid_dependency_wait();
    const int4 head = sched[0];
    const int n_cut = head.y, n_units = head.z, tiles = (rows + TILE_Q - 1) / TILE_Q;
    if ((int)blockIdx.x >= n_units) return;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    for (int i = tid; i < n_cut; i += 256) unit_first[i] = SCHED_CUT(sched, n_stretches, i).w;
    __syncthreads();
    const int col = blockIdx.y * 64 + 2 * lane;
    for (int unit = blockIdx.x; unit < n_units; unit += gridDim.x) {
        int lo = 0, hi = n_cut - 1; /* the cut request: unit_first[lo] <= unit < unit_first[lo + 1] */
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (unit_first[mid] <= unit) lo = mid;
            else hi = mid - 1;
        }
        const int4 c = SCHED_CUT(sched, n_stretches, lo);
        const int b = c.x, first = c.y, n = c.z, slot_groups = red_slot_groups(n);
        const int rows_per_block = 8 / slot_groups, per_tile = red_units_per_tile(n);
        const int local = unit - c.w, t = local / per_tile;
        const int r = (local - t * per_tile) * rows_per_block + warp / slot_groups, sg = warp % slot_groups;
        const int row = t * TILE_Q + r;
        const bool mine = r < TILE_Q && row < rows;
        float m = MT_NEG_INF, l = 0.0f, a0 = 0.0f, a1 = 0.0f;
        for (int base = sg; base < n && mine; base += 8 * slot_groups) {
            float ls[8];
            float2 x[8];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int s = base + j * slot_groups;
                const size_t slot_row = (((size_t)first + s) * tiles + t) * TILE_Q + r;
                ls[j] = s < n ? lse_part[slot_row] : MT_NEG_INF;
                const float *src = o_part + slot_row * DL + col;
                x[j] = make_float2(0.0f, 0.0f);
                if (s < n) {
#if RED_COLS_PAIR
                    if (col < DL) x[j] = *(const float2 *)src;
#else
                    if (col < DL) x[j].x = src[0];
                    if (col + 1 < DL) x[j].y = src[1];
#endif
                }
            }
            float mx = m;
#pragma unroll
            for (int j = 0; j < 8; j++) mx = fmaxf(mx, ls[j]);
            if (mx == MT_NEG_INF) continue; /* no keys in any slot so far */
            const float sc = split_weight(m, mx);
            l *= sc, a0 *= sc, a1 *= sc;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                /* select: a slot without keys adds nothing, whatever it holds */
                const float w = split_weight(ls[j], mx);
                l += w, a0 += w != 0.0f ? w * x[j].x : 0.0f, a1 += w != 0.0f ? w * x[j].y : 0.0f;
            }
            m = mx;
        }
        if (slot_groups > 1) { /* the same for the whole work-group: the barriers are safe */
            if (lane == 0) m_s[warp] = m, l_s[warp] = l;
            acc_s[warp][lane] = make_float2(a0, a1);
            __syncthreads();
            if (sg == 0) {
                float mx = MT_NEG_INF;
                for (int w = warp; w < warp + slot_groups; w++) mx = fmaxf(mx, m_s[w]);
                l = 0.0f, a0 = 0.0f, a1 = 0.0f;
                for (int w = warp; w < warp + slot_groups; w++) {
                    const float f = split_weight(m_s[w], mx);
                    l += l_s[w] * f, a0 += acc_s[w][lane].x * f, a1 += acc_s[w][lane].y * f;
                }
                m = mx;
            }
            __syncthreads(); /* m_s, l_s, acc_s are free for the next unit */
        }
        if (!mine || sg != 0) continue;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        mt_u16 *dst = out + ((size_t)b * rows + row) * DL + col;
        if (col < DL) dst[0] = store_out(a0 * inv);
        if (col + 1 < DL) dst[1] = store_out(a1 * inv);
        if (blockIdx.y == 0 && lane == 0) lse[(size_t)b * rows + row] = merged_lse(m, l);
    }
}
#endif /* !GROUPS_PER_CU */
