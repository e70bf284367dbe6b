/*
 * The sweep's own logic against the fake device (the worker's --fake mode:
 * real worker processes, real crashes and hangs, simulated GPU times):
 *   - a variant that crashes its worker is recorded as launch-failed, one
 *     that hangs as timeout, wrong results as wrong-result, and the sweep
 *     finishes with every other variant measured;
 *   - the ceilings the worker reports (copy and matrix) are stored;
 *   - a second run resumes: nothing re-measured; --force re-measures;
 *   - a sweep killed with SIGKILL part-way and started again ends with every
 *     job measured exactly once;
 *   - --devices all spreads keys over several workers; --shard i/n splits
 *     the plan and merge joins the parts;
 *   - every sweep measures the built-in heuristic's variant of each key
 *     (halving: with the plan's runs), and the gain over it is derived from
 *     that measurement: per measuring device, the latest ok row, the range
 *     from the spreads, "-" with the reason for a key of an older sweep;
 *   - keys are handed out costliest first (issue 30): the order function,
 *     and a plan listed cheapest first swept by one and by four workers,
 *     whose problem rows (written as a worker takes its key) come in cost
 *     order, with the same measurements and choices either way;
 *   - --dry-run works on every shipped plan without a GPU.
 * The real GPU path is exercised by the GPU suite and the device scripts.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_folder.h"
#include "kernels/mla_decode/mla_decode.h"
#include "tuner/estimate.h"
#include "tuner/heuristic_gain.h"
#include "tuner/sweep.h"

static const char *bin;

/* mla-tune with `args`, in the test's folder */
static int run(const char *args, char *out, size_t out_size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, bin, args);
    return run_capture(cmd, out, out_size);
}

static void record(mt_db *db, int64_t problem, const mt_variant *v, int64_t device, mt_measure_status status,
                   double median_ms, double spread_ms) {
    int64_t variant;
    CHECK_OK(mt_db_put_variant(db, v, &variant));
    mt_measurement m = {.problem_id = problem, .variant_id = variant, .device_id = device, .status = status,
                        .median_ms = median_ms, .min_ms = median_ms, .max_ms = median_ms, .spread_ms = spread_ms,
                        .reps = 5, .error = status == MT_MEASURE_OK ? NULL : "wrong"};
    CHECK_OK(mt_db_record(db, &m));
}

/* Issue 26: the gain over what the runtime runs untuned, derived from the
 * measurements when read (no column for it), on a database built here. */
static void test_gain_over_heuristic(void) {
    char path[600];
    path_of(path, sizeof path, "gain.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    /* two devices of one arch: the rule's split count depends on the CUs */
    mt_device_info big = {.arch = "sm_90", .name = "big", .compute_units = 132, .warp_size = 32},
                   small = {.arch = "sm_90", .name = "small", .compute_units = 8, .warp_size = 32};
    int64_t dev_big, dev_small, key_id, old_key_id, wrong_key_id;
    CHECK_OK(mt_db_put_device(db, &big, "cc", &dev_big));
    CHECK_OK(mt_db_put_device(db, &small, "cc", &dev_small));
    mt_problem_key key = {.kind = "mla_decode", .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16,
                                                      .kv_dtype = MT_BF16},
                          .n_heads = 16, .sq = 1, .batch = 1, .seq_len = 8192, .max_len = 8192, .lengths = "uniform"};
    mt_problem_key old_key = key, wrong_key = key;
    old_key.batch = 4;
    wrong_key.batch = 16;
    CHECK_OK(mt_db_put_problem(db, &key, &key_id));
    CHECK_OK(mt_db_put_problem(db, &old_key, &old_key_id));
    CHECK_OK(mt_db_put_problem(db, &wrong_key, &wrong_key_id));
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_variant rule_big, rule_small, rule_wrong, winner;
    CHECK_OK(mt_untuned_variant(&mt_family_mla_decode, &wrong_key, &t, 132, &rule_wrong));
    CHECK_OK(mt_untuned_variant(&mt_family_mla_decode, &key, &t, 132, &rule_big));
    CHECK_OK(mt_untuned_variant(&mt_family_mla_decode, &key, &t, 8, &rule_small));
    CHECK_MSG(rule_big.values[MT_P_NUM_SPLITS] != rule_small.values[MT_P_NUM_SPLITS],
              "premise: the rule splits differently on 132 and 8 CUs");
    CHECK_OK(mt_variant_default_for(&mt_family_mla_decode, &key.s, &t, &winner));
    winner.values[MT_P_NUM_SPLITS] = 8;
    /* the winner at 1.0 ms (spread 0.1) and, later, at 9.0 ms on the small
     * device (another device's rows do not count); the rule's variant for
     * the big device at 2.0 ms (spread 0.2), and a slower row of it from
     * the small device, whose rule runs another variant (not what the
     * runtime would run there) */
    record(db, key_id, &winner, dev_big, MT_MEASURE_OK, 1.0, 0.1);
    record(db, key_id, &rule_big, dev_big, MT_MEASURE_OK, 2.0, 0.2);
    record(db, key_id, &rule_big, dev_small, MT_MEASURE_OK, 5.0, 0.2);
    record(db, key_id, &winner, dev_small, MT_MEASURE_OK, 9.0, 0.9);
    /* a key of an older sweep: no measurement of the rule's variant */
    record(db, old_key_id, &winner, dev_big, MT_MEASURE_OK, 1.5, 0.1);
    /* a key where the rule's variant gave a wrong result after an ok row:
     * its latest counts, the untuned runtime is wrong there */
    record(db, wrong_key_id, &winner, dev_big, MT_MEASURE_OK, 1.5, 0.1);
    record(db, wrong_key_id, &rule_wrong, dev_big, MT_MEASURE_OK, 3.0, 0.1);
    record(db, wrong_key_id, &rule_wrong, dev_big, MT_MEASURE_WRONG_RESULT, 0, 0);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK(n == 4); /* choices are per device: the key on each, the other two keys on the big one */
    mt_gain g;
    char text[64];
    for (int i = 0; i < n; i++) {
        CHECK_OK(mt_gain_over_heuristic(db, &c[i], &g));
        mt_gain_format(&g, text, sizeof text);
        if (c[i].key.batch == 1 && c[i].compute_units == 132) {
            CHECK_MSG(fabs(g.gain - 2.0) < 1e-9 && fabs(g.heuristic_spread_ms - 0.2) < 1e-9 && !g.missing[0],
                      "gain %g over %g ms", g.gain, g.heuristic_ms);
            /* the range: 2.0 - 0.1 over 1.0 + 0.05, 2.0 + 0.1 over 1.0 - 0.05 */
            CHECK(fabs(g.gain_low - 1.9 / 1.05) < 1e-9 && fabs(g.gain_high - 2.1 / 0.95) < 1e-9);
            CHECK_MSG(strcmp(text, "2.00x (1.81-2.21)") == 0, "%s", text);
        } else if (c[i].key.batch == 16) {
            CHECK(isnan(g.gain) && strcmp(text, "-") == 0);
            CHECK_MSG(strstr(g.missing, "gave wrong-result") != NULL, "%s", g.missing);
        } else { /* the older key; the small device, whose rule's variant was not measured */
            CHECK(isnan(g.gain) && isnan(g.heuristic_ms) && strcmp(text, "-") == 0);
            CHECK_MSG(strstr(g.missing, "not measured") && strstr(g.missing, "sweeping the plan again"),
                      "%s", g.missing);
        }
    }
    free(c);
    /* the small device's own rule variant measured: there it wins (3.0
     * against 5.0 and 9.0), so the gain is 1.00x; the big device's stays
     * 2.00x */
    record(db, key_id, &rule_small, dev_small, MT_MEASURE_OK, 3.0, 0.0);
    CHECK_OK(mt_db_recompute_choices(db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    int seen = 0;
    for (int i = 0; i < n; i++)
        if (c[i].key.batch == 1) {
            CHECK_OK(mt_gain_over_heuristic(db, &c[i], &g));
            double expected = c[i].compute_units == 132 ? 2.0 : 1.0;
            CHECK_MSG(fabs(g.gain - expected) < 1e-9, "%d CUs: gain %g", c[i].compute_units, g.gain);
            seen++;
        }
    CHECK(seen == 2);
    free(c);
    mt_db_close(db);
}

/* Issue 30: a costly key handed out last runs alone at the end of a sweep
 * on several GPUs.  The keys go out costliest first. */
static void test_handout_order(void) {
    /* the order itself: costliest first, equal costs in plan order */
    const double seconds[] = {1.0, 5.0, 3.0, 5.0, 2.0, 0.5};
    int order[6], expected[] = {1, 3, 2, 4, 0, 5};
    mt_sweep_handout_order(seconds, 6, order);
    CHECK_MSG(memcmp(order, expected, sizeof order) == 0, "order %d %d %d %d %d %d", order[0], order[1], order[2],
              order[3], order[4], order[5]);
    /* the dry run's estimate for several GPUs: the keys in that order, each
     * to the worker free first.  5,4,3,3,3 on two: 5 | 4, then 3 to the
     * second (7), 3 to the first (8), 3 to the second (10); one worker: the
     * sum; as many workers as keys: the costliest key */
    /* shards (--shard I/N): the two costliest keys at odd indices went to
     * one shard by index (3 against 11 here); costliest first to the least
     * loaded shard: 1 and 3 apart, then the cheap ones alternate: 7 and 7 */
    const double costly_odd[] = {1, 5, 1, 5, 1, 1};
    int owner[6], want_owner[] = {0, 0, 1, 1, 0, 1};
    CHECK(mt_sweep_shard_keys(costly_odd, 6, 2, owner) == 0);
    CHECK_MSG(memcmp(owner, want_owner, sizeof owner) == 0, "owners %d %d %d %d %d %d", owner[0], owner[1],
              owner[2], owner[3], owner[4], owner[5]);
    int one[6];
    CHECK(mt_sweep_shard_keys(costly_odd, 6, 1, one) == 0);
    for (int i = 0; i < 6; i++) CHECK(one[i] == 0);
    CHECK(mt_sweep_shard_keys(costly_odd, 6, 0, one) == -1);
    const double five[] = {3, 5, 3, 4, 3};
    CHECK(fabs(mt_sweep_handout_makespan(five, 5, 2) - 10) < 1e-12);
    CHECK(fabs(mt_sweep_handout_makespan(five, 5, 1) - 18) < 1e-12);
    CHECK(fabs(mt_sweep_handout_makespan(five, 5, 5) - 5) < 1e-12);
    /* a plan listed cheapest first: 8 keys whose cost grows with the batch
     * (all verified on the GPU, verify_cpu_macs 0: no CPU reference's cost) */
    write_file("lpt.yaml", "name: lpt\nspaces: spaces\nproblems:\n  - heads: 16\n"
                           "    batch: [1, 2, 4, 8, 16, 32, 64, 128]\n    seq_len: 1024\n"
                           "timing: {warmup: 1, reps: 5, verify_cpu_macs: 0}\n");
    char out[65536], one_json[65536], four_json[65536], path[600];
    mt_plan plan;
    path_of(path, sizeof path, "lpt.yaml");
    CHECK_OK(mt_load_plan(path, &plan));
    for (int k = 1; k < plan.n_keys; k++)  /* the premise: the estimate grows along the plan */
        CHECK(mt_plan_key_seconds(&plan, &plan.keys[k], NULL, NULL, 0, 16) >
              mt_plan_key_seconds(&plan, &plan.keys[k - 1], NULL, NULL, 0, 16));
    mt_plan_free(&plan);
    int rc = run("sweep --config lpt.yaml --db lpt1.db --fake-device 'sleep:ms=2'", out, sizeof out);
    CHECK_MSG(rc == 0, "%s", out);
    /* one worker: a problem row is written as its key is taken, so the rows'
     * order is the hand-out order: no key before a costlier one */
    CHECK(count("lpt1.db", "SELECT count(*) FROM problems") == 8);
    CHECK_MSG(count("lpt1.db", "SELECT count(*) FROM problems a JOIN problems b ON a.id < b.id "
                               "WHERE a.batch < b.batch") == 0,
              "keys not handed out costliest first");
    /* four workers: the first four keys taken are the four costliest, and
     * the cheapest comes last of all (rows are written as keys are taken,
     * under the sweep's lock: this failed under CI's load when the row was
     * written after it) */
    rc = run("sweep --config lpt.yaml --db lpt4.db --fake-device 'sleep:ms=2' --devices all", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "on 4 GPU(s)"), "%s", out);
    CHECK_MSG(count("lpt4.db", "SELECT count(*) FROM problems WHERE id <= 4 AND batch >= 16") == 4,
              "the first four keys taken are not the four costliest");
    CHECK(count("lpt4.db", "SELECT batch FROM problems ORDER BY id DESC LIMIT 1") == 1);
    /* the results do not depend on the order: the same measurements, and the
     * same choices with the same times */
    CHECK(count("lpt1.db", "SELECT count(*) FROM measurements") ==
          count("lpt4.db", "SELECT count(*) FROM measurements"));
    CHECK(run("show --db lpt1.db --system-db lpt1.db --json", one_json, sizeof one_json) == 0);
    CHECK(run("show --db lpt4.db --system-db lpt4.db --json", four_json, sizeof four_json) == 0);
    CHECK_MSG(strcmp(one_json, four_json) == 0 && strstr(one_json, "\"batch\": 128"), "choices differ:\n%s\n%s",
              one_json, four_json);
}

#define FAULTS "crash:tile_q=32,hang:tile_q=4+num_splits=16,wrong:tile_q=8+num_splits=2"

int main(void) {
    bin = getenv("MLA_TUNE_BIN");
    if (!bin) {
        printf("SKIP: MLA_TUNE_BIN not set\n");
        return CHECK_SKIP_CODE;
    }
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-sweep-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    char out[65536];
    /* a small space (15 points: 3 tile_q x (1 + 2 x 2) split/granularity) and 2 keys */
    char spaces[600];
    snprintf(spaces, sizeof spaces, "mkdir -p '%s/spaces'", dir);
    CHECK(system(spaces) == 0);
    write_file("spaces/sm_90.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt:\n    tile_q: [4, 8, 32]\n"
                                    "    num_splits: [1, 2, 16]\n    kv_granularity: [16, 64]\n"
                                    "    block_threads: [256]\n    kv_chunk: [32]\n    mma: [0]\n    groups_per_cu: [0]\n");
    write_file("plan.yaml", "name: small\nspaces: spaces\nproblems:\n  - heads: 16\n    batch: [1, 2]\n"
                            "    seq_len: 1024\ntiming: {warmup: 1, reps: 5}\n");
    /* 15 points per key, plus two variants outside this space that every
     * sweep measures: the family default (tile_q=16, SIMT), which the choice
     * rule keeps on a tie, and the built-in heuristic's (mma=2), which the
     * gain is over: 17 jobs a key.  Per key: tile_q=32 crashes (5),
     * tile_q=4+splits=16 hangs (2; the 4 s timeout leaves room for a
     * sanitizer build to report a crash first), tile_q=8+splits=2 is wrong
     * (2), the other 8 are ok. */
    int rc = run("sweep --config plan.yaml --db a.db --fake-device '" FAULTS "' --job-timeout 4", out, sizeof out);
    CHECK_MSG(rc == 0, "sweep exit %d:\n%s", rc, out);
    CHECK_MSG(count("a.db", "SELECT count(*) FROM measurements") == 34, "%d rows\n%s",
              count("a.db", "SELECT count(*) FROM measurements"), out);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'launch-failed'") == 10);
    /* the worker died on SIGSEGV (under ASan its handler reports, then exits 1) */
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'launch-failed' AND "
                        "(error LIKE 'worker died: signal 11%' OR error LIKE 'worker exited with status 1')") == 10);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'timeout'") == 4);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'wrong-result'") == 4);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'ok'") == 16);
    CHECK(count("a.db", "SELECT count(DISTINCT problem_id || '/' || variant_id) FROM measurements") == 34);
    /* the heuristic's variant of each key was measured (16 heads, 1024 keys
     * on 132 CUs, batch 1 and 2: one or two row tiles, the 16-row wgmma
     * base with 16 splits of 64 keys) */
    CHECK(count("a.db", "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id WHERE "
                        "m.status = 'ok' AND v.params LIKE 'tile_q=16,%num_splits=16,block_threads=256,%mma=2,%'") == 2);
    /* the fake landscape's best point here is tile_q=8 with 16 splits (8
     * splits is not in this space; tile_q=8 with 2 splits is wrong) */
    CHECK(count("a.db", "SELECT count(*) FROM choices c JOIN variants v ON v.id = c.variant_id "
                        "WHERE v.params LIKE 'tile_q=8,%num_splits=16%'") == 2);
    CHECK_MSG(strstr(out, "34 measured, 0 skipped") != NULL, "%s", out);
    /* the ceilings the worker measured (the fake one says 3000 GB/s and 700
     * TFLOP/s) are stored for the report: copy and, since issue 26, matrix */
    CHECK(count("a.db", "SELECT count(*) FROM ceilings WHERE kind = 'copy_gbps' AND value = 3000") == 1);
    CHECK(count("a.db", "SELECT count(*) FROM ceilings WHERE kind = 'matrix_tflops' AND value = 700") == 1);
    CHECK(strstr(out, "gain") != NULL);

    /* resume: everything is there, nothing is measured again */
    rc = run("sweep --config plan.yaml --db a.db --fake-device '" FAULTS "' --job-timeout 4", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "0 measured, 34 skipped"));
    CHECK(count("a.db", "SELECT count(*) FROM measurements") == 34);
    /* --force re-measures every job */
    rc = run("sweep --config plan.yaml --db a.db --fake-device 'crash:tile_q=32' --force", out, sizeof out);
    CHECK(rc == 0 && count("a.db", "SELECT count(*) FROM measurements") == 68);

    /* SIGKILL part-way, then resume: each job exactly once */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' sweep --config plan.yaml --db b.db --fake-device 'sleep:ms=60' "
                              ">/dev/null 2>&1", dir, bin);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    usleep(900 * 1000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    int before = count("b.db", "SELECT count(*) FROM measurements");
    CHECK_MSG(before > 0 && before < 34, "%d rows before the kill", before);
    rc = run("sweep --config plan.yaml --db b.db --fake-device 'sleep:ms=1'", out, sizeof out);
    CHECK(rc == 0);
    CHECK_MSG(count("b.db", "SELECT count(*) FROM measurements") == 34, "%d rows after resume",
              count("b.db", "SELECT count(*) FROM measurements"));
    CHECK(count("b.db", "SELECT count(DISTINCT problem_id || '/' || variant_id) FROM measurements") == 34);
    printf("killed after %d of 34 jobs; resume measured the other %d\n", before, 34 - before);

    /* halving drops most variants after a short round: the heuristic's
     * variant is then timed once more with the plan's runs, so that its
     * gain compares like with like (the sample of 8 holds the default and
     * the heuristic's; 25% kept per round: 8, 2, 1) */
    write_file("halving.yaml", "name: halving\nspaces: spaces\nproblems:\n  - heads: 16\n    batch: [1, 2]\n"
                               "    seq_len: 1024\ntiming: {warmup: 1, reps: 8}\n"
                               "search: {strategy: halving, budget: 8, keep_percent: 25, seed: 5}\n");
    rc = run("sweep --config halving.yaml --db h.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc == 0, "%s", out);
    CHECK_MSG(count("h.db", "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id WHERE "
                            "v.params LIKE '%mma=2%' AND m.reps = 8 AND m.status = 'ok'") == 2,
              "the heuristic's variant not timed with the plan's runs:\n%s", out);
    CHECK_MSG(strstr(out, "gain (range)") && !strstr(out, "gain '-'"), "%s", out);
    /* the progress count ends where it should: every job counted once */
    const char *jobs_at = strstr(out, "~");
    int planned = jobs_at ? atoi(jobs_at + 1) : -1, measured = count("h.db", "SELECT count(*) FROM measurements");
    CHECK_MSG(planned >= measured && measured > 0, "%d jobs planned, %d measured", planned, measured);

    /* several workers; shards and merge */
    rc = run("sweep --config plan.yaml --db c.db --fake-device '' --devices all", out, sizeof out);
    CHECK_MSG(rc == 0 && count("c.db", "SELECT count(*) FROM measurements") == 34, "%s", out);
    CHECK(strstr(out, "on 4 GPU(s)") != NULL);
    rc = run("sweep --config plan.yaml --db s0.db --fake-device '' --shard 0/2", out, sizeof out);
    CHECK(rc == 0 && count("s0.db", "SELECT count(*) FROM measurements") == 17);
    rc = run("sweep --config plan.yaml --db s1.db --fake-device '' --shard 1/2", out, sizeof out);
    CHECK(rc == 0 && count("s1.db", "SELECT count(*) FROM measurements") == 17);
    rc = run("merge s0.db s1.db -o merged.db", out, sizeof out);
    CHECK_MSG(rc == 0 && count("merged.db", "SELECT count(*) FROM measurements") == 34, "%s", out);
    CHECK(count("merged.db", "SELECT count(*) FROM choices") == 2);
    rc = run("merge s0.db s1.db -o merged.db", out, sizeof out);  /* never overwrites */
    CHECK(rc == 1 && strstr(out, "already exists"));
    CHECK(run("sweep --config plan.yaml --db x.db --fake-device '' --shard 2/2", out, sizeof out) == 2);
    CHECK(strstr(out, "--shard wants I/N") != NULL);
    CHECK(run("sweep --config plan.yaml --db x.db --fake-device '' --devices 0,7", out, sizeof out) == 2);
    CHECK(strstr(out, "device 7 does not exist") != NULL);

    test_handout_order();
    test_gain_over_heuristic();

    /* dry runs of the shipped plans, for each architecture */
    const char *plans[] = {"quick", "deepseek-v3-tp8", "deepseek-v3-tp1", "kimi-k2-tp8"};
    const char *archs[] = {"sm_90", "gfx942", "gfx950"};
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 3; a++) {
            char args[1024];
            snprintf(args, sizeof args, "sweep --config '%s/plans/%s.yaml' --dry-run --arch %s", MT_CONFIG_DIR, plans[i],
                     archs[a]);
            rc = run(args, out, sizeof out);
            CHECK_MSG(rc == 0 && strstr(out, "distinct compiles") && strstr(out, "on several GPUs (--devices): 2: about"),
                      "%s %s: %s", plans[i], archs[a], out);
        }
    /* no GPU and no fake: a plain message, non-zero */
    snprintf(cmd, sizeof cmd, "cd '%s' && MLA_TUNE_CUDA_DRIVER=/nonexistent MLA_TUNE_HIP_RUNTIME=/nonexistent '%s' "
                              "sweep --config plan.yaml --db nogpu.db 2>&1", dir, bin);
    CHECK_MSG(run_capture(cmd, out, sizeof out) == 1 && strstr(out, "no GPU"), "%s", out);
    CHECK(count("nogpu.db", "SELECT 1") == -1 || count("nogpu.db", "SELECT count(*) FROM measurements") <= 0);

    /* issue 22: a plan of length mixes.  Each mix is its own key (with its
     * mean and longest recorded), the workers make the same lengths from
     * the name, and the choices come back per mix */
    write_file("spaces/sm_90.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt:\n    tile_q: [16]\n"
                                    "    num_splits: [1, 4]\n    kv_granularity: [16]\n    block_threads: [256]\n"
                                    "    kv_chunk: [32]\n    mma: [0]\n    groups_per_cu: [0, 1]\n");
    write_file("ragged.yaml", "name: ragged\nspaces: spaces\nproblems:\n  - heads: 16\n    batch: 8\n"
                              "    seq_len: 2016\n    lengths: [uniform, 'one-long:32768:1024', long-tail]\n"
                              "timing: {warmup: 1, reps: 3}\n");
    rc = run("sweep --config ragged.yaml --db r.db --fake-device 'sleep:ms=1'", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "(one-long:32768:1024)"), "sweep exit %d:\n%s", rc, out);
    CHECK(count("r.db", "SELECT count(*) FROM problems") == 3);
    CHECK(count("r.db", "SELECT max_len FROM problems WHERE lengths = 'one-long:32768:1024'") == 32768);
    CHECK(count("r.db", "SELECT seq_len FROM problems WHERE lengths = 'one-long:32768:1024'") == 4992);
    CHECK(count("r.db", "SELECT count(*) FROM problems WHERE lengths LIKE 'long-tail:%' AND max_len >= 16384") == 1);
    CHECK(count("r.db", "SELECT count(*) FROM choices") == 3);
    /* on a ragged key the runtime's rule runs its length-aware variant:
     * that is the one measured for the gain */
    CHECK(count("r.db", "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN problems p "
                        "ON p.id = m.problem_id WHERE p.lengths <> 'uniform' AND v.params LIKE '%mma=2,%groups_per_cu=1'")
          == 2);
    rc = run("sweep --config ragged.yaml --db r.db --fake-device 'sleep:ms=1'", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "0 measured, 12 skipped"), "resume:\n%s", out);
    rc = run("lookup --db r.db --arch sm_90 --heads 16 --batch 8 --seq-len 4992 --max-len 32768", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "exact key (batch 8, one-long:32768:1024"), "%s", out);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_sweep");
}
