/*
 * schedule.c - the persistent variants' work list (see schedule.h).
 *
 * The cost axis: tile i occupies [start_i, start_i + overhead + keys_i),
 * its overhead first.  Group g ends at round((g + 1) * total / n_groups) on
 * that axis; each end is mapped to a (tile, key) position: inside the
 * overhead it moves to the tile's start, inside the keys it rounds to the
 * nearest multiple of the granularity (to the tile's end past the last
 * one).  Every end is placed independently, so rounding never accumulates
 * along the batch: a group's share is within one granule of the ideal.
 *
 * A cut is not free: the tile's query rows are loaded once per piece, and
 * each piece writes a partial result the reduce reads back.  So when no
 * tile is longer than a group's share by more than an eighth of it plus
 * MT_SCHEDULE_CUT_KEYS, nothing is cut: each group end moves to the nearer
 * edge of its tile, so a share is off by at most a tile (batch 128 x 16384
 * keys on 132 groups: a tile each, 4 groups idle, no reduce; cut, every
 * tile would be split in two for a 3% shorter share).
 *
 * Bounds that hold by construction: groups <= min(n_groups, 511); only a
 * group's first and last items can be partial, so slots <= 2 x groups <=
 * 1022; a cut tile spans a group boundary, so cut tiles < groups.
 */
#include "schedule.h"

#include <stddef.h>
#include <string.h>

/* Keys the tile's rows see: its last row's token sees the most (token t of
 * Sq sees len - sq + t + 1 keys, causal among the new tokens). */
static int tile_keys(int len, int tile, const mt_schedule_shape *sh) {
    int rows = sh->sq * sh->n_heads;
    int last_row = (tile + 1) * sh->tile_q < rows ? (tile + 1) * sh->tile_q - 1 : rows - 1;
    int limit = len - sh->sq + last_row / sh->n_heads + 1;
    if (limit < 0) limit = 0;
    return limit < len ? limit : len;
}

typedef struct position { int64_t tile; int key; } position;

int mt_schedule_slots(int n_groups) {
    int groups = n_groups < 0 ? 0 : n_groups < MT_WORK_MAX_GROUPS ? n_groups : MT_WORK_MAX_GROUPS;
    return 2 * groups;
}

mt_status mt_schedule_build(const mt_schedule_shape *sh, const int32_t *lens, mt_work_list *work,
                            mt_split_list *splits) {
    if (!sh || !lens || !work || !splits) return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: null argument");
    if (sh->batch < 1 || sh->batch > 0xffff || sh->sq < 1 || sh->n_heads < 1 || sh->tile_q < 1 ||
        sh->granularity < 1 || sh->n_groups < 1 || sh->overhead_keys < 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: bad shape (batch %d, sq %d, heads %d, tile_q %d, "
                       "granularity %d, groups %d)", sh->batch, sh->sq, sh->n_heads, sh->tile_q, sh->granularity,
                       sh->n_groups);
    int rows = sh->sq * sh->n_heads, tiles = (rows + sh->tile_q - 1) / sh->tile_q;
    if (tiles > MT_WORK_MAX_TILES_PER_REQUEST)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: %d row tiles per request (Sq %d x %d heads / tile_q %d); "
                       "the work list holds %d", tiles, sh->sq, sh->n_heads, sh->tile_q,
                       MT_WORK_MAX_TILES_PER_REQUEST);
    int n_groups = sh->n_groups < MT_WORK_MAX_GROUPS ? sh->n_groups : MT_WORK_MAX_GROUPS;
    int64_t n_tiles = (int64_t)sh->batch * tiles, total = 0, longest = 0; /* tile costs: sum, largest */
    for (int b = 0; b < sh->batch; b++) {
        if (lens[b] < 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: request %d has a negative length (%d)", b, lens[b]);
        for (int t = 0; t < tiles; t++) {
            int64_t c = sh->overhead_keys + tile_keys(lens[b], t, sh);
            total += c;
            if (c > longest) longest = c;
        }
    }
    memset(work, 0, sizeof *work);
    memset(splits, 0, sizeof *splits);
    const int64_t share = (total + n_groups - 1) / n_groups;
    const int no_cuts = longest <= share + share / 8 + MT_SCHEDULE_CUT_KEYS;

    /* walk the tiles once, placing the group ends in order */
    int64_t tile = 0, tile_start = 0; /* cost-axis start of `tile` */
    int keys = tile_keys(lens[0], 0, sh);
    position from = {0, 0};
    int n_items = 0, n_slots = 0, groups = 0;
    for (int g = 0; g < n_groups; g++) {
        int64_t end = g + 1 == n_groups ? total : (total * (g + 1) + n_groups / 2) / n_groups;
        /* the tile holding `end` (an end on a tile's last unit is the next one's start) */
        while (tile < n_tiles && end >= tile_start + sh->overhead_keys + keys) {
            tile_start += sh->overhead_keys + keys;
            tile++;
            keys = tile < n_tiles ? tile_keys(lens[tile / tiles], (int)(tile % tiles), sh) : 0;
        }
        position to;
        int64_t k = end - tile_start - sh->overhead_keys;
        if (tile >= n_tiles) to = (position){n_tiles, 0};
        else if (no_cuts) /* to the nearer end of the tile */
            to = 2 * (end - tile_start) < sh->overhead_keys + keys ? (position){tile, 0} : (position){tile + 1, 0};
        else if (k <= 0) to = (position){tile, 0};
        else {
            int64_t r = (k + sh->granularity / 2) / sh->granularity * sh->granularity;
            to = r >= keys ? (position){tile + 1, 0} : (position){tile, (int)r};
        }
        if (to.tile < from.tile || (to.tile == from.tile && to.key <= from.key)) continue; /* no work: no group */
        work->first[groups] = (uint16_t)n_items;
        /* the items: the tiles from `from` up to `to` */
        for (int64_t i = from.tile; i <= to.tile && i < n_tiles; i++) {
            int b = (int)(i / tiles), t = (int)(i % tiles), n = tile_keys(lens[b], t, sh);
            int k0 = i == from.tile ? from.key : 0, k1 = i == to.tile ? to.key : n;
            if (i == to.tile && to.key == 0) break; /* `to` is this tile's start: nothing of it here */
            if (n_items >= MT_WORK_MAX_ITEMS)
                return mt_fail(MT_ERR_INVALID_ARGUMENT, "schedule: the call needs more than %d work items (batch %d "
                               "x %d tiles over %d groups): use a non-persistent variant for it", MT_WORK_MAX_ITEMS,
                               sh->batch, tiles, n_groups);
            int direct = k0 == 0 && k1 == n, slot = -1;
            if (!direct) {
                slot = n_slots++;
                /* a cut tile's items are consecutive: extend its entry or open one */
                int s = splits->n_tiles;
                int32_t key = b | t << 16;
                if (s > 0 && splits->tile[s - 1][0] == key && splits->tile[s - 1][1] + splits->tile[s - 1][2] == slot)
                    splits->tile[s - 1][2]++;
                else {
                    splits->tile[s][0] = key, splits->tile[s][1] = slot, splits->tile[s][2] = 1;
                    splits->n_tiles++;
                }
            }
            int32_t *it = work->item[n_items++];
            it[0] = b | t << 16 | (slot + 1) << 22;
            it[1] = k0, it[2] = k1, it[3] = lens[b];
        }
        groups++;
        from = to;
    }
    work->first[groups] = (uint16_t)n_items;
    work->n_groups = groups;
    work->n_items = n_items;
    return MT_OK;
}
