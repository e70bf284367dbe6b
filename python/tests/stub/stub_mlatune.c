/*
 * stub_mlatune.c - a libmlatune with no GPU behind it, for the Python
 * package's CPU tests and for timing the package's per-call overhead.
 *
 * It implements mlatune.h's functions against host memory: a runtime on
 * "device" 0 or 1, plans that remember their problem, and runs that launch
 * nothing but record what they were given (stub_last_args, stub_last_stream,
 * stub_run_count) so that a test can check what the Python side passed.
 * mlt_plan_run checks what the real one checks before it launches (batch
 * range, hints, null and misaligned pointers, workspace present) with
 * messages of the same form, the views' rules included (views.c: a plan
 * created with views = 0 refuses them all).  Built
 * by tests/support.py with the system C compiler against the real header,
 * so a header change that breaks the mirrors shows here too; built with
 * -DSTUB_API_0_1 it has no mlt_api_version, as a 0.1 library had none, and
 * refuses the views as such a library would not (it would ignore them):
 * the package must not send them.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlatune.h"

static _Thread_local char last_error[512];

static mlt_status fail(mlt_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static mlt_status fail(mlt_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

#ifndef STUB_API_0_1
#ifdef MLT_VERSION_MINOR_OVERRIDE  /* a library newer than the header */
int mlt_api_version(void) { return (MLT_VERSION_MAJOR << 16) | MLT_VERSION_MINOR_OVERRIDE; }
#else
int mlt_api_version(void) { return (MLT_VERSION_MAJOR << 16) | MLT_VERSION_MINOR; }
#endif
#endif

const char *mlt_status_string(mlt_status s) { return s == MLT_OK ? "ok" : "stub failure"; }
const char *mlt_last_error(void) { return last_error; }

struct mlt_runtime {
    int device;
};

struct mlt_plan {
    mlt_runtime *rt;
    mlt_decode_problem problem;
};

/* what the last mlt_runtime_create was given (strings copied) */
static struct {
    mlt_runtime_options options;
    char user_db[256], system_db[256], cache_dir[256];
} last_options;

void mlt_runtime_options_default(mlt_runtime_options *o) {
    memset(o, 0, sizeof *o);
    o->log_level = MLT_LOG_WARN;
}

static const char *keep(char *dst, size_t size, const char *src) {
    if (!src) return NULL;
    snprintf(dst, size, "%s", src);
    return dst;
}

mlt_status mlt_runtime_create(const mlt_runtime_options *o, mlt_runtime **out) {
    last_options.options = *o;
    last_options.options.user_db = keep(last_options.user_db, sizeof last_options.user_db, o->user_db);
    last_options.options.system_db = keep(last_options.system_db, sizeof last_options.system_db, o->system_db);
    last_options.options.cache_dir = keep(last_options.cache_dir, sizeof last_options.cache_dir, o->cache_dir);
    if (o->device < 0 || o->device > 1)
        return fail(MLT_ERR_NO_DEVICE, "stub: device %d does not exist (2 devices)", o->device);
    mlt_runtime *rt = calloc(1, sizeof *rt);
    rt->device = o->device;
    *out = rt;
    return MLT_OK;
}

void mlt_runtime_destroy(mlt_runtime *rt) { free(rt); }
mlt_status mlt_runtime_bind_thread(mlt_runtime *rt) { return rt ? MLT_OK : MLT_ERR_INVALID_ARGUMENT; }

#ifndef STUB_API_0_1  /* a 0.1 library records no calls */
static int record_calls = -1;
int stub_record_calls(void) { return record_calls; }
mlt_status mlt_runtime_record_calls(mlt_runtime *rt, int on) {
    if (!rt) return fail(MLT_ERR_INVALID_ARGUMENT, "mlt_runtime_record_calls: runtime is NULL");
    record_calls = on;
    return MLT_OK;
}
#endif
const char *mlt_runtime_arch(const mlt_runtime *rt) { return rt ? "stub_00" : ""; }

mlt_status mlt_device_alloc(mlt_runtime *rt, size_t bytes, void **ptr) {
    (void)rt;
    *ptr = aligned_alloc(256, (bytes + 255) / 256 * 256);
    return *ptr ? MLT_OK : fail(MLT_ERR_OUT_OF_MEMORY, "stub: %zu bytes", bytes);
}
mlt_status mlt_device_free(mlt_runtime *rt, void *ptr) { (void)rt, free(ptr); return MLT_OK; }
mlt_status mlt_copy_to_device(mlt_runtime *rt, void *dst, const void *src, size_t n) { (void)rt, memcpy(dst, src, n); return MLT_OK; }
mlt_status mlt_copy_to_host(mlt_runtime *rt, void *dst, const void *src, size_t n) { (void)rt, memcpy(dst, src, n); return MLT_OK; }
mlt_status mlt_synchronize(mlt_runtime *rt) { (void)rt; return MLT_OK; }

mlt_status mlt_plan_create(mlt_runtime *rt, const mlt_decode_problem *p, mlt_plan **out) {
    if (!rt || !p || !out) return fail(MLT_ERR_INVALID_ARGUMENT, "mlt_plan_create: null argument");
    if (p->n_heads < 1 || p->n_heads > 128)
        return fail(MLT_ERR_INVALID_ARGUMENT, "head count %d outside 1..128", p->n_heads);
#ifndef STUB_API_0_1  /* a 0.1 library has no views field and reads none */
    if (p->views != 0 && p->views != 1)
        return fail(MLT_ERR_INVALID_ARGUMENT, "views %d is neither 0 nor 1", p->views);
#endif
    mlt_plan *plan = calloc(1, sizeof *plan);
    plan->rt = rt;
    plan->problem = *p;
    *out = plan;
    return MLT_OK;
}

void mlt_plan_destroy(mlt_plan *plan) { free(plan); }
/* sizes a test can predict: 4 KiB per request, a 512-byte schedule */
size_t mlt_plan_workspace_size(const mlt_plan *plan) { return plan ? (size_t)4096 * plan->problem.max_batch : 0; }
size_t mlt_plan_schedule_size(const mlt_plan *plan) { return plan ? 512 : 0; }

static mlt_decode_args last_args;
static void *last_stream, *last_schedule;
static long long run_count, schedule_count;

const mlt_decode_args *stub_last_args(void) { return &last_args; }
void *stub_last_stream(void) { return last_stream; }
void *stub_last_schedule(void) { return last_schedule; }
long long stub_run_count(void) { return run_count; }
long long stub_schedule_count(void) { return schedule_count; }
const mlt_runtime_options *stub_last_options(void) { return &last_options.options; }
const mlt_decode_problem *stub_plan_problem(const mlt_plan *plan) { return &plan->problem; }

/* views.c's rules, with its messages (the overlap rule is left out) */
static mlt_status check_views(const mlt_plan *plan, const mlt_decode_args *a) {
    const int64_t *given[4] = {a->q_strides, a->q_pe_strides, a->out_strides, a->lse_strides};
    int any = a->q_pe || a->kv_scale_device;
    for (int i = 0; i < 4; i++) any |= given[i][0] || given[i][1] || given[i][2];
#ifdef STUB_API_0_1
    (void)plan;
    return any ? fail(MLT_ERR_INTERNAL, "stub 0.1: the package sent views to a library without them") : MLT_OK;
#else
    if (!any) return MLT_OK;
    const mlt_decode_problem *p = &plan->problem;
    if (!p->views)
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: this call passes views (q in two parts, strides or a "
                    "device kv scale) but its kernels were built for contiguous tensors only: create the plan "
                    "with views = 1");
    if (a->q_pe) {
        if (p->d <= p->dl || p->dl % 8 != 0)
            return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: q in two parts needs D > Dl and Dl a multiple of 8 "
                        "(D=%d, Dl=%d)", p->d, p->dl);
        if ((uintptr_t)a->q_pe % 16)
            return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: q_pe pointer 0x%llx is not 16-byte aligned",
                        (unsigned long long)(uintptr_t)a->q_pe);
    } else if (given[1][0] || given[1][1] || given[1][2]) {
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: q_pe strides given without q_pe");
    }
    if ((uintptr_t)a->kv_scale_device % 4)
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: kv scale pointer 0x%llx is not 4-byte aligned",
                    (unsigned long long)(uintptr_t)a->kv_scale_device);
    static const char *const names[4] = {"q", "q_pe", "out", "lse"}, *const dims[3] = {"request", "token", "head"};
    static const int piece[4] = {8, 8, 8, 1};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            if (given[i][j] < 0)
                return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: %s stride per %s is %lld: negative strides are "
                            "not supported", names[i], dims[j], (long long)given[i][j]);
            if (given[i][j] % piece[i])
                return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: %s stride per %s is %lld elements, not a "
                            "multiple of %d (rows are moved in 16-byte pieces)", names[i], dims[j],
                            (long long)given[i][j], piece[i]);
        }
    return MLT_OK;
#endif
}

/* the checks mlt_plan_run makes before it launches */
static mlt_status check(const mlt_plan *plan, const mlt_decode_args *a) {
    if (!plan || !a) return fail(MLT_ERR_INVALID_ARGUMENT, "null plan or arguments");
    if (a->batch < 1 || a->batch > plan->problem.max_batch)
        return fail(MLT_ERR_INVALID_ARGUMENT, "batch %d outside 1..%d (the plan's max_batch)", a->batch,
                    plan->problem.max_batch);
    if (a->seq_len_hint < 0 && a->seq_len_hint != MLT_LENGTHS_UNKNOWN)
        return fail(MLT_ERR_INVALID_ARGUMENT, "seq_len_hint %d is negative", a->seq_len_hint);
    if (a->max_blocks_per_seq < 1)
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: block table has %d columns", a->max_blocks_per_seq);
    struct { const void *p; const char *name; unsigned align; } ptrs[] = {
        {a->q, "q", 16}, {a->kv_cache, "kv cache", 16}, {a->block_table, "block table", 4},
        {a->seq_lens, "sequence lengths", 4}, {a->out, "out", 16}, {a->lse, "lse", 4}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        if (!ptrs[i].p) return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer is null", ptrs[i].name);
        if ((uintptr_t)ptrs[i].p % ptrs[i].align)
            return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer 0x%llx is not %u-byte aligned",
                        ptrs[i].name, (unsigned long long)(uintptr_t)ptrs[i].p, ptrs[i].align);
    }
    mlt_status st = check_views(plan, a);
    if (st != MLT_OK) return st;
    if (!a->workspace || a->workspace_size < (size_t)4096 * a->batch)
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: workspace of %zu bytes needed, %zu given",
                    (size_t)4096 * a->batch, a->workspace_size);
    return MLT_OK;
}

mlt_status mlt_plan_run(mlt_plan *plan, const mlt_decode_args *a, void *stream) {
    mlt_status st = check(plan, a);
    if (st != MLT_OK) return st;
    last_args = *a;
    last_stream = stream;
    run_count++;
    return MLT_OK;
}

mlt_status mlt_plan_schedule(mlt_plan *plan, const mlt_decode_args *a, void *schedule, void *stream) {
    mlt_status st = check(plan, a);
    if (st != MLT_OK) return st;
    if (!schedule || (uintptr_t)schedule % 16)
        return fail(MLT_ERR_INVALID_ARGUMENT, "mla_decode: schedule pointer 0x%llx is not 16-byte aligned",
                    (unsigned long long)(uintptr_t)schedule);
    last_args = *a;
    last_schedule = schedule;
    last_stream = stream;
    schedule_count++;
    return MLT_OK;
}

mlt_status mlt_plan_explain(const mlt_plan *plan, int batch, int seq_len_hint, int max_seq_len_hint,
                            mlt_choice_info *out) {
    if (!plan || !out) return fail(MLT_ERR_INVALID_ARGUMENT, "mlt_plan_explain: null argument");
    memset(out, 0, sizeof *out);
    /* every field derived from the inputs, so a test sees each one arrive */
    out->reason = seq_len_hint == MLT_LENGTHS_UNKNOWN ? MLT_CHOICE_HEURISTIC : MLT_CHOICE_NEAREST_KEY;
    snprintf(out->family, sizeof out->family, "stub_family");
    snprintf(out->variant, sizeof out->variant, "heads=%d,page=%d", plan->problem.n_heads, plan->problem.page_size);
    out->key_batch = batch * 2;
    out->key_seq_len = seq_len_hint * 2;
    out->distance = batch + 0.5;
    out->measured_ms = seq_len_hint / 1000.0;
    snprintf(out->source, sizeof out->source, "stub");
    out->key_max_seq_len = max_seq_len_hint * 2;
    snprintf(out->key_lengths, sizeof out->key_lengths, "uniform");
    out->length_aware = seq_len_hint == MLT_LENGTHS_UNKNOWN;
    snprintf(out->why, sizeof out->why, "stub: batch %d, hints %d/%d", batch, seq_len_hint, max_seq_len_hint);
    return MLT_OK;
}

#ifndef STUB_API_0_1  /* (a 0.1 library had none) */
/* what the last mlt_prefill_choose_form that passed its checks was given:
 * heads, q dtype, kv dtype, sq, context, in the C order */
static int last_form[5];
static long long form_calls;
const int *stub_last_form(void) { return last_form; }
long long stub_form_calls(void) { return form_calls; }

/* The checks of runtime/api/crossover.c, with its messages; the answer is
 * the flop rule's shape (MHA from sq 168), marked as the stub's. */
mlt_status mlt_prefill_choose_form(mlt_runtime *rt, int n_heads, mlt_dtype q_dtype, mlt_dtype kv_dtype, int sq,
                                   int context, mlt_form_info *out) {
    if (!rt || !out) return fail(MLT_ERR_INVALID_ARGUMENT, "mlt_prefill_choose_form: %s is NULL", !rt ? "runtime" : "out");
    if (n_heads < 1 || n_heads > 128) return fail(MLT_ERR_INVALID_ARGUMENT, "head count %d outside 1..128", n_heads);
    if (sq < 1 || sq > 1024)
        return fail(MLT_ERR_INVALID_ARGUMENT, "sq %d outside 1..1024 (the new tokens of the chunk)", sq);
    if (context < 0)
        return fail(MLT_ERR_INVALID_ARGUMENT, "context %d is negative (the tokens before the chunk)", context);
    if (q_dtype != MLT_BF16 && q_dtype != MLT_FP16)
        return fail(MLT_ERR_INVALID_ARGUMENT, "q_dtype must be MLT_BF16 or MLT_FP16 (got %d)", (int)q_dtype);
    if ((int)kv_dtype < 0 || kv_dtype > MLT_FP8_E4M3_FNUZ)
        return fail(MLT_ERR_INVALID_ARGUMENT, "kv_dtype %d is not a known dtype", (int)kv_dtype);
    last_form[0] = n_heads, last_form[1] = (int)q_dtype, last_form[2] = (int)kv_dtype, last_form[3] = sq;
    last_form[4] = context;
    form_calls++;
    memset(out, 0, sizeof *out);
    out->form = sq >= 168 ? MLT_FORM_MHA : MLT_FORM_MQA;
    snprintf(out->source, sizeof out->source, "rule");
    out->boundary_sq = 168;
    out->key_compute_units = 132, out->key_n_heads = n_heads, out->key_context = context;  /* to see them come back */
    out->lo_sq = sq - 1, out->hi_sq = sq + 1;
    out->mqa_ms = sq / 100.0, out->mha_ms = context / 1000.0;
    snprintf(out->why, sizeof out->why, "stub: %d heads, sq %d, context %d", n_heads, sq, context);
    return MLT_OK;
}
#endif

/* The baseline for the overhead benchmark: nanoseconds per mlt_plan_run
 * call made from C, n calls on the same arguments (median of 9 rounds). */
double stub_time_runs(mlt_plan *plan, const mlt_decode_args *a, void *stream, int n) {
    double rounds[9];
    for (int r = 0; r < 9; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < n; i++) mlt_plan_run(plan, a, stream);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        rounds[r] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
    }
    for (int i = 1; i < 9; i++)  /* insertion sort, 9 values */
        for (int j = i; j > 0 && rounds[j] < rounds[j - 1]; j--) {
            double t = rounds[j];
            rounds[j] = rounds[j - 1], rounds[j - 1] = t;
        }
    return rounds[4];
}
