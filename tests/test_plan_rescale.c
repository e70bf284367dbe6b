/*
 * A plan whose DB has keys far apart in batch runs each key's winner
 * rescaled between them (dispatch.h), through the public API on a host
 * with no GPU (the stub CUDA driver, and the stub as NVRTC: plans without
 * compiling):
 *   - explain says what runs and why: the nearest key, its splits rescaled;
 *   - the workspace is sized for the batches each variant runs at: batch
 *     8's 16 splits and the rescaled 64 only up to the largest batch they
 *     serve, batch 32's 4 splits at max_batch (4 x 256 rows of partials,
 *     where 16 x 256 were reserved before);
 *   - every batch 1..max_batch runs with that workspace (the launch checks
 *     each call's need against what it is given);
 *   - the plan weighs the device's memory bandwidth (from the driver's
 *     memory clock and bus width): on an H200's a key that left compute
 *     units idle keeps its splits at a larger batch, on an H100's its
 *     work-groups (kernels/mla_decode/family.c).
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "check.h"
#include "db_fixture.h"
#include "runtime/api/api_internal.h"
#include "runtime/include/mlatune.h"
#include "stub_driver.h"

#define SIMT(splits) "tile_q=16,kv_granularity=64,num_splits=" #splits ",block_threads=256,kv_chunk=32,mma=0"

static const mt_problem_static STATIC = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16,
                                         .kv_dtype = MT_BF16};

/* Keys of 16 heads at batch 8 (16 splits won) and 32 (4 splits), 4096 keys
 * per request, measured with the stub's compiler. */
static void make_db(const char *path) {
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    int64_t d = fixture_device(db, "nvrtc-99.0");
    fixture_record(db, d, 16, 8, 4096, SIMT(16), MT_MEASURE_OK, 0.05);
    fixture_record(db, d, 16, 32, 4096, SIMT(4), MT_MEASURE_OK, 0.05);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
}

static size_t workspace_of(const char *params, int batch, int cus) {
    mt_variant v;
    CHECK_OK(mt_variant_parse(&mt_family_mla_decode, params, &v));
    return mt_mla_decode_workspace_bytes(&v, &STATIC, batch, 16, 1, cus);
}

/* A runtime over `db` as the system DB alone, quiet, no code cache. */
static mlt_runtime *runtime_on(const char *db) {
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.system_db = db;
    o.cache_dir = "";
    o.log_level = MLT_LOG_QUIET;
    mlt_runtime *rt = NULL;
    return mlt_runtime_create(&o, &rt) == MLT_OK ? rt : NULL;
}

/* A key of 64 heads at batch 8 whose 2 splits left units idle (4 tiles x
 * 8 x 2 = 64 of 132): batch 16 keeps 2 splits on an H200's bandwidth (4 x
 * 16 x 2 = 128 fit), 1 on the stub's own H100 bandwidth. */
static void bandwidth_fills(const char *dir) {
    char path[200];
    snprintf(path, sizeof path, "%s/idle.db", dir);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    int64_t d = fixture_device(db, "nvrtc-99.0");
    fixture_record(db, d, 64, 8, 4096, SIMT(2), MT_MEASURE_OK, 0.05);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
    static const struct {
        const char *khz, *bits;
        int splits;
    } devices[] = {{"3200000", "6144", 2}, {"2619000", "5120", 1}};
    for (int i = 0; i < 2; i++) {
        setenv("MLA_TUNE_STUB_MEMORY_KHZ", devices[i].khz, 1);
        setenv("MLA_TUNE_STUB_BUS_BITS", devices[i].bits, 1);
        mlt_runtime *rt = runtime_on(path);
        CHECK_MSG(rt, "%s", mlt_last_error());
        mlt_decode_problem p = {.n_heads = 64, .sq = 1, .d = 576, .dl = 512, .page_size = 64,
                                .q_dtype = MLT_BF16, .kv_dtype = MLT_BF16, .softmax_scale = 0.04f, .kv_scale = 1,
                                .max_batch = 64};
        mlt_plan *plan = NULL;
        CHECK_MSG(rt && mlt_plan_create(rt, &p, &plan) == MLT_OK, "%s", mlt_last_error());
        mlt_choice_info info;
        char want[40];
        snprintf(want, sizeof want, "num_splits=%d,", devices[i].splits);
        CHECK(plan && mlt_plan_explain(plan, 16, 4096, 0, &info) == MLT_OK);
        CHECK_MSG(plan && strstr(info.variant, want), "%s x %s bits: batch 16 runs %s (%s)", devices[i].khz,
                  devices[i].bits, info.variant, info.why);
        /* why says when the bandwidth decided (an H200's: 4915 GB/s) */
        const int filled = devices[i].splits == 2;
        CHECK_MSG(plan && (strstr(info.why, "for 4915 GB/s over 132 CUs") != NULL) == filled, "%s", info.why);
        mlt_plan_destroy(plan);
        mlt_runtime_destroy(rt);
    }
    unsetenv("MLA_TUNE_STUB_MEMORY_KHZ");
    unsetenv("MLA_TUNE_STUB_BUS_BITS");
}

int main(void) {
    if (!stub_driver_use()) return CHECK_SKIP_CODE;
    setenv("MLA_TUNE_NVRTC", getenv("MLA_TUNE_STUB_CUDA"), 1);
    char dir[] = "/tmp/mla-tune-test-plan-rescale-XXXXXX", db[100], xdg[100];
    if (!mkdtemp(dir)) return 1;
    snprintf(db, sizeof db, "%s/tuning.db", dir);
    snprintf(xdg, sizeof xdg, "%s/xdg", dir);
    setenv("XDG_DATA_HOME", xdg, 1); /* no user DB */
    make_db(db);
    mlt_runtime *rt = runtime_on(db);
    if (!rt) {
        printf("SKIP: the runtime does not start with the stub driver: %s\n", mlt_last_error());
        return CHECK_SKIP_CODE;
    }
    const int max_batch = 256, cus = mt_runtime_device(rt)->compute_units;
    mlt_decode_problem p = {.n_heads = 16, .sq = 1, .d = 576, .dl = 512, .page_size = 64, .q_dtype = MLT_BF16,
                            .kv_dtype = MLT_BF16, .softmax_scale = 0.04f, .kv_scale = 1, .max_batch = max_batch};
    mlt_plan *plan = NULL;
    CHECK_MSG(mlt_plan_create(rt, &p, &plan) == MLT_OK, "%s", mlt_last_error());
    if (plan) {
        mlt_choice_info info;
        CHECK(mlt_plan_explain(plan, 16, 4096, 0, &info) == MLT_OK);
        CHECK_MSG(info.reason == MLT_CHOICE_NEAREST_KEY && info.key_batch == 8 && strstr(info.variant, "num_splits=8,"),
                  "batch 16: %s (%s)", info.variant, info.why);
        CHECK_MSG(strstr(info.why, "rescaled: num_splits 16->8") != NULL, "%s", info.why);
        CHECK(mlt_plan_explain(plan, 8, 4096, 0, &info) == MLT_OK);
        CHECK_MSG(info.reason == MLT_CHOICE_EXACT_KEY && strstr(info.variant, "num_splits=16,") &&
                  !strstr(info.why, "rescaled"), "batch 8: %s (%s)", info.variant, info.why);
        CHECK(mlt_plan_explain(plan, 2, 4096, 0, &info) == MLT_OK);
        CHECK_MSG(strstr(info.variant, "num_splits=64,") != NULL, "batch 2: %s", info.variant);
        /* what a run refuses, explain refuses too: past max_batch no
         * rescaled variant was compiled (it used to answer the key's
         * winner as measured, which no run would launch) */
        CHECK(mlt_plan_explain(plan, max_batch, 4096, 0, &info) == MLT_OK);
        CHECK(mlt_plan_explain(plan, max_batch + 1, 4096, 0, &info) == MLT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mlt_last_error(), "max_batch") != NULL, "%s", mlt_last_error());
        CHECK(mlt_plan_explain(plan, 0, 4096, 0, &info) == MLT_ERR_INVALID_ARGUMENT);
        CHECK(mlt_plan_explain(plan, 8, -5, 0, &info) == MLT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mlt_last_error(), "seq_len_hint -5") != NULL, "%s", mlt_last_error());
        CHECK(mlt_plan_explain(plan, 8, 4096, 1024, &info) == MLT_ERR_INVALID_ARGUMENT);
        CHECK(mlt_plan_explain(plan, 8, MLT_LENGTHS_UNKNOWN, 0, &info) == MLT_OK);
        /* at least batch 32's winner at max_batch (and the rule's
         * length-aware variant, every plan's fallback for ragged calls),
         * far less than batch 8's 16 splits at max_batch */
        size_t ws = mlt_plan_workspace_size(plan), need = workspace_of(SIMT(4), max_batch, cus);
        size_t old = workspace_of(SIMT(16), max_batch, cus);
        CHECK_MSG(ws >= need && ws < old / 2, "workspace %zu bytes; the 4-split winner at batch %d needs %zu, the "
                  "16-split one %zu", ws, max_batch, need, old);
        /* every batch runs with it (the stub launches nothing; the
         * pointers are placeholders the launch only checks) */
        static char memory[1 << 12] __attribute__((aligned(16)));
        int failed = 0;
        for (int b = 1; b <= max_batch; b++) {
            mlt_decode_args a = {.batch = b, .seq_len_hint = 4096, .max_blocks_per_seq = 64, .q = memory,
                                 .kv_cache = memory, .block_table = (const int32_t *)memory,
                                 .seq_lens = (const int32_t *)memory, .out = memory, .lse = (float *)memory,
                                 .workspace = memory, .workspace_size = ws};
            if (mlt_plan_run(plan, &a, NULL) != MLT_OK && failed++ < 3)
                fprintf(stderr, "batch %d: %s\n", b, mlt_last_error());
        }
        CHECK_MSG(failed == 0, "%d of %d batches refused the plan's workspace", failed, max_batch);
    }
    mlt_plan_destroy(plan);
    mlt_runtime_destroy(rt);
    bandwidth_fills(dir);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_plan_rescale");
}
