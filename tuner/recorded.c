/*
 * recorded.c - the plan of `mla-tune sweep --recorded` (see recorded.h).
 */
#define _GNU_SOURCE
#include "recorded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "lengths.h"

static int same_key(const mt_problem_key *a, const mt_problem_key *b) {
    return strcmp(a->kind, b->kind) == 0 && a->s.q_dtype == b->s.q_dtype && a->s.kv_dtype == b->s.kv_dtype &&
           a->s.d == b->s.d && a->s.dl == b->s.dl && a->s.page_size == b->s.page_size && a->n_heads == b->n_heads &&
           a->sq == b->sq && a->batch == b->batch && a->seq_len == b->seq_len && a->max_len == b->max_len &&
           strcmp(a->lengths, b->lengths) == 0;
}

/* The sweep key of a recorded call: its lengths made the way a plan's are
 * (config.c), so the key records the mix and the mean and longest it
 * really has. */
static mt_status key_of(const mt_recorded_call *c, mt_problem_key *k) {
    *k = c->key;
    int mean = c->key.seq_len < MT_LENGTHS_MAX ? c->key.seq_len : MT_LENGTHS_MAX;
    int longest = c->key.max_len < MT_LENGTHS_MAX ? c->key.max_len : MT_LENGTHS_MAX;
    k->seq_len = mean;
    k->max_len = mean;
    snprintf(k->lengths, sizeof k->lengths, "uniform");
    if (longest <= mean || k->batch < 2) return MT_OK;
    /* one request of `longest` keys, the others `rest` each: the mean stays */
    long long rest = ((long long)k->batch * mean - longest) / (k->batch - 1);
    char spec[64];
    snprintf(spec, sizeof spec, "one-long:%d:%lld", longest, rest > 0 ? rest : 1);
    mt_lengths_mix mix;
    int32_t *lens = malloc(sizeof *lens * (size_t)k->batch);
    if (!lens) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st = mt_lengths_parse(spec, &mix);
    if (st == MT_OK) st = mt_lengths_make(&mix, k->batch, mean, lens);
    if (st == MT_OK) {
        mt_lengths_stats(lens, k->batch, &k->seq_len, &k->max_len);
        mt_lengths_name(&mix, k->lengths, sizeof k->lengths);
    }
    free(lens);
    return st;
}

mt_status mt_plan_from_recorded(const char *db_path, const char *arch, mt_plan *plan, int *n_recorded) {
    *n_recorded = 0;
    mt_db *db = NULL;
    mt_recorded_call *calls = NULL;
    int n = 0;
    mt_status st = mt_db_open(db_path, MT_DB_READ, &db);
    if (st == MT_OK) st = mt_db_load_recorded(db, arch, &calls, &n);
    mt_db_close(db);
    if (st != MT_OK) return st;
    mt_problem_key *keys = calloc((size_t)(n > 0 ? n : 1), sizeof *keys);
    if (!keys) {
        free(calls);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    int count = 0;
    for (int i = 0; i < n && st == MT_OK; i++) {
        mt_problem_key k;
        if ((st = key_of(&calls[i], &k)) != MT_OK) break;
        int seen = 0;  /* the same shape recorded on two devices of the arch is one key */
        for (int j = 0; j < count && !seen; j++) seen = same_key(&keys[j], &k);
        if (!seen) keys[count++] = k;
    }
    free(calls);
    if (st != MT_OK) {
        free(keys);
        return st;
    }
    mt_plan_free(plan);
    plan->keys = keys;
    plan->n_keys = count;
    snprintf(plan->name, sizeof plan->name, "recorded");
    *n_recorded = n;
    return MT_OK;
}
