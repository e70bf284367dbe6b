/*
 * api.c - the public runtime API (include/mlatune.h) over the backend, the
 * JIT, the tuning databases and the dispatcher.
 *
 * Where the work happens:
 *   mlt_runtime_create: open the GPU, read both DBs' choices into memory
 *     (with the crossover points read at the first mlt_prefill_choose_form,
 *     the only SQLite access the runtime ever makes);
 *   mlt_plan_create: build the plan's dispatch table, compile or load every
 *     variant it can dispatch to, and prepare each for launch;
 *   mlt_plan_run: argument checks, table lookup, launch.  No allocation,
 *     no lock, no I/O.
 */
#define _GNU_SOURCE
#include "runtime/include/mlatune.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "api_internal.h"
#include "runtime/gpu/backend.h"
#include "compile_ahead.h"
#include "dispatch.h"
#include "recorder.h"
#include "validators.h"
#include "runtime/gpu/jit.h"

struct mlt_runtime {
    mt_backend *backend;
    mt_jit *jit;
    mt_device_info info;
    mt_target target;
    int device;
    mlt_log_level log_level;
    mt_choice *choices;
    mt_choice_source *sources;
    int n_choices;
    int record_calls;        /* plans created now count their calls without an exact key */
    char user_db[1024];      /* where recorded calls go */
    mt_crossover_store *crossover;  /* the same DBs' crossover points, read when first asked for */
};

struct mlt_plan {
    mlt_runtime *rt;
    mt_problem_key shape;
    float scale, kv_scale;
    int max_batch;
    mt_dispatch_table table;
    mt_kernels kernels[MT_DISPATCH_MAX_VARIANTS];
    size_t workspace;
    size_t schedule;         /* bytes of the largest length-aware variant's schedule at max_batch */
    mt_recorder *recorder;   /* NULL unless the runtime records calls */
};

mlt_status mt_to_public(mt_status st) {
    switch (st) {
#define MT_TO_PUBLIC(name, text, public_code) \
    case name: return public_code;
        MT_STATUS_LIST(MT_TO_PUBLIC)
#undef MT_TO_PUBLIC
    }
    return MLT_ERR_INTERNAL;
}

const char *mlt_status_string(mlt_status s) {
    switch (s) {
#define MLT_STATUS_STRING(code, text) \
    case code: return text;
        MLT_STATUS_LIST(MLT_STATUS_STRING)
#undef MLT_STATUS_STRING
    }
    return "unknown status";
}

const char *mlt_last_error(void) { return mt_last_error(); }

int mlt_api_version(void) { return (MLT_VERSION_MAJOR << 16) | MLT_VERSION_MINOR; }

static void log_at(const mlt_runtime *rt, mlt_log_level level, const char *fmt, ...) {
    if (!rt || rt->log_level < level) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("mla-tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Once per runtime: what the validators dropped (a warning: those keys
 * now run something else) and what they could not judge (a note). */
static void log_validators(const mlt_runtime *rt, const mt_validator *v) {
    int stale = v->stale_sources + v->stale_compiler;
    if (stale > 0)
        log_at(rt, MLT_LOG_WARN,
               "ignoring %d tuning entries for %s measured for other code (%d: kernel sources changed, %d: another "
               "compiler; %d from the user DB, %d from the system DB); their calls use the nearest valid key or the "
               "built-in heuristic: `mla-tune show --stale` lists them, a new sweep replaces them",
               stale, rt->info.arch, v->stale_sources, v->stale_compiler, v->stale_user, v->stale_system);
    if (v->unknown > 0)
        log_at(rt, MLT_LOG_INFO,
               "%d tuning entries for %s carry no validators (written before schema 5): trusted", v->unknown,
               rt->info.arch);
}

void mlt_runtime_options_default(mlt_runtime_options *o) {
    memset(o, 0, sizeof *o);
    o->log_level = MLT_LOG_WARN;
}

mlt_status mlt_runtime_create(const mlt_runtime_options *options, mlt_runtime **out) {
    if (!out) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_runtime_create: out is NULL"));
    *out = NULL;
    mlt_runtime_options o;
    if (options) o = *options;
    else mlt_runtime_options_default(&o);
    if (o.device < 0) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "device %d is negative", o.device));
    mlt_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return mt_to_public(mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory"));
    rt->device = o.device;
    rt->log_level = o.log_level;
    mt_status st = mt_backend_discover(&rt->backend);
    if (st == MT_OK) st = mt_backend_device_info(rt->backend, o.device, &rt->info);
    if (st == MT_OK) st = mt_backend_set_device(rt->backend, o.device);
    if (st == MT_OK) st = mt_jit_create(rt->backend, o.cache_dir, &rt->jit);
    if (st == MT_OK) {
        mt_target_from_device(&rt->info, &rt->target);
        char user[1024], sys[1024];
        mt_db_default_paths(user, sizeof user, sys, sizeof sys);
        snprintf(rt->user_db, sizeof rt->user_db, "%s", o.user_db ? o.user_db : user);
        const char *record = getenv("MLA_TUNE_RECORD_CALLS");
        rt->record_calls = record && record[0] && strcmp(record, "0") != 0;
        int env_user = 0, env_sys = 0;  /* MLA_TUNE_DB set to a missing file is an error, not the heuristic */
        mt_db_env_required(&env_user, &env_sys);
        /* validators: what was measured for other code is dropped before
         * the user DB overlays the system DB (a stale user entry leaves the
         * system DB's valid one for the same key) */
        mt_validator *val = malloc(sizeof *val);
        if (!val) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st == MT_OK) {
            mt_validator_init(val);
            char compiler[64] = "";
            if (mt_backend_compiler_version(rt->backend, compiler, sizeof compiler) == MT_OK)
                mt_validator_set_compiler(val, rt->info.arch, compiler);
            else
                mt_clear_error();
            st = mt_db_load_overlay_kept(o.user_db ? o.user_db : user, o.user_db != NULL || env_user,
                                         o.system_db ? o.system_db : sys, o.system_db != NULL || env_sys,
                                         rt->info.arch, mt_validator_keep, val, &rt->choices, &rt->sources,
                                         &rt->n_choices);
        }
        if (st == MT_OK)
            st = mt_crossover_store_create(o.user_db ? o.user_db : user, o.user_db != NULL || env_user,
                                           o.system_db ? o.system_db : sys, o.system_db != NULL || env_sys,
                                           rt->info.arch, &rt->crossover);
        if (st == MT_OK) {
            log_at(rt, MLT_LOG_INFO, "%s (%s, %d CUs): %d tuning entries from %s and %s", rt->info.name,
                   rt->info.arch, rt->info.compute_units, rt->n_choices, o.user_db ? o.user_db : user,
                   o.system_db ? o.system_db : sys);
            log_validators(rt, val);
        }
        free(val);
    }
    if (st != MT_OK) {
        mlt_status ps = mt_to_public(st);
        mlt_runtime_destroy(rt);
        return ps;
    }
    *out = rt;
    return MLT_OK;
}

void mlt_runtime_destroy(mlt_runtime *rt) {
    if (!rt) return;
    mt_jit_destroy(rt->jit);
    mt_backend_close(rt->backend);
    mt_crossover_store_destroy(rt->crossover);
    free(rt->choices);
    free(rt->sources);
    free(rt);
}

mlt_status mlt_runtime_bind_thread(mlt_runtime *rt) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "runtime is NULL"));
    return mt_to_public(mt_backend_set_device(rt->backend, rt->device));
}

const char *mlt_runtime_arch(const mlt_runtime *rt) { return rt ? rt->info.arch : ""; }

mlt_status mlt_runtime_record_calls(mlt_runtime *rt, int on) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_runtime_record_calls: runtime is NULL"));
    rt->record_calls = on != 0;
    return MLT_OK;
}

static mt_status problem_to_shape(const mlt_decode_problem *p, mt_problem_key *k) {
    memset(k, 0, sizeof *k);
    snprintf(k->kind, sizeof k->kind, "mla_decode");
    if (p->q_dtype != MLT_BF16 && p->q_dtype != MLT_FP16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "q_dtype must be MLT_BF16 or MLT_FP16 (got %d)", (int)p->q_dtype);
    if ((int)p->kv_dtype < 0 || p->kv_dtype > MLT_FP8_E4M3_FNUZ)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "kv_dtype %d is not a known dtype", (int)p->kv_dtype);
    if (p->n_heads < 1 || p->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "head count %d outside 1..128", p->n_heads);
    if (p->sq < 1 || p->sq > MT_DECODE_MAX_SQ)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "sq %d outside 1..%d", p->sq, MT_DECODE_MAX_SQ);
    if (p->max_batch < 1 || p->max_batch > MT_DISPATCH_MAX_BATCH)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "max_batch %d outside 1..%d", p->max_batch, MT_DISPATCH_MAX_BATCH);
    if (!(p->softmax_scale > 0.0f) || p->softmax_scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "softmax_scale %g is not a positive finite number",
                       (double)p->softmax_scale);
    if (!(p->kv_scale > 0.0f) || p->kv_scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "kv_scale %g is not a positive finite number", (double)p->kv_scale);
    k->s = (mt_problem_static){.d = p->d, .dl = p->dl, .page_size = p->page_size, .q_dtype = (mt_dtype)p->q_dtype,
                              .kv_dtype = (mt_dtype)p->kv_dtype};
    if (p->views != 0 && p->views != 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "views %d is neither 0 nor 1", p->views);
    k->s.views = p->views;
    k->n_heads = p->n_heads;
    k->sq = p->sq;
    return MT_OK;
}

/* Compiles (or loads) every variant of the plan's table and sizes the
 * workspace; frees the plan on failure. */
static mlt_status plan_finish(mlt_plan *plan, mt_status st, mlt_plan **out) {
    mlt_runtime *rt = plan->rt;
    if (st == MT_OK) mt_compile_ahead(rt->jit, plan->table.variants, plan->table.n_variants, &plan->shape.s, &rt->target);
    for (int i = 0; st == MT_OK && i < plan->table.n_variants; i++) {
        const mt_variant *v = &plan->table.variants[i];
        const mt_family *f = v->family;
        st = mt_build_variant(rt->jit, v, &plan->shape.s, &rt->target, &plan->kernels[i]);
        size_t sb = f->schedule_bytes ? f->schedule_bytes(v, rt->info.compute_units) : 0;
        if (sb > plan->schedule) plan->schedule = sb;
    }
    if (st == MT_OK) plan->workspace = mt_dispatch_workspace_bytes(&plan->table);
    if (st != MT_OK) {
        mlt_status ps = mt_to_public(st);
        mlt_plan_destroy(plan);
        return ps;
    }
    *out = plan;
    return MLT_OK;
}

static mlt_plan *plan_new(mlt_runtime *rt, const mlt_decode_problem *problem) {
    mlt_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return NULL;
    plan->rt = rt;
    plan->scale = problem->softmax_scale;
    plan->kv_scale = problem->kv_scale;
    plan->max_batch = problem->max_batch;
    return plan;
}

mlt_status mlt_plan_create(mlt_runtime *rt, const mlt_decode_problem *problem, mlt_plan **out) {
    if (!rt || !problem || !out)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_plan_create: null argument"));
    *out = NULL;
    mlt_plan *plan = plan_new(rt, problem);
    if (!plan) return mt_to_public(mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory"));
    mt_status st = problem_to_shape(problem, &plan->shape);
    if (st == MT_OK) {
        const mt_dispatch_device device = {.compute_units = rt->info.compute_units,
                                           .memory_gbps = mt_device_memory_gbps(&rt->info)};
        st = mt_dispatch_build_for(rt->choices, rt->sources, rt->n_choices, &plan->shape, &rt->target, &device,
                                   problem->max_batch, MT_DISPATCH_RESCALED, &plan->table);
    }
    if (st == MT_OK && rt->record_calls && !(plan->recorder = calloc(1, sizeof *plan->recorder)))
        st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == MT_OK && plan->table.key_compute_units > 0 && plan->table.key_compute_units != rt->info.compute_units)
        log_at(rt, MLT_LOG_INFO, "%s N=%d Sq=%d: no keys measured on a %d-CU device; using those of the nearest "
               "measured one (%d CUs)", rt->info.arch, problem->n_heads, problem->sq, rt->info.compute_units,
               plan->table.key_compute_units);
    if (st == MT_OK && plan->table.key_device[0] && strcmp(plan->table.key_device, rt->info.name) != 0 &&
        plan->table.key_compute_units == rt->info.compute_units)
        log_at(rt, MLT_LOG_INFO, "%s N=%d Sq=%d: keys measured on %s; this GPU is %s (the same arch and %d CUs: "
               "one device to the DB)", rt->info.arch, problem->n_heads, problem->sq, plan->table.key_device,
               rt->info.name, rt->info.compute_units);
    if (st == MT_OK && plan->table.heuristic)
        log_at(rt, MLT_LOG_WARN,
               "no tuning entry for %s N=%d Sq=%d D=%d/%d page %d %s/%s: using the built-in heuristic for this plan",
               rt->info.arch, problem->n_heads, problem->sq, problem->d, problem->dl, problem->page_size,
               mt_dtype_name((mt_dtype)problem->q_dtype), mt_dtype_name((mt_dtype)problem->kv_dtype));
    return plan_finish(plan, st, out);
}

mlt_status mt_plan_create_pinned(mlt_runtime *rt, const mlt_decode_problem *problem, const mt_variant *v,
                                 mlt_plan **out) {
    if (!rt || !problem || !v || !out)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_plan_create_pinned: null argument"));
    *out = NULL;
    mlt_plan *plan = plan_new(rt, problem);
    if (!plan) return mt_to_public(mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory"));
    mt_status st = problem_to_shape(problem, &plan->shape);
    if (st == MT_OK) st = mt_variant_validate(v, &plan->shape.s, &rt->target);
    if (st == MT_OK) {
        mt_choice c;
        memset(&c, 0, sizeof c);
        snprintf(c.arch, sizeof c.arch, "%s", rt->info.arch);
        c.key = plan->shape;
        c.key.batch = 1, c.key.seq_len = 1;
        snprintf(c.family, sizeof c.family, "%s", v->family->name);
        mt_variant_format(v, c.params, sizeof c.params);
        st = mt_dispatch_build(&c, NULL, 1, &plan->shape, &rt->target, rt->info.compute_units, problem->max_batch,
                               MT_DISPATCH_AS_MEASURED, &plan->table);
    }
    return plan_finish(plan, st, out);
}

mt_backend *mt_runtime_backend(mlt_runtime *rt) { return rt ? rt->backend : NULL; }
mt_jit *mt_runtime_jit(mlt_runtime *rt) { return rt ? rt->jit : NULL; }
const mt_device_info *mt_runtime_device(const mlt_runtime *rt) { return rt ? &rt->info : NULL; }
const mt_target *mt_runtime_target(const mlt_runtime *rt) { return rt ? &rt->target : NULL; }
mt_crossover_store *mt_runtime_crossover(mlt_runtime *rt) { return rt ? rt->crossover : NULL; }

void mt_runtime_choices(const mlt_runtime *rt, const mt_choice **choices, const mt_choice_source **sources, int *n) {
    *choices = rt ? rt->choices : NULL;
    *sources = rt ? rt->sources : NULL;
    *n = rt ? rt->n_choices : 0;
}

void mlt_plan_destroy(mlt_plan *plan) {
    if (!plan) return;
    if (plan->recorder &&
        mt_recorder_flush(plan->recorder, plan->rt->user_db, plan->rt->info.arch, plan->rt->info.compute_units,
                          &plan->shape) != MT_OK)
        log_at(plan->rt, MLT_LOG_WARN, "recorded calls not saved: %s", mt_last_error());
    free(plan->recorder);
    mt_dispatch_free(&plan->table);
    free(plan);
}

size_t mlt_plan_workspace_size(const mlt_plan *plan) { return plan ? plan->workspace : 0; }

size_t mlt_plan_schedule_size(const mlt_plan *plan) { return plan ? plan->schedule : 0; }

/* The batch and hints of a call (mlt_plan_run) or of a question about one
 * (mlt_plan_explain): a batch past max_batch has no variant compiled for it
 * (the plan rescales splits only up to max_batch), so both refuse it. */
static mt_status check_batch_and_hints(const mlt_plan *plan, int batch, int seq_len_hint, int max_seq_len_hint) {
    if (batch < 1 || batch > plan->max_batch)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "batch %d outside 1..%d (the plan's max_batch)", batch,
                       plan->max_batch);
    if (seq_len_hint < 0 && seq_len_hint != MLT_LENGTHS_UNKNOWN)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "seq_len_hint %d is negative (MLT_LENGTHS_UNKNOWN is %d)",
                       seq_len_hint, MLT_LENGTHS_UNKNOWN);
    if (max_seq_len_hint < 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "max_seq_len_hint %d is negative", max_seq_len_hint);
    if (max_seq_len_hint > 0 && seq_len_hint > max_seq_len_hint)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "seq_len_hint %d (the mean) is above max_seq_len_hint %d (the longest)",
                       seq_len_hint, max_seq_len_hint);
    return MT_OK;
}

/* The checks every call makes, the variant it dispatches to, and its
 * arguments for the kernels. */
static mt_status prepare_call(const mlt_plan *plan, const mlt_decode_args *a, mt_dispatch_result *r,
                              mt_mla_decode_args *k) {
    if (!plan || !a) return mt_fail(MT_ERR_INVALID_ARGUMENT, "null plan or arguments");
    mt_status st = check_batch_and_hints(plan, a->batch, a->seq_len_hint, a->max_seq_len_hint);
    if (st != MT_OK) return st;
    mt_dispatch_lookup(&plan->table, a->batch, a->seq_len_hint, a->max_seq_len_hint, r);
    *k = (mt_mla_decode_args){.batch = a->batch, .n_heads = plan->shape.n_heads, .sq = plan->shape.sq,
                              .max_blocks = a->max_blocks_per_seq, .page_size = plan->shape.s.page_size,
                              .warp_size = plan->rt->info.warp_size,
                              .scale = plan->scale, .kv_scale = plan->kv_scale, .q = (mt_devptr)(uintptr_t)a->q,
                              .kv = (mt_devptr)(uintptr_t)a->kv_cache,
                              .block_table = (mt_devptr)(uintptr_t)a->block_table,
                              .seq_lens = (mt_devptr)(uintptr_t)a->seq_lens, .out = (mt_devptr)(uintptr_t)a->out,
                              .lse = (mt_devptr)(uintptr_t)a->lse, .workspace = (mt_devptr)(uintptr_t)a->workspace,
                              .workspace_bytes = a->workspace_size, .schedule = (mt_devptr)(uintptr_t)a->schedule,
                              .compute_units = plan->rt->info.compute_units,
                              .q_pe = (mt_devptr)(uintptr_t)a->q_pe,
                              .kv_scale_ptr = (mt_devptr)(uintptr_t)a->kv_scale_device};
    for (int i = 0; i < 3; i++) {
        k->q_strides[i] = a->q_strides[i], k->q_pe_strides[i] = a->q_pe_strides[i];
        k->out_strides[i] = a->out_strides[i], k->lse_strides[i] = a->lse_strides[i];
    }
    return MT_OK;
}

mlt_status mlt_plan_run(mlt_plan *plan, const mlt_decode_args *a, void *stream) {
    mt_dispatch_result r;
    mt_mla_decode_args k;
    mt_status st = prepare_call(plan, a, &r, &k);
    if (st != MT_OK) return mt_to_public(st);
    /* opt-in: a call no key was measured for is counted (atomics in a
     * table made with the plan; written at mlt_plan_destroy) */
    if (plan->recorder && !r.exact && !r.unknown_lengths)
        mt_recorder_count(plan->recorder, a->batch, a->seq_len_hint, a->max_seq_len_hint, r.entry == NULL);
    int i = r.variant;
    const mt_variant *v = &plan->table.variants[i];
    if (!v->family->length_aware(v)) k.schedule = 0; /* fixed splits: no schedule to read */
    return mt_to_public(v->family->launch(plan->rt->backend, &plan->kernels[i], v, &plan->shape.s, &k,
                                          (mt_stream)stream));
}

mlt_status mlt_plan_schedule(mlt_plan *plan, const mlt_decode_args *a, void *schedule, void *stream) {
    mt_dispatch_result r;
    mt_mla_decode_args k;
    mt_status st = prepare_call(plan, a, &r, &k);
    if (st != MT_OK) return mt_to_public(st);
    int i = r.variant;
    const mt_variant *v = &plan->table.variants[i];
    if (!v->family->length_aware(v) || !v->family->schedule) return MLT_OK; /* fixed splits: nothing to build */
    return mt_to_public(v->family->schedule(plan->rt->backend, &plan->kernels[i], v, &plan->shape.s, &k,
                                            (mt_devptr)(uintptr_t)schedule, (mt_stream)stream));
}

mlt_status mlt_plan_explain(const mlt_plan *plan, int batch, int seq_len_hint, int max_seq_len_hint,
                            mlt_choice_info *out) {
    if (!plan || !out) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_plan_explain: null argument"));
    memset(out, 0, sizeof *out);
    mt_status st = check_batch_and_hints(plan, batch, seq_len_hint, max_seq_len_hint);
    if (st != MT_OK) return mt_to_public(st);
    mt_dispatch_result r;
    mt_dispatch_lookup(&plan->table, batch, seq_len_hint, max_seq_len_hint, &r);
    const mt_variant *v = &plan->table.variants[r.variant];
    snprintf(out->family, sizeof out->family, "%s", v->family->name);
    mt_variant_format(v, out->variant, sizeof out->variant);
    out->length_aware = v->family->length_aware(v);
    mt_dispatch_explain(&plan->table, &r, out->why, sizeof out->why);
    if (!r.entry) {
        out->reason = MLT_CHOICE_HEURISTIC;
        snprintf(out->source, sizeof out->source, "heuristic");
        return MLT_OK;
    }
    out->reason = r.exact ? MLT_CHOICE_EXACT_KEY : MLT_CHOICE_NEAREST_KEY;
    out->key_batch = r.entry->batch;
    out->key_seq_len = r.entry->seq_len;
    out->key_max_seq_len = r.entry->max_len;
    snprintf(out->key_lengths, sizeof out->key_lengths, "%s", r.entry->lengths);
    out->distance = r.distance;
    out->measured_ms = r.entry->median_ms;
    snprintf(out->source, sizeof out->source, "%s", r.entry->source == MT_FROM_USER_DB ? "user" : "system");
    return MLT_OK;
}

mlt_status mlt_device_alloc(mlt_runtime *rt, size_t bytes, void **ptr) {
    if (!rt || !ptr) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_device_alloc: null argument"));
    mt_devptr p = 0;
    mt_status st = mt_backend_mem_alloc(rt->backend, bytes, &p);
    *ptr = (void *)(uintptr_t)p;
    return mt_to_public(st);
}

mlt_status mlt_device_free(mlt_runtime *rt, void *ptr) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_device_free: runtime is NULL"));
    return mt_to_public(mt_backend_mem_free(rt->backend, (mt_devptr)(uintptr_t)ptr));
}

mlt_status mlt_copy_to_device(mlt_runtime *rt, void *dst, const void *src, size_t bytes) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_copy_to_device: runtime is NULL"));
    mt_status st = mt_backend_copy_to_device(rt->backend, (mt_devptr)(uintptr_t)dst, src, bytes, NULL);
    if (st == MT_OK) st = mt_backend_stream_sync(rt->backend, NULL);
    return mt_to_public(st);
}

mlt_status mlt_copy_to_host(mlt_runtime *rt, void *dst, const void *src, size_t bytes) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_copy_to_host: runtime is NULL"));
    return mt_to_public(mt_backend_copy_to_host(rt->backend, dst, (mt_devptr)(uintptr_t)src, bytes, NULL));
}

mlt_status mlt_synchronize(mlt_runtime *rt) {
    if (!rt) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_synchronize: runtime is NULL"));
    return mt_to_public(mt_backend_synchronize(rt->backend));
}
