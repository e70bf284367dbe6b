/*
 * prefill_dispatch.c - prefill keys as dispatch tables (prefill_dispatch.h).
 */
#include "prefill_dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mla_prefill/mla_prefill.h"

/* c and o are one prefill key but for their context (seq_len)? */
static int same_but_context(const mt_choice *c, const mt_choice *o) {
    return strcmp(c->arch, o->arch) == 0 && c->compute_units == o->compute_units &&
           strcmp(c->key.kind, o->key.kind) == 0 && strcmp(c->key.lengths, o->key.lengths) == 0 &&
           memcmp(&c->key.s, &o->key.s, sizeof c->key.s) == 0 && c->key.n_heads == o->key.n_heads &&
           c->key.sq == o->key.sq && c->key.batch == o->key.batch;
}

mt_status mt_prefill_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                                    const mt_problem_key *shape, const mt_target *t, int compute_units,
                                    mt_prefill_dispatch *out) {
    memset(out, 0, sizeof *out);
    mt_choice *mine = calloc((size_t)n + 1, sizeof *mine);
    mt_choice_source *from = calloc((size_t)n + 1, sizeof *from);
    mt_status st = mine && from ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int causal = 0; st == MT_OK && causal < 2; causal++) {
        const char *mask = causal ? MT_PREFILL_CAUSAL : MT_PREFILL_NON_CAUSAL;
        mt_prefill_key_keys *keys = calloc((size_t)n + 1, sizeof *keys);
        if (!keys) {
            st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        out->keys[causal] = keys;
        int m = 0;
        for (int i = 0; i < n; i++) {
            const mt_choice *c = &choices[i];
            if (strcmp(c->key.kind, shape->kind) != 0 || strcmp(c->key.lengths, mask) != 0) continue;
            /* of the keys with these requests and new tokens, the least
             * context (a call's is not known on the host) */
            int shadowed = 0;
            for (int j = 0; j < n && !shadowed; j++)
                shadowed = j != i && same_but_context(c, &choices[j]) &&
                           (choices[j].key.seq_len < c->key.seq_len ||
                            (choices[j].key.seq_len == c->key.seq_len && j < i));
            if (shadowed) continue;
            /* the key in the dispatcher's terms: batch = requests, mean =
             * longest = new tokens (the distance is over those two) */
            mine[m] = *c;
            mine[m].key.sq = shape->sq;
            mine[m].key.seq_len = mine[m].key.max_len = c->key.sq;
            from[m++] = sources ? sources[i] : MT_FROM_USER_DB;
            if (c->key.n_heads == shape->n_heads && memcmp(&c->key.s, &shape->s, sizeof c->key.s) == 0 &&
                strcmp(c->arch, t->arch) == 0)
                keys[out->n_keys[causal]++] = (mt_prefill_key_keys){.compute_units = c->compute_units,
                                                                    .batch = c->key.batch, .tokens = c->key.sq,
                                                                    .keys = c->key.seq_len};
        }
        /* prefill keys run as measured (its family has no rescale) */
        st = mt_dispatch_build(mine, from, m, shape, t, compute_units, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_AS_MEASURED,
                               &out->table[causal]);
    }
    free(mine), free(from);
    if (st != MT_OK) mt_prefill_dispatch_free(out);
    return st;
}

int mt_prefill_dispatch_entry_keys(const mt_prefill_dispatch *d, int causal, const mt_dispatch_entry *e) {
    const mt_dispatch_table *t = &d->table[causal != 0];
    for (int i = 0; e && i < d->n_keys[causal != 0]; i++) {
        const mt_prefill_key_keys *k = &d->keys[causal != 0][i];
        if (k->compute_units == t->key_compute_units && k->batch == e->batch && k->tokens == e->seq_len)
            return k->keys;
    }
    return 0;
}

void mt_prefill_dispatch_free(mt_prefill_dispatch *d) {
    for (int m = 0; m < 2; m++) {
        mt_dispatch_free(&d->table[m]);
        free(d->keys[m]);
        d->keys[m] = NULL;
        d->n_keys[m] = 0;
    }
}

void mt_prefill_dispatch_lookup(const mt_prefill_dispatch *d, int batch, int max_q, int causal,
                                mt_dispatch_result *r) {
    mt_dispatch_lookup(&d->table[causal != 0], batch, max_q > 0 ? max_q : 1, 0, r);
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
             r->exact ? "matching" : "nearest", causal ? "causal" : "non-causal", e->batch, e->seq_len,
             mt_prefill_dispatch_entry_keys(d, causal, e), r->distance, e->source == MT_FROM_USER_DB ? "user" : "system", device);
}
