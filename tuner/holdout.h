/*
 * holdout.h - how well dispatch serves the calls between a database's keys,
 * measured from the database itself, no GPU.
 *
 * Each decode key of the database is held out in turn: the runtime's
 * dispatcher (runtime/api/dispatch.h), built from every other key, picks
 * what a call of the held-out key's batch, mean and longest request would
 * run, and the held-out key's own measurements say how fast that is
 * against the key's choice.  A sweep times the whole space (or its sample)
 * on every key, so the variant a neighbour's winner becomes is usually
 * among them.  Two answers per key: the nearest key's winner as measured,
 * and as the runtime runs it, rescaled to the call's batch where its
 * family says how (family.h) - the comparison that decided the rescaling
 * (reports/PERFLOG.md, session 27) - and, for scale, what the built-in
 * rule would run with no database at all.
 *
 * Keys sit a factor of 2-8 apart in batch and 4 in length, so a held-out
 * key is farther from its neighbours than most calls are from a key: the
 * figures bound what calls between keys lose, they do not average it.
 */
#ifndef MT_HOLDOUT_H
#define MT_HOLDOUT_H

#include "db/db.h"

typedef struct mt_holdout_row {
    mt_choice key;            /* the key held out, with its choice (median_ms: the time to beat) */
    int nearest;              /* 1: a key's winner answered; 0: the built-in rule */
    int nearest_batch, nearest_seq_len, nearest_max_len;
    double distance;
    int rescaled;             /* the runtime runs the nearest winner rescaled */
    char change[96];          /* "num_splits 16->8" when rescaled */
    char as_measured[200];    /* the nearest winner as measured (the rule's variant when !nearest) */
    char runs[200];           /* what the runtime runs */
    char rule[200];           /* what the built-in rule (no DB) would run for the key; "" none */
    double as_measured_ms;    /* its latest ok median on the key; NAN: not timed there (or failed) */
    double runs_ms;           /* likewise */
    double rule_ms;           /* likewise (a sweep times the rule's variant on every key) */
} mt_holdout_row;

/* The figures of rows[0..n), against each key's choice: geometric means
 * of the time ratios (as sums of logs) and the worst, over the keys where
 * both the nearest winner as measured and what the runtime runs were timed
 * (`both`: so the two are compared on the same keys), and over those of
 * them where the rule's variant was timed too (`rule_timed`). */
typedef struct mt_holdout_summary {
    int keys, both, rescaled, untimed, rule_timed;
    double log_measured, log_runs, worst_measured, worst_runs;
    double log_rule_runs, log_rule, worst_rule; /* over the rule_timed keys */
} mt_holdout_summary;

mt_holdout_summary mt_holdout_summarise(const mt_holdout_row *rows, int n);

/* ms / best, NAN when ms is not (a variant not timed on the key). */
double mt_holdout_ratio(double ms, double best);

/* The rows for every decode key of `arch` in `db` (n_heads > 0: that head
 * count only), in the database's key order.  *rows is malloc'd. */
mt_status mt_holdout(mt_db *db, const char *arch, int n_heads, mt_holdout_row **rows, int *n);

#endif
