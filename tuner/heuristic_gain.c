/*
 * heuristic_gain.c - the gain of a key's winner over what the untuned
 * runtime runs (see heuristic_gain.h for why it is derived when read).
 */
#include "heuristic_gain.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "key_rows.h"
#include "key_work.h"

mt_status mt_untuned_variant(const mt_family *f, const mt_problem_key *key, const mt_target *t, int compute_units,
                             mt_variant *out) {
    mt_shape shape = {.s = key->s, .n_heads = key->n_heads, .sq = key->sq};
    mt_heuristic_set set;
    mt_status st = f->heuristic_set(&shape, t, &set);
    if (st != MT_OK) return st;
    /* the call as the dispatcher sees it: a key's batch with its mean and
     * longest request (the hints an engine gives); a prefill call's are its
     * new tokens per request, whatever its context (prefill_dispatch.c:
     * the host does not know a call's context), where a causal prefill
     * key's seq_len counts its keys (session 32: the sweep timed the grid
     * form as the rule's choice for 512-token chunks after 4096 keys of
     * context, where the runtime runs the persistent one) */
    const int prefill = mt_key_is_prefill(key);
    mt_call call = {.batch = key->batch, .seq_len = prefill ? key->sq : key->seq_len,
                    .max_len = prefill ? key->sq : key->max_len > 0 ? key->max_len : key->seq_len};
    int pick = f->heuristic_pick(&set, &shape, &call, compute_units);
    if (pick < 0 || pick >= set.n) return mt_fail(MT_ERR_UNSUPPORTED, "the built-in rule picked nothing");
    *out = set.variants[pick];
    return MT_OK;
}

static double column_or_nan(sqlite3_stmt *s, int col) {
    return sqlite3_column_type(s, col) == SQLITE_NULL ? NAN : sqlite3_column_double(s, col);
}

mt_status mt_gain_over_heuristic(mt_db *db, const mt_choice *c, mt_gain *out) {
    *out = (mt_gain){.winner_spread_ms = NAN, .heuristic_ms = NAN, .heuristic_spread_ms = NAN, .gain = NAN,
                     .gain_low = NAN, .gain_high = NAN};
    const mt_family *f = mt_family_find(c->family);
    mt_target t;
    mt_variant winner;
    if (!f || mt_target_for_arch(c->arch, &t) != MT_OK || mt_variant_parse(f, c->params, &winner) != MT_OK) {
        mt_clear_error();
        snprintf(out->missing, sizeof out->missing, "the choice's family, architecture or parameters are unknown "
                 "to this build");
        return MT_OK;
    }
    sqlite3_stmt *s = NULL;
    mt_status st = mt_key_rows(db, c, &s);
    if (st != MT_OK) return st;
    /* the rule's variant depends on the device's compute units (its split
     * count): worked out again when a row's device differs */
    int rule_cus = -1, rule_ok = 0, rows = 0, rc;
    char rule_status[32] = ""; /* of the rule's variant's latest row; "" none */
    mt_variant rule;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        mt_variant v;
        const char *status;
        if (!mt_key_row_variant(s, &v, &status) || v.family != f) continue;
        rows++;
        int cus = sqlite3_column_int(s, MT_ROW_COMPUTE_UNITS), ok = strcmp(status, "ok") == 0;
        if (cus != rule_cus) {
            rule_cus = cus;
            rule_ok = mt_untuned_variant(f, &c->key, &t, cus > 0 ? cus : 1, &rule) == MT_OK;
            if (!rule_ok) mt_clear_error();
            else mt_variant_format(&rule, out->heuristic, sizeof out->heuristic);
        }
        if (ok && mt_variant_same(&v, &winner)) out->winner_spread_ms = column_or_nan(s, MT_ROW_SPREAD_MS);
        if (rule_ok && mt_variant_same(&v, &rule)) {
            snprintf(rule_status, sizeof rule_status, "%s", status);
            out->heuristic_ms = ok ? sqlite3_column_double(s, MT_ROW_MEDIAN_MS) : NAN;
            out->heuristic_spread_ms = ok ? column_or_nan(s, MT_ROW_SPREAD_MS) : NAN;
        }
    }
    if (rc != SQLITE_DONE) {
        st = mt_fail(MT_ERR_DATABASE, "%s: reading the measurements of a key: %s", mt_db_path(db),
                     sqlite3_errmsg(mt_db_handle(db)));
        sqlite3_finalize(s);
        return st;
    }
    sqlite3_finalize(s);
    if (!(out->heuristic_ms > 0) || !isfinite(out->heuristic_ms) || !(c->median_ms > 0)) {
        out->heuristic_ms = out->heuristic_spread_ms = NAN;
        if (rows == 0)
            snprintf(out->missing, sizeof out->missing, "no measurement of this key on this device");
        else if (!rule_ok)
            snprintf(out->missing, sizeof out->missing, "the built-in rule has no variant for this key");
        else if (rule_status[0] && strcmp(rule_status, "ok") != 0)
            snprintf(out->missing, sizeof out->missing, "the built-in rule's variant gave %s on this key: the "
                     "untuned runtime fails there", rule_status);
        else
            snprintf(out->missing, sizeof out->missing, "the built-in rule's variant was not measured for this key "
                     "(the sweep that made the database predates that measurement; sweeping the plan again adds "
                     "only it)");
        return MT_OK;
    }
    out->gain = out->heuristic_ms / c->median_ms;
    /* the range: each median moved by half its spread (p90 - p10) against
     * the gain, then with it; an unknown spread counts as none */
    double hs = isfinite(out->heuristic_spread_ms) ? out->heuristic_spread_ms / 2 : 0;
    double ws = isfinite(out->winner_spread_ms) ? out->winner_spread_ms / 2 : 0;
    out->gain_low = (out->heuristic_ms - hs) / (c->median_ms + ws);
    out->gain_high = c->median_ms - ws > 0 ? (out->heuristic_ms + hs) / (c->median_ms - ws) : NAN;
    return MT_OK;
}

void mt_gain_format(const mt_gain *g, char *buf, size_t size) {
    if (!isfinite(g->gain)) snprintf(buf, size, "-");
    else if (isfinite(g->gain_low) && isfinite(g->gain_high))
        snprintf(buf, size, "%.2fx (%.2f-%.2f)", g->gain, g->gain_low, g->gain_high);
    else snprintf(buf, size, "%.2fx", g->gain);
}

void mt_gain_note(mt_gain_notes *notes, const mt_gain *g) {
    if (isfinite(g->gain)) return;
    notes->unknown++;
    for (int i = 0; i < notes->n; i++)
        if (strcmp(notes->reason[i], g->missing) == 0) return;
    if (notes->n < 3) snprintf(notes->reason[notes->n++], sizeof notes->reason[0], "%s", g->missing);
}

void mt_gain_notes_text(const mt_gain_notes *notes, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < notes->n && used + 1 < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "; " : "", notes->reason[i]);
}
