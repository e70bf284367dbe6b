/*
 * prefill_key.c - prefill problem keys in the tuner (prefill_key.h).
 */
#include "prefill_key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/mla_prefill/mla_prefill.h"

int mt_prefill_key_causal(const mt_problem_key *k) { return strcmp(k->lengths, MT_PREFILL_NON_CAUSAL) != 0; }

int mt_prefill_key_context(const mt_problem_key *k) {
    return mt_prefill_key_causal(k) ? k->seq_len - k->sq : k->seq_len;
}

void mt_prefill_key_make(mt_problem_key *k, int heads, int d, int dl, mt_dtype q, mt_dtype kv, int requests,
                         int tokens, int context, int causal) {
    memset(k, 0, sizeof *k);
    snprintf(k->kind, sizeof k->kind, "mla_prefill");
    k->s = (mt_problem_static){.d = d, .dl = dl, .page_size = 1, .q_dtype = q, .kv_dtype = kv};
    k->n_heads = heads;
    k->sq = tokens;
    k->batch = requests;
    k->seq_len = causal ? context + tokens : context;
    k->max_len = k->seq_len;
    snprintf(k->lengths, sizeof k->lengths, "%s", causal ? MT_PREFILL_CAUSAL : MT_PREFILL_NON_CAUSAL);
}

double mt_prefill_pairs(int tokens, int keys, int causal) {
    double t = tokens, n = keys;
    if (!causal) return t * n;
    /* the new tokens' square is half masked; what lies before it is seen
     * whole (keys < tokens: the rows past the keys see nothing) */
    double square = t < n ? t : n;
    return t * n - square * square / 2.0;
}

double mt_prefill_flops(const mt_problem_key *k) {
    return 2.0 * (k->s.d + k->s.dl) * (double)k->n_heads * (double)k->batch *
           mt_prefill_pairs(k->sq, k->seq_len, mt_prefill_key_causal(k));
}

double mt_prefill_bytes(const mt_problem_key *k) {
    double q = mt_dtype_size(k->s.q_dtype), kv = mt_dtype_size(k->s.kv_dtype);
    double rows_q = (double)k->batch * k->sq * k->n_heads, rows_k = (double)k->batch * k->seq_len * k->n_heads;
    return rows_q * (k->s.d * q + k->s.dl * q + 4.0) + rows_k * (k->s.d + k->s.dl) * kv;
}

void mt_prefill_key_describe(const mt_problem_key *k, char *buf, size_t size) {
    snprintf(buf, size, "%d heads, %d x %d new tokens, %s %d, %s, %s/%s", k->n_heads, k->batch, k->sq,
             mt_prefill_key_causal(k) ? "context" : "chunk of", mt_prefill_key_context(k), k->lengths,
             mt_dtype_name(k->s.q_dtype), mt_dtype_name(k->s.kv_dtype));
}

/* the header's widths and the cells' are the same: keep them together */
void mt_prefill_key_columns(char *buf, size_t size) {
    snprintf(buf, size, "%-5s %-8s %-10s %-7s %-6s %-10s", "heads", "requests", "new tokens", "context", "keys", "mask");
}

void mt_prefill_key_cells(const mt_problem_key *k, char *buf, size_t size) {
    snprintf(buf, size, "%-5d %-8d %-10d %-7d %-6d %-10s", k->n_heads, k->batch, k->sq, mt_prefill_key_context(k),
             k->seq_len, mt_prefill_key_causal(k) ? "causal" : "non-causal");
}

const char *mt_prefill_key_columns_note(void) {
    return "prefill keys: new tokens and keys per request; keys = context + new tokens when causal, the context "
           "chunk when non-causal";
}

/* --- plan entries ---------------------------------------------------------------- */

/* bf16 / fp16, one or a list (fp8 prefill runs through the runtime's
 * built-in rule; the sweep's workers do not time it yet: docs/prefill.md) */
static mt_status dtypes(const char *path, const yt_node *n, const char *what, mt_dtype *out, int *count) {
    *count = 0;
    if (!n) {
        out[(*count)++] = MT_BF16;
        return MT_OK;
    }
    const yt_node *one[1] = {n};
    const yt_node *const *items = one;
    int n_items = 1;
    if (n->kind == YT_SEQUENCE) items = (const yt_node *const *)n->items, n_items = n->n_items;
    if (n_items < 1 || n_items > 2) return yt_error(path, n, "%s: expected bf16, fp16 or a list of them", what);
    for (int i = 0; i < n_items; i++) {
        mt_dtype t;
        if (items[i]->kind != YT_SCALAR || mt_dtype_parse(items[i]->scalar, &t) != MT_OK)
            return yt_error(path, items[i], "%s: expected bf16 or fp16", what);
        if (t != MT_BF16 && t != MT_FP16)
            return yt_error(path, items[i], "%s: %s: prefill sweeps take bf16 or fp16 (fp8 prefill is not swept yet)", what,
                            items[i]->scalar);
        for (int j = 0; j < *count; j++)
            if (out[j] == t) return yt_error(path, items[i], "%s: %s listed twice", what, items[i]->scalar);
        out[(*count)++] = t;
    }
    *count = n_items;
    return MT_OK;
}

static mt_status one_bool(const char *path, const yt_node *n, int *out) {
    if (n->kind == YT_SCALAR && (strcmp(n->scalar, "true") == 0 || strcmp(n->scalar, "1") == 0)) return *out = 1, MT_OK;
    if (n->kind == YT_SCALAR && (strcmp(n->scalar, "false") == 0 || strcmp(n->scalar, "0") == 0))
        return *out = 0, MT_OK;
    return yt_error(path, n, "causal: expected true or false (or a list of them)");
}

static mt_status masks(const char *path, const yt_node *n, int *out, int *count) {
    *count = 0;
    if (!n) {
        out[(*count)++] = 1;
        return MT_OK;
    }
    if (n->kind != YT_SEQUENCE) {
        *count = 1;
        return one_bool(path, n, &out[0]);
    }
    if (n->n_items < 1 || n->n_items > 2) return yt_error(path, n, "causal: expected true, false or both");
    for (int i = 0; i < n->n_items; i++) {
        mt_status st = one_bool(path, n->items[i], &out[i]);
        if (st != MT_OK) return st;
        if (i == 1 && out[1] == out[0]) return yt_error(path, n->items[i], "causal: listed twice");
    }
    *count = n->n_items;
    return MT_OK;
}

mt_status mt_plan_add_prefill_entry(const char *path, const yt_node *m, mt_plan *p) {
    static const char *const keys[] = {"kind", "heads", "tokens", "requests", "context", "causal", "d", "dl",
                                       "q_dtype", "kv_dtype", NULL};
    /* decode's fields, named: a plan written for decode says what to use */
    static const char *const decode_only[][2] = {{"sq", "tokens"}, {"batch", "requests"}, {"seq_len", "context"},
                                                 {"page_size", NULL}, {"lengths", NULL}};
    for (size_t i = 0; i < sizeof decode_only / sizeof decode_only[0]; i++)
        if (yt_get(m, decode_only[i][0])) {
            const yt_node *at = yt_get(m, decode_only[i][0]);
            if (decode_only[i][1])
                return yt_error(path, at, "%s: not a field of kind mla_prefill (use '%s')", decode_only[i][0],
                                decode_only[i][1]);
            return yt_error(path, at, "%s: not a field of kind mla_prefill", decode_only[i][0]);
        }
    mt_status st = yt_check_keys(path, m, keys);
    if (st != MT_OK) return st;
    for (const char *const *req = (const char *const[]){"heads", "tokens", "requests", NULL}; *req; req++)
        if (!yt_get(m, *req)) return yt_error(path, m, "prefill entry lacks '%s'", *req);
    int heads[16], tokens[16], requests[16], contexts[16], causal[2], n_heads, n_tokens, n_req, n_ctx = 1, n_causal;
    contexts[0] = 0;
    long d = 192, dl = 128;
    mt_dtype qt[2], kvt[2];
    int n_qt, n_kvt;
    if ((st = yt_int_list(path, yt_get(m, "heads"), "heads", 1, 128, heads, 16, &n_heads)) != MT_OK ||
        (st = yt_int_list(path, yt_get(m, "tokens"), "tokens", 1, MT_PREFILL_MAX_TOKENS, tokens, 16, &n_tokens)) !=
            MT_OK ||
        (st = yt_int_list(path, yt_get(m, "requests"), "requests", 1, 65535, requests, 16, &n_req)) != MT_OK)
        return st;
    if (yt_get(m, "context") && (st = yt_int_list(path, yt_get(m, "context"), "context", 0, MT_PREFILL_MAX_TOKENS,
                                                  contexts, 16, &n_ctx)) != MT_OK)
        return st;
    if ((st = masks(path, yt_get(m, "causal"), causal, &n_causal)) != MT_OK) return st;
    if (yt_get(m, "d") && (st = yt_int(path, yt_get(m, "d"), "d", 2, 512, &d)) != MT_OK) return st;
    if (yt_get(m, "dl") && (st = yt_int(path, yt_get(m, "dl"), "dl", 1, 512, &dl)) != MT_OK) return st;
    if ((st = dtypes(path, yt_get(m, "q_dtype"), "q_dtype", qt, &n_qt)) != MT_OK ||
        (st = dtypes(path, yt_get(m, "kv_dtype"), "kv_dtype", kvt, &n_kvt)) != MT_OK)
        return st;
    for (int c = 0; c < n_causal; c++)
        for (int x = 0; x < n_ctx; x++) {
            if (!causal[c] && contexts[x] == 0)
                return yt_error(path, yt_get(m, "context") ? yt_get(m, "context") : m,
                                "context: a non-causal key attends to a chunk of context: it needs context >= 1");
            for (int t = 0; t < n_tokens; t++)
                if (causal[c] && (long)contexts[x] + tokens[t] > MT_PREFILL_MAX_TOKENS)
                    return yt_error(path, yt_get(m, "context"), "context: %d + %d new tokens is over %d keys",
                                    contexts[x], tokens[t], MT_PREFILL_MAX_TOKENS);
        }
    long long add = (long long)n_heads * n_tokens * n_req * n_ctx * n_causal * n_qt * n_kvt;
    if (p->n_keys + add > MT_PLAN_MAX_KEYS)
        return yt_error(path, m, "this entry makes %lld problem keys (heads x tokens x requests x context x causal "
                        "x q_dtype x kv_dtype) after %d from the entries before it; a plan may have at most %d: "
                        "split it", add, p->n_keys, MT_PLAN_MAX_KEYS);
    mt_problem_key *grown = realloc(p->keys, sizeof *grown * (size_t)(p->n_keys + add));
    if (!grown) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    p->keys = grown;
    for (int a = 0; a < n_qt; a++)
        for (int b = 0; b < n_kvt; b++)
            for (int h = 0; h < n_heads; h++)
                for (int c = 0; c < n_causal; c++)
                    for (int r = 0; r < n_req; r++)
                        for (int t = 0; t < n_tokens; t++)
                            for (int x = 0; x < n_ctx; x++)
                                mt_prefill_key_make(&p->keys[p->n_keys++], heads[h], (int)d, (int)dl, qt[a], kvt[b],
                                                    requests[r], tokens[t], contexts[x], causal[c]);
    return MT_OK;
}
