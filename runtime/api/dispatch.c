/*
 * dispatch.c - the choice table and nearest-key lookup (see dispatch.h).
 */
#include "dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int same_shape(const mt_choice *c, const mt_problem_key *k, const char *arch) {
    return strcmp(c->arch, arch) == 0 && strcmp(c->key.kind, k->kind) == 0 && c->key.s.q_dtype == k->s.q_dtype &&
           c->key.s.kv_dtype == k->s.kv_dtype && c->key.s.d == k->s.d && c->key.s.dl == k->s.dl &&
           c->key.s.page_size == k->s.page_size && c->key.n_heads == k->n_heads && c->key.sq == k->sq;
}

static int add_variant(mt_dispatch_table *t, const mt_variant *v) {
    for (int i = 0; i < t->n_variants; i++)
        if (mt_variant_same(&t->variants[i], v))
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

static int is_length_aware(const mt_variant *v) { return v->family->length_aware(v); }

/* Whether a ragged call may take entry e: a ragged key's, or a
 * length-aware winner (nearest_entry's ragged_only test). */
static int ragged_candidate(const mt_dispatch_entry *e) {
    return e->length_aware || e->log_spread >= log2f(MT_RAGGED_SPREAD);
}

static mt_shape shape_of(const mt_problem_key *k) { return (mt_shape){.s = k->s, .n_heads = k->n_heads, .sq = k->sq}; }

/* The compute-unit count of the measured device nearest this one among
 * the choices for this shape: the same count, else the nearest by |log2|
 * ratio (the larger on a tie: more CUs split the same work finer, the
 * safer error); a choice of an unknown device (0: a schema-4 choice with no
 * ok measurement) only when there is nothing else.  -1: none. */
static int nearest_device(const mt_choice *choices, int n, const mt_problem_key *shape, const char *arch, int cus) {
    int best = -1;
    double best_d = 0;
    for (int i = 0; i < n; i++) {
        const mt_choice *c = &choices[i];
        if (!same_shape(c, shape, arch)) continue;
        double d = c->compute_units > 0 ? fabs(log2((double)cus / c->compute_units)) : INFINITY;
        if (best < 0 || d < best_d || (d == best_d && c->compute_units > best)) best = c->compute_units, best_d = d;
    }
    return best;
}

/* The batches (within 1..max_batch) at which entry i can be the nearest
 * key of some call: a superset, by the triangle inequality.  Entry e
 * loses to a rival o at every mean and spread when its batch term exceeds
 * o's by more than the other two terms can make up:
 *   |lb - a_e| - |lb - a_o| > |c_e - c_o| + |d_e - d_o|
 * (a: log2 batch, c: log2 mean, d: log2 spread; lb the call's log2
 * batch), which holds above a bound when a_o > a_e and below one when
 * a_o < a_e.  A ragged call sees the ragged candidates only, so a ragged
 * candidate is bounded by those alone.  The margin covers the lookup's
 * float arithmetic. */
static void entry_batches(const mt_dispatch_table *t, int i, int *first, int *last) {
    const mt_dispatch_entry *e = &t->entries[i];
    const int ragged = ragged_candidate(e);
    double lo = 0, hi = log2(t->max_batch);
    for (int j = 0; j < t->n_entries; j++) {
        const mt_dispatch_entry *o = &t->entries[j];
        if (j == i || (ragged && !ragged_candidate(o))) continue;
        double slack = fabs((double)e->log_len - o->log_len) + fabs((double)e->log_spread - o->log_spread) + 1e-3;
        double ae = e->log_batch, ao = o->log_batch;
        if (ao - ae > slack) hi = fmin(hi, (slack + ae + ao) / 2);
        else if (ae - ao > slack) lo = fmax(lo, (ae + ao - slack) / 2);
    }
    double f = floor(exp2(lo)), l = ceil(exp2(hi));
    *first = f < 1 ? 1 : (int)f;
    *last = l > t->max_batch ? t->max_batch : (int)l;
}

/* What entry e's winner runs as at batch b: *w, and 1 when rescaled. */
static int rescaled_at(const mt_dispatch_table *t, const mt_dispatch_entry *e, int b, mt_variant *w) {
    const mt_shape sh = shape_of(&t->shape);
    const mt_rescale_call call = {.key_batch = e->batch, .key_len = e->seq_len, .batch = b,
                                  .compute_units = t->compute_units, .memory_gbps = t->memory_gbps};
    return t->family->rescale(&t->variants[e->variant], &sh, &call, w);
}

static int same_answer(int changed_a, const mt_variant *a, int changed_b, const mt_variant *b) {
    return changed_a == changed_b && (!changed_a || mt_variant_same(a, b));
}

/* The last batch in [b, last] with the same answer as b (galloping, then
 * bisection: the family's answer changes monotonically with the batch). */
static int same_until(const mt_dispatch_table *t, const mt_dispatch_entry *e, int b, int last, int changed,
                      const mt_variant *w) {
    mt_variant x;
    int good = b, step = 1;
    while (good + step <= last && same_answer(changed, w, rescaled_at(t, e, good + step, &x), &x))
        good += step, step *= 2;
    int bad = good + step <= last ? good + step : last + 1;
    while (bad - good > 1) {
        int mid = good + (bad - good) / 2;
        if (same_answer(changed, w, rescaled_at(t, e, mid, &x), &x)) good = mid;
        else bad = mid;
    }
    return good;
}

static mt_status push_range(mt_dispatch_table *t, int *cap, int first, int variant) {
    if (t->n_ranges == *cap) {
        int grown = *cap ? 2 * *cap : 64;
        mt_dispatch_range *r = realloc(t->ranges, (size_t)grown * sizeof *r);
        if (!r) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        t->ranges = r, *cap = grown;
    }
    t->ranges[t->n_ranges++] = (mt_dispatch_range){.first = first, .variant = variant};
    return MT_OK;
}

static void raise_cap(mt_dispatch_table *t, int variant, int batch) {
    if (batch > t->batch_cap[variant]) t->batch_cap[variant] = batch;
}

/* Entry e's batches cut into ranges of one answer of the family's
 * rescale; a rescaled variant that is valid here joins the table, else
 * (or when the table is full) its range runs the winner.  No ranges when
 * every answer is the winner.  Each range raises its variant's cap. */
static mt_status add_ranges(mt_dispatch_table *t, mt_dispatch_entry *e, const mt_problem_key *shape,
                            const mt_target *tg, int *room) {
    int any = 0;
    for (int b = e->first_batch; b <= e->last_batch;) {
        mt_variant w;
        int changed = rescaled_at(t, e, b, &w);
        int end = same_until(t, e, b, e->last_batch, changed, &w), idx = e->variant;
        if (changed && mt_variant_validate(&w, &shape->s, tg) == MT_OK) idx = add_variant(t, &w);
        else mt_clear_error();
        if (idx < 0) idx = e->variant; /* the table is full */
        any |= idx != e->variant;
        raise_cap(t, idx, end);
        mt_status st = push_range(t, room, b, idx);
        if (st != MT_OK) return st;
        b = end + 1;
    }
    if (any) e->n_ranges = t->n_ranges - e->range0;
    else t->n_ranges = e->range0;
    return MT_OK;
}

/* Each entry's batches (entry_batches), its winner rescaled over them
 * where the mode and family say so, and the batch caps: a variant runs
 * at no batch past the last its entries (or the rule's bound) serve,
 * unless some call of any batch may run it (uncapped: length-aware
 * winners under unknown lengths, the rule's variants its family does not
 * bound) or that is max_batch anyway (cap 0). */
static mt_status add_batch_ranges(mt_dispatch_table *t, const mt_problem_key *shape, const mt_target *tg,
                                  mt_dispatch_mode mode, unsigned char uncapped[MT_DISPATCH_MAX_VARIANTS]) {
    int room = 0;
    for (int i = 0; i < t->n_entries; i++) {
        mt_dispatch_entry *e = &t->entries[i];
        entry_batches(t, i, &e->first_batch, &e->last_batch);
        e->range0 = t->n_ranges, e->n_ranges = 0;
        if (e->length_aware) {
            uncapped[e->variant] = 1;
            continue;
        }
        if (mode == MT_DISPATCH_RESCALED && t->family->rescale) {
            mt_status st = add_ranges(t, e, shape, tg, &room);
            if (st != MT_OK) return st;
        } else raise_cap(t, e->variant, e->last_batch);
    }
    for (int i = 0; i < t->n_variants; i++)
        if (uncapped[i] || t->batch_cap[i] >= t->max_batch) t->batch_cap[i] = 0;
    return MT_OK;
}

/* Appends name to the list in buf ("A, B") unless it is there already or
 * empty; a name that does not fit ends the list with "...". */
static void add_device_name(char *buf, size_t size, const char *name) {
    size_t n = strlen(name), used = strlen(buf);
    if (!n) return;
    for (const char *p = buf; (p = strstr(p, name)) != NULL; p += n)
        if ((p == buf || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',')) return;
    if (used + (used ? 2 : 0) + n + 4 > size) {
        if (used + 4 <= size && (used < 3 || strcmp(buf + used - 3, "...") != 0)) strcat(buf, "...");
        return;
    }
    if (used) strcat(buf, ", ");
    strcat(buf, name);
}

mt_status mt_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                            const mt_problem_key *shape, const mt_target *t, int compute_units, int max_batch,
                            mt_dispatch_mode mode, mt_dispatch_table *out) {
    const mt_dispatch_device device = {.compute_units = compute_units};
    return mt_dispatch_build_for(choices, sources, n, shape, t, &device, max_batch, mode, out);
}

mt_status mt_dispatch_build_for(const mt_choice *choices, const mt_choice_source *sources, int n,
                                const mt_problem_key *shape, const mt_target *t, const mt_dispatch_device *device,
                                int max_batch, mt_dispatch_mode mode, mt_dispatch_table *out) {
    memset(out, 0, sizeof *out);
    if (max_batch < 1) return mt_fail(MT_ERR_INVALID_ARGUMENT, "dispatch: max_batch %d is below 1", max_batch);
    unsigned char uncapped[MT_DISPATCH_MAX_VARIANTS] = {0};
    out->shape = *shape;
    out->max_batch = max_batch;
    out->compute_units = device->compute_units > 0 ? device->compute_units : 1;
    out->memory_gbps = device->memory_gbps > 0 ? device->memory_gbps : 0;
    out->aware_fallback = -1;
    out->entries = calloc((size_t)n + 1, sizeof *out->entries);
    if (!out->entries) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    /* choices are per device: one device's keys make the table, never a
     * mix (a split count tuned for 132 SMs is wrong for 78) */
    out->key_compute_units = nearest_device(choices, n, shape, t->arch, out->compute_units);
    for (int i = 0; i < n; i++) {
        const mt_choice *c = &choices[i];
        if (!same_shape(c, shape, t->arch) || c->compute_units != out->key_compute_units) continue;
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
        add_device_name(out->key_device, sizeof out->key_device, c->device_name);
    }
    qsort(out->entries, (size_t)out->n_entries, sizeof *out->entries, by_key);
    out->family = mt_family_for_kind(shape->kind);
    if (!out->family) return mt_fail(MT_ERR_INVALID_ARGUMENT, "no kernel family serves problem kind '%s'", shape->kind);
    mt_shape sh = shape_of(shape);
    mt_status st = out->family->heuristic_set(&sh, t, &out->heur);
    if (st != MT_OK) return st;
    for (int i = 0; i < MT_MAX_HEURISTIC; i++) out->heur_variant[i] = -1;
    /* unknown lengths need a length-aware variant: from the DB when some
     * key's winner is one, else the rule's (compiled with the plan) */
    int have_aware = 0;
    for (int i = 0; i < out->n_entries; i++) have_aware |= out->entries[i].length_aware;
    out->heuristic = out->n_entries == 0;
    for (int i = 0; i < out->heur.n; i++)
        if (out->heuristic || (i == out->heur.aware && !have_aware)) {
            int idx = out->heur_variant[i] = add_variant(out, &out->heur.variants[i]);
            int cap = out->family->heuristic_batch_cap
                          ? out->family->heuristic_batch_cap(&out->heur, i, &sh, out->compute_units)
                          : 0;
            if (idx >= 0 && cap > 0) raise_cap(out, idx, cap);
            else if (idx >= 0) uncapped[idx] = 1;
        }
    out->aware_fallback = out->heur.aware >= 0 ? out->heur_variant[out->heur.aware] : -1;
    return add_batch_ranges(out, shape, t, mode, uncapped);
}

size_t mt_dispatch_workspace_bytes(const mt_dispatch_table *table) {
    mt_shape sh = shape_of(&table->shape);
    size_t most = 0;
    for (int i = 0; i < table->n_variants; i++) {
        const mt_variant *v = &table->variants[i];
        int cap = table->batch_cap[i], batch = cap > 0 && cap < table->max_batch ? cap : table->max_batch;
        size_t ws = v->family->workspace_bytes(v, &sh, batch, table->compute_units);
        if (ws > most) most = ws;
    }
    return most;
}

void mt_dispatch_free(mt_dispatch_table *table) {
    free(table->entries);
    free(table->ranges);
    table->entries = NULL;
    table->ranges = NULL;
    table->n_entries = table->n_ranges = 0;
}

/* The variant entry e runs at `batch`: its winner, or the winner rescaled
 * (the last of its ranges starting at or below the batch). */
static int entry_variant(const mt_dispatch_table *table, const mt_dispatch_entry *e, int batch) {
    if (e->n_ranges == 0 || batch < table->ranges[e->range0].first || batch > e->last_batch) return e->variant;
    int k = e->range0 + e->n_ranges - 1;
    while (table->ranges[k].first > batch) k--;
    return table->ranges[k].variant;
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
    out->heuristic_pick = table->heur.aware;
}

/* The measured key nearest a call (batch, mean, longest; by the sum of
 * |log2| ratios of batch, mean and spread), or the exact one; with
 * `ragged_only`, only ragged keys and length-aware winners count.  NULL
 * when none does. */
static const mt_dispatch_entry *nearest_entry(const mt_dispatch_table *table, int batch, int seq_len, int max_len,
                                              int ragged_only, int *exact, float *distance) {
    int len = seq_len > 0 ? seq_len : 1, longest = max_len > len ? max_len : len;
    float lb = log2f((float)(batch > 0 ? batch : 1)), ll = log2f((float)len);
    float spread = log2f((float)longest / (float)len);
    const mt_dispatch_entry *best = NULL;
    *exact = 0, *distance = 0;
    for (int i = 0; i < table->n_entries; i++) {
        const mt_dispatch_entry *e = &table->entries[i];
        if (e->batch == batch && e->seq_len == seq_len && e->max_len == (max_len > 0 ? max_len : seq_len)) {
            *exact = 1, *distance = 0;
            return e;
        }
        if (ragged_only && !ragged_candidate(e)) continue;
        float d = fabsf(lb - e->log_batch) + fabsf(ll - e->log_len) + fabsf(spread - e->log_spread);
        if (!best || d < *distance) best = e, *distance = d;
    }
    return best;
}

void mt_dispatch_lookup(const mt_dispatch_table *table, int batch, int seq_len, int max_len,
                        mt_dispatch_result *out) {
    memset(out, 0, sizeof *out);
    out->heuristic_pick = -1;
    out->batch = batch;
    if (seq_len < 0) {
        lookup_unknown(table, batch, out);
        return;
    }
    int len = seq_len > 0 ? seq_len : 1, longest = max_len > len ? max_len : len;
    if (table->heuristic) {
        mt_shape sh = shape_of(&table->shape);
        mt_call call = {.batch = batch, .seq_len = seq_len, .max_len = max_len};
        int pick = table->family->heuristic_pick(&table->heur, &sh, &call, table->compute_units);
        out->heuristic_pick = pick;
        out->variant = table->heur_variant[pick] >= 0 ? table->heur_variant[pick] : 0;
        return;
    }
    /* a ragged call (family.h) takes a ragged key's winner or a
     * length-aware one, never a uniform key's fixed splits: those leave the
     * longest request's few work-groups running on alone (128 heads, fp8
     * KV, B=32 long-tail: 903 us through the nearest uniform key, 158 us
     * through the rule's length-aware variant; reports/PERFLOG.md session
     * 21); with neither in the DB, that variant (compiled with the plan) */
    int ragged = mt_call_is_ragged(len, longest);
    float best_d = 0;
    const mt_dispatch_entry *best = nearest_entry(table, batch, seq_len, max_len, ragged, &out->exact, &best_d);
    if (!best && ragged && table->aware_fallback >= 0) {
        out->variant = table->aware_fallback;
        out->heuristic_pick = table->heur.aware;
        return;
    }
    if (!best) best = nearest_entry(table, batch, seq_len, max_len, 0, &out->exact, &best_d);
    out->entry = best;
    out->variant = entry_variant(table, best, batch);
    out->rescaled = out->variant != best->variant;
    out->distance = best_d;
}

void mt_dispatch_rescaling(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    if (!r->rescaled || !r->entry) return;
    const mt_variant *from = &table->variants[r->entry->variant], *to = &table->variants[r->variant];
    for (int i = 0; i < from->family->n_params && used + 1 < size; i++)
        if (from->values[i] != to->values[i])
            used += (size_t)snprintf(buf + used, size - used, "%s%s %d->%d", used ? ", " : "",
                                     from->family->params[i].name, from->values[i], to->values[i]);
}

/* ", measured on the nearest device (132 CUs; this one 114)" when the
 * table's keys come from another device than this one, else "". */
static void device_note(const mt_dispatch_table *table, char *buf, size_t size) {
    buf[0] = '\0';
    if (table->key_compute_units > 0 && table->key_compute_units != table->compute_units)
        snprintf(buf, size, " on the nearest device (%d CUs; this one %d)", table->key_compute_units,
                 table->compute_units);
}

/* ", for 4814 GB/s over 132 CUs" when the device's memory bandwidth made
 * the family run a nearest key's winner otherwise than it would with the
 * bandwidth unknown (the decode family fills a wave the key left idle on
 * a device of much bandwidth per compute unit), else "". */
static void bandwidth_note(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size) {
    buf[0] = '\0';
    const mt_dispatch_entry *e = r->entry;
    if (!e || r->exact || e->length_aware || table->memory_gbps <= 0 || !table->family->rescale) return;
    const mt_shape sh = shape_of(&table->shape);
    const mt_rescale_call plain = {.key_batch = e->batch, .key_len = e->seq_len, .batch = r->batch,
                                   .compute_units = table->compute_units, .memory_gbps = 0};
    mt_variant w = table->variants[e->variant];
    table->family->rescale(&table->variants[e->variant], &sh, &plain, &w);
    if (!mt_variant_same(&w, &table->variants[r->variant]))
        snprintf(buf, size, ", for %.0f GB/s over %d CUs", table->memory_gbps, table->compute_units);
}

void mt_dispatch_explain(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size) {
    const mt_dispatch_entry *e = r->entry;
    char device[80];
    device_note(table, device, sizeof device);
    if (r->unknown_lengths && e)
        snprintf(buf, size, "lengths unknown (graph capture): the length-aware winner at batch %d (%s, mean %d, "
                 "longest %d), %s DB%s", e->batch, e->lengths, e->seq_len, e->max_len,
                 e->source == MT_FROM_USER_DB ? "user" : "system", device);
    else if (r->unknown_lengths)
        snprintf(buf, size, "lengths unknown (graph capture) and no length-aware key in the DB: the built-in "
                 "length-aware variant");
    else if (!e && r->heuristic_pick >= 0 && !table->heuristic)
        snprintf(buf, size, "a ragged call (longest >= %gx the mean) and none of the DB's %d keys for this shape is "
                 "ragged or won by a length-aware variant: the built-in length-aware variant", MT_RAGGED_SPREAD,
                 table->n_entries);
    else if (!e && r->heuristic_pick >= 0)
        table->family->heuristic_explain(&table->heur, r->heuristic_pick, buf, size);
    else {
        char rescaled[96], bandwidth[64];
        mt_dispatch_rescaling(table, r, rescaled, sizeof rescaled);
        bandwidth_note(table, r, bandwidth, sizeof bandwidth);
        snprintf(buf, size, "%s key (batch %d, %s, mean %d, longest %d; distance %.2f) from the %s DB%s%s%s%s",
                 r->exact ? "exact" : "nearest", e->batch, e->lengths, e->seq_len, e->max_len, r->distance,
                 e->source == MT_FROM_USER_DB ? "user" : "system", device, r->rescaled ? ", rescaled: " : "",
                 rescaled, bandwidth);
    }
}
