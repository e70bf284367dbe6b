/*
 * prefill_key.h - the tuner's view of a prefill problem key (the fields'
 * meaning is in kernels/mla_prefill/mla_prefill.h): reading plan entries
 * of `kind: mla_prefill`, the work a key is (flops, bytes), and one line
 * describing it.  Used by config.c (plans), the sweep's estimate
 * (estimate.c), the worker and bench.
 *
 * A plan entry (configs/README.md):
 *   - kind: mla_prefill
 *     heads: [16, 128]       1..128
 *     tokens: [1024, 8192]   new tokens per request
 *     requests: [1, 8]       requests per call (the batch)
 *     context: [0, 4096]     keys before the new tokens (default 0); with
 *                            causal false, the chunk's keys (>= 1)
 *     causal: [true, false]  default true
 *     d: 192                 qk head dim (default 192 = 128 + 64)
 *     dl: 128                v head dim (default 128)
 *     q_dtype / kv_dtype     bf16 or fp16 (default bf16)
 */
#ifndef MT_PREFILL_KEY_H
#define MT_PREFILL_KEY_H

#include <stddef.h>

#include "config.h"
#include "yaml_tree.h"

/* Adds the keys of one plan entry of kind mla_prefill to p; an error names
 * the file, line and field. */
mt_status mt_plan_add_prefill_entry(const char *path, const yt_node *entry, mt_plan *p);

/* 1 for a causal key, 0 for a non-causal one. */
int mt_prefill_key_causal(const mt_problem_key *k);
/* The context of a key: keys before the new tokens (causal), or the
 * chunk's keys (non-causal). */
int mt_prefill_key_context(const mt_problem_key *k);

/* The key as a prefill problem: requests x new tokens over keys. */
void mt_prefill_key_make(mt_problem_key *k, int heads, int d, int dl, mt_dtype q, mt_dtype kv, int requests,
                         int tokens, int context, int causal);

/* Query-key pairs one request computes: tokens x keys, less the masked
 * half of the new tokens' square when causal (the convention of
 * FlashAttention's benchmarks: a causal call over no context counts half
 * the flops of a full one). */
double mt_prefill_pairs(int tokens, int keys, int causal);
/* Flops of a call: 2 (D + Dl) per pair, head and request. */
double mt_prefill_flops(const mt_problem_key *k);
/* Bytes a call must move at least: q, k, v once, out and lse once. */
double mt_prefill_bytes(const mt_problem_key *k);

/* "128 heads, 8 x 1024 new tokens, context 0, causal, bf16/bf16" */
void mt_prefill_key_describe(const mt_problem_key *k, char *buf, size_t size);

/* A prefill key's columns in the tuner's text tables (sweep's dry run and
 * summary, show), so that they do not read a prefill key in decode's
 * columns (Sq, len): the header ("heads requests new tokens context keys
 * mask"), the key's cells under it, and a line saying what keys and
 * context count. */
void mt_prefill_key_columns(char *buf, size_t size);
void mt_prefill_key_cells(const mt_problem_key *k, char *buf, size_t size);
const char *mt_prefill_key_columns_note(void);

#endif
