/*
 * worker_prefill.c - a sweep worker's prefill job (worker_prefill.h).
 *
 * Per key: `requests` requests of `tokens` new tokens each over `seq_len`
 * keys (the key's fields: kernels/mla_prefill/mla_prefill.h), rows laid
 * out contiguously with cu_seqlens, q, k and v uniform in [-1, 1) (random
 * data, never zeros; k holds all D columns, no k_pe), scale 1/sqrt(D).
 * Reference: the CPU reference in double precision over the whole call
 * when it costs at most verify_cpu_macs multiply-adds, else over sampled
 * rows (token, head): each such row is one attention over the keys it
 * sees, which the reference computes alone - the first and last new
 * token, the last request, the others spread by a fixed stride.  Then,
 * per variant: build through the JIT, poison out and lse with NaN, run
 * once, compare (NaN never passes; ||out - ref|| / ||ref|| under 1e-2 for
 * bf16, 5e-3 for fp16; lse under 1e-3), and time as decode: warm-up, then
 * per timed run an L2 flush and the launch between two events (timing.h).
 */
#define _GNU_SOURCE
#include "worker_prefill.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/build.h"
#include "kernels/dtype.h"
#include "kernels/mla_decode/mla_reference.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "kernels/mla_prefill/prefill_reference.h"
#include "prefill_key.h"
#include "worker_job.h"

enum { SAMPLES = 64 };

struct mt_prefill_key_state {
    mt_problem_key key;
    unsigned seed;
    int causal;
    size_t q_elems, k_elems, v_elems, out_elems, lse_elems;
    void *q, *k, *v, *host_out;
    float *host_lse;
    int32_t *cu_q, *cu_k;
    /* the reference: whole (n_rows = tokens x heads of every request) or
     * the sampled rows, each (row, head) of out/lse as indices */
    long n_rows;
    long *row_token;   /* NULL: every row, in order */
    int *row_head;
    double *ref_out, *ref_lse, *got_out, *got_lse;
    char ref_source[48];
    mt_devptr dq, dk, dv, dcu_q, dcu_k, dout, dlse;
    float scale;
};

static uint64_t rng;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

void mt_prefill_worker_free(mt_prefill_key_state *k, mt_backend *b) {
    if (!k) return;
    mt_backend_mem_free(b, k->dq), mt_backend_mem_free(b, k->dk), mt_backend_mem_free(b, k->dv);
    mt_backend_mem_free(b, k->dcu_q), mt_backend_mem_free(b, k->dcu_k), mt_backend_mem_free(b, k->dout);
    mt_backend_mem_free(b, k->dlse);
    free(k->q), free(k->k), free(k->v), free(k->host_out), free(k->host_lse), free(k->cu_q), free(k->cu_k);
    free(k->row_token), free(k->row_head), free(k->ref_out), free(k->ref_lse), free(k->got_out), free(k->got_lse);
    free(k);
}

static mt_mla_prefill_args call_args(const mt_prefill_key_state *k, const mt_worker_gpu *g) {
    return (mt_mla_prefill_args){.batch = k->key.batch, .n_heads = k->key.n_heads, .max_q = k->key.sq,
                                 .compute_units = g->info->compute_units,
                                 .nope = k->key.s.d, .causal = k->causal, .scale = k->scale, .cu_q = k->dcu_q,
                                 .cu_k = k->dcu_k, .q = {.ptr = k->dq}, .k = {.ptr = k->dk}, .v = {.ptr = k->dv},
                                 .out = {.ptr = k->dout}, .lse = {.ptr = k->dlse}};
}

/* Sampled rows: one attention of one (token, head) over the keys it sees,
 * copied out of the call's inputs and computed alone by the reference. */
static mt_status sample_reference(mt_prefill_key_state *k) {
    const mt_problem_key *key = &k->key;
    const int d = key->s.d, dl = key->s.dl, heads = key->n_heads, tokens = key->sq, keys = key->seq_len;
    long total = (long)key->batch * tokens;
    k->n_rows = total * heads < SAMPLES ? total * heads : SAMPLES;
    k->row_token = malloc(sizeof *k->row_token * (size_t)k->n_rows);
    k->row_head = malloc(sizeof *k->row_head * (size_t)k->n_rows);
    size_t qs = mt_dtype_size(key->s.q_dtype), ks = mt_dtype_size(key->s.kv_dtype);
    void *q1 = malloc((size_t)d * qs), *k1 = malloc((size_t)keys * d * ks), *v1 = malloc((size_t)keys * dl * ks);
    mt_status st = k->row_token && k->row_head && q1 && k1 && v1
                       ? MT_OK
                       : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for the sampled reference");
    for (long i = 0; st == MT_OK && i < k->n_rows; i++) {
        /* the first and last new token of the last request, then a stride */
        int r = i < 2 ? key->batch - 1 : (int)((i * 7) % key->batch);
        int t = i == 0 ? 0 : i == 1 ? tokens - 1 : (int)((i * 7919) % tokens);
        int h = (int)((i * 37) % heads);
        int context = keys - tokens;
        int vis = k->causal ? context + t + 1 : keys;
        if (vis > keys) vis = keys;
        if (vis < 1) vis = 1;  /* keys >= tokens in every prefill key (context >= 0) */
        long row = (long)r * tokens + t;
        k->row_token[i] = row, k->row_head[i] = h;
        memcpy(q1, (char *)k->q + ((size_t)row * heads + h) * d * qs, (size_t)d * qs);
        for (int j = 0; j < vis; j++) {
            size_t kr = (size_t)r * keys + j;
            memcpy((char *)k1 + (size_t)j * d * ks, (char *)k->k + (kr * heads + h) * d * ks, (size_t)d * ks);
            memcpy((char *)v1 + (size_t)j * dl * ks, (char *)k->v + (kr * heads + h) * dl * ks, (size_t)dl * ks);
        }
        int32_t cq[2] = {0, 1}, ck[2] = {0, vis};
        mt_prefill_host_problem hp = {.s = key->s, .batch = 1, .n_heads = 1, .nope = d, .causal = 0,
                                      .scale = k->scale, .cu_q = cq, .cu_k = ck, .q = q1, .k = k1, .v = v1};
        mt_prefill_reference(&hp, k->ref_out + i * dl, k->ref_lse + i);
    }
    free(q1), free(k1), free(v1);
    return st;
}

static mt_status prepare(mt_prefill_key_state *k, const mt_worker_gpu *g, const mt_job *job) {
    const mt_problem_key *key = &job->key;
    k->key = *key;
    k->seed = job->seed;
    k->causal = mt_prefill_key_causal(key);
    k->scale = (float)(1.0 / sqrt((double)key->s.d));
    rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)job->seed << 20) ^ (uint64_t)key->batch * 1315423911u ^
          (uint64_t)key->sq * 2654435761u ^ (uint64_t)key->seq_len;
    const size_t total_q = (size_t)key->batch * key->sq, total_k = (size_t)key->batch * key->seq_len;
    const size_t heads = (size_t)key->n_heads, qs = mt_dtype_size(key->s.q_dtype), ks = mt_dtype_size(key->s.kv_dtype);
    k->q_elems = total_q * heads * key->s.d;
    k->k_elems = total_k * heads * key->s.d;
    k->v_elems = total_k * heads * key->s.dl;
    k->out_elems = total_q * heads * key->s.dl;
    k->lse_elems = total_q * heads;
    double macs = (double)heads * key->batch * mt_prefill_pairs(key->sq, key->seq_len, k->causal) *
                  (key->s.d + key->s.dl);
    int whole = macs <= job->verify_cpu_macs;
    long ref_rows = whole ? (long)k->lse_elems : SAMPLES;
    k->q = malloc(k->q_elems * qs), k->k = malloc(k->k_elems * ks), k->v = malloc(k->v_elems * ks);
    k->host_out = malloc(k->out_elems * qs), k->host_lse = malloc(k->lse_elems * sizeof(float));
    k->cu_q = malloc(sizeof(int32_t) * (size_t)(key->batch + 1));
    k->cu_k = malloc(sizeof(int32_t) * (size_t)(key->batch + 1));
    k->ref_out = malloc(sizeof(double) * (size_t)ref_rows * key->s.dl);
    k->got_out = malloc(sizeof(double) * (size_t)ref_rows * key->s.dl);
    k->ref_lse = malloc(sizeof(double) * (size_t)ref_rows), k->got_lse = malloc(sizeof(double) * (size_t)ref_rows);
    if (!k->q || !k->k || !k->v || !k->host_out || !k->host_lse || !k->cu_q || !k->cu_k || !k->ref_out ||
        !k->got_out || !k->ref_lse || !k->got_lse)
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for %d x %d new tokens over %d keys", key->batch,
                       key->sq, key->seq_len);
    for (int b = 0; b <= key->batch; b++) k->cu_q[b] = b * key->sq, k->cu_k[b] = b * key->seq_len;
    for (size_t i = 0; i < k->q_elems; i++) mt_host_store(key->s.q_dtype, k->q, i, (float)uniform());
    for (size_t i = 0; i < k->k_elems; i++) mt_host_store(key->s.kv_dtype, k->k, i, (float)uniform());
    for (size_t i = 0; i < k->v_elems; i++) mt_host_store(key->s.kv_dtype, k->v, i, (float)uniform());
    mt_backend *b = g->b;
    size_t cu = sizeof(int32_t) * (size_t)(key->batch + 1);
    mt_status st;
    if ((st = mt_backend_mem_alloc(b, k->q_elems * qs, &k->dq)) != MT_OK ||
        (st = mt_backend_mem_alloc(b, k->k_elems * ks, &k->dk)) != MT_OK ||
        (st = mt_backend_mem_alloc(b, k->v_elems * ks, &k->dv)) != MT_OK ||
        (st = mt_backend_mem_alloc(b, cu, &k->dcu_q)) != MT_OK || (st = mt_backend_mem_alloc(b, cu, &k->dcu_k)) != MT_OK ||
        (st = mt_backend_mem_alloc(b, k->out_elems * qs, &k->dout)) != MT_OK ||
        (st = mt_backend_mem_alloc(b, k->lse_elems * sizeof(float), &k->dlse)) != MT_OK)
        return st;
    if ((st = mt_backend_copy_to_device(b, k->dq, k->q, k->q_elems * qs, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(b, k->dk, k->k, k->k_elems * ks, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(b, k->dv, k->v, k->v_elems * ks, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(b, k->dcu_q, k->cu_q, cu, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(b, k->dcu_k, k->cu_k, cu, g->stream)) != MT_OK)
        return st;
    if (whole) {
        mt_prefill_host_problem hp = {.s = key->s, .batch = key->batch, .n_heads = key->n_heads, .nope = key->s.d,
                                      .causal = k->causal, .scale = k->scale, .cu_q = k->cu_q, .cu_k = k->cu_k,
                                      .q = k->q, .k = k->k, .v = k->v};
        mt_prefill_reference(&hp, k->ref_out, k->ref_lse);
        k->n_rows = (long)k->lse_elems;
        snprintf(k->ref_source, sizeof k->ref_source, "CPU reference");
        return MT_OK;
    }
    snprintf(k->ref_source, sizeof k->ref_source, "CPU reference (%d sampled rows)", SAMPLES);
    return sample_reference(k);
}

/* Launch once into poisoned outputs; the reference's rows as doubles. */
static mt_status run_once(mt_prefill_key_state *k, const mt_worker_gpu *g, const mt_variant *v, const mt_kernels *fns) {
    size_t qs = mt_dtype_size(k->key.s.q_dtype);
    mt_mla_prefill_args a = call_args(k, g);
    mt_status st;
    if ((st = mt_backend_mem_set(g->b, k->dout, 0xff, k->out_elems * qs, g->stream)) != MT_OK ||
        (st = mt_backend_mem_set(g->b, k->dlse, 0xff, k->lse_elems * sizeof(float), g->stream)) != MT_OK ||
        (st = v->family->launch(g->b, fns, v, &k->key.s, &a, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_host(g->b, k->host_out, k->dout, k->out_elems * qs, g->stream)) != MT_OK ||
        (st = mt_backend_copy_to_host(g->b, k->host_lse, k->dlse, k->lse_elems * sizeof(float), g->stream)) != MT_OK)
        return st;
    const int dl = k->key.s.dl, heads = k->key.n_heads;
    for (long i = 0; i < k->n_rows; i++) {
        size_t row = k->row_token ? (size_t)k->row_token[i] * heads + (size_t)k->row_head[i] : (size_t)i;
        for (int c = 0; c < dl; c++) k->got_out[i * dl + c] = mt_host_load(k->key.s.q_dtype, k->host_out, row * dl + c);
        k->got_lse[i] = k->host_lse[row];
    }
    return MT_OK;
}

int mt_prefill_worker_job(mt_prefill_key_state **state, const mt_worker_gpu *g, const mt_job *job, mt_job_result *r) {
    memset(r, 0, sizeof *r);
    mt_prefill_key_state *k = *state;
    if (!k || memcmp(&k->key, &job->key, sizeof k->key) != 0 || k->seed != job->seed) {
        mt_prefill_worker_free(k, g->b);
        *state = k = calloc(1, sizeof *k);
        mt_status st = k ? prepare(k, g, job) : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st != MT_OK) {
            r->status = MT_MEASURE_LAUNCH_FAILED;
            snprintf(r->error, sizeof r->error, "preparing prefill inputs: %s", mt_last_error());
            return 1;
        }
    }
    mt_target t;
    mt_target_from_device(g->info, &t);
    mt_kernels fns = {{0}};
    mt_status st = mt_build_variant(g->jit, &job->variant, &k->key.s, &t, &fns);
    if (st != MT_OK) {
        r->status = st == MT_ERR_COMPILE ? MT_MEASURE_COMPILE_FAILED : MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "%s", mt_last_error());
        return st != MT_ERR_COMPILE;
    }
    if ((st = run_once(k, g, &job->variant, &fns)) != MT_OK) {
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "%s", mt_last_error());
        return st != MT_ERR_INVALID_ARGUMENT;
    }
    double e_out = mt_relative_error(k->got_out, k->ref_out, k->n_rows * k->key.s.dl);
    double e_lse = mt_relative_error(k->got_lse, k->ref_lse, k->n_rows);
    if (mt_job_judge(r, k->key.s.q_dtype, e_out, e_lse, k->ref_source)) return 0;
    mt_mla_prefill_args a = call_args(k, g);
    return mt_job_time_launch(g->b, g->stream, g->flush, &fns, &job->variant, &k->key.s, &a, job->warmup,
                              job->reps, r);
}
