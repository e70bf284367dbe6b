/*
 * report_holdout.c - the report's "between keys" section: `mla-tune
 * holdout` (holdout.h) per group of keys (architecture, compute units,
 * heads, Sq, page, dtypes), so that a reader sees which shapes the
 * database serves well between its keys and which want more keys.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holdout.h"
#include "report_internal.h"

static int same_group(const mt_choice *a, const mt_choice *b) {
    return strcmp(a->arch, b->arch) == 0 && a->compute_units == b->compute_units && a->key.n_heads == b->key.n_heads &&
           a->key.sq == b->key.sq && a->key.s.page_size == b->key.s.page_size &&
           a->key.s.q_dtype == b->key.s.q_dtype && a->key.s.kv_dtype == b->key.s.kv_dtype;
}

/* "1.05x (1.31x)": a geometric mean and the worst, or "-". */
static void cell(char *buf, size_t size, double log_sum, double worst, int n) {
    if (n > 0) snprintf(buf, size, "%.3fx (%.2fx)", exp(log_sum / n), worst);
    else snprintf(buf, size, "-");
}

void mt_report_holdout(mt_db *db, const char *arch, mt_text *md) {
    mt_holdout_row *rows = NULL;
    int n = 0;
    if (mt_holdout(db, arch, 0, &rows, &n) != MT_OK) {
        mt_text_printf(md, "\n## Between keys\n\n(not worked out: %s)\n", mt_report_md_cell(mt_last_error()));
        return;
    }
    if (n == 0) {
        free(rows);
        return;
    }
    mt_text_printf(md, "\n## Between keys: each key held out\n\n"
                       "Each decode key held out in turn and looked up from the others by the runtime's "
                       "dispatcher, timed by the key's own measurements against its choice (`mla-tune holdout`): "
                       "geometric mean (worst) over the keys where the variants were timed.  *As measured*: the "
                       "nearest key's winner as it was measured; *as run*: as the runtime runs it, its splits "
                       "rescaled to the batch; *rule*: what runs with no database.  Keys sit farther from their "
                       "neighbours than most calls from a key: a group whose figures are high wants more keys.\n\n"
                       "| arch | CUs | heads | Sq | page | dtypes | keys | timed | as measured | as run | rule |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|\n");
    /* mt_holdout keeps the database's key order, which sorts by group:
     * each group is one run of rows */
    for (int i = 0, j; i < n; i = j) {
        const mt_choice *g = &rows[i].key;
        for (j = i + 1; j < n && same_group(g, &rows[j].key);) j++;
        mt_holdout_summary s = mt_holdout_summarise(rows + i, j - i);
        char measured[40], run[40], rule[40];
        cell(measured, sizeof measured, s.log_measured, s.worst_measured, s.both);
        cell(run, sizeof run, s.log_runs, s.worst_runs, s.both);
        cell(rule, sizeof rule, s.log_rule, s.worst_rule, s.rule_timed);
        mt_text_printf(md, "| %s | %d | %d | %d | %d | %s/%s | %d | %d | %s | %s | %s |\n", mt_report_md_cell(g->arch),
                       g->compute_units, g->key.n_heads, g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype),
                       mt_dtype_name(g->key.s.kv_dtype), s.keys, s.both, measured, run, rule);
    }
    free(rows);
}
