/*
 * A key's winner at other batches (dispatch.h): the decode family's
 * splits rescaled so that batch x splits stays near the key's (or, on a
 * device of much bandwidth per compute unit, fill a wave the key left
 * part idle; more splits than the key's in a cluster only where it pays;
 * two splits in a cluster where the path can),
 * worked out when the table is built.  Checked on hand-made keys, and
 * against the family's rule applied directly for random tables, devices
 * and calls: the ranges the table keeps must
 * give every batch a plan may pass the same variant (so the bound on the
 * batches a key can serve must never be too narrow), and a rescaled
 * variant's batch cap, which sizes the plan's workspace, must cover every
 * batch it runs at.
 */
#include "check.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/dispatch.h"

static mt_choice key_of(int heads, int batch, int len, int max_len, const char *params) {
    mt_choice c = {.arch = "sm_90", .compute_units = 132,
                   .key = {.kind = "mla_decode",
                           .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                           .n_heads = heads, .sq = 1, .batch = batch, .seq_len = len, .max_len = max_len},
                   .family = "mla_decode", .median_ms = 0.01};
    snprintf(c.params, sizeof c.params, "%s", params);
    snprintf(c.key.lengths, sizeof c.key.lengths, "%s", max_len > len ? "long-tail" : "uniform");
    return c;
}

static mt_choice key(int batch, int len, int max_len, const char *params) {
    return key_of(16, batch, len, max_len, params);
}

/* A SIMT grid variant of `splits` (kv_granularity 16 at one split). */
static void grid(char *buf, size_t size, int tile_q, int splits) {
    snprintf(buf, size, "tile_q=%d,kv_granularity=%d,num_splits=%d,block_threads=256,kv_chunk=32,mma=0", tile_q,
             splits == 1 ? 16 : 64, splits);
}

static int same(const mt_variant *a, const mt_variant *b) {
    return a->family == b->family && memcmp(a->values, b->values, sizeof a->values) == 0;
}

static const mt_problem_key shape = {.kind = "mla_decode",
                                     .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16,
                                           .kv_dtype = MT_BF16},
                                     .n_heads = 16, .sq = 1};

/* What a table of the one key k runs at (batch, len) on 132 compute units
 * of gbps GB/s (0: not known): *out, and whether it was rescaled. */
static int one_key_runs(const mt_choice *k, const mt_problem_key *sh, const mt_target *t, double gbps, int batch,
                        int len, mt_variant *out) {
    mt_dispatch_table table;
    mt_dispatch_result r;
    const mt_dispatch_device dev = {132, gbps};
    CHECK_OK(mt_dispatch_build_for(k, NULL, 1, sh, t, &dev, 256, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, batch, len, 0, &r);
    CHECK(r.entry != NULL);
    *out = table.variants[r.variant];
    mt_dispatch_free(&table);
    return r.rescaled;
}

static void sparse_keys(const mt_target *t) {
    char v8[200], v32[200], aware[200], wg[200];
    grid(v8, sizeof v8, 16, 16);
    grid(v32, sizeof v32, 16, 4);
    snprintf(aware, sizeof aware, "tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=32,mma=0,"
             "groups_per_cu=1");
    /* the 64-row warpgroup path, 16 splits merged in a cluster */
    snprintf(wg, sizeof wg, "tile_q=64,kv_granularity=64,num_splits=16,block_threads=256,kv_chunk=64,mma=2,"
             "split_reduce=1");
    /* keys a factor 4 apart in batch, as the shipped plans put them */
    mt_choice c[4] = {key(8, 4096, 4096, v8), key(32, 4096, 4096, v32), key(32, 2000, 32768, aware),
                      key(16, 65536, 65536, wg)};
    mt_dispatch_table table;
    mt_dispatch_result r;
    CHECK_OK(mt_dispatch_build(c, NULL, 4, &shape, t, 132, 1024, MT_DISPATCH_RESCALED, &table));
    /* the key itself: its winner as measured */
    mt_dispatch_lookup(&table, 8, 4096, 0, &r);
    CHECK(r.exact && !r.rescaled && r.variant == r.entry->variant);
    /* batch 16, as near 8 as 32 (the first key in order wins the tie):
     * 8's 16 splits halved, the 128 work-groups of its key kept */
    mt_dispatch_lookup(&table, 16, 4096, 0, &r);
    CHECK(r.entry && r.entry->batch == 8 && r.rescaled);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 8);
    char why[256];
    mt_dispatch_explain(&table, &r, why, sizeof why);
    CHECK_MSG(strstr(why, "nearest key (batch 8") && strstr(why, "rescaled: num_splits 16->8"), "%s", why);
    /* batch 2 from 8: 64 splits; batch 3 (8 x 16 / 3 = 43, nearer 32 than 64 in log2) */
    mt_dispatch_lookup(&table, 2, 4096, 0, &r);
    CHECK(r.entry && r.entry->batch == 8 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 64);
    mt_dispatch_lookup(&table, 3, 4096, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 32);
    /* batch 100 from 32: one split, kv_granularity 16 (the only one valid there) */
    mt_dispatch_lookup(&table, 100, 4096, 0, &r);
    CHECK(r.entry && r.entry->batch == 32 && r.rescaled);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 1 &&
          table.variants[r.variant].values[MT_P_KV_GRANULARITY] == 16);
    /* the cluster merge keeps to 2..16 splits: batch 8 from 16 (32
     * splits) merges by the reduce kernel, batch 32 (8) in a cluster */
    mt_dispatch_lookup(&table, 8, 65536, 0, &r);
    CHECK(r.entry && r.entry->batch == 16 && r.rescaled);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 32 &&
          table.variants[r.variant].values[MT_P_SPLIT_REDUCE] == 0);
    mt_dispatch_lookup(&table, 32, 65536, 0, &r);
    CHECK(r.entry && r.entry->batch == 16 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 8 &&
          table.variants[r.variant].values[MT_P_SPLIT_REDUCE] == 1);
    /* a length-aware winner cuts by the lengths: never rescaled */
    mt_dispatch_lookup(&table, 100, 2000, 32768, &r);
    CHECK(r.entry && r.entry->length_aware && !r.rescaled && r.variant == r.entry->variant);
    /* the workspace: 64 splits run only for small batches, so they are
     * sized for those, not for 1024 */
    mt_dispatch_lookup(&table, 2, 4096, 0, &r);
    CHECK(table.batch_cap[r.variant] > 0 && table.batch_cap[r.variant] < 8);
    /* batch 8's winner runs up to about 11 (then 8 splits), 32's up to 45
     * (then 2); one split, from batch 91 on, at any batch */
    CHECK_MSG(table.batch_cap[r.entry->variant] > 8 && table.batch_cap[r.entry->variant] < 16, "cap %d",
              table.batch_cap[r.entry->variant]);
    mt_dispatch_lookup(&table, 32, 4096, 0, &r);
    CHECK_MSG(table.batch_cap[r.variant] > 32 && table.batch_cap[r.variant] < 64, "cap %d", table.batch_cap[r.variant]);
    mt_dispatch_lookup(&table, 1000, 4096, 0, &r);
    CHECK(r.rescaled && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 1 && table.batch_cap[r.variant] == 0);
    int rescaled_variants = table.n_variants;
    mt_dispatch_free(&table);
    /* a pinned table runs every winner as measured */
    CHECK_OK(mt_dispatch_build(c, NULL, 4, &shape, t, 132, 1024, MT_DISPATCH_AS_MEASURED, &table));
    CHECK(table.n_ranges == 0 && table.n_variants < rescaled_variants);
    mt_dispatch_lookup(&table, 16, 4096, 0, &r);
    CHECK(!r.rescaled && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 16);
    mt_dispatch_free(&table);
    /* max_batch 8: nothing past it is worked out (batch 100's one split is not compiled) */
    CHECK_OK(mt_dispatch_build(c, NULL, 4, &shape, t, 132, 8, MT_DISPATCH_RESCALED, &table));
    for (int i = 0; i < table.n_variants; i++) CHECK(table.variants[i].values[MT_P_NUM_SPLITS] != 1 ||
                                                     table.variants[i].values[MT_P_GROUPS_PER_CU]);
    mt_dispatch_free(&table);
    CHECK_STATUS(mt_dispatch_build(c, NULL, 4, &shape, t, 132, 0, MT_DISPATCH_RESCALED, &table),
                 MT_ERR_INVALID_ARGUMENT);
}

/* The two refinements of session 30 (family.c), on the 64-row warpgroup
 * path's winners at 64 heads (one 64-row tile a request):
 * - on a device of at least 28 GB/s a compute unit (an H200: 4915 GB/s
 *   over 132), a key whose grid left units idle (B=32, 2 splits: 64 of
 *   132) keeps its splits at larger batches while they fit one wave and
 *   keep 256 keys each; an H100 (3352 GB/s) and a device of unknown
 *   bandwidth keep the key's work-groups instead;
 * - more splits than the key's stay in a cluster only where the cluster
 *   pays at the key's length (1024 keys: yes; 8192: the reduce kernel). */
static void fill_and_clusters(const mt_target *t) {
    const char *wg2 = "tile_q=64,kv_granularity=64,num_splits=2,block_threads=256,kv_chunk=64,mma=2,split_reduce=1";
    mt_problem_key sh64 = shape;
    sh64.n_heads = 64;
    mt_choice short_key = key_of(64, 32, 1024, 1024, wg2);
    static const struct {
        double gbps;
        int batch, splits, reduce;
    } fill[] = {
        {4915, 64, 2, 1},  /* H200: 64 x 2 = 128 work-groups fit 132 */
        {4915, 48, 2, 1},  {4915, 66, 2, 1},
        {4915, 67, 1, 0},  /* 134 would not */
        {4915, 100, 1, 0}, {3352, 64, 1, 0}, /* H100: the key's 64 work-groups */
        {3352, 40, 2, 1},  /* 1.6 splits: nearer 2 in log2 */
        {0, 64, 1, 0},     /* bandwidth not known: as the H100 */
        {4915, 16, 4, 1},  /* below the key's batch: as before, 4 splits in a cluster (it pays at 1024 keys) */
    };
    for (size_t i = 0; i < sizeof fill / sizeof fill[0]; i++) {
        mt_variant w;
        const int rescaled = one_key_runs(&short_key, &sh64, t, fill[i].gbps, fill[i].batch, 1024, &w);
        const int *x = w.values;
        CHECK_MSG(x[MT_P_NUM_SPLITS] == fill[i].splits && x[MT_P_SPLIT_REDUCE] == fill[i].reduce,
                  "%g GB/s, batch %d from 32: %d splits (reduce %d), want %d (%d)", fill[i].gbps, fill[i].batch,
                  x[MT_P_NUM_SPLITS], x[MT_P_SPLIT_REDUCE], fill[i].splits, fill[i].reduce);
        CHECK(rescaled == (fill[i].splits != 2));
    }
    /* a split keeps 256 keys when filling: B=8 x 1024's 8 splits (128
     * keys each) at batch 16 go to 4 (the rescale's answer too), its 4
     * splits (256 keys) at batch 12 stay 4 where the rescale says 2 */
    static const struct {
        int key_splits, batch, gbps, splits;
    } floor_cases[] = {{8, 16, 4915, 4}, {8, 16, 0, 4}, {4, 12, 4915, 4}, {4, 12, 0, 2}};
    for (size_t i = 0; i < sizeof floor_cases / sizeof floor_cases[0]; i++) {
        char params[200];
        snprintf(params, sizeof params,
                 "tile_q=64,kv_granularity=64,num_splits=%d,block_threads=256,kv_chunk=64,mma=2,split_reduce=1",
                 floor_cases[i].key_splits);
        mt_choice k8 = key_of(64, 8, 1024, 1024, params);
        mt_variant w;
        one_key_runs(&k8, &sh64, t, floor_cases[i].gbps, floor_cases[i].batch, 1024, &w);
        CHECK_MSG(w.values[MT_P_NUM_SPLITS] == floor_cases[i].splits,
                  "%d splits from batch 8 at batch %d, %d GB/s: %d, want %d", floor_cases[i].key_splits,
                  floor_cases[i].batch, floor_cases[i].gbps, w.values[MT_P_NUM_SPLITS], floor_cases[i].splits);
    }
    /* B=64's 2 splits in clusters of 2, at batch 16: 8 splits; in a cluster
     * at 1024 keys (the partials' round trip is 1.8x a quarter of the
     * keys' bytes), by the reduce kernel at 8192 (0.9x) */
    static const struct {
        int len, reduce;
    } clusters[] = {{1024, 1}, {8192, 0}};
    for (size_t i = 0; i < 2; i++) {
        mt_choice k64 = key_of(64, 64, clusters[i].len, clusters[i].len, wg2);
        mt_variant w;
        one_key_runs(&k64, &sh64, t, 0, 16, clusters[i].len, &w);
        const int *x = w.values;
        CHECK_MSG(x[MT_P_NUM_SPLITS] == 8 && x[MT_P_SPLIT_REDUCE] == clusters[i].reduce,
                  "%d keys: batch 16 from 64 runs %d splits (reduce %d)", clusters[i].len, x[MT_P_NUM_SPLITS],
                  x[MT_P_SPLIT_REDUCE]);
        /* fewer splits than the key's keep its merge: batch 128, one split (no merge) */
        one_key_runs(&k64, &sh64, t, 0, 100, clusters[i].len, &w);
        CHECK(w.values[MT_P_NUM_SPLITS] == 1 && w.values[MT_P_SPLIT_REDUCE] == 0);
    }
}

/* xorshift: the draw is the same on every run */
static unsigned next(unsigned *s) {
    *s ^= *s << 13, *s ^= *s >> 17, *s ^= *s << 5;
    return *s;
}

static void random_tables(const mt_target *t) {
    static const int batches[] = {1, 2, 4, 8, 16, 32, 64, 128, 256}, lens[] = {1024, 4096, 16384, 65536};
    unsigned seed = 12345;
    int checked = 0, rescaled = 0, full = 0, filled = 0;
    for (int round = 0; round < 80; round++) {
        mt_choice c[16];
        int n = 1 + (int)(next(&seed) % 8);
        for (int i = 0; i < n; i++) {
            char params[200];
            int b = batches[next(&seed) % 9], len = lens[next(&seed) % 4];
            int ragged = next(&seed) % 5 == 0, max_len = ragged ? len * (2 + (int)(next(&seed) % 8)) : len;
            if (ragged && next(&seed) % 2)
                snprintf(params, sizeof params, "tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,"
                         "kv_chunk=32,mma=0,groups_per_cu=1");
            else grid(params, sizeof params, next(&seed) % 2 ? 16 : 8, 1 << (next(&seed) % 8));
            c[i] = key(b, len, max_len, params);
            c[i].key.seq_len += i; /* no two keys alike */
        }
        int max_batch = 1 + (int)(next(&seed) % 600);
        static const double bandwidths[] = {0, 3352, 4915}; /* not known, an H100's, an H200's */
        const mt_dispatch_device dev = {132, bandwidths[next(&seed) % 3]};
        mt_dispatch_table table;
        CHECK_OK(mt_dispatch_build_for(c, NULL, n, &shape, t, &dev, max_batch, MT_DISPATCH_RESCALED, &table));
        if (table.n_variants == MT_DISPATCH_MAX_VARIANTS) { /* full: some ranges run the winner (by design) */
            full++;
            mt_dispatch_free(&table);
            continue;
        }
        for (int q = 0; q < 400; q++) {
            int b = 1 + (int)(next(&seed) % (unsigned)max_batch), len = 1 + (int)(next(&seed) % 100000);
            int max_len = next(&seed) % 3 ? len : len + (int)(next(&seed) % 200000);
            mt_dispatch_result r;
            mt_dispatch_lookup(&table, b, len, max_len, &r);
            if (!r.entry) { /* the rule's length-aware fallback: any batch */
                CHECK(table.batch_cap[r.variant] == 0);
                continue;
            }
            const mt_variant *winner = &table.variants[r.entry->variant], *runs = &table.variants[r.variant];
            mt_variant want = *winner;
            const mt_shape sh = {.s = shape.s, .n_heads = shape.n_heads, .sq = shape.sq};
            const mt_rescale_call call = {.key_batch = r.entry->batch, .key_len = r.entry->seq_len, .batch = b,
                                          .compute_units = 132, .memory_gbps = dev.memory_gbps};
            if (mt_family_mla_decode.rescale(winner, &sh, &call, &want) &&
                mt_variant_validate(&want, &shape.s, t) != MT_OK)
                want = *winner;
            mt_variant plain = *winner; /* the same call where the bandwidth is not known */
            mt_rescale_call unknown = call;
            unknown.memory_gbps = 0;
            mt_family_mla_decode.rescale(winner, &sh, &unknown, &plain);
            filled += plain.values[MT_P_NUM_SPLITS] != want.values[MT_P_NUM_SPLITS];
            CHECK_MSG(same(runs, &want), "round %d: batch %d mean %d longest %d from key batch %d: %d splits, the "
                      "rule says %d", round, b, len, max_len, r.entry->batch, runs->values[MT_P_NUM_SPLITS],
                      want.values[MT_P_NUM_SPLITS]);
            CHECK(r.rescaled == !same(runs, winner));
            int cap = table.batch_cap[r.variant];
            CHECK_MSG(cap == 0 || b <= cap, "round %d: batch %d runs a variant capped at %d", round, b, cap);
            checked++, rescaled += r.rescaled;
        }
        mt_dispatch_free(&table);
    }
    /* the draw must exercise the rule, not only exact keys */
    CHECK_MSG(checked > 10000 && rescaled > checked / 4 && full < 8 && filled > 100,
              "%d calls checked, %d rescaled (%d filling idle units), %d tables full", checked, rescaled, filled,
              full);
}

/* Tables with no key (the built-in rule) on three devices: every call's
 * variant is within its batch cap, and the caps shrink the workspace. */
static void rule_caps(void) {
    static const struct {
        const char *arch;
        int cus;
    } devices[] = {{"sm_90", 132}, {"sm_80", 108}, {"gfx942", 304}};
    static const int heads[] = {1, 3, 8, 16, 32, 64, 128}, pages[] = {1, 16, 64};
    static const mt_dtype kv[] = {MT_BF16, MT_FP8_E4M3};
    unsigned seed = 777;
    int checked = 0, capped_calls = 0;
    for (int round = 0; round < 120; round++) {
        mt_target t;
        int d = (int)(next(&seed) % 3);
        CHECK_OK(mt_target_for_arch(devices[d].arch, &t));
        mt_problem_key k = shape;
        k.n_heads = heads[next(&seed) % 7];
        k.sq = next(&seed) % 4 ? 1 : 2;
        k.s.page_size = pages[next(&seed) % 3];
        k.s.kv_dtype = kv[next(&seed) % 2];
        int max_batch = 1 + (int)(next(&seed) % 2048);
        mt_dispatch_table table;
        CHECK_OK(mt_dispatch_build(NULL, NULL, 0, &k, &t, devices[d].cus, max_batch, MT_DISPATCH_RESCALED, &table));
        for (int q = 0; q < 300; q++) {
            int b = 1 + (int)(next(&seed) % (unsigned)max_batch), len = (int)(next(&seed) % 300000);
            mt_dispatch_result r;
            mt_dispatch_lookup(&table, b, len, len, &r);
            int cap = table.batch_cap[r.variant];
            CHECK_MSG(cap == 0 || b <= cap, "%s, %d heads, Sq %d: batch %d x %d runs %d splits, capped at %d",
                      devices[d].arch, k.n_heads, k.sq, b, len, table.variants[r.variant].values[MT_P_NUM_SPLITS],
                      cap);
            checked++, capped_calls += cap > 0;
        }
        mt_dispatch_free(&table);
    }
    CHECK_MSG(checked == 120 * 300 && capped_calls > checked / 20, "%d calls, %d of a capped variant", checked,
              capped_calls);
}

/* Session 31: whatever the key's merge, a rescaled winner of two splits
 * merges them in a cluster where its path can (the 64-row warpgroup path):
 * keys of 4 splits through the reduce kernel at twice their batch (on an
 * H200, at 16 heads B=32 x 1024 to 64; on an H100, at 64 heads B=8 x 4096
 * to 16); the transposed and SIMT paths keep the reduce. */
static void pairs_in_clusters(const mt_target *t) {
    static const struct {
        int heads, key_batch, len, batch;
        double gbps;
        const char *params;
        int reduce;
    } cases[] = {
        {16, 32, 1024, 64, 4915,
         "tile_q=64,kv_granularity=64,num_splits=4,block_threads=256,kv_chunk=64,mma=2,split_reduce=0", 1},
        {64, 8, 4096, 16, 3352,
         "tile_q=64,kv_granularity=64,num_splits=4,block_threads=256,kv_chunk=64,mma=2,split_reduce=0", 1},
        {16, 8, 4096, 16, 3352, "tile_q=16,kv_granularity=64,num_splits=4,block_threads=256,kv_chunk=64,mma=2", 0},
        {16, 8, 4096, 16, 3352, "tile_q=16,kv_granularity=64,num_splits=4,block_threads=256,kv_chunk=32,mma=0", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_problem_key sh = shape;
        sh.n_heads = cases[i].heads;
        mt_choice k = key_of(cases[i].heads, cases[i].key_batch, cases[i].len, cases[i].len, cases[i].params);
        mt_variant w;
        const int rescaled = one_key_runs(&k, &sh, t, cases[i].gbps, cases[i].batch, cases[i].len, &w);
        const int *x = w.values;
        CHECK_MSG(rescaled && x[MT_P_NUM_SPLITS] == 2 && x[MT_P_SPLIT_REDUCE] == cases[i].reduce,
                  "case %zu: batch %d from %d: %d splits, split_reduce %d (want 2, %d)", i, cases[i].batch,
                  cases[i].key_batch, x[MT_P_NUM_SPLITS], x[MT_P_SPLIT_REDUCE], cases[i].reduce);
    }
}

int main(void) {
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    sparse_keys(&t);
    fill_and_clusters(&t);
    pairs_in_clusters(&t);
    random_tables(&t);
    rule_caps();
    return check_summary("test_dispatch_rescale");
}
