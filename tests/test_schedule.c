/*
 * test_schedule.c - the persistent variants' host scheduler: every key of
 * every row tile is covered exactly once, cuts fall on the granularity,
 * groups get balanced shares, only cut tiles have slots and reach the
 * reduce's list, and the limits are refused with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/schedule.h"

static int tile_keys(int len, int tile, const mt_schedule_shape *sh) {
    int rows = sh->sq * sh->n_heads, last = (tile + 1) * sh->tile_q - 1;
    if (last >= rows) last = rows - 1;
    int lim = len - sh->sq + last / sh->n_heads + 1;
    return lim < 0 ? 0 : lim < len ? lim : len;
}

/* Checks every property of one schedule; returns the largest group cost
 * over the ideal (total / groups), in keys. */
static long verify(const mt_schedule_shape *sh, const int32_t *lens, const mt_work_list *w, const mt_split_list *sp,
                   const char *what) {
    int tiles = (sh->sq * sh->n_heads + sh->tile_q - 1) / sh->tile_q;
    long n_tiles = (long)sh->batch * tiles;
    int *covered = calloc((size_t)n_tiles, sizeof *covered); /* keys covered so far, in order */
    int *items_of = calloc((size_t)n_tiles, sizeof *items_of);
    int *first_slot = calloc((size_t)n_tiles, sizeof *first_slot);
    long total = 0, worst = 0;
    for (long i = 0; i < n_tiles; i++) total += sh->overhead_keys + tile_keys(lens[i / tiles], (int)(i % tiles), sh);
    CHECK_MSG(w->n_groups >= 1 && w->n_groups <= sh->n_groups, "%s: %d groups", what, w->n_groups);
    CHECK_MSG(w->first[0] == 0 && w->first[w->n_groups] == w->n_items, "%s: group bounds", what);
    int next_slot = 0;
    long prev_tile = -1;
    for (int g = 0; g < w->n_groups; g++) {
        CHECK_MSG(w->first[g + 1] > w->first[g], "%s: group %d is empty", what, g);
        long cost = 0;
        for (int i = w->first[g]; i < w->first[g + 1]; i++) {
            const int32_t *it = w->item[i];
            int b = mt_work_item_request(it), t = mt_work_item_tile(it), slot = mt_work_item_slot(it);
            long ti = (long)b * tiles + t;
            CHECK_MSG(b < sh->batch && t < tiles, "%s: item %d names b=%d t=%d", what, i, b, t);
            if (b >= sh->batch || t >= tiles) continue;
            int n = tile_keys(lens[b], t, sh);
            CHECK_MSG(ti >= prev_tile, "%s: item %d goes back to tile %ld", what, i, ti);
            prev_tile = ti;
            CHECK_MSG(it[3] == lens[b], "%s: item %d carries length %d, not %d", what, i, it[3], lens[b]);
            CHECK_MSG(it[1] == covered[ti], "%s: item %d starts at %d, tile %ld covered to %d", what, i, it[1], ti,
                      covered[ti]);
            CHECK_MSG(it[2] > it[1] || (n == 0 && it[2] == 0), "%s: item %d range [%d, %d)", what, i, it[1], it[2]);
            CHECK_MSG(it[2] <= n, "%s: item %d ends at %d past the tile's %d keys", what, i, it[2], n);
            CHECK_MSG(it[1] % sh->granularity == 0 && (it[2] == n || it[2] % sh->granularity == 0),
                      "%s: item %d range [%d, %d) off the granularity %d", what, i, it[1], it[2], sh->granularity);
            int whole = it[1] == 0 && it[2] == n;
            CHECK_MSG(whole == (slot < 0), "%s: item %d whole=%d slot=%d", what, i, whole, slot);
            if (slot >= 0) {
                CHECK_MSG(slot == next_slot, "%s: item %d slot %d, expected %d", what, i, slot, next_slot);
                if (items_of[ti] == 0) first_slot[ti] = slot;
                next_slot++;
            }
            items_of[ti]++;
            covered[ti] = it[2];
            cost += sh->overhead_keys * (it[1] == 0) + (it[2] - it[1]);
        }
        long ideal = (total + w->n_groups - 1) / w->n_groups;
        if (cost - ideal > worst) worst = cost - ideal;
    }
    CHECK_MSG(next_slot <= 2 * w->n_groups && next_slot <= MT_WORK_MAX_SLOTS, "%s: %d slots for %d groups", what,
              next_slot, w->n_groups);
    int cut = 0;
    for (long ti = 0; ti < n_tiles; ti++) {
        int n = tile_keys(lens[ti / tiles], (int)(ti % tiles), sh);
        CHECK_MSG(covered[ti] == n && items_of[ti] >= 1, "%s: tile %ld covered to %d of %d (%d items)", what, ti,
                  covered[ti], n, items_of[ti]);
        if (items_of[ti] < 2) continue;
        /* a cut tile: its entry in the reduce's list, in order */
        CHECK_MSG(cut < sp->n_tiles, "%s: cut tile %ld missing from the split list", what, ti);
        if (cut < sp->n_tiles) {
            const int32_t *e = sp->tile[cut];
            CHECK_MSG((e[0] & 0xffff) == ti / tiles && (e[0] >> 16) == ti % tiles && e[1] == first_slot[ti] &&
                          e[2] == items_of[ti],
                      "%s: split entry %d = (%d, %d, %d), tile %ld has slots %d.. x %d", what, cut, e[0], e[1], e[2],
                      ti, first_slot[ti], items_of[ti]);
        }
        cut++;
    }
    CHECK_MSG(cut == sp->n_tiles, "%s: %d cut tiles, the split list has %d", what, cut, sp->n_tiles);
    free(covered);
    free(items_of);
    free(first_slot);
    return worst;
}

static unsigned rng = 12345;
static int rnd(int n) {
    rng = rng * 1103515245u + 12345u;
    return (int)((rng >> 8) % (unsigned)n);
}

int main(void) {
    static mt_work_list w;
    static mt_split_list sp;
    int32_t lens[512];

    /* one long request over 132 groups: every group gets a piece, all cut */
    mt_schedule_shape sh = {.batch = 1, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64, .n_groups = 132,
                            .overhead_keys = MT_SCHEDULE_TILE_OVERHEAD};
    lens[0] = 16384;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    long worst = verify(&sh, lens, &w, &sp, "B=1");
    /* 256 granules of 64 keys over 132 groups: each gets one or two */
    CHECK_MSG(w.n_groups == 132 && sp.n_tiles == 1 && sp.tile[0][2] == 132, "B=1: %d groups, %d cut tiles",
              w.n_groups, sp.n_tiles);
    CHECK_MSG(worst <= sh.granularity, "B=1: a group %ld keys over its share", worst);

    /* batch 128 x 16384 over 132 groups: no tile is much longer than a
     * share, so none is cut: a tile per group, 4 groups left out, no reduce */
    sh.batch = 128;
    for (int b = 0; b < 128; b++) lens[b] = 16384;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    verify(&sh, lens, &w, &sp, "B=128");
    CHECK_MSG(w.n_groups == 128 && w.n_items == 128 && sp.n_tiles == 0, "B=128: %d groups, %d items, %d cut",
              w.n_groups, w.n_items, sp.n_tiles);
    /* batch 100 x 16384 + 28 x 1024: the long tiles are over a share by
     * more than MT_SCHEDULE_CUT_KEYS: cut, balanced within a granule */
    sh.batch = 128;
    for (int b = 100; b < 128; b++) lens[b] = 1024;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    worst = verify(&sh, lens, &w, &sp, "ragged");
    CHECK_MSG(w.n_groups == 132 && sp.n_tiles > 0, "ragged: %d groups, %d cut", w.n_groups, sp.n_tiles);
    CHECK_MSG(worst <= sh.granularity, "ragged: a group %ld keys over its share", worst);
    for (int b = 100; b < 128; b++) lens[b] = 16384;

    /* batch 8, granularity 16: cuts on multiples of 16 */
    sh.batch = 8, sh.granularity = 16;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    worst = verify(&sh, lens, &w, &sp, "B=8 g16");
    CHECK_MSG(worst <= 16, "B=8: a group %ld keys over its share", worst);
    CHECK_MSG(sp.n_tiles == 8, "B=8: %d cut tiles", sp.n_tiles);

    /* few keys, many groups: groups without work are left out; a request of
     * no keys still gets its (direct) item, so its output is written */
    sh.batch = 3, sh.granularity = 64;
    lens[0] = 0, lens[1] = 5, lens[2] = 70;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    verify(&sh, lens, &w, &sp, "short");
    CHECK_MSG(w.n_groups <= 4, "short: %d groups for 75 keys", w.n_groups);

    /* speculative decoding, 128 heads: tiles of one request see different
     * key counts (causal among the Sq new tokens) */
    sh = (mt_schedule_shape){.batch = 4, .sq = 4, .n_heads = 8, .tile_q = 16, .granularity = 16, .n_groups = 20,
                             .overhead_keys = 64};
    lens[0] = 3, lens[1] = 1000, lens[2] = 4096, lens[3] = 1;
    CHECK_OK(mt_schedule_build(&sh, lens, &w, &sp));
    verify(&sh, lens, &w, &sp, "sq4");

    /* random batches and lengths against every property */
    for (int trial = 0; trial < 300; trial++) {
        sh.batch = 1 + rnd(300);
        sh.sq = 1 + rnd(4);
        sh.n_heads = (int[]){8, 16, 32, 128}[rnd(4)];
        if (sh.sq * sh.n_heads > 1024) sh.sq = 1;
        sh.tile_q = (int[]){16, 64}[rnd(2)];
        sh.granularity = (int[]){16, 64}[rnd(2)];
        sh.n_groups = 1 + rnd(264);
        sh.overhead_keys = rnd(2) ? 64 : 0;
        for (int b = 0; b < sh.batch; b++) lens[b] = rnd(8) == 0 ? rnd(20) : rnd(20000);
        char what[64];
        snprintf(what, sizeof what, "trial %d", trial);
        mt_status st = mt_schedule_build(&sh, lens, &w, &sp);
        int tiles = (sh.sq * sh.n_heads + sh.tile_q - 1) / sh.tile_q;
        if ((long)sh.batch * tiles + sh.n_groups > MT_WORK_MAX_ITEMS) {
            if (st != MT_OK) continue; /* may overflow the item list: refused, with a message */
        }
        CHECK_MSG(st == MT_OK, "%s: %s", what, mt_last_error());
        if (st != MT_OK) continue;
        long excess = verify(&sh, lens, &w, &sp, what);
        /* a share is off by half a granule per end, plus a tile's overhead
         * when an end falls in one; without cuts (no tile much longer than
         * a share), by up to half a tile per end */
        long longest = 0;
        for (int b = 0; b < sh.batch; b++) longest = lens[b] > longest ? lens[b] : longest;
        long bound = sp.n_tiles == 0 ? longest + sh.overhead_keys : sh.granularity + sh.overhead_keys;
        CHECK_MSG(excess <= bound, "%s: a group %ld keys over its share (%d cut tiles)", what, excess, sp.n_tiles);
    }

    /* limits: too many items, too many tiles per request, bad input */
    sh = (mt_schedule_shape){.batch = 2000, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64,
                             .n_groups = 132, .overhead_keys = 64};
    int32_t *many = calloc(2000, sizeof *many);
    for (int b = 0; b < 2000; b++) many[b] = 100;
    CHECK_STATUS(mt_schedule_build(&sh, many, &w, &sp), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "work items") != NULL);
    free(many);
    sh = (mt_schedule_shape){.batch = 1, .sq = 8, .n_heads = 128, .tile_q = 8, .granularity = 64, .n_groups = 132,
                             .overhead_keys = 64};
    CHECK_STATUS(mt_schedule_build(&sh, lens, &w, &sp), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "row tiles") != NULL);
    sh.tile_q = 16, sh.sq = 1;
    lens[0] = -1;
    CHECK_STATUS(mt_schedule_build(&sh, lens, &w, &sp), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "negative") != NULL);
    return check_summary("test_schedule");
}
