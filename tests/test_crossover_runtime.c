/*
 * mlt_prefill_choose_form (mlatune.h) on a runtime over the stub CUDA
 * driver (stub_libcuda.c: an sm_90 with 132 SMs, no GPU needed):
 *   - every bad argument is refused naming it;
 *   - the points come from both DBs, a user point replacing the system
 *     point of the same device, heads, dtypes, sq and context, each
 *     answer saying where its points came from; the runtime's own device
 *     (arch and compute units) picks among devices;
 *   - read once: a point written after the first call is not seen by that
 *     runtime, it is by a new one;
 *   - eight threads asking at once of a fresh runtime (the first calls race
 *     the read) all get the one answer;
 *   - with no DB at all, the flop rule, said so;
 *   - a damaged DB is MLT_ERR_DATABASE naming the file and the row, and
 *     once repaired the next call of the same runtime reads it.
 * Skipped (77) when the runtime cannot start over the stub driver.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "db/crossover.h"
#include "db/db.h"
#include "runtime/include/mlatune.h"
#include "stub_driver.h"

static char dir[256];

static void put(const char *path, const char *arch, int cus, int heads, int context, int sq, double mqa, double mha) {
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    if (!db) return;
    mt_device_info d = {.compute_units = cus, .total_memory = 80ull << 30};
    snprintf(d.arch, sizeof d.arch, "%s", arch);
    snprintf(d.name, sizeof d.name, "Test GPU");
    int64_t id = 0;
    CHECK_OK(mt_db_put_device(db, &d, "nvrtc", &id));
    mt_crossover_point p = {.n_heads = heads, .q_dtype = MT_BF16, .kv_dtype = MT_BF16, .sq = sq, .context = context,
                            .mqa_ms = mqa, .mha_ms = mha, .mqa_absorb_ms = 0.1, .mqa_attention_ms = mqa,
                            .mqa_output_ms = 0.1, .mha_decompress_ms = 0.1, .mha_attention_ms = mha};
    CHECK_OK(mt_db_put_crossover(db, id, &p));
    mt_db_close(db);
}

static mlt_runtime *runtime(const char *user, const char *system_db) {
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.user_db = user;
    o.system_db = system_db;
    o.cache_dir = "";
    o.log_level = MLT_LOG_QUIET;
    mlt_runtime *rt = NULL;
    if (mlt_runtime_create(&o, &rt) != MLT_OK) return NULL;
    return rt;
}

static void test_arguments(mlt_runtime *rt) {
    mlt_form_info f;
    static const struct {
        int heads, q, kv, sq, context;
        const char *said;
    } bad[] = {
        {0, MLT_BF16, MLT_BF16, 64, 4096, "head count 0 outside 1..128"},
        {129, MLT_BF16, MLT_BF16, 64, 4096, "head count 129 outside 1..128"},
        {128, MLT_BF16, MLT_BF16, 0, 4096, "sq 0 outside 1..1024"},
        {128, MLT_BF16, MLT_BF16, 1025, 4096, "sq 1025 outside 1..1024"},
        {128, MLT_BF16, MLT_BF16, 64, -1, "context -1 is negative"},
        {128, MLT_FP8_E4M3, MLT_BF16, 64, 4096, "q_dtype must be MLT_BF16 or MLT_FP16 (got 2)"},
        {128, MLT_BF16, 7, 64, 4096, "kv_dtype 7 is not a known dtype"},
        {128, MLT_BF16, -1, 64, 4096, "kv_dtype -1 is not a known dtype"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mlt_status st = mlt_prefill_choose_form(rt, bad[i].heads, (mlt_dtype)bad[i].q, (mlt_dtype)bad[i].kv, bad[i].sq,
                                                bad[i].context, &f);
        CHECK_MSG(st == MLT_ERR_INVALID_ARGUMENT && strstr(mlt_last_error(), bad[i].said), "case %zu: %d '%s'", i,
                  (int)st, mlt_last_error());
    }
    CHECK(mlt_prefill_choose_form(NULL, 128, MLT_BF16, MLT_BF16, 64, 4096, &f) == MLT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mlt_last_error(), "runtime is NULL") != NULL);
    CHECK(mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 64, 4096, NULL) == MLT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mlt_last_error(), "out is NULL") != NULL);
    /* the edges themselves are fine */
    CHECK(mlt_prefill_choose_form(rt, 1, MLT_FP16, MLT_FP8_E4M3_FNUZ, 1, 0, &f) == MLT_OK);
    CHECK(mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 1024, 0x7fffffff, &f) == MLT_OK);
}

typedef struct racer {
    mlt_runtime *rt;
    int wrong;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    for (int i = 0; i < 500; i++) {
        mlt_form_info f;
        mlt_status st = mlt_prefill_choose_form(r->rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f);
        r->wrong += st != MLT_OK || !f.measured || f.lo_sq != 96 || f.mqa_ms != 1.0 || f.mha_ms != 0.5;
    }
    return NULL;
}

int main(void) {
    if (!stub_driver_use()) return CHECK_SKIP_CODE;
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-crossover-rt-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_DATA_HOME", dir, 1);  /* no default user DB */
    char user[400], sys[400];
    snprintf(user, sizeof user, "%s/user.db", dir);
    snprintf(sys, sizeof sys, "%s/system.db", dir);
    /* the system DB: 132 CUs, 128 heads, context 4096; sq 64 MQA, sq 128 MHA.
     * A 78-CU device measured otherwise (MHA everywhere), and a gfx942. */
    put(sys, "sm_90", 132, 128, 4096, 64, 2.0, 3.0);
    put(sys, "sm_90", 132, 128, 4096, 128, 4.0, 3.5);
    put(sys, "sm_90", 78, 128, 4096, 64, 9.0, 1.0);
    put(sys, "gfx942", 132, 128, 4096, 64, 9.0, 1.0);
    /* the user DB re-measured sq 128: MQA 4, MHA 5 */
    put(user, "sm_90", 132, 128, 4096, 128, 4.0, 5.0);

    mlt_runtime *rt = runtime(user, sys);
    if (!rt) {
        printf("SKIP: the runtime does not start with the stub driver: %s\n", mlt_last_error());
        return CHECK_SKIP_CODE;
    }
    test_arguments(rt);
    mlt_form_info f;
    CHECK(mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 128, 4096, &f) == MLT_OK);
    CHECK_MSG(f.measured && strcmp(f.source, "user") == 0 && f.form == MLT_FORM_MQA && f.mha_ms == 5.0 &&
              f.key_compute_units == 132 && f.boundary_sq == 0, "%s: %s", f.source, f.why);
    /* between the system's 64 and the user's 128: (2 + 4) / 2, (3 + 5) / 2 */
    CHECK(mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f) == MLT_OK);
    CHECK(f.mqa_ms == 3.0 && f.mha_ms == 4.0 && strcmp(f.source, "user+system") == 0 && f.lo_sq == 64 &&
          f.hi_sq == 128);
    /* read once: a point written now is not seen by this runtime */
    put(user, "sm_90", 132, 128, 4096, 96, 1.0, 0.5);
    CHECK(mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f) == MLT_OK);
    CHECK(f.lo_sq == 64 && f.hi_sq == 128 && f.form == MLT_FORM_MQA);
    mlt_runtime_destroy(rt);

    /* a new runtime sees it; eight threads ask at once before any read */
    rt = runtime(user, sys);
    CHECK(rt && mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f) == MLT_OK);
    CHECK(f.lo_sq == 96 && f.hi_sq == 96 && f.form == MLT_FORM_MHA && strcmp(f.source, "user") == 0);
    mlt_runtime_destroy(rt);
    rt = runtime(user, sys);
    CHECK(rt != NULL);
    pthread_t threads[8];
    racer racers[8];
    for (int i = 0; rt && i < 8; i++) {
        racers[i] = (racer){.rt = rt};
        pthread_create(&threads[i], NULL, race, &racers[i]);
    }
    int wrong = 0;
    for (int i = 0; rt && i < 8; i++) {
        pthread_join(threads[i], NULL);
        wrong += racers[i].wrong;
    }
    CHECK_MSG(wrong == 0, "%d wrong answers of 4000", wrong);
    mlt_runtime_destroy(rt);

    /* no DB: the flop rule */
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.cache_dir = "";
    o.log_level = MLT_LOG_QUIET;
    rt = NULL;
    CHECK(mlt_runtime_create(&o, &rt) == MLT_OK);
    CHECK(rt && mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 200, 4096, &f) == MLT_OK);
    CHECK(!f.measured && strcmp(f.source, "rule") == 0 && f.form == MLT_FORM_MHA && f.boundary_sq == 168);
    CHECK_MSG(strstr(f.why, "no crossover measured for sm_90 with bf16/bf16"), "%s", f.why);
    mlt_runtime_destroy(rt);

    /* a damaged user DB: refused naming it; repaired, read by the same runtime */
    rt = runtime(user, sys);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(user, MT_DB_WRITE, &db));
    CHECK_OK(mt_db_exec(db, "UPDATE crossover SET n_heads = 0 WHERE sq = 96"));
    CHECK(rt && mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f) == MLT_ERR_DATABASE);
    CHECK_MSG(strstr(mlt_last_error(), user) && strstr(mlt_last_error(), "invalid crossover point") &&
              strstr(mlt_last_error(), "n_heads 0 is outside 1..128"), "%s", mlt_last_error());
    CHECK_OK(mt_db_exec(db, "UPDATE crossover SET n_heads = 128 WHERE sq = 96"));
    mt_db_close(db);
    CHECK(rt && mlt_prefill_choose_form(rt, 128, MLT_BF16, MLT_BF16, 96, 4096, &f) == MLT_OK && f.lo_sq == 96);
    mlt_runtime_destroy(rt);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_crossover_runtime");
}
