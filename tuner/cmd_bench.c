/*
 * cmd_bench.c - `mla-tune bench`: decode through the runtime (mlt_plan_run,
 * as an engine calls it) for a grid of shapes, with the GPU's ceilings
 * measured in the same run.
 *
 * Per shape it prints the time of one call (CUDA/HIP events around
 * mlt_plan_run: the decode launch and the reduce launch when the variant
 * splits, host dispatch included), the bytes moved per second against the
 * measured copy ceiling, the matrix FLOP/s against the measured matrix-unit
 * ceiling, and the variant the plan ran with the reason (DB key, nearest
 * key, heuristic, or --variant).
 *
 * Timing follows METHOD.md (timing.h): random data generated on the GPU,
 * warm-up calls, then per timed call an L2 flush (reads over 256 MiB, ~5x
 * the H100's L2; --flush write for a memset) and events around the call
 * only; the median is reported, with
 * the 10th and 90th percentiles.  Outputs are checked for non-finite values
 * (a broken variant shows up as "NaN" instead of a time).  Correctness
 * against the reference is the sweep's job (every measured variant is
 * verified there).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"
#include "ceilings.h"
#include "int_list.h"
#include "timing.h"
#include "commands.h"
#include "json.h"
#include "lengths.h"
#include "kernels/dtype.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/api_internal.h"



enum { MAX_MIXES = 8 };

typedef struct bench_opts {
    mt_int_list heads, sq, batch, seq_len, kv;  /* kv: mt_dtype values */
    mt_dtype q_dtype;
    int page_size, warmup, reps, device, ceilings;
    mt_lengths_mix mixes[MAX_MIXES];
    int n_mixes;
    int hints_unknown; /* --hints unknown: calls say MLT_LENGTHS_UNKNOWN (as a graph capture would) */
    int views;         /* --views: plans built for views (mlt_decode_problem.views), given contiguous tensors */
    int schedule_per_call; /* --schedule call: length-aware variants build their schedule in every call */
    int flush_write; /* --flush write: evict the L2 with a memset (timing.h) */
    int json;        /* --json: one object on stdout instead of the table (json_row) */
    const char *user_db, *system_db, *cache_dir, *variant, *csv;
} bench_opts;

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune bench [options]\n\n"
            "Times MLA decode through the runtime for every combination of the lists\n"
            "below and prints time, GB/s against the measured copy ceiling, TFLOP/s\n"
            "against the measured matrix-unit ceiling, and the variant used.\n\n"
            "  --heads LIST       query heads (default 16)\n"
            "  --sq LIST          query tokens per request (default 1)\n"
            "  --batch LIST       (default 1,8,32,128)\n"
            "  --seq-len LIST     keys per request (default 4096,16384)\n"
            "  --lengths LIST     length mixes (tuner/lengths.h: uniform, uniform-random[:LO-HI],\n"
            "                     long-tail[...], one-long[:LONG:SHORT], file:PATH; @SEED);\n"
            "                     default uniform (then --seq-len).  A ragged row is followed\n"
            "                     by the uniform batch with the same total keys, and the ratio\n"
            "  --schedule MODE    length-aware variants: step (the default) builds the schedule\n"
            "                     once (mlt_plan_schedule, timed apart: sched_us) and times the\n"
            "                     per-layer calls that use it, as an engine calls decode per\n"
            "                     layer; call builds it inside every timed call\n"
            "  --hints MODE       what calls tell the dispatcher: exact (mean and longest,\n"
            "                     the default) or unknown (MLT_LENGTHS_UNKNOWN, as under\n"
            "                     graph capture)\n"
            "  --views            plans built for views (problem.views = 1: q in two parts,\n"
            "                     strides), called with contiguous tensors: what the views cost\n"
            "  --kv-dtype LIST    bf16,fp16,fp8e4m3,fp8e4m3fnuz (default bf16)\n"
            "  --q-dtype T        bf16|fp16 (default bf16)\n"
            "  --page-size N      (default 64)\n"
            "  --variant SPEC     time this variant instead of the DB's choice\n"
            "                     (\"tile_q=16,kv_granularity=64,...\"; missing later-added\n"
            "                     parameters take their defaults)\n"
            "  --db FILE, --system-db FILE   tuning databases (as the runtime)\n"
            "  --warmup N         calls before timing (default 5)\n"
            "  --reps N           timed calls, median reported (default 30)\n"
            "  --flush MODE       L2 flush before each timed call: read (reads over\n"
            "                     256 MiB, clean lines left; the default) or write (a\n"
            "                     memset, whose dirty lines are written back during the\n"
            "                     call)\n"
            "  --no-ceilings      skip the copy and matrix-unit measurements\n"
            "  --csv FILE         also write the rows as CSV\n"
            "  --json             one JSON object instead of the table: device, ceilings,\n"
            "                     rows (params as objects, null where not measured), error\n"
            "  --device N         GPU ordinal (default 0)\n"
            "  --cache-dir DIR    code-object cache (default as the runtime)\n\n"
            "  --prefill          prefill attention instead (mla-tune bench --prefill --help)\n");
}

/* A list of numbers (1..10^7) or, for --kv-dtype, of dtype names. */
static int parse_list(const char *text, mt_int_list *out, int is_dtype) {
    if (!is_dtype) return mt_int_list_parse(text, out, 1, 10000000);
    out->n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        mt_dtype t;
        if (out->n == MT_INT_LIST_MAX || mt_dtype_parse(tok, &t) != MT_OK) return -1;
        out->v[out->n++] = (int)t;
    }
    return out->n > 0 ? 0 : -1;
}

/* One timed call: the plan run as an engine makes it. */
typedef struct plan_call { mlt_plan *plan; const mlt_decode_args *a; void *schedule; } plan_call;
static mt_status run_plan(void *arg, mt_stream s) {
    plan_call *c = arg;
    (void)s; /* the runtime's default stream, as the events */
    return mlt_plan_run(c->plan, c->a, NULL) == MLT_OK ? MT_OK : mt_fail(MT_ERR_VENDOR, "run: %s", mlt_last_error());
}
/* The step's schedule alone (mlt_plan_schedule). */
static mt_status run_schedule(void *arg, mt_stream s) {
    plan_call *c = arg;
    (void)s;
    return mlt_plan_schedule(c->plan, c->a, c->schedule, NULL) == MLT_OK
               ? MT_OK : mt_fail(MT_ERR_VENDOR, "schedule: %s", mlt_last_error());
}

typedef struct shape_result {
    double median_us, p10_us, p90_us, gbps, tflops;
    double schedule_us; /* the step's schedule alone (--schedule step, length-aware variants), else 0 */
    long non_finite;
    mlt_choice_info choice;
} shape_result;

/* Builds the inputs of one batch (lens: its requests' lengths) on the GPU,
 * runs it, frees everything. */
static mt_status bench_shape(mt_bench_gpu *g, const bench_opts *o, int heads, int sq, int batch, const int32_t *lens,
                             mt_dtype kv_dtype, shape_result *r) {
    const int d = 576, dl = 512, page = o->page_size;
    mlt_decode_problem p = {.n_heads = heads, .sq = sq, .d = d, .dl = dl, .page_size = page,
                            .q_dtype = (mlt_dtype)o->q_dtype, .kv_dtype = (mlt_dtype)kv_dtype,
                            .softmax_scale = (float)(1.0 / sqrt((double)d)),
                            .kv_scale = mt_host_unit_kv_scale(kv_dtype), .max_batch = batch,
                            .views = o->views};
    mlt_plan *plan = NULL;
    mlt_status ps;
    if (o->variant) {
        mt_variant v;
        mt_status st = mt_variant_parse(&mt_family_mla_decode, o->variant, &v);
        if (st != MT_OK) return st;
        ps = mt_plan_create_pinned(g->rt, &p, &v, &plan);
    } else {
        ps = mlt_plan_create(g->rt, &p, &plan);
    }
    if (ps != MLT_OK) return mt_fail(MT_ERR_INVALID_ARGUMENT, "plan: %s", mlt_last_error());
    int mean, longest;
    mt_lengths_stats(lens, batch, &mean, &longest);
    int hint = o->hints_unknown ? MLT_LENGTHS_UNKNOWN : mean, max_hint = o->hints_unknown ? 0 : longest;
    mlt_plan_explain(plan, batch, hint, max_hint, &r->choice);

    /* each request gets its own pages, in a shuffled order */
    int32_t *table = NULL;
    int blocks = 1;
    size_t pages = 1;
    uint64_t shuffle = 0x243f6a8885a308d3ull;
    mt_status st = mt_lengths_page_table(lens, batch, page, &shuffle, &table, &blocks, &pages);
    const size_t rows = (size_t)batch * sq * heads;
    const size_t q_bytes = rows * d * 2, kv_bytes = pages * page * d * mt_dtype_size(kv_dtype);
    const size_t out_bytes = rows * dl * 2, ws = mlt_plan_workspace_size(plan);
    uint16_t *host_out = malloc(out_bytes);
    if (st == MT_OK && !host_out) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_devptr dq = 0, dkv = 0, dtable = 0, dlens = 0, dout = 0, dlse = 0, dws = 0;
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, q_bytes, &dq);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, kv_bytes, &dkv);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, sizeof(int32_t) * batch * blocks, &dtable);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, sizeof(int32_t) * batch, &dlens);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, out_bytes, &dout);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, rows * sizeof(float), &dlse);
    if (st == MT_OK && ws) st = mt_backend_mem_alloc(g->b, ws, &dws);
    if (st == MT_OK) st = mt_bench_gpu_fill(g, dq, rows * d, o->q_dtype, 1);
    if (st == MT_OK) st = mt_bench_gpu_fill(g, dkv, pages * page * d, kv_dtype, 2);
    if (st == MT_OK) st = mt_backend_copy_to_device(g->b, dtable, table, sizeof(int32_t) * batch * blocks, NULL);
    if (st == MT_OK) st = mt_backend_copy_to_device(g->b, dlens, lens, sizeof(int32_t) * batch, NULL);
    mlt_decode_args a = {.batch = batch, .seq_len_hint = hint, .max_seq_len_hint = max_hint,
                         .max_blocks_per_seq = blocks, .q = (void *)(uintptr_t)dq, .kv_cache = (void *)(uintptr_t)dkv,
                         .block_table = (const int32_t *)(uintptr_t)dtable, .seq_lens = (const int32_t *)(uintptr_t)dlens,
                         .out = (void *)(uintptr_t)dout, .lse = (float *)(uintptr_t)dlse,
                         .workspace = (void *)(uintptr_t)dws, .workspace_size = ws};
    double *ms = calloc((size_t)o->reps, sizeof *ms);
    plan_call call = {plan, &a, NULL};
    mt_devptr dsched = 0;
    const size_t sched_bytes = mlt_plan_schedule_size(plan);
    r->schedule_us = 0;
    if (st == MT_OK && !ms) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == MT_OK && !o->schedule_per_call && sched_bytes && r->choice.length_aware) {
        /* as an engine: the schedule once per step, then the per-layer calls use it */
        st = mt_backend_mem_alloc(g->b, sched_bytes, &dsched);
        call.schedule = (void *)(uintptr_t)dsched;
        if (st == MT_OK) st = mt_time_runs(g->b, NULL, &g->flush, o->warmup, o->reps, run_schedule, &call, ms);
        if (st == MT_OK) r->schedule_us = 1e3 * mt_sorted_median(ms, o->reps);
        a.schedule = call.schedule;
    }
    if (st == MT_OK) st = mt_time_runs(g->b, NULL, &g->flush, o->warmup, o->reps, run_plan, &call, ms);
    if (st == MT_OK) st = mt_backend_copy_to_host(g->b, host_out, dout, out_bytes, NULL);
    if (st == MT_OK) {
        r->median_us = 1e3 * mt_sorted_median(ms, o->reps);
        r->p10_us = 1e3 * mt_sorted_percentile(ms, o->reps, 10);
        r->p90_us = 1e3 * mt_sorted_percentile(ms, o->reps, 90);
        double keys = 0; /* key visits per head: token t of Sq sees len - sq + t + 1 keys */
        for (int i = 0; i < batch; i++)
            for (int t = 0; t < sq; t++) keys += fmax(0, lens[i] - sq + t + 1);
        double flops = 2.0 * heads * keys * (d + dl);
        double key_bytes = 0;
        for (int i = 0; i < batch; i++) key_bytes += (double)lens[i] * d * mt_dtype_size(kv_dtype);
        double bytes = key_bytes + (double)q_bytes + (double)out_bytes + rows * 4.0;
        r->gbps = bytes / (r->median_us * 1e-6) / 1e9;
        r->tflops = flops / (r->median_us * 1e-6) / 1e12;
        r->non_finite = mt_bench_count_non_finite(host_out, rows * dl, o->q_dtype);
    }
    free(ms), free(table), free(host_out);
    mt_backend_mem_free(g->b, dq), mt_backend_mem_free(g->b, dkv), mt_backend_mem_free(g->b, dtable);
    mt_backend_mem_free(g->b, dlens), mt_backend_mem_free(g->b, dout), mt_backend_mem_free(g->b, dlse);
    mt_backend_mem_free(g->b, dws);
    mt_backend_mem_free(g->b, dsched);
    mlt_plan_destroy(plan);
    return st;
}

/* What a row of the output is for. */
typedef struct row_facts {
    int heads, sq, batch, mean, longest; /* longest 0: not known (the lengths could not be made) */
    mt_dtype kv;
    const char *lengths;                 /* what was timed: "uniform", the mix, "uniform, same keys" */
} row_facts;

/* --json: one element of "rows", the figures of a table line.  A row that
 * failed has its error and null figures (a run that gave non-finite
 * outputs keeps the variant it ran); a figure not measured (no ceiling, no
 * uniform twin, no schedule) is null. */
static void json_row(int *n_rows, const bench_opts *o, const row_facts *f, const shape_result *r, double copy,
                     double mma, double vs_uniform, const char *why, const char *error) {
    printf("%s\n  {\"heads\": %d, \"sq\": %d, \"batch\": %d, \"seq_len\": %d, \"max_len\": ", (*n_rows)++ ? "," : "",
           f->heads, f->sq, f->batch, f->mean);
    mt_json_count(stdout, f->longest > 0 ? f->longest : -1);
    printf(", \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"page_size\": %d, \"lengths\": ", mt_dtype_name(o->q_dtype),
           mt_dtype_name(f->kv), o->page_size);
    mt_json_string(stdout, f->lengths);
    int measured = r && !error;
    const double figures[] = {
        measured ? r->median_us : NAN, measured ? r->p10_us : NAN, measured ? r->p90_us : NAN,
        measured ? r->gbps : NAN, measured && copy > 0 ? 100.0 * r->gbps / copy : NAN,
        measured ? r->tflops : NAN, measured && mma > 0 ? 100.0 * r->tflops / mma : NAN,
        measured ? vs_uniform : NAN, measured && r->schedule_us > 0 ? r->schedule_us : NAN};
    static const char *const names[] = {"time_us", "p10_us", "p90_us", "gbps", "pct_copy",
                                        "tflops", "pct_matrix", "vs_uniform", "schedule_us"};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        printf(", \"%s\": ", names[i]);
        mt_json_number(stdout, figures[i]);
    }
    printf(", \"family\": ");
    if (r && r->choice.family[0]) mt_json_string(stdout, r->choice.family);
    else printf("null");
    printf(", \"params\": ");
    if (r && r->choice.variant[0]) mt_json_params(stdout, r->choice.variant);
    else printf("null");
    printf(", \"reason\": ");
    if (why) mt_json_string(stdout, why);
    else printf("null");
    printf(", \"error\": ");
    if (error) mt_json_string(stdout, error);
    else printf("null");
    printf("}");
    fflush(stdout);
}

/* --json when the run cannot start (no GPU, a kernel that does not build):
 * the object with no device and the reason, as `devices --json` does. */
static int json_failed_start(const char *message) {
    printf("{\"device\": null, \"ceilings\": null, \"rows\": [], \"failures\": 0, \"error\": ");
    mt_json_string(stdout, message);
    printf("}\n");
    return 1;
}

static const char *reason_text(const mlt_choice_info *c, int pinned, char *buf, size_t n) {
    if (pinned) snprintf(buf, n, "--variant");
    else if (c->reason == MLT_CHOICE_HEURISTIC) snprintf(buf, n, "heuristic");
    else if (c->reason == MLT_CHOICE_EXACT_KEY) snprintf(buf, n, "%s DB, exact key", c->source);
    else if (c->key_lengths[0] && strcmp(c->key_lengths, "uniform") != 0)
        snprintf(buf, n, "%s DB, nearest key B=%d %s", c->source, c->key_batch, c->key_lengths);
    else snprintf(buf, n, "%s DB, nearest key B=%d L=%d", c->source, c->key_batch, c->key_seq_len);
    return buf;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o = {.heads = {{16}, 1}, .sq = {{1}, 1}, .batch = {{1, 8, 32, 128}, 4}, .seq_len = {{4096, 16384}, 2},
                    .kv = {{MT_BF16}, 1}, .q_dtype = MT_BF16, .page_size = 64, .warmup = 5, .reps = 30,
                    .ceilings = 1};
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--prefill") == 0) return cmd_bench_prefill(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--no-ceilings") == 0) {
            o.ceilings = 0;
            continue;
        }
        if (strcmp(a, "--views") == 0) {
            o.views = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            o.json = 1;
            continue;
        }
        if (!v) {
            mt_cli_error("bench: %s needs a value", a);
            return 2;
        }
        i++;
        int bad = 0, timing;
        const char *want = NULL; /* what a bad value should be, for the error */
        if (strcmp(a, "--heads") == 0) bad = parse_list(v, &o.heads, 0);
        else if (strcmp(a, "--sq") == 0) bad = parse_list(v, &o.sq, 0);
        else if (strcmp(a, "--batch") == 0) bad = parse_list(v, &o.batch, 0);
        else if (strcmp(a, "--seq-len") == 0) bad = parse_list(v, &o.seq_len, 0);
        else if (strcmp(a, "--lengths") == 0) {
            char buf[1024];
            snprintf(buf, sizeof buf, "%s", v);
            o.n_mixes = 0;
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !bad; tok = strtok_r(NULL, ",", &save)) {
                if (o.n_mixes == MAX_MIXES || mt_lengths_parse(tok, &o.mixes[o.n_mixes++]) != MT_OK) bad = -1;
            }
            if (bad) {
                mt_cli_error("bench: --lengths: %s", o.n_mixes == MAX_MIXES ? "too many mixes" : mt_last_error());
                return 2;
            }
        } else if (strcmp(a, "--schedule") == 0) {
            o.schedule_per_call = strcmp(v, "call") == 0;
            bad = o.schedule_per_call || strcmp(v, "step") == 0 ? 0 : -1;
        } else if (strcmp(a, "--hints") == 0) {
            o.hints_unknown = strcmp(v, "unknown") == 0;
            bad = o.hints_unknown || strcmp(v, "exact") == 0 ? 0 : -1;
        }
        else if (strcmp(a, "--kv-dtype") == 0) bad = parse_list(v, &o.kv, 1);
        else if (strcmp(a, "--q-dtype") == 0) bad = mt_dtype_parse(v, &o.q_dtype) != MT_OK ? -1 : 0;
        else if (strcmp(a, "--variant") == 0) o.variant = v;
        else if (strcmp(a, "--db") == 0) o.user_db = v;
        else if (strcmp(a, "--system-db") == 0) o.system_db = v;
        else if (strcmp(a, "--cache-dir") == 0) o.cache_dir = v;
        else if (strcmp(a, "--csv") == 0) o.csv = v;
        else if (strcmp(a, "--page-size") == 0) {
            bad = mt_int_parse(v, 1, 1 << 20, &o.page_size);
            want = "a whole number of keys, 1 or more";
        }
        else if ((timing = mt_timing_int_option(a, v, &o.warmup, &o.reps, &o.device, &want)) != 1) bad = timing;
        else if (strcmp(a, "--flush") == 0) {
            o.flush_write = strcmp(v, "write") == 0;
            bad = o.flush_write || strcmp(v, "read") == 0 ? 0 : -1;
        }
        else {
            mt_cli_error("bench: unknown option '%s' (see --help)", a);
            return 2;
        }
        if (bad) {
            mt_cli_bad_value("bench", a, v, want);
            return 2;
        }
    }
    if (o.variant) { /* reject a bad spec before touching the GPU */
        mt_variant v;
        if (mt_variant_parse(&mt_family_mla_decode, o.variant, &v) != MT_OK) {
            mt_cli_error("bench: --variant: %s", mt_last_error());
            return 2;
        }
    }
    mlt_runtime_options ro;
    mlt_runtime_options_default(&ro);
    ro.device = o.device, ro.user_db = o.user_db, ro.system_db = o.system_db, ro.cache_dir = o.cache_dir;
    ro.log_level = MLT_LOG_QUIET;
    mt_bench_gpu g = {0};
    if (mlt_runtime_create(&ro, &g.rt) != MLT_OK) {
        mt_cli_error("bench: %s", mlt_last_error());
        return o.json ? json_failed_start(mlt_last_error()) : 1;
    }
    mt_status st = mt_bench_gpu_open(&g, o.flush_write);
    const mt_device_info *info = mt_runtime_device(g.rt);
    if (st != MT_OK) {
        mt_cli_error("bench: %s", mt_last_error());
        int rc = o.json ? json_failed_start(mt_last_error()) : 1;
        mt_bench_gpu_close(&g);
        return rc;
    }
    double copy = 0, mma = 0, mma_sync = 0, wgmma = 0;
    if (!o.json) printf("device: %s (%s, %d CUs)\n", info->name, info->arch, info->compute_units);
    if (o.ceilings) {
        copy = mt_ceiling_copy_gbps(g.b, NULL);
        mma = mma_sync = mt_ceiling_mma_tflops(g.b, mt_runtime_jit(g.rt), info->arch, info->compute_units, NULL);
        wgmma = mt_ceiling_wgmma_tflops(g.b, mt_runtime_jit(g.rt), info->arch, info->compute_units, NULL);
        if (wgmma > mma) mma = wgmma; /* %mma is against the faster instruction: the units' real ceiling */
    }
    if (o.ceilings && !o.json) {
        printf("copy ceiling: %.0f GB/s (1 GiB device-to-device copy, read + write)\n", copy);
        if (mma_sync > 0) printf("matrix ceiling: %.0f TFLOP/s (mma.sync m16n8k16 bf16 from registers)\n", mma_sync);
        else printf("matrix ceiling: not measured on %s (no probe for this architecture)\n", info->arch);
        if (wgmma > 0)
            printf("matrix ceiling: %.0f TFLOP/s (wgmma m64n256k16 bf16, B from shared memory); %%mma uses this one\n",
                   wgmma);
    }
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (o.csv && !csv) {
        mt_cli_error("bench: cannot write %s", o.csv);
        char message[1200];
        snprintf(message, sizeof message, "cannot write %s", o.csv);
        int rc = o.json ? json_failed_start(message) : 1;
        mt_bench_gpu_close(&g);
        return rc;
    }
    if (csv)
        fprintf(csv, "arch,heads,sq,batch,seq_len,max_len,lengths,q_dtype,kv_dtype,page_size,median_us,p10_us,p90_us,"
                     "gbps,copy_gbps,tflops,mma_tflops,vs_uniform,schedule_us,variant,reason\n");
    const char *timed = o.schedule_per_call
                            ? "the schedule built inside every call"
                            : "a per-layer call using the step's schedule (built once per step: sched_us)";
    if (o.json) {
        printf("{\"device\": {\"name\": ");
        mt_json_string(stdout, info->name);
        printf(", \"arch\": ");
        mt_json_string(stdout, info->arch);
        printf(", \"compute_units\": %d}, \"ceilings\": {\"copy_gbps\": ", info->compute_units);
        const double ceilings[] = {copy, mma_sync, wgmma, mma};
        static const char *const names[] = {"copy_gbps", "mma_sync_tflops", "wgmma_tflops", "matrix_tflops"};
        for (int i = 0; i < 4; i++) {
            if (i) printf(", \"%s\": ", names[i]);
            mt_json_number(stdout, ceilings[i] > 0 ? ceilings[i] : NAN);
        }
        printf("}, \"length_aware_timing\": ");
        mt_json_string(stdout, timed);
        printf(", \"rows\": [");
    } else {
        printf("# time_us: one call; length-aware variants: %s\n", timed);
        printf("%4s %3s %5s %6s %6s %-7s %10s %9s %8s %6s %8s %6s %7s %8s  %s\n", "N", "Sq", "B", "L", "max", "kv",
               "time_us", "(p10-p90)", "GB/s", "%copy", "TFLOP/s", "%mma", "x_unif", "sched_us", "variant [reason]");
    }
    int failures = 0, n_rows = 0;
    char fatal[600] = "";
    if (o.n_mixes == 0) o.n_mixes = 1, o.mixes[0].kind = MT_LENGTHS_UNIFORM;
    for (int ih = 0; ih < o.heads.n; ih++)
        for (int is = 0; is < o.sq.n; is++)
            for (int ik = 0; ik < o.kv.n; ik++)
                for (int im = 0; im < o.n_mixes; im++)
                    for (int ib = 0; ib < o.batch.n; ib++)
                        for (int il = 0; il < o.seq_len.n; il++) {
                            const mt_lengths_mix *mix = &o.mixes[im];
                            int ragged = mix->kind != MT_LENGTHS_UNIFORM;
                            if (ragged && il > 0) break; /* a mix makes its own lengths */
                            int N = o.heads.v[ih], Sq = o.sq.v[is], B = o.batch.v[ib];
                            mt_dtype kv = (mt_dtype)o.kv.v[ik];
                            char mix_name[96];
                            mt_lengths_name(mix, mix_name, sizeof mix_name);
                            int32_t *lens = malloc(sizeof(int32_t) * (size_t)B);
                            if (!lens || mt_lengths_make(mix, B, o.seq_len.v[il], lens) != MT_OK) {
                                const char *why_not = lens ? mt_last_error() : "out of host memory";
                                row_facts f = {.heads = N, .sq = Sq, .batch = B, .mean = o.seq_len.v[il], .kv = kv,
                                               .lengths = mix_name};
                                if (o.json) json_row(&n_rows, &o, &f, NULL, copy, mma, NAN, NULL, why_not);
                                else printf("%4d %3d %5d %s FAILED: %s\n", N, Sq, B, mix_name, why_not);
                                free(lens);
                                failures++;
                                continue;
                            }
                            /* the ragged batch, then (ragged) the uniform one with the same total keys */
                            double ragged_us = 0;
                            for (int pass = 0; pass < 1 + ragged; pass++) {
                                int mean, longest;
                                mt_lengths_stats(lens, B, &mean, &longest);
                                if (pass == 1) {
                                    for (int i = 0; i < B; i++) lens[i] = mean;
                                    longest = mean;
                                }
                                shape_result r;
                                memset(&r, 0, sizeof r);
                                st = bench_shape(&g, &o, N, Sq, B, lens, kv, &r);
                                const char *what = pass == 1 ? "uniform, same keys" : ragged ? mix_name : "uniform";
                                row_facts f = {.heads = N, .sq = Sq, .batch = B, .mean = mean, .longest = longest,
                                               .kv = kv, .lengths = what};
                                if (st != MT_OK) {
                                    if (o.json) json_row(&n_rows, &o, &f, NULL, copy, mma, NAN, NULL, mt_last_error());
                                    else
                                        printf("%4d %3d %5d %6d %6d %-7s FAILED: %s (%s)\n", N, Sq, B, mean, longest,
                                               mt_dtype_name(kv), mt_last_error(), what);
                                    failures++;
                                    if (st == MT_ERR_VENDOR) {
                                        snprintf(fatal, sizeof fatal, "the GPU failed, the run stopped: %s",
                                                 mt_last_error());
                                        free(lens);
                                        goto done; /* the context may be gone */
                                    }
                                    break;
                                }
                                char why[160], spread[32];
                                reason_text(&r.choice, o.variant != NULL, why, sizeof why);
                                snprintf(spread, sizeof spread, "%.0f-%.0f", r.p10_us, r.p90_us);
                                if (r.non_finite) {
                                    char nan_text[64];
                                    snprintf(nan_text, sizeof nan_text, "%ld non-finite outputs", r.non_finite);
                                    if (o.json) json_row(&n_rows, &o, &f, &r, copy, mma, NAN, why, nan_text);
                                    else
                                        printf("%4d %3d %5d %6d %6d %-7s NaN: %s  %s [%s]\n", N, Sq, B, mean, longest,
                                               mt_dtype_name(kv), nan_text, r.choice.variant, why);
                                    failures++;
                                    break;
                                }
                                if (pass == 0) ragged_us = r.median_us;
                                char pc[16] = "-", pm[16] = "-", vs[16] = "-";
                                if (copy > 0) snprintf(pc, sizeof pc, "%.0f%%", 100.0 * r.gbps / copy);
                                if (mma > 0) snprintf(pm, sizeof pm, "%.0f%%", 100.0 * r.tflops / mma);
                                if (pass == 1) snprintf(vs, sizeof vs, "%.2fx", ragged_us / r.median_us);
                                char su[16] = "-";
                                if (r.schedule_us > 0) snprintf(su, sizeof su, "%.1f", r.schedule_us);
                                if (o.json)
                                    json_row(&n_rows, &o, &f, &r, copy, mma,
                                             pass == 1 ? ragged_us / r.median_us : NAN, why, NULL);
                                else
                                    printf("%4d %3d %5d %6d %6d %-7s %10.1f %9s %8.0f %6s %8.1f %6s %7s %8s  %s [%s] "
                                           "(%s)\n", N, Sq, B, mean, longest, mt_dtype_name(kv), r.median_us, spread,
                                           r.gbps, pc, r.tflops, pm, vs, su, r.choice.variant, why, what);
                                fflush(stdout);
                                if (csv)
                                    fprintf(csv, "%s,%d,%d,%d,%d,%d,\"%s\",%s,%s,%d,%.2f,%.2f,%.2f,%.1f,%.1f,%.2f,%.2f,%s,"
                                                 "%.2f,\"%s\",\"%s\"\n",
                                            info->arch, N, Sq, B, mean, longest, what, mt_dtype_name(o.q_dtype),
                                            mt_dtype_name(kv), o.page_size, r.median_us, r.p10_us, r.p90_us, r.gbps,
                                            copy, r.tflops, mma, pass == 1 ? vs : "", r.schedule_us, r.choice.variant,
                                            why);
                            }
                            free(lens);
                        }
done:
    if (o.json) {
        printf("%s], \"failures\": %d, \"error\": ", n_rows ? "\n" : "", failures);
        if (fatal[0]) mt_json_string(stdout, fatal);
        else printf("null");
        printf("}\n");
    }
    if (csv) fclose(csv);
    mt_bench_gpu_close(&g);
    return failures ? 1 : 0;
}
