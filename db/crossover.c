/*
 * crossover.c - the measured crossover points between MLA prefill's two
 * forms (db/crossover.h): storing one, loading them back (one file, or the
 * user DB over the system DB), and carrying them along when measurements
 * are copied (transfer.c: export, import, merge).
 *
 * A point is a row of the `crossover` table (schema 6), one per (device,
 * heads, dtypes, sq, context): measuring the same point again replaces it,
 * as a newer sweep replaces nothing but adds a measurement.  Why replace
 * here: a point is already the median of its timed runs, and the rule
 * (runtime/api/crossover_pick.h) reads one pair of times per sq; keeping
 * history would only make every reader choose among rows.
 *
 * Devices: as for choices (choices.c), a device here is its arch and
 * compute units.  Rows of one GPU under two driver versions are two device
 * rows; the loader keeps the latest measured of such twins, so a reader
 * sees one point per (arch, compute units, heads, dtypes, sq, context).
 *
 * Every row is checked before it is used or copied (the same checks as
 * mt_db_put_crossover makes, plus those a hostile file needs: a text where
 * a time belongs, a context past an int): a bad row is MT_ERR_CORRUPT
 * naming the file and the row, so that it cannot reach the rule or spread
 * to another file.
 */
#define _GNU_SOURCE
#include "crossover.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "kernels/mla_decode/mla_decode.h"

/* The seven times of a point, in the table's column order. */
static const char *const time_names[7] = {"mqa_ms", "mha_ms", "mqa_absorb_ms", "mqa_attention_ms", "mqa_output_ms",
                                         "mha_decompress_ms", "mha_attention_ms"};

static void times_of(const mt_crossover_point *p, double t[7]) {
    t[0] = p->mqa_ms, t[1] = p->mha_ms, t[2] = p->mqa_absorb_ms, t[3] = p->mqa_attention_ms, t[4] = p->mqa_output_ms;
    t[5] = p->mha_decompress_ms, t[6] = p->mha_attention_ms;
}

static void set_times(mt_crossover_point *p, const double t[7]) {
    p->mqa_ms = t[0], p->mha_ms = t[1], p->mqa_absorb_ms = t[2], p->mqa_attention_ms = t[3], p->mqa_output_ms = t[4];
    p->mha_decompress_ms = t[5], p->mha_attention_ms = t[6];
}

/* What is wrong with p's values, as "n_heads 0 is outside 1..128" in why;
 * 0 when nothing is.  The one list of ranges for put, load and copy. */
static int point_problem(const mt_crossover_point *p, char *why, size_t size) {
    double t[7];
    times_of(p, t);
    if (p->n_heads < 1 || p->n_heads > 128)
        return snprintf(why, size, "n_heads %d is outside 1..128", p->n_heads), 1;
    if (p->q_dtype != MT_BF16 && p->q_dtype != MT_FP16)
        return snprintf(why, size, "q_dtype %d (%s) is not bf16 or fp16 (the decode kernel's q)", (int)p->q_dtype,
                        mt_dtype_name(p->q_dtype)), 1;
    if ((unsigned)p->kv_dtype > MT_FP8_E4M3_FNUZ)
        return snprintf(why, size, "kv_dtype %d is not a known dtype", (int)p->kv_dtype), 1;
    if (p->sq < 1 || p->sq > MT_DECODE_MAX_SQ)
        return snprintf(why, size, "sq %d is outside 1..%d", p->sq, MT_DECODE_MAX_SQ), 1;
    if (p->context < 0) return snprintf(why, size, "context %d is negative", p->context), 1;
    for (int i = 0; i < 7; i++)
        if (!isfinite(t[i]) || !(t[i] > 0))
            return snprintf(why, size, "%s %g is not a positive finite time", time_names[i], t[i]), 1;
    /* text is printed and compared: printable, and whole in its field */
    const struct { const char *name, *text; size_t size; } texts[] = {
        {"mqa_variant", p->mqa_variant, sizeof p->mqa_variant},
        {"mha_variant", p->mha_variant, sizeof p->mha_variant},
        {"blas", p->blas, sizeof p->blas},
    };
    for (int i = 0; i < 3; i++)
        if (!db_text_fits(texts[i].text, texts[i].size))
            return snprintf(why, size, "%s is not printable text of at most %zu characters", texts[i].name,
                            texts[i].size - 2), 1;
    return 0;
}

/* Binds the columns of an insert in the table's order (device_id ..
 * tool_version: ?1 .. ?17), for put and copy alike. */
static void bind_point(sqlite3_stmt *s, int64_t device_id, const mt_crossover_point *p, const char *tool_version) {
    double times[7];
    times_of(p, times);
    sqlite3_bind_int64(s, 1, device_id);
    sqlite3_bind_int(s, 2, p->n_heads);
    sqlite3_bind_text(s, 3, mt_dtype_name(p->q_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, mt_dtype_name(p->kv_dtype), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 5, p->sq);
    sqlite3_bind_int(s, 6, p->context);
    for (int i = 0; i < 7; i++) sqlite3_bind_double(s, 7 + i, times[i]);
    sqlite3_bind_text(s, 14, p->mqa_variant, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 15, p->mha_variant, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 16, p->blas, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 17, tool_version, -1, SQLITE_TRANSIENT);
}

mt_status mt_db_put_crossover(mt_db *db, int64_t device_id, const mt_crossover_point *p) {
    if (!db || !p) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_db_put_crossover: null argument");
    char why[160];
    if (point_problem(p, why, sizeof why))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: crossover point refused: %s", db->path, why);
    /* inside a caller's transaction, join it (as upsert does) */
    int own_tx = sqlite3_get_autocommit(db->h);
    mt_status st = own_tx ? begin_write(db) : MT_OK;
    if (st != MT_OK) return st;
    /* a device this file does not hold would be a dangling reference;
     * one of an arch no build knows, a row no reader accepts */
    sqlite3_stmt *s = NULL;
    mt_target t;
    if (sqlite3_prepare_v2(db->h, "SELECT arch, compute_units FROM devices WHERE id = ?1", -1, &s, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare crossover device");
        goto out;
    }
    sqlite3_bind_int64(s, 1, device_id);
    int rc = step(s);
    if (rc == SQLITE_ROW && (mt_target_for_arch(col_text(s, 0), &t) != MT_OK || sqlite3_column_int(s, 1) < 1))
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: crossover point refused: device %lld is %s with %d compute units",
                     db->path, (long long)device_id, col_text(s, 0), sqlite3_column_int(s, 1));
    else if (rc == SQLITE_DONE)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: crossover point refused: device_id %lld names no device of this "
                     "database (mt_db_put_device)", db->path, (long long)device_id);
    else if (rc != SQLITE_ROW)
        st = db_error(db, "read crossover device");
    sqlite3_finalize(s);
    s = NULL;
    if (st != MT_OK) goto out;
    if (sqlite3_prepare_v2(db->h,
                           "INSERT OR REPLACE INTO crossover(device_id, n_heads, q_dtype, kv_dtype, sq, context, mqa_ms,"
                           " mha_ms, mqa_absorb_ms, mqa_attention_ms, mqa_output_ms, mha_decompress_ms, mha_attention_ms,"
                           " mqa_variant, mha_variant, blas, tool_version, measured_at) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                           " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                           -1, &s, NULL) != SQLITE_OK) {
        st = db_error(db, "prepare crossover point");
        goto out;
    }
    bind_point(s, device_id, p, DB_TOOL_VERSION);
    if (step(s) != SQLITE_DONE) st = db_error(db, "write crossover point");
out:
    sqlite3_finalize(s);
    if (!own_tx) return st;
    if (st != MT_OK) {
        rollback(db);
        return st;
    }
    return commit(db);
}

/* --- reading ------------------------------------------------------------------
 * One query serves the loader and the copy: every column of the point and
 * of its device.  The loader adds `latest` (no newer row of the same arch,
 * compute units and point). */
enum {
    C_ID, C_ARCH, C_CUS, C_NAME, C_MEMORY, C_DRIVER, C_COMPILER, C_HEADS, C_QDT, C_KVDT, C_SQ, C_CONTEXT,
    C_TIMES, /* seven of them */
    C_MQA_VARIANT = C_TIMES + 7, C_MHA_VARIANT, C_BLAS, C_TOOL, C_MEASURED_AT
};

#define SELECT_POINTS                                                                                              \
    "SELECT x.id, d.arch, d.compute_units, d.name, d.memory_bytes, d.driver_version, d.compiler_version,"          \
    " x.n_heads, x.q_dtype, x.kv_dtype, x.sq, x.context, x.mqa_ms, x.mha_ms, x.mqa_absorb_ms, x.mqa_attention_ms," \
    " x.mqa_output_ms, x.mha_decompress_ms, x.mha_attention_ms, x.mqa_variant, x.mha_variant, x.blas,"          \
    " x.tool_version, x.measured_at "                                                                              \
    "FROM crossover x JOIN devices d ON d.id = x.device_id WHERE (?1 IS NULL OR d.arch = ?1) "

static const char *const latest_only =
    "AND NOT EXISTS (SELECT 1 FROM crossover y JOIN devices e ON e.id = y.device_id WHERE e.arch = d.arch"
    " AND e.compute_units = d.compute_units AND y.n_heads = x.n_heads AND y.q_dtype = x.q_dtype"
    " AND y.kv_dtype = x.kv_dtype AND y.sq = x.sq AND y.context = x.context"
    " AND (y.measured_at > x.measured_at OR (y.measured_at = x.measured_at AND y.id > x.id))) ";

static const char *const point_order = "ORDER BY d.arch, d.compute_units, x.n_heads, x.q_dtype, x.kv_dtype, x.context, x.sq";

/* The row under s as a point, checked: MT_ERR_CORRUPT naming the file and
 * the row when a value is out of range or of the wrong type. */
static mt_status read_point(const mt_db *db, sqlite3_stmt *s, mt_crossover_point *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->arch, sizeof p->arch, "%s", col_text(s, C_ARCH));
    p->compute_units = sqlite3_column_int(s, C_CUS);
    snprintf(p->device_name, sizeof p->device_name, "%s", col_text(s, C_NAME));
    p->n_heads = sqlite3_column_int(s, C_HEADS);
    p->sq = sqlite3_column_int(s, C_SQ);
    sqlite3_int64 context = sqlite3_column_int64(s, C_CONTEXT);
    p->context = context >= 0 && context <= 0x7fffffff ? (int)context : -1;
    double t[7];
    for (int i = 0; i < 7; i++) t[i] = sqlite3_column_double(s, C_TIMES + i);
    set_times(p, t);
    snprintf(p->mqa_variant, sizeof p->mqa_variant, "%s", col_text(s, C_MQA_VARIANT));
    snprintf(p->mha_variant, sizeof p->mha_variant, "%s", col_text(s, C_MHA_VARIANT));
    snprintf(p->blas, sizeof p->blas, "%s", col_text(s, C_BLAS));
    snprintf(p->measured_at, sizeof p->measured_at, "%s", col_text(s, C_MEASURED_AT));
    char why[200] = "";
    mt_target t_arch;
    int bad = 1;
    if (mt_dtype_parse(col_text(s, C_QDT), &p->q_dtype) != MT_OK ||
        mt_dtype_parse(col_text(s, C_KVDT), &p->kv_dtype) != MT_OK)
        snprintf(why, sizeof why, "%s", mt_last_error());
    else if (mt_target_for_arch(p->arch, &t_arch) != MT_OK)
        snprintf(why, sizeof why, "%s", mt_last_error());
    else if (p->compute_units < 1)
        snprintf(why, sizeof why, "its device has %d compute units", p->compute_units);
    else if (sqlite3_column_type(s, C_HEADS) != SQLITE_INTEGER || sqlite3_column_type(s, C_SQ) != SQLITE_INTEGER ||
             sqlite3_column_type(s, C_CONTEXT) != SQLITE_INTEGER)
        snprintf(why, sizeof why, "n_heads '%.20s', sq '%.20s', context '%.20s' are not all integers",
                 col_text(s, C_HEADS), col_text(s, C_SQ), col_text(s, C_CONTEXT));
    else if (p->context < 0)
        snprintf(why, sizeof why, "context %lld is outside 0..2^31-1", (long long)context);
    else
        bad = 0;
    for (int i = 0; i < 7 && !bad; i++)
        if (!db_time_usable(s, C_TIMES + i))
            bad = 1, snprintf(why, sizeof why, "%s '%.40s' is not a positive time", time_names[i],
                              col_text(s, C_TIMES + i));
    /* the stored text itself: a longer one was cut on reading */
    const struct { int col; size_t size; } texts[] = {
        {C_MQA_VARIANT, sizeof p->mqa_variant}, {C_MHA_VARIANT, sizeof p->mha_variant}, {C_BLAS, sizeof p->blas}};
    for (int i = 0; i < 3 && !bad; i++)
        if (!db_text_fits(col_text(s, texts[i].col), texts[i].size))
            bad = 1, snprintf(why, sizeof why, "%s is not printable text of at most %zu characters",
                              sqlite3_column_name(s, texts[i].col), texts[i].size - 2);
    if (!bad) bad = point_problem(p, why, sizeof why);
    if (!bad) return MT_OK;
    return mt_fail(MT_ERR_CORRUPT, "%s: invalid crossover point %lld (%.31s, %d CUs, N=%d %.16s/%.16s sq=%d context=%lld): %s",
                   db->path, (long long)sqlite3_column_int64(s, C_ID), p->arch, p->compute_units,
                   sqlite3_column_int(s, C_HEADS), col_text(s, C_QDT), col_text(s, C_KVDT),
                   sqlite3_column_int(s, C_SQ), (long long)context, why);
}

mt_status mt_db_load_crossover(mt_db *db, const char *arch, mt_crossover_point **out, int *n) {
    *out = NULL;
    *n = 0;
    char sql[2048];
    snprintf(sql, sizeof sql, "%s%s%s", SELECT_POINTS, latest_only, point_order);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK) return db_error(db, "read crossover points");
    if (arch) sqlite3_bind_text(s, 1, arch, -1, SQLITE_TRANSIENT);
    mt_crossover_point *list = NULL;
    int count = 0, cap = 0, rc;
    mt_status st = MT_OK;
    while ((rc = step(s)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            mt_crossover_point *grown = realloc(list, sizeof *grown * (size_t)cap);
            if (!grown) {
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            list = grown;
        }
        if ((st = read_point(db, s, &list[count])) != MT_OK) break;
        count++;
    }
    if (st == MT_OK && rc != SQLITE_DONE) st = db_error(db, "read crossover points");
    sqlite3_finalize(s);
    if (st != MT_OK || count == 0) {
        free(list);
        return st;
    }
    *out = list;
    *n = count;
    return MT_OK;
}

int mt_crossover_same_point(const mt_crossover_point *a, const mt_crossover_point *b) {
    return strcmp(a->arch, b->arch) == 0 && a->compute_units == b->compute_units && a->n_heads == b->n_heads &&
           a->q_dtype == b->q_dtype && a->kv_dtype == b->kv_dtype && a->sq == b->sq && a->context == b->context;
}

/* The loader's order (arch, compute units, heads, dtypes, context, sq);
 * dtype values sort as their names do. */
static int point_cmp(const void *pa, const void *pb) {
    const mt_crossover_point *a = pa, *b = pb;
    int c = strcmp(a->arch, b->arch);
    if (c) return c;
    const int ka[] = {a->compute_units, a->n_heads, (int)a->q_dtype, (int)a->kv_dtype, a->context, a->sq};
    const int kb[] = {b->compute_units, b->n_heads, (int)b->q_dtype, (int)b->kv_dtype, b->context, b->sq};
    for (int i = 0; i < 6; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* One file's points with their source (db_open_overlaid: a path that is
 * NULL or names no file is nothing when not required). */
static mt_status load_file(const char *path, int required, const char *arch, const char *source,
                           mt_crossover_point **out, int *n) {
    *out = NULL;
    *n = 0;
    mt_db *db = NULL;
    mt_status st = db_open_overlaid(path, required, &db);
    if (st == MT_OK && db) st = mt_db_load_crossover(db, arch, out, n);
    mt_db_close(db);
    for (int i = 0; i < *n; i++) snprintf((*out)[i].source, sizeof (*out)[i].source, "%s", source);
    return st;
}

mt_status mt_db_load_crossover_overlay(const char *user_path, int user_required, const char *system_path,
                                       int system_required, const char *arch, mt_crossover_point **out, int *n) {
    *out = NULL;
    *n = 0;
    mt_crossover_point *sys = NULL, *usr = NULL;
    int n_sys = 0, n_usr = 0;
    mt_status st = load_file(system_path, system_required, arch, "system", &sys, &n_sys);
    if (st == MT_OK) st = load_file(user_path, user_required, arch, "user", &usr, &n_usr);
    mt_crossover_point *all = st == MT_OK ? malloc(sizeof *all * (size_t)(n_sys + n_usr + 1)) : NULL;
    if (st == MT_OK && !all) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st != MT_OK) {
        free(sys), free(usr);
        return st;
    }
    int count = 0;
    for (int i = 0; i < n_usr; i++) all[count++] = usr[i];
    for (int i = 0; i < n_sys; i++) {
        int shadowed = 0;
        for (int j = 0; j < n_usr && !shadowed; j++) shadowed = mt_crossover_same_point(&sys[i], &usr[j]);
        if (!shadowed) all[count++] = sys[i];
    }
    free(sys), free(usr);
    qsort(all, (size_t)count, sizeof *all, point_cmp);
    if (count == 0) {
        free(all);
        all = NULL;
    }
    *out = all;
    *n = count;
    return MT_OK;
}

/* --- copying (transfer.c) ------------------------------------------------------ */

mt_status db_copy_crossover(mt_db *src, mt_db *dst, const char *arch, int *copied) {
    *copied = 0;
    /* a file of schema 5 or older migrated in memory has the table (empty) */
    char sql[2048];
    snprintf(sql, sizeof sql, "%s%s", SELECT_POINTS, "ORDER BY x.id");
    sqlite3_stmt *sel = NULL, *ins = NULL;
    if (sqlite3_prepare_v2(src->h, sql, -1, &sel, NULL) != SQLITE_OK) return db_error(src, "read crossover points");
    if (arch) sqlite3_bind_text(sel, 1, arch, -1, SQLITE_TRANSIENT);
    /* the same point in both: the newer measurement stays (a merge of two
     * hosts' runs, or an import of an older file, never goes back in time) */
    mt_status st = MT_OK;
    if (sqlite3_prepare_v2(dst->h,
                           "INSERT INTO crossover(device_id, n_heads, q_dtype, kv_dtype, sq, context, mqa_ms, mha_ms,"
                           " mqa_absorb_ms, mqa_attention_ms, mqa_output_ms, mha_decompress_ms, mha_attention_ms,"
                           " mqa_variant, mha_variant, blas, tool_version, measured_at) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) "
                           "ON CONFLICT(device_id, n_heads, q_dtype, kv_dtype, sq, context) DO UPDATE SET"
                           " mqa_ms = excluded.mqa_ms, mha_ms = excluded.mha_ms, mqa_absorb_ms = excluded.mqa_absorb_ms,"
                           " mqa_attention_ms = excluded.mqa_attention_ms, mqa_output_ms = excluded.mqa_output_ms,"
                           " mha_decompress_ms = excluded.mha_decompress_ms,"
                           " mha_attention_ms = excluded.mha_attention_ms, mqa_variant = excluded.mqa_variant,"
                           " mha_variant = excluded.mha_variant, blas = excluded.blas,"
                           " tool_version = excluded.tool_version, measured_at = excluded.measured_at"
                           " WHERE excluded.measured_at > crossover.measured_at",
                           -1, &ins, NULL) != SQLITE_OK)
        st = db_error(dst, "prepare copy of crossover points");
    int rc = SQLITE_DONE;
    while (st == MT_OK && (rc = step(sel)) == SQLITE_ROW) {
        mt_crossover_point p;
        if ((st = read_point(src, sel, &p)) != MT_OK) break;
        mt_device_info dev = {0};
        snprintf(dev.arch, sizeof dev.arch, "%s", p.arch);
        snprintf(dev.name, sizeof dev.name, "%s", p.device_name);
        dev.compute_units = p.compute_units;
        dev.total_memory = (size_t)sqlite3_column_int64(sel, C_MEMORY);
        snprintf(dev.driver_version, sizeof dev.driver_version, "%s", col_text(sel, C_DRIVER));
        int64_t device_id = 0;
        if ((st = mt_db_put_device(dst, &dev, col_text(sel, C_COMPILER), &device_id)) != MT_OK) break;
        sqlite3_reset(ins);
        bind_point(ins, device_id, &p, col_text(sel, C_TOOL));
        sqlite3_bind_text(ins, 18, p.measured_at, -1, SQLITE_TRANSIENT);
        if (step(ins) != SQLITE_DONE) {
            st = db_error(dst, "copy crossover point");
            break;
        }
        *copied += sqlite3_changes(dst->h);
    }
    if (st == MT_OK && rc != SQLITE_DONE) st = db_error(src, "read crossover points");
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    return st;
}
