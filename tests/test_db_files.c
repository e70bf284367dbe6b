/*
 * Database files as they are found in the field (issue 25's attack, each
 * with the exact input that broke it):
 *   1. a WAL-mode DB in a folder the reader cannot write (a root-owned
 *      PREFIX/share/mla-tune) is read by an unprivileged user: library,
 *      show and lookup; export writes rollback-journal files; show leaves
 *      no -wal/-shm beside a file it read;
 *   2. import, merge and export refuse rows that show and the runtime
 *      refuse (tile_q=999, num_splits=-4, page_size=3, an unknown arch) and
 *      leave the destination readable; 13: and say nothing of copies that
 *      failed;
 *   3. a garbage median (text, negative, NULL) on an ok row never wins, and
 *      the sweep's resume does not take it as a result;
 *   4. the committed H100 DBs, written before kv_stages, split_reduce and
 *      groups_per_cu existed, keep their default (default_ms and choices)
 *      through import;
 *   6. a FIFO as a DB path or as MLA_TUNE_DB is refused at once;
 *   7. a file cut ~100 bytes short is refused;
 *  13. a mistyped MLA_TUNE_DB is an error, not a silent heuristic; 65
 *      distinct winners for one shape do not make lookup fail.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "db/db.h"
#include "kernels/mla_decode/mla_decode.h"
#include "test_folder.h"

static const char *bin;

static int exists(const char *name) {
    char p[600];
    path_of(p, sizeof p, name);
    return access(p, F_OK) == 0;
}

/* Runs mla-tune with `args` in the test folder (env assignments may lead),
 * killed after 20 s so that a hang fails the check instead of the suite. */
static int run(const char *args, char *out, size_t size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && timeout -s KILL 20 env %s 2>&1", dir, args);
    return run_capture(cmd, out, size);
}

static int sql(const char *name, const char *text) {
    char p[600];
    path_of(p, sizeof p, name);
    sqlite3 *h = NULL;
    int rc = sqlite3_open(p, &h) == SQLITE_OK ? sqlite3_exec(h, text, NULL, NULL, NULL) : SQLITE_ERROR;
    sqlite3_close(h);
    return rc;
}

static mt_problem_key key_of(int batch) {
    mt_problem_key k = {.kind = "mla_decode",
            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
            .n_heads = 16, .sq = 1,
                        .batch = batch, .seq_len = 1024};
    return k;
}

static mt_variant variant_with(int tile_q, int splits) {
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    v.values[MT_P_TILE_Q] = tile_q;
    v.values[MT_P_NUM_SPLITS] = splits;
    return v;
}

static void put(mt_db *db, int batch, mt_variant v, double median) {
    mt_device_info dev = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    snprintf(dev.name, sizeof dev.name, "Test GPU");
    snprintf(dev.driver_version, sizeof dev.driver_version, "13.0");
    mt_problem_key k = key_of(batch);
    int64_t d = 0, p = 0, var = 0;
    CHECK_OK(mt_db_put_device(db, &dev, "nvrtc-13.0", &d));
    CHECK_OK(mt_db_put_problem(db, &k, &p));
    CHECK_OK(mt_db_put_variant(db, &v, &var));
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = d, .status = MT_MEASURE_OK,
                        .median_ms = median, .min_ms = median, .max_ms = median, .spread_ms = 0.001, .reps = 20};
    CHECK_OK(mt_db_record(db, &m));
}

/* A small WAL-mode DB: the default and a faster variant on two keys. */
static void make_db(const char *name) {
    char p[600];
    path_of(p, sizeof p, name);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(p, MT_DB_WRITE, &db));
    mt_variant dflt;
    mt_variant_default(&mt_family_mla_decode, &dflt);
    for (int b = 1; b <= 2; b++) {
        put(db, b, dflt, 1.0);
        put(db, b, variant_with(8, 4), 0.5);
    }
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
}

static int header_byte(const char *name, int offset) {
    char p[600];
    path_of(p, sizeof p, name);
    unsigned char h[100] = {0};
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    return n == sizeof h ? h[offset] : -1;
}

/* 1: read as an unprivileged user from a folder that user cannot write. */
static void test_read_only_folder(void) {
    char ro[600], db[700], cmd[2000], out[8192];
    path_of(ro, sizeof ro, "share");
    CHECK(mkdir(ro, 0755) == 0);
    make_db("share/tuning.db");
    CHECK(header_byte("share/tuning.db", 18) == 2);  /* WAL mode, as sweeps write */
    CHECK(!exists("share/tuning.db-wal") && !exists("share/tuning.db-shm"));
    CHECK(chmod(ro, 0555) == 0);
    snprintf(db, sizeof db, "%s/tuning.db", ro);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* root writes anywhere: become nobody to be the user who cannot */
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
        if (access(ro, W_OK) == 0) _exit(77);  /* (still allowed to write: nothing to show) */
        setenv("XDG_DATA_HOME", "/nonexistent", 1);  /* no user DB */
        mt_db *h = NULL;
        mt_choice *c = NULL;
        int n = 0;
        if (mt_db_open(db, MT_DB_READ, &h) != MT_OK || mt_db_load_choices(h, "sm_90", &c, &n) != MT_OK || n != 2) {
            fprintf(stderr, "library read: %s\n", mt_last_error());
            _exit(1);
        }
        free(c);
        mt_db_close(h);
        snprintf(cmd, sizeof cmd, "'%s' show --system-db '%s' >/dev/null 2>&1 || exit 2; "
                 "'%s' lookup --arch sm_90 --system-db '%s' --heads 16 --batch 1 --seq-len 1024 | grep -q 'exact key' "
                 "|| exit 3", bin, db, bin, db);
        int rc = system(cmd);
        _exit(WIFEXITED(rc) ? WEXITSTATUS(rc) : 4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("read-only folder: skipped (this process cannot become a user without write access)\n");
    else
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read-only folder: exit %d", WEXITSTATUS(status));
    CHECK(!exists("share/tuning.db-wal") && !exists("share/tuning.db-shm"));
    chmod(ro, 0755);

    /* export writes a rollback-journal file, readable where it is installed */
    snprintf(cmd, sizeof cmd, "'%s' export --arch sm_90 -o shipped.db --db share/tuning.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 0, "%s", out);
    CHECK(header_byte("shipped.db", 18) == 1 && header_byte("shipped.db", 19) == 1);
    CHECK(!exists("shipped.db-wal") && !exists("shipped.db-shm"));
    /* show leaves nothing beside a WAL-mode file it read */
    make_db("user.db");
    snprintf(cmd, sizeof cmd, "'%s' show --db user.db --system-db shipped.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 0 && strstr(out, "2 choices"), "%s", out);
    CHECK(!exists("user.db-wal") && !exists("user.db-shm"));
    CHECK(!exists("shipped.db-wal") && !exists("shipped.db-shm") && !exists("shipped.db-journal"));
}

/* 2 and 13: each hostile row is refused by import, merge and export, by
 * name, and the user DB stays readable. */
static void test_transfers_validate(void) {
    static const struct { const char *what, *sql, *expect; } bad[] = {
        {"tile_q=999", "UPDATE variants SET params = replace(params, 'tile_q=8,', 'tile_q=999,')", "tile_q=999"},
        {"num_splits=-4", "UPDATE variants SET params = replace(params, 'num_splits=4,', 'num_splits=-4,')",
         "num_splits=-4"},
        {"page_size=3", "UPDATE problems SET page_size = 3 WHERE batch = 2", "page"},
        {"unknown arch", "UPDATE devices SET arch = 'sm_999'", "sm_999"},
    };
    char cmd[2000], out[8192];
    make_db("good.db");
    make_db("mine.db");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char src[64];
        snprintf(src, sizeof src, "bad%zu.db", i);
        make_db(src);
        CHECK(sql(src, bad[i].sql) == SQLITE_OK);
        char mine[600];
        path_of(mine, sizeof mine, "mine.db");
        int rows = db_query_int(mine, "SELECT count(*) FROM measurements");
        snprintf(cmd, sizeof cmd, "'%s' import %s --db mine.db", bin, src);
        int rc = run(cmd, out, sizeof out);
        CHECK_MSG(rc == 1 && strstr(out, bad[i].expect) && strstr(out, src), "import %s: rc %d: %s", bad[i].what, rc,
                  out);
        CHECK(db_query_int(mine, "SELECT count(*) FROM measurements") == rows);
        snprintf(cmd, sizeof cmd, "'%s' show --db mine.db --system-db good.db", bin);
        CHECK_MSG(run(cmd, out, sizeof out) == 0, "show after import of %s: %s", bad[i].what, out);
        snprintf(cmd, sizeof cmd, "'%s' merge good.db %s -o merged%zu.db", bin, src, i);
        rc = run(cmd, out, sizeof out);
        char merged[64];
        snprintf(merged, sizeof merged, "merged%zu.db", i);
        CHECK_MSG(rc == 1 && strstr(out, bad[i].expect) && !exists(merged), "merge %s: rc %d: %s", bad[i].what, rc,
                  out);
        /* 13: no "N measurements from" line for the file that failed */
        char said[128];
        snprintf(said, sizeof said, "measurements from %s", src);
        CHECK_MSG(strstr(out, said) == NULL, "merge %s claims a copy: %s", bad[i].what, out);
        snprintf(cmd, sizeof cmd, "'%s' export --arch sm_90 --db %s -o exported%zu.db", bin, src, i);
        rc = run(cmd, out, sizeof out);
        if (i < 3)  /* (an arch other than sm_90 is not exported for sm_90) */
            CHECK_MSG(rc == 1 && strstr(out, "measurements from") == NULL, "export %s: rc %d: %s", bad[i].what, rc,
                      out);
    }
}

/* 3: median_ms as text, negative or NULL on an ok row never wins. */
static void test_garbage_medians(void) {
    static const char *const garbage[] = {"'fast'", "-1", "NULL", "0"};
    char p[600], cmd[1000], out[8192];
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "garbage%d.db", i);
        make_db(name);
        path_of(p, sizeof p, name);
        /* the faster variant's rows get the garbage */
        char text[600];
        snprintf(text, sizeof text, "UPDATE measurements SET median_ms = %s WHERE variant_id = "
                 "(SELECT id FROM variants WHERE params LIKE 'tile_q=8,%%')", garbage[i]);
        CHECK(sql(name, text) == SQLITE_OK);
        mt_db *db = NULL;
        CHECK_OK(mt_db_open(p, MT_DB_WRITE, &db));
        CHECK_OK(mt_db_recompute_choices(db));
        mt_choice *c = NULL;
        int n = 0;
        CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
        CHECK_MSG(n == 2 && c && strstr(c[0].params, "tile_q=16,") && c[0].median_ms == 1.0,
                  "median %s: chose %s at %g", garbage[i], n ? c[0].params : "-", n ? c[0].median_ms : 0);
        free(c);
        mt_db_close(db);
        /* and import refuses the row */
        snprintf(cmd, sizeof cmd, "'%s' import %s --db garbage-into.db", bin, name);
        CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "median_ms"), "import of median %s: %s", garbage[i],
                  out);
    }
    /* the sweep's resume does not take a garbage median as a result */
    make_db("garbage-resume.db");
    CHECK(sql("garbage-resume.db", "UPDATE measurements SET median_ms = 'fast'") == SQLITE_OK);
    path_of(p, sizeof p, "garbage-resume.db");
    mt_db *resume = NULL;
    CHECK_OK(mt_db_open(p, MT_DB_WRITE, &resume));
    mt_measurement found_m;
    int found = -1;
    CHECK_OK(mt_db_find_measurement(resume, 1, 1, 1, 20, NULL, &found_m, &found));
    CHECK(found == 0);
    mt_db_close(resume);
    /* a stored choice with a garbage median is refused on load */
    make_db("garbage-choice.db");
    CHECK(sql("garbage-choice.db", "UPDATE choices SET median_ms = 'x'") == SQLITE_OK);
    path_of(p, sizeof p, "garbage-choice.db");
    mt_db *db = NULL;
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_open(p, MT_DB_READ, &db));
    CHECK_STATUS(mt_db_load_choices(db, "sm_90", &c, &n), MT_ERR_CORRUPT);
    CHECK(strstr(mt_last_error(), "median_ms") != NULL);
    mt_db_close(db);
}

/* 4: the committed DBs keep their default through import. */
static void test_old_variant_strings(void) {
    static const char *const shipped[] = {"reports/h100/quick/tuning.db", "reports/h100/deepseek-v3-tp8-small/tuning.db"};
    char cmd[2000], out[8192], src[600], into[600];
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/%s", MT_SOURCE_DIR, shipped[i]);
        int keys = db_query_int(src, "SELECT count(*) FROM choices");
        CHECK(keys > 0 && db_query_int(src, "SELECT count(*) FROM choices WHERE default_ms IS NULL") == 0);
        /* a copy: the committed file is never written */
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/old%d.db'", src, dir, i);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "'%s' import old%d.db --db imported%d.db", bin, i, i);
        CHECK_MSG(run(cmd, out, sizeof out) == 0, "%s", out);
        snprintf(into, sizeof into, "%s/imported%d.db", dir, i);
        CHECK_MSG(db_query_int(into, "SELECT count(*) FROM choices") == keys, "%s: %d choices of %d", shipped[i],
                  db_query_int(into, "SELECT count(*) FROM choices"), keys);
        CHECK_MSG(db_query_int(into, "SELECT count(*) FROM choices WHERE default_ms IS NULL") == 0,
                  "%s: %d keys lost their default", shipped[i],
                  db_query_int(into, "SELECT count(*) FROM choices WHERE default_ms IS NULL"));
        /* the same winners as the copy's own choices derived in place (the
         * committed ones came from an older rule): each chosen variant,
         * parsed, and its default time */
        mt_db *a = NULL, *b = NULL;
        mt_choice *ca = NULL, *cb = NULL;
        int na = 0, nb = 0;
        snprintf(src, sizeof src, "%s/old%d.db", dir, i);
        CHECK_OK(mt_db_open(src, MT_DB_WRITE, &a));
        CHECK_OK(mt_db_recompute_choices(a));
        mt_db_close(a);
        CHECK(db_query_int(src, "SELECT count(*) FROM choices WHERE default_ms IS NULL") == 0);
        CHECK_OK(mt_db_open(src, MT_DB_READ, &a));
        CHECK_OK(mt_db_open(into, MT_DB_READ, &b));
        CHECK_OK(mt_db_load_choices(a, NULL, &ca, &na));
        CHECK_OK(mt_db_load_choices(b, NULL, &cb, &nb));
        int same = na == nb;
        for (int k = 0; k < na && same; k++) {
            mt_variant va, vb;
            same = mt_choice_same_key(&ca[k], &cb[k]) &&
                   mt_variant_parse(&mt_family_mla_decode, ca[k].params, &va) == MT_OK &&
                   mt_variant_parse(&mt_family_mla_decode, cb[k].params, &vb) == MT_OK &&
                   memcmp(va.values, vb.values, sizeof va.values) == 0 && ca[k].default_ms == cb[k].default_ms;
        }
        CHECK_MSG(same, "%s: choices changed by import", shipped[i]);
        free(ca), free(cb);
        mt_db_close(a), mt_db_close(b);
    }
}

/* 6: a FIFO named as a DB is refused at once, never opened blocking. */
static void test_fifo(void) {
    char fifo[600], cmd[2000], out[8192];
    path_of(fifo, sizeof fifo, "fifo.db");
    CHECK(mkfifo(fifo, 0644) == 0);
    alarm(60);  /* a hang in the library calls fails the test */
    mt_db *db = NULL;
    CHECK_STATUS(mt_db_open(fifo, MT_DB_READ, &db), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "FIFO") && strstr(mt_last_error(), fifo));
    CHECK_STATUS(mt_db_open(fifo, MT_DB_WRITE, &db), MT_ERR_INVALID_ARGUMENT);
    alarm(0);
    snprintf(cmd, sizeof cmd, "'%s' show --db fifo.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "FIFO"), "%s", out);
    make_db("fifo-system.db");
    snprintf(cmd, sizeof cmd, "MLA_TUNE_DB=fifo.db '%s' show --system-db fifo-system.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "FIFO"), "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' import fifo.db --db fifo-into.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "FIFO"), "%s", out);
}

/* 7: ~100 bytes cut off the end of a good file. */
static void test_small_truncation(void) {
    char src[600], cut[600], cmd[2000], out[8192];
    snprintf(src, sizeof src, "%s/reports/h100/quick/tuning.db", MT_SOURCE_DIR);
    path_of(cut, sizeof cut, "cut.db");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, cut);
    CHECK(system(cmd) == 0);
    struct stat st;
    CHECK(stat(cut, &st) == 0 && truncate(cut, st.st_size - 100) == 0);
    mt_db *db = NULL;
    CHECK_STATUS(mt_db_open(cut, MT_DB_READ, &db), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "truncated") && strstr(mt_last_error(), cut), "%s", mt_last_error());
    snprintf(cmd, sizeof cmd, "'%s' export --arch sm_90 --db cut.db -o from-cut.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "truncated") && !exists("from-cut.db"), "%s", out);
    /* a whole page cut off: the header's page count says so */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, cut);
    CHECK(system(cmd) == 0);
    CHECK(truncate(cut, st.st_size - 4096) == 0);
    CHECK_STATUS(mt_db_open(cut, MT_DB_READ, &db), MT_ERR_CORRUPT);
}

/* 13: MLA_TUNE_DB set to a file that does not exist is an error. */
static void test_mistyped_env(void) {
    char cmd[2000], out[8192];
    make_db("system.db");
    snprintf(cmd, sizeof cmd, "MLA_TUNE_DB=%s/tunning.db '%s' lookup --arch sm_90 --system-db system.db --heads 16 "
             "--batch 1 --seq-len 1024", dir, bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "tunning.db"), "%s", out);
    snprintf(cmd, sizeof cmd, "MLA_TUNE_DB=%s/tunning.db '%s' show --system-db system.db", dir, bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 1 && strstr(out, "tunning.db"), "%s", out);
}

static int collect(const mt_variant *v, void *user) {
    mt_variant *list = user;
    int *n = (int *)(list + 80);
    list[(*n)++] = *v;
    return *n == 65;
}

/* 13: 65 keys of one shape, each won by another variant: what show and
 * export accept, lookup (and plan creation, the same table) must too. */
static void test_many_winners(void) {
    mt_variant list[81];  /* 65 used; the count lives past the end of them */
    int *n = (int *)(list + 80);
    *n = 0;
    mt_space sp;
    mt_target t;
    mt_problem_key k = key_of(1);
    mt_space_full(&mt_family_mla_decode, &sp);
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_space_enumerate(&sp, &k.s, &t, collect, list, NULL);
    CHECK(*n == 65);
    char p[600], cmd[2000], out[65536];
    path_of(p, sizeof p, "many.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(p, MT_DB_WRITE, &db));
    for (int i = 0; i < *n; i++) put(db, i + 1, list[i], 1.0);
    CHECK_OK(mt_db_recompute_choices(db));
    mt_db_close(db);
    CHECK(db_query_int(p, "SELECT count(DISTINCT variant_id) FROM choices") == 65);
    snprintf(cmd, sizeof cmd, "'%s' show --db many.db --system-db many.db", bin);
    CHECK_MSG(run(cmd, out, sizeof out) == 0 && strstr(out, "65 choices"), "%s", out);
    for (int b = 1; b <= 65; b += 64) {
        snprintf(cmd, sizeof cmd, "'%s' lookup --arch sm_90 --db many.db --system-db many.db --heads 16 --batch %d "
                 "--seq-len 1024", bin, b);
        CHECK_MSG(run(cmd, out, sizeof out) == 0 && strstr(out, "key (batch "), "batch %d: %s", b, out);
    }
}

int main(void) {
    bin = getenv("MLA_TUNE_BIN");
    if (!bin) {
        printf("SKIP: MLA_TUNE_BIN not set\n");
        return CHECK_SKIP_CODE;
    }
    unsetenv("MLA_TUNE_DB");
    unsetenv("MLA_TUNE_SYSTEM_DB");
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-db-files-XXXXXX");
    if (!mkdtemp(dir) || chmod(dir, 0755) != 0) return 1;  /* the unprivileged reader must get in */
    test_read_only_folder();
    test_transfers_validate();
    test_garbage_medians();
    test_old_variant_strings();
    test_fifo();
    test_small_truncation();
    test_mistyped_env();
    test_many_winners();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_db_files");
}
