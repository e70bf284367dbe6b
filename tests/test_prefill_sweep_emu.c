/*
 * A prefill sweep with the real worker (not the fake device) on the CPU
 * emulation of gfx942 (MLA_TUNE_BACKEND=hip-cpu), then bench --prefill on
 * its DB: the worker's prefill path end to end on a host with no GPU -
 * inputs, the CPU reference over the whole call and over sampled rows
 * (verify_cpu_macs: 0), NaN-poisoned outputs compared, events, rows
 * stored - and the runtime's dispatch by what it stored.  Every variant of
 * the small space must verify (SIMT and MFMA, causal with and without
 * context, non-causal over a chunk); a wrong worker (rows misplaced, the
 * wrong keys seen by a sampled row, the mask mixed up) fails them, and
 * kernels made wrong on purpose (scores 5% off) fail on every variant.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "test_folder.h"

static const char *bin;

static int run(const char *args, char *out, size_t out_size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && MLA_TUNE_BACKEND=hip-cpu '%s' %s 2>&1", dir, bin, args);
    return run_capture(cmd, out, out_size);
}

static void sweep_and_check(const char *plan, const char *db, int keys) {
    static char out[65536];
    char args[600];
    snprintf(args, sizeof args, "sweep --config %s --db %s --job-timeout 300", plan, db);
    int rc = run(args, out, sizeof out);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", plan, rc, out);
    int all = count(db, "SELECT count(*) FROM measurements");
    int ok = count(db, "SELECT count(*) FROM measurements WHERE status = 'ok' AND median_ms > 0");
    CHECK_MSG(all >= keys * 4 && ok == all, "%s: %d of %d ok: %s", plan, ok, all, out);
    CHECK(count(db, "SELECT count(*) FROM problems WHERE kind = 'mla_prefill'") == keys);
}

int main(void) {
    bin = getenv("MLA_TUNE_BIN");
    if (!bin) {
        printf("SKIP: MLA_TUNE_BIN not set\n");
        return CHECK_SKIP_CODE;
    }
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-prefill-sweep-emu-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    char out[65536];
    if (run("devices", out, sizeof out) != 0) {
        printf("SKIP: no CPU emulation here: %s\n", out);
        return CHECK_SKIP_CODE;
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/spaces'", dir);
    CHECK(system(cmd) == 0);
    /* SIMT and MFMA (16 rows per wave, one wave), two key tiles */
    write_file("spaces/gfx942.yaml", "arch: gfx942\nfamilies:\n  mla_prefill:\n    tile_q: [16]\n"
                                     "    kv_tile: [16, 32]\n    block_threads: [64]\n    mma: [0, 1]\n");
    const char *problems = "problems:\n  - kind: mla_prefill\n    heads: 2\n    tokens: 24\n    requests: 2\n"
                           "    context: [0, 40]\n  - kind: mla_prefill\n    heads: 2\n    tokens: 24\n"
                           "    requests: 2\n    context: 40\n    causal: false\n";
    char text[1200];
    snprintf(text, sizeof text, "name: whole\nspaces: spaces\n%stiming: {warmup: 1, reps: 3}\n", problems);
    write_file("whole.yaml", text);
    snprintf(text, sizeof text, "name: sampled\nspaces: spaces\n%stiming: {warmup: 1, reps: 3, verify_cpu_macs: 0}\n",
             problems);
    write_file("sampled.yaml", text);
    sweep_and_check("whole.yaml", "whole.db", 3);
    sweep_and_check("sampled.yaml", "sampled.db", 3);
    /* bench through the runtime with that DB: the plan's keys match */
    int rc = run("bench --prefill --db whole.db --heads 2 --tokens 48 --requests 2 --context 0,40 --reps 3 "
                 "--warmup 1 --no-ceilings", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "matching causal prefill key (2 requests x 24 new tokens over 24 keys") &&
                  !strstr(out, "FAILED") && !strstr(out, "NaN"), "bench: %d: %s", rc, out);
    rc = run("bench --prefill --db whole.db --heads 2 --tokens 48 --requests 2 --context 40 --non-causal --reps 3 "
             "--warmup 1 --no-ceilings", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "matching non-causal prefill key (2 requests x 24 new tokens over 40 keys"),
              "bench: %d: %s", rc, out);
    /* the control: kernels whose scores are 5% off (MLA_TUNE_KERNEL_DIR)
     * fail verification on every variant, whole and sampled, and none is
     * chosen */
    snprintf(cmd, sizeof cmd,
             "cp -r '%s/kernels' '%s/broken' && sed -i 's/p.scale \\* PF_LOG2E;/p.scale * PF_LOG2E * 1.05f;/' "
             "'%s/broken/mla_prefill/simt.cu' '%s/broken/mla_prefill/mfma.cu' && "
             "grep -q '1.05f' '%s/broken/mla_prefill/simt.cu' && grep -q '1.05f' '%s/broken/mla_prefill/mfma.cu'",
             MT_SOURCE_DIR, dir, dir, dir, dir, dir);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    const char *plans[] = {"whole.yaml", "sampled.yaml"};
    for (int i = 0; i < 2; i++) {
        char args[900];
        snprintf(args, sizeof args, "sweep --config %s --db broken-%d.db --job-timeout 300", plans[i], i);
        char env_args[2048];
        snprintf(env_args, sizeof env_args, "MLA_TUNE_KERNEL_DIR='%s/broken' '%s' %s", dir, bin, args);
        snprintf(cmd, sizeof cmd, "cd '%s' && MLA_TUNE_BACKEND=hip-cpu %s 2>&1", dir, env_args);
        run_capture(cmd, out, sizeof out);
        char db[32];
        snprintf(db, sizeof db, "broken-%d.db", i);
        int all = count(db, "SELECT count(*) FROM measurements");
        int wrong = count(db, "SELECT count(*) FROM measurements WHERE status = 'wrong-result'");
        CHECK_MSG(all >= 12 && wrong == all, "%s with broken kernels: %d of %d wrong: %s", plans[i], wrong, all, out);
        CHECK(count(db, "SELECT count(*) FROM choices") == 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_prefill_sweep_emu");
}
