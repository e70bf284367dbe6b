/*
 * prefill_dispatch.h - a prefill plan's choice of variant per call, from
 * the tuning databases' prefill keys (kind "mla_prefill"; their fields:
 * kernels/mla_prefill/mla_prefill.h), through the dispatcher (dispatch.h).
 *
 * A prefill call tells the host its requests, the most new tokens of any
 * (max_seqlen_q) and its mask; its keys per request are on the GPU only
 * (cu_seqlens_k).  So the plan keeps one table per mask (causal calls use
 * causal keys, non-causal ones non-causal keys) over (requests, new
 * tokens): a key with the call's requests and new tokens matches
 * (distance 0), others are |log2| away in each; of the keys that differ
 * only in their context, the one with the least context stands for them
 * (the others cannot be told apart by a call).  With no key for the mask,
 * the family's built-in rule.
 */
#ifndef MT_PREFILL_DISPATCH_H
#define MT_PREFILL_DISPATCH_H

#include "dispatch.h"

/* What a table entry stands for: its keys per request. */
typedef struct mt_prefill_key_keys {
    int compute_units, batch, tokens, keys;
} mt_prefill_key_keys;

typedef struct mt_prefill_dispatch {
    mt_dispatch_table table[2];   /* [0]: non-causal calls, [1]: causal */
    mt_prefill_key_keys *keys[2]; /* the entries' keys per request, per mask */
    int n_keys[2];
} mt_prefill_dispatch;

/* Builds both tables for `shape` (a prefill shape: sq 1, batch and
 * lengths unused) from the overlaid choices (any kind; sources may be
 * NULL).  A prefill choice that fails validation is an error naming it. */
mt_status mt_prefill_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                                    const mt_problem_key *shape, const mt_target *t, int compute_units,
                                    mt_prefill_dispatch *out);
void mt_prefill_dispatch_free(mt_prefill_dispatch *d);

/* The hot path: no allocation, no I/O.  r->variant indexes
 * d->table[causal != 0].variants. */
void mt_prefill_dispatch_lookup(const mt_prefill_dispatch *d, int batch, int max_q, int causal,
                                mt_dispatch_result *r);

/* The keys per request of the DB key behind table entry e (0: none). */
int mt_prefill_dispatch_entry_keys(const mt_prefill_dispatch *d, int causal, const mt_dispatch_entry *e);

/* One line saying why `r` was chosen. */
void mt_prefill_dispatch_explain(const mt_prefill_dispatch *d, int causal, const mt_dispatch_result *r, char *buf,
                                 size_t size);

#endif
