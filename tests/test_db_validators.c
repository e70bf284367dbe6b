/*
 * Issue 25, "Also build": the schema-5 database.
 *   - migration from a v4 file: its choices keep what they chose, gain the
 *     device (compute units) of their pick and no source hash ("unknown");
 *     the committed H100 DBs (the shipped ones among them) read that way
 *     are all kept, none stale;
 *   - validators: a measurement records its source hash, the choice carries
 *     it with the compiler and driver; resume does not count a row measured
 *     from other sources; merge copies the hash and refuses a bad one; the
 *     runtime's check (runtime/api/validators.c) calls a choice valid,
 *     unknown or stale, and a stale user choice leaves the system DB's;
 *   - choices per device: one key measured on a 132-CU and a 78-CU device of
 *     one arch gives two choices, each its device's winner, and dispatch
 *     uses this device's or the nearest one's, saying so;
 *   - recorded calls: counts add up per shape, and a hostile row is refused;
 *     the runtime's in-memory counter (runtime/api/recorder.c) buckets calls
 *     to powers of two, loses no count under 4 threads, and its flush
 *     creates the user DB (and folder) and adds to what is there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "db/db.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/dispatch.h"
#include "runtime/api/recorder.h"
#include "runtime/api/validators.h"
#include "test_folder.h"

/* a validator of some other kernel text */
#define OTHER_HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static mt_problem_key key_of(int batch, int len) {
    return (mt_problem_key){.kind = "mla_decode",
                            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                            .n_heads = 16, .sq = 1, .batch = batch, .seq_len = len};
}

static mt_variant variant_with(int splits) {
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    v.values[MT_P_NUM_SPLITS] = splits;
    return v;
}

/* Records an ok measurement of v on a device with `cus` compute units. */
static void put(mt_db *db, int cus, const char *compiler, mt_problem_key k, mt_variant v, double ms,
                const char *hash) {
    mt_device_info dev = {.compute_units = cus, .total_memory = 80ull << 30};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    snprintf(dev.name, sizeof dev.name, "GPU with %d SMs", cus);
    snprintf(dev.driver_version, sizeof dev.driver_version, "13.0");
    int64_t d = 0, p = 0, var = 0;
    CHECK_OK(mt_db_put_device(db, &dev, compiler, &d));
    CHECK_OK(mt_db_put_problem(db, &k, &p));
    CHECK_OK(mt_db_put_variant(db, &v, &var));
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = d, .status = MT_MEASURE_OK,
                        .median_ms = ms, .min_ms = ms, .max_ms = ms, .spread_ms = 0, .reps = 20,
                        .source_hash = hash};
    CHECK_OK(mt_db_record(db, &m));
}

/* A new database `name` in the test's folder, open for writing; its path
 * in path. */
static mt_db *fresh_db(const char *name, char *path, size_t size) {
    path_of(path, size, name);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    return db;
}

static void test_migration_from_v4(void) {
    char path[512];
    path_of(path, sizeof path, "v4.db");
    CHECK_OK(mt_db_create_at_version(path, 4));
    sqlite3 *h = NULL;
    sqlite3_open(path, &h);
    char params[256], sql[2048];
    mt_variant four = variant_with(4);
    mt_variant_format(&four, params, sizeof params);
    /* as schema 4 wrote it: one measured key whose choice is variant 1, and
     * one choice whose pick has no ok measurement (its device is unknown) */
    snprintf(sql, sizeof sql,
                       "INSERT INTO devices(id,arch,name,compute_units,memory_bytes,driver_version,compiler_version) "
                       "VALUES(1,'sm_90','Old H100',132,1,'12.8','nvrtc-12.8');"
                       "INSERT INTO problems(id,kind,q_dtype,kv_dtype,n_heads,sq,d,dl,page_size,batch,seq_len,max_len) "
                       "VALUES(1,'mla_decode','bf16','bf16',16,1,576,512,64,8,4096,4096),"
                       "(2,'mla_decode','bf16','bf16',16,1,576,512,64,64,4096,4096);"
                       "INSERT INTO variants VALUES(1,'mla_decode','%s');"
                       "INSERT INTO measurements(problem_id,variant_id,device_id,status,median_ms,min_ms,max_ms,"
                       "reps,tool_version,measured_at,uid) VALUES(1,1,1,'ok',0.5,0.4,0.6,20,'old',"
                       "'2026-01-01T00:00:00Z','fixture-1');"
                       "INSERT INTO choices VALUES('sm_90',1,1,0.5,0.7,'fastest'),('sm_90',2,1,0.9,NULL,'fastest');",
                       params);
    CHECK(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    /* read: migrated in memory, the choices as they were, validators unknown */
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK_MSG(n == 2, "%d choices", n);
    for (int i = 0; i < n; i++) {
        CHECK(c[i].source_hash[0] == '\0');
        if (c[i].key.batch == 8) {
            CHECK(c[i].compute_units == 132 && c[i].median_ms == 0.5 && c[i].default_ms == 0.7);
            CHECK(strcmp(c[i].compiler_version, "nvrtc-12.8") == 0 && strcmp(c[i].driver_version, "12.8") == 0);
            CHECK(strcmp(c[i].device_name, "Old H100") == 0);
        } else {
            CHECK(c[i].compute_units == 0 && c[i].compiler_version[0] == '\0');
        }
    }
    /* the runtime's check: no validators is "unknown", kept */
    mt_validator val;
    mt_validator_init(&val);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-12.8");
    CHECK(n > 0 && mt_validator_check(&val, &c[0], NULL, 0) == MT_VALIDITY_UNKNOWN);
    free(c);
    mt_db_close(db);
    CHECK(db_query_int(path, "PRAGMA user_version") == 4);
    /* write: migrated in place */
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_db_close(db);
    CHECK(db_query_int(path, "PRAGMA user_version") == MT_DB_SCHEMA_VERSION);
    CHECK(db_query_int(path, "SELECT count(*) FROM measurements WHERE source_hash IS NULL") == 1);
    CHECK(db_query_int(path, "SELECT count(*) FROM choices WHERE compute_units = 132 AND source_hash IS NULL") == 1);
    CHECK(db_query_int(path, "SELECT count(*) FROM recorded_calls") == 0);
}

static void test_validators(void) {
    char path[512], other[512];
    path_of(path, sizeof path, "validators.db");
    path_of(other, sizeof other, "validators-merged.db");
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_variant fast = variant_with(2), slow = variant_with(8);
    char hash_fast[65], hash_slow[65];
    const mt_problem_key key = key_of(8, 1024);
    CHECK_OK(mt_build_source_hash(&fast, &key.s, &t, hash_fast));
    CHECK_OK(mt_build_source_hash(&slow, &key.s, &t, hash_slow));
    CHECK(strlen(hash_fast) == 64);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    put(db, 132, "nvrtc-13.0", key_of(8, 1024), fast, 0.1, hash_fast);
    put(db, 132, "nvrtc-13.0", key_of(8, 1024), slow, 0.3, hash_slow);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK(n == 1 && strcmp(c[0].source_hash, hash_fast) == 0 && strcmp(c[0].compiler_version, "nvrtc-13.0") == 0 &&
          strcmp(c[0].driver_version, "13.0") == 0 && c[0].compute_units == 132);
    /* the runtime's check */
    mt_validator val;
    mt_validator_init(&val);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.0");
    char why[200];
    CHECK(n == 1 && mt_validator_check(&val, &c[0], why, sizeof why) == MT_VALID);
    mt_choice edited = c[0];
    edited.source_hash[0] = edited.source_hash[0] == 'a' ? 'b' : 'a';  /* the kernel text changed since */
    CHECK(mt_validator_check(&val, &edited, why, sizeof why) == MT_STALE_SOURCES);
    CHECK_MSG(strstr(why, "kernel sources changed") != NULL, "%s", why);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.1");
    CHECK(n == 1 && mt_validator_check(&val, &c[0], why, sizeof why) == MT_STALE_COMPILER);
    CHECK_MSG(strstr(why, "nvrtc-13.0") && strstr(why, "nvrtc-13.1"), "%s", why);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.0");
    free(c);
    /* resume: a row measured from other sources, or before validators,
     * settles nothing when the job knows its hash */
    mt_measurement found_m;
    int found = -1;
    CHECK_OK(mt_db_find_measurement(db, 1, 1, 1, 20, hash_fast, &found_m, &found));
    CHECK(found == 1);
    CHECK_OK(mt_db_find_measurement(db, 1, 1, 1, 20, OTHER_HASH, &found_m, &found));
    CHECK(found == 0);
    CHECK_OK(mt_db_find_measurement(db, 1, 1, 1, 20, NULL, &found_m, &found));
    CHECK(found == 1);
    /* merge keeps the validator */
    mt_db *dst = NULL;
    int copied = 0;
    CHECK_OK(mt_db_open(other, MT_DB_WRITE, &dst));
    CHECK_OK(mt_db_copy_into(db, dst, NULL, &copied));
    mt_db_close(dst);
    CHECK(copied == 2);
    char sql[300];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM measurements WHERE source_hash IN ('%s', '%s')", hash_fast,
             hash_slow);
    CHECK(db_query_int(other, sql) == 2);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM choices WHERE source_hash = '%s'", hash_fast);
    CHECK(db_query_int(other, sql) == 1);
    /* a hash that is not one is refused by merge and never chosen */
    CHECK_OK(mt_db_exec(db, "UPDATE measurements SET source_hash = 'x\x1b[31m' WHERE median_ms = 0.1"));
    char third[512];
    path_of(third, sizeof third, "validators-refused.db");
    CHECK_OK(mt_db_open(third, MT_DB_WRITE, &dst));
    CHECK_STATUS(mt_db_copy_into(db, dst, NULL, &copied), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "source_hash") != NULL, "%s", mt_last_error());
    mt_db_close(dst);
    CHECK_OK(mt_db_recompute_choices(db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK(n == 1 && c[0].median_ms == 0.3);  /* the other row, whose hash is one */
    free(c);
    /* a stored choice with such a hash is refused on load */
    CHECK_OK(mt_db_exec(db, "UPDATE choices SET source_hash = 'not a hash'"));
    CHECK_STATUS(mt_db_load_choices(db, "sm_90", &c, &n), MT_ERR_CORRUPT);
    mt_db_close(db);

    /* overlay: the user DB's stale choice is dropped before it can shadow
     * the system DB's valid one for the same key */
    char user[512];
    path_of(user, sizeof user, "validators-user.db");
    CHECK_OK(mt_db_open(user, MT_DB_WRITE, &db));
    put(db, 132, "nvrtc-13.0", key_of(8, 1024), slow, 0.05, OTHER_HASH);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
    mt_choice_source *src = NULL;
    mt_validator_init(&val);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.0");
    CHECK_OK(mt_db_load_overlay_kept(user, 1, other, 1, "sm_90", mt_validator_keep, &val, &c, &src, &n));
    CHECK_MSG(n == 1 && src[0] == MT_FROM_SYSTEM_DB && c[0].median_ms == 0.1, "n=%d", n);
    CHECK(val.stale_sources == 1 && val.stale_user == 1 && val.valid == 1);
    free(c);
    free(src);
    /* without the check the user's (stale) entry wins, as before */
    CHECK_OK(mt_db_load_overlay(user, 1, other, 1, "sm_90", &c, &src, &n));
    CHECK(n == 1 && src[0] == MT_FROM_USER_DB);
    free(c);
    free(src);
}

static void test_per_device(void) {
    char path[512];
    mt_db *db = fresh_db("devices.db", path, sizeof path);
    mt_variant two = variant_with(2), eight = variant_with(8);
    /* the 132-SM device prefers 2 splits, the 78-SM one 8 */
    put(db, 132, "nvrtc-13.0", key_of(8, 1024), two, 0.1, NULL);
    put(db, 132, "nvrtc-13.0", key_of(8, 1024), eight, 0.2, NULL);
    put(db, 78, "nvrtc-13.0", key_of(8, 1024), two, 0.4, NULL);
    put(db, 78, "nvrtc-13.0", key_of(8, 1024), eight, 0.3, NULL);
    /* a driver update is the same device: its later row counts */
    put(db, 78, "nvrtc-13.1", key_of(8, 1024), eight, 0.25, NULL);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK_MSG(n == 2, "%d choices", n);
    int seen = 0;
    for (int i = 0; i < n; i++) {
        mt_variant v;
        CHECK_OK(mt_variant_parse(&mt_family_mla_decode, c[i].params, &v));
        if (c[i].compute_units == 132) {
            seen |= 1;
            CHECK(v.values[MT_P_NUM_SPLITS] == 2 && c[i].median_ms == 0.1);
        }
        if (c[i].compute_units == 78) {
            seen |= 2;
            CHECK(v.values[MT_P_NUM_SPLITS] == 8 && c[i].median_ms == 0.25 &&
                  strcmp(c[i].compiler_version, "nvrtc-13.1") == 0);
        }
    }
    CHECK(seen == 3);
    CHECK(n == 2 && !mt_choice_same_key(&c[0], &c[1]));
    /* dispatch: each device its own; an unmeasured one the nearest */
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_problem_key shape = key_of(0, 0);
    const int cus[] = {132, 78, 114, 66, 304};
    const int want_splits[] = {2, 8, 2, 8, 2};
    for (int i = 0; i < 5; i++) {
        mt_dispatch_table table;
        CHECK_OK(mt_dispatch_build(c, NULL, n, &shape, &t, cus[i],
                                   MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
        mt_dispatch_result r;
        mt_dispatch_lookup(&table, 8, 1024, 0, &r);
        CHECK_MSG(r.entry && table.variants[r.variant].values[MT_P_NUM_SPLITS] == want_splits[i], "%d CUs", cus[i]);
        char why[200];
        mt_dispatch_explain(&table, &r, why, sizeof why);
        int measured_here = cus[i] == 132 || cus[i] == 78;
        CHECK_MSG(measured_here == (strstr(why, "nearest device") == NULL), "%d CUs: %s", cus[i], why);
        if (!measured_here) {
            char note[80];
            snprintf(note, sizeof note, "(%d CUs; this one %d)", want_splits[i] == 2 ? 132 : 78, cus[i]);
            CHECK_MSG(strstr(why, note) != NULL, "%s", why);
        }
        mt_dispatch_free(&table);
    }
    free(c);
    mt_db_close(db);
}

static void test_recorded(void) {
    char path[512];
    mt_db *db = fresh_db("recorded.db", path, sizeof path);
    mt_recorded_call calls[2] = {{.arch = "sm_90", .compute_units = 114, .key = key_of(16, 2048), .how = "nearest",
                                  .calls = 40},
                                 {.arch = "sm_90", .compute_units = 114, .key = key_of(4, 512), .how = "heuristic",
                                  .calls = 3}};
    calls[1].key.max_len = 4096;
    CHECK_OK(mt_db_add_recorded(db, calls, 2));
    calls[1].calls = 50;
    CHECK_OK(mt_db_add_recorded(db, &calls[1], 1));  /* a later plan's counts add up */
    mt_recorded_call *r = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_recorded(db, "sm_90", &r, &n));
    CHECK_MSG(n == 2, "%d recorded", n);
    CHECK(n == 2 && r[0].calls == 53 && r[0].key.batch == 4 && r[0].key.max_len == 4096 &&
          strcmp(r[0].how, "heuristic") == 0 && r[0].compute_units == 114);
    CHECK(n == 2 && r[1].calls == 40 && r[1].key.max_len == 2048);
    free(r);
    CHECK_OK(mt_db_load_recorded(db, "gfx942", &r, &n));
    CHECK(n == 0);
    free(r);
    /* a bad key is refused on the way in and on the way out */
    mt_recorded_call bad = calls[0];
    bad.key.n_heads = 0;
    CHECK_STATUS(mt_db_add_recorded(db, &bad, 1), MT_ERR_CORRUPT);
    CHECK_OK(mt_db_exec(db, "UPDATE recorded_calls SET how = 'guess' WHERE batch = 16"));
    CHECK_STATUS(mt_db_load_recorded(db, NULL, &r, &n), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "guess") != NULL, "%s", mt_last_error());
    CHECK_OK(mt_db_exec(db, "UPDATE recorded_calls SET how = 'nearest', n_heads = 999 WHERE batch = 16"));
    CHECK_STATUS(mt_db_load_recorded(db, NULL, &r, &n), MT_ERR_CORRUPT);
    mt_db_close(db);
}

typedef struct counter_arg { mt_recorder *r; int thread; } counter_arg;

enum { COUNTS_PER_THREAD = 100000 };

/* each thread counts the same two buckets, and one of its own */
static void *count_calls(void *p) {
    counter_arg *a = p;
    for (int i = 0; i < COUNTS_PER_THREAD; i++) {
        mt_recorder_count(a->r, 48, 1000, 0, 0);          /* batch 64, mean 1024, uniform; nearest */
        mt_recorder_count(a->r, 8, 2500, 10000, 1);       /* batch 8, mean 2048, longest 8192; heuristic */
        mt_recorder_count(a->r, 1 << a->thread, 100, 100, 0);
    }
    return NULL;
}

static void test_recorder(void) {
    mt_recorder *r = calloc(1, sizeof *r);
    pthread_t th[4];
    counter_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (counter_arg){.r = r, .thread = i};
        pthread_create(&th[i], NULL, count_calls, &args[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    mt_problem_key shape = key_of(0, 0);
    mt_recorded_call *c = NULL;
    int n = 0;
    CHECK_OK(mt_recorder_collect(r, "sm_90", 114, &shape, &c, &n));
    CHECK_MSG(n == 6, "%d buckets", n);
    int found = 0;
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(c[i].arch, "sm_90") == 0 && c[i].compute_units == 114 && c[i].key.n_heads == 16);
        int64_t want = 0;
        const char *how = "nearest";
        if (c[i].key.batch == 64 && c[i].key.seq_len == 1024 && c[i].key.max_len == 1024) want = 4 * COUNTS_PER_THREAD;
        if (c[i].key.batch == 8 && c[i].key.seq_len == 2048 && c[i].key.max_len == 8192)
            want = 4 * COUNTS_PER_THREAD, how = "heuristic";
        if (c[i].key.seq_len == 128 && c[i].key.max_len == 128) want = COUNTS_PER_THREAD;
        found += want > 0;
        CHECK_MSG(c[i].calls == want && strcmp(c[i].how, how) == 0, "batch %d mean %d: %lld calls by %s",
                  c[i].key.batch, c[i].key.seq_len, (long long)c[i].calls, c[i].how);
    }
    CHECK_MSG(found == 6, "%d of 6 buckets as expected", found);
    CHECK(atomic_load(&r->dropped) == 0);
    free(c);
    /* extremes stay in range: the batch a plan allows at most, 2^30 keys */
    mt_recorder *edge = calloc(1, sizeof *edge);
    mt_recorder_count(edge, 65535, 1 << 30, 0, 0);
    mt_recorder_count(edge, 1, 0, 0, 1);
    CHECK_OK(mt_recorder_collect(edge, "sm_90", 132, &shape, &c, &n));
    CHECK(n == 2);
    for (int i = 0; i < n; i++) CHECK(c[i].key.batch >= 1 && c[i].key.batch <= 65535 && c[i].key.max_len >= c[i].key.seq_len);
    free(c);
    free(edge);
    /* the flush: the user DB and its folder are made; counts add up */
    char path[512];
    path_of(path, sizeof path, "new-folder/deeper/user.db");
    CHECK_OK(mt_recorder_flush(r, path, "sm_90", 114, &shape));
    CHECK_OK(mt_recorder_flush(r, path, "sm_90", 114, &shape));
    CHECK(db_query_int(path, "SELECT calls FROM recorded_calls WHERE batch = 64 AND seq_len = 1024") ==
          8 * COUNTS_PER_THREAD);
    CHECK(db_query_int(path, "SELECT count(*) FROM recorded_calls") == 6);
    /* nothing counted: no file made */
    mt_recorder *none = calloc(1, sizeof *none);
    path_of(path, sizeof path, "never.db");
    CHECK_OK(mt_recorder_flush(none, path, "sm_90", 114, &shape));
    CHECK(access(path, F_OK) != 0);
    free(none);
    free(r);
}

/* The committed H100 DBs (four are the installed system DB's choices):
 * every choice is read and kept by the runtime's check, none stale -
 * "unknown" where the DB predates validators (schema 4), valid where it was
 * swept with the kernel sources of this tree (the ragged DB, session 16,
 * the broad DB, session 20, the prefill DB, session 25: re-sweep them after
 * a kernel change, or the system DB ships stale choices); each keeps its
 * device (132 SMs). */
static void test_shipped_dbs_trusted(void) {
    static const char *const shipped[] = {"reports/h100/fast-decode/tuning.db", "reports/h100/ragged/tuning.db",
                                          "reports/h100/broad/tuning.db", "reports/h100/prefill/tuning.db",
                                          "reports/h100/quick/tuning.db",
                                          "reports/h100/deepseek-v3-tp8-small/tuning.db"};
    for (int i = 0; i < (int)(sizeof shipped / sizeof shipped[0]); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", MT_SOURCE_DIR, shipped[i]);
        mt_choice *all = NULL, *kept = NULL;
        mt_choice_source *src = NULL;
        int n_all = 0, n_kept = 0;
        CHECK_OK(mt_db_load_overlay(NULL, 0, path, 1, "sm_90", &all, NULL, &n_all));
        mt_validator val;
        mt_validator_init(&val);
        mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.0");
        CHECK_OK(mt_db_load_overlay_kept(NULL, 0, path, 1, "sm_90", mt_validator_keep, &val, &kept, &src, &n_kept));
        CHECK_MSG(n_all > 0 && n_kept == n_all && val.stale_sources == 0 && val.stale_compiler == 0,
                  "%s: %d of %d kept (%d unknown, %d stale for their sources, %d for their compiler)", shipped[i],
                  n_kept, n_all, val.unknown, val.stale_sources, val.stale_compiler);
        int on_h100 = 0;
        for (int k = 0; k < n_kept; k++) on_h100 += kept[k].compute_units == 132;
        CHECK_MSG(on_h100 == n_kept, "%s: %d of %d choices on the 132-SM H100", shipped[i], on_h100, n_kept);
        free(all);
        free(kept);
        free(src);
    }
}

/* Choices derived by the tools count only rows measured from the kernel
 * text their variants compile from now (session 22: a shipped ragged key
 * kept an old row of a variant its plan no longer measured, so the runtime
 * ignored that key's choice and lost its valid runner-up with it).  A row
 * without validators still counts; export does the same. */
static void test_choices_from_current_text(void) {
    char path[512], out[512];
    mt_db *db = fresh_db("other-text.db", path, sizeof path);
    path_of(out, sizeof out, "other-text-export.db");
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    const mt_problem_key key = key_of(32, 2048), old_key = key_of(128, 2048);
    mt_variant old_fast = variant_with(2), now = variant_with(4), unknown = variant_with(8);
    char hash_now[65];
    CHECK_OK(mt_build_source_hash(&now, &key.s, &t, hash_now));
    put(db, 132, "nvrtc-13.0", key, old_fast, 0.1, OTHER_HASH); /* fastest, but of other text */
    put(db, 132, "nvrtc-13.0", key, now, 0.2, hash_now);
    put(db, 132, "nvrtc-13.0", old_key, now, 0.4, hash_now);
    put(db, 132, "nvrtc-13.0", old_key, unknown, 0.3, NULL); /* before validators: trusted */
    mt_validator val;
    mt_validator_init(&val);
    mt_validator_set_compiler(&val, "sm_90", "nvrtc-13.0");
    /* every row counting, the other text wins: a choice the runtime drops */
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    for (int i = 0; i < n; i++)
        if (c[i].key.batch == 32) CHECK(mt_validator_check(&val, &c[i], NULL, 0) == MT_STALE_SOURCES);
    free(c);
    /* the tools' way: the runner-up measured from the current text */
    CHECK_OK(mt_validator_recompute_choices(db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK_MSG(n == 2, "%d choices", n);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(mt_validator_check(&val, &c[i], NULL, 0) != MT_STALE_SOURCES, "batch %d: stale", c[i].key.batch);
        if (c[i].key.batch == 32) CHECK(c[i].median_ms == 0.2 && strcmp(c[i].source_hash, hash_now) == 0);
        else CHECK(c[i].median_ms == 0.3 && c[i].source_hash[0] == '\0');
    }
    free(c);
    mt_db_close(db);
    /* mla-tune export derives the shipped file's choices the same way */
    const char *bin = getenv("MLA_TUNE_BIN"); /* tests/CMakeLists.txt sets it */
    CHECK_MSG(bin != NULL, "MLA_TUNE_BIN is not set");
    if (!bin) return;
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' export --arch sm_90 --db '%s' -o '%s' > /dev/null", bin, path, out);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    CHECK_OK(mt_db_open(out, MT_DB_READ, &db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    for (int i = 0; i < n; i++)
        if (c[i].key.batch == 32) CHECK_MSG(c[i].median_ms == 0.2, "export chose %.1f ms", c[i].median_ms);
    free(c);
    mt_db_close(db);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-validators-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    unsetenv("MLA_TUNE_KERNEL_DIR");  /* the built-in sources: the hashes below are of those */
    test_migration_from_v4();
    test_validators();
    test_per_device();
    test_recorded();
    test_recorder();
    test_shipped_dbs_trusted();
    test_choices_from_current_text();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_db_validators");
}
