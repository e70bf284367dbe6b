/*
 * schedule.h - the length-aware schedule (groups_per_cu > 0): how a batch
 * of requests of any lengths is cut into nearly equal stretches of work,
 * one per work-group, compute units x groups_per_cu of them.
 *
 * The GPU builds it (mla_schedule in schedule.cu) from the lengths in
 * device memory, once per decode step, so a captured CUDA graph stays right
 * when the lengths change; this file is the same algorithm on the host: the
 * reference the GPU's result is compared with (test_gpu_mla) and the model
 * whose balance test_schedule checks.
 *
 * The work: the requests laid end to end, each costing a fixed overhead
 * (request_cost keys: its query loads, merges and stores) plus one unit
 * per key, cut into stretches of nearly equal cost; a cut inside a
 * request's keys falls on a multiple of the granularity.  A stretch is run
 * by one work-group per query-row tile (tile_q rows of the request's Sq x N;
 * work-group g runs tile g % tiles of stretch g / tiles), so the work-groups
 * that read a chunk of keys read it together and all but one find it in
 * L2.  The budget of n_groups work-groups (compute units x groups_per_cu)
 * gives n_groups / tiles stretches (at least one).  A stretch's items are
 * the requests it touches; only its first and last can be pieces of a
 * request.  Pieces are numbered along the axis (so a cut request's pieces
 * are consecutive); piece p keeps tile t's partial result in slot
 * p * tiles + t of the workspace, and the reduce merges the cut requests
 * only; whole requests go straight to out.
 *
 * Layout (int32 words, 4 per entry, as the kernels read them as int4):
 *   entry 0                  stretches, cut requests, reduce units, pieces
 *   entry 1 + s              stretch s's start: request, key, its first piece, 0
 *                            (s = 0 .. stretches; the last is the end)
 *   entry 2 + stretches + i  cut request i: b, first piece, pieces, first unit
 * The reduce's units: a cut request of n pieces takes tiles x
 * mt_schedule_units_per_tile(tile_q, n) of them, numbered in order.
 */
#ifndef MT_SCHEDULE_H
#define MT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/error.h"

enum {
    MT_SCHEDULE_MAX_STRETCHES = 1023, /* the scheduling kernel's work-group, one thread each (+1) */
};

/* The defaults of the two costs a variant may tune (request_cost and
 * snap_keys, family.c; the shape carries the variant's):
 * - MT_SCHEDULE_OVERHEAD: the fixed cost of a request, in keys: its query
 *   loads, merges and stores come to roughly one 64-key chunk;
 * - MT_SCHEDULE_SNAP_KEYS: an end of a stretch closer than (a sixteenth of
 *   a share plus this many keys, at most share / snap_cap, a quarter by default) to an edge of its
 *   request moves to the edge (no cut).  A cut costs a query load and the
 *   merge of a partial (16 rows x 512 fp32 written and read back: the bytes
 *   of ~60 keys), so a piece must be worth more; and a batch of equal
 *   requests about a share long (batch 128 x 16384 over 132 groups) is left
 *   whole, as measured best on the H100 (reports/PERFLOG.md, session 8).
 * Which values win depends on the batch and the heads (session 16 measured
 * -14% to +20% from the defaults across the ragged mixes), so the sweep
 * tunes them per key. */
#define MT_SCHEDULE_OVERHEAD 64
#define MT_SCHEDULE_SNAP_KEYS 64
/* The snap distance's cap by default: a quarter share (share / 4); a
 * variant may take a half (snap_cap 2, family.c). */
#define MT_SCHEDULE_SNAP_CAP 4

/* What the scheduler needs to know about the call. */
typedef struct mt_schedule_shape {
    int batch, sq, n_heads;
    int tile_q;       /* query rows per tile */
    int granularity;  /* cuts inside a request fall on multiples of this many keys */
    int n_groups;     /* the budget of work-groups: compute units x groups per unit */
    int request_cost; /* keys charged per request on the cost axis (MT_SCHEDULE_OVERHEAD by default) */
    int snap_keys;    /* the snap distance's fixed part, keys (MT_SCHEDULE_SNAP_KEYS by default) */
    int snap_cap;     /* the snap distance is at most share / snap_cap: 2 or 4 (0: MT_SCHEDULE_SNAP_CAP) */
} mt_schedule_shape;

/* Row tiles per request, stretches, and the work-groups that run them
 * (stretches x tiles: the decode's grid). */
int mt_schedule_tiles(const mt_schedule_shape *shape);
int mt_schedule_stretches(const mt_schedule_shape *shape);
int mt_schedule_work_groups(const mt_schedule_shape *shape);

/* Bytes of device memory a schedule of n_stretches (at most n_groups)
 * takes: its entries, rounded up to a multiple of 256 (what follows it in a
 * workspace stays aligned).  Any batch: the GPU needs no scratch. */
size_t mt_schedule_bytes(int n_stretches);

/* Bytes of the entries alone (what mt_schedule_build writes). */
size_t mt_schedule_entry_bytes(int n_stretches);

/* Checks a shape against the limits above, naming the one exceeded. */
mt_status mt_schedule_check(const mt_schedule_shape *shape);

/* Builds the entries for `lens` (batch entries, host memory) into `words`
 * (mt_schedule_entry_bytes(mt_schedule_stretches(shape)) bytes). */
mt_status mt_schedule_build(const mt_schedule_shape *shape, const int32_t *lens, int32_t *words);

/* The even form (schedule.c): with no more requests than stretches, each
 * request on stretches of its own, cut into max(1, ceil(L / u)) equal
 * pieces (L: its keys in granules, rounded up; the cuts at k * L / p
 * granules, rounded down), u the fewest granules per piece that fit the
 * stretches; chosen over the ends placed one by one on the cost axis when
 * its largest piece (request_cost + u granules) costs no more than their
 * largest stretch (every item charged request_cost).  Returns u, 0 where
 * the ends placed one by one are kept, -1 for a shape refused. */
int mt_schedule_even_granules(const mt_schedule_shape *shape, const int32_t *lens);

/* The snap distance for a batch of `total` cost over n_stretches, with
 * snap_keys as its fixed part and share / snap_cap its cap. */
uint64_t mt_schedule_snap(uint64_t total, int n_stretches, int snap_keys, int snap_cap);

/* The reduce's work for a cut request of n pieces (reduce.cu; the GPU's
 * own copies are red_* in schedule.cu).  Each warp has 8 load slots a round:
 * - more than 8 pieces: g = slot groups warps share a row (as many as
 *   rounds of 8 pieces need, a power of two up to 8), 8 / g rows a unit;
 * - up to 8: one warp takes rows_per_warp rows at once, 8 / p slots each (p
 *   the power of two >= n; at most tile_q / 8 rows, so a unit of 8 warps
 *   stays within its tile), so a 2-piece request's rows fill the slots
 *   instead of leaving 6 of 8 idle, and the reduce runs a quarter of the
 *   units (a round trip to memory each).
 * unit_rows: rows per unit of 8 warps; units per tile. */
int mt_schedule_slot_groups(int n_pieces);
int mt_schedule_rows_per_warp(int tile_q, int n_pieces);
int mt_schedule_unit_rows(int tile_q, int n_pieces);
int mt_schedule_units_per_tile(int tile_q, int n_pieces);

/* Reading a schedule (for tests and tools). */
static inline const int32_t *mt_schedule_start(const int32_t *words, int s) { return words + 4 * (1 + s); }
static inline const int32_t *mt_schedule_cut(const int32_t *words, int n_stretches, int i) {
    return words + 4 * (2 + n_stretches + i);
}

#endif
