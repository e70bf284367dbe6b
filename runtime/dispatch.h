/*
 * dispatch.h - mapping a call's (batch, length) to a variant, from the
 * choices read out of the tuning databases.  Pure host code, no GPU: used by
 * the runtime's plans and by `mla-tune lookup`.
 *
 * Distance between a call (b, L) and a measured key (kb, kl):
 *   |log2(b / kb)| + |log2(max(L,1) / kl)|
 * i.e. doubling the batch costs as much as doubling the length; the nearest
 * key wins, ties going to the first in (batch, length) order.  Only keys of
 * the same architecture, kind, dtypes, D, Dl, page size, head count and Sq
 * are candidates: those change the kernel itself.  With none, the built-in
 * heuristic (mt_dispatch_heuristic) is used.
 */
#ifndef MT_DISPATCH_H
#define MT_DISPATCH_H

#include "../db/db.h"

enum { MT_DISPATCH_MAX_VARIANTS = 64 };

typedef struct mt_dispatch_entry {
    int batch, seq_len;
    float log_batch, log_len;
    int variant;              /* index into the table's variants */
    double median_ms;
    mt_choice_source source;
} mt_dispatch_entry;

typedef struct mt_dispatch_table {
    mt_problem_key shape;     /* batch and seq_len unused */
    mt_dispatch_entry *entries;
    int n_entries;
    mt_variant variants[MT_DISPATCH_MAX_VARIANTS];
    int n_variants;
    int heuristic;            /* 1: no entries; variants are the heuristic's */
    mt_variant heuristic_base;  /* the default for this shape and target */
    int compute_units;
} mt_dispatch_table;

/* Builds the table for `shape` on `t` from overlaid choices (sources may be
 * NULL: all "user").  Every variant is validated for this shape and target;
 * a choice that fails validation is an error naming it. */
mt_status mt_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                            const mt_problem_key *shape, const mt_target *t, int compute_units,
                            mt_dispatch_table *out);
void mt_dispatch_free(mt_dispatch_table *table);

typedef struct mt_dispatch_result {
    int variant;              /* index into table->variants */
    int exact;                /* the key itself was measured */
    const mt_dispatch_entry *entry;  /* NULL for the heuristic */
    double distance;
} mt_dispatch_result;

/* The hot path: no allocation, no I/O. */
void mt_dispatch_lookup(const mt_dispatch_table *table, int batch, int seq_len, mt_dispatch_result *out);

/* The built-in rule: `base` (the family default for the shape and target),
 * with the split count chosen so that (query-row tiles x batch x splits)
 * covers the compute units twice, without splits shorter than 256 keys. */
void mt_dispatch_heuristic(const mt_problem_key *shape, const mt_variant *base, int batch, int seq_len,
                           int compute_units, mt_variant *out);

#endif
