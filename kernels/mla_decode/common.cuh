/*
 * common.cuh - what every path of the decode family compiles first (after
 * the prelude and params.h): the math, the defaults of its defines, dtype
 * loads and stores, causal limits, and the work items a work-group runs.
 *
 * The math (docs/DESIGN.md section 2), for request b, query token t, head n:
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
 * The paths, one file each, chosen on the host (family.c, mt_decode_path):
 * simt.cu (MMA=0), mma_sync.cu (MMA=1 on NVIDIA sm_80+, mma.sync m16n8k16,
 * cp.async pipeline), mfma.cu (MMA=1 on AMD CDNA), wgmma64.cu and
 * wgmma_t16.cu (MMA=2, Hopper sm_90a); each describes its own layout.  The
 * split merge is reduce.cu, the length-aware schedule schedule.cu.
 *
 * Compile-time parameters (the variant; see family.c for ranges):
 *   TILE_Q, KV_GRANULARITY, NUM_SPLITS, BLOCK_THREADS, KV_CHUNK, MMA, KV_STAGES
 * and the problem's static facts: D, DL, PAGE_SIZE, Q_DTYPE, KV_DTYPE
 * (0 = bf16, 1 = fp16, 2 = fp8 e4m3 OCP "fn", 3 = fp8 e4m3 "fnuz"; the
 * values of mt_dtype, kernels/variant.h).
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
#ifndef VIEWS
#define VIEWS 0 /* 1: q, out and lse are placed through the call's strides */
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

#if KV_DTYPE == 2 || KV_DTYPE == 3
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
#elif KV_DTYPE == 2
    return mt_fp8e4m3_to_f32(*p);
#else
    return mt_fp8e4m3fnuz_to_f32(*p);
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
/* ---- the call's views (params.h, mt_row_strides) ------------------------
 * q, out and lse may be views into larger tensors, and q may come in two
 * parts (vLLM's ql_nope and q_pe): every access to them goes through these,
 * which place query row `row` (= t * N + n) of request b by the strides the
 * host filled (the contiguous layout when the caller gave none).
 *
 * What they read is copied out of the kernel's parameter by its wrapper
 * and passed down by value: values, not loads through a pointer, so the
 * compiler keeps them constant across the stores (read through a reference
 * to the parameter they were reloaded after every store, with the row
 * arithmetic: reports/PERFLOG.md session 14). */
struct mt_views {
    const mt_u16 *q_pe;
    mt_row_strides q, q_pe_s, out, lse;
    int n_heads, rows;
};
__device__ __forceinline__ mt_views views_of(const mt_decode_params &p) {
    return mt_views{(const mt_u16 *)p.q_pe, p.q_str, p.q_pe_str, p.out_str, p.lse_str, p.n_heads, p.rows};
}
#if VIEWS
__device__ __forceinline__ long long row_offset(const mt_row_strides &s, int n_heads, int b, int row) {
    /* rows evenly spaced (the host marks it with t < 0: a token's rows
     * follow the previous token's, or Sq is 1), as in every contiguous or
     * padded layout: no division, and the row's part fits 32 bits */
    if (s.t < 0) return (long long)b * s.b + row * (int)s.n;
    const int t = row / n_heads;
    return (long long)b * s.b + (long long)t * s.t + (long long)(row - t * n_heads) * s.n;
}
/* q's element `col` of a row: columns below DL from q, the rest from q_pe.
 * Loads of 8 or 4 elements from a multiple of their size lie in one part
 * (the host requires DL % 8 == 0 when q_pe is a tensor of its own). */
__device__ __forceinline__ const mt_u16 *q_at(const mt_views &p, const mt_u16 *q, int b, int row, int col) {
    return col < DL ? q + row_offset(p.q, p.n_heads, b, row) + col
                    : p.q_pe + row_offset(p.q_pe_s, p.n_heads, b, row) + (col - DL);
}
__device__ __forceinline__ mt_u16 *out_row(const mt_views &p, mt_u16 *out, int b, int row) {
    return out + row_offset(p.out, p.n_heads, b, row);
}
__device__ __forceinline__ float *lse_at(const mt_views &p, float *lse, int b, int row) {
    return lse + row_offset(p.lse, p.n_heads, b, row);
}
#else
/* VIEWS=0: the contiguous layouts [B, Sq, N, width], rows in order (what
 * the views cost, measured: reports/PERFLOG.md session 14) */
__device__ __forceinline__ const mt_u16 *q_at(const mt_views &p, const mt_u16 *q, int b, int row, int col) {
    return q + ((size_t)b * p.rows + row) * D + col;
}
__device__ __forceinline__ mt_u16 *out_row(const mt_views &p, mt_u16 *out, int b, int row) {
    return out + ((size_t)b * p.rows + row) * DL;
}
__device__ __forceinline__ float *lse_at(const mt_views &p, float *lse, int b, int row) {
    return lse + (size_t)b * p.rows + row;
}
#endif

__device__ __forceinline__ void store_lse(const mt_views &p, float *lse, float *lse_part, int b, int dest,
                                          int rows, int row, float v) {
    if (DEST_DIRECT(dest)) *lse_at(p, lse, b, row) = v;
    else lse_part[PART_ROW(b, dest, rows, row)] = v;
}
__device__ __forceinline__ void store_o(const mt_views &p, mt_u16 *out, float *o_part, int b, int dest,
                                        int rows, int row, int col, float v) {
    if (DEST_DIRECT(dest)) out_row(p, out, b, row)[col] = store_out(v);
    else o_part[PART_ROW(b, dest, rows, row) * DL + col] = v;
}
/* Eight results of a row from column `col` (a multiple of 8): one 16-byte
 * store to out, or two to the partial slot.  For epilogues that stage their
 * rows in shared memory and store them by a loop (wgmma paths: see
 * T8_ROWS_STAGED in wgmma_t16.cu for why). */
__device__ __forceinline__ void store_o8(const mt_views &p, mt_u16 *out, float *o_part, int b, int dest, int rows,
                                         int row, int col, float4 a, float4 c) {
    if (DEST_DIRECT(dest)) {
        auto two = [](float x, float y) { return (mt_u32)store_out(x) | (mt_u32)store_out(y) << 16; };
        *(uint4 *)(out_row(p, out, b, row) + col) = make_uint4(two(a.x, a.y), two(a.z, a.w), two(c.x, c.y), two(c.z, c.w));
    } else {
        float *d = o_part + PART_ROW(b, dest, rows, row) * DL + col;
        *(float4 *)d = a;
        *(float4 *)(d + 4) = c;
    }
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

/* The schedule, in int4 words (params.h, MT_SCHEDULE_START / _CUT; schedule.h describes it):
 *   [0]                    stretches, cut requests, reduce units, pieces
 *   [1 + s]                stretch s's start: request, key, its first piece;
 *                          [1 + n_stretches] is the end of the last one
 *   [2 + n_stretches + i]  cut request i: b, first piece, pieces, first unit
 * Piece p of a cut request keeps tile t's partial in slot p * tiles + t. */
#define SCHED_START(sched, s) ((sched)[MT_SCHEDULE_START(s)])
#define SCHED_CUT(sched, n_stretches, i) ((sched)[MT_SCHEDULE_CUT(n_stretches, i)])

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

/* The decode kernels' arguments unpacked from params.h's struct, in the
 * order of every path's mla_decode_body: each path's kernel is a device
 * function with typed __restrict__ parameters, inlined into a __global__
 * mla_decode(mt_decode_params) wrapper, so the compiler's aliasing facts
 * are what they were when these were the kernel's own parameters. */
#define MT_DECODE_BODY_ARGS(p)                                                                                     \
    (const mt_u16 *)(p).q, (const kv_t *)(p).kv, (const int *)(p).block_table, (const int *)(p).seq_lens,         \
        (mt_u16 *)(p).out, (float *)(p).lse, (float *)(p).o_part, (float *)(p).lse_part, (p).n_heads, (p).sq,     \
        (p).max_blocks, (p).scale, kv_scale_of(p), (const int4 *)(p).schedule

/* The dequantisation scale: from device memory when the caller keeps it
 * there (read at run time, so a captured graph follows its changes). */
__device__ __forceinline__ float kv_scale_of(const mt_decode_params &p) {
#if VIEWS
    return p.kv_scale_ptr ? *(const float *)p.kv_scale_ptr : p.kv_scale;
#else
    return p.kv_scale;
#endif
}
