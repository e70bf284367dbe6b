/*
 * prefill_dispatch.c - prefill keys as dispatch tables (prefill_dispatch.h).
 */
#include "prefill_dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mla_prefill/mla_prefill.h"

mt_status mt_prefill_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                                    const mt_problem_key *shape, const mt_target *t, int compute_units,
                                    mt_prefill_dispatch *out) {
    memset(out, 0, sizeof *out);
    mt_choice *mine = calloc((size_t)n + 1, sizeof *mine);
    mt_choice_source *from = calloc((size_t)n + 1, sizeof *from);
    mt_status st = mine && from ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int causal = 0; st == MT_OK && causal < 2; causal++) {
        const char *mask = causal ? MT_PREFILL_CAUSAL : MT_PREFILL_NON_CAUSAL;
        int m = 0;
        for (int i = 0; i < n; i++) {
            const mt_choice *c = &choices[i];
            if (strcmp(c->key.kind, shape->kind) != 0 || strcmp(c->key.lengths, mask) != 0) continue;
            /* the key in the dispatcher's terms (the header says why) */
            mine[m] = *c;
            mine[m].key.sq = shape->sq;
            mine[m].key.seq_len = c->key.sq;
            mine[m].key.max_len = c->key.seq_len > c->key.sq ? c->key.seq_len : c->key.sq;
            from[m++] = sources ? sources[i] : MT_FROM_USER_DB;
        }
        st = mt_dispatch_build(mine, from, m, shape, t, compute_units, &out->table[causal]);
    }
    free(mine), free(from);
    if (st != MT_OK) mt_prefill_dispatch_free(out);
    return st;
}

void mt_prefill_dispatch_free(mt_prefill_dispatch *d) {
    mt_dispatch_free(&d->table[0]);
    mt_dispatch_free(&d->table[1]);
}

void mt_prefill_dispatch_lookup(const mt_prefill_dispatch *d, int batch, int max_q, int causal,
                                mt_dispatch_result *r) {
    mt_dispatch_lookup(&d->table[causal != 0], batch, max_q > 0 ? max_q : 1, 0, r);
    /* the call's keys are not known on the host: a key with the same
     * requests and new tokens and no context is as close as it gets */
    r->exact = r->entry && r->distance == 0;
}

void mt_prefill_dispatch_explain(const mt_prefill_dispatch *d, int causal, const mt_dispatch_result *r, char *buf,
                                 size_t size) {
    const mt_dispatch_table *t = &d->table[causal != 0];
    const mt_dispatch_entry *e = r->entry;
    if (!e) {
        char rule[200];
        mt_dispatch_explain(t, r, rule, sizeof rule);
        snprintf(buf, size, "no %s prefill key in the DBs: %s", causal ? "causal" : "non-causal", rule);
        return;
    }
    char device[80] = "";
    if (t->key_compute_units > 0 && t->key_compute_units != t->compute_units)
        snprintf(device, sizeof device, " on the nearest device (%d CUs; this one %d)", t->key_compute_units,
                 t->compute_units);
    snprintf(buf, size, "%s %s prefill key (%d requests x %d new tokens over %d keys; distance %.2f) from the %s DB%s",
             r->exact ? "matching" : "nearest", causal ? "causal" : "non-causal", e->batch, e->seq_len, e->max_len,
             r->distance, e->source == MT_FROM_USER_DB ? "user" : "system", device);
}
