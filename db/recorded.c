/*
 * recorded.c - the calls the runtime dispatched without an exact key
 * (opt-in, issue 25), counted per shape, and read back by
 * `mla-tune sweep --recorded`.
 *
 * The runtime counts in memory (runtime/api/recorder.c) and hands its counts
 * here at plan destroy: one transaction per hand-over, so a process killed
 * half-way loses at most that plan's counts and never leaves half of them.
 * A row per (device, shape, batch, mean, longest); a shape recorded again
 * adds its calls and moves last_at.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

mt_status mt_db_add_recorded(mt_db *db, const mt_recorded_call *calls, int n) {
    if (n <= 0) return MT_OK;
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "INSERT INTO recorded_calls(arch, compute_units, kind, q_dtype, kv_dtype, n_heads, sq, d, dl,"
                           " page_size, batch, seq_len, max_len, how, calls, first_at, last_at) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
                           " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
                           "ON CONFLICT(arch, compute_units, kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch, seq_len,"
                           " max_len) DO UPDATE SET calls = calls + excluded.calls, how = excluded.how,"
                           " last_at = excluded.last_at",
                           -1, &s, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare record call");
        rollback(db);
        return st;
    }
    for (int i = 0; i < n && st == MT_OK; i++) {
        const mt_recorded_call *c = &calls[i];
        if ((st = db_check_key(db, c->arch, &c->key)) != MT_OK) break;
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, c->arch, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(s, 2, c->compute_units);
        sqlite3_bind_text(s, 3, c->key.kind, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 4, mt_dtype_name(c->key.s.q_dtype), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, mt_dtype_name(c->key.s.kv_dtype), -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 6, c->key.n_heads);
        sqlite3_bind_int(s, 7, c->key.sq);
        sqlite3_bind_int(s, 8, c->key.s.d);
        sqlite3_bind_int(s, 9, c->key.s.dl);
        sqlite3_bind_int(s, 10, c->key.s.page_size);
        sqlite3_bind_int(s, 11, c->key.batch);
        sqlite3_bind_int(s, 12, c->key.seq_len);
        sqlite3_bind_int(s, 13, c->key.max_len > c->key.seq_len ? c->key.max_len : c->key.seq_len);
        sqlite3_bind_text(s, 14, c->how, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 15, c->calls);
        if (step(s) != SQLITE_DONE) st = db_error(db, "record call");
    }
    sqlite3_finalize(s);
    if (st != MT_OK) {
        rollback(db);
        return st;
    }
    return commit(db);
}

mt_status mt_db_load_recorded(mt_db *db, const char *arch, mt_recorded_call **out, int *n) {
    *out = NULL;
    *n = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT arch, compute_units, kind, q_dtype, kv_dtype, n_heads, sq, d, dl, page_size, batch,"
                           " seq_len, max_len, how, calls FROM recorded_calls WHERE ?1 IS NULL OR arch = ?1 "
                           "ORDER BY calls DESC, arch, compute_units, n_heads, sq, batch, seq_len, max_len",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, "read recorded calls");
    if (arch) sqlite3_bind_text(s, 1, arch, -1, SQLITE_TRANSIENT);
    mt_recorded_call *list = NULL;
    int count = 0, cap = 0, rc;
    mt_status st = MT_OK;
    while ((rc = step(s)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            mt_recorded_call *grown = realloc(list, sizeof *grown * (size_t)cap);
            if (!grown) {
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            list = grown;
        }
        mt_recorded_call *c = &list[count];
        memset(c, 0, sizeof *c);
        snprintf(c->arch, sizeof c->arch, "%s", col_text(s, 0));
        c->compute_units = sqlite3_column_int(s, 1);
        snprintf(c->key.kind, sizeof c->key.kind, "%s", col_text(s, 2));
        c->key.n_heads = sqlite3_column_int(s, 5);
        c->key.sq = sqlite3_column_int(s, 6);
        c->key.s.d = sqlite3_column_int(s, 7);
        c->key.s.dl = sqlite3_column_int(s, 8);
        c->key.s.page_size = sqlite3_column_int(s, 9);
        c->key.batch = sqlite3_column_int(s, 10);
        c->key.seq_len = sqlite3_column_int(s, 11);
        c->key.max_len = sqlite3_column_int(s, 12);
        snprintf(c->key.lengths, sizeof c->key.lengths, "uniform");
        snprintf(c->how, sizeof c->how, "%s", col_text(s, 13));
        c->calls = sqlite3_column_int64(s, 14);
        /* the same checks as every other row: a hostile file cannot plan a
         * sweep of 0-head problems */
        if (mt_dtype_parse(col_text(s, 3), &c->key.s.q_dtype) != MT_OK ||
            mt_dtype_parse(col_text(s, 4), &c->key.s.kv_dtype) != MT_OK) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid recorded call for %s N=%d batch=%d: %s", db->path, c->arch,
                         c->key.n_heads, c->key.batch, mt_last_error());
            break;
        }
        if ((st = db_check_key(db, c->arch, &c->key)) != MT_OK) break;
        if (c->calls < 1 || c->compute_units < 0 || (strcmp(c->how, "nearest") != 0 && strcmp(c->how, "heuristic") != 0)) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid recorded call for %s N=%d batch=%d: %lld calls on %d CUs, "
                         "dispatched by '%.20s' (nearest or heuristic)", db->path, c->arch, c->key.n_heads,
                         c->key.batch, (long long)c->calls, c->compute_units, c->how);
            break;
        }
        count++;
    }
    if (st == MT_OK && rc != SQLITE_DONE) st = db_error(db, "read recorded calls");
    sqlite3_finalize(s);
    if (st != MT_OK) {
        free(list);
        return st;
    }
    *out = list;
    *n = count;
    return MT_OK;
}
