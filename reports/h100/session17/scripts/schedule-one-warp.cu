/*
 * schedule.cu - mla_schedule, the length-aware form's work schedule, built
 * on the GPU from the lengths in device memory (groups_per_cu > 0).
 */
#if !GROUPS_PER_CU
#error "schedule.cu is compiled into length-aware variants only"
#endif
/* ---- the schedule (mla_schedule) ---------------------------------------------
 * Run once per decode step on the GPU, from the lengths in device memory, so
 * a captured graph stays right when the lengths change.  One work-group, a
 * thread per stretch (at most SCHED_THREADS).  The work: the requests laid end to end, each
 * costing `cost` keys (its query loads, merges and stores) plus its
 * keys, cut into n_stretches stretches of nearly equal cost (each run by a
 * work-group per row tile, mt_items).  Each end is placed on its own (so
 * rounding never accumulates): inside a request's overhead it moves to the
 * request's start, inside its keys to the nearest multiple of
 * KV_GRANULARITY; but an end closer than the snap distance (a sixteenth of
 * a share plus `snap_keys`, at most a quarter share) to an edge of its
 * request moves to that edge: a cut costs a query load and a merge.
 * schedule.c is the same algorithm on the host; test_gpu_mla checks
 * that both agree word for word.
 *
 * Only a stretch's first and last items can be pieces of a request; pieces
 * are numbered in order along the axis, so a cut request's pieces are
 * consecutive; mla_reduce merges the cut requests only.  Writes the layout
 * described above mt_items. */
#define SCHED_THREADS MT_SCHEDULE_THREADS

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

/* Inclusive prefix sum over a warp by shuffles (any 32/64-bit type). */
template <typename T>
__device__ __forceinline__ T warp_scan(T x, int lane) {
#pragma unroll
    for (int off = 1; off < MT_WARP; off <<= 1) {
        const T y = mt_shfl_up(x, off);
        if (lane >= off) x += y;
    }
    return x;
}

/* n / d given inv = 1.0 / d: the product in double precision is within
 * 2^-52 of the quotient (n < 2^58 here: 65535 requests of at most 2^31 keys,
 * times at most 1023 stretches), so one more step on the remainder brings it
 * within one, then fixed exactly.  A 64-bit integer division is a
 * subroutine of ~400 cycles on sm_90, and this kernel's critical path
 * crossed two (reports/PERFLOG.md session 17). */
__device__ __forceinline__ unsigned long long div_by(unsigned long long n, unsigned d, double inv) {
    unsigned long long q = (unsigned long long)((double)n * inv);
    long long r = (long long)(n - q * d);
    q += (long long)((double)r * inv);
    r = (long long)(n - q * d);
    while (r < 0) q--, r += d;
    while (r >= (long long)d) q++, r -= d;
    return q;
}

/* The costs are summed per run of requests: a run is one request up to
 * SCHED_MAX_RUNS requests (so a stretch's end is found by a binary search
 * over requests in shared memory), longer batches put `per` requests in a
 * run and walk inside one. */
#define SCHED_MAX_RUNS 2048

/* Stretch s's items from its two ends (schedule.c's step 3): how many of
 * its first / last items are pieces of a cut request, and whether it holds
 * the first piece of one (opens; offset: 1 when that is its second piece;
 * req: the request). */
struct sched_stretch {
    int pieces, opens, offset, req;
};
__device__ __forceinline__ sched_stretch stretch_items(const int2 *pos_s, int s) {
    const int2 s0 = pos_s[s], s1 = pos_s[s + 1];
    const int last = s1.y > 0 ? s1.x : s1.x - 1;
    const int count = (s0.x == s1.x && s0.y == s1.y) ? 0 : last - s0.x + 1;
    const int first_cut = count > 0 && (s0.y > 0 || (count == 1 && s1.y > 0));
    const int last_cut = count > 1 && s1.y > 0;
    sched_stretch t = {first_cut + last_cut, 0, 0, 0};
    if (first_cut && s0.y == 0) t.opens = 1, t.req = s0.x;
    else if (last_cut) t.opens = 1, t.offset = first_cut, t.req = last;
    return t;
}

/* The kernel is a chain of dependent steps on one work-group, so what
 * counts is the chain's length, not the work (session 17's clock64 probe:
 * three work-group scans of three barriers each and two 64-bit divisions
 * were 4,000 of 5,500 cycles).  Now: the requests' prefix by the first warp
 * alone (each lane a run of requests, one warp scan), one barrier; a thread
 * per stretch end (a binary search), one barrier; then the first warp
 * alone again, each lane over a run of stretches, for the pieces, the cut
 * requests and the reduce's units (two warp scans, no barrier). */
__device__ __forceinline__ void
mla_schedule_body(const int *__restrict__ seq_lens, int batch, int tiles, int n_stretches, int request_cost,
                  int snap_keys, int4 *__restrict__ sched) {
    __shared__ unsigned long long runs[SCHED_MAX_RUNS + 1], total_s;
    __shared__ int2 pos_s[SCHED_THREADS];
    __shared__ int cut_first[SCHED_THREADS], cut_req[SCHED_THREADS];
    const int tid = threadIdx.x, lane = tid % MT_WARP, S = n_stretches;
    const int per = (batch + SCHED_MAX_RUNS - 1) / SCHED_MAX_RUNS, n_runs = (batch + per - 1) / per;
    const double inv_s = 1.0 / (double)S; /* ready while the lengths load */
    auto cost = [&](int b) { return (unsigned long long)request_cost + (unsigned long long)max(0, seq_lens[b]); };

    /* 1. the prefix over runs: lane i sums runs [i * rpl, (i + 1) * rpl) */
    if (tid < MT_WARP) {
        const int rpl = (n_runs + MT_WARP - 1) / MT_WARP, q0 = min(n_runs, lane * rpl), q1 = min(n_runs, q0 + rpl);
        unsigned long long sum = 0;
        for (int q = q0; q < q1; q += 8) {
            unsigned long long c[8]; /* eight loads in flight, then their sums */
#pragma unroll
            for (int j = 0; j < 8; j++) {
                c[j] = 0;
                if (q + j < q1)
                    for (int b = (q + j) * per; b < min(batch, (q + j) * per + per); b++) c[j] += cost(b);
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (q + j < q1) sum += c[j], runs[q + j + 1] = sum;
        }
        const unsigned long long incl = warp_scan(sum, lane), before = incl - sum;
        for (int q = q0; q < q1; q++) runs[q + 1] += before;
        if (lane == 0) runs[0] = 0;
        if (lane == MT_WARP - 1) total_s = incl;
        if (tid == 0) pos_s[0] = make_int2(0, 0);
    }
    __syncthreads();
    const unsigned long long total = total_s, share = div_by(total + S - 1, S, inv_s);
    const unsigned long long snap = min(share / 16 + (unsigned long long)snap_keys, share / 4);

    /* 2. the end of stretch `tid`, as (request, key) */
    if (tid < S) {
        const unsigned long long end = tid + 1 == S ? total : div_by(total * (unsigned long long)(tid + 1) + S / 2, S, inv_s);
        int2 to = make_int2(batch, 0);
        if (end < total) {
            /* the run holding `end` (runs[q] <= end < runs[q + 1]), then the request in it */
            int lo = 0, hi = n_runs - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (runs[mid] <= end) lo = mid;
                else hi = mid - 1;
            }
            int r = lo * per;
            unsigned long long start = runs[lo], c = per == 1 ? runs[lo + 1] - start : cost(r);
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
    if (tid >= MT_WARP) return;

    /* 3. each stretch's pieces (0, 1 or 2) and its first one; the cut
     * requests, each opened by the stretch holding its first piece: lane i
     * takes stretches [s0, s1), both counts in one scan (pieces in the low
     * 16 bits) */
    const int spl = (S + MT_WARP - 1) / MT_WARP, s0 = min(S, lane * spl), s1 = min(S, s0 + spl);
    int mine = 0;
    for (int s = s0; s < s1; s++) {
        const sched_stretch t = stretch_items(pos_s, s);
        mine += t.pieces | t.opens << 16;
    }
    const int incl = warp_scan(mine, lane), both = mt_shfl(incl, MT_WARP - 1);
    const int n_pieces = both & 0xffff, n_cut = both >> 16, cut0 = (incl - mine) >> 16, cut1 = incl >> 16;
    int piece = (incl - mine) & 0xffff, cut = cut0;
    for (int s = s0; s < s1; s++) {
        const sched_stretch t = stretch_items(pos_s, s);
        const int2 p = pos_s[s];
        sched[1 + s] = make_int4(p.x, p.y, piece, 0);
        if (t.opens) cut_first[cut] = piece + t.offset, cut_req[cut] = t.req, cut++;
        piece += t.pieces;
    }
    if (lane == MT_WARP - 1) {
        sched[1 + S] = make_int4(pos_s[S].x, pos_s[S].y, n_pieces, 0);
        cut_first[n_cut] = n_pieces;
    }
    mt_syncwarp();

    /* 4. a cut request's pieces run to the next one's first (they are
     * consecutive); the reduce's units before each, a prefix */
    int units = 0;
    for (int i = cut0; i < cut1; i++) units += tiles * red_units_per_tile(cut_first[i + 1] - cut_first[i]);
    const int units_incl = warp_scan(units, lane);
    int unit = units_incl - units;
    for (int i = cut0; i < cut1; i++) {
        const int n = cut_first[i + 1] - cut_first[i];
        SCHED_CUT(sched, S, i) = make_int4(cut_req[i], cut_first[i], n, unit);
        unit += tiles * red_units_per_tile(n);
    }
    if (lane == MT_WARP - 1) sched[0] = make_int4(S, n_cut, units_incl, n_pieces);
}

extern "C" __global__ void __launch_bounds__(SCHED_THREADS)
mla_schedule(const MT_GRID_CONST mt_decode_params p) {
    mla_schedule_body((const int *)p.seq_lens, p.batch, p.tiles, p.n_stretches, p.sched_cost, p.sched_snap,
                      (int4 *)p.schedule);
}
