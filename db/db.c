/*
 * db.c - the tuning database (see db.h for what it holds, the path rules,
 * and the concurrency contract).
 *
 * Transaction boundaries, and why:
 *   - each measurement is one transaction (mt_db_record), so a sweep killed
 *     at any moment keeps every measurement it reported as done;
 *   - devices / problems / variants are upserted in their own small
 *     transactions before the measurement that refers to them; a kill
 *     between the two leaves an unreferenced row, which is harmless;
 *   - a migration is one transaction together with its user_version bump,
 *     so a file is always at exactly one schema version;
 *   - recomputing the choices deletes and rewrites them in one transaction,
 *     so a reader sees the old set or the new one.
 * Write transactions start with BEGIN IMMEDIATE (take the write lock up
 * front, so they cannot deadlock against another writer half-way) and are
 * retried while SQLITE_BUSY, on top of the busy timeout.
 */
#define _GNU_SOURCE
#include "db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/family.h"
#include "db_internal.h"

#define MT_APPLICATION_ID 0x4d4c4154 /* "MLAT" */
#define APPLICATION_ID_TEXT "1296843092" /* the same number, for SQL text */
_Static_assert(MT_APPLICATION_ID == 1296843092, "APPLICATION_ID_TEXT must match");

enum { BUSY_TIMEOUT_MS = 5000, BUSY_RETRY_LIMIT_MS = 120000 };


/* --- migrations -------------------------------------------------------------
 * migrations[i] takes a database from version i to version i + 1.  Never
 * edit one that has shipped: add a new one. */
static const char *const migrations[] = {
    /* 0 -> 1: the first schema */
    "CREATE TABLE devices("
    "  id INTEGER PRIMARY KEY, arch TEXT NOT NULL, name TEXT NOT NULL,"
    "  compute_units INTEGER NOT NULL, memory_bytes INTEGER NOT NULL,"
    "  driver_version TEXT NOT NULL, compiler_version TEXT NOT NULL,"
    "  UNIQUE(arch, name, compute_units, memory_bytes, driver_version, compiler_version));"
    "CREATE TABLE problems("
    "  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, q_dtype TEXT NOT NULL, kv_dtype TEXT NOT NULL,"
    "  n_heads INTEGER NOT NULL, sq INTEGER NOT NULL, d INTEGER NOT NULL, dl INTEGER NOT NULL,"
    "  page_size INTEGER NOT NULL, batch INTEGER NOT NULL, seq_len INTEGER NOT NULL,"
    "  UNIQUE(kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len));"
    "CREATE TABLE variants("
    "  id INTEGER PRIMARY KEY, family TEXT NOT NULL, params TEXT NOT NULL, UNIQUE(family, params));"
    "CREATE TABLE measurements("
    "  id INTEGER PRIMARY KEY,"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id),"
    "  variant_id INTEGER NOT NULL REFERENCES variants(id),"
    "  device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  status TEXT NOT NULL CHECK(status IN ('ok','wrong-result','compile-failed','launch-failed','timeout')),"
    "  median_ms REAL, min_ms REAL, max_ms REAL, reps INTEGER NOT NULL DEFAULT 0, error TEXT,"
    "  tool_version TEXT NOT NULL, measured_at TEXT NOT NULL);"
    "CREATE INDEX measurements_key ON measurements(problem_id, variant_id, device_id);",

    /* 1 -> 2: run-to-run spread, provenance and a global id per measurement
     * (so merges never duplicate a row), the runtime version of a device,
     * and the derived choices kept in a table instead of recomputed by
     * every reader */
    "ALTER TABLE devices ADD COLUMN runtime_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE measurements ADD COLUMN spread_ms REAL;"
    "ALTER TABLE measurements ADD COLUMN origin TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE measurements ADD COLUMN uid TEXT;"
    "UPDATE measurements SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;"
    "CREATE UNIQUE INDEX measurements_uid ON measurements(uid);"
    "CREATE TABLE choices("
    "  arch TEXT NOT NULL, problem_id INTEGER NOT NULL REFERENCES problems(id),"
    "  variant_id INTEGER NOT NULL REFERENCES variants(id),"
    "  median_ms REAL NOT NULL, default_ms REAL, reason TEXT NOT NULL,"
    "  PRIMARY KEY(arch, problem_id));",

    /* 2 -> 3: measured hardware ceilings per device (copy bandwidth, matrix
     * throughput), so reports can put every result against them */
    "CREATE TABLE ceilings("
    "  device_id INTEGER NOT NULL REFERENCES devices(id), kind TEXT NOT NULL, value REAL NOT NULL,"
    "  measured_at TEXT NOT NULL, PRIMARY KEY(device_id, kind, measured_at));",

    /* 3 -> 4: ragged batches: a key records how its requests' lengths were
     * made (a mix, tuner/lengths.h; 'uniform' for every key before) and the
     * longest request (seq_len is the mean), and two mixes of one batch and
     * mean are two keys.  A UNIQUE constraint cannot be altered, so the
     * table is rebuilt with the same ids (foreign keys are off while
     * migrating: mt_db_open turns them on after). */
    "CREATE TABLE problems_v4("
    "  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, q_dtype TEXT NOT NULL, kv_dtype TEXT NOT NULL,"
    "  n_heads INTEGER NOT NULL, sq INTEGER NOT NULL, d INTEGER NOT NULL, dl INTEGER NOT NULL,"
    "  page_size INTEGER NOT NULL, batch INTEGER NOT NULL, seq_len INTEGER NOT NULL,"
    "  lengths TEXT NOT NULL DEFAULT 'uniform', max_len INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE(kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len, lengths));"
    "INSERT INTO problems_v4(id, kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len, lengths,"
    "  max_len) SELECT id, kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len, 'uniform', seq_len"
    "  FROM problems;"
    "DROP TABLE problems;"
    "ALTER TABLE problems_v4 RENAME TO problems;",

    /* 4 -> 5 (issue 25): validators, choices per device, recorded calls.
     *  - measurements.source_hash: SHA-256 of the kernel text the variant
     *    compiled from (kernels/build.h); NULL for rows measured before it
     *    was recorded ("unknown": trusted, see choices.c).
     *  - choices are kept per device (arch and compute units: an H100 SXM
     *    with 132 SMs and an H20 with 78 are both sm_90) and carry the
     *    validators of the measurement they picked.  The old choices keep
     *    what they chose: each gets the device of its pick's latest ok
     *    measurement (0 compute units when none is found).
     *  - recorded_calls: what the runtime dispatched without an exact key,
     *    by log2 bucket, counted (opt-in; `sweep --recorded` tunes them). */
    "ALTER TABLE measurements ADD COLUMN source_hash TEXT;"
    "CREATE TABLE choices_v5("
    "  arch TEXT NOT NULL, compute_units INTEGER NOT NULL DEFAULT 0,"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id),"
    "  variant_id INTEGER NOT NULL REFERENCES variants(id),"
    "  median_ms REAL NOT NULL, default_ms REAL, reason TEXT NOT NULL,"
    "  device_name TEXT NOT NULL DEFAULT '', source_hash TEXT,"
    "  compiler_version TEXT NOT NULL DEFAULT '', driver_version TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY(arch, compute_units, problem_id));"
    "INSERT INTO choices_v5(arch, compute_units, problem_id, variant_id, median_ms, default_ms, reason, device_name,"
    "  source_hash, compiler_version, driver_version)"
    "  SELECT x.arch, coalesce(d.compute_units, 0), x.problem_id, x.variant_id, x.median_ms, x.default_ms, x.reason,"
    "    coalesce(d.name, ''), NULL, coalesce(d.compiler_version, ''), coalesce(d.driver_version, '')"
    "  FROM (SELECT c.*, (SELECT m.device_id FROM measurements m JOIN devices dd ON dd.id = m.device_id"
    "          WHERE m.problem_id = c.problem_id AND m.variant_id = c.variant_id AND dd.arch = c.arch"
    "          AND m.status = 'ok' ORDER BY m.measured_at DESC, m.id DESC LIMIT 1) AS device_id"
    "        FROM choices c) x LEFT JOIN devices d ON d.id = x.device_id;"
    "DROP TABLE choices;"
    "ALTER TABLE choices_v5 RENAME TO choices;"
    "CREATE TABLE recorded_calls("
    "  arch TEXT NOT NULL, compute_units INTEGER NOT NULL, kind TEXT NOT NULL, q_dtype TEXT NOT NULL,"
    "  kv_dtype TEXT NOT NULL, n_heads INTEGER NOT NULL, sq INTEGER NOT NULL, d INTEGER NOT NULL,"
    "  dl INTEGER NOT NULL, page_size INTEGER NOT NULL, batch INTEGER NOT NULL, seq_len INTEGER NOT NULL,"
    "  max_len INTEGER NOT NULL, how TEXT NOT NULL, calls INTEGER NOT NULL, first_at TEXT NOT NULL,"
    "  last_at TEXT NOT NULL,"
    "  PRIMARY KEY(arch, compute_units, kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len,"
    "    max_len));",

    /* 5 -> 6 (issue 29): the measured crossover between prefill's two forms
     * (db/crossover.h), one point per (device, heads, dtypes, sq, context):
     * a point measured again replaces the old one (crossover.c says why) */
    "CREATE TABLE crossover("
    "  id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  n_heads INTEGER NOT NULL, q_dtype TEXT NOT NULL, kv_dtype TEXT NOT NULL,"
    "  sq INTEGER NOT NULL, context INTEGER NOT NULL, mqa_ms REAL NOT NULL, mha_ms REAL NOT NULL,"
    "  mqa_absorb_ms REAL NOT NULL, mqa_attention_ms REAL NOT NULL, mqa_output_ms REAL NOT NULL,"
    "  mha_decompress_ms REAL NOT NULL, mha_attention_ms REAL NOT NULL,"
    "  mqa_variant TEXT NOT NULL, mha_variant TEXT NOT NULL, blas TEXT NOT NULL,"
    "  tool_version TEXT NOT NULL, measured_at TEXT NOT NULL,"
    "  UNIQUE(device_id, n_heads, q_dtype, kv_dtype, sq, context));",
};
_Static_assert(sizeof migrations / sizeof migrations[0] == MT_DB_SCHEMA_VERSION,
               "one migration per schema version");

mt_status db_error(mt_db *db, const char *what) {
    int code = sqlite3_errcode(db->h);
    if (code == SQLITE_NOTADB) return mt_fail(MT_ERR_CORRUPT, "%s is not an SQLite database", db->path);
    if (code == SQLITE_CORRUPT)
        return mt_fail(MT_ERR_CORRUPT, "%s is damaged (%s: %s)", db->path, what, sqlite3_errmsg(db->h));
    return mt_fail(MT_ERR_DATABASE, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* sqlite3_exec, retried while another connection holds the lock. */
static int exec_retry(sqlite3 *h, const char *sql) {
    int waited = 0, rc;
    while ((rc = sqlite3_exec(h, sql, NULL, NULL, NULL)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        if (waited >= BUSY_RETRY_LIMIT_MS) break;
        sleep_ms(10);
        waited += 10;
    }
    return rc;
}

mt_status begin_write(mt_db *db) {
    if (db->mode != MT_DB_WRITE) return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s is open read-only", db->path);
    if (exec_retry(db->h, "BEGIN IMMEDIATE") != SQLITE_OK) return db_error(db, "begin transaction");
    return MT_OK;
}

mt_status commit(mt_db *db) {
    if (exec_retry(db->h, "COMMIT") != SQLITE_OK) {
        mt_status st = db_error(db, "commit");
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return st;
    }
    return MT_OK;
}

void rollback(mt_db *db) { sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL); }

/* Steps a statement, retrying while busy. */
int step(sqlite3_stmt *stmt) {
    int waited = 0, rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_BUSY) {
        if (waited >= BUSY_RETRY_LIMIT_MS) break;
        sqlite3_reset(stmt);
        sleep_ms(10);
        waited += 10;
    }
    return rc;
}

static int query_int(sqlite3 *h, const char *sql, int *out) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(h, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = step(s);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int(s, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

static mt_status migrate(mt_db *db, int from) {
    for (int v = from; v < MT_DB_SCHEMA_VERSION; v++) {
        /* the version check and the change happen under one write lock, so
         * two processes opening an old file migrate it once */
        if (exec_retry(db->h, "BEGIN IMMEDIATE") != SQLITE_OK) return db_error(db, "begin migration");
        int now = 0;
        if (query_int(db->h, "PRAGMA user_version", &now) != SQLITE_OK) {
            rollback(db);
            return db_error(db, "read schema version");
        }
        if (now > v) {  /* someone else got there */
            rollback(db);
            v = now - 1;
            continue;
        }
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(db->h, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db->h, bump, NULL, NULL, NULL) != SQLITE_OK) {
            mt_status st = db_error(db, "migration");
            rollback(db);
            return mt_fail(st, "migrating %s from schema %d to %d failed: %s", db->path, v, v + 1, mt_last_error());
        }
        if (v == 0) sqlite3_exec(db->h, "PRAGMA application_id = " APPLICATION_ID_TEXT, NULL, NULL, NULL);
        mt_status st = commit(db);
        if (st != MT_OK) return st;
    }
    return MT_OK;
}

static void make_origin(mt_db *db) {
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    snprintf(db->origin, sizeof db->origin, "%.200s:%d", host, (int)getpid());
}

static mt_status open_handle(mt_db *db, const char *name, int flags) {
    if (sqlite3_open_v2(name, &db->h, flags, NULL) != SQLITE_OK) {
        mt_status st = mt_fail(MT_ERR_DATABASE, "cannot open %s: %s", db->path,
                               db->h ? sqlite3_errmsg(db->h) : "out of memory");
        sqlite3_close(db->h);
        db->h = NULL;
        return st;
    }
    sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db->h, 0);
    return MT_OK;
}

/* Checks the file is ours, intact, and not from a newer mla-tune.
 * *version gets its schema version. */
static mt_status inspect(mt_db *db, int *version) {
    int app = 0, tables = 0;
    if (query_int(db->h, "PRAGMA user_version", version) != SQLITE_OK) return db_error(db, "read schema version");
    if (query_int(db->h, "PRAGMA application_id", &app) != SQLITE_OK) return db_error(db, "read application id");
    if (query_int(db->h, "SELECT count(*) FROM sqlite_master", &tables) != SQLITE_OK)
        return db_error(db, "read schema");
    if (*version < 0)  /* found by fuzz_db: a negative version must not index the migrations */
        return mt_fail(MT_ERR_CORRUPT, "%s has an invalid schema version %d", db->path, *version);
    if (*version == 0 && tables > 0)
        return mt_fail(MT_ERR_CORRUPT, "%s is an SQLite database but not an mla-tune one (no schema version)",
                       db->path);
    if (*version > 0 && app != MT_APPLICATION_ID)
        return mt_fail(MT_ERR_CORRUPT, "%s is an SQLite database but not an mla-tune one (application id %d)",
                       db->path, app);
    if (*version > MT_DB_SCHEMA_VERSION)
        return mt_fail(MT_ERR_DATABASE,
                       "%s has schema version %d, newer than this mla-tune understands (%d): use a newer mla-tune",
                       db->path, *version, MT_DB_SCHEMA_VERSION);
    /* a cheap structural check catches truncated and damaged files up front */
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h, "PRAGMA quick_check", -1, &s, NULL) != SQLITE_OK) return db_error(db, "check");
    int rc = step(s);
    const char *result = rc == SQLITE_ROW ? col_text(s, 0) : NULL;
    mt_status st = MT_OK;
    if (rc != SQLITE_ROW) st = db_error(db, "integrity check");
    else if (!result || strcmp(result, "ok") != 0)
        st = mt_fail(MT_ERR_CORRUPT, "%s is damaged: %s", db->path, result ? result : "?");
    sqlite3_finalize(s);
    return st;
}

mt_status mt_db_open(const char *path, mt_db_mode mode, mt_db **out) {
    if (!path || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_db_open: null argument");
    *out = NULL;
    mt_db *db = calloc(1, sizeof *db);
    if (!db) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(db->path, sizeof db->path, "%s", path);
    db->mode = mode;
    make_origin(db);
    mt_status st;
    int version = 0;
    if (mode == MT_DB_READ) {
        if (access(path, R_OK) != 0) {
            st = mt_fail(MT_ERR_NOT_FOUND, "cannot read database %s: %s", path, strerror(errno));
            goto fail;
        }
        /* files.c: regular files only, whole pages, and how to read a WAL
         * file without leaving -wal/-shm or needing a writable folder */
        int wal = 0, query_only = 0;
        char name[3200];
        if ((st = db_check_file(path, &wal)) != MT_OK) goto fail;
        int flags = db_reader_flags(path, wal, name, sizeof name, &query_only);
        if ((st = open_handle(db, name, flags)) != MT_OK) goto fail;
        if (query_only) sqlite3_exec(db->h, "PRAGMA query_only=ON", NULL, NULL, NULL);
        if ((st = inspect(db, &version)) != MT_OK) goto fail;
        if (version == 0) {
            st = mt_fail(MT_ERR_CORRUPT, "%s is empty: not an mla-tune database", path);
            goto fail;
        }
        if (version < MT_DB_SCHEMA_VERSION) {
            /* migrate a private in-memory copy: reading never writes the file */
            sqlite3 *mem = NULL;
            if (sqlite3_open(":memory:", &mem) != SQLITE_OK) {
                sqlite3_close(mem);
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "cannot open an in-memory database");
                goto fail;
            }
            sqlite3_backup *bk = sqlite3_backup_init(mem, "main", db->h, "main");
            int rc = bk ? sqlite3_backup_step(bk, -1) : SQLITE_ERROR;
            sqlite3_backup_finish(bk);
            sqlite3_close(db->h);
            db->h = mem;
            if (rc != SQLITE_DONE) {
                st = db_error(db, "copy for migration");
                goto fail;
            }
            db->mode = MT_DB_WRITE;  /* the copy, not the file */
            st = migrate(db, version);
            db->mode = MT_DB_READ;
            if (st != MT_OK) goto fail;
        }
    } else {
        int was_wal = 0;
        if ((st = db_check_file(path, &was_wal)) != MT_OK) goto fail;
        if ((st = open_handle(db, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) != MT_OK) goto fail;
        if ((st = inspect(db, &version)) != MT_OK) goto fail;
        char *mode_text = NULL;
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db->h, "PRAGMA journal_mode=WAL", -1, &s, NULL) == SQLITE_OK && step(s) == SQLITE_ROW)
            mode_text = strdup(col_text(s, 0));
        sqlite3_finalize(s);
        int wal = mode_text && strcmp(mode_text, "wal") == 0;
        free(mode_text);
        if (!wal) {
            st = db_error(db, "switch to WAL mode");
            goto fail;
        }
        sqlite3_exec(db->h, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
        if ((st = migrate(db, version)) != MT_OK) goto fail;
    }
    sqlite3_exec(db->h, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    *out = db;
    return MT_OK;
fail:
    if (db->h) sqlite3_close(db->h);
    free(db);
    return st;
}

void mt_db_close(mt_db *db) {
    if (!db) return;
    sqlite3_close(db->h);
    free(db);
}

const char *mt_db_path(const mt_db *db) { return db->path; }
struct sqlite3 *mt_db_handle(mt_db *db) { return db->h; }

int mt_db_schema_version(mt_db *db) {
    int v = -1;
    query_int(db->h, "PRAGMA user_version", &v);
    return v;
}

mt_status mt_db_create_at_version(const char *path, int version) {
    if (version < 1 || version > MT_DB_SCHEMA_VERSION)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "no schema version %d", version);
    sqlite3 *h = NULL;
    if (sqlite3_open(path, &h) != SQLITE_OK) {
        sqlite3_close(h);
        return mt_fail(MT_ERR_DATABASE, "cannot create %s", path);
    }
    mt_status st = MT_OK;
    for (int v = 0; v < version && st == MT_OK; v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(h, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(h, bump, NULL, NULL, NULL) != SQLITE_OK)
            st = mt_fail(MT_ERR_DATABASE, "%s: %s", path, sqlite3_errmsg(h));
    }
    sqlite3_exec(h, "PRAGMA application_id = " APPLICATION_ID_TEXT, NULL, NULL, NULL);
    sqlite3_close(h);
    return st;
}

mt_status mt_db_exec(mt_db *db, const char *sql) {
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK) {
        st = db_error(db, "exec");
        rollback(db);
        return st;
    }
    return commit(db);
}

/* --- upserts ------------------------------------------------------------------ */

/* Runs an INSERT OR IGNORE then a SELECT id with the same bound values, in
 * one write transaction.  `bind` binds both statements identically. */
typedef void (*binder)(sqlite3_stmt *s, const void *arg);

static mt_status upsert(mt_db *db, const char *insert_sql, const char *select_sql, binder bind, const void *arg,
                        int64_t *id) {
    /* inside a caller's transaction (mt_db_copy_into), join it */
    int own_tx = sqlite3_get_autocommit(db->h);
    mt_status st = own_tx ? begin_write(db) : MT_OK;
    if (st != MT_OK) return st;
    sqlite3_stmt *ins = NULL, *sel = NULL;
    if (sqlite3_prepare_v2(db->h, insert_sql, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h, select_sql, -1, &sel, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare");
        goto out;
    }
    bind(ins, arg);
    if (step(ins) != SQLITE_DONE) {
        st = db_error(db, "insert");
        goto out;
    }
    bind(sel, arg);
    if (step(sel) != SQLITE_ROW) {
        st = db_error(db, "select id");
        goto out;
    }
    *id = sqlite3_column_int64(sel, 0);
out:
    sqlite3_finalize(ins);
    sqlite3_finalize(sel);
    if (!own_tx) return st;
    if (st != MT_OK) {
        rollback(db);
        return st;
    }
    return commit(db);
}

typedef struct device_arg { const mt_device_info *dev; const char *compiler; } device_arg;

static void bind_device(sqlite3_stmt *s, const void *p) {
    const device_arg *a = p;
    sqlite3_bind_text(s, 1, a->dev->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, a->dev->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, a->dev->compute_units);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)a->dev->total_memory);
    sqlite3_bind_text(s, 5, a->dev->driver_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, a->compiler ? a->compiler : "", -1, SQLITE_TRANSIENT);
}

mt_status mt_db_put_device(mt_db *db, const mt_device_info *dev, const char *compiler_version, int64_t *id) {
    device_arg a = {dev, compiler_version};
    return upsert(db,
                  "INSERT OR IGNORE INTO devices(arch, name, compute_units, memory_bytes, driver_version, "
                  "compiler_version) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                  "SELECT id FROM devices WHERE arch=?1 AND name=?2 AND compute_units=?3 AND memory_bytes=?4 AND "
                  "driver_version=?5 AND compiler_version=?6",
                  bind_device, &a, id);
}

static void bind_problem(sqlite3_stmt *s, const void *p) {
    const mt_problem_key *k = p;
    sqlite3_bind_text(s, 1, k->kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, mt_dtype_name(k->s.q_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, mt_dtype_name(k->s.kv_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, k->n_heads);
    sqlite3_bind_int(s, 5, k->sq);
    sqlite3_bind_int(s, 6, k->s.d);
    sqlite3_bind_int(s, 7, k->s.dl);
    sqlite3_bind_int(s, 8, k->s.page_size);
    sqlite3_bind_int(s, 9, k->batch);
    sqlite3_bind_int(s, 10, k->seq_len);
    sqlite3_bind_text(s, 11, k->lengths[0] ? k->lengths : "uniform", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 12, k->max_len > 0 ? k->max_len : k->seq_len);
}

mt_status mt_db_put_problem(mt_db *db, const mt_problem_key *key, int64_t *id) {
    return upsert(db,
                  "INSERT OR IGNORE INTO problems(kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, "
                  "seq_len, lengths, max_len) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                  "SELECT id FROM problems WHERE kind=?1 AND q_dtype=?2 AND kv_dtype=?3 AND n_heads=?4 AND sq=?5 "
                  "AND d=?6 AND dl=?7 AND page_size=?8 AND batch=?9 AND seq_len=?10 AND lengths=?11",
                  bind_problem, key, id);
}

typedef struct variant_arg { const char *family; char params[256]; } variant_arg;

static void bind_variant(sqlite3_stmt *s, const void *p) {
    const variant_arg *a = p;
    sqlite3_bind_text(s, 1, a->family, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, a->params, -1, SQLITE_TRANSIENT);
}

/* The id of a row written under one of the family's older names (a DB
 * from before a rename), so that the variant keeps its measurements; 0
 * when there is none. */
static int64_t variant_under_alias(mt_db *db, const mt_variant *v, const char *params) {
    int64_t id = 0;
    for (const char *const *alias = v->family->aliases; alias && *alias && !id; alias++) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db->h, "SELECT id FROM variants WHERE family=?1 AND params=?2", -1, &s, NULL) ==
            SQLITE_OK) {
            sqlite3_bind_text(s, 1, *alias, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(s, 2, params, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(s) == SQLITE_ROW) id = sqlite3_column_int64(s, 0);
        }
        sqlite3_finalize(s);
    }
    return id;
}

mt_status mt_db_put_variant(mt_db *db, const mt_variant *v, int64_t *id) {
    variant_arg a = {.family = v->family->name};
    mt_variant_format(v, a.params, sizeof a.params);
    if ((*id = variant_under_alias(db, v, a.params)) != 0) return MT_OK;
    return upsert(db, "INSERT OR IGNORE INTO variants(family, params) VALUES(?1, ?2)",
                  "SELECT id FROM variants WHERE family=?1 AND params=?2", bind_variant, &a, id);
}

const char *mt_measure_status_name(mt_measure_status s) {
    static const char *const names[] = {"ok", "wrong-result", "compile-failed", "launch-failed", "timeout"};
    return (unsigned)s < 5 ? names[s] : "?";
}

mt_status mt_db_record(mt_db *db, const mt_measurement *m) {
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "INSERT INTO measurements(problem_id, variant_id, device_id, status, median_ms, min_ms, "
                           "max_ms, spread_ms, reps, error, tool_version, measured_at, origin, uid, source_hash) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                           "strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?12, lower(hex(randomblob(16))), ?13)",
                           -1, &s, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare insert measurement");
        rollback(db);
        return st;
    }
    sqlite3_bind_int64(s, 1, m->problem_id);
    sqlite3_bind_int64(s, 2, m->variant_id);
    sqlite3_bind_int64(s, 3, m->device_id);
    sqlite3_bind_text(s, 4, mt_measure_status_name(m->status), -1, SQLITE_STATIC);
    if (m->status == MT_MEASURE_OK) {
        sqlite3_bind_double(s, 5, m->median_ms);
        sqlite3_bind_double(s, 6, m->min_ms);
        sqlite3_bind_double(s, 7, m->max_ms);
        sqlite3_bind_double(s, 8, m->spread_ms);
    }
    sqlite3_bind_int(s, 9, m->reps);
    if (m->error) sqlite3_bind_text(s, 10, m->error, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 11, DB_TOOL_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 12, db->origin, -1, SQLITE_STATIC);
    if (m->source_hash && m->source_hash[0]) sqlite3_bind_text(s, 13, m->source_hash, -1, SQLITE_TRANSIENT);
    if (step(s) != SQLITE_DONE) {
        st = db_error(db, "insert measurement");
        sqlite3_finalize(s);
        rollback(db);
        return st;
    }
    sqlite3_finalize(s);
    return commit(db);
}

mt_status mt_db_count_measurements(mt_db *db, int64_t problem_id, int64_t variant_id, int64_t device_id, int *count) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT count(*) FROM measurements WHERE problem_id=?1 AND variant_id=?2 AND device_id=?3",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, "prepare count");
    sqlite3_bind_int64(s, 1, problem_id);
    sqlite3_bind_int64(s, 2, variant_id);
    sqlite3_bind_int64(s, 3, device_id);
    mt_status st = MT_OK;
    if (step(s) == SQLITE_ROW) *count = sqlite3_column_int(s, 0);
    else st = db_error(db, "count measurements");
    sqlite3_finalize(s);
    return st;
}

mt_status mt_db_find_measurement(mt_db *db, int64_t problem_id, int64_t variant_id, int64_t device_id, int reps,
                                 const char *source_hash, mt_measurement *out, int *found) {
    *found = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT status, median_ms, min_ms, max_ms, coalesce(spread_ms, 0), reps FROM measurements "
                           "WHERE problem_id=?1 AND variant_id=?2 AND device_id=?3 AND (status <> 'ok' OR reps = ?4) "
                           "AND (?5 IS NULL OR source_hash = ?5) ORDER BY measured_at DESC, id DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, "prepare find measurement");
    sqlite3_bind_int64(s, 1, problem_id);
    sqlite3_bind_int64(s, 2, variant_id);
    sqlite3_bind_int64(s, 3, device_id);
    sqlite3_bind_int(s, 4, reps);
    if (source_hash && source_hash[0]) sqlite3_bind_text(s, 5, source_hash, -1, SQLITE_TRANSIENT);
    int rc = step(s);
    mt_status st = MT_OK;
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof *out);
        const char *status = col_text(s, 0);
        int known = 0;
        for (int i = 0; i < 5; i++)
            if (strcmp(status, mt_measure_status_name((mt_measure_status)i)) == 0)
                out->status = (mt_measure_status)i, known = 1;
        out->median_ms = sqlite3_column_double(s, 1);
        out->min_ms = sqlite3_column_double(s, 2);
        out->max_ms = sqlite3_column_double(s, 3);
        out->spread_ms = sqlite3_column_double(s, 4);
        out->reps = sqlite3_column_int(s, 5);
        /* an unknown status, or an "ok" row whose median is not a time
         * (text, NULL, <= 0), settles nothing: the job runs again instead of
         * a garbage median ranking first in a halving round (issue 25) */
        *found = known && (out->status != MT_MEASURE_OK || db_time_usable(s, 1));
    } else if (rc != SQLITE_DONE) {
        st = db_error(db, "find measurement");
    }
    sqlite3_finalize(s);
    return st;
}

mt_status mt_db_put_ceiling(mt_db *db, int64_t device_id, const char *kind, double value) {
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "INSERT OR REPLACE INTO ceilings(device_id, kind, value, measured_at) "
                           "VALUES(?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                           -1, &s, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare ceiling");
        rollback(db);
        return st;
    }
    sqlite3_bind_int64(s, 1, device_id);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 3, value);
    if (step(s) != SQLITE_DONE) {
        st = db_error(db, "insert ceiling");
        sqlite3_finalize(s);
        rollback(db);
        return st;
    }
    sqlite3_finalize(s);
    return commit(db);
}

mt_status mt_db_get_ceiling(mt_db *db, const char *arch, const char *kind, double *value) {
    *value = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT c.value FROM ceilings c JOIN devices d ON d.id = c.device_id "
                           "WHERE d.arch = ?1 AND c.kind = ?2 ORDER BY c.measured_at DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, "prepare read ceiling");
    sqlite3_bind_text(s, 1, arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_TRANSIENT);
    int rc = step(s);
    mt_status st = MT_OK;
    if (rc == SQLITE_ROW) *value = sqlite3_column_double(s, 0);
    else if (rc != SQLITE_DONE) st = db_error(db, "read ceiling");
    sqlite3_finalize(s);
    return st;
}
