/*
 * holdout.c - each key held out and looked up from the rest (holdout.h).
 */
#include "holdout.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heuristic_gain.h"
#include "key_rows.h"
#include "runtime/api/dispatch.h"

/* The latest ok median on key c of each of v[0..n) into ms[] (NAN: none,
 * or the latest row failed: what a call would meet). */
static mt_status medians_on_key(mt_db *db, const mt_choice *c, const mt_variant *const *v, int n, double *ms) {
    for (int i = 0; i < n; i++) ms[i] = NAN;
    sqlite3_stmt *s = NULL;
    mt_status st = mt_key_rows(db, c, &s);
    if (st != MT_OK) return st;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        mt_variant row;
        const char *status;
        if (!mt_key_row_variant(s, &row, &status)) continue;
        double median = strcmp(status, "ok") == 0 ? sqlite3_column_double(s, MT_ROW_MEDIAN_MS) : NAN;
        for (int i = 0; i < n; i++)
            if (v[i] && mt_variant_same(&row, v[i])) ms[i] = median;
    }
    st = rc == SQLITE_DONE ? MT_OK
                           : mt_fail(MT_ERR_DATABASE, "%s: reading the measurements of a key: %s", mt_db_path(db),
                                     sqlite3_errmsg(mt_db_handle(db)));
    sqlite3_finalize(s);
    return st;
}

/* Row i: choices[i] held out, the rest in `others` (scratch of n - 1),
 * on a device of memory_gbps (0: not known). */
static mt_status hold_out(mt_db *db, const mt_choice *choices, int n, int i, double memory_gbps, mt_choice *others,
                          mt_holdout_row *row) {
    const mt_choice *c = &choices[i];
    memcpy(others, choices, (size_t)i * sizeof *others);
    memcpy(others + i, choices + i + 1, (size_t)(n - i - 1) * sizeof *others);
    mt_target t;
    mt_status st = mt_target_for_arch(c->arch, &t);
    if (st != MT_OK) return st;
    mt_problem_key shape = c->key;
    shape.batch = shape.seq_len = shape.max_len = 0;
    const mt_dispatch_device device = {.compute_units = c->compute_units > 0 ? c->compute_units : 1,
                                       .memory_gbps = memory_gbps};
    mt_dispatch_table table;
    st = mt_dispatch_build_for(others, NULL, n - 1, &shape, &t, &device, c->key.batch, MT_DISPATCH_RESCALED, &table);
    if (st != MT_OK)
        return mt_fail(st, "holding out batch %d, mean %d (%d heads, %s): %s", c->key.batch, c->key.seq_len,
                       c->key.n_heads, c->key.lengths, mt_last_error());
    mt_dispatch_result r;
    mt_dispatch_lookup(&table, c->key.batch, c->key.seq_len, c->key.max_len, &r);
    memset(row, 0, sizeof *row);
    row->key = *c;
    const mt_variant *runs = &table.variants[r.variant];
    const mt_variant *as_measured = r.entry ? &table.variants[r.entry->variant] : runs;
    if (r.entry) {
        row->nearest = 1;
        row->nearest_batch = r.entry->batch, row->nearest_seq_len = r.entry->seq_len;
        row->nearest_max_len = r.entry->max_len, row->distance = r.distance;
    }
    row->rescaled = r.rescaled;
    mt_dispatch_rescaling(&table, &r, row->change, sizeof row->change);
    mt_variant_format(as_measured, row->as_measured, sizeof row->as_measured);
    mt_variant_format(runs, row->runs, sizeof row->runs);
    mt_variant rule;
    int has_rule = mt_untuned_variant(table.family, &c->key, &t, c->compute_units > 0 ? c->compute_units : 1,
                                      &rule) == MT_OK;
    if (has_rule) mt_variant_format(&rule, row->rule, sizeof row->rule);
    else mt_clear_error();
    const mt_variant *asked[3] = {as_measured, runs, has_rule ? &rule : NULL};
    double ms[3];
    st = medians_on_key(db, c, asked, 3, ms);
    row->as_measured_ms = ms[0], row->runs_ms = ms[1], row->rule_ms = ms[2];
    mt_dispatch_free(&table);
    return st;
}

double mt_holdout_ratio(double ms, double best) { return isfinite(ms) && best > 0 ? ms / best : NAN; }

mt_holdout_summary mt_holdout_summarise(const mt_holdout_row *rows, int n) {
    mt_holdout_summary s = {.keys = n};
    for (int i = 0; i < n; i++) {
        double best = rows[i].key.median_ms;
        double a = mt_holdout_ratio(rows[i].as_measured_ms, best), b = mt_holdout_ratio(rows[i].runs_ms, best);
        double r = mt_holdout_ratio(rows[i].rule_ms, best);
        s.rescaled += rows[i].rescaled;
        if (!isfinite(a) || !isfinite(b)) {
            s.untimed++;
            continue;
        }
        s.both++;
        s.log_measured += log(a), s.log_runs += log(b);
        s.worst_measured = fmax(s.worst_measured, a), s.worst_runs = fmax(s.worst_runs, b);
        if (isfinite(r)) {
            s.rule_timed++;
            s.log_rule += log(r), s.log_rule_runs += log(b), s.worst_rule = fmax(s.worst_rule, r);
        }
    }
    return s;
}

mt_status mt_holdout(mt_db *db, const char *arch, int n_heads, mt_holdout_row **rows, int *n) {
    *rows = NULL, *n = 0;
    mt_choice *choices = NULL;
    int n_choices = 0;
    mt_status st = mt_db_load_choices(db, arch, &choices, &n_choices);
    if (st != MT_OK) return st;
    mt_choice *others = calloc((size_t)n_choices + 1, sizeof *others);
    mt_holdout_row *out = calloc((size_t)n_choices + 1, sizeof *out);
    if (!others || !out) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    int m = 0;
    /* the device as the DB knows it: its bandwidth from the copy ceiling a
     * sweep measured there (none: not known), read once per arch */
    const char *ceiling_arch = NULL;
    double memory_gbps = 0;
    for (int i = 0; st == MT_OK && i < n_choices; i++) {
        const mt_choice *c = &choices[i];
        if (strcmp(c->key.kind, "mla_decode") != 0 || (n_heads > 0 && c->key.n_heads != n_heads)) continue;
        if (!ceiling_arch || strcmp(ceiling_arch, c->arch) != 0) {
            ceiling_arch = c->arch;
            if (mt_db_get_ceiling(db, c->arch, "copy_gbps", &memory_gbps) != MT_OK) memory_gbps = 0, mt_clear_error();
        }
        st = hold_out(db, choices, n_choices, i, memory_gbps, others, &out[m]);
        if (st == MT_OK) m++;
    }
    free(others);
    free(choices);
    if (st != MT_OK) {
        free(out);
        return st;
    }
    *rows = out, *n = m;
    return MT_OK;
}
