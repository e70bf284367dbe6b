/*
 * reduce.cu - the split merge of the decode family: mla_reduce combines
 * partial results (o_i normalised, lse_i) into out and lse:
 *   lse = log(sum_i exp(lse_i)),  o = sum_i exp(lse_i - lse) * o_i.
 * Fixed splits (num_splits > 1, split_reduce 0) merge every row of every
 * request; the length-aware form (groups_per_cu > 0) merges only the
 * requests its schedule cut (it comes after schedule.cu, whose helpers it
 * uses).
 */
#if !GROUPS_PER_CU
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
__device__ __forceinline__ void
mla_reduce_body(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows, const mt_views prm) {
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
        mt_u16 *orow = out_row(prm, out, b, row);
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
        if (lane == 0) *lse_at(prm, lse, b, row) = merged_lse(m, total);
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
__device__ __forceinline__ void
mla_reduce_body(const float *__restrict__ o_part, const float *__restrict__ lse_part,
           mt_u16 *__restrict__ out, float *__restrict__ lse, int rows, const mt_views prm) {
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
        out_row(prm, out, b, row)[col] = store_out(acc * inv);
    }
    if (tid == 0 && blockIdx.z == 0) *lse_at(prm, lse, b, row) = merged_lse(m, total);
    MT_TRACE_MARK(2);
    if (tid == 0) {
        MT_TRACE_DUMP(2); /* kind 2: the reduce */
        MT_TRACE_PRINT_KEPT();
    }
}

#endif /* NUM_SPLITS */

/* Either form: the kernel takes the family's params (params.h). */
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
mla_reduce(const MT_GRID_CONST mt_decode_params p) {
    mla_reduce_body((const float *)p.o_part, (const float *)p.lse_part, (mt_u16 *)p.out, (float *)p.lse, p.rows,
                    views_of(p));
}

#else /* GROUPS_PER_CU: the cut requests only */

/* Merges the requests the schedule cut, tile by tile.  A unit is
 * red_unit_rows(n) rows of one tile of a cut request of n pieces (schedule.cu):
 * a work-group of 8 warps takes RED_COLS columns of them (RED_VEC
 * consecutive ones per lane).  Each warp has 8 load slots a round, every
 * load of a round issued before any is used, so a round costs one trip to
 * memory:
 *   - up to 8 pieces, one round: the warp's rows_per_warp rows take 8 /
 *     rows_per_warp slots each (a 2-piece request: 4 rows a warp);
 *   - more: g = red_slot_groups(n) warps share a row, its pieces in turn,
 *     8 at a time, and meet in shared memory.
 * The grid is fixed (a captured graph replays it whatever the lengths):
 * one wave, 3 work-groups per compute unit (the launch bounds), each
 * RED_COLS columns of its units (gridDim.y = ceil(DL / RED_COLS)),
 * gridDim.x of them taking the units in turn.
 *
 * Launched as a dependent of decode, it reads the schedule before it waits
 * for decode's results (mla_schedule finished before decode started, so
 * only the partials are decode's): a work-group with no unit leaves without
 * waiting, and one with units has found its first unit's request
 * (red_cut_of) when decode's last work-group ends.  What is left on the
 * call's critical path is, per unit, a round of loads, the stores, and the
 * next unit's search.  (Before: one row per warp up to 8 pieces, so a
 * 2-piece request used 2 of the 8 slots and took 4x the units: at 128
 * heads, B=32, 4 rounds after decode; reports/PERFLOG.md session 22.) */
#define RED_VEC (DL % 4 == 0 ? 4 : 1) /* columns per lane (launch.c: the same rule) */
#define RED_COLS (32 * RED_VEC)

/* Unit `unit`'s cut request: its entry (b, first piece, pieces, first
 * unit), the last whose first unit is at most `unit` (entries are in order
 * of first unit).  The lanes of a warp look at every 32nd entry each, all
 * loads in flight at once, and agree on the last by a maximum over the
 * warp: one trip to memory (and one to the cache), where a binary search
 * made seven dependent ones (on the critical path for the work-groups that only start when
 * decode's last ones leave their compute units). */
__device__ __forceinline__ int4 red_cut_of(const int4 *__restrict__ sched, int n_stretches, int n_cut, int unit,
                                           int lane) {
    int best = -1;
    for (int i = lane; i < n_cut; i += 32)
        if (SCHED_CUT(sched, n_stretches, i).w <= unit) best = i;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) best = max(best, mt_shfl_xor32(best, off));
    return SCHED_CUT(sched, n_stretches, best); /* the same entry, from the cache */
}

/* Where this warp works in unit `unit` of cut request c: tile t, its first
 * row r (of per_warp; with slot groups, one row shared by g warps, this
 * warp's group sg). */
struct red_place {
    int b, first, n, slot_groups, per_warp, t, r, sg;
};
__device__ __forceinline__ red_place red_place_of(int4 c, int unit, int warp) {
    red_place p;
    p.b = c.x, p.first = c.y, p.n = c.z, p.slot_groups = red_slot_groups(p.n), p.per_warp = red_rows_per_warp(p.n);
    const int per_tile = red_units_per_tile(p.n);
    const int local = unit - c.w;
    p.t = local / per_tile;
    const int row0 = (local - p.t * per_tile) * red_unit_rows(p.n);
    p.r = row0 + (warp / p.slot_groups) * p.per_warp, p.sg = warp % p.slot_groups;
    return p;
}

/* Row r of tile t exists (the last tile of a request may be partial). */
__device__ __forceinline__ bool red_row_exists(const red_place &p, int r, int rows) {
    return r < TILE_Q && p.t * TILE_Q + r < rows;
}

/* One round of loads: slot j of this warp holds piece piece(j) of row
 * row(j) (both from the caller); a slot with no piece gets lse -inf. */
template <typename Slot>
__device__ __forceinline__ void red_load(const float *__restrict__ o_part, const float *__restrict__ lse_part,
                                         const red_place &p, int tiles, int rows, int col, Slot slot, float ls[8],
                                         float x[8][RED_VEC]) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int s, r;
        slot(j, s, r);
        const bool ok = s < p.n && red_row_exists(p, r, rows);
        const size_t slot_row = (((size_t)p.first + s) * tiles + p.t) * TILE_Q + r;
        ls[j] = ok ? lse_part[slot_row] : MT_NEG_INF;
        const float *src = o_part + slot_row * DL + col;
#if RED_VEC == 4
        const float4 v = ok && col < DL ? *(const float4 *)src : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        x[j][0] = v.x, x[j][1] = v.y, x[j][2] = v.z, x[j][3] = v.w;
#else
        x[j][0] = ok && col < DL ? src[0] : 0.0f;
#endif
    }
}

/* The merged row's store: out (RED_VEC columns from col) and, once per
 * row, lse. */
__device__ __forceinline__ void red_store(const mt_views &prm, mt_u16 *__restrict__ out, float *__restrict__ lse,
                                          const red_place &p, int r, int col, int lane, float m, float l,
                                          const float a[RED_VEC]) {
    const int row = p.t * TILE_Q + r;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    mt_u16 *dst = out_row(prm, out, p.b, row) + col;
#if RED_VEC == 4
    if (col < DL) {
        const mt_u16 h0 = store_out(a[0] * inv), h1 = store_out(a[1] * inv), h2 = store_out(a[2] * inv),
                     h3 = store_out(a[3] * inv);
        *(uint2 *)dst = make_uint2(h0 | (unsigned)h1 << 16, h2 | (unsigned)h3 << 16);
    }
#else
    if (col < DL) dst[0] = store_out(a[0] * inv);
#endif
    if (blockIdx.y == 0 && lane == 0) *lse_at(prm, lse, p.b, row) = merged_lse(m, l);
}

__device__ __forceinline__ void
mla_reduce_body(const float *__restrict__ o_part, const float *__restrict__ lse_part, mt_u16 *__restrict__ out,
                float *__restrict__ lse, int rows, int n_stretches, const int4 *__restrict__ sched,
                const mt_views prm) {
    __shared__ float m_s[8], l_s[8];
    __shared__ float acc_s[8][RED_COLS];
    MT_TRACE_DECL;
    MT_TRACE_MARK(0);
    const int4 head = sched[0];
    const int n_cut = head.y, n_units = head.z, tiles = (rows + TILE_Q - 1) / TILE_Q;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int unit = blockIdx.x;
    red_place p = {};
    if (unit < n_units) {
        p = red_place_of(red_cut_of(sched, n_stretches, n_cut, unit, lane), unit, warp);
        mt_grid_dependency_wait();
    }
#ifdef MT_TRACE
    else mt_grid_dependency_wait(); /* it prints decode's lines below */
#endif
    MT_TRACE_MARK(1); /* the decode's results are visible (or this group has no unit) */
    const int col = blockIdx.y * RED_COLS + RED_VEC * lane;
    while (unit < n_units) {
        const int next = unit + (int)gridDim.x;
        float ls[8], x[8][RED_VEC];
        if (p.slot_groups == 1) {
            /* one round: slot j is piece j % per of row r + j / per, per = 8 / per_warp */
            const int shift = 3 - (31 - __clz(p.per_warp)); /* log2(per) */
            red_load(o_part, lse_part, p, tiles, rows, col,
                     [&](int j, int &s, int &r) { s = j & ((1 << shift) - 1), r = p.r + (j >> shift); }, ls, x);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                if (k >= p.per_warp || !red_row_exists(p, p.r + k, rows)) break;
                float m = MT_NEG_INF, l = 0.0f, a[RED_VEC];
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if ((j >> shift) == k) m = fmaxf(m, ls[j]);
#pragma unroll
                for (int e = 0; e < RED_VEC; e++) a[e] = 0.0f;
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if ((j >> shift) == k) {
                        /* select: a slot without keys adds nothing, whatever it holds */
                        const float w = split_weight(ls[j], m);
                        l += w;
#pragma unroll
                        for (int e = 0; e < RED_VEC; e++) a[e] += w != 0.0f ? w * x[j][e] : 0.0f;
                    }
                red_store(prm, out, lse, p, p.r + k, col, lane, m, l, a);
            }
        } else {
            /* rounds of 8 pieces of one row, g warps taking every g-th */
            const bool mine = red_row_exists(p, p.r, rows);
            float m = MT_NEG_INF, l = 0.0f, a[RED_VEC];
#pragma unroll
            for (int e = 0; e < RED_VEC; e++) a[e] = 0.0f;
            for (int base = p.sg; base < p.n && mine; base += 8 * p.slot_groups) {
                red_load(o_part, lse_part, p, tiles, rows, col,
                         [&](int j, int &s, int &r) { s = base + j * p.slot_groups, r = p.r; }, ls, x);
                float mx = m;
#pragma unroll
                for (int j = 0; j < 8; j++) mx = fmaxf(mx, ls[j]);
                if (mx == MT_NEG_INF) continue; /* no keys in any slot so far */
                const float sc = split_weight(m, mx);
                l *= sc;
#pragma unroll
                for (int e = 0; e < RED_VEC; e++) a[e] *= sc;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float w = split_weight(ls[j], mx);
                    l += w;
#pragma unroll
                    for (int e = 0; e < RED_VEC; e++) a[e] += w != 0.0f ? w * x[j][e] : 0.0f;
                }
                m = mx;
            }
            /* the g warps of a row meet (the same for the whole work-group:
             * every warp of a unit has slot groups, so the barriers are safe) */
            if (lane == 0) m_s[warp] = m, l_s[warp] = l;
#pragma unroll
            for (int e = 0; e < RED_VEC; e++) acc_s[warp][RED_VEC * lane + e] = a[e];
            __syncthreads();
            if (p.sg == 0 && mine) {
                float mx = MT_NEG_INF;
                for (int w = warp; w < warp + p.slot_groups; w++) mx = fmaxf(mx, m_s[w]);
                l = 0.0f;
#pragma unroll
                for (int e = 0; e < RED_VEC; e++) a[e] = 0.0f;
                for (int w = warp; w < warp + p.slot_groups; w++) {
                    const float f = split_weight(m_s[w], mx);
                    l += l_s[w] * f;
#pragma unroll
                    for (int e = 0; e < RED_VEC; e++) a[e] += acc_s[w][RED_VEC * lane + e] * f;
                }
                red_store(prm, out, lse, p, p.r, col, lane, mx, l, a);
            }
            __syncthreads(); /* m_s, l_s, acc_s are free for the next unit */
        }
        if (next < n_units) p = red_place_of(red_cut_of(sched, n_stretches, n_cut, next, lane), next, warp);
        unit = next;
    }
    MT_TRACE_MARK(2);
    if (tid == 0) {
        MT_TRACE_DUMP(2); /* kind 2: the reduce */
        MT_TRACE_PRINT_KEPT();
    }
}

/* 3 work-groups per compute unit (80 registers: a warp's 8 slots of 4
 * columns stay in registers; at 4 per unit, 64 registers, the loads
 * spilled): the grid (launch.c) is one wave */
extern "C" __global__ void __launch_bounds__(256, 3)
mla_reduce(const MT_GRID_CONST mt_decode_params p) {
    mla_reduce_body((const float *)p.o_part, (const float *)p.lse_part, (mt_u16 *)p.out, (float *)p.lse, p.rows,
                    p.n_stretches, (const int4 *)p.schedule, views_of(p));
}
#endif /* GROUPS_PER_CU */
