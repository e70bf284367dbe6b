/*
 * schedule.cu - mla_schedule, the length-aware form's work schedule, built
 * on the GPU from the lengths in device memory (groups_per_cu > 0).
 */
#if !GROUPS_PER_CU
#error "schedule.cu is compiled into length-aware variants only"
#endif
#ifndef SNAP_CAP
#define SNAP_CAP 4 /* the snap distance's cap, share / SNAP_CAP (the variant's snap_cap) */
#endif
/* ---- the schedule (mla_schedule) ---------------------------------------------
 * Run once per decode step on the GPU, from the lengths in device memory, so
 * a captured graph stays right when the lengths change.  One work-group of
 * SCHED_THREADS threads.  The work: the requests laid end to end, each
 * costing `cost` keys (its query loads, merges and stores) plus its
 * keys, cut into n_stretches stretches of nearly equal cost (each run by a
 * work-group per row tile, mt_items).  Each end is placed on its own (so
 * rounding never accumulates): inside a request's overhead it moves to the
 * request's start, inside its keys to the nearest multiple of
 * KV_GRANULARITY; but an end closer than the snap distance (a sixteenth of
 * a share plus `snap_keys`, at most share / SNAP_CAP) to an edge of its
 * request moves to that edge: a cut costs a query load and a merge.
 * schedule.c is the same algorithm on the host; test_gpu_mla checks
 * that both agree word for word.
 *
 * Only a stretch's first and last items can be pieces of a request; pieces
 * are numbered in order along the axis, so a cut request's pieces are
 * consecutive; mla_reduce merges the cut requests only.  Writes the layout
 * described above mt_items. */
#define SCHED_THREADS MT_SCHEDULE_THREADS

/* The reduce's shape for a cut request of n pieces (schedule.h says why;
 * schedule.c's host model computes the same): past 8 pieces, slot_groups
 * warps share a row (as many as 8-piece rounds need, a power of two up to
 * 8); up to 8, a warp merges rows_per_warp rows in one round, 8 / p slots
 * each (p: the power of two >= n), at most TILE_Q / 8.  The request's work
 * is one unit of 8 warps per (tile, unit_rows rows). */
__device__ __forceinline__ int red_slot_groups(int n) {
    int g = 1;
    while (g < 8 && 8 * g < n) g *= 2;
    return g;
}
__device__ __forceinline__ int red_rows_per_warp(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return max(1, min(p >= 8 ? 1 : 8 / p, TILE_Q / 8));
}
__device__ __forceinline__ int red_unit_rows(int n) { return 8 * red_rows_per_warp(n) / red_slot_groups(n); }
__device__ __forceinline__ int red_units_per_tile(int n) {
    const int rows = red_unit_rows(n);
    return (TILE_Q + rows - 1) / rows;
}

/* Inclusive prefix sum over the work-group (blockDim.x threads, a multiple
 * of 64, at most SCHED_THREADS): each warp scans its lanes by shuffles, the
 * first warp scans the warps' totals (part: one per warp), every lane adds
 * the warps' before its own; two barriers and no serial loop (a scan by 32
 * threads over 32 values each through shared memory took ~1.5 us, three of
 * them most of the kernel). */
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
    const int warps = (int)blockDim.x / MT_WARP;
    const T x = warp_scan(v, lane);
    if (lane == MT_WARP - 1) part[warp] = x;
    __syncthreads();
    if (warp == 0) {
        const T w = warp_scan(lane < warps ? part[lane] : (T)0, lane);
        if (lane < warps) part[lane] = w;
    }
    __syncthreads();
    const T r = x + (warp > 0 ? part[warp - 1] : (T)0);
    *total = part[warps - 1];
    __syncthreads(); /* part is free again */
    return r;
}

/* The even form (schedule.c): a request's keys in granules (rounded up)
 * and its pieces at u granules at most each; the count of pieces at u by
 * the 32 lanes of a group (requests lane, lane + 32, ...), every lane
 * getting the sum. */
__device__ __forceinline__ int even_granules_of(long long len) {
    return len > 0 ? (int)((len + KV_GRANULARITY - 1) / KV_GRANULARITY) : 0;
}
__device__ __forceinline__ int even_pieces(int L, int u) { return L > u ? (L + u - 1) / u : 1; }
__device__ __forceinline__ int even_count(const int *gran, int batch, int u, int S, int lane) {
    int c = 0; /* held at S + 1: only whether the count passes S matters, and the sum stays in 32 bits */
    for (int r = lane; r < batch; r += 32) c = min(c + even_pieces(gran[r], u), S + 1);
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) c += mt_shfl_xor32(c, m);
    return c;
}

/* The even form's granules per piece, by each 32 lanes of the first warp
 * (lane: 0..31; all get it): the fewest that fit the S stretches, provided a piece then
 * costs at most `bound`; else 0 (schedule.c's even_granules). */
__device__ __forceinline__ int even_granules(const int *gran, int batch, int S, int request_cost,
                                             unsigned long long bound, int lane) {
    if (bound < (unsigned long long)request_cost + KV_GRANULARITY) return 0;
    long long sum = 0;
    int longest = 1;
    for (int r = lane; r < batch; r += 32) sum += gran[r], longest = max(longest, gran[r]);
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) sum += mt_shfl_xor32(sum, m), longest = max(longest, mt_shfl_xor32(longest, m));
    const unsigned long long fits = (bound - (unsigned long long)request_cost) / KV_GRANULARITY;
    int lo = max(1, (int)((sum + S - 1) / S)), hi = fits < (unsigned long long)longest ? (int)fits : longest;
    if (lo > hi || even_count(gran, batch, hi, S, lane) > S) return 0;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (even_count(gran, batch, mid, S, lane) <= S) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The items of the stretch from (request, key) a to b (schedule.c's
 * items_between): the requests it touches (none when it is empty), the
 * last of them in *last (b's request, or the one before when b starts one). */
__device__ __forceinline__ int items_between(int2 a, int2 b, int *last) {
    *last = b.y > 0 ? b.x : b.x - 1;
    return (a.x == b.x && a.y == b.y) ? 0 : *last - a.x + 1;
}

/* The work-group is as small as the call allows (launch.c: a thread per
 * stretch and one more, or per request up to SCHED_THREADS, in multiples
 * of 64), since its barriers and scans cost by the warp: 5.3-5.6 us with
 * 1024 threads for a batch of 128 (reports/PERFLOG.md session 15).
 * The lengths are read in runs: thread i takes requests [i * per, (i + 1) *
 * per), per = ceil(batch / threads), so the prefix is kept per run in
 * shared memory (runs[i] = cost before run i) and a request is found by a
 * binary search over the runs, then a walk inside one. */
__device__ __forceinline__ void
mla_schedule_body(const int *__restrict__ seq_lens, int batch, int tiles, int n_stretches, int request_cost,
                  int snap_keys, int4 *__restrict__ sched) {
    __shared__ unsigned long long runs[SCHED_THREADS + 1], part_u64[SCHED_WARPS];
    __shared__ int part_i[SCHED_WARPS], cut_first[SCHED_THREADS + 1], gran_s[SCHED_THREADS], first_s[SCHED_THREADS];
    __shared__ int even_u;
    __shared__ int2 pos_s[SCHED_THREADS + 1];
    __shared__ unsigned long long group_max[SCHED_THREADS / 32];
    const int tid = threadIdx.x, nt = (int)blockDim.x, S = n_stretches, per = (batch + nt - 1) / nt;
    auto cost = [&](int b) { return (unsigned long long)request_cost + (unsigned long long)max(0, seq_lens[b]); };

    /* 1. the cost of each run, and the prefix over runs */
    unsigned long long mine = 0;
    for (int b = tid * per; b < min(batch, tid * per + per); b++) mine += cost(b);
    unsigned long long total;
    runs[tid + 1] = block_scan(mine, part_u64, &total);
    if (tid == 0) runs[0] = 0;
    __syncthreads();
    const unsigned long long share = (total + S - 1) / S;
    const unsigned long long snap = min(share / 16 + (unsigned long long)snap_keys, share / SNAP_CAP);

    /* 2. the end of stretch s, as (request, key) */
    if (tid == 0) pos_s[0] = make_int2(0, 0);
    if (tid < S) {
        const unsigned long long end = tid + 1 == S ? total : (total * (unsigned long long)(tid + 1) + S / 2) / S;
        int2 to = make_int2(batch, 0);
        if (end < total) {
            /* the run holding `end` (runs[q] <= end < runs[q + 1]), then the request in it */
            int lo = 0, hi = nt - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (runs[mid] <= end) lo = mid;
                else hi = mid - 1;
            }
            int r = lo * per;
            unsigned long long start = runs[lo], c = cost(r);
            while (r + 1 < batch && end >= start + c) start += c, c = cost(++r);
            const int keys = (int)(c - (unsigned long long)request_cost);
            const unsigned long long to_start = end - start, to_end = start + c - end;
            const long long k = (long long)to_start - request_cost;
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

    /* 2b. with no more requests than stretches (a request per thread), the
     * even form where its largest piece costs no more than the largest
     * stretch above (every item charged request_cost; keys by the prefix
     * less those costs): each request cut into equal pieces, piece k of L
     * granules in p starting at k * L / p granules (rounded down: k * q +
     * k * rem / p, q = L / p), the unused stretches last, empty.  A thread
     * per stretch finds its request among the requests' first stretches
     * (a binary search): a request's own thread writing its pieces one by
     * one took a long request's hundred pieces in turn. */
    if (batch <= S) {
        unsigned long long cost = 0;
        if (tid < S) {
            const int2 a = pos_s[tid], b = pos_s[tid + 1];
            int last;
            const int items = items_between(a, b, &last);
            const unsigned long long c = (unsigned long long)request_cost;
            cost = runs[b.x] - b.x * c + b.y - (runs[a.x] - a.x * c + a.y) + items * c;
        }
        if (tid < batch) gran_s[tid] = even_granules_of((long long)(mine - (unsigned long long)request_cost));
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) {
            const unsigned long long other = mt_shfl_xor32(cost, m);
            cost = other > cost ? other : cost;
        }
        if (tid % 32 == 0) group_max[tid / 32] = cost;
        __syncthreads();
        if (tid < MT_WARP) { /* the first warp (on 64-lane targets each half alike: a collective needs all lanes) */
            unsigned long long largest = 0;
            for (int g = 0; g < nt / 32; g++) largest = group_max[g] > largest ? group_max[g] : largest;
            const int u = even_granules(gran_s, batch, S, request_cost, largest, tid % 32);
            if (tid == 0) even_u = u;
        }
        __syncthreads();
        const int u = even_u;
        if (u > 0) {
            const int p = tid < batch ? even_pieces(gran_s[tid], u) : 0;
            int n_even;
            const int first = block_scan(p, part_i, &n_even) - p;
            if (tid < batch) first_s[tid] = first;
            __syncthreads();
            if (tid < n_even) {
                int lo = 0, hi = batch - 1; /* the last request whose first stretch is at most tid */
                while (lo < hi) {
                    const int mid = (lo + hi + 1) >> 1;
                    if (first_s[mid] <= tid) lo = mid;
                    else hi = mid - 1;
                }
                const int L = gran_s[lo], pr = even_pieces(L, u), q = L / pr, rem = L - q * pr, k = tid - first_s[lo];
                pos_s[tid] = make_int2(lo, (k * q + k * rem / pr) * KV_GRANULARITY);
            }
            for (int t = n_even + tid; t <= S; t += nt) pos_s[t] = make_int2(batch, 0);
            __syncthreads();
        }
    }

    /* 3. the pieces each stretch has (0, 1 or 2) and its first one; whether
     * it opens a cut request (holds its first piece): both counted in one
     * scan, pieces in the low 16 bits */
    int pieces = 0, first_cut = 0, opens = 0, offset = 0, last = 0;
    if (tid < S) {
        const int2 s0 = pos_s[tid], s1 = pos_s[tid + 1];
        const int count = items_between(s0, s1, &last);
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

extern "C" __global__ void __launch_bounds__(SCHED_THREADS)
mla_schedule(const MT_GRID_CONST mt_decode_params p) {
    mla_schedule_body((const int *)p.seq_lens, p.batch, p.tiles, p.n_stretches, p.sched_cost, p.sched_snap,
                      (int4 *)p.schedule);
}
