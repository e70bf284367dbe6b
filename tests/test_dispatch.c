/*
 * The runtime's dispatch without a GPU: key mapping (exact key, nearest key
 * by log-distance, heuristic when the DB has nothing for the shape), user
 * over system entries, invalid stored variants refused, and the public API's
 * answers to bad arguments and to a host with no GPU (clear status and
 * message, no crash).
 */
#define _GNU_SOURCE
#include "check.h"
#include "kernels/mla_decode/mla_decode.h"
#include "mlatune.h"
#include "runtime/api/dispatch.h"

static mt_choice entry(int heads, int batch, int len, const char *params, mt_dtype kv) {
    mt_choice c = {.arch = "sm_90",
                   .key = {.kind = "mla_decode",
                           .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = kv},
                           .n_heads = heads, .sq = 1, .batch = batch, .seq_len = len},
                   .family = "mla_decode_simt", .median_ms = batch * 0.001 + len * 1e-6};
    snprintf(c.params, sizeof c.params, "%s", params);
    return c;
}

#define V(tile, splits) "tile_q=" #tile ",kv_granularity=64,num_splits=" #splits ",block_threads=256,kv_chunk=32,mma=0"

int main(void) {
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_choice c[6] = {entry(16, 1, 1024, V(8, 16), MT_BF16),  entry(16, 1, 16384, V(8, 32), MT_BF16),
                      entry(16, 64, 1024, V(16, 2), MT_BF16), entry(16, 64, 16384, V(16, 4), MT_BF16),
                      entry(8, 64, 16384, V(4, 8), MT_BF16),  entry(16, 64, 16384, V(32, 2), MT_FP8_E4M3)};
    mt_problem_key shape = {.kind = "mla_decode",
            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
            .n_heads = 16, .sq = 1};
    mt_dispatch_table table;
    CHECK_OK(mt_dispatch_build(c, NULL, 6, &shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    CHECK(table.n_entries == 4 && !table.heuristic);  /* other heads and the fp8 KV entry are not candidates */
    mt_dispatch_result r;
    mt_dispatch_lookup(&table, 64, 16384, 0, &r);
    CHECK(r.exact && r.entry && r.entry->batch == 64 && r.entry->seq_len == 16384 && r.distance == 0);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 4);
    /* nearest: batch 48 is log2-closer to 64 than to 1; length 2000 to 1024 */
    mt_dispatch_lookup(&table, 48, 2000, 0, &r);
    CHECK(!r.exact && r.entry && r.entry->batch == 64 && r.entry->seq_len == 1024);
    CHECK(r.distance > 0.4 && r.distance < 1.4);
    mt_dispatch_lookup(&table, 2, 20000, 0, &r);
    CHECK(r.entry && r.entry->batch == 1 && r.entry->seq_len == 16384);
    mt_dispatch_lookup(&table, 1, 0, 0, &r);  /* empty requests map too */
    CHECK(r.entry && r.entry->batch == 1 && r.entry->seq_len == 1024);
    /* a ragged call (longest >= 1.5x the mean) with only uniform keys of
     * fixed splits in the DB: the rule's length-aware variant, not the
     * nearest key (whose splits leave the longest request's few
     * work-groups running alone: 4.2x slower at 128 heads, fp8, B=32) */
    CHECK(table.aware_fallback >= 0);
    mt_dispatch_lookup(&table, 64, 2000, 32768, &r);
    CHECK(!r.entry && r.variant == table.aware_fallback &&
          table.variants[r.variant].values[MT_P_GROUPS_PER_CU] > 0);
    char why_ragged[300];
    mt_dispatch_explain(&table, &r, why_ragged, sizeof why_ragged);
    CHECK_MSG(strstr(why_ragged, "ragged") && strstr(why_ragged, "4 keys"), "%s", why_ragged);
    mt_dispatch_lookup(&table, 128, 4198, 8138, &r); /* 256..8192 keys at random: longest 1.94x the mean */
    CHECK(!r.entry && r.variant == table.aware_fallback);
    mt_dispatch_lookup(&table, 64, 2000, 2800, &r); /* nearly uniform (1.4x): the nearest key */
    CHECK(r.entry && r.entry->batch == 64 && r.entry->seq_len == 1024);
    mt_dispatch_free(&table);

    /* user over system: sources travel with the entries */
    mt_choice_source src[6] = {MT_FROM_SYSTEM_DB, MT_FROM_USER_DB, MT_FROM_USER_DB,
                               MT_FROM_SYSTEM_DB, MT_FROM_USER_DB, MT_FROM_USER_DB};
    CHECK_OK(mt_dispatch_build(c, src, 6, &shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 1, 1024, 0, &r);
    CHECK(r.entry && r.entry->source == MT_FROM_SYSTEM_DB);
    CHECK_MSG(table.key_device[0] == '\0', "no names in the rows, none said: '%s'", table.key_device);
    mt_dispatch_free(&table);

    /* whose keys: the rows' device names, each once, in order of first
     * use; keys of other shapes add none (one arch and SM count is one
     * device to the DB, so an H200 takes an H100's keys and says so) */
    {
        const char *names[6] = {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100",
                                "other heads' device", "fp8 KV's device"};
        mt_choice named[6];
        for (int i = 0; i < 6; i++) {
            named[i] = c[i];
            snprintf(named[i].device_name, sizeof named[i].device_name, "%s", names[i]);
        }
        CHECK_OK(mt_dispatch_build(named, NULL, 6, &shape, &t, 132, 64, MT_DISPATCH_RESCALED, &table));
        CHECK_MSG(strcmp(table.key_device, "NVIDIA H100 80GB HBM3, NVIDIA H200, NVIDIA H100") == 0, "'%s'",
                  table.key_device);
        mt_dispatch_free(&table);
        CHECK_OK(mt_dispatch_build(named, NULL, 1, &shape, &t, 132, 64, MT_DISPATCH_RESCALED, &table));
        CHECK_MSG(strcmp(table.key_device, "NVIDIA H100 80GB HBM3") == 0, "'%s'", table.key_device);
        mt_dispatch_free(&table);
        /* more names than fit: the list ends with "..." once */
        mt_choice many[4];
        for (int i = 0; i < 4; i++) {
            many[i] = c[i];
            memset(many[i].device_name, 'A' + i, 50);
            many[i].device_name[50] = '\0';
        }
        CHECK_OK(mt_dispatch_build(many, NULL, 4, &shape, &t, 132, 64, MT_DISPATCH_RESCALED, &table));
        size_t len = strlen(table.key_device);
        CHECK_MSG(len < sizeof table.key_device && len > 3 && strcmp(table.key_device + len - 3, "...") == 0 &&
                  strstr(table.key_device, "......") == NULL, "'%s'", table.key_device);
        mt_dispatch_free(&table);
    }

    /* issue 22: ragged keys.  The longest request over the mean tells a
     * ragged batch from a uniform one of the same total keys; unknown
     * lengths (graph capture) go to a length-aware winner */
    {
        mt_choice rg[4] = {entry(16, 32, 2048, V(16, 4), MT_BF16), entry(16, 32, 2016, V(16, 1), MT_BF16),
                           entry(16, 128, 1272, V(16, 2), MT_BF16), entry(16, 8, 4096, V(16, 8), MT_BF16)};
        rg[1].key.max_len = 32768; /* one long request among short ones */
        snprintf(rg[1].key.lengths, sizeof rg[1].key.lengths, "one-long:32768:1024");
        snprintf(rg[1].params, sizeof rg[1].params, "%s,groups_per_cu=1", V(16, 1));
        rg[2].key.max_len = 32768;
        snprintf(rg[2].key.lengths, sizeof rg[2].key.lengths, "one-long:32768:1024");
        snprintf(rg[2].params, sizeof rg[2].params, "%s,groups_per_cu=2", V(16, 1));
        CHECK_OK(mt_dispatch_build(rg, NULL, 4, &shape, &t, 132,
                                   MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
        CHECK(table.aware_fallback < 0); /* the DB has length-aware winners */
        mt_dispatch_lookup(&table, 32, 2016, 0, &r); /* uniform: the uniform key, not the ragged one at the same mean */
        CHECK_MSG(r.entry && r.entry->seq_len == 2048 && !r.entry->length_aware, "mean %d", r.entry ? r.entry->seq_len : -1);
        mt_dispatch_lookup(&table, 32, 2000, 30000, &r); /* ragged: the ragged key */
        CHECK(r.entry && r.entry->max_len == 32768 && r.entry->batch == 32 && r.entry->length_aware);
        mt_dispatch_lookup(&table, 32, 2016, 32768, &r);
        CHECK(r.exact && r.distance == 0);
        char why[200];
        mt_dispatch_explain(&table, &r, why, sizeof why);
        CHECK_MSG(strstr(why, "exact key") && strstr(why, "one-long:32768:1024") && strstr(why, "longest 32768"), "%s",
                  why);
        mt_dispatch_lookup(&table, 100, MLT_LENGTHS_UNKNOWN, 0, &r); /* nearest length-aware batch: 128 */
        CHECK(r.unknown_lengths && r.entry && r.entry->batch == 128 &&
              table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 2);
        mt_dispatch_lookup(&table, 8, MLT_LENGTHS_UNKNOWN, 0, &r); /* batch 8's winner has fixed splits: 32's */
        CHECK(r.unknown_lengths && r.entry && r.entry->batch == 32);
        mt_dispatch_explain(&table, &r, why, sizeof why);
        CHECK_MSG(strstr(why, "lengths unknown") != NULL, "%s", why);
        mt_dispatch_free(&table);
        /* no length-aware winner: the heuristic's length-aware variant, compiled with the plan */
        CHECK_OK(mt_dispatch_build(rg, NULL, 1, &shape, &t, 132,
                                   MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
        CHECK(table.aware_fallback >= 0 && table.variants[table.aware_fallback].values[MT_P_GROUPS_PER_CU] > 0);
        mt_dispatch_lookup(&table, 32, MLT_LENGTHS_UNKNOWN, 0, &r);
        CHECK(r.unknown_lengths && !r.entry && r.variant == table.aware_fallback);
        mt_dispatch_free(&table);
    }

    /* nothing for 3 heads: the heuristic, splits growing as batch shrinks */
    shape.n_heads = 3;
    CHECK_OK(mt_dispatch_build(c, NULL, 6, &shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    CHECK(table.heuristic && table.n_entries == 0 && table.n_variants > 1);
    mt_dispatch_lookup(&table, 1, 16384, 0, &r);
    int splits_small = table.variants[r.variant].values[MT_P_NUM_SPLITS];
    mt_dispatch_lookup(&table, 512, 16384, 0, &r);
    int splits_large = table.variants[r.variant].values[MT_P_NUM_SPLITS];
    /* one row tile: 128 splits of 128 keys (a wave of 132 CUs holds 128) */
    CHECK_MSG(splits_small == 128 && splits_large == 1, "heuristic splits %d / %d", splits_small, splits_large);
    CHECK(r.entry == NULL);
    /* sm_90, 16-bit KV: the 64-row wgmma base, even for 3 rows (the broad
     * sweep: 8..32 heads ran it within 2% of the best at batch 8+) */
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_TILE_Q] == 64);
    CHECK(table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 0);
    /* a ragged call (the longest at least twice the mean) goes to the
     * base's length-aware form; a nearly uniform one keeps fixed splits */
    mt_dispatch_lookup(&table, 32, 2000, 32768, &r);
    CHECK(!r.entry && table.aware_fallback >= 0 && r.variant == table.aware_fallback &&
          table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 1 &&
          table.variants[r.variant].values[MT_P_NUM_SPLITS] == 1);
    mt_dispatch_lookup(&table, 32, 2000, 2800, &r);
    CHECK(table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 0);
    /* short requests: splits down to one 64-key chunk each (B=1 x 1024:
     * 16, where 256 keys a split gave 4 and ran 1.4x slower) */
    mt_dispatch_lookup(&table, 1, 1024, 0, &r);
    CHECK_MSG(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 16, "B=1 x 1024: %d splits",
              table.variants[r.variant].values[MT_P_NUM_SPLITS]);
    char why[200];
    mt_dispatch_lookup(&table, 32, 2000, 32768, &r);
    mt_dispatch_explain(&table, &r, why, sizeof why);
    CHECK_MSG(strstr(why, "ragged") != NULL, "%s", why);
    mt_dispatch_free(&table);
    /* 128 heads (64+ rows) on sm_90: the wgmma base; 32 requests x 2 tiles
     * of 64 rows fill a wave of 132 CUs with 2 splits (the tuned choice) */
    shape.n_heads = 128;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 32, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 2);
    /* ... the pair merged in a cluster (session 31: at 2 splits the cluster
     * beat the reduce kernel on 156 of the broad sweep's 190 keys) */
    CHECK_MSG(table.variants[r.variant].values[MT_P_SPLIT_REDUCE] == 1, "128 heads B=32 x 16384: split_reduce %d",
              table.variants[r.variant].values[MT_P_SPLIT_REDUCE]);
    /* ... B=1 x 1024 (two 64-row tiles): the 16-row base, 8 tiles of 16
     * splits (the broad sweep's winner there) */
    mt_dispatch_lookup(&table, 1, 1024, 0, &r);
    CHECK_MSG(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 16 && table.variants[r.variant].values[MT_P_TILE_Q] == 16,
              "128 heads, B=1 x 1024: tile_q %d, %d splits", table.variants[r.variant].values[MT_P_TILE_Q],
              table.variants[r.variant].values[MT_P_NUM_SPLITS]);
    /* ... B=8 x 1024: the wave rule's 8 splits would write 1.8x the KV
     * bytes in fp32 partials: 4 splits merged in a cluster (21.2 us
     * against 39.0 in the sweep); B=8 x 16384 (partials 0.11x the KV):
     * 8 splits through the reduce kernel */
    mt_dispatch_lookup(&table, 8, 1024, 0, &r);
    CHECK_MSG(table.variants[r.variant].values[MT_P_TILE_Q] == 64 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 4 &&
              table.variants[r.variant].values[MT_P_SPLIT_REDUCE] == 1, "128 heads, B=8 x 1024: %d splits, reduce %d",
              table.variants[r.variant].values[MT_P_NUM_SPLITS], table.variants[r.variant].values[MT_P_SPLIT_REDUCE]);
    mt_dispatch_lookup(&table, 8, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_NUM_SPLITS] == 8 && table.variants[r.variant].values[MT_P_SPLIT_REDUCE] == 0);
    CHECK(table.n_variants <= MT_MAX_HEURISTIC);
    mt_dispatch_free(&table);
    /* pages of one key (SGLang's): 128 heads take the 64-row path, which
     * gathers the rows by cp.async (its only mma=2 form there, and every
     * variant the rule lists must fit such pages); 16 heads keep the
     * mma.sync base, faster than the gather for one 16-row tile's worth */
    mt_problem_key page1 = shape;
    page1.s.page_size = 1;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &page1, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 32, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_TILE_Q] == 64 &&
          table.variants[r.variant].values[MT_P_WG_SCHEDULE] == 0);
    for (int i = 0; i < table.n_variants; i++) CHECK_OK(mt_variant_validate(&table.variants[i], &page1.s, &t));
    mt_dispatch_free(&table);
    page1.n_heads = 16;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &page1, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 32, 16384, 0, &r);
    CHECK_MSG(table.variants[r.variant].values[MT_P_MMA] == 1, "16 heads, page 1: mma=%d",
              table.variants[r.variant].values[MT_P_MMA]);
    mt_dispatch_free(&table);
    /* fp8 KV on sm_90: the transposed wgmma base (16-row tiles) */
    mt_problem_key fp8_shape = shape;
    fp8_shape.s.kv_dtype = MT_FP8_E4M3;
    fp8_shape.n_heads = 16;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &fp8_shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 128, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_TILE_Q] == 16 &&
          table.variants[r.variant].values[MT_P_NUM_SPLITS] == 1);
    mt_dispatch_free(&table);
    /* ... from 32 rows its 32-row tiles (each chunk converted once per 32
     * heads), while ragged calls keep the 16-row length-aware form */
    fp8_shape.n_heads = 32;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &fp8_shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 128, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_TILE_Q] == 32);
    mt_dispatch_lookup(&table, 32, 2000, 32768, &r);
    CHECK(r.variant == table.aware_fallback && table.variants[r.variant].values[MT_P_TILE_Q] == 16 &&
          table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 1);
    mt_dispatch_free(&table);
    /* ... from 64 rows (OCP e4m3) the 64-row path, each chunk converted
     * once per 64 heads; fnuz KV (software conversion) keeps 32-row tiles */
    fp8_shape.n_heads = 128;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &fp8_shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 128, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 2 && table.variants[r.variant].values[MT_P_TILE_Q] == 64 &&
          table.variants[r.variant].values[MT_P_KV_STAGES] == 2 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 1);
    /* ... for batches of 32+ row tiles only (B=8: 16 tiles, the 32-row
     * form with 4 splits: its first chunk's conversion is not hidden) */
    mt_dispatch_lookup(&table, 8, 4096, 0, &r);
    CHECK_MSG(table.variants[r.variant].values[MT_P_TILE_Q] == 32 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 4,
              "B=8: tile_q %d, %d splits", table.variants[r.variant].values[MT_P_TILE_Q],
              table.variants[r.variant].values[MT_P_NUM_SPLITS]);
    mt_dispatch_lookup(&table, 16, 4096, 0, &r); /* 32 tiles: the 64-row form, 4 splits (a wave of 128) */
    CHECK(table.variants[r.variant].values[MT_P_TILE_Q] == 64 && table.variants[r.variant].values[MT_P_NUM_SPLITS] == 4);
    /* a ragged call: the 64-row length-aware form */
    mt_dispatch_lookup(&table, 32, 2000, 32768, &r);
    CHECK(r.variant == table.aware_fallback && table.variants[r.variant].values[MT_P_TILE_Q] == 64 &&
          table.variants[r.variant].values[MT_P_GROUPS_PER_CU] == 1);
    mt_dispatch_free(&table);
    fp8_shape.s.kv_dtype = MT_FP8_E4M3_FNUZ;
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &fp8_shape, &t, 132, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 128, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_TILE_Q] == 32);
    mt_dispatch_free(&table);
    fp8_shape.s.kv_dtype = MT_FP8_E4M3;
    fp8_shape.n_heads = 16;
    /* fnuz KV is a key of its own: the OCP fp8 entry (same heads, batch and
     * length) is never its candidate, as it would read the cache's bytes in
     * the other encoding; the heuristic serves it */
    mt_problem_key fnuz_shape = fp8_shape;
    fnuz_shape.s.kv_dtype = MT_FP8_E4M3_FNUZ;
    CHECK_OK(mt_dispatch_build(c, NULL, 6, &fnuz_shape, &t, 132,
                               MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    CHECK_MSG(table.n_entries == 0 && table.heuristic, "fnuz took %d entries", table.n_entries);
    mt_dispatch_free(&table);
    /* ... and on sm_80 (no wgmma) the mma.sync base */
    mt_target ampere;
    CHECK_OK(mt_target_for_arch("sm_80", &ampere));
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &fp8_shape, &ampere, 108,
                               MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 128, 16384, 0, &r);
    CHECK(table.variants[r.variant].values[MT_P_MMA] == 1);
    mt_dispatch_free(&table);
    shape.n_heads = 3;
    /* on gfx942 the heuristic starts from a default that fits 64 KiB of LDS */
    mt_target amd;
    CHECK_OK(mt_target_for_arch("gfx942", &amd));
    CHECK_OK(mt_dispatch_build(c, NULL, 0, &shape, &amd, 304, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    for (int i = 0; i < table.n_variants; i++) {
        CHECK_OK(mt_variant_validate(&table.variants[i], &shape.s, &amd));
        CHECK(table.variants[i].values[MT_P_MMA] == 0); /* the MFMA path has never run: only a tuned DB picks it */
    }
    mt_dispatch_free(&table);

    /* a stored variant that does not validate is refused, naming it */
    shape.n_heads = 16;
    mt_choice bad = entry(16, 8, 4096, "tile_q=64,kv_granularity=64,num_splits=4,block_threads=128,kv_chunk=64,mma=0",
                          MT_BF16);
    CHECK_STATUS(mt_dispatch_build(&bad, NULL, 1, &shape, &t, 132,
                                   MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table), MT_ERR_CORRUPT);
    CHECK(strstr(mt_last_error(), "batch 8, length 4096") != NULL);
    mt_dispatch_free(&table);

    /* the public API: bad arguments and no GPU give a status and a message */
    CHECK(mlt_runtime_create(NULL, NULL) == MLT_ERR_INVALID_ARGUMENT);
    CHECK(strlen(mlt_last_error()) > 0);
    CHECK(mlt_plan_create(NULL, NULL, NULL) == MLT_ERR_INVALID_ARGUMENT);
    CHECK(mlt_plan_run(NULL, NULL, NULL) == MLT_ERR_INVALID_ARGUMENT);
    mlt_choice_info info;
    CHECK(mlt_plan_explain(NULL, 1, 1, 0, &info) == MLT_ERR_INVALID_ARGUMENT);
    CHECK(mlt_plan_workspace_size(NULL) == 0);
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.device = -1;
    mlt_runtime *rt = (mlt_runtime *)0x1;
    CHECK(mlt_runtime_create(&o, &rt) == MLT_ERR_INVALID_ARGUMENT && rt == NULL);
    setenv("MLA_TUNE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    setenv("MLA_TUNE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
    mlt_runtime_options_default(&o);
    mlt_status st = mlt_runtime_create(&o, &rt);
    CHECK(st == MLT_ERR_NO_BACKEND || st == MLT_ERR_NO_DEVICE);
    CHECK(rt == NULL && strstr(mlt_last_error(), "libcuda") != NULL);
    CHECK(strcmp(mlt_status_string(MLT_ERR_DATABASE), "tuning database unusable") == 0);
    return check_summary("test_dispatch");
}
