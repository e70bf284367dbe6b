/*
 * sweep.c - `mla-tune sweep --config PLAN.yaml --db FILE`.
 *
 * Design:
 *   - the coordinator (this process) never touches a GPU context.  Each GPU
 *     gets a worker process (worker.c, fork + exec of this binary) driven
 *     over pipes (protocol.h; the coordinator's side: worker_proc.c), and
 *     a coordinator thread that feeds it whole
 *     problem keys from a shared queue, costliest first (key_order.c);
 *   - a pool of CPU threads compiles every candidate variant of the plan
 *     into the shared disk cache ahead of the workers, in the order they
 *     will need them, so the GPU mostly loads instead of compiling;
 *   - each result is written at once, in its own transaction, by the thread
 *     that got it (each thread has its own database connection);
 *   - resume: before a job runs, the database is asked whether this
 *     (key, variant, device) already has a result for the same number of
 *     timed runs (or a failure); if so the job is skipped and the stored
 *     result used.  --force re-measures;
 *   - isolation: a worker that dies mid-job (a fault) is recorded as
 *     launch-failed with its signal, one that does not answer within
 *     --job-timeout seconds is killed and recorded as timeout; the next job
 *     gets a fresh worker.  A worker killed from outside (SIGKILL or
 *     SIGTERM: the OOM killer, a person) says nothing about the variant, so
 *     its job is run again on a fresh worker, up to KILLED_RETRIES times;
 *   - workers never outlive the coordinator: each asks the kernel for
 *     SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), so a
 *     hung worker dies with a coordinator killed by SIGKILL; and the pipes
 *     are close-on-exec, so a worker started by one device thread never
 *     holds another worker's pipe ends (four workers once deadlocked, each
 *     waiting for an end of file that another one kept open);
 *   - search, per key: exhaustive (every point of the space that passes the
 *     constraints), random (a seeded sample of `budget` points) or halving
 *     (successive halving: time a seeded sample of `budget` points with few
 *     runs, keep the best keep_percent, time those with twice the runs, until
 *     one is left or the runs reach the plan's reps);
 *   - afterwards the choices are derived from all measurements (db/choices.c
 *     has the rule for noise and ties) and a summary is printed.
 */
#define _GNU_SOURCE
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "estimate.h"
#include "key_work.h"
#include "kernels/build.h"
#include "prefill_key.h"
#include "protocol.h"
#include "worker_fault.h"
#include "sweep_state.h"
#include "timing.h"
#include "worker_proc.h"
#include "recorded.h"
#include "runtime/api/validators.h"
#include "runtime/gpu/jit.h"

/* --- the sweep's state (sweep_state.h), per device --------------------------------- */

enum { KILLED_RETRIES = 2 };

typedef struct device_ctx {
    sweep *sw;
    int device;
    mt_worker_proc worker;
    mt_db *db;
    int64_t device_id;
    mt_validator *hashes;    /* this thread's memo of source hashes (the validator each measurement records) */
    char device_line[1100];
    mt_status status;
    char error[512];
} device_ctx;

/* --- jobs ------------------------------------------------------------------------- */

/* What this device's worker is started with. */
static mt_worker_options worker_options(const device_ctx *d) {
    const sweep *sw = d->sw;
    return (mt_worker_options){.device = d->device, .fake = sw->fake, .cache_dir = sw->cache_dir,
                               .inject_fault = sw->inject_fault};
}

/* One job on this device's worker; a worker ended from outside runs it
 * again on a fresh one, up to KILLED_RETRIES times. */
static void run_job(device_ctx *d, const mt_job *job, mt_job_result *r) {
    const mt_worker_options o = worker_options(d);
    for (int attempt = 0;
         mt_worker_run_job(&d->worker, &o, job, d->sw->job_timeout_s, r, d->device_line, sizeof d->device_line);
         attempt++) {
        if (attempt == KILLED_RETRIES) {
            size_t used = strlen(r->error);
            snprintf(r->error + used, sizeof r->error - used, " (from outside, %d times in a row)", attempt + 1);
            return;
        }
        fprintf(stderr, "mla-tune: device %d: %s, not by the variant: running the job again on a fresh worker\n",
                d->device, r->error);
    }
}

/* --- progress ------------------------------------------------------------------------ */

static void progress(sweep *sw, const char *what) {
    double elapsed = mt_now_s() - sw->started;
    long done = sw->jobs_done, total = sw->jobs_total > done ? sw->jobs_total : done;
    double eta = done > 0 ? elapsed / done * (double)(total - done) : 0;
    if (sw->tty) {
        int width = 30, filled = total ? (int)(width * done / total) : width;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] %3ld%% %ld/%ld jobs  %s elapsed %.0fs ETA %.0fs   ", bar,
                total ? 100 * done / total : 100, done, total, what, elapsed, eta);
    } else if (what[0]) {
        fprintf(stderr, "%s (%ld/%ld jobs, %.0f s elapsed, ETA %.0f s)\n", what, done, total, elapsed, eta);
    }
}

/* --- one key ------------------------------------------------------------------------- */

static mt_status measure(device_ctx *d, const sweep_key *sk, const mt_variant *v, int64_t problem_id, int reps,
                         mt_job_result *r) {
    sweep *sw = d->sw;
    int64_t variant_id;
    char source_hash[65];
    mt_status st = mt_db_put_variant(d->db, v, &variant_id);
    if (st == MT_OK && !d->hashes && !(d->hashes = calloc(1, sizeof *d->hashes)))
        st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == MT_OK) st = mt_validator_source_hash(d->hashes, v, &sk->key.s, &sw->target, source_hash);
    if (st != MT_OK) return st;
    if (!sw->force) {
        mt_measurement m;
        int found = 0;
        if ((st = mt_db_find_measurement(d->db, problem_id, variant_id, d->device_id, reps, source_hash, &m,
                                         &found)) != MT_OK)
            return st;
        if (found) {
            *r = (mt_job_result){.status = m.status, .median_ms = m.median_ms, .min_ms = m.min_ms,
                                 .max_ms = m.max_ms, .spread_ms = m.spread_ms, .reps = m.reps};
            pthread_mutex_lock(&sw->lock);
            sw->skipped++;
            sw->jobs_done++;
            pthread_mutex_unlock(&sw->lock);
            return MT_OK;
        }
    }
    mt_job job = {.key = sk->key, .variant = *v, .warmup = sw->plan.warmup, .reps = reps,
                  .verify_cpu_macs = sw->plan.verify_cpu_macs, .seed = sw->plan.seed};
    run_job(d, &job, r);
    mt_measurement m = {.problem_id = problem_id, .variant_id = variant_id, .device_id = d->device_id,
                        .status = r->status, .median_ms = r->median_ms, .min_ms = r->min_ms, .max_ms = r->max_ms,
                        .spread_ms = r->spread_ms, .reps = r->status == MT_MEASURE_OK ? r->reps : 0,
                        .error = r->error[0] ? r->error : NULL, .source_hash = source_hash};
    if ((st = mt_db_record(d->db, &m)) != MT_OK) return st;
    pthread_mutex_lock(&sw->lock);
    sw->measured++;
    if (r->status != MT_MEASURE_OK) sw->failed[r->status]++;
    sw->jobs_done++;
    if (r->status != MT_MEASURE_OK && !sw->tty) {
        char name[256];
        mt_variant_format(v, name, sizeof name);
        fprintf(stderr, "  %s: %s: %s\n", name, mt_measure_status_name(r->status), r->error);
    }
    progress(sw, "");
    pthread_mutex_unlock(&sw->lock);
    return MT_OK;
}

typedef struct ranked { int index; double median; } ranked;

static int by_median(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->median != y->median) return x->median < y->median ? -1 : 1;
    return x->index - y->index;
}

static mt_status sweep_one_key(device_ctx *d, int key_index, int64_t problem_id) {
    sweep *sw = d->sw;
    sweep_key *sk = &sw->keys[key_index];
    mt_status st = MT_OK;
    int n = sk->n_candidates;
    int sizes[16] = {n}, reps[16] = {sw->plan.reps}, rounds = 1;
    if (sw->plan.strategy == MT_SEARCH_HALVING) rounds = mt_sweep_halving_rounds(&sw->plan, n, sizes, reps, 16);
    ranked *rank = calloc((size_t)n, sizeof *rank);
    for (int i = 0; i < n; i++) rank[i].index = i;
    int alive = n;
    for (int round = 0; round < rounds && st == MT_OK; round++) {
        alive = sizes[round] < alive ? sizes[round] : alive;
        for (int i = 0; i < alive && st == MT_OK; i++) {
            mt_job_result r;
            st = measure(d, sk, &sk->candidates[rank[i].index], problem_id, reps[round], &r);
            rank[i].median = r.status == MT_MEASURE_OK ? r.median_ms : INFINITY;
        }
        qsort(rank, (size_t)alive, sizeof *rank, by_median);
    }
    if (st == MT_OK && sk->heuristic >= 0 && sw->plan.strategy == MT_SEARCH_HALVING) {
        /* the gain over the untuned runtime compares the winner with the
         * rule's variant timed as well: with the last round's runs */
        int in_last_round = 0;
        for (int i = 0; i < alive; i++) in_last_round |= rank[i].index == sk->heuristic;
        mt_job_result r;
        if (!in_last_round) st = measure(d, sk, &sk->candidates[sk->heuristic], problem_id, reps[rounds - 1], &r);
        pthread_mutex_lock(&sw->lock);
        if (in_last_round) sw->jobs_total--; /* counted in sk->jobs in case it was needed */
        pthread_mutex_unlock(&sw->lock);
    }
    if (st == MT_OK) {
        char name[256] = "none";
        if (isfinite(rank[0].median)) mt_variant_format(&sk->candidates[rank[0].index], name, sizeof name);
        char what[512], prefill[160];
        if (mt_key_is_prefill(&sk->key)) { /* in prefill's words: Sq and L would misname new tokens and keys */
            mt_prefill_key_describe(&sk->key, prefill, sizeof prefill);
            snprintf(what, sizeof what, "key %d/%d %s: best %.4f ms %s", key_index + 1, sw->n_keys, prefill,
                     rank[0].median, name);
        } else {
            snprintf(what, sizeof what, "key %d/%d N=%d Sq=%d B=%d L=%d (%s) %s/%s: best %.4f ms %s", key_index + 1,
                     sw->n_keys, sk->key.n_heads, sk->key.sq, sk->key.batch, sk->key.seq_len, sk->key.lengths,
                     mt_dtype_name(sk->key.s.q_dtype), mt_dtype_name(sk->key.s.kv_dtype), rank[0].median, name);
        }
        pthread_mutex_lock(&sw->lock);
        if (!sw->tty) progress(sw, what);
        pthread_mutex_unlock(&sw->lock);
    }
    free(rank);
    return st;
}

static void *device_thread(void *arg) {
    device_ctx *d = arg;
    sweep *sw = d->sw;
    for (;;) {
        /* a key's problem row is written as the key is taken, under the
         * lock, so the rows' order is the hand-out order whatever the
         * threads' timing (written after the lock, a slow thread's row
         * came after a later key's under load: CI on 4de63ae) */
        pthread_mutex_lock(&sw->lock);
        int slot = sw->stop ? sw->n_keys : sw->next_key++;
        int64_t problem_id = 0;
        mt_status st = slot < sw->n_keys ? mt_db_put_problem(d->db, &sw->keys[sw->order[slot]].key, &problem_id) : MT_OK;
        pthread_mutex_unlock(&sw->lock);
        if (slot >= sw->n_keys) break;
        int k = sw->order[slot];
        if (st == MT_OK) st = sweep_one_key(d, k, problem_id);
        if (st != MT_OK) {
            d->status = st;
            snprintf(d->error, sizeof d->error, "%s", mt_last_error());
            pthread_mutex_lock(&sw->lock);
            sw->stop = 1;  /* a database error ends the sweep: nothing is written half */
            pthread_mutex_unlock(&sw->lock);
            break;
        }
    }
    mt_worker_stop(&d->worker, 0, NULL);
    return NULL;
}

/* --- compile ahead ---------------------------------------------------------------------- */

typedef struct compile_ahead {
    sweep *sw;
    mt_jit *jit;
    int key, cand;     /* next (position in the hand-out order, candidate) to compile */
    pthread_mutex_t lock;
    long compiled, failed;
} compile_ahead;

static void *compile_thread(void *arg) {
    compile_ahead *ca = arg;
    sweep *sw = ca->sw;
    for (;;) {
        pthread_mutex_lock(&ca->lock);
        while (ca->key < sw->n_keys && ca->cand >= sw->keys[sw->order[ca->key]].n_candidates) ca->key++, ca->cand = 0;
        int k = ca->key < sw->n_keys ? sw->order[ca->key] : sw->n_keys, c = ca->cand++;
        int stop = sw->stop;
        pthread_mutex_unlock(&ca->lock);
        if (k >= sw->n_keys || stop) return NULL;
        /* stay behind the workers' progress no more than needed: compiling
         * keys the workers are about to reach first */
        const sweep_key *sk = &sw->keys[k];
        const mt_code_object *obj = NULL;
        mt_status st = mt_build_compile(ca->jit, &sk->candidates[c], &sk->key.s, &sw->target, &obj, NULL);
        pthread_mutex_lock(&ca->lock);
        if (st == MT_OK) ca->compiled++;
        else ca->failed++;  /* the worker compiles it again and records compile-failed */
        pthread_mutex_unlock(&ca->lock);
    }
}

/* --- the command -------------------------------------------------------------------------- */

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune sweep --config PLAN.yaml --db FILE [options]\n\n"
            "Measures every candidate variant of every problem key of PLAN on the local GPU(s),\n"
            "verifying each against a reference first, and records each result in FILE at once.\n"
            "Stopped sweeps resume where they stopped when started again.\n\n"
            "  --config PLAN.yaml     sweep plan (configs/plans/)\n"
            "  --recorded             the keys are the calls the runtime recorded in --db (MLA_TUNE_RECORD_CALLS);\n"
            "                         search and timing from --config (default: the quick plan's)\n"
            "  --db FILE              tuning database to write (created if missing)\n"
            "  --devices all|0,1,...  GPUs to use, one worker process each (default 0)\n"
            "  --shard I/N            take shard I of N (0 <= I < N): the plan's keys split costliest first,\n"
            "                         each to the shard with the least estimated work (every shard\n"
            "                         computes the same split)\n"
            "  --force                re-measure what the database already has\n"
            "  --dry-run              print the plan after pruning and exit; needs no GPU\n"
            "  --arch ARCH            the architecture for --dry-run (default sm_90)\n"
            "  --job-timeout S        seconds before a silent worker is killed (default 300)\n"
            "  --cache-dir DIR        code-object cache (default $XDG_CACHE_HOME/mla-tune)\n"
            "  --fake-device SPEC     test only: simulate the GPU (see tuner/worker.c)\n"
            "  --inject-fault P=V     test only: variants with P=V (decode or prefill) run a faulting\n"
            "                         kernel instead (on --fake-device: fail as if they had)\n");
}

/* The space of the family serving `kind` (NULL: the file has none). */
static const mt_space *space_for_kind(const mt_space_config *c, const char *kind) {
    for (int i = 0; i < c->n_spaces; i++)
        if (strcmp(c->spaces[i].family->kind, kind) == 0) return &c->spaces[i];
    return NULL;
}

static mt_status load_key_spaces(sweep *sw, const char *arch) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.yaml", sw->plan.spaces_dir, arch);
    if (!sw->plan.spaces_explicit && access(path, R_OK) != 0) {
        /* a plan outside configs/plans: use the installed / source spaces */
        char rel[128];
        snprintf(rel, sizeof rel, "spaces/%s.yaml", arch);
        mt_status st = mt_config_file(rel, path, sizeof path);
        if (st != MT_OK) return st;
    }
    mt_status st = mt_load_space(path, &sw->spaces);
    if (st != MT_OK) return st;
    if (strcmp(sw->spaces.arch, arch) != 0)
        return mt_fail(MT_ERR_CONFIG, "%s describes %s, not %s", path, sw->spaces.arch, arch);
    /* every key's kind needs a family's space in that file (a prefill
     * plan names the prefill spaces: `spaces: ../spaces/prefill`) */
    for (int k = 0; k < sw->plan.n_keys; k++)
        if (!space_for_kind(&sw->spaces, sw->plan.keys[k].kind))
            return mt_fail(MT_ERR_CONFIG, "%s has no space for problem kind '%s' (plan key %d): name a spaces folder "
                           "whose %s.yaml lists that kind's family", path, sw->plan.keys[k].kind, k + 1, arch);
    return MT_OK;
}

/* The shard of every plan key (mt_sweep_shard_keys), from estimates that
 * every shard computes alike from the plan: the candidates counted with an
 * H100's compute units (the count only moves the built-in rule's variant
 * in or out of a key's list), so that hosts with other GPUs of the same
 * architecture split the plan the same way.  NULL without memory. */
enum { SHARD_COMPUTE_UNITS = 132 };
static int *shard_owners(const sweep *sw, int shards) {
    const size_t n = (size_t)(sw->plan.n_keys > 0 ? sw->plan.n_keys : 1);
    int *owner = calloc(n, sizeof *owner);
    double *seconds = calloc(n, sizeof *seconds);
    int rc = owner && seconds ? 0 : -1;
    for (int k = 0; rc == 0 && k < sw->plan.n_keys; k++) {
        const mt_problem_key *key = &sw->plan.keys[k];
        mt_variant *candidates = NULL;
        int heuristic = -1;
        int nc = mt_sweep_candidates(&sw->plan, space_for_kind(&sw->spaces, key->kind), key, &sw->target,
                                     SHARD_COMPUTE_UNITS, k, &candidates, &heuristic);
        seconds[k] = mt_plan_key_seconds(&sw->plan, key, &sw->target, candidates, nc > 0 ? nc : 0,
                                         mt_sweep_job_count(&sw->plan, nc > 0 ? nc : 0));
        free(candidates);
    }
    if (rc == 0) rc = mt_sweep_shard_keys(seconds, sw->plan.n_keys, shards, owner);
    free(seconds);
    if (rc != 0) {
        free(owner);
        return NULL;
    }
    return owner;
}

static int plan_keys(sweep *sw, int shard, int shards) {
    int *owner = shards > 1 ? shard_owners(sw, shards) : NULL;
    sw->keys = calloc((size_t)(sw->plan.n_keys > 0 ? sw->plan.n_keys : 1), sizeof *sw->keys);
    sw->n_keys = 0;
    if ((shards > 1 && !owner) || !sw->keys) {
        free(owner);
        mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for the keys of %d", sw->plan.n_keys);
        return -1;
    }
    for (int k = 0; k < sw->plan.n_keys; k++) {
        if (owner && owner[k] != shard) continue;
        sweep_key *sk = &sw->keys[sw->n_keys++];
        sk->key = sw->plan.keys[k];
        sk->space = space_for_kind(&sw->spaces, sk->key.kind);  /* there is one: load_key_spaces */
        sk->n_candidates = mt_sweep_candidates(&sw->plan, sk->space, &sk->key, &sw->target, sw->compute_units, k,
                                               &sk->candidates, &sk->heuristic);
        /* halving may drop the rule's variant early: it is then timed once
         * more with the plan's runs (sweep_one_key) */
        sk->jobs = mt_sweep_job_count(&sw->plan, sk->n_candidates) +
                   (sw->plan.strategy == MT_SEARCH_HALVING && sk->heuristic >= 0);
        sw->jobs_total += sk->jobs;
    }
    free(owner);
    /* the hand-out order; without memory for it the sweep cannot start */
    size_t slots = (size_t)(sw->n_keys > 0 ? sw->n_keys : 1);
    sw->order = calloc(slots, sizeof *sw->order);
    double *seconds = calloc(slots, sizeof *seconds);
    if (!sw->order || !seconds) {
        free(seconds);
        mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for the hand-out order of %d keys", sw->n_keys);
        return -1;
    }
    for (int k = 0; k < sw->n_keys; k++) {
        const sweep_key *sk = &sw->keys[k];
        seconds[k] = mt_plan_key_seconds(&sw->plan, &sk->key, &sw->target, sk->candidates, sk->n_candidates, sk->jobs);
    }
    mt_sweep_handout_order(seconds, sw->n_keys, sw->order);
    free(seconds);
    return sw->n_keys;
}

/* --recorded: the plan's keys become the calls recorded in the DB for
 * `arch` (tuner/recorded.h); 0 when there are some, else the exit code. */
static int use_recorded_keys(sweep *sw, const char *arch) {
    int n = 0;
    if (mt_plan_from_recorded(sw->db_path, arch, &sw->plan, &n) != MT_OK) {
        mt_cli_error("sweep --recorded: %s", mt_last_error());
        return 1;
    }
    if (sw->plan.n_keys == 0) {
        mt_cli_error("sweep --recorded: %s has no recorded calls for %s (record them with MLA_TUNE_RECORD_CALLS=1 "
                     "or mlt_runtime_record_calls)", sw->db_path, arch);
        return 2;
    }
    fprintf(stderr, "sweep --recorded: %d keys from %d recorded call shapes in %s\n", sw->plan.n_keys, n,
            sw->db_path);
    return 0;
}

/* A fake device's workers record this host's compiler for sm_90 (worker.c,
 * run_fake): found once here, passed down in the environment, so that each
 * worker started does not load NVRTC to ask. */
static void fake_compiler_env(void) {
    char version[64];
    if (mt_host_compiler_version("sm_90", version, sizeof version)) setenv("MLA_TUNE_FAKE_COMPILER", version, 1);
}

static void free_keys(sweep *sw) {
    for (int k = 0; k < sw->n_keys; k++) free(sw->keys[k].candidates);
    free(sw->keys);
    free(sw->order);
}

/* The ceilings a worker measured when it started (its DEVICE line's last
 * two fields), for the report's % copy and % matrix; one it could not
 * measure (0) is not stored. */
static mt_status store_ceilings(mt_db *db, int64_t device_id, char *const *fields, int n_fields) {
    static const char *const kinds[] = {"copy_gbps", "matrix_tflops"};
    for (int i = 0; i < 2 && 10 + i < n_fields; i++) {
        double value = atof(fields[10 + i]);
        mt_status st = value > 0 ? mt_db_put_ceiling(db, device_id, kinds[i], value) : MT_OK;
        if (st != MT_OK) return st;
    }
    return MT_OK;
}

int cmd_sweep(int argc, char **argv) {
    sweep sw = {.job_timeout_s = 300};
    const char *config = NULL, *devices = "0", *shard_text = NULL, *dry_arch = "sm_90";
    int dry_run = 0, recorded = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--force") == 0) {
            sw.force = 1;
            continue;
        } else if (strcmp(a, "--dry-run") == 0) {
            dry_run = 1;
            continue;
        } else if (strcmp(a, "--recorded") == 0) {
            recorded = 1;
            continue;
        }
        if (!val) {
            mt_cli_error("sweep: %s needs a value", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--config") == 0) config = val;
        else if (strcmp(a, "--db") == 0) sw.db_path = val;
        else if (strcmp(a, "--devices") == 0) devices = val;
        else if (strcmp(a, "--shard") == 0) shard_text = val;
        else if (strcmp(a, "--arch") == 0) dry_arch = val;
        else if (strcmp(a, "--cache-dir") == 0) sw.cache_dir = val;
        else if (strcmp(a, "--fake-device") == 0) sw.fake = val;
        else if (strcmp(a, "--inject-fault") == 0) sw.inject_fault = val;
        else if (strcmp(a, "--job-timeout") == 0) {
            char *end = NULL;
            errno = 0;
            long t = strtol(val, &end, 10);
            if (errno || !end || end == val || *end || t < 1 || t > 100000000) {
                mt_cli_error("sweep: --job-timeout wants whole seconds from 1 to 100000000, got '%s'", val);
                return 2;
            }
            sw.job_timeout_s = (int)t;
        } else {
            mt_cli_error("sweep: unknown option '%s'", a);
            usage(stderr);
            return 2;
        }
    }
    if (recorded && !sw.db_path) {
        mt_cli_error("sweep: --recorded reads the recorded calls from --db FILE: give it");
        return 2;
    }
    if (recorded && !config) config = "quick";  /* its search and timing; the keys are replaced */
    if (!config || (!sw.db_path && !dry_run)) {
        mt_cli_error("sweep: --config and --db are required");
        usage(stderr);
        return 2;
    }
    mt_job_fault fault; /* checked here: a bad spec would only show as workers that do not start */
    if (mt_job_fault_parse(sw.inject_fault, &fault) != MT_OK) {
        mt_cli_error("sweep: %s", mt_last_error());
        return 2;
    }
    int shard = 0, shards = 1;
    if (shard_text) {
        char extra;
        if (sscanf(shard_text, "%d/%d%c", &shard, &shards, &extra) != 2 || shards < 1 || shard < 0 || shard >= shards) {
            mt_cli_error("sweep: --shard wants I/N with 0 <= I < N, got '%s'", shard_text);
            return 2;
        }
    }
    if (mt_load_plan(config, &sw.plan) != MT_OK) {
        mt_cli_error("%s", mt_last_error());
        return 1;
    }
    pthread_mutex_init(&sw.lock, NULL);
    sw.tty = isatty(2);
    signal(SIGPIPE, SIG_IGN);

    if (dry_run) {
        sw.compute_units = 132; /* no device to ask: an H100's, for the built-in rule's variant */
        if (mt_target_for_arch(dry_arch, &sw.target) != MT_OK || load_key_spaces(&sw, dry_arch) != MT_OK) {
            mt_cli_error("sweep: %s", mt_last_error());
            mt_plan_free(&sw.plan);  /* (leaked on this path: LeakSanitizer, issue 25) */
            return 1;
        }
        int rc = recorded ? use_recorded_keys(&sw, dry_arch) : 0;
        if (rc != 0) {
            mt_plan_free(&sw.plan);
            return rc;
        }
        plan_keys(&sw, shard, shards);
        mt_sweep_print_plan(&sw);
        free_keys(&sw);
        mt_plan_free(&sw.plan);
        return 0;
    }

    /* devices: the first worker tells us the architecture and how many GPUs */
    int device_list[64], n_devices = 0;
    if (strcmp(devices, "all") != 0) {
        char *copy = strdup(devices), *save = NULL;
        for (char *p = strtok_r(copy, ",", &save); p && n_devices < 64; p = strtok_r(NULL, ",", &save)) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (!end || end == p || *end || v < 0 || v > 4096) {
                mt_cli_error("sweep: --devices wants 'all' or a list like 0,1; got '%s'", devices);
                free(copy);
                mt_plan_free(&sw.plan);
                return 2;
            }
            for (int i = 0; i < n_devices; i++)
                if (device_list[i] == v) {
                    mt_cli_error("sweep: --devices lists device %ld twice ('%s'): one worker per GPU", v, devices);
                    free(copy);
                    mt_plan_free(&sw.plan);
                    return 2;
                }
            device_list[n_devices++] = (int)v;
        }
        free(copy);
    }
    int early_rc = 0;
    if (sw.fake) fake_compiler_env();
    device_ctx *ctx = calloc(64, sizeof *ctx);
    if (!ctx) {
        mt_cli_error("sweep: out of host memory");
        free_keys(&sw);
        mt_plan_free(&sw.plan);
        return 1;
    }
    ctx[0].sw = &sw;
    ctx[0].device = n_devices ? device_list[0] : 0;
    const mt_worker_options first_worker = worker_options(&ctx[0]);
    if (mt_worker_start(&first_worker, &ctx[0].worker, ctx[0].device_line, sizeof ctx[0].device_line) != MT_OK) {
        mt_cli_error("sweep: no GPU to measure on: %s", mt_last_error());
        early_rc = 1;
        goto early_exit;
    }
    char *f[12], first[1100];
    snprintf(first, sizeof first, "%s", ctx[0].device_line);
    int nf = 0;
    char *save = NULL;
    first[strcspn(first, "\n")] = '\0';
    for (char *p = strtok_r(first, "\t", &save); p && nf < 12; p = strtok_r(NULL, "\t", &save)) f[nf++] = p;
    if (nf != 12) {
        mt_cli_error("sweep: worker sent a malformed DEVICE line");
        early_rc = 1;
        goto early_exit;
    }
    snprintf(sw.target.arch, sizeof sw.target.arch, "%s", f[1]);
    sw.compute_units = atoi(f[3]);
    sw.target.shared_max = (size_t)strtoull(f[7], NULL, 10);
    sw.target.warp_size = atoi(f[8]);
    int count = atoi(f[9]);
    if (!n_devices) {
        if (strcmp(devices, "all") == 0)
            for (int i = 0; i < count && i < 64; i++) device_list[n_devices++] = i;
        else
            device_list[n_devices++] = 0;
    }
    for (int i = 0; i < n_devices; i++)
        if (device_list[i] >= count) {
            mt_cli_error("sweep: device %d does not exist (%d found)", device_list[i], count);
            early_rc = 2;
            goto early_exit;
        }
    if (load_key_spaces(&sw, sw.target.arch) != MT_OK) {
        mt_cli_error("sweep: %s", mt_last_error());
        early_rc = 1;
        goto early_exit;
    }
    if (recorded && (early_rc = use_recorded_keys(&sw, sw.target.arch)) != 0) goto early_exit;
    int planned = plan_keys(&sw, shard, shards);
    if (planned < 0) {
        mt_cli_error("sweep: %s", mt_last_error());
        early_rc = 1;
        goto early_exit;
    }
    if (planned == 0) {
        mt_cli_error("sweep: shard %d/%d of %s has no keys", shard, shards, config);
        early_rc = 2;
        goto early_exit;
    }
    if (0) {
    early_exit:  /* before any thread or database: stop the first worker, free, leave */
        mt_worker_stop(&ctx[0].worker, 1, NULL);
        free_keys(&sw);
        free(ctx);
        mt_plan_free(&sw.plan);
        return early_rc;
    }
    printf("sweep %s: %d keys, ~%ld jobs on %d GPU(s) (%s, %s), search %s, db %s\n", sw.plan.name, sw.n_keys,
           sw.jobs_total, n_devices, f[2], sw.target.arch, mt_search_strategy_name(sw.plan.strategy), sw.db_path);
    fflush(stdout);

    /* compile ahead on the CPU: all cores but one per worker */
    compile_ahead ca = {.sw = &sw};
    pthread_mutex_init(&ca.lock, NULL);
    mt_backend *compiler = NULL;
    pthread_t compile_threads[64];
    int n_compile = 0;
    if (!sw.fake && mt_backend_open_for_arch(sw.target.arch, &compiler) == MT_OK &&
        mt_jit_create(compiler, sw.cache_dir, &ca.jit) == MT_OK) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN) - n_devices;
        if (cores < 1) cores = 1;
        if (cores > 64) cores = 64;
        for (int i = 0; i < cores; i++)
            if (pthread_create(&compile_threads[n_compile], NULL, compile_thread, &ca) == 0) n_compile++;
    } else if (!sw.fake) {
        fprintf(stderr, "mla-tune: warning: no compile-ahead (%s); workers compile as they go\n", mt_last_error());
    }

    mt_db *summary_db = NULL;
    sw.started = mt_now_s();
    int rc = 0;
    for (int i = 0; i < n_devices; i++) {
        device_ctx *d = &ctx[i];
        d->sw = &sw;
        d->device = device_list[i];
        const mt_worker_options o = worker_options(d);
        if (i > 0 && mt_worker_start(&o, &d->worker, d->device_line, sizeof d->device_line) != MT_OK) {
            mt_cli_error("sweep: device %d: %s", d->device, mt_last_error());
            rc = 1;
            break;
        }
        mt_device_info info = {0};
        char line[1100];
        snprintf(line, sizeof line, "%s", d->device_line);
        line[strcspn(line, "\n")] = '\0';
        char *g[14];
        int ng = 0;
        save = NULL;
        for (char *p = strtok_r(line, "\t", &save); p && ng < 14; p = strtok_r(NULL, "\t", &save)) g[ng++] = p;
        snprintf(info.arch, sizeof info.arch, "%s", g[1]);
        snprintf(info.name, sizeof info.name, "%s", g[2]);
        info.compute_units = atoi(g[3]);
        info.total_memory = (size_t)strtoull(g[4], NULL, 10);
        snprintf(info.driver_version, sizeof info.driver_version, "%s", g[5]);
        if (mt_db_open(sw.db_path, MT_DB_WRITE, &d->db) != MT_OK ||
            mt_db_put_device(d->db, &info, g[6], &d->device_id) != MT_OK ||
            store_ceilings(d->db, d->device_id, g, ng) != MT_OK) {
            mt_cli_error("sweep: %s", mt_last_error());
            rc = 1;
            break;
        }
    }
    pthread_t threads[64];
    int started = 0;
    if (rc == 0)
        for (int i = 0; i < n_devices; i++)
            if (pthread_create(&threads[started], NULL, device_thread, &ctx[i]) == 0) started++;
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    pthread_mutex_lock(&sw.lock);
    sw.stop = 1;
    pthread_mutex_unlock(&sw.lock);
    for (int i = 0; i < n_compile; i++) pthread_join(compile_threads[i], NULL);
    if (sw.tty) fputc('\n', stderr);
    for (int i = 0; i < n_devices; i++)
        if (ctx[i].status != MT_OK) {
            mt_cli_error("sweep stopped: device %d: %s", ctx[i].device, ctx[i].error);
            rc = 1;
        }
    if (rc == 0 && mt_db_open(sw.db_path, MT_DB_WRITE, &summary_db) == MT_OK) {
        if (mt_validator_recompute_choices(summary_db) != MT_OK) {
            mt_cli_error("sweep: %s", mt_last_error());
            rc = 1;
        } else {
            mt_sweep_print_summary(&sw, summary_db);
        }
        if (ca.jit)
            printf("compiled ahead: %ld variants on %d CPU threads (%ld failed; recorded by the workers)\n",
                   ca.compiled, n_compile, ca.failed);
    } else if (rc == 0) {
        mt_cli_error("sweep: %s", mt_last_error());
        rc = 1;
    }
    mt_db_close(summary_db);
    for (int i = 0; i < n_devices; i++) {
        mt_worker_stop(&ctx[i].worker, 1, NULL);
        mt_db_close(ctx[i].db);
        free(ctx[i].hashes);
    }
    if (ca.jit) mt_jit_destroy(ca.jit);
    mt_backend_close(compiler);
    free_keys(&sw);
    free(ctx);
    mt_plan_free(&sw.plan);
    return rc;
}
