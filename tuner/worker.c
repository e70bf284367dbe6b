/*
 * worker.c - `mla-tune __worker`: one GPU, one process, measuring the jobs
 * the sweep coordinator sends (protocol.h).
 *
 * For each job: make (or reuse) the key's inputs - random data, never zeros:
 * q and KV uniform in [-1, 1) (fp8 KV quantised with a per-tensor scale), a
 * shuffled block table, the requests' lengths as the key's mix makes them
 * (every one seq_len keys long for "uniform"; tuner/lengths.h) - and the reference
 * output: the CPU reference in double precision when it costs at most
 * verify_cpu_macs multiply-adds, else the family's default variant on the
 * GPU (the trusted variant, itself checked against the CPU reference by the
 * GPU test suite).  Then: compile through the JIT (usually a disk-cache hit:
 * the coordinator compiles ahead), poison out and lse with NaN, run once and
 * compare (NaN never passes; ||out - ref|| / ||ref|| under 1e-2 for bf16,
 * 5e-3 for fp16), then time: warm-up launches, and per timed run an L2 flush
 * (reads over four times the L2, timing.h) followed by the launch between
 * two events.
 * Median, min, max and spread (p90 - p10) of the event times are reported.
 *
 * --inject-fault PARAM=VALUE (tests): a job whose variant has that value,
 * decode or prefill, runs mt_test_oob_write (test_kernels.cu) instead, a
 * kernel that writes far outside its buffer, so the GPU really faults and
 * the context is lost - what a buggy variant does; on the fake device the
 * job fails as such a fault leaves it (worker_fault.h).
 *
 * --fake SPEC replaces the GPU with a simulation for the coordinator's tests
 * (resume, isolation): times derived from the parameters, and listed
 * variants that crash the process, hang, fail to compile or give wrong
 * results.  SPEC: comma-separated ACTION:PARAM=VALUE[+PARAM=VALUE...] with
 * ACTION one of crash, hang, wrong, compile, and sleep:ms=N to slow every
 * job; e.g. "crash:tile_q=32,hang:tile_q=4+num_splits=16,sleep:ms=20".
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "lengths.h"
#include "kernels/dtype.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_decode/mla_reference.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "prefill_key.h"
#include "worker_fault.h"
#include "worker_job.h"
#include "worker_prefill.h"
#include "ceilings.h"
#include "timing.h"
#include "protocol.h"
#include "runtime/gpu/jit.h"

/* --- parsing the protocol ------------------------------------------------------ */

static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    char *save = NULL;
    line[strcspn(line, "\n")] = '\0';
    for (char *f = strtok_r(line, "\t", &save); f && n < max; f = strtok_r(NULL, "\t", &save)) fields[n++] = f;
    return n;
}

static mt_status parse_job(char *line, mt_job *job) {
    char *f[20];
    line[strcspn(line, "\r\n")] = '\0';
    int n = split_tabs(line, f, 20);
    if (n != 19 || strcmp(f[0], "JOB") != 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "bad job line (%d fields)", n);
    memset(job, 0, sizeof *job);
    snprintf(job->key.kind, sizeof job->key.kind, "%s", f[17]);
    if (mt_dtype_parse(f[1], &job->key.s.q_dtype) != MT_OK || mt_dtype_parse(f[2], &job->key.s.kv_dtype) != MT_OK)
        return MT_ERR_INVALID_ARGUMENT;
    job->key.s.d = atoi(f[3]);
    job->key.s.dl = atoi(f[4]);
    job->key.s.page_size = atoi(f[5]);
    job->key.n_heads = atoi(f[6]);
    job->key.sq = atoi(f[7]);
    job->key.batch = atoi(f[8]);
    job->key.seq_len = atoi(f[9]);
    const mt_family *fam = mt_family_find(f[10]);
    if (!fam) return mt_fail(MT_ERR_INVALID_ARGUMENT, "unknown family %s", f[10]);
    mt_status st = mt_variant_parse(fam, f[11], &job->variant);
    if (st != MT_OK) return st;
    job->warmup = atoi(f[12]);
    job->reps = atoi(f[13]);
    job->verify_cpu_macs = atof(f[14]);
    job->seed = (unsigned)strtoul(f[15], NULL, 10);
    job->key.max_len = atoi(f[16]);
    snprintf(job->key.lengths, sizeof job->key.lengths, "%s", f[18]);
    if (strcmp(job->key.kind, "mla_prefill") == 0) return MT_OK;  /* lengths: its mask (worker_prefill.c) */
    if (strcmp(job->key.kind, "mla_decode") != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "unknown problem kind '%s'", job->key.kind);
    mt_lengths_mix mix;
    return mt_lengths_parse(job->key.lengths, &mix); /* refused here, not half-way through a key */
}

static void reply(const mt_job_result *r) {
    char error[512];
    snprintf(error, sizeof error, "%s", r->error[0] ? r->error : "-");
    for (char *p = error; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    printf("RESULT\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%d\t%s\n", mt_measure_status_name(r->status), r->median_ms, r->min_ms,
           r->max_ms, r->spread_ms, r->reps, error);
    fflush(stdout);
}

/* --- the fake device ------------------------------------------------------------- */

/* A rule: an action and up to 4 PARAM=VALUE conditions, all of which must
 * hold ("hang:tile_q=4+num_splits=16").  "sleep:ms=N" delays every job. */
typedef struct fake_rule {
    char action[16];
    char param[4][32];
    int value[4];
    int n;
} fake_rule;

static int fake_matches(const fake_rule *rules, int n, const char *action, const mt_variant *v) {
    for (int i = 0; i < n; i++) {
        if (strcmp(rules[i].action, action) != 0) continue;
        int all = 1;
        for (int c = 0; c < rules[i].n; c++) {
            int p = mt_family_param_index(v->family, rules[i].param[c]);
            all &= p >= 0 && v->values[p] == rules[i].value[c];
        }
        if (all) return 1;
    }
    return 0;
}

static int run_fake(const char *spec, const mt_job_fault *fault) {
    fake_rule rules[16];
    int n_rules = 0, sleep_ms = 0;
    char *copy = strdup(spec), *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && n_rules < 16; item = strtok_r(NULL, ",", &save)) {
        fake_rule *r = &rules[n_rules];
        memset(r, 0, sizeof *r);
        char *colon = strchr(item, ':');
        if (!colon) continue;
        *colon = '\0';
        snprintf(r->action, sizeof r->action, "%s", item);
        char *save2 = NULL;
        for (char *cond = strtok_r(colon + 1, "+", &save2); cond && r->n < 4; cond = strtok_r(NULL, "+", &save2))
            if (sscanf(cond, "%31[^=]=%d", r->param[r->n], &r->value[r->n]) == 2) r->n++;
        if (strcmp(r->action, "sleep") == 0 && r->n == 1) sleep_ms = r->value[0];
        else if (r->n > 0) n_rules++;
    }
    free(copy);
    /* four identical fake GPUs, so that --devices all has several; made-up
     * ceilings (3000 GB/s, 700 TFLOP/s) for the sweep to store.  Their
     * compiler is this host's (the coordinator names it, fake_compiler_env
     * in sweep.c): what a fake sweep records then passes the validators of
     * the tools and runtime on this host, as a real sweep's would */
    const char *compiler = getenv("MLA_TUNE_FAKE_COMPILER");
    if (!compiler || !compiler[0]) compiler = "fake-compiler";
    printf("DEVICE\tsm_90\tfake-gpu\t132\t85899345920\t13.0\t%s\t232448\t32\t4\t3000.0\t700.0\n", compiler);
    fflush(stdout);
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        mt_job job;
        if (parse_job(line, &job) != MT_OK) {
            fprintf(stderr, "worker: %s\n", mt_last_error());
            return 2;
        }
        if (sleep_ms) usleep((useconds_t)sleep_ms * 1000);
        mt_job_result r = {.status = MT_MEASURE_OK, .reps = job.reps};
        if (mt_job_fault_hits(fault, &job.variant)) {
            mt_job_fault_fake(&r);
            reply(&r);
            return 3; /* as a worker whose GPU faulted */
        }
        if (fake_matches(rules, n_rules, "crash", &job.variant)) raise(SIGSEGV);
        if (fake_matches(rules, n_rules, "hang", &job.variant)) pause();
        if (fake_matches(rules, n_rules, "compile", &job.variant)) {
            r.status = MT_MEASURE_COMPILE_FAILED;
            snprintf(r.error, sizeof r.error, "fake compiler: rejected");
        } else if (fake_matches(rules, n_rules, "wrong", &job.variant)) {
            r.status = MT_MEASURE_WRONG_RESULT;
            snprintf(r.error, sizeof r.error, "relative error 3.1e-01 over 1.0e-02");
        } else if (strcmp(job.key.kind, "mla_prefill") == 0) {
            /* prefill: best at tile_q=64, kv_tile=64, 128 threads, mma=1
             * (not the family default: gains show) */
            const int *v = job.variant.values;
            double t = 0.05 + 1e-13 * mt_prefill_flops(&job.key);
            t *= 1.0 + 0.05 * fabs(log2(v[MT_PF_TILE_Q] / 64.0)) + 0.04 * fabs(log2(v[MT_PF_KV_TILE] / 64.0)) +
                 0.02 * fabs(log2(v[MT_PF_BLOCK_THREADS] / 128.0)) + 0.5 * (v[MT_PF_MMA] == 0);
            r.median_ms = t, r.min_ms = t * 0.99, r.max_ms = t * 1.02, r.spread_ms = t * 0.002;
        } else {
            /* a deterministic landscape whose best point (tile_q=8,
             * num_splits=8, kv_chunk=32, block_threads=256) is not the
             * default, so gains over the default show */
            const int *v = job.variant.values;
            double t = 0.05 + 1e-7 * job.key.batch * job.key.seq_len;
            t *= 1.0 + 0.05 * fabs(log2(v[MT_P_TILE_Q] / 8.0)) + 0.04 * fabs(log2(v[MT_P_NUM_SPLITS] / 8.0)) +
                 0.03 * fabs(log2(v[MT_P_KV_CHUNK] / 32.0)) + 0.02 * fabs(log2(v[MT_P_BLOCK_THREADS] / 256.0)) +
                 0.001 * log2(v[MT_P_KV_GRANULARITY] / 16.0);
            r.median_ms = t, r.min_ms = t * 0.99, r.max_ms = t * 1.02, r.spread_ms = t * 0.002;
        }
        reply(&r);
    }
    return 0;
}

/* --- the GPU path --------------------------------------------------------------------- */

typedef struct key_state {
    int valid;
    mt_problem_key key;
    unsigned seed;
    int rows, max_blocks;
    size_t q_elems, kv_elems, out_elems, lse_elems;
    void *q, *kv;
    int32_t *table, *lens;
    double *ref_out, *ref_lse;
    char ref_source[48];
    mt_devptr dq, dkv, dtable, dlens, dout, dlse, dws;
    size_t ws_bytes;
    float scale, kv_scale;
} key_state;

typedef struct gpu_worker {
    mt_backend *b;
    mt_jit *jit;
    mt_device_info info;
    mt_stream stream;
    mt_l2_flush flush;
    key_state ks;
    double *got_out, *got_lse;
    void *host_out;
    float *host_lse;
} gpu_worker;

static uint64_t rng;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void free_key(gpu_worker *w) {
    key_state *k = &w->ks;
    mt_backend_mem_free(w->b, k->dq), mt_backend_mem_free(w->b, k->dkv), mt_backend_mem_free(w->b, k->dtable);
    mt_backend_mem_free(w->b, k->dlens), mt_backend_mem_free(w->b, k->dout), mt_backend_mem_free(w->b, k->dlse);
    mt_backend_mem_free(w->b, k->dws);
    free(k->q), free(k->kv), free(k->table), free(k->lens), free(k->ref_out), free(k->ref_lse);
    free(w->got_out), free(w->got_lse), free(w->host_out), free(w->host_lse);
    w->got_out = w->got_lse = NULL, w->host_out = NULL, w->host_lse = NULL;
    memset(k, 0, sizeof *k);
}

/* The variant's kernels on this worker's GPU (the one recipe, kernels/build.h). */
static mt_status get_functions(gpu_worker *w, const mt_variant *v, const mt_problem_static *s, mt_kernels *fns) {
    mt_target t;
    mt_target_from_device(&w->info, &t);
    return mt_build_variant(w->jit, v, s, &t, fns);
}

static mt_status ensure_workspace(gpu_worker *w, size_t bytes) {
    key_state *k = &w->ks;
    if (bytes <= k->ws_bytes) return MT_OK;
    mt_backend_mem_free(w->b, k->dws);
    k->dws = 0, k->ws_bytes = 0;
    mt_status st = mt_backend_mem_alloc(w->b, bytes, &k->dws);
    if (st == MT_OK) k->ws_bytes = bytes;
    return st;
}

/* Workspace bytes variant v needs for the current key on this device */
static size_t key_workspace_bytes(const gpu_worker *w, const mt_variant *v) {
    const key_state *k = &w->ks;
    return mt_mla_decode_workspace_bytes(v, &k->key.s, k->key.batch, k->key.n_heads, k->key.sq, w->info.compute_units);
}

static mt_mla_decode_args key_args(gpu_worker *w, size_t ws_needed) {
    key_state *k = &w->ks;
    return (mt_mla_decode_args){.batch = k->key.batch, .n_heads = k->key.n_heads, .sq = k->key.sq,
                                .max_blocks = k->max_blocks, .page_size = k->key.s.page_size, .warp_size = w->info.warp_size,
                                .scale = k->scale,
                                .kv_scale = k->kv_scale, .q = k->dq, .kv = k->dkv, .block_table = k->dtable,
                                .seq_lens = k->dlens, .out = k->dout, .lse = k->dlse, .workspace = ws_needed ? k->dws : 0,
                                .workspace_bytes = ws_needed ? k->ws_bytes : 0,
                                .compute_units = w->info.compute_units};
}

/* Launch once into poisoned outputs and read them back as doubles. */
static mt_status run_once(gpu_worker *w, const mt_variant *v, const mt_kernels *fns, double *out,
                          double *lse) {
    key_state *k = &w->ks;
    size_t ws = key_workspace_bytes(w, v);
    mt_status st = ensure_workspace(w, ws);
    if (st != MT_OK) return st;
    mt_mla_decode_args a = key_args(w, ws);
    if ((st = mt_backend_mem_set(w->b, k->dout, 0xff, k->out_elems * 2, w->stream)) != MT_OK) return st;
    if ((st = mt_backend_mem_set(w->b, k->dlse, 0xff, k->lse_elems * 4, w->stream)) != MT_OK) return st;
    if (ws && (st = mt_backend_mem_set(w->b, k->dws, 0xff, ws, w->stream)) != MT_OK) return st;
    if ((st = v->family->launch(w->b, fns, v, &k->key.s, &a, w->stream)) != MT_OK) return st;
    if ((st = mt_backend_copy_to_host(w->b, w->host_out, k->dout, k->out_elems * 2, w->stream)) != MT_OK) return st;
    if ((st = mt_backend_copy_to_host(w->b, w->host_lse, k->dlse, k->lse_elems * 4, w->stream)) != MT_OK) return st;
    const uint16_t *o16 = w->host_out;
    for (size_t i = 0; i < k->out_elems; i++)
        out[i] = mt_host_load(k->key.s.q_dtype, o16, i);
    for (size_t i = 0; i < k->lse_elems; i++) lse[i] = w->host_lse[i];
    return MT_OK;
}

static mt_status prepare_key(gpu_worker *w, const mt_job *job) {
    key_state *k = &w->ks;
    if (k->valid && memcmp(&k->key, &job->key, sizeof k->key) == 0 && k->seed == job->seed) return MT_OK;
    free_key(w);
    k->key = job->key;
    k->seed = job->seed;
    rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)job->seed << 20) ^ (uint64_t)job->key.batch * 1315423911u ^
          (uint64_t)job->key.seq_len;
    const mt_problem_static *s = &k->key.s;
    const int page = s->page_size;
    /* the requests' lengths: the key's mix (the same for the same key and
     * seed everywhere: the coordinator took the key's mean and longest
     * from it) */
    k->lens = malloc(sizeof(int32_t) * (size_t)job->key.batch);
    mt_lengths_mix mix;
    mt_status st = k->lens ? mt_lengths_parse(job->key.lengths[0] ? job->key.lengths : "uniform", &mix)
                           : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == MT_OK) st = mt_lengths_make(&mix, job->key.batch, job->key.seq_len, k->lens);
    if (st != MT_OK) return st;
    long long total_keys = 0;
    for (int b = 0; b < job->key.batch; b++) total_keys += k->lens[b];
    size_t pages = 1;
    if ((st = mt_lengths_page_table(k->lens, job->key.batch, page, &rng, &k->table, &k->max_blocks, &pages)) != MT_OK)
        return st;
    k->rows = job->key.sq * job->key.n_heads;
    k->q_elems = (size_t)job->key.batch * k->rows * s->d;
    k->kv_elems = pages * page * s->d;
    k->out_elems = (size_t)job->key.batch * k->rows * s->dl;
    k->lse_elems = (size_t)job->key.batch * k->rows;
    k->scale = (float)(1.0 / sqrt((double)s->d));
    k->kv_scale = mt_host_unit_kv_scale(s->kv_dtype);
    size_t kv_size = mt_dtype_size(s->kv_dtype);
    k->q = malloc(k->q_elems * 2);
    k->kv = malloc(k->kv_elems * kv_size);
    k->ref_out = malloc(sizeof(double) * k->out_elems);
    k->ref_lse = malloc(sizeof(double) * k->lse_elems);
    w->got_out = malloc(sizeof(double) * k->out_elems);
    w->got_lse = malloc(sizeof(double) * k->lse_elems);
    w->host_out = malloc(k->out_elems * 2);
    w->host_lse = malloc(k->lse_elems * 4);
    if (!k->q || !k->kv || !k->table || !k->ref_out || !k->ref_lse || !w->got_out || !w->got_lse ||
        !w->host_out || !w->host_lse)
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for batch %d x %d keys", job->key.batch,
                       job->key.seq_len);
    for (size_t i = 0; i < k->q_elems; i++) mt_host_store(s->q_dtype, k->q, i, (float)uniform());
    for (size_t i = 0; i < k->kv_elems; i++) mt_host_store(s->kv_dtype, k->kv, i, (float)uniform() / k->kv_scale);
    if ((st = mt_backend_mem_alloc(w->b, k->q_elems * 2, &k->dq)) != MT_OK ||
        (st = mt_backend_mem_alloc(w->b, k->kv_elems * kv_size, &k->dkv)) != MT_OK ||
        (st = mt_backend_mem_alloc(w->b, sizeof(int32_t) * (size_t)job->key.batch * k->max_blocks, &k->dtable)) != MT_OK ||
        (st = mt_backend_mem_alloc(w->b, sizeof(int32_t) * (size_t)job->key.batch, &k->dlens)) != MT_OK ||
        (st = mt_backend_mem_alloc(w->b, k->out_elems * 2, &k->dout)) != MT_OK ||
        (st = mt_backend_mem_alloc(w->b, k->lse_elems * 4, &k->dlse)) != MT_OK)
        return st;
    if ((st = mt_backend_copy_to_device(w->b, k->dq, k->q, k->q_elems * 2, w->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(w->b, k->dkv, k->kv, k->kv_elems * kv_size, w->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(w->b, k->dtable, k->table, sizeof(int32_t) * (size_t)job->key.batch * k->max_blocks,
                                        w->stream)) != MT_OK ||
        (st = mt_backend_copy_to_device(w->b, k->dlens, k->lens, sizeof(int32_t) * (size_t)job->key.batch,
                                        w->stream)) != MT_OK)
        return st;
    double macs = (double)k->rows * (double)total_keys * (s->d + s->dl);
    if (macs <= job->verify_cpu_macs) {
        mt_mla_host_problem hp = {.s = *s, .batch = job->key.batch, .n_heads = job->key.n_heads, .sq = job->key.sq,
                                  .max_blocks = k->max_blocks, .scale = k->scale, .kv_scale = k->kv_scale, .q = k->q,
                                  .kv = k->kv, .block_table = k->table, .seq_lens = k->lens};
        mt_mla_reference(&hp, k->ref_out, k->ref_lse, 0);
        snprintf(k->ref_source, sizeof k->ref_source, "CPU reference");
    } else {
        mt_variant trusted;
        mt_kernels fns;
        mt_target t;
        mt_target_from_device(&w->info, &t);
        if ((st = mt_variant_default_for(job->variant.family, s, &t, &trusted)) != MT_OK ||
            (st = get_functions(w, &trusted, s, &fns)) != MT_OK ||
            (st = run_once(w, &trusted, &fns, k->ref_out, k->ref_lse)) != MT_OK)
            return mt_fail(st, "trusted variant failed: %s", mt_last_error());
        snprintf(k->ref_source, sizeof k->ref_source, "trusted variant");
    }
    k->valid = 1;
    return MT_OK;
}

/* Returns 1 when the worker must exit (its GPU context cannot be trusted). */
static int run_gpu_job(gpu_worker *w, const mt_job *job, mt_job_result *r) {
    memset(r, 0, sizeof *r);
    mt_status st = prepare_key(w, job);
    if (st != MT_OK) {
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "preparing inputs: %s", mt_last_error());
        return 1;
    }
    key_state *k = &w->ks;
    mt_kernels fns = {{0}};
    if ((st = get_functions(w, &job->variant, &k->key.s, &fns)) != MT_OK) {
        r->status = st == MT_ERR_COMPILE ? MT_MEASURE_COMPILE_FAILED : MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "%s", mt_last_error());
        return st != MT_ERR_COMPILE;
    }
    if ((st = run_once(w, &job->variant, &fns, w->got_out, w->got_lse)) != MT_OK) {
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "%s", mt_last_error());
        return st != MT_ERR_INVALID_ARGUMENT;
    }
    double e_out = mt_relative_error(w->got_out, k->ref_out, (long)k->out_elems);
    double e_lse = mt_relative_error(w->got_lse, k->ref_lse, (long)k->lse_elems);
    if (mt_job_judge(r, k->key.s.q_dtype, e_out, e_lse, k->ref_source)) return 0;
    /* time: warm-up, then per run an L2 flush and the launch (and its reduce) between events */
    mt_mla_decode_args a = key_args(w, key_workspace_bytes(w, &job->variant));
    return mt_job_time_launch(w->b, w->stream, &w->flush, &fns, &job->variant, &k->key.s, &a, job->warmup,
                              job->reps, r);
}

int cmd_worker(int argc, char **argv) {
    int device = 0;
    const char *fake = NULL, *cache_dir = NULL, *fault_spec = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--device") == 0) device = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--fake") == 0) fake = argv[i + 1];
        else if (strcmp(argv[i], "--cache-dir") == 0) cache_dir = argv[i + 1];
        else if (strcmp(argv[i], "--inject-fault") == 0) fault_spec = argv[i + 1];
    }
    mt_job_fault fault;
    if (mt_job_fault_parse(fault_spec, &fault) != MT_OK) {
        printf("ERROR\t%s\n", mt_last_error());
        return 2;
    }
    if (fake) return run_fake(fake, &fault);
    gpu_worker w = {0};
    int count = 0;
    char compiler[64] = "";
    mt_status st = mt_backend_discover(&w.b);
    if (st == MT_OK) st = mt_backend_device_count(w.b, &count);
    if (st == MT_OK) st = mt_backend_device_info(w.b, device, &w.info);
    if (st == MT_OK) st = mt_backend_set_device(w.b, device);
    if (st == MT_OK) st = mt_jit_create(w.b, cache_dir, &w.jit);
    if (st == MT_OK) st = mt_backend_compiler_version(w.b, compiler, sizeof compiler);
    if (st == MT_OK) st = mt_backend_stream_create(w.b, &w.stream);
    size_t flush_bytes = w.info.l2_bytes ? 4 * (size_t)w.info.l2_bytes : ((size_t)256 << 20);
    if (st == MT_OK) st = mt_l2_flush_create(w.b, w.jit, w.info.arch, flush_bytes, MT_FLUSH_READ, &w.flush);
    if (st != MT_OK) {
        /* one line: "a\n  b" becomes "a b; ..." */
        char msg[1024];
        size_t n = 0;
        for (const char *p = mt_last_error(); *p && n + 3 < sizeof msg; p++) {
            if (*p == '\n') {
                while (p[1] == ' ') p++;
                if (n > 0 && msg[n - 1] != ':') msg[n++] = ';';
                msg[n++] = ' ';
            } else {
                msg[n++] = *p == '\t' ? ' ' : *p;
            }
        }
        msg[n] = '\0';
        printf("ERROR\t%s\n", msg);
        return 1;
    }
    double copy_gbps = mt_ceiling_copy_gbps(w.b, w.stream);
    double matrix_tflops = mt_ceiling_matrix_tflops(w.b, w.jit, w.info.arch, w.info.compute_units, w.stream);
    mt_clear_error();  /* a ceiling that cannot be measured is 0: not stored, the report says so */
    printf("DEVICE\t%s\t%s\t%d\t%zu\t%s\t%s\t%zu\t%d\t%d\t%.1f\t%.1f\n", w.info.arch, w.info.name,
           w.info.compute_units, w.info.total_memory, w.info.driver_version, compiler, w.info.shared_per_group_max,
           w.info.warp_size, count, copy_gbps, matrix_tflops);
    fflush(stdout);
    char line[4096];
    mt_prefill_key_state *prefill = NULL;  /* the current prefill key's inputs (worker_prefill.c) */
    while (fgets(line, sizeof line, stdin)) {
        mt_job job;
        if (parse_job(line, &job) != MT_OK) {
            fprintf(stderr, "worker: %s\n", mt_last_error());
            return 2;
        }
        mt_job_result r;
        mt_worker_gpu g = {w.b, w.jit, &w.info, w.stream, &w.flush};
        int must_exit = mt_job_fault_hits(&fault, &job.variant)       ? mt_job_fault_inject(&g, &r)
                        : strcmp(job.key.kind, "mla_prefill") == 0 ? mt_prefill_worker_job(&prefill, &g, &job, &r)
                                                                     : run_gpu_job(&w, &job, &r);
        reply(&r);
        if (must_exit) return 3;
    }
    free_key(&w);
    mt_prefill_worker_free(prefill, w.b);
    mt_l2_flush_destroy(&w.flush);
    mt_jit_destroy(w.jit);
    mt_backend_close(w.b);
    return 0;
}
