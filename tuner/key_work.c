/*
 * key_work.c - the work of a problem key (key_work.h).
 */
#include "key_work.h"

#include <string.h>

#include "prefill_key.h"

int mt_key_is_prefill(const mt_problem_key *k) { return strcmp(k->kind, "mla_prefill") == 0; }

double mt_key_bytes(const mt_problem_key *k) {
    if (mt_key_is_prefill(k)) return mt_prefill_bytes(k);
    double rows = (double)k->sq * k->n_heads;
    return (double)k->batch * ((double)k->seq_len * k->s.d * (double)mt_dtype_size(k->s.kv_dtype) +
                               rows * (k->s.d + k->s.dl) * 2.0 + rows * 4.0);
}

double mt_key_flops(const mt_problem_key *k) {
    if (mt_key_is_prefill(k)) return mt_prefill_flops(k);
    return (double)k->batch * k->sq * k->n_heads * (double)k->seq_len * (2.0 * k->s.d + 2.0 * k->s.dl);
}
