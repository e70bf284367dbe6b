/*
 * mla-tune holdout (tuner/holdout.h) on a database written here with known
 * times: three keys of one shape whose best split counts keep batch x
 * splits at 128, so each held-out key's nearest winner is slower as
 * measured and as fast as the key's own choice rescaled; the latest row
 * of a variant counts (a later failure makes it untimed); the built-in
 * rule's variant, timed where a sweep timed it; a shape with one key falls
 * to the rule; the head filter.
 */
#define _GNU_SOURCE
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "db_fixture.h"
#include "tuner/heuristic_gain.h"
#include "tuner/holdout.h"

#define SIMT(splits) "tile_q=16,kv_granularity=64,num_splits=" #splits ",block_threads=256,kv_chunk=32,mma=0"

static const mt_holdout_row *find(const mt_holdout_row *rows, int n, int heads, int batch) {
    for (int i = 0; i < n; i++)
        if (rows[i].key.key.n_heads == heads && rows[i].key.key.batch == batch) return &rows[i];
    return NULL;
}

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

int main(void) {
    char path[] = "/tmp/mla-tune-test-holdout-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    unlink(path);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    int64_t d = fixture_device(db, "nvrtc-13.0");
    /* batch 8: 16 splits best; 16: 8; 32: 4 (ms) */
    fixture_record(db, d, 16, 8, 4096, SIMT(16), MT_MEASURE_OK, 1.0);
    fixture_record(db, d, 16, 8, 4096, SIMT(8), MT_MEASURE_OK, 1.3);
    /* the latest row of 8 splits at batch 8 failed */
    fixture_record(db, d, 16, 8, 4096, SIMT(8), MT_MEASURE_TIMEOUT, 0);
    fixture_record(db, d, 16, 8, 4096, SIMT(4), MT_MEASURE_OK, 1.8);
    fixture_record(db, d, 16, 16, 4096, SIMT(16), MT_MEASURE_OK, 3.0);
    fixture_record(db, d, 16, 16, 4096, SIMT(8), MT_MEASURE_OK, 2.0);
    fixture_record(db, d, 16, 16, 4096, SIMT(4), MT_MEASURE_OK, 2.4);
    fixture_record(db, d, 16, 32, 4096, SIMT(16), MT_MEASURE_OK, 8.0);
    fixture_record(db, d, 16, 32, 4096, SIMT(8), MT_MEASURE_OK, 5.6);
    fixture_record(db, d, 16, 32, 4096, SIMT(4), MT_MEASURE_OK, 4.0);
    fixture_record(db, d, 128, 8, 4096, SIMT(4), MT_MEASURE_OK, 9.0); /* alone in its shape */
    /* what the built-in rule runs at batch 16, timed there as a sweep does */
    mt_target t;
    mt_variant rule;
    char rule_params[200];
    mt_problem_key k16 = {.kind = "mla_decode",
                          .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                          .n_heads = 16, .sq = 1, .batch = 16, .seq_len = 4096};
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    CHECK_OK(mt_untuned_variant(&mt_family_mla_decode, &k16, &t, 132, &rule));
    mt_variant_format(&rule, rule_params, sizeof rule_params);
    fixture_record(db, d, 16, 16, 4096, rule_params, MT_MEASURE_OK, 2.2);
    CHECK_OK(mt_db_recompute_choices(db));

    mt_holdout_row *rows = NULL;
    int n = 0;
    CHECK_OK(mt_holdout(db, NULL, 0, &rows, &n));
    CHECK(n == 4);
    /* batch 16: as near 8 as 32, the first in order (8) answers: its 16
     * splits take 1.5x, rescaled to 8 the key's own choice */
    const mt_holdout_row *r = find(rows, n, 16, 16);
    CHECK(r && r->nearest && r->nearest_batch == 8 && near(r->distance, 1.0));
    CHECK(r && near(r->key.median_ms, 2.0) && near(r->as_measured_ms, 3.0) && near(r->runs_ms, 2.0));
    CHECK_MSG(r && r->rescaled && strstr(r->change, "num_splits 16->8") && strstr(r->runs, "num_splits=8,"), "%s",
              r ? r->change : "");
    CHECK_MSG(r && strcmp(r->rule, rule_params) == 0 && near(r->rule_ms, 2.2), "rule %s", r ? r->rule : "");
    /* batch 32 from 16: 8 splits as measured (1.4x), 4 rescaled */
    r = find(rows, n, 16, 32);
    CHECK(r && r->nearest_batch == 16 && near(r->as_measured_ms, 5.6) && near(r->runs_ms, 4.0));
    CHECK(r && r->rule[0] && isnan(r->rule_ms)); /* the rule's variant was not timed at batch 32 */
    /* batch 8 from 16: 8 splits' latest row at batch 8 failed: untimed;
     * rescaled to 16 splits, the choice */
    r = find(rows, n, 16, 8);
    CHECK(r && r->nearest_batch == 16 && isnan(r->as_measured_ms) && near(r->runs_ms, 1.0));
    /* 128 heads: no other key, the built-in rule, never timed here */
    r = find(rows, n, 128, 8);
    CHECK(r && !r->nearest && !r->rescaled && isnan(r->runs_ms) && strcmp(r->as_measured, r->runs) == 0);
    free(rows);
    CHECK_OK(mt_holdout(db, "sm_90", 128, &rows, &n));
    CHECK(n == 1 && rows[0].key.key.n_heads == 128);
    free(rows);
    CHECK_OK(mt_holdout(db, "gfx942", 0, &rows, &n));
    CHECK(n == 0);
    free(rows);
    mt_db_close(db);
    unlink(path);
    return check_summary("test_holdout");
}
