/*
 * dispatch.c - the choice table and nearest-key lookup (see dispatch.h).
 */
#include "dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mla_decode/mla_decode.h"

static const int heuristic_splits[] = {1, 2, 4, 8, 16, 32, 64, 128};

/* The matrix-unit variant that won most keys of the H100 fast-decode sweep
 * (reports/h100/fast-decode), used as the heuristic's base where it fits. */
static const char heuristic_mma_base[] =
    "tile_q=16,kv_granularity=16,num_splits=1,block_threads=128,kv_chunk=32,mma=1,kv_stages=2";
/* Where a request has 64+ query rows (64+ heads, or 16 heads x 4 tokens)
 * the shape is bound by the matrix units, and the wgmma path (Hopper only)
 * won every such key of that sweep (128 heads: 2.5x the mma.sync path). */
static const char heuristic_wgmma_base[] =
    "tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2";
/* fp8 KV on Hopper: the transposed wgmma path (1.40x the mma.sync path's
 * best at 16 heads, B=128, L=16384; reports/PERFLOG.md, session 6). */
static const char heuristic_fp8_base[] =
    "tile_q=16,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=4";

/* A ragged call (the longest request at least this many times the mean)
 * goes to the heuristic's length-aware variant: with fixed splits the
 * longest request's few work-groups would run on alone. */
#define HEURISTIC_RAGGED_SPREAD 2

/* Parses and validates a built-in base; 0 when it does not fit. */
static int base_fits(const char *spec, const mt_problem_key *shape, const mt_target *t, mt_variant *out) {
    int ok = mt_variant_parse(&mt_family_mla_decode_simt, spec, out) == MT_OK &&
             mt_variant_validate(out, &shape->s, t) == MT_OK;
    if (!ok) mt_clear_error();
    return ok;
}

void mt_dispatch_heuristic(const mt_problem_key *shape, const mt_variant *base, int batch, int seq_len,
                           int compute_units, mt_variant *out) {
    *out = *base;
    int tile_q = out->values[MT_P_TILE_Q];
    long tiles = (long)((shape->sq * shape->n_heads + tile_q - 1) / tile_q) * (batch > 0 ? batch : 1);
    /* the most splits that still fit one wave of work-groups, each split
     * keeping at least 256 keys (measured on the H100: more splits than
     * that cost more in the reduce than they gain) */
    int splits = 1;
    while (splits < 128 && tiles * splits * 2 <= compute_units && seq_len / (splits * 2) >= 256) splits *= 2;
    out->values[MT_P_NUM_SPLITS] = splits;
    if (splits == 1) out->values[MT_P_KV_GRANULARITY] = 16;
}

static int same_shape(const mt_choice *c, const mt_problem_key *k, const char *arch) {
    return strcmp(c->arch, arch) == 0 && strcmp(c->key.kind, k->kind) == 0 && c->key.s.q_dtype == k->s.q_dtype &&
           c->key.s.kv_dtype == k->s.kv_dtype && c->key.s.d == k->s.d && c->key.s.dl == k->s.dl &&
           c->key.s.page_size == k->s.page_size && c->key.n_heads == k->n_heads && c->key.sq == k->sq;
}

static int add_variant(mt_dispatch_table *t, const mt_variant *v) {
    for (int i = 0; i < t->n_variants; i++)
        if (t->variants[i].family == v->family && memcmp(t->variants[i].values, v->values, sizeof v->values) == 0)
            return i;
    if (t->n_variants == MT_DISPATCH_MAX_VARIANTS) return -1;
    t->variants[t->n_variants] = *v;
    return t->n_variants++;
}

static int by_key(const void *a, const void *b) {
    const mt_dispatch_entry *x = a, *y = b;
    if (x->batch != y->batch) return x->batch - y->batch;
    if (x->seq_len != y->seq_len) return x->seq_len - y->seq_len;
    return x->max_len - y->max_len;
}

static int is_length_aware(const mt_variant *v) { return v->values[MT_P_GROUPS_PER_CU] > 0; }

/* The heuristic's length-aware variant: its base with one work-group per
 * compute unit, cutting on the chunk (64 keys on the warpgroup paths, 16
 * elsewhere); -1 when it does not fit the target. */
static int add_aware_fallback(mt_dispatch_table *t, const mt_target *target) {
    mt_variant v = t->heuristic_base;
    v.values[MT_P_NUM_SPLITS] = 1;
    v.values[MT_P_SPLIT_REDUCE] = 0;
    v.values[MT_P_GROUPS_PER_CU] = 1;
    v.values[MT_P_KV_GRANULARITY] = v.values[MT_P_MMA] == 2 ? 64 : 16;
    if (mt_variant_validate(&v, &t->shape.s, target) != MT_OK) {
        mt_clear_error();
        return -1;
    }
    return add_variant(t, &v);
}

mt_status mt_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                            const mt_problem_key *shape, const mt_target *t, int compute_units,
                            mt_dispatch_table *out) {
    memset(out, 0, sizeof *out);
    out->shape = *shape;
    out->compute_units = compute_units > 0 ? compute_units : 1;
    out->aware_fallback = -1;
    out->entries = calloc((size_t)n + 1, sizeof *out->entries);
    if (!out->entries) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < n; i++) {
        const mt_choice *c = &choices[i];
        if (!same_shape(c, shape, t->arch)) continue;
        const mt_family *f = mt_family_find(c->family);
        mt_variant v;
        if (!f) return mt_fail(MT_ERR_CORRUPT, "tuning entry names unknown kernel family '%s'", c->family);
        mt_status st = mt_variant_parse(f, c->params, &v);
        if (st == MT_OK) st = mt_variant_validate(&v, &shape->s, t);
        if (st != MT_OK)
            return mt_fail(MT_ERR_CORRUPT, "tuning entry for batch %d, length %d is not usable: %s", c->key.batch,
                           c->key.seq_len, mt_last_error());
        int idx = add_variant(out, &v);
        /* more distinct winners than a table holds: this key is left out
         * and its calls go to the nearest key kept, as for a key never
         * measured; a DB that show and export accept never fails a plan
         * (issue 25: 65 winners for one shape did) */
        if (idx < 0) continue;
        mt_dispatch_entry *e = &out->entries[out->n_entries++];
        int len = c->key.seq_len > 0 ? c->key.seq_len : 1;
        e->batch = c->key.batch;
        e->seq_len = c->key.seq_len;
        e->max_len = c->key.max_len > c->key.seq_len ? c->key.max_len : c->key.seq_len;
        e->log_batch = (float)log2(c->key.batch > 0 ? c->key.batch : 1);
        e->log_len = (float)log2(len);
        e->log_spread = (float)log2((double)(e->max_len > len ? e->max_len : len) / len);
        e->variant = idx;
        e->length_aware = is_length_aware(&v);
        e->median_ms = c->median_ms;
        e->source = sources ? sources[i] : MT_FROM_USER_DB;
        snprintf(e->lengths, sizeof e->lengths, "%s", c->key.lengths[0] ? c->key.lengths : "uniform");
    }
    qsort(out->entries, (size_t)out->n_entries, sizeof *out->entries, by_key);
    /* the heuristic's base: for fp8 KV the transposed wgmma variant
     * (Hopper); for 64+ rows the measured wgmma variant (Hopper); the
     * measured mma.sync variant (NVIDIA; its 32-key chunk never fits the
     * MFMA path, which has not run on an AMD GPU yet); the family default */
    int wide = shape->sq * shape->n_heads >= 64, fp8 = shape->s.kv_dtype == MT_FP8_E4M3;
    if (!(fp8 && base_fits(heuristic_fp8_base, shape, t, &out->heuristic_base)) &&
        !(wide && base_fits(heuristic_wgmma_base, shape, t, &out->heuristic_base)) &&
        !base_fits(heuristic_mma_base, shape, t, &out->heuristic_base) &&
        mt_variant_default_for(&mt_family_mla_decode_simt, &shape->s, t, &out->heuristic_base) != MT_OK)
        return mt_fail(MT_ERR_UNSUPPORTED, "no built-in variant fits: %s", mt_last_error());
    if (out->n_entries == 0) {
        out->heuristic = 1;
        /* the heuristic only ever varies the split count of its base */
        for (size_t i = 0; i < sizeof heuristic_splits / sizeof heuristic_splits[0]; i++) {
            mt_variant v = out->heuristic_base;
            v.values[MT_P_NUM_SPLITS] = heuristic_splits[i];
            if (heuristic_splits[i] == 1) v.values[MT_P_KV_GRANULARITY] = 16;
            if (mt_variant_validate(&v, &shape->s, t) == MT_OK) add_variant(out, &v);
        }
        mt_clear_error();
        if (out->n_variants == 0) add_variant(out, &out->heuristic_base);
    }
    /* unknown lengths need a length-aware variant: from the DB when some
     * key's winner is one, else the heuristic's (compiled with the plan) */
    int have_aware = 0;
    for (int i = 0; i < out->n_entries; i++) have_aware |= out->entries[i].length_aware;
    if (!have_aware) out->aware_fallback = add_aware_fallback(out, t);
    return MT_OK;
}

void mt_dispatch_free(mt_dispatch_table *table) {
    free(table->entries);
    table->entries = NULL;
    table->n_entries = 0;
}

/* Lengths unknown: the length-aware winner nearest in batch (the most
 * ragged, then the longest key on a tie), else the heuristic's. */
static void lookup_unknown(const mt_dispatch_table *table, int batch, mt_dispatch_result *out) {
    float lb = log2f((float)(batch > 0 ? batch : 1));
    const mt_dispatch_entry *best = NULL;
    float best_d = 0;
    for (int i = 0; i < table->n_entries; i++) {
        const mt_dispatch_entry *e = &table->entries[i];
        if (!e->length_aware) continue;
        float d = fabsf(lb - e->log_batch);
        if (!best || d < best_d ||
            (d == best_d && (e->log_spread > best->log_spread ||
                             (e->log_spread == best->log_spread && e->seq_len > best->seq_len))))
            best = e, best_d = d;
    }
    out->unknown_lengths = 1;
    if (best) {
        out->entry = best, out->variant = best->variant, out->distance = best_d;
        out->exact = best->batch == batch;
        return;
    }
    out->variant = table->aware_fallback >= 0 ? table->aware_fallback : 0;
}

void mt_dispatch_lookup(const mt_dispatch_table *table, int batch, int seq_len, int max_len,
                        mt_dispatch_result *out) {
    memset(out, 0, sizeof *out);
    if (seq_len < 0) {
        lookup_unknown(table, batch, out);
        return;
    }
    int len = seq_len > 0 ? seq_len : 1, longest = max_len > len ? max_len : len;
    float spread = log2f((float)longest / (float)len);
    if (table->heuristic) {
        if (longest >= HEURISTIC_RAGGED_SPREAD * len && table->aware_fallback >= 0) {
            out->variant = table->aware_fallback;
            return;
        }
        mt_variant v;
        mt_dispatch_heuristic(&table->shape, &table->heuristic_base, batch, seq_len, table->compute_units, &v);
        for (int i = 0; i < table->n_variants; i++)
            if (!is_length_aware(&table->variants[i]) &&
                table->variants[i].values[MT_P_NUM_SPLITS] == v.values[MT_P_NUM_SPLITS])
                out->variant = i;
        return;
    }
    float lb = log2f((float)(batch > 0 ? batch : 1)), ll = log2f((float)len);
    const mt_dispatch_entry *best = NULL;
    float best_d = 0;
    for (int i = 0; i < table->n_entries; i++) {
        const mt_dispatch_entry *e = &table->entries[i];
        if (e->batch == batch && e->seq_len == seq_len && e->max_len == (max_len > 0 ? max_len : seq_len)) {
            best = e, best_d = 0;
            out->exact = 1;
            break;
        }
        float d = fabsf(lb - e->log_batch) + fabsf(ll - e->log_len) + fabsf(spread - e->log_spread);
        if (!best || d < best_d) best = e, best_d = d;
    }
    out->entry = best;
    out->variant = best->variant;
    out->distance = best_d;
}

void mt_dispatch_explain(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size) {
    const mt_dispatch_entry *e = r->entry;
    if (r->unknown_lengths && e)
        snprintf(buf, size, "lengths unknown (graph capture): the length-aware winner at batch %d (%s, mean %d, "
                 "longest %d), %s DB", e->batch, e->lengths, e->seq_len, e->max_len,
                 e->source == MT_FROM_USER_DB ? "user" : "system");
    else if (r->unknown_lengths)
        snprintf(buf, size, "lengths unknown (graph capture) and no length-aware key in the DB: the built-in "
                 "length-aware variant");
    else if (!e && is_length_aware(&table->variants[r->variant]))
        snprintf(buf, size, "heuristic: a ragged call (longest >= %dx the mean) runs the built-in length-aware "
                 "variant", HEURISTIC_RAGGED_SPREAD);
    else if (!e)
        snprintf(buf, size, "heuristic: no tuning entry for this arch, dtypes, head count and Sq");
    else
        snprintf(buf, size, "%s key (batch %d, %s, mean %d, longest %d; distance %.2f) from the %s DB",
                 r->exact ? "exact" : "nearest", e->batch, e->lengths, e->seq_len, e->max_len, r->distance,
                 e->source == MT_FROM_USER_DB ? "user" : "system");
}
