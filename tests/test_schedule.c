/*
 * test_schedule.c - the length-aware schedule (kernels/mla_decode/schedule.c, the
 * host twin of mla_schedule): every key of every request is covered
 * exactly once and in order, cuts fall on the granularity, only a
 * stretch's first and last items are pieces, a request's pieces are
 * consecutive and it reaches the reduce's list, the even form where its
 * pieces cost no more, stretches are balanced (the
 * largest against the mean, on ragged batches as engines send them), and
 * the limits are refused with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/mla_decode/schedule.h"

static uint64_t rng = 88172645463325252ull;
static int rnd(int lo, int hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (int)(rng % (uint64_t)(hi - lo + 1));
}

/* Checks every property of one schedule; returns the largest stretch's
 * cost over the mean stretch's (1.0 = perfect). */
static double verify(const mt_schedule_shape *sh, const int32_t *lens, const int32_t *w, const char *what) {
    const int S = mt_schedule_stretches(sh), B = sh->batch;
    CHECK_MSG(S == (sh->n_groups / mt_schedule_tiles(sh) > 0 ? sh->n_groups / mt_schedule_tiles(sh) : 1) ||
                  S == MT_SCHEDULE_MAX_STRETCHES, "%s: %d stretches", what, S);
    CHECK_MSG(mt_schedule_work_groups(sh) == S * mt_schedule_tiles(sh) &&
                  (mt_schedule_work_groups(sh) <= sh->n_groups || S == 1), "%s: %d work-groups of a budget of %d",
              what, mt_schedule_work_groups(sh), sh->n_groups);
    int *covered = calloc((size_t)B, sizeof *covered), *pieces = calloc((size_t)B, sizeof *pieces);
    int *first_piece = calloc((size_t)B, sizeof *first_piece);
    long total = 0, worst = 0;
    for (int i = 0; i < B; i++) total += sh->request_cost + (lens[i] > 0 ? lens[i] : 0);
    CHECK_MSG(w[0] == S, "%s: header says %d stretches", what, w[0]);
    const int32_t *s0 = mt_schedule_start(w, 0), *end = mt_schedule_start(w, S);
    CHECK_MSG(s0[0] == 0 && s0[1] == 0 && s0[2] == 0, "%s: the first stretch starts at (%d, %d)", what, s0[0], s0[1]);
    CHECK_MSG(end[0] == B && end[1] == 0 && end[2] == w[3], "%s: the end is (%d, %d), piece %d", what, end[0], end[1],
              end[2]);
    int next = 0;
    for (int g = 0; g < S; g++) {
        const int32_t *a = mt_schedule_start(w, g), *b = mt_schedule_start(w, g + 1);
        CHECK_MSG(b[0] > a[0] || (b[0] == a[0] && b[1] >= a[1]), "%s: stretch %d runs backwards", what, g);
        CHECK_MSG(a[2] == next, "%s: stretch %d's first piece %d, expected %d", what, g, a[2], next);
        int last = b[1] > 0 ? b[0] : b[0] - 1, count = (a[0] == b[0] && a[1] == b[1]) ? 0 : last - a[0] + 1;
        long cost = 0;
        for (int i = 0; i < count; i++) {
            int r = a[0] + i, n = lens[r] > 0 ? lens[r] : 0;
            int k0 = i == 0 ? a[1] : 0, k1 = r == b[0] ? b[1] : n;
            CHECK_MSG(k0 == covered[r], "%s: stretch %d starts request %d at %d, covered to %d", what, g, r, k0,
                      covered[r]);
            CHECK_MSG(k1 > k0 || (n == 0 && k1 == 0), "%s: stretch %d: request %d range [%d, %d)", what, g, r, k0, k1);
            CHECK_MSG(k0 % sh->granularity == 0 && (k1 == n || k1 % sh->granularity == 0),
                      "%s: range [%d, %d) off the granularity %d", what, k0, k1, sh->granularity);
            int whole = k0 == 0 && k1 == n;
            CHECK_MSG(whole || i == 0 || i == count - 1, "%s: stretch %d: a middle item is a piece", what, g);
            if (!whole) {
                if (pieces[r] == 0) first_piece[r] = next;
                CHECK_MSG(first_piece[r] + pieces[r] == next, "%s: request %d's pieces are not consecutive", what, r);
                pieces[r]++, next++;
            }
            covered[r] = k1;
            cost += sh->request_cost * (k0 == 0) + (k1 - k0);
        }
        if (cost > worst) worst = cost;
    }
    CHECK_MSG(next == w[3] && next <= 2 * S, "%s: %d pieces counted, header %d, %d stretches", what, next, w[3], S);
    int cut = 0, units = 0;
    for (int r = 0; r < B; r++) {
        int n = lens[r] > 0 ? lens[r] : 0;
        CHECK_MSG(covered[r] == n, "%s: request %d covered to %d of %d", what, r, covered[r], n);
        CHECK_MSG(pieces[r] != 1, "%s: request %d has a single piece", what, r);
        if (pieces[r] < 2) continue;
        const int32_t *e = mt_schedule_cut(w, S, cut);
        CHECK_MSG(cut < w[1] && e[0] == r && e[1] == first_piece[r] && e[2] == pieces[r] && e[3] == units,
                  "%s: cut entry %d is (%d, %d, %d, %d), request %d has pieces %d+%d after %d units", what, cut, e[0],
                  e[1], e[2], e[3], r, first_piece[r], pieces[r], units);
        /* the reduce: warps on a row for a round of 8 pieces each, or rows
         * of up to 8 pieces sharing a warp's 8 slots; a unit of 8 warps,
         * units covering every row of every tile */
        int np = pieces[r], g = mt_schedule_slot_groups(np), per_warp = mt_schedule_rows_per_warp(sh->tile_q, np);
        int unit_rows = mt_schedule_unit_rows(sh->tile_q, np), per_tile = mt_schedule_units_per_tile(sh->tile_q, np);
        CHECK_MSG(8 * g >= np || g == 8, "%s: %d slot groups for %d pieces", what, g, np);
        CHECK_MSG(per_warp >= 1 && (g == 1 ? per_warp * np <= 8 : per_warp == 1) &&
                      (per_warp == 1 || 8 * per_warp <= sh->tile_q),
                  "%s: %d rows a warp for %d pieces (%d slot groups, tile %d)", what, per_warp, np, g, sh->tile_q);
        CHECK_MSG(np > 4 || 8 * per_warp >= (sh->tile_q < 16 ? sh->tile_q : 16),
                  "%s: %d pieces leave slots idle: %d rows a warp", what, np, per_warp);
        CHECK_MSG(per_tile * unit_rows >= sh->tile_q && (per_tile - 1) * unit_rows < sh->tile_q,
                  "%s: %d units of %d rows for a tile of %d", what, per_tile, unit_rows, sh->tile_q);
        units += mt_schedule_tiles(sh) * per_tile;
        cut++;
    }
    CHECK_MSG(cut == w[1], "%s: %d cut requests, header %d", what, cut, w[1]);
    CHECK_MSG(w[2] == units, "%s: %d reduce units, header %d", what, units, w[2]);
    free(covered), free(pieces), free(first_piece);
    return (double)worst / ((double)total / S);
}

static double run(const mt_schedule_shape *sh, const int32_t *lens, const char *what) {
    int32_t *w = malloc(mt_schedule_entry_bytes(mt_schedule_stretches(sh)));
    double r = 0;
    CHECK_MSG(mt_schedule_build(sh, lens, w) == MT_OK, "%s: %s", what, mt_last_error());
    r = verify(sh, lens, w, what);
    free(w);
    return r;
}

int main(void) {
    /* balance on the mixes of issue 22 (16 heads, one tile per request;
     * 128 heads, two of 64 rows), 132 SMs x 1 and x 2, with the default
     * costs and two of the tuned ones (request_cost, snap_keys) */
    static const int batches[] = {8, 32, 128};
    static const char *const mixes[] = {"uniform 4096", "long-tail", "one-long", "uniform-random"};
    static const int costs[][3] = {{MT_SCHEDULE_OVERHEAD, MT_SCHEDULE_SNAP_KEYS, 4}, {256, 512, 4}, {1024, 0, 4},
                                   {256, 512, 2}};
    int32_t lens[4096];
    for (int c = 0; c < 4; c++)
    for (int h = 0; h < 2; h++)
        for (int gpc = 1; gpc <= 2; gpc++)
            for (int bi = 0; bi < 3; bi++)
                for (int m = 0; m < 4; m++) {
                    int B = batches[bi];
                    for (int i = 0; i < B; i++)
                        lens[i] = m == 0 ? 4096
                                : m == 1 ? (i % 10 == 3 ? rnd(16384, 32768) : rnd(512, 2048))
                                : m == 2 ? (i == 0 ? 32768 : 1024)
                                         : rnd(256, 8192);
                    mt_schedule_shape sh = {.batch = B, .sq = 1, .n_heads = h ? 128 : 16, .tile_q = h ? 64 : 16,
                                            .granularity = 64, .n_groups = 132 * gpc, .request_cost = costs[c][0],
                                            .snap_keys = costs[c][1], .snap_cap = costs[c][2]};
                    char what[120];
                    snprintf(what, sizeof what, "%d heads, B=%d, %s, %d stretches, cost %d, snap %d / %d", sh.n_heads,
                             B, mixes[m], mt_schedule_stretches(&sh), sh.request_cost, sh.snap_keys, sh.snap_cap);
                    double r = run(&sh, lens, what);
                    /* a stretch is its share within two snap distances, a
                     * granule and a request's overhead */
                    long total = 0;
                    for (int i = 0; i < B; i++) total += lens[i] + sh.request_cost;
                    int S = mt_schedule_stretches(&sh);
                    double share = (double)total / S,
                           snap = (double)mt_schedule_snap((uint64_t)total, S, sh.snap_keys, sh.snap_cap);
                    double bound = (share + 2 * snap + sh.granularity + 2 * sh.request_cost) / share;
                    printf("%-72s largest stretch / mean %.3f (bound %.3f)\n", what, r, bound);
                    CHECK_MSG(r <= bound + 1e-9, "%s: largest stretch %.3f x the mean, bound %.3f", what, r, bound);
                }

    /* random shapes: Sq > 1 (several tiles), empty and short requests, odd
     * granularities and budgets */
    for (int it = 0; it < 400; it++) {
        mt_schedule_shape sh = {.batch = rnd(1, 300), .sq = rnd(1, 8), .n_heads = rnd(1, 128),
                                .tile_q = 1 << rnd(0, 6), .granularity = 16 << rnd(0, 2), .n_groups = rnd(1, 1100),
                                .request_cost = 64 << rnd(0, 5), .snap_keys = rnd(0, 1024),
                                .snap_cap = rnd(0, 1) ? 2 : 4};
        int kind = rnd(0, 3);
        for (int i = 0; i < sh.batch; i++)
            lens[i] = kind == 0 ? rnd(0, 40) : kind == 1 ? (i == 0 ? rnd(10000, 100000) : rnd(0, 300)) : rnd(0, 20000);
        char what[96];
        snprintf(what, sizeof what, "random %d (B=%d Sq=%d N=%d tile %d gran %d G=%d cost %d snap %d)", it, sh.batch,
                 sh.sq, sh.n_heads, sh.tile_q, sh.granularity, sh.n_groups, sh.request_cost, sh.snap_keys);
        run(&sh, lens, what);
    }

    /* one long request alone is cut over every stretch; 128 heads in 64-row
     * tiles: two work-groups per stretch, 66 stretches on 132 */
    {
        mt_schedule_shape sh = {.batch = 1, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64, .n_groups = 132,
                                .request_cost = MT_SCHEDULE_OVERHEAD, .snap_keys = MT_SCHEDULE_SNAP_KEYS};
        int32_t one = 16384, *w = malloc(mt_schedule_entry_bytes(132));
        CHECK_OK(mt_schedule_build(&sh, &one, w));
        CHECK_MSG(w[1] == 1 && mt_schedule_cut(w, 132, 0)[2] > 100 && w[2] == 16, "%d cut, %d pieces, %d units",
                  w[1], mt_schedule_cut(w, 132, 0)[2], w[2]);
        sh.n_heads = 128, sh.tile_q = 64;
        CHECK(mt_schedule_tiles(&sh) == 2 && mt_schedule_stretches(&sh) == 66 && mt_schedule_work_groups(&sh) == 132);
        sh.sq = 8, sh.tile_q = 1; /* 1024 tiles on a budget of 132: one stretch, 1024 work-groups */
        CHECK(mt_schedule_stretches(&sh) == 1 && mt_schedule_work_groups(&sh) == 1024);
        free(w);
    }

    /* the tuned costs act: a wider snap never cuts more requests (each end
     * snaps on its own, and one within a distance is within any wider
     * one), and on a batch of equal requests a little over a share each
     * (128 x 1272 keys on 132 stretches: ends drift 40 keys a stretch) a
     * snap of 512 (capped at a quarter share, 323) cuts fewer of them than
     * 0; a larger request cost weighs the short requests more, so one long
     * request among them spans fewer stretches */
    {
        static int32_t uni[128], one_long[128];
        for (int i = 0; i < 128; i++) uni[i] = 1272, one_long[i] = i == 0 ? 32768 : 1024;
        mt_schedule_shape sh = {.batch = 128, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64,
                                .n_groups = 132, .request_cost = MT_SCHEDULE_OVERHEAD};
        int32_t *w = malloc(mt_schedule_entry_bytes(132)), *w2 = malloc(mt_schedule_entry_bytes(132));
        const int32_t *sets[2] = {uni, one_long};
        for (int k = 0; k < 2; k++) {
            int cuts_before = 1 << 30;
            for (int snap = 0; snap <= 1024; snap += 256) {
                sh.snap_keys = snap;
                CHECK_OK(mt_schedule_build(&sh, sets[k], w));
                verify(&sh, sets[k], w, k ? "one-long, snap sweep" : "uniform 1272, snap sweep");
                CHECK_MSG(w[1] <= cuts_before, "set %d: snap %d cuts %d requests, a narrower snap %d", k, snap, w[1],
                          cuts_before);
                cuts_before = w[1];
            }
        }
        /* 128 x 1272 on 132 stretches: a request each, none cut (the even
         * form), whatever the snap; 160 of them (more than the stretches:
         * the ends placed one by one) with snap 0 cut many, 512 fewer */
        for (int snap = 0; snap <= 512; snap += 512) {
            sh.snap_keys = snap;
            CHECK_OK(mt_schedule_build(&sh, uni, w));
            CHECK_MSG(w[1] == 0 && mt_schedule_even_granules(&sh, uni) == 20,
                      "uniform 128 x 1272, snap %d: %d requests cut, even form %d granules", snap, w[1],
                      mt_schedule_even_granules(&sh, uni));
        }
        static int32_t uni160[160];
        for (int i = 0; i < 160; i++) uni160[i] = 1272;
        sh.batch = 160, sh.snap_keys = 0;
        CHECK_OK(mt_schedule_build(&sh, uni160, w));
        CHECK(mt_schedule_even_granules(&sh, uni160) == 0);
        sh.snap_keys = 512;
        CHECK_OK(mt_schedule_build(&sh, uni160, w2));
        verify(&sh, uni160, w2, "uniform 160 x 1272, snap 512");
        CHECK_MSG(w[1] > 64 && w2[1] < w[1], "uniform 160 x 1272: %d requests cut with snap 0, %d with 512", w[1],
                  w2[1]);
        sh.batch = 128;
        /* the cap: half a share snaps where a quarter could not (128 heads
         * one-long: 1280-cost requests on shares of about 1100 were cut in
         * two almost all; reports/PERFLOG.md session 22), never more cuts.
         * B=80 on 66 stretches (the ends placed one by one; at B=32 the
         * even form holds every short request whole, below) */
        {
            static int32_t b32[80];
            for (int i = 0; i < 80; i++) b32[i] = i == 16 ? 32768 : 1024;
            mt_schedule_shape wide = {.batch = 80, .sq = 1, .n_heads = 128, .tile_q = 64, .granularity = 16,
                                      .n_groups = 132, .request_cost = 256, .snap_keys = 512, .snap_cap = 4};
            CHECK_OK(mt_schedule_build(&wide, b32, w));
            verify(&wide, b32, w, "128 heads B=32 one-long, cap 4");
            wide.snap_cap = 2;
            CHECK_OK(mt_schedule_build(&wide, b32, w2));
            verify(&wide, b32, w2, "128 heads B=32 one-long, cap 2");
            CHECK_MSG(w2[1] < w[1] && w2[3] < w[3], "cap 2: %d cut requests, %d pieces; cap 4: %d, %d", w2[1], w2[3],
                      w[1], w[3]);
            wide.snap_cap = 3;
            CHECK_STATUS(mt_schedule_build(&wide, b32, w), MT_ERR_INVALID_ARGUMENT);
            CHECK(mt_schedule_even_granules(&wide, b32) == -1);
        }
        /* the even form (session 24): 128 heads B=32 on 66 stretches.
         * Equal requests of 2016 keys: each in two pieces of 1024 and 992
         * (where the ends placed on the cost axis drifted from a quarter to
         * three quarters of a request: the largest stretch 1632 keys); one
         * 32768 among 31 of 1024: only the long one cut, in 32 pieces of
         * 1024; with 8 of 16384 keys among 24 of 1024 a piece would cost more
         * than the ends placed one by one: those are kept */
        {
            static int32_t b[32];
            mt_schedule_shape e = {.batch = 32, .sq = 1, .n_heads = 128, .tile_q = 64, .granularity = 64,
                                   .n_groups = 132, .request_cost = 256, .snap_keys = 512, .snap_cap = 2};
            for (int i = 0; i < 32; i++) b[i] = 2016;
            CHECK_OK(mt_schedule_build(&e, b, w));
            verify(&e, b, w, "128 heads B=32 x 2016, even");
            CHECK_MSG(mt_schedule_even_granules(&e, b) == 16 && w[1] == 32 && w[3] == 64, "even %d, %d cut, %d pieces",
                      mt_schedule_even_granules(&e, b), w[1], w[3]);
            for (int i = 0; i < 32; i++)
                CHECK_MSG(mt_schedule_start(w, 2 * i)[0] == i && mt_schedule_start(w, 2 * i)[1] == 0 &&
                              mt_schedule_start(w, 2 * i + 1)[0] == i && mt_schedule_start(w, 2 * i + 1)[1] == 1024,
                          "request %d: pieces at (%d, %d) and (%d, %d)", i, mt_schedule_start(w, 2 * i)[0],
                          mt_schedule_start(w, 2 * i)[1], mt_schedule_start(w, 2 * i + 1)[0],
                          mt_schedule_start(w, 2 * i + 1)[1]);
            CHECK(mt_schedule_start(w, 64)[0] == 32 && mt_schedule_start(w, 65)[0] == 32); /* two left empty */
            for (int i = 0; i < 32; i++) b[i] = i == 16 ? 32768 : 1024;
            CHECK_OK(mt_schedule_build(&e, b, w));
            verify(&e, b, w, "128 heads B=32 one-long, even");
            CHECK_MSG(mt_schedule_even_granules(&e, b) == 16 && w[1] == 1 && mt_schedule_cut(w, 66, 0)[0] == 16 &&
                          mt_schedule_cut(w, 66, 0)[2] == 32, "even %d, %d cut", mt_schedule_even_granules(&e, b),
                      w[1]);
            for (int i = 0; i < 32; i++) b[i] = i % 4 == 1 ? 16384 : 1024;
            CHECK_OK(mt_schedule_build(&e, b, w));
            verify(&e, b, w, "128 heads B=32, 8 of 16384");
            CHECK(mt_schedule_even_granules(&e, b) == 0);
            e.batch = 67; /* more requests than stretches */
            static int32_t b67[67];
            for (int i = 0; i < 67; i++) b67[i] = 2016;
            CHECK(mt_schedule_even_granules(&e, b67) == 0);
        }
        sh.snap_keys = MT_SCHEDULE_SNAP_KEYS, sh.request_cost = 64;
        CHECK_OK(mt_schedule_build(&sh, one_long, w));
        sh.request_cost = 1024;
        CHECK_OK(mt_schedule_build(&sh, one_long, w2));
        int spans[2] = {0, 0}; /* stretches that start inside the long request */
        for (int s = 0; s < 132; s++) spans[0] += mt_schedule_start(w, s)[0] == 0, spans[1] += mt_schedule_start(w2, s)[0] == 0;
        CHECK_MSG(spans[1] < spans[0] && spans[1] > 1, "one-long: the long request spans %d stretches with cost 64, "
                  "%d with cost 1024", spans[0], spans[1]);
        free(w);
        free(w2);
    }

    /* a bad shape is named */
    mt_schedule_shape bad = {.batch = 0, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64, .n_groups = 132};
    int32_t l1 = 10, w1[64];
    CHECK_STATUS(mt_schedule_build(&bad, &l1, w1), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "batch 0") != NULL, "%s", mt_last_error());
    bad.batch = 1, bad.request_cost = -1;
    CHECK_STATUS(mt_schedule_build(&bad, &l1, w1), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "request cost -1") != NULL, "%s", mt_last_error());
    return check_summary("test_schedule");
}
