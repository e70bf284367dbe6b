/*
 * schedule.h - the host-side scheduler of the persistent variants
 * (groups_per_cu > 0): from the real sequence lengths of a batch, a work
 * list balanced over the GPU's compute units x groups per unit.
 *
 * The work: every query-row tile of every request (tile_q rows; a row is a
 * (token, head) pair, row = t * n_heads + n) with the keys its rows see.
 * Laid end to end, tile after tile, each tile costing a fixed overhead (its
 * query load, its merge and store) plus one unit per key, the whole is cut
 * into n_groups nearly equal pieces; a cut inside a tile's keys falls on a
 * multiple of the granularity.  A group (one work-group of the kernel)
 * takes its piece as a list of items, each one tile's key range.  A tile
 * covered by one item is written straight to out; the items of a tile cut
 * in several each write a partial result to their own slot of the
 * workspace, and the reduce step merges those tiles only.
 *
 * The list travels to the kernel by value, as a launch argument (no copy to
 * the device, no extra launch): mt_work_list and mt_split_list below are
 * laid out exactly as mla_decode.cu declares them (the sizes are checked at
 * compile time on both sides).
 */
#ifndef MT_SCHEDULE_H
#define MT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/error.h"

enum {
    MT_WORK_MAX_ITEMS = 1024,  /* items of one call (tiles + cuts) */
    MT_WORK_MAX_GROUPS = 511,  /* work-groups of one call */
    MT_WORK_MAX_SLOTS = 1022,  /* partial results (<= 2 per group) */
    MT_WORK_MAX_TILES_PER_REQUEST = 64,
    MT_WORK_LIST_BYTES = 17424,
    MT_SPLIT_LIST_BYTES = 8192,
};

/* One item, as the kernel reads it:
 *   [0] request b | tile << 16 | (slot + 1) << 22   (slot 0 .. 1021; 0 = direct)
 *   [1] first key, [2] one past the last key (the tile's rows see no key
 *       past it: causal limit applied), [3] the request's length */
typedef struct mt_work_list {
    _Alignas(16) int32_t item[MT_WORK_MAX_ITEMS][4];
    uint16_t first[MT_WORK_MAX_GROUPS + 1]; /* group g's items: [first[g], first[g + 1]) */
    int32_t n_groups;
    int32_t n_items;
} mt_work_list;

/* The tiles the reduce merges: [0] b | tile << 16, [1] first slot, [2]
 * slots (>= 2), [3] unused. */
typedef struct mt_split_list {
    _Alignas(16) int32_t tile[MT_WORK_MAX_GROUPS][4];
    int32_t n_tiles;
    int32_t pad[3];
} mt_split_list;

_Static_assert(sizeof(mt_work_list) == MT_WORK_LIST_BYTES, "mt_work_list layout (mla_decode.cu has its twin)");
_Static_assert(sizeof(mt_split_list) == MT_SPLIT_LIST_BYTES, "mt_split_list layout (mla_decode.cu has its twin)");

/* What the scheduler needs to know about the call. */
typedef struct mt_schedule_shape {
    int batch, sq, n_heads;
    int tile_q;          /* query rows per tile */
    int granularity;     /* cuts inside a tile fall on multiples of this many keys */
    int n_groups;        /* compute units x groups per unit */
    int overhead_keys;   /* a tile's fixed cost, in keys (MT_SCHEDULE_TILE_OVERHEAD) */
} mt_schedule_shape;

/* The fixed cost of a tile, in keys: its query load, the merge of the two
 * warpgroups and the store come to roughly one 64-key chunk. */
#define MT_SCHEDULE_TILE_OVERHEAD 64

/* Cut tiles only when the longest is over a group's share by more than an
 * eighth of the share plus this many keys (four chunks): below that a cut
 * costs more than it balances (measured on the H100: batch 128 x 16384 over
 * 132 groups, 3% over, cutting every tile in two was no faster before the
 * reduce's cost; see reports/PERFLOG.md, session 8). */
#define MT_SCHEDULE_CUT_KEYS 256

/* Builds the lists for `lens` (batch entries, host memory).  Groups that
 * would get no work are left out (work->n_groups may be below
 * shape->n_groups).  Fails, naming the limit, when the call needs more
 * items, groups or tiles per request than the lists hold. */
mt_status mt_schedule_build(const mt_schedule_shape *shape, const int32_t *lens, mt_work_list *work,
                            mt_split_list *splits);

/* Partial-result slots a call over n_groups may use: 2 per group (only a
 * group's first and last items can be cut), at most MT_WORK_MAX_SLOTS. */
int mt_schedule_slots(int n_groups);

/* Decoding an item (for tests and tools). */
static inline int mt_work_item_request(const int32_t *it) { return it[0] & 0xffff; }
static inline int mt_work_item_tile(const int32_t *it) { return (it[0] >> 16) & 0x3f; }
static inline int mt_work_item_slot(const int32_t *it) { return ((it[0] >> 22) & 0x3ff) - 1; }

#endif
