/*
 * schedule.c - the length-aware schedule on the host (see schedule.h): the
 * same steps as mla_schedule in schedule.cu, one after the other.
 *
 * The cost axis: request r occupies [start_r, start_r + cost + len_r)
 * (cost: the shape's request_cost),
 * its overhead first.  Stretch s ends at round((s + 1) * total / stretches)
 * on that axis; each end is mapped to a (request, key) position on its own:
 * inside the overhead it moves to the request's start, inside the keys it
 * rounds to the nearest multiple of the granularity (to the request's end
 * past the last one), so a stretch is within one granule of its share.  But
 * an end close to an edge of its request moves to that edge instead
 * (closer than the snap distance, mt_schedule_snap: a sixteenth of a share
 * plus the shape's snap_keys, at most share / snap_cap): a cut costs query
 * loads and merges, worth it only for a piece of some size, and a batch of
 * equal requests about a share each is then not cut at all.  A stretch
 * stays within two snap distances and a granule of its share.  Ends are
 * monotonic, so stretches never overlap; one can be empty (its work-groups
 * have nothing to do).
 *
 * The even form (mt_schedule_even_granules), when the batch is no larger
 * than the stretches: every request on stretches of its own, cut into
 * equal pieces.  Placing ends on the cost axis cuts a request wherever the
 * shares fall, so a batch of equal requests about two shares each (128
 * heads, B=32 x 2016 on 66 stretches) was cut at points drifting from a
 * quarter to three quarters of a request: the largest stretch 1632 keys
 * where the mean is 977, and the decode 64 us where the grid that halves
 * each request takes 48 (reports/PERFLOG.md session 24).
 */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

int mt_schedule_tiles(const mt_schedule_shape *sh) { return (sh->sq * sh->n_heads + sh->tile_q - 1) / sh->tile_q; }

int mt_schedule_stretches(const mt_schedule_shape *sh) {
    int s = sh->n_groups / mt_schedule_tiles(sh);
    return s < 1 ? 1 : s > MT_SCHEDULE_MAX_STRETCHES ? MT_SCHEDULE_MAX_STRETCHES : s;
}

int mt_schedule_work_groups(const mt_schedule_shape *sh) { return mt_schedule_stretches(sh) * mt_schedule_tiles(sh); }

/* the shape's cap, its default when not given */
static int snap_cap_of(const mt_schedule_shape *sh) { return sh->snap_cap ? sh->snap_cap : MT_SCHEDULE_SNAP_CAP; }

uint64_t mt_schedule_snap(uint64_t total, int n_stretches, int snap_keys, int snap_cap) {
    uint64_t share = (total + (uint64_t)n_stretches - 1) / (uint64_t)n_stretches;
    uint64_t snap = share / 16 + (uint64_t)snap_keys, cap = share / (uint64_t)snap_cap;
    return snap < cap ? snap : cap;
}

int mt_schedule_slot_groups(int n) {
    int g = 1;
    while (g < 8 && 8 * g < n) g *= 2;
    return g;
}

int mt_schedule_rows_per_warp(int tile_q, int n) {
    int p = 1;
    while (p < n) p *= 2;
    int r = p >= 8 ? 1 : 8 / p;
    if (r > tile_q / 8) r = tile_q / 8;
    return r < 1 ? 1 : r;
}

int mt_schedule_unit_rows(int tile_q, int n) {
    return 8 * mt_schedule_rows_per_warp(tile_q, n) / mt_schedule_slot_groups(n);
}

int mt_schedule_units_per_tile(int tile_q, int n) {
    int rows = mt_schedule_unit_rows(tile_q, n);
    return (tile_q + rows - 1) / rows;
}

size_t mt_schedule_entry_bytes(int n_stretches) {
    return 16 * (size_t)(2 + 2 * (n_stretches > 0 ? n_stretches : 0));
}

size_t mt_schedule_bytes(int n_stretches) { return (mt_schedule_entry_bytes(n_stretches) + 255) / 256 * 256; }

mt_status mt_schedule_check(const mt_schedule_shape *sh) {
    if (!sh) return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: null shape");
    if (sh->batch < 1 || sh->sq < 1 || sh->n_heads < 1 || sh->tile_q < 1 || sh->granularity < 1 || sh->n_groups < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: bad shape (batch %d, sq %d, heads %d, tile_q %d, "
                       "granularity %d, groups %d)", sh->batch, sh->sq, sh->n_heads, sh->tile_q, sh->granularity,
                       sh->n_groups);
    if (sh->request_cost < 0 || sh->snap_keys < 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: request cost %d and snap keys %d must be >= 0",
                       sh->request_cost, sh->snap_keys);
    if (sh->snap_cap != 0 && sh->snap_cap != 2 && sh->snap_cap != 4)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: snap cap %d is not 2 or 4 (share / cap)", sh->snap_cap);
    return MT_OK;
}

/* A request's keys in granules (rounded up), and its pieces when a piece
 * holds at most u granules. */
static int granules(int32_t len, int g) { return len > 0 ? (int)(((int64_t)len + g - 1) / g) : 0; }
static int even_pieces(int L, int u) { return L > u ? (L + u - 1) / u : 1; }

static int64_t even_count(const int *gran, int batch, int u) {
    int64_t c = 0;
    for (int r = 0; r < batch; r++) c += even_pieces(gran[r], u);
    return c;
}

/* The even form's granules per piece: the fewest that fit the S stretches
 * (a request per stretch at least), provided a piece then costs at most
 * `bound` (request_cost + u granules); else 0. */
static int even_granules(const mt_schedule_shape *sh, const int *gran, int S, uint64_t bound) {
    if (sh->batch > S || bound < (uint64_t)sh->request_cost + (uint64_t)sh->granularity) return 0;
    int64_t sum = 0;
    int longest = 1;
    for (int r = 0; r < sh->batch; r++) {
        sum += gran[r];
        if (gran[r] > longest) longest = gran[r];
    }
    const uint64_t fits = (bound - (uint64_t)sh->request_cost) / (uint64_t)sh->granularity;
    int lo = (int)((sum + S - 1) / S), hi = fits < (uint64_t)longest ? (int)fits : longest;
    if (lo < 1) lo = 1;
    if (lo > hi || even_count(gran, sh->batch, hi) > S) return 0;
    while (lo < hi) { /* the count falls as u grows */
        int mid = lo + (hi - lo) / 2;
        if (even_count(gran, sh->batch, mid) <= S) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

typedef struct position { int req, key; } position;

static int same(position a, position b) { return a.req == b.req && a.key == b.key; }

/* The items of the stretch from a to b (the requests it touches). */
static int items_between(position a, position b) {
    int last = b.key > 0 ? b.req : b.req - 1;
    return same(a, b) ? 0 : last - a.req + 1;
}

/* Steps 1 and 2: each stretch's start, pos[0..S] (pos[S] the end), from
 * the costs' prefix (prefix[0..batch]) and the requests' granules (gran);
 * returns the even form's granules per piece, or 0 for the ends placed on
 * the cost axis. */
static int place_stretches(const mt_schedule_shape *sh, const int32_t *lens, int S, uint64_t *prefix, int *gran,
                           position *pos) {
    /* 1. the prefix of the requests' costs */
    prefix[0] = 0;
    for (int b = 0; b < sh->batch; b++)
        prefix[b + 1] = prefix[b] + (uint64_t)sh->request_cost + (uint64_t)(lens[b] > 0 ? lens[b] : 0);
    const uint64_t total = prefix[sh->batch], snap = mt_schedule_snap(total, S, sh->snap_keys, snap_cap_of(sh));

    /* 2. each stretch's end on its own */
    pos[0] = (position){0, 0};
    int r = 0; /* the request holding the end: the ends only grow */
    for (int s = 0; s < S; s++) {
        uint64_t end = s + 1 == S ? total : (total * (uint64_t)(s + 1) + (uint64_t)(S / 2)) / (uint64_t)S;
        if (end >= total) {
            pos[s + 1] = (position){sh->batch, 0};
            continue;
        }
        while (r + 1 < sh->batch && prefix[r + 1] <= end) r++;
        int keys = lens[r] > 0 ? lens[r] : 0;
        uint64_t to_start = end - prefix[r], to_end = prefix[r + 1] - end;
        int64_t k = (int64_t)to_start - sh->request_cost;
        if (to_start <= snap && to_start <= to_end)
            pos[s + 1] = (position){r, 0};
        else if (to_end <= snap)
            pos[s + 1] = (position){r + 1, 0};
        else if (k <= 0)
            pos[s + 1] = (position){r, 0};
        else {
            int64_t rk = (k + sh->granularity / 2) / sh->granularity * sh->granularity;
            pos[s + 1] = rk >= keys ? (position){r + 1, 0} : (position){r, (int)rk};
        }
    }
    if (sh->batch > S) return 0;

    /* 2b. the even form, where its largest piece costs no more than the
     * largest stretch above (every item charged request_cost: its query
     * loads, merges and stores; keys by the prefix less those costs) */
    uint64_t largest = 0;
    for (int s = 0; s < S; s++) {
        const position a = pos[s], b = pos[s + 1];
        const uint64_t ka = prefix[a.req] - (uint64_t)a.req * (uint64_t)sh->request_cost + (uint64_t)a.key;
        const uint64_t kb = prefix[b.req] - (uint64_t)b.req * (uint64_t)sh->request_cost + (uint64_t)b.key;
        const uint64_t cost = kb - ka + (uint64_t)items_between(a, b) * (uint64_t)sh->request_cost;
        if (cost > largest) largest = cost;
    }
    for (int b = 0; b < sh->batch; b++) gran[b] = granules(lens[b], sh->granularity);
    const int u = even_granules(sh, gran, S, largest);
    if (!u) return 0;
    /* piece k of a request of L granules in p starts at k * L / p granules
     * (rounded down); the unused stretches come last, empty */
    int s = 0;
    for (int b = 0; b < sh->batch; b++) {
        const int L = gran[b], p = even_pieces(L, u), q = L / p, rem = L - q * p;
        for (int k = 0; k < p; k++) pos[s++] = (position){b, sh->granularity * (k * q + (int)((int64_t)k * rem / p))};
    }
    while (s <= S) pos[s++] = (position){sh->batch, 0};
    return u;
}

/* The buffers of a schedule's construction. */
typedef struct build_space {
    uint64_t *prefix;
    int *gran;
    position *pos;
} build_space;

static mt_status space_alloc(const mt_schedule_shape *sh, int S, build_space *w) {
    w->prefix = malloc(sizeof *w->prefix * ((size_t)sh->batch + 1));
    w->gran = malloc(sizeof *w->gran * (size_t)sh->batch);
    w->pos = malloc(sizeof *w->pos * ((size_t)S + 1));
    if (w->prefix && w->gran && w->pos) return MT_OK;
    free(w->prefix), free(w->gran), free(w->pos);
    return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
}

static void space_free(build_space *w) { free(w->prefix), free(w->gran), free(w->pos); }

int mt_schedule_even_granules(const mt_schedule_shape *sh, const int32_t *lens) {
    if (mt_schedule_check(sh) != MT_OK || !lens) return -1;
    const int S = mt_schedule_stretches(sh);
    build_space w;
    if (space_alloc(sh, S, &w) != MT_OK) return -1;
    int u = place_stretches(sh, lens, S, w.prefix, w.gran, w.pos);
    space_free(&w);
    return u;
}

mt_status mt_schedule_build(const mt_schedule_shape *sh, const int32_t *lens, int32_t *words) {
    mt_status st = mt_schedule_check(sh);
    if (st != MT_OK) return st;
    if (!lens || !words) return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: null argument");
    const int S = mt_schedule_stretches(sh);
    build_space w;
    st = space_alloc(sh, S, &w);
    if (st != MT_OK) return st;
    const position *pos = w.pos;
    place_stretches(sh, lens, S, w.prefix, w.gran, w.pos);

    /* 3. pieces, and the cut requests (opened by the stretch holding a cut
     * request's first piece), each with the reduce's units before it */
    memset(words, 0, mt_schedule_entry_bytes(S));
    const int tiles = mt_schedule_tiles(sh);
    int n_pieces = 0, n_cut = 0, n_units = 0;
    for (int s = 0; s <= S; s++) {
        int32_t *e = words + 4 * (1 + s);
        e[0] = pos[s].req, e[1] = pos[s].key, e[2] = n_pieces;
        if (s == S) break;
        position s0 = pos[s], s1 = pos[s + 1];
        int last = s1.key > 0 ? s1.req : s1.req - 1, count = items_between(s0, s1);
        int first_cut = count > 0 && (s0.key > 0 || (count == 1 && s1.key > 0));
        int last_cut = count > 1 && s1.key > 0;
        int opens = 0, offset = 0, req = 0;
        if (first_cut && s0.key == 0) opens = 1, req = s0.req;
        else if (last_cut) opens = 1, offset = first_cut, req = last;
        if (opens) {
            int n = 2;
            for (int j = s + 2; j <= S && pos[j].req == req && pos[j].key > 0; j++)
                if (pos[j].key != pos[j - 1].key) n++;
            int32_t *c = words + 4 * (2 + S + n_cut);
            c[0] = req, c[1] = n_pieces + offset, c[2] = n, c[3] = n_units;
            n_cut++;
            n_units += tiles * mt_schedule_units_per_tile(sh->tile_q, n);
        }
        n_pieces += first_cut + last_cut;
    }
    words[0] = S, words[1] = n_cut, words[2] = n_units, words[3] = n_pieces;
    space_free(&w);
    return MT_OK;
}
