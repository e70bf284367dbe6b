/*
 * choices.c - deriving the chosen variant per (architecture, problem key)
 * from the measurements, and loading choices for the runtime and tools.
 *
 * The rule (documented in docs/tuning.md "How a winner is chosen"):
 *   0. Choices are per device: per (arch, compute units), since a split
 *      count tuned for 132 SMs is wrong for 78 (issue 25).  Devices that
 *      differ only in driver or compiler version are one device here: the
 *      latest measurement wins, and its validators go with the choice.
 *   1. For each (arch, compute units, problem, variant) only the latest
 *      measurement counts (by measured_at), and a variant that ever gave a
 *      wrong result for that key on that device is out for good.  The tools
 *      count only rows measured from the kernel text the variant compiles
 *      from now (mt_db_recompute_choices_of with the validators' check);
 *      the others are as if never measured.
 *   2. Candidates are the variants whose latest measurement is ok.  The best
 *      is the lowest median.
 *   3. Noise: every candidate whose median is within the best's spread of
 *      the best is tied with it (spread = p90 - p10 of the timed runs).  Only
 *      the best's spread counts: a candidate's own noise must not make it a
 *      tie (session 8: one 2.9 ms outlier gave a 71 us variant a 2.9 ms
 *      window, so it "tied" with the 26 us best and won by name).
 *   4. The family's default variant for that key and arch
 *      (mt_variant_default_for) wins if it is among the tied ("tie:
 *      default kept"), so noise never moves a deployment off the default.
 *      Otherwise the best wins ("fastest").  Until session 9 a tie without
 *      the default went to the variant whose parameter string sorts first:
 *      as stable, but it ran B=1 x 16384 at 22.3 us where the best measured
 *      19.8 (that key's spread is 2.7 us); the lowest median is just as
 *      deterministic.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db_internal.h"

typedef struct candidate {
    int64_t variant_id;     /* of its latest row */
    char device_name[64];   /* the latest row's device and validators */
    char source_hash[65];
    char compiler_version[64];
    char driver_version[32];
    mt_variant v;           /* parsed: rows are grouped by the variant, not its text */
    int status_ok;
    int ever_wrong;
    double median, spread;
} candidate;

typedef struct group {
    char arch[32];
    int compute_units;
    int64_t problem_id;
    mt_problem_static s;
    candidate *c;
    int n, cap;
} group;

/* The default a sweep measures for this key on this arch (see
 * mt_variant_default_for): what "gain over the default" compares with.
 * Compared as parsed values, not text: a variant stored before a
 * parameter was added has a shorter string (the committed H100 DBs lack
 * kv_stages, split_reduce, groups_per_cu) and is still the default. */
static int is_default(const candidate *c, const mt_variant *dflt, int have_default) {
    return have_default && c->v.family == dflt->family &&
           memcmp(c->v.values, dflt->values, sizeof dflt->values) == 0;
}

static mt_status choose_and_store(mt_db *db, sqlite3_stmt *ins, group *g) {
    const candidate *best = NULL;
    double default_ms = 0;
    mt_variant dflt;
    mt_target t;
    int have_default = g->n > 0 && mt_target_for_arch(g->arch, &t) == MT_OK &&
                       mt_variant_default_for(g->c[0].v.family, &g->s, &t, &dflt) == MT_OK;
    if (!have_default) mt_clear_error();
    for (int i = 0; i < g->n; i++) {
        const candidate *c = &g->c[i];
        if (!c->status_ok || c->ever_wrong) continue;
        if (!best || c->median < best->median) best = c;
        if (is_default(c, &dflt, have_default)) default_ms = c->median;
    }
    if (!best) return MT_OK;  /* nothing usable measured: the runtime falls back and says so */
    const candidate *pick = best;
    const char *reason = "fastest";
    for (int i = 0; i < g->n; i++) {
        const candidate *c = &g->c[i];
        if (!c->status_ok || c->ever_wrong || c == best) continue;
        if (c->median - best->median > best->spread || !is_default(c, &dflt, have_default)) continue;
        pick = c;
        reason = "tie: default kept";
    }
    sqlite3_reset(ins);
    sqlite3_bind_text(ins, 1, g->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 2, g->problem_id);
    sqlite3_bind_int64(ins, 3, pick->variant_id);
    sqlite3_bind_double(ins, 4, pick->median);
    if (default_ms > 0) sqlite3_bind_double(ins, 5, default_ms);
    else sqlite3_bind_null(ins, 5);
    sqlite3_bind_text(ins, 6, reason, -1, SQLITE_STATIC);
    sqlite3_bind_int(ins, 7, g->compute_units);
    sqlite3_bind_text(ins, 8, pick->device_name, -1, SQLITE_TRANSIENT);
    if (pick->source_hash[0]) sqlite3_bind_text(ins, 9, pick->source_hash, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(ins, 9);
    sqlite3_bind_text(ins, 10, pick->compiler_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 11, pick->driver_version, -1, SQLITE_TRANSIENT);
    if (step(ins) != SQLITE_DONE) return db_error(db, "insert choice");
    return MT_OK;
}

mt_status mt_db_recompute_choices(mt_db *db) { return mt_db_recompute_choices_of(db, NULL, NULL); }

mt_status mt_db_recompute_choices_of(mt_db *db, mt_row_usable_fn usable, void *ctx) {
    mt_status st = begin_write(db);
    if (st != MT_OK) return st;
    sqlite3_stmt *sel = NULL, *ins = NULL;
    group g = {0};
    /* rows of one (arch, problem) come together, oldest first: for each
     * variant the last one seen is the latest */
    if (sqlite3_exec(db->h, "DELETE FROM choices", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h,
                           "SELECT d.arch, m.problem_id, m.variant_id, v.family, v.params, m.status, m.median_ms, "
                           "m.spread_ms, p.d, p.dl, p.page_size, p.q_dtype, p.kv_dtype, p.kind, p.n_heads, p.sq, "
                           "p.batch, p.seq_len, p.lengths, p.max_len, d.compute_units, d.name, m.source_hash, "
                           "d.compiler_version, d.driver_version FROM measurements m "
                           "JOIN devices d ON d.id = m.device_id JOIN variants v ON v.id = m.variant_id "
                           "JOIN problems p ON p.id = m.problem_id "
                           "ORDER BY d.arch, d.compute_units, m.problem_id, m.measured_at, m.id",
                           -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h,
                           "INSERT INTO choices(arch, problem_id, variant_id, median_ms, default_ms, reason, "
                           "compute_units, device_name, source_hash, compiler_version, driver_version) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                           -1, &ins, NULL) != SQLITE_OK) {
        st = db_error(db, "recompute choices");
        goto out;
    }
    int rc;
    while ((rc = step(sel)) == SQLITE_ROW) {
        const char *arch = col_text(sel, 0);
        int64_t problem = sqlite3_column_int64(sel, 1), variant = sqlite3_column_int64(sel, 2);
        int cus = sqlite3_column_int(sel, 20);
        if (g.n > 0 && (strcmp(arch, g.arch) != 0 || cus != g.compute_units || problem != g.problem_id)) {
            if ((st = choose_and_store(db, ins, &g)) != MT_OK) goto out;
            g.n = 0;
        }
        snprintf(g.arch, sizeof g.arch, "%s", arch);
        g.compute_units = cus;
        g.problem_id = problem;
        mt_problem_key key = {.s = {.d = sqlite3_column_int(sel, 8), .dl = sqlite3_column_int(sel, 9),
                                    .page_size = sqlite3_column_int(sel, 10)},
                              .n_heads = sqlite3_column_int(sel, 14), .sq = sqlite3_column_int(sel, 15),
                              .batch = sqlite3_column_int(sel, 16), .seq_len = sqlite3_column_int(sel, 17),
                              .max_len = sqlite3_column_int(sel, 19)};
        snprintf(key.kind, sizeof key.kind, "%s", col_text(sel, 13));
        snprintf(key.lengths, sizeof key.lengths, "%s", col_text(sel, 18));
        /* a row that loading would refuse (bad dtype, key, family,
         * parameter) is never a candidate: a choice must always load */
        mt_variant v;
        if (mt_dtype_parse(col_text(sel, 11), &key.s.q_dtype) != MT_OK ||
            mt_dtype_parse(col_text(sel, 12), &key.s.kv_dtype) != MT_OK ||
            db_check_row(db, arch, &key, col_text(sel, 3), col_text(sel, 4), &v) != MT_OK ||
            !db_source_hash_ok(col_text(sel, 22))) {
            mt_clear_error();
            continue;
        }
        /* a row of other kernel text than its variant's now: as if never
         * measured (mt_row_usable_fn says why) */
        if (usable && col_text(sel, 22)[0] && !usable(arch, &key.s, &v, col_text(sel, 22), ctx)) continue;
        g.s = key.s;
        candidate *c = NULL;
        for (int i = 0; i < g.n && !c; i++)
            if (g.c[i].v.family == v.family && memcmp(g.c[i].v.values, v.values, sizeof v.values) == 0) c = &g.c[i];
        if (!c) {
            if (g.n == g.cap) {
                g.cap = g.cap ? 2 * g.cap : 64;
                candidate *grown = realloc(g.c, sizeof *grown * (size_t)g.cap);
                if (!grown) {
                    st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                    goto out;
                }
                g.c = grown;
            }
            c = &g.c[g.n++];
            memset(c, 0, sizeof *c);
            c->v = v;
        }
        /* a garbage time (NULL, text, negative, infinite) on an "ok" row
         * makes that row unusable, never the fastest */
        const char *status = col_text(sel, 5);
        c->variant_id = variant;
        snprintf(c->device_name, sizeof c->device_name, "%s", col_text(sel, 21));
        snprintf(c->source_hash, sizeof c->source_hash, "%s", col_text(sel, 22));
        snprintf(c->compiler_version, sizeof c->compiler_version, "%s", col_text(sel, 23));
        snprintf(c->driver_version, sizeof c->driver_version, "%s", col_text(sel, 24));
        c->status_ok = strcmp(status, "ok") == 0 && db_time_usable(sel, 6);
        c->ever_wrong |= strcmp(status, "wrong-result") == 0;
        c->median = sqlite3_column_double(sel, 6);
        c->spread = db_spread_usable(sel, 7) ? sqlite3_column_double(sel, 7) : 0;
    }
    if (rc != SQLITE_DONE) {
        st = db_error(db, "read measurements");
        goto out;
    }
    if (g.n > 0) st = choose_and_store(db, ins, &g);
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    free(g.c);
    if (st != MT_OK) {
        rollback(db);
        return st;
    }
    return commit(db);
}

/* The device's name and versions are free text from the file: kept for
 * the terminal and reports only with their control bytes turned into '?'
 * (an escape sequence must not reach a terminal through `show --stale`). */
static void copy_shown_text(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src);
    for (unsigned char *p = (unsigned char *)dst; *p; p++)
        if (*p < 0x20 || *p == 0x7f) *p = '?';
}

mt_status mt_db_load_choices(mt_db *db, const char *arch, mt_choice **out, int *n) {
    *out = NULL;
    *n = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h,
                           "SELECT c.arch, p.kind, p.q_dtype, p.kv_dtype, p.n_heads, p.sq, p.d, p.dl, p.page_size, "
                           "p.batch, p.seq_len, v.family, v.params, c.median_ms, coalesce(c.default_ms, 0), c.reason, "
                           "p.lengths, p.max_len, c.compute_units, c.device_name, coalesce(c.source_hash, ''), "
                           "c.compiler_version, c.driver_version "
                           "FROM choices c JOIN problems p ON p.id = c.problem_id JOIN variants v ON v.id = c.variant_id "
                           "WHERE ?1 IS NULL OR c.arch = ?1 "
                           "ORDER BY c.arch, c.compute_units DESC, p.kind, p.q_dtype, p.kv_dtype, p.n_heads, p.sq, p.page_size, p.batch, p.seq_len, "
                           "p.lengths",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, "read choices");
    if (arch) sqlite3_bind_text(s, 1, arch, -1, SQLITE_TRANSIENT);
    mt_choice *list = NULL;
    int count = 0, cap = 0, rc;
    mt_status st = MT_OK;
    while ((rc = step(s)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            mt_choice *grown = realloc(list, sizeof *grown * (size_t)cap);
            if (!grown) {
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            list = grown;
        }
        mt_choice *c = &list[count];
        memset(c, 0, sizeof *c);
        snprintf(c->arch, sizeof c->arch, "%s", col_text(s, 0));
        snprintf(c->key.kind, sizeof c->key.kind, "%s", col_text(s, 1));
        const char *qd = col_text(s, 2), *kd = col_text(s, 3);
        c->key.n_heads = sqlite3_column_int(s, 4);
        c->key.sq = sqlite3_column_int(s, 5);
        c->key.s.d = sqlite3_column_int(s, 6);
        c->key.s.dl = sqlite3_column_int(s, 7);
        c->key.s.page_size = sqlite3_column_int(s, 8);
        c->key.batch = sqlite3_column_int(s, 9);
        c->key.seq_len = sqlite3_column_int(s, 10);
        snprintf(c->key.lengths, sizeof c->key.lengths, "%s", col_text(s, 16));
        c->key.max_len = sqlite3_column_int(s, 17);
        c->compute_units = sqlite3_column_int(s, 18);
        copy_shown_text(c->device_name, sizeof c->device_name, col_text(s, 19));
        snprintf(c->source_hash, sizeof c->source_hash, "%s", col_text(s, 20));
        copy_shown_text(c->compiler_version, sizeof c->compiler_version, col_text(s, 21));
        copy_shown_text(c->driver_version, sizeof c->driver_version, col_text(s, 22));
        snprintf(c->family, sizeof c->family, "%s", col_text(s, 11));
        snprintf(c->params, sizeof c->params, "%s", col_text(s, 12));
        c->median_ms = sqlite3_column_double(s, 13);
        c->default_ms = sqlite3_column_double(s, 14);
        snprintf(c->reason, sizeof c->reason, "%s", col_text(s, 15));
        /* every stored value is checked before anyone can launch with it */
        mt_variant v;
        if (mt_dtype_parse(qd, &c->key.s.q_dtype) != MT_OK || mt_dtype_parse(kd, &c->key.s.kv_dtype) != MT_OK) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid choice for %s N=%d Sq=%d batch=%d seq_len=%d (dtype): %s",
                         db->path, c->arch, c->key.n_heads, c->key.sq, c->key.batch, c->key.seq_len, mt_last_error());
            break;
        }
        if ((st = db_check_row(db, c->arch, &c->key, c->family, c->params, &v)) != MT_OK) break;
        if (!db_time_usable(s, 13)) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid choice for %s N=%d Sq=%d batch=%d seq_len=%d: median_ms '%s' "
                         "is not a positive time", db->path, c->arch, c->key.n_heads, c->key.sq, c->key.batch,
                         c->key.seq_len, col_text(s, 13));
            break;
        }
        if (!db_source_hash_ok(col_text(s, 20))) {
            st = mt_fail(MT_ERR_CORRUPT, "%s: invalid choice for %s N=%d Sq=%d batch=%d seq_len=%d: source_hash "
                         "'%.80s' is not a hex SHA-256", db->path, c->arch, c->key.n_heads, c->key.sq, c->key.batch,
                         c->key.seq_len, col_text(s, 20));
            break;
        }
        if (c->default_ms < 0 || !isfinite(c->default_ms)) c->default_ms = 0;  /* shown only */
        count++;
    }
    if (st == MT_OK && rc != SQLITE_DONE) st = db_error(db, "read choices");
    sqlite3_finalize(s);
    if (st != MT_OK) {
        free(list);
        return st;
    }
    *out = list;
    *n = count;
    return MT_OK;
}

int mt_choice_same_key(const mt_choice *a, const mt_choice *b) {
    return strcmp(a->arch, b->arch) == 0 && a->compute_units == b->compute_units && strcmp(a->key.kind, b->key.kind) == 0 &&
           a->key.s.q_dtype == b->key.s.q_dtype && a->key.s.kv_dtype == b->key.s.kv_dtype && a->key.s.d == b->key.s.d &&
           a->key.s.dl == b->key.s.dl && a->key.s.page_size == b->key.s.page_size && a->key.n_heads == b->key.n_heads &&
           a->key.sq == b->key.sq && a->key.batch == b->key.batch && a->key.seq_len == b->key.seq_len &&
           strcmp(a->key.lengths, b->key.lengths) == 0;
}

mt_status db_open_overlaid(const char *path, int required, mt_db **db) {
    *db = NULL;
    if (!path || !path[0]) return required ? mt_fail(MT_ERR_INVALID_ARGUMENT, "no database path given") : MT_OK;
    if (access(path, F_OK) != 0 && !required) return MT_OK;
    return mt_db_open(path, MT_DB_READ, db);
}

static mt_status load_one(const char *path, int required, const char *arch, mt_choice **out, int *n) {
    *out = NULL;
    *n = 0;
    mt_db *db = NULL;
    mt_status st = db_open_overlaid(path, required, &db);
    if (st == MT_OK && db) st = mt_db_load_choices(db, arch, out, n);
    mt_db_close(db);
    return st;
}

/* Keeps the choices `keep` accepts, in order; *n shrinks. */
static void keep_only(mt_choice *c, int *n, mt_choice_source from, mt_choice_keep_fn keep, void *ctx) {
    if (!keep) return;
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (keep(&c[i], from, ctx)) c[kept++] = c[i];
    *n = kept;
}

mt_status mt_db_load_overlay(const char *user_path, int user_required, const char *system_path, int system_required,
                             const char *arch, mt_choice **out, mt_choice_source **sources, int *n) {
    return mt_db_load_overlay_kept(user_path, user_required, system_path, system_required, arch, NULL, NULL, out,
                                   sources, n);
}

mt_status mt_db_load_overlay_kept(const char *user_path, int user_required, const char *system_path,
                                  int system_required, const char *arch, mt_choice_keep_fn keep, void *ctx,
                                  mt_choice **out, mt_choice_source **sources, int *n) {
    mt_choice *sys = NULL, *usr = NULL;
    int n_sys = 0, n_usr = 0;
    *out = NULL;
    *n = 0;
    if (sources) *sources = NULL;
    mt_status st = load_one(system_path, system_required, arch, &sys, &n_sys);
    if (st == MT_OK) st = load_one(user_path, user_required, arch, &usr, &n_usr);
    if (st != MT_OK) {
        free(sys);
        free(usr);
        return st;
    }
    keep_only(sys, &n_sys, MT_FROM_SYSTEM_DB, keep, ctx);
    keep_only(usr, &n_usr, MT_FROM_USER_DB, keep, ctx);
    mt_choice *all = malloc(sizeof *all * (size_t)(n_sys + n_usr + 1));
    mt_choice_source *src = malloc(sizeof *src * (size_t)(n_sys + n_usr + 1));
    if (!all || !src) {
        free(sys), free(usr), free(all), free(src);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    int count = 0;
    for (int i = 0; i < n_usr; i++) all[count] = usr[i], src[count++] = MT_FROM_USER_DB;
    for (int i = 0; i < n_sys; i++) {
        int shadowed = 0;
        for (int j = 0; j < n_usr && !shadowed; j++) shadowed = mt_choice_same_key(&sys[i], &usr[j]);
        if (!shadowed) all[count] = sys[i], src[count++] = MT_FROM_SYSTEM_DB;
    }
    free(sys);
    free(usr);
    *out = all;
    *n = count;
    if (sources) *sources = src;
    else free(src);
    return MT_OK;
}
