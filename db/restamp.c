/*
 * restamp.c - measurement groups by validator, and moving a group to a new
 * hash (see restamp.h).
 */
#include "restamp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

mt_status mt_db_stamp_groups(mt_db *db, mt_stamp_group **out, int *n, int *skipped) {
    *out = NULL, *n = 0, *skipped = 0;
    sqlite3_stmt *sel = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT d.arch, d.compiler_version, v.family, v.params, p.q_dtype, p.kv_dtype, p.d, p.dl, "
                           "p.page_size, m.source_hash, count(*) FROM measurements m "
                           "JOIN devices d ON d.id = m.device_id JOIN variants v ON v.id = m.variant_id "
                           "JOIN problems p ON p.id = m.problem_id "
                           "WHERE m.source_hash IS NOT NULL AND m.source_hash != '' "
                           "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10",
                           -1, &sel, NULL) != SQLITE_OK)
        return db_error(db, "read measurement validators");
    mt_status st = MT_OK;
    int cap = 0, rc;
    while ((rc = step(sel)) == SQLITE_ROW) {
        mt_stamp_group g = {0};
        snprintf(g.arch, sizeof g.arch, "%s", col_text(sel, 0));
        snprintf(g.compiler_version, sizeof g.compiler_version, "%s", col_text(sel, 1));
        snprintf(g.family, sizeof g.family, "%s", col_text(sel, 2));
        snprintf(g.params, sizeof g.params, "%s", col_text(sel, 3));
        g.s.d = sqlite3_column_int(sel, 6), g.s.dl = sqlite3_column_int(sel, 7);
        g.s.page_size = sqlite3_column_int(sel, 8);
        snprintf(g.source_hash, sizeof g.source_hash, "%s", col_text(sel, 9));
        g.rows = sqlite3_column_int(sel, 10);
        /* what a choice could never be made of is not worth proving: a
         * text cut on reading, a bad dtype, a hash that is not one */
        if (strlen(col_text(sel, 3)) >= sizeof g.params || strlen(col_text(sel, 2)) >= sizeof g.family ||
            strlen(col_text(sel, 0)) >= sizeof g.arch || strlen(col_text(sel, 1)) >= sizeof g.compiler_version ||
            mt_dtype_parse(col_text(sel, 4), &g.s.q_dtype) != MT_OK ||
            mt_dtype_parse(col_text(sel, 5), &g.s.kv_dtype) != MT_OK || !db_source_hash_ok(g.source_hash)) {
            mt_clear_error();
            (*skipped)++;
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            mt_stamp_group *grown = realloc(*out, sizeof *grown * (size_t)cap);
            if (!grown) {
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            *out = grown;
        }
        (*out)[(*n)++] = g;
    }
    if (st == MT_OK && rc != SQLITE_DONE) st = db_error(db, "read measurement validators");
    sqlite3_finalize(sel);
    if (st != MT_OK) {
        free(*out);
        *out = NULL, *n = 0;
    }
    return st;
}

mt_status mt_db_restamp(mt_db *db, const mt_stamp_group *groups, const char (*new_hash)[65], int n, int *rows) {
    *rows = 0;
    if (db->mode != MT_DB_WRITE) return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: opened read-only", db->path);
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    sqlite3_stmt *up = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "UPDATE measurements SET source_hash = ?1 WHERE source_hash = ?2 "
                           "AND device_id IN (SELECT id FROM devices WHERE arch = ?3 AND compiler_version = ?4) "
                           "AND variant_id IN (SELECT id FROM variants WHERE family = ?5 AND params = ?6) "
                           "AND problem_id IN (SELECT id FROM problems WHERE q_dtype = ?7 AND kv_dtype = ?8 "
                           "AND d = ?9 AND dl = ?10 AND page_size = ?11)",
                           -1, &up, NULL) != SQLITE_OK) {
        st = db_error(db, "restamp measurements");
        rollback(db);
        return st;
    }
    for (int i = 0; i < n && st == MT_OK; i++) {
        const mt_stamp_group *g = &groups[i];
        if (!new_hash[i][0]) continue;
        if (!db_source_hash_ok(new_hash[i])) {
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "restamp: '%.70s' is not a hex SHA-256", new_hash[i]);
            break;
        }
        sqlite3_reset(up);
        sqlite3_bind_text(up, 1, new_hash[i], -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 2, g->source_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 3, g->arch, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 4, g->compiler_version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 5, g->family, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 6, g->params, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 7, mt_dtype_name(g->s.q_dtype), -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 8, mt_dtype_name(g->s.kv_dtype), -1, SQLITE_STATIC);
        sqlite3_bind_int(up, 9, g->s.d);
        sqlite3_bind_int(up, 10, g->s.dl);
        sqlite3_bind_int(up, 11, g->s.page_size);
        if (step(up) != SQLITE_DONE) st = db_error(db, "restamp measurements");
        else *rows += sqlite3_changes(db->h);
    }
    sqlite3_finalize(up);
    if (st != MT_OK) {
        rollback(db);
        *rows = 0;
        return st;
    }
    return commit(db);
}
