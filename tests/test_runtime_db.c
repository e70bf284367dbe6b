/*
 * How mlt_runtime_create reads its databases and cache (issue 25), on a host
 * with no GPU: a stub CUDA driver (stub_libcuda.c, MLA_TUNE_CUDA_DRIVER)
 * stands in for one, as the attack's did.
 *   1. a WAL-mode system DB installed in a folder the user cannot write
 *      (a root-owned PREFIX/share/mla-tune) is read by an unprivileged
 *      user, and nothing is left beside it;
 *  11. an unwritable cache folder does not stop the runtime;
 *  13. MLA_TUNE_DB naming a file that does not exist is an error;
 *  "Also build", validators: a choice measured from other kernel text or
 *      with another compiler is ignored and said once; one from before
 *      validators (the shipped DBs) is trusted, noted at the info level;
 *      recorded calls are counted per plan and reach the user DB at
 *      mlt_plan_destroy, opt-in (environment or mlt_runtime_record_calls).
 * Skipped (77) when the runtime cannot start even from a good file (no
 * NVRTC for the JIT's compiler version).
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "db_query.h"
#include "db/db.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/include/mlatune.h"
#include "stub_driver.h"

static char dir[256];
static char compiler[64] = "nvrtc";  /* the runtime's, once known: the validator the runtime compares */

/* A DB with one choice measured from kernel text of hash `source_hash`
 * (NULL: before validators). */
static void make_db_hashed(const char *path, const char *source_hash) {
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_device_info dev = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    snprintf(dev.name, sizeof dev.name, "Test GPU");
    mt_problem_key k = {.kind = "mla_decode",
            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
            .n_heads = 16, .sq = 1,
                        .batch = 8, .seq_len = 1024};
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    int64_t d = 0, p = 0, var = 0;
    CHECK_OK(mt_db_put_device(db, &dev, compiler, &d));
    CHECK_OK(mt_db_put_problem(db, &k, &p));
    CHECK_OK(mt_db_put_variant(db, &v, &var));
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = d, .status = MT_MEASURE_OK,
                        .median_ms = 1.0, .min_ms = 1.0, .max_ms = 1.0, .reps = 20, .source_hash = source_hash};
    CHECK_OK(mt_db_record(db, &m));
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
}

static void make_db(const char *path) { make_db_hashed(path, NULL); }

/* mlt_runtime_create's stderr at `level`, into buf. */
static mlt_status create_logged(const char *user_db, const char *system_db, mlt_log_level level, char *buf,
                                size_t size) {
    char log[400];
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(log, "w");
    dup2(fileno(f), 2);
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.user_db = user_db;
    o.system_db = system_db;
    o.cache_dir = "";
    o.log_level = level;
    mlt_runtime *rt = NULL;
    mlt_status st = mlt_runtime_create(&o, &rt);
    mlt_runtime_destroy(rt);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    f = fopen(log, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return st;
}

static int occurrences(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

/* Validators (issue 25, "Also build"): a choice measured from other kernel
 * text is ignored, said once; one written before validators is trusted,
 * noted at the info level only. */
static void test_validators(const char *user, const char *shipped) {
    mt_target t;
    mt_variant v;
    char now[65], log[4096];
    mt_variant_default(&mt_family_mla_decode, &v);
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    const mt_problem_static s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    CHECK_OK(mt_build_source_hash(&v, &s, &t, now)); /* make_db_hashed's problem */
    char stale[400], valid[400];
    snprintf(stale, sizeof stale, "%s/stale.db", dir);
    snprintf(valid, sizeof valid, "%s/valid.db", dir);
    make_db_hashed(stale, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    make_db_hashed(valid, now);
    CHECK(create_logged(stale, valid, MLT_LOG_WARN, log, sizeof log) == MLT_OK);
    CHECK_MSG(occurrences(log, "ignoring 1 tuning entries") == 1 && strstr(log, "show --stale") &&
              strstr(log, "1 from the user DB"), "%s", log);
    CHECK(create_logged(user, valid, MLT_LOG_WARN, log, sizeof log) == MLT_OK);
    CHECK_MSG(strstr(log, "ignoring") == NULL, "%s", log);
    /* a DB from before validators (the shipped ones): trusted, noted at info */
    CHECK(create_logged(user, shipped, MLT_LOG_WARN, log, sizeof log) == MLT_OK);
    CHECK_MSG(log[0] == '\0', "%s", log);
    CHECK(create_logged(user, shipped, MLT_LOG_INFO, log, sizeof log) == MLT_OK);
    CHECK_MSG(strstr(log, "2 tuning entries for sm_90 carry no validators") && strstr(log, "1 tuning entries from"),
              "%s", log);
    /* another compiler than the runtime's: stale too */
    char old_compiler[64];
    snprintf(old_compiler, sizeof old_compiler, "%s", compiler);
    snprintf(compiler, sizeof compiler, "nvrtc-0.1");
    make_db_hashed(stale, now);
    snprintf(compiler, sizeof compiler, "%s", old_compiler);
    CHECK(create_logged(stale, valid, MLT_LOG_WARN, log, sizeof log) == MLT_OK);
    CHECK_MSG(strstr(log, "1: another compiler"), "%s", log);
}

/* mlt_runtime_create with these databases and cache folder; its status. */
static mlt_status create(const char *user_db, const char *system_db, const char *cache_dir) {
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.user_db = user_db;
    o.system_db = system_db;
    o.cache_dir = cache_dir;
    mlt_runtime *rt = NULL;
    mlt_status st = mlt_runtime_create(&o, &rt);
    if (st == MLT_OK) mlt_runtime_destroy(rt);
    return st;
}

static int exists(const char *path, const char *suffix) {
    char p[700];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

/* Runs `batch` x mean `len` (MLT_LENGTHS_UNKNOWN: unknown) `times` on a
 * plan; the stub launches nothing, so the pointers are placeholders. */
static void run_calls(mlt_plan *plan, int batch, int len, int times) {
    static char memory[1 << 16] __attribute__((aligned(16)));
    mlt_decode_args a = {.batch = batch, .seq_len_hint = len, .max_blocks_per_seq = 1, .q = memory,
                         .kv_cache = memory, .block_table = (const int32_t *)memory,
                         .seq_lens = (const int32_t *)memory, .out = memory, .lse = (float *)memory,
                         .workspace = memory, .workspace_size = mlt_plan_workspace_size(plan)};
    for (int i = 0; i < times; i++) CHECK_MSG(mlt_plan_run(plan, &a, NULL) == MLT_OK, "%s", mlt_last_error());
}

static mlt_plan *plan_for(mlt_runtime *rt, int heads) {
    mlt_decode_problem p = {.n_heads = heads, .sq = 1, .d = 576, .dl = 512, .page_size = 64, .q_dtype = MLT_BF16,
                            .kv_dtype = MLT_BF16, .softmax_scale = 0.04f, .kv_scale = 1, .max_batch = 64};
    mlt_plan *plan = NULL;
    CHECK_MSG(mlt_plan_create(rt, &p, &plan) == MLT_OK, "%s", mlt_last_error());
    return plan;
}

/* Recorded calls (issue 25, "Also build"), in a child with the stub as
 * NVRTC too (plans without compiling): with MLA_TUNE_RECORD_CALLS=1 each
 * call dispatched by the nearest key or the heuristic is counted and the
 * counts reach the user DB at mlt_plan_destroy; exact-key and unknown-length
 * calls are not counted; without it nothing is written;
 * mlt_runtime_record_calls turns it on too. */
static int recorded_calls_child(const char *stub) {
    setenv("MLA_TUNE_NVRTC", stub, 1);
    /* a system DB measured with this (stub) compiler: valid here */
    char shipped[400];
    snprintf(shipped, sizeof shipped, "%s/stub-compiler.db", dir);
    snprintf(compiler, sizeof compiler, "nvrtc-99.0");
    make_db(shipped);
    /* the default user DB, as on a machine that never had one: neither it
     * nor its folder exists; recording makes both */
    char xdg[400], user[500];
    snprintf(xdg, sizeof xdg, "%s/xdg-data", dir);
    snprintf(user, sizeof user, "%s/mla-tune/tuning.db", xdg);
    setenv("XDG_DATA_HOME", xdg, 1);
    unsetenv("MLA_TUNE_DB");
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.system_db = shipped;
    o.cache_dir = "";
    o.log_level = MLT_LOG_QUIET;
    /* off by default: nothing is written */
    mlt_runtime *rt = NULL;
    CHECK(mlt_runtime_create(&o, &rt) == MLT_OK);
    mlt_plan *plan = rt ? plan_for(rt, 16) : NULL;
    if (plan) run_calls(plan, 32, 1000, 3);
    mlt_plan_destroy(plan);
    mlt_runtime_destroy(rt);
    CHECK(access(user, F_OK) != 0);
    /* on through the environment */
    setenv("MLA_TUNE_RECORD_CALLS", "1", 1);
    rt = NULL;
    CHECK_MSG(mlt_runtime_create(&o, &rt) == MLT_OK, "%s", mlt_last_error());
    mlt_plan *tuned = rt ? plan_for(rt, 16) : NULL, *untuned = rt ? plan_for(rt, 128) : NULL;
    if (tuned && untuned) {
        run_calls(tuned, 8, 1024, 5);                   /* the shipped DB's exact key: not counted */
        run_calls(tuned, 32, 1000, 7);                  /* nearest: counted as batch 32, mean 1024 */
        run_calls(tuned, 32, MLT_LENGTHS_UNKNOWN, 2);   /* unknown lengths: not counted */
        run_calls(untuned, 4, 300, 2);                  /* no entry for 128 heads: the heuristic */
    }
    mlt_plan_destroy(tuned);
    mlt_plan_destroy(untuned);
    mlt_runtime_destroy(rt);
    CHECK(db_query_int(user, "SELECT count(*) FROM recorded_calls") == 2);
    CHECK(db_query_int(user, "SELECT calls FROM recorded_calls WHERE n_heads = 16 AND batch = 32 AND seq_len = 1024 "
                             "AND max_len = 1024 AND how = 'nearest' AND compute_units = 132") == 7);
    CHECK(db_query_int(user, "SELECT calls FROM recorded_calls WHERE n_heads = 128 AND batch = 4 AND seq_len = 256 "
                             "AND how = 'heuristic'") == 2);
    /* on through the API, off in the environment; counts add up */
    unsetenv("MLA_TUNE_RECORD_CALLS");
    CHECK(mlt_runtime_create(&o, &rt) == MLT_OK);
    CHECK(mlt_runtime_record_calls(rt, 1) == MLT_OK);
    plan = rt ? plan_for(rt, 16) : NULL;
    if (plan) run_calls(plan, 32, 1000, 4);
    mlt_plan_destroy(plan);
    mlt_runtime_destroy(rt);
    CHECK(db_query_int(user, "SELECT calls FROM recorded_calls WHERE n_heads = 16 AND batch = 32") == 11);
    CHECK(mlt_runtime_record_calls(NULL, 1) == MLT_ERR_INVALID_ARGUMENT);
    return check_summary("test_runtime_db (recorded calls)");
}

int main(void) {
    if (!stub_driver_use()) return CHECK_SKIP_CODE;
    const char *stub = getenv("MLA_TUNE_STUB_CUDA");  /* also the recorder child's stub compiler */
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-runtime-db-XXXXXX");
    if (!mkdtemp(dir) || chmod(dir, 0755) != 0) return 1;
    char share[300], shipped[400], user[400], cache[400];
    snprintf(share, sizeof share, "%s/share", dir);
    snprintf(shipped, sizeof shipped, "%s/tuning.db", share);
    snprintf(user, sizeof user, "%s/user.db", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    CHECK(mkdir(share, 0755) == 0);

    mt_backend *nvrtc = NULL;  /* the compiler the runtime will report */
    if (mt_backend_open_for_arch("sm_90", &nvrtc) == MT_OK)
        mt_backend_compiler_version(nvrtc, compiler, sizeof compiler);
    mt_backend_close(nvrtc);
    mt_clear_error();
    make_db(shipped);
    make_db(user);

    /* the baseline: a good file in a folder anyone may write */
    mlt_status st = create(user, shipped, cache);
    if (st != MLT_OK) {
        printf("SKIP: the runtime does not start with the stub driver: %s\n", mlt_last_error());
        return CHECK_SKIP_CODE;
    }

    test_validators(user, shipped);
    fflush(stdout);
    pid_t recorder = fork();
    if (recorder == 0) _exit(recorded_calls_child(stub));
    int recorded_status = 0;
    waitpid(recorder, &recorded_status, 0);
    CHECK_MSG(WIFEXITED(recorded_status) && WEXITSTATUS(recorded_status) == 0, "recorded calls: exit %d",
              WEXITSTATUS(recorded_status));

    /* reading left nothing beside the file */
    CHECK(!exists(shipped, "-wal") && !exists(shipped, "-shm"));

    /* 1: the installed system DB, read by a user who cannot write its folder
     * (as installed: no -wal or -shm beside it) */
    char side[500];
    snprintf(side, sizeof side, "%s-wal", shipped);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", shipped);
    unlink(side);
    CHECK(chmod(share, 0555) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
        if (access(share, W_OK) == 0) _exit(77);  /* (still allowed to write: nothing to show) */
        setenv("XDG_DATA_HOME", "/nonexistent", 1);  /* no user DB */
        mlt_status s = create(NULL, shipped, "");
        if (s != MLT_OK) fprintf(stderr, "runtime as an unprivileged user: %s\n", mlt_last_error());
        _exit(s == MLT_OK ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("read-only system DB: skipped (this process cannot become a user without write access)\n");
    else
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read-only system DB: exit %d", WEXITSTATUS(status));
    CHECK(!exists(shipped, "-wal") && !exists(shipped, "-shm"));
    chmod(share, 0755);

    /* 11: a cache folder that cannot be made: no disk cache, no failure */
    CHECK_MSG(create(user, shipped, "/proc/mla-tune-no-cache") == MLT_OK, "%s", mlt_last_error());

    /* 13: a mistyped MLA_TUNE_DB fails, naming the file */
    char typo[400];
    snprintf(typo, sizeof typo, "%s/tunning.db", dir);
    setenv("MLA_TUNE_DB", typo, 1);
    CHECK(create(NULL, shipped, cache) != MLT_OK);
    CHECK_MSG(strstr(mlt_last_error(), "tunning.db") != NULL, "%s", mlt_last_error());
    unsetenv("MLA_TUNE_DB");

    char cmd[700];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_runtime_db");
}
