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
 *   - keys are handed out costliest first (issue 30): the order function,
 *     and a plan listed cheapest first swept by one and by four workers,
 *     whose problem rows (written as a worker takes its key) come in cost
 *     order, with the same measurements and choices either way;
 *   - --dry-run works on every shipped plan without a GPU.
 * The real GPU path is exercised by the GPU suite and the device scripts.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_folder.h"
#include "tuner/sweep.h"

static const char *bin;

/* mla-tune with `args`, in the test's folder */
static int run(const char *args, char *out, size_t out_size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, bin, args);
    return run_capture(cmd, out, out_size);
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
        CHECK(mt_plan_key_seconds(&plan, &plan.keys[k], 16) > mt_plan_key_seconds(&plan, &plan.keys[k - 1], 16));
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
     * the cheapest comes last of all */
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
    /* 15 points per key, plus the family default (tile_q=16, outside this
     * space) which every sweep measures for the gain figure: 16 jobs a key.
     * Per key: tile_q=32 crashes (5), tile_q=4+splits=16 hangs (2; the 4 s
     * timeout leaves room for a sanitizer build to report a crash first),
     * tile_q=8+splits=2 is wrong (2), the other 7 are ok. */
    int rc = run("sweep --config plan.yaml --db a.db --fake-device '" FAULTS "' --job-timeout 4", out, sizeof out);
    CHECK_MSG(rc == 0, "sweep exit %d:\n%s", rc, out);
    CHECK_MSG(count("a.db", "SELECT count(*) FROM measurements") == 32, "%d rows\n%s",
              count("a.db", "SELECT count(*) FROM measurements"), out);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'launch-failed'") == 10);
    /* the worker died on SIGSEGV (under ASan its handler reports, then exits 1) */
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'launch-failed' AND "
                        "(error LIKE 'worker died: signal 11%' OR error LIKE 'worker exited with status 1')") == 10);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'timeout'") == 4);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'wrong-result'") == 4);
    CHECK(count("a.db", "SELECT count(*) FROM measurements WHERE status = 'ok'") == 14);
    CHECK(count("a.db", "SELECT count(DISTINCT problem_id || '/' || variant_id) FROM measurements") == 32);
    /* the fake landscape's best point here is tile_q=8 with 16 splits (8
     * splits is not in this space; tile_q=8 with 2 splits is wrong) */
    CHECK(count("a.db", "SELECT count(*) FROM choices c JOIN variants v ON v.id = c.variant_id "
                        "WHERE v.params LIKE 'tile_q=8,%num_splits=16%'") == 2);
    CHECK_MSG(strstr(out, "32 measured, 0 skipped") != NULL, "%s", out);
    /* the ceilings the worker measured (the fake one says 3000 GB/s and 700
     * TFLOP/s) are stored for the report: copy and, since issue 26, matrix */
    CHECK(count("a.db", "SELECT count(*) FROM ceilings WHERE kind = 'copy_gbps' AND value = 3000") == 1);
    CHECK(count("a.db", "SELECT count(*) FROM ceilings WHERE kind = 'matrix_tflops' AND value = 700") == 1);
    CHECK(strstr(out, "gain") != NULL);

    /* resume: everything is there, nothing is measured again */
    rc = run("sweep --config plan.yaml --db a.db --fake-device '" FAULTS "' --job-timeout 4", out, sizeof out);
    CHECK(rc == 0 && strstr(out, "0 measured, 32 skipped"));
    CHECK(count("a.db", "SELECT count(*) FROM measurements") == 32);
    /* --force re-measures every job */
    rc = run("sweep --config plan.yaml --db a.db --fake-device 'crash:tile_q=32' --force", out, sizeof out);
    CHECK(rc == 0 && count("a.db", "SELECT count(*) FROM measurements") == 64);

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
    CHECK_MSG(before > 0 && before < 32, "%d rows before the kill", before);
    rc = run("sweep --config plan.yaml --db b.db --fake-device 'sleep:ms=1'", out, sizeof out);
    CHECK(rc == 0);
    CHECK_MSG(count("b.db", "SELECT count(*) FROM measurements") == 32, "%d rows after resume",
              count("b.db", "SELECT count(*) FROM measurements"));
    CHECK(count("b.db", "SELECT count(DISTINCT problem_id || '/' || variant_id) FROM measurements") == 32);
    printf("killed after %d of 32 jobs; resume measured the other %d\n", before, 32 - before);

    /* several workers; shards and merge */
    rc = run("sweep --config plan.yaml --db c.db --fake-device '' --devices all", out, sizeof out);
    CHECK_MSG(rc == 0 && count("c.db", "SELECT count(*) FROM measurements") == 32, "%s", out);
    CHECK(strstr(out, "on 4 GPU(s)") != NULL);
    rc = run("sweep --config plan.yaml --db s0.db --fake-device '' --shard 0/2", out, sizeof out);
    CHECK(rc == 0 && count("s0.db", "SELECT count(*) FROM measurements") == 16);
    rc = run("sweep --config plan.yaml --db s1.db --fake-device '' --shard 1/2", out, sizeof out);
    CHECK(rc == 0 && count("s1.db", "SELECT count(*) FROM measurements") == 16);
    rc = run("merge s0.db s1.db -o merged.db", out, sizeof out);
    CHECK_MSG(rc == 0 && count("merged.db", "SELECT count(*) FROM measurements") == 32, "%s", out);
    CHECK(count("merged.db", "SELECT count(*) FROM choices") == 2);
    rc = run("merge s0.db s1.db -o merged.db", out, sizeof out);  /* never overwrites */
    CHECK(rc == 1 && strstr(out, "already exists"));
    CHECK(run("sweep --config plan.yaml --db x.db --fake-device '' --shard 2/2", out, sizeof out) == 2);
    CHECK(strstr(out, "--shard wants I/N") != NULL);
    CHECK(run("sweep --config plan.yaml --db x.db --fake-device '' --devices 0,7", out, sizeof out) == 2);
    CHECK(strstr(out, "device 7 does not exist") != NULL);

    test_handout_order();

    /* dry runs of the shipped plans, for each architecture */
    const char *plans[] = {"quick", "deepseek-v3-tp8", "deepseek-v3-tp1", "kimi-k2-tp8"};
    const char *archs[] = {"sm_90", "gfx942", "gfx950"};
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 3; a++) {
            char args[1024];
            snprintf(args, sizeof args, "sweep --config '%s/plans/%s.yaml' --dry-run --arch %s", MT_CONFIG_DIR, plans[i],
                     archs[a]);
            rc = run(args, out, sizeof out);
            CHECK_MSG(rc == 0 && strstr(out, "distinct compiles"), "%s %s: %s", plans[i], archs[a], out);
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
    rc = run("sweep --config ragged.yaml --db r.db --fake-device 'sleep:ms=1'", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "0 measured, 9 skipped"), "resume:\n%s", out);
    rc = run("lookup --db r.db --arch sm_90 --heads 16 --batch 8 --seq-len 4992 --max-len 32768", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "exact key (batch 8, one-long:32768:1024"), "%s", out);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_sweep");
}
