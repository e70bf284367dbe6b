/*
 * transfer.c - moving measurements between databases (export, import,
 * merge) and the default database paths (the system DB is found relative
 * to the installed binary or library: installed_datadir).
 *
 * Merge rule: a measurement is identified by its uid (a random 128-bit id
 * given when it was first recorded), so copying A into B twice, or merging
 * files that share history, never duplicates a row.  Measurements keep
 * their origin (host:pid of the sweep that made them), time and tool
 * version.  Devices, problems and variants are matched by their natural
 * keys.  Conflicts (two measurements of the same variant and key) are not
 * resolved by dropping one: both are kept, and the choices are recomputed
 * from the union (choices.c: the latest measurement per variant counts).
 * Crossover points (crossover.c) are one row per point: there the newer of
 * the two stays.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_internal.h"

#ifndef MT_INSTALL_DATADIR
#define MT_INSTALL_DATADIR "/usr/local/share"
#endif
/* PREFIX/share seen from PREFIX/lib (the library) and PREFIX/bin (the tool,
 * which links this code statically); cmake/install.cmake sets both from the
 * configured layout (lib/x86_64-linux-gnu is two levels deep) */
#ifndef MT_LIBDIR_TO_DATADIR
#define MT_LIBDIR_TO_DATADIR "../share"
#endif
#ifndef MT_BINDIR_TO_DATADIR
#define MT_BINDIR_TO_DATADIR "../share"
#endif

/* The share folder of the installation this code was loaded from, found at
 * run time so that an installed tree works wherever it is moved to
 * (cmake --install --prefix P, a tarball unpacked anywhere, a Python
 * wheel).  The code lives either in libmlatune.so (an engine) or in the
 * mla-tune executable: dladdr names the file, and the main program's
 * link-map entry has an empty name, for which /proc/self/exe is read.
 * Returns 0 unless DIR/mla-tune exists, i.e. unless this really is an
 * installed tree (a build tree has no share/mla-tune beside it). */
static int installed_datadir(char *out, size_t size) {
    Dl_info info;
    struct link_map *map = NULL;
    char file[PATH_MAX];
    if (!dladdr1((void *)installed_datadir, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return 0;
    int is_program = !map->l_name || !map->l_name[0];
    if (is_program) {
        ssize_t n = readlink("/proc/self/exe", file, sizeof file - 1);
        if (n <= 0) return 0;
        file[n] = '\0';
    } else if (!realpath(map->l_name, file)) {
        return 0;
    }
    char *slash = strrchr(file, '/');
    if (!slash) return 0;
    *slash = '\0';
    char dir[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/%s/mla-tune", file, is_program ? MT_BINDIR_TO_DATADIR : MT_LIBDIR_TO_DATADIR);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    dir[strlen(dir) - strlen("/mla-tune")] = '\0';
    char *real = realpath(dir, NULL);
    if (!real) return 0;
    snprintf(out, size, "%s", real);
    free(real);
    return 1;
}

void mt_db_default_paths(char *user, size_t user_size, char *system_db, size_t system_size) {
    const char *env = getenv("MLA_TUNE_DB");
    if (user) {
        if (env && env[0]) snprintf(user, user_size, "%s", env);
        else if (getenv("XDG_DATA_HOME") && getenv("XDG_DATA_HOME")[0])
            snprintf(user, user_size, "%s/mla-tune/tuning.db", getenv("XDG_DATA_HOME"));
        else snprintf(user, user_size, "%s/.local/share/mla-tune/tuning.db", getenv("HOME") ? getenv("HOME") : ".");
    }
    if (!system_db) return;
    env = getenv("MLA_TUNE_SYSTEM_DB");
    if (env && env[0]) {
        snprintf(system_db, system_size, "%s", env);
        return;
    }
    const char *search = getenv("MLA_TUNE_SYSTEM_DB_PATH");
    if (search && search[0]) {
        char *copy = strdup(search), *save = NULL;
        for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
            if (access(p, R_OK) == 0) {
                snprintf(system_db, system_size, "%s", p);
                free(copy);
                return;
            }
        free(copy);
    }
    /* the installation this code runs from, wherever it was moved; the
     * configured prefix only when that is not one (a build tree) */
    char datadir[PATH_MAX];
    if (!installed_datadir(datadir, sizeof datadir)) snprintf(datadir, sizeof datadir, "%s", MT_INSTALL_DATADIR);
    snprintf(system_db, system_size, "%s/mla-tune/tuning.db", datadir);
}

mt_status mt_db_copy_into(mt_db *src, mt_db *dst, const char *arch, int *copied) {
    mt_copy_counts counts;
    mt_status st = mt_db_copy_counted(src, dst, arch, &counts);
    *copied = counts.measurements;
    return st;
}

mt_status mt_db_copy_counted(mt_db *src, mt_db *dst, const char *arch, mt_copy_counts *counts) {
    memset(counts, 0, sizeof *counts);
    int *copied = &counts->measurements;
    sqlite3_stmt *sel = NULL, *ins = NULL;
    if (sqlite3_prepare_v2(src->h,
                           "SELECT d.arch, d.name, d.compute_units, d.memory_bytes, d.driver_version, d.compiler_version,"
                           " p.kind, p.q_dtype, p.kv_dtype, p.n_heads, p.sq, p.d, p.dl, p.page_size, p.batch, p.seq_len,"
                           " v.family, v.params, m.status, m.median_ms, m.min_ms, m.max_ms, m.spread_ms, m.reps,"
                           " m.error, m.tool_version, m.measured_at, m.origin, m.uid, p.lengths, p.max_len, m.source_hash "
                           "FROM measurements m JOIN devices d ON d.id = m.device_id "
                           "JOIN problems p ON p.id = m.problem_id JOIN variants v ON v.id = m.variant_id "
                           "WHERE ?1 IS NULL OR d.arch = ?1 ORDER BY m.id",
                           -1, &sel, NULL) != SQLITE_OK)
        return db_error(src, "read measurements");
    if (arch) sqlite3_bind_text(sel, 1, arch, -1, SQLITE_TRANSIENT);
    mt_status st = begin_write(dst);
    if (st != MT_OK) {
        sqlite3_finalize(sel);
        return st;
    }
    if (sqlite3_prepare_v2(dst->h,
                           "INSERT OR IGNORE INTO measurements(problem_id, variant_id, device_id, status, median_ms,"
                           " min_ms, max_ms, spread_ms, reps, error, tool_version, measured_at, origin, uid, source_hash) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                           -1, &ins, NULL) != SQLITE_OK) {
        st = db_error(dst, "prepare copy");
        goto out;
    }
    int rc;
    while ((rc = step(sel)) == SQLITE_ROW) {
        mt_device_info dev = {0};
        snprintf(dev.arch, sizeof dev.arch, "%s", col_text(sel, 0));
        snprintf(dev.name, sizeof dev.name, "%s", col_text(sel, 1));
        dev.compute_units = sqlite3_column_int(sel, 2);
        dev.total_memory = (size_t)sqlite3_column_int64(sel, 3);
        snprintf(dev.driver_version, sizeof dev.driver_version, "%s", col_text(sel, 4));
        mt_problem_key key = {0};
        snprintf(key.kind, sizeof key.kind, "%s", col_text(sel, 6));
        if (mt_dtype_parse(col_text(sel, 7), &key.s.q_dtype) != MT_OK ||
            mt_dtype_parse(col_text(sel, 8), &key.s.kv_dtype) != MT_OK) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: %s", src->path, mt_last_error());
            goto out;
        }
        key.n_heads = sqlite3_column_int(sel, 9);
        key.sq = sqlite3_column_int(sel, 10);
        key.s.d = sqlite3_column_int(sel, 11);
        key.s.dl = sqlite3_column_int(sel, 12);
        key.s.page_size = sqlite3_column_int(sel, 13);
        key.batch = sqlite3_column_int(sel, 14);
        key.seq_len = sqlite3_column_int(sel, 15);
        snprintf(key.lengths, sizeof key.lengths, "%s", col_text(sel, 29));
        key.max_len = sqlite3_column_int(sel, 30);
        /* every row passes what show and the runtime check (validate.c):
         * one bad row copied would make the whole destination unreadable */
        mt_variant v;
        if ((st = db_check_row(src, dev.arch, &key, col_text(sel, 16), col_text(sel, 17), &v)) != MT_OK) goto out;
        const char *status = col_text(sel, 18);
        int known = 0;
        for (int i = 0; i < 5; i++) known |= strcmp(status, mt_measure_status_name((mt_measure_status)i)) == 0;
        if (!known || (strcmp(status, "ok") == 0 && (!db_time_usable(sel, 19) || !db_spread_usable(sel, 22)))) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid measurement %s for %s N=%d batch=%d seq_len=%d: status '%s', "
                         "median_ms '%s', spread_ms '%s'", src->path, col_text(sel, 28), dev.arch, key.n_heads,
                         key.batch, key.seq_len, status, col_text(sel, 19), col_text(sel, 22));
            goto out;
        }
        int64_t device_id, problem_id, variant_id;
        if ((st = mt_db_put_device(dst, &dev, col_text(sel, 5), &device_id)) != MT_OK ||
            (st = mt_db_put_problem(dst, &key, &problem_id)) != MT_OK ||
            (st = mt_db_put_variant(dst, &v, &variant_id)) != MT_OK)
            goto out;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, problem_id);
        sqlite3_bind_int64(ins, 2, variant_id);
        sqlite3_bind_int64(ins, 3, device_id);
        for (int c = 18; c <= 26; c++) sqlite3_bind_value(ins, c - 14, sqlite3_column_value(sel, c));
        const char *origin = col_text(sel, 27);
        sqlite3_bind_text(ins, 13, origin && origin[0] ? origin : src->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_value(ins, 14, sqlite3_column_value(sel, 28));
        /* the validator travels with the measurement (NULL stays unknown);
         * only a hex digest is copied: it is compared and printed */
        const char *hash = col_text(sel, 31);
        if (!db_source_hash_ok(hash)) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid measurement %s: source_hash '%.80s' is not a hex SHA-256",
                         src->path, col_text(sel, 28), hash);
            goto out;
        }
        if (hash[0]) sqlite3_bind_text(ins, 15, hash, -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(ins, 15);
        if (step(ins) != SQLITE_DONE) {
            st = db_error(dst, "copy measurement");
            goto out;
        }
        *copied += sqlite3_changes(dst->h);
    }
    if (rc != SQLITE_DONE) st = db_error(src, "read measurements");
    /* the crossover points in the same transaction: a shipped file has
     * both or neither */
    if (st == MT_OK) st = db_copy_crossover(src, dst, arch, &counts->crossover_points);
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    if (st != MT_OK) {
        rollback(dst);
        return st;
    }
    if ((st = commit(dst)) != MT_OK) return st;
    return mt_db_recompute_choices(dst);
}

mt_status mt_db_make_shippable(mt_db *db) {
    /* rollback-journal mode: a WAL-mode file needs a writable folder (for
     * its -shm) even to be read, and the file is installed where users
     * cannot write (files.c).  The WAL is folded in first. */
    if (sqlite3_exec(db->h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK)
        return db_error(db, "checkpoint");
    sqlite3_stmt *s = NULL;
    int ok = sqlite3_prepare_v2(db->h, "PRAGMA journal_mode=DELETE", -1, &s, NULL) == SQLITE_OK &&
             step(s) == SQLITE_ROW && strcmp(col_text(s, 0), "delete") == 0;
    sqlite3_finalize(s);
    return ok ? MT_OK : db_error(db, "switch to rollback-journal mode");
}

void mt_db_env_required(int *user, int *system_db) {
    const char *u = getenv("MLA_TUNE_DB"), *s = getenv("MLA_TUNE_SYSTEM_DB");
    if (user) *user = u && u[0];
    if (system_db) *system_db = s && s[0];
}
