/*
 * The tuning database: schema migrations from every earlier version, the
 * choice rule (noise, ties, wrong results), overlay of user over system DB,
 * export / import / merge round trips without duplicates, bad files (not
 * SQLite, truncated, newer schema, out-of-range stored values) rejected with
 * clear messages and left untouched, a writer killed with SIGKILL
 * mid-transaction losing no committed row, and 8 readers + 1 writer in
 * separate processes for MLA_TUNE_CONCURRENCY_SECONDS (default 20) with
 * zero errors and an intact file afterwards.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "db/db.h"
#include "kernels/mla_decode/mla_decode.h"
#include "test_folder.h"

static mt_device_info fake_device(const char *arch) {
    mt_device_info d = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(d.arch, sizeof d.arch, "%s", arch);
    snprintf(d.name, sizeof d.name, "Test GPU");
    snprintf(d.driver_version, sizeof d.driver_version, "13.0");
    return d;
}

static mt_problem_key key_of(int heads, int batch, int len) {
    mt_problem_key k = {.kind = "mla_decode",
            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
            .n_heads = heads, .sq = 1,
                        .batch = batch, .seq_len = len};
    return k;
}

static mt_variant variant_with(int tile_q, int splits) {
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    v.values[MT_P_TILE_Q] = tile_q;
    v.values[MT_P_KV_CHUNK] = 16;  /* fits gfx942's 64 KiB of LDS too */
    v.values[MT_P_NUM_SPLITS] = splits;
    if (splits == 1) v.values[MT_P_KV_GRANULARITY] = 16;
    return v;
}

/* records one ok measurement; returns its status */
static mt_status put(mt_db *db, const char *arch, mt_problem_key k, mt_variant v, mt_measure_status status,
                     double median, double spread) {
    mt_device_info dev = fake_device(arch);
    int64_t d = 0, p = 0, var = 0;
    mt_status st = mt_db_put_device(db, &dev, "nvrtc-13.0", &d);
    if (st == MT_OK) st = mt_db_put_problem(db, &k, &p);
    if (st == MT_OK) st = mt_db_put_variant(db, &v, &var);
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = d, .status = status, .median_ms = median,
                        .min_ms = median * 0.9, .max_ms = median * 1.1, .spread_ms = spread, .reps = 20,
                        .error = status == MT_MEASURE_OK ? NULL : "failed on purpose"};
    if (st == MT_OK) st = mt_db_record(db, &m);
    return st;
}


static const mt_choice *find_choice(const mt_choice *c, int n, const char *arch, int batch) {
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].arch, arch) == 0 && c[i].key.batch == batch) return &c[i];
    return NULL;
}

static void test_migrations(void) {
    for (int from = 1; from < MT_DB_SCHEMA_VERSION; from++) {
        char path[512];
        snprintf(path, sizeof path, "%s/v%d.db", dir, from);
        CHECK_OK(mt_db_create_at_version(path, from));
        /* rows written the way that version wrote them */
        sqlite3 *h = NULL;
        sqlite3_open(path, &h);
        CHECK(sqlite3_exec(h,
                           "INSERT INTO devices(id,arch,name,compute_units,memory_bytes,driver_version,compiler_version) "
                           "VALUES(1,'sm_90','Old GPU',132,1,'12.0','nvrtc-12.0');"
                           "INSERT INTO problems(id,kind,q_dtype,kv_dtype,n_heads,sq,d,dl,page_size,batch,seq_len) "
                           "VALUES(1,'mla_decode','bf16','bf16',16,1,576,512,64,8,4096);"
                           "INSERT INTO variants VALUES(1,'mla_decode_simt',"
                           "'tile_q=16,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32');"
                           "INSERT INTO measurements(problem_id,variant_id,device_id,status,median_ms,min_ms,max_ms,"
                           "reps,tool_version,measured_at) VALUES(1,1,1,'ok',0.5,0.4,0.6,20,'old','2026-01-01T00:00:00Z');",
                           NULL, NULL, NULL) == SQLITE_OK);
        if (from >= 2) /* writers of version 2 on give every measurement an id */
            CHECK(sqlite3_exec(h, "UPDATE measurements SET uid = 'fixture-1'", NULL, NULL, NULL) == SQLITE_OK);
        if (from >= 4) /* writers of version 4 record the longest request */
            CHECK(sqlite3_exec(h, "UPDATE problems SET max_len = seq_len", NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(h);
        /* reading never writes: the file stays at its version */
        mt_db *db = NULL;
        CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
        CHECK(db && mt_db_schema_version(db) == MT_DB_SCHEMA_VERSION);
        mt_db_close(db);
        CHECK(db_query_int(path, "PRAGMA user_version") == from);
        /* writing migrates in place and keeps every row */
        CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
        CHECK(db_query_int(path, "PRAGMA user_version") == MT_DB_SCHEMA_VERSION);
        CHECK(db_query_int(path, "SELECT count(*) FROM measurements WHERE uid IS NOT NULL AND median_ms = 0.5") == 1);
        CHECK_OK(mt_db_recompute_choices(db));
        mt_choice *c = NULL;
        int n = 0;
        CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
        CHECK(n == 1 && c && c[0].key.batch == 8 && c[0].median_ms == 0.5);
        /* schema 4: keys written before length mixes were uniform */
        CHECK(n == 1 && strcmp(c[0].key.lengths, "uniform") == 0 && c[0].key.max_len == 4096);
        free(c);
        mt_db_close(db);
    }
}

/* Issue 22: a ragged key records its mix and longest request; two mixes of
 * one batch and mean are two keys with their own choices; a stored mix name
 * that is not printable text is refused on loading. */
static void test_length_mixes(void) {
    char path[512];
    path_of(path, sizeof path, "mixes.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_problem_key uniform = key_of(16, 32, 3505), tail = uniform;
    snprintf(tail.lengths, sizeof tail.lengths, "long-tail:512-2048:10:16384-32768@1");
    tail.max_len = 31140;
    int64_t a = 0, b = 0, again = 0;
    CHECK_OK(mt_db_put_problem(db, &uniform, &a));
    CHECK_OK(mt_db_put_problem(db, &tail, &b));
    CHECK_OK(mt_db_put_problem(db, &tail, &again));
    CHECK(a != b && b == again);
    CHECK_OK(put(db, "sm_90", uniform, variant_with(16, 4), MT_MEASURE_OK, 0.5, 0.01));
    mt_variant aware = variant_with(16, 1);
    aware.values[MT_P_GROUPS_PER_CU] = 1;
    CHECK_OK(put(db, "sm_90", tail, aware, MT_MEASURE_OK, 0.6, 0.01));
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK_MSG(n == 2, "%d choices", n);
    if (n == 2) {
        const mt_choice *u = strcmp(c[0].key.lengths, "uniform") == 0 ? &c[0] : &c[1], *t = u == c ? &c[1] : &c[0];
        CHECK(u->key.max_len == 3505 && strstr(u->params, "num_splits=4"));
        CHECK(t->key.max_len == 31140 && strcmp(t->key.lengths, tail.lengths) == 0 &&
              strstr(t->params, "groups_per_cu=1"));
        CHECK(!mt_choice_same_key(u, t) && mt_choice_same_key(t, t));
    }
    free(c);
    mt_db_close(db);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"UPDATE problems SET lengths = char(27) || '[2J' WHERE id = %lld\"", path,
             (long long)b);
    CHECK(system(cmd) == 0);
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK_STATUS(mt_db_load_choices(db, "sm_90", &c, &n), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "length mix") != NULL, "%s", mt_last_error());
    mt_db_close(db);
}

static void test_choice_rule(void) {
    char path[512];
    path_of(path, sizeof path, "choice.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_variant dflt;
    mt_variant_default(&mt_family_mla_decode, &dflt);
    /* batch 1: a clear winner (0.5 vs default 1.0, spreads tiny) */
    CHECK_OK(put(db, "sm_90", key_of(16, 1, 4096), dflt, MT_MEASURE_OK, 1.0, 0.01));
    CHECK_OK(put(db, "sm_90", key_of(16, 1, 4096), variant_with(8, 8), MT_MEASURE_OK, 0.5, 0.01));
    /* batch 2: faster by less than the spread: the default is kept */
    CHECK_OK(put(db, "sm_90", key_of(16, 2, 4096), dflt, MT_MEASURE_OK, 1.0, 0.05));
    CHECK_OK(put(db, "sm_90", key_of(16, 2, 4096), variant_with(8, 8), MT_MEASURE_OK, 0.97, 0.05));
    /* batch 3: fastest but once wrong: never chosen */
    CHECK_OK(put(db, "sm_90", key_of(16, 3, 4096), variant_with(4, 2), MT_MEASURE_WRONG_RESULT, 0, 0));
    CHECK_OK(put(db, "sm_90", key_of(16, 3, 4096), variant_with(4, 2), MT_MEASURE_OK, 0.1, 0.001));
    CHECK_OK(put(db, "sm_90", key_of(16, 3, 4096), variant_with(8, 2), MT_MEASURE_OK, 0.3, 0.001));
    /* batch 4: tie without the default: the fastest, not the one whose
     * name sorts first (tile_q=4 sorts first) */
    CHECK_OK(put(db, "sm_90", key_of(16, 4, 4096), variant_with(8, 2), MT_MEASURE_OK, 0.30, 0.02));
    CHECK_OK(put(db, "sm_90", key_of(16, 4, 4096), variant_with(4, 2), MT_MEASURE_OK, 0.31, 0.02));
    /* batch 6: a slower candidate with a huge spread (one outlier) that
     * sorts first by name: its own noise does not make it a tie */
    CHECK_OK(put(db, "sm_90", key_of(16, 6, 4096), variant_with(8, 2), MT_MEASURE_OK, 0.30, 0.01));
    CHECK_OK(put(db, "sm_90", key_of(16, 6, 4096), variant_with(4, 2), MT_MEASURE_OK, 0.90, 5.0));
    /* batch 5: only failures: no choice at all */
    CHECK_OK(put(db, "sm_90", key_of(16, 5, 4096), dflt, MT_MEASURE_LAUNCH_FAILED, 0, 0));
    /* the same key on another arch is its own choice */
    CHECK_OK(put(db, "gfx942", key_of(16, 1, 4096), variant_with(4, 4), MT_MEASURE_OK, 2.0, 0.01));
    CHECK_OK(mt_db_recompute_choices(db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, NULL, &c, &n));
    CHECK_MSG(n == 6, "%d choices", n);
    const mt_choice *b1 = find_choice(c, n, "sm_90", 1), *b2 = find_choice(c, n, "sm_90", 2),
                    *b3 = find_choice(c, n, "sm_90", 3), *b4 = find_choice(c, n, "sm_90", 4),
                    *b5 = find_choice(c, n, "sm_90", 5), *g1 = find_choice(c, n, "gfx942", 1);
    CHECK(b1 && strstr(b1->params, "tile_q=8,") && b1->median_ms == 0.5 && b1->default_ms == 1.0 &&
          strcmp(b1->reason, "fastest") == 0);
    CHECK(b2 && strcmp(b2->params, "tile_q=16,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32,mma=0,kv_stages=2,split_reduce=0,groups_per_cu=0") == 0 &&
          strcmp(b2->reason, "tie: default kept") == 0);
    CHECK(b3 && strstr(b3->params, "tile_q=8,") && b3->median_ms == 0.3);
    CHECK(b4 && strstr(b4->params, "tile_q=8,") && b4->median_ms == 0.30 && strcmp(b4->reason, "fastest") == 0);
    CHECK(b5 == NULL);
    const mt_choice *b6 = find_choice(c, n, "sm_90", 6);
    CHECK(b6 && strstr(b6->params, "tile_q=8,") && strcmp(b6->reason, "fastest") == 0);
    CHECK(g1 && strstr(g1->params, "tile_q=4,"));
    free(c);
    /* "sm_90" only */
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK(n == 5);
    free(c);
    mt_db_close(db);
}

static void test_overlay_and_transfer(void) {
    char sys[512], user[512], exported[512], merged[512], other[512];
    path_of(sys, sizeof sys, "system.db");
    path_of(user, sizeof user, "user.db");
    path_of(exported, sizeof exported, "exported.db");
    path_of(merged, sizeof merged, "merged.db");
    path_of(other, sizeof other, "other.db");
    mt_db *s = NULL, *u = NULL;
    CHECK_OK(mt_db_open(sys, MT_DB_WRITE, &s));
    CHECK_OK(mt_db_open(user, MT_DB_WRITE, &u));
    CHECK_OK(put(s, "sm_90", key_of(16, 1, 1024), variant_with(4, 1), MT_MEASURE_OK, 1.0, 0.01));
    CHECK_OK(put(s, "sm_90", key_of(16, 8, 1024), variant_with(4, 1), MT_MEASURE_OK, 1.0, 0.01));
    CHECK_OK(put(u, "sm_90", key_of(16, 8, 1024), variant_with(8, 2), MT_MEASURE_OK, 2.0, 0.01));
    CHECK_OK(put(u, "gfx942", key_of(16, 8, 1024), variant_with(8, 2), MT_MEASURE_OK, 3.0, 0.01));
    CHECK_OK(mt_db_recompute_choices(s));
    CHECK_OK(mt_db_recompute_choices(u));
    mt_db_close(s);
    mt_db_close(u);
    mt_choice *c = NULL;
    mt_choice_source *src = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_overlay(user, 1, sys, 1, "sm_90", &c, &src, &n));
    CHECK(n == 2);
    const mt_choice *b1 = find_choice(c, n, "sm_90", 1), *b8 = find_choice(c, n, "sm_90", 8);
    CHECK(b1 && src[b1 - c] == MT_FROM_SYSTEM_DB && strstr(b1->params, "tile_q=4,"));
    CHECK(b8 && src[b8 - c] == MT_FROM_USER_DB && strstr(b8->params, "tile_q=8,")); /* the user DB wins */
    free(c), free(src);
    /* a missing optional file is skipped, a missing required one is an error */
    CHECK_OK(mt_db_load_overlay("/nonexistent/user.db", 0, sys, 1, "sm_90", &c, &src, &n));
    CHECK(n == 2);
    free(c), free(src);
    CHECK_STATUS(mt_db_load_overlay("/nonexistent/user.db", 1, sys, 1, "sm_90", &c, &src, &n), MT_ERR_NOT_FOUND);
    CHECK(strstr(mt_last_error(), "/nonexistent/user.db") != NULL);

    /* export one arch, import it twice: nothing duplicated */
    mt_db *from = NULL, *to = NULL;
    int copied = 0;
    CHECK_OK(mt_db_open(user, MT_DB_READ, &from));
    CHECK_OK(mt_db_open(exported, MT_DB_WRITE, &to));
    CHECK_OK(mt_db_copy_into(from, to, "gfx942", &copied));
    CHECK(copied == 1);
    CHECK_OK(mt_db_copy_into(from, to, "gfx942", &copied));
    CHECK(copied == 0);
    mt_db_close(to);
    CHECK(db_query_int(exported, "SELECT count(*) FROM measurements") == 1);
    CHECK(db_query_int(exported, "SELECT count(*) FROM devices WHERE arch <> 'gfx942'") == 0);
    /* provenance kept: the origin and uid are the original's */
    CHECK(db_query_int(exported, "SELECT count(*) FROM measurements WHERE origin <> '' AND uid IS NOT NULL") == 1);
    /* merge user + system: union, each measurement once, choices as overlay-free union */
    mt_db *sysdb = NULL, *m = NULL;
    CHECK_OK(mt_db_open(sys, MT_DB_READ, &sysdb));
    CHECK_OK(mt_db_open(merged, MT_DB_WRITE, &m));
    CHECK_OK(mt_db_copy_into(from, m, NULL, &copied));
    CHECK(copied == 2);
    CHECK_OK(mt_db_copy_into(sysdb, m, NULL, &copied));
    CHECK(copied == 2);
    CHECK_OK(mt_db_copy_into(from, m, NULL, &copied)); /* again: nothing new */
    CHECK(copied == 0);
    mt_db_close(m);
    CHECK(db_query_int(merged, "SELECT count(*) FROM measurements") == 4);
    CHECK(db_query_int(merged, "SELECT count(DISTINCT uid) FROM measurements") == 4);
    CHECK(db_query_int(merged, "SELECT count(DISTINCT origin) FROM measurements") >= 1);
    /* the conflicting key (sm_90 batch 8) has a measurement from each: both
     * are kept, each variant's latest counts, the faster wins */
    CHECK(db_query_int(merged, "SELECT count(*) FROM measurements m JOIN problems p ON p.id = m.problem_id "
                             "WHERE p.batch = 8") == 3);
    CHECK_OK(mt_db_open(merged, MT_DB_READ, &m));
    CHECK_OK(mt_db_load_choices(m, "sm_90", &c, &n));
    CHECK(n == 2);
    b8 = find_choice(c, n, "sm_90", 8);
    CHECK(b8 && strstr(b8->params, "tile_q=4,") && b8->median_ms == 1.0);
    mt_db_close(m);
    free(c);
    mt_db_close(from);
    mt_db_close(sysdb);
}

static void expect_open_error(const char *path, mt_db_mode mode, const char *fragment) {
    struct stat before, after;
    int existed = stat(path, &before) == 0;
    mt_db *db = NULL;
    mt_status st = mt_db_open(path, mode, &db);
    CHECK_MSG(st != MT_OK, "%s opened", path);
    CHECK_MSG(strstr(mt_last_error(), fragment) != NULL && strstr(mt_last_error(), path) != NULL,
              "message for %s: '%s' (expected '%s')", path, mt_last_error(), fragment);
    if (existed) {
        CHECK(stat(path, &after) == 0 && after.st_size == before.st_size && after.st_mtime == before.st_mtime);
    }
    mt_db_close(db);
}

static void test_bad_files(void) {
    char path[512];
    path_of(path, sizeof path, "text.db");
    FILE *f = fopen(path, "w");
    fputs("this is not a database, just some text that is long enough to fill a header......................\n", f);
    fclose(f);
    expect_open_error(path, MT_DB_READ, "not an SQLite database");
    expect_open_error(path, MT_DB_WRITE, "not an SQLite database");

    /* a truncated database */
    char good[512];
    path_of(good, sizeof good, "choice.db");
    path_of(path, sizeof path, "truncated.db");
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null && cp '%s' '%s'", good, good,
             path);
    CHECK(system(cmd) == 0);
    struct stat st;
    stat(path, &st);
    CHECK(truncate(path, st.st_size / 2) == 0);
    expect_open_error(path, MT_DB_READ, "damaged");

    /* a newer schema */
    path_of(path, sizeof path, "newer.db");
    CHECK_OK(mt_db_create_at_version(path, MT_DB_SCHEMA_VERSION));
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'PRAGMA user_version = %d'", path, MT_DB_SCHEMA_VERSION + 1);
    CHECK(system(cmd) == 0);
    expect_open_error(path, MT_DB_READ, "newer than this mla-tune");
    expect_open_error(path, MT_DB_WRITE, "newer than this mla-tune");

    /* a negative schema version (found by the fuzzer) */
    path_of(path, sizeof path, "negative.db");
    CHECK_OK(mt_db_create_at_version(path, 1));
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'PRAGMA user_version = -16777213'", path);
    CHECK(system(cmd) == 0);
    expect_open_error(path, MT_DB_READ, "invalid schema version");
    expect_open_error(path, MT_DB_WRITE, "invalid schema version");

    /* some other program's SQLite file */
    path_of(path, sizeof path, "foreign.db");
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE t(x)'", path);
    CHECK(system(cmd) == 0);
    expect_open_error(path, MT_DB_WRITE, "not an mla-tune one");

    /* an empty file opened for reading, a missing one */
    path_of(path, sizeof path, "empty.db");
    fclose(fopen(path, "w"));
    expect_open_error(path, MT_DB_READ, "empty");
    expect_open_error("/nonexistent/dir/x.db", MT_DB_READ, "cannot read database");

    /* a stored parameter outside the variant's range is rejected on load */
    path_of(path, sizeof path, "badvalue.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    CHECK_OK(put(db, "sm_90", key_of(16, 1, 1024), variant_with(4, 1), MT_MEASURE_OK, 1.0, 0.01));
    CHECK_OK(mt_db_recompute_choices(db));
    CHECK_OK(mt_db_exec(db, "UPDATE variants SET params = replace(params, 'tile_q=4', 'tile_q=5')"));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_STATUS(mt_db_load_choices(db, "sm_90", &c, &n), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "tile_q=5") && strstr(mt_last_error(), path), "%s", mt_last_error());
    CHECK(c == NULL && n == 0);
    CHECK_OK(mt_db_exec(db, "UPDATE variants SET params = 'tile_q=16;drop table x'"));
    CHECK_STATUS(mt_db_load_choices(db, "sm_90", &c, &n), MT_ERR_CORRUPT);
    mt_db_close(db);
}

/* A writer that records rows forever, reporting each committed one on a
 * pipe; killed with SIGKILL at a random moment.  Every reported row must be
 * there afterwards, and the file intact. */
static void test_sigkill_writer(void) {
    char path[512];
    path_of(path, sizeof path, "killed.db");
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        mt_db *db = NULL;
        if (mt_db_open(path, MT_DB_WRITE, &db) != MT_OK) _exit(2);
        for (int i = 1;; i++) {
            if (put(db, "sm_90", key_of(16, 1 + i % 50, 1024), variant_with(4, 1), MT_MEASURE_OK, i, 0) != MT_OK)
                _exit(3);
            if (write(fds[1], &i, sizeof i) != sizeof i) _exit(4);
        }
    }
    close(fds[1]);
    int last = 0, got;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (read(fds[0], &got, sizeof got) == sizeof got) last = got;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
    kill(pid, SIGKILL);
    /* drain what it reported before dying */
    while (read(fds[0], &got, sizeof got) == sizeof got) last = got;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK_MSG(last > 10, "writer committed only %d rows", last);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));  /* opens (recovers the WAL) */
    mt_db_close(db);
    int rows = db_query_int(path, "SELECT count(*) FROM measurements");
    CHECK_MSG(rows >= last, "%d committed rows reported, %d found", last, rows);
    CHECK(db_query_int(path, "SELECT count(*) FROM measurements WHERE median_ms BETWEEN 1 AND 1e9") == rows);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "test \"$(sqlite3 '%s' 'PRAGMA integrity_check')\" = ok", path);
    CHECK(system(cmd) == 0);
    printf("SIGKILL writer: %d rows reported committed, %d rows present\n", last, rows);
}

static void test_concurrency(void) {
    char path[512];
    path_of(path, sizeof path, "busy.db");
    const char *env = getenv("MLA_TUNE_CONCURRENCY_SECONDS");
    int seconds = env ? atoi(env) : 20;
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    CHECK_OK(put(db, "sm_90", key_of(16, 1, 1024), variant_with(4, 1), MT_MEASURE_OK, 1.0, 0));
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
    pid_t pids[9];
    fflush(stdout);  /* children must not repeat what is buffered */
    for (int k = 0; k < 9; k++) {
        pids[k] = fork();
        if (pids[k] == 0) {
            long ops = 0, errors = 0;
            time_t end = time(NULL) + seconds;
            while (time(NULL) < end) {
                mt_db *h = NULL;
                if (k == 0) {  /* the writer: measurements and choice recomputes */
                    if (mt_db_open(path, MT_DB_WRITE, &h) != MT_OK) {
                        fprintf(stderr, "writer open: %s\n", mt_last_error());
                        errors++;
                        continue;
                    }
                    for (int i = 0; i < 20; i++)
                        if (put(h, "sm_90", key_of(16, 1 + (int)(ops % 64), 1024), variant_with(4, 1), MT_MEASURE_OK,
                                1.0 + ops % 7, 0.01) != MT_OK) {
                            fprintf(stderr, "writer: %s\n", mt_last_error());
                            errors++;
                        } else {
                            ops++;
                        }
                    if (mt_db_recompute_choices(h) != MT_OK) errors++;
                } else {  /* a reader, as the runtime reads at start-up */
                    mt_choice *c = NULL;
                    int n = 0;
                    if (mt_db_open(path, MT_DB_READ, &h) != MT_OK || mt_db_load_choices(h, "sm_90", &c, &n) != MT_OK ||
                        n < 1) {
                        fprintf(stderr, "reader %d: %s\n", k, mt_last_error());
                        errors++;
                    } else {
                        ops++;
                    }
                    free(c);
                }
                mt_db_close(h);
            }
            printf("  process %d (%s): %ld operations, %ld errors\n", k, k ? "reader" : "writer", ops, errors);
            fflush(stdout);
            _exit(errors ? 1 : 0);
        }
    }
    for (int k = 0; k < 9; k++) {
        int status = 0;
        waitpid(pids[k], &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d saw errors", k);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "test \"$(sqlite3 '%s' 'PRAGMA integrity_check')\" = ok", path);
    CHECK(system(cmd) == 0);
    printf("8 readers + 1 writer for %d s: integrity_check ok\n", seconds);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-db-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_migrations();
    test_choice_rule();
    test_length_mixes();
    test_overlay_and_transfer();
    test_bad_files();
    test_sigkill_writer();
    test_concurrency();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_db");
}
