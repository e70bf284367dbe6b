/*
 * key_rows.c - the measurements of a chosen key on its device (key_rows.h).
 */
#include "key_rows.h"

#include <sqlite3.h>

mt_status mt_key_rows(mt_db *db, const mt_choice *c, sqlite3_stmt **out) {
    static const char sql[] =
        "SELECT v.family, v.params, m.status, m.median_ms, m.spread_ms, d.compute_units FROM measurements m "
        "JOIN variants v ON v.id = m.variant_id JOIN problems p ON p.id = m.problem_id "
        "JOIN devices d ON d.id = m.device_id "
        "WHERE d.arch = ?1 AND p.kind = ?2 AND p.n_heads = ?3 AND p.sq = ?4 AND p.page_size = ?5 AND p.q_dtype = ?6 "
        "AND p.kv_dtype = ?7 AND p.batch = ?8 AND p.seq_len = ?9 AND p.d = ?10 AND p.dl = ?11 AND p.lengths = ?12 "
        "AND (?13 = 0 OR d.compute_units = ?13) ORDER BY m.measured_at, m.id";
    sqlite3 *h = mt_db_handle(db);
    sqlite3_stmt *s = NULL;
    *out = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &s, NULL) != SQLITE_OK)
        return mt_fail(MT_ERR_DATABASE, "%s: reading the measurements of a key: %s", mt_db_path(db), sqlite3_errmsg(h));
    sqlite3_bind_text(s, 1, c->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, c->key.kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, c->key.n_heads);
    sqlite3_bind_int(s, 4, c->key.sq);
    sqlite3_bind_int(s, 5, c->key.s.page_size);
    sqlite3_bind_text(s, 6, mt_dtype_name(c->key.s.q_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 7, mt_dtype_name(c->key.s.kv_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 8, c->key.batch);
    sqlite3_bind_int(s, 9, c->key.seq_len);
    sqlite3_bind_int(s, 10, c->key.s.d);
    sqlite3_bind_int(s, 11, c->key.s.dl);
    sqlite3_bind_text(s, 12, c->key.lengths, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 13, c->compute_units > 0 ? c->compute_units : 0);
    *out = s;
    return MT_OK;
}

int mt_key_row_variant(sqlite3_stmt *s, mt_variant *v, const char **status) {
    const char *family = (const char *)sqlite3_column_text(s, MT_ROW_FAMILY);
    const char *params = (const char *)sqlite3_column_text(s, MT_ROW_PARAMS);
    const mt_family *f = family ? mt_family_find(family) : NULL;
    *status = (const char *)sqlite3_column_text(s, MT_ROW_STATUS);
    if (!f || !params || !*status || mt_variant_parse(f, params, v) != MT_OK) {
        mt_clear_error();
        return 0;
    }
    return 1;
}
