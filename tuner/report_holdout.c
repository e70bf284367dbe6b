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
    int *done = calloc((size_t)n, sizeof *done);
    for (int i = 0; done && i < n; i++) {
        if (done[i]) continue;
        const mt_choice *g = &rows[i].key;
        int keys = 0, timed = 0, rule_timed = 0;
        double lm = 0, lr = 0, lu = 0, wm = 0, wr = 0, wu = 0;
        for (int j = i; j < n; j++) {
            if (done[j] || !same_group(g, &rows[j].key)) continue;
            done[j] = 1, keys++;
            double best = rows[j].key.median_ms;
            double m = rows[j].as_measured_ms / best, r = rows[j].runs_ms / best, u = rows[j].rule_ms / best;
            if (!(best > 0) || !isfinite(m) || !isfinite(r)) continue;
            timed++, lm += log(m), lr += log(r), wm = fmax(wm, m), wr = fmax(wr, r);
            if (isfinite(u)) rule_timed++, lu += log(u), wu = fmax(wu, u);
        }
        char measured[40], run[40], rule[40];
        cell(measured, sizeof measured, lm, wm, timed);
        cell(run, sizeof run, lr, wr, timed);
        cell(rule, sizeof rule, lu, wu, rule_timed);
        mt_text_printf(md, "| %s | %d | %d | %d | %d | %s/%s | %d | %d | %s | %s | %s |\n", mt_report_md_cell(g->arch),
                       g->compute_units, g->key.n_heads, g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype),
                       mt_dtype_name(g->key.s.kv_dtype), keys, timed, measured, run, rule);
    }
    free(done);
    free(rows);
}
