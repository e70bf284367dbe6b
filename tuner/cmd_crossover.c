/*
 * cmd_crossover.c - `mla-tune crossover`: the MHA/MQA crossover measured
 * (issue 29): both prefill forms of a chunk timed end to end on the GPU
 * for a grid of (heads, context, new tokens) (crossover_run.h), printed,
 * and stored in the user tuning DB (db/crossover.h), from which the
 * runtime (mlt_prefill_choose_form) and `lookup --crossover` answer.
 *
 * --check times the grid without storing and holds each point against
 * the DB's answer for it (runtime/api/crossover_pick.h): the chosen form's
 * time over the faster form's, and over MHA's (what "always MHA" costs).
 * Run it on points the sweep did not measure (between its Sq and
 * contexts) to see what the interpolation costs.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "crossover_refine.h"
#include "crossover_run.h"
#include "int_list.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/crossover_pick.h"

typedef struct xo_opts {
    mt_int_list heads, sq, context;
    mt_dtype dtype;
    int warmup, reps, device, store, check, refine;
    const char *db, *cache_dir, *csv;
} xo_opts;

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune crossover [options]\n\n"
            "Times MLA prefill of one request's chunk in both forms, end to end on the GPU:\n"
            "  MQA (absorbed): q_nope @ W_UK^T, attention over the latent cache (mla_decode,\n"
            "       Sq = the chunk), out @ W_UV;\n"
            "  MHA: the latent rows @ [W_UK | W_UV] (k_nope, v per head), attention\n"
            "       (mla_prefill, qk 192 / v 128, causal);\n"
            "GEMMs through cuBLASLt.  Each point is stored in the user tuning DB, where the\n"
            "runtime and `mla-tune lookup --crossover` find it.\n\n"
            "  --heads LIST       (default 16,128)\n"
            "  --sq LIST          new tokens of the chunk, 1..%d (default 1,4,16,32,64,128,256,512)\n"
            "  --context LIST     tokens before the chunk (default 4096,16384,65536)\n"
            "  --dtype T          bf16|fp16, q, kv and weights (default bf16)\n"
            "  --db FILE          the tuning DB to write (default: the user DB's path)\n"
            "  --no-store         print only\n"
            "  --check            print only, each point against the DB's answer for it\n"
            "  --refine           then, at each heads and context, halve every interval of\n"
            "                     --sq whose ends have different winners down to one token\n"
            "                     (the boundary measured; a form's time steps at waves)\n"
            "  --warmup N         runs before timing (default 2)\n"
            "  --reps N           timed runs, median reported (default 10)\n"
            "  --csv FILE         also write the rows as CSV\n"
            "  --device N         GPU ordinal (default 0)\n"
            "  --cache-dir DIR    code-object cache (default as the runtime)\n",
            MT_DECODE_MAX_SQ);
}

static int parse_opts(int argc, char **argv, xo_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(a, "--no-store") == 0) { o->store = 0; continue; }
        if (strcmp(a, "--check") == 0) { o->check = 1, o->store = 0; continue; }
        if (strcmp(a, "--refine") == 0) { o->refine = 1; continue; }
        if (!v) {
            mt_cli_error("crossover: %s needs a value", a);
            return 2;
        }
        i++;
        int bad = 0, timing;
        const char *want = NULL; /* what a bad value should be, for the error */
        if (strcmp(a, "--heads") == 0) bad = mt_int_list_parse(v, &o->heads, 1, 128);
        else if (strcmp(a, "--sq") == 0) bad = mt_int_list_parse(v, &o->sq, 1, MT_DECODE_MAX_SQ);
        else if (strcmp(a, "--context") == 0) bad = mt_int_list_parse(v, &o->context, 0, 1 << 20);
        else if (strcmp(a, "--dtype") == 0) bad = mt_dtype_parse(v, &o->dtype) != MT_OK ||
                                                  (o->dtype != MT_BF16 && o->dtype != MT_FP16);
        else if (strcmp(a, "--db") == 0) o->db = v;
        else if (strcmp(a, "--csv") == 0) o->csv = v;
        else if (strcmp(a, "--cache-dir") == 0) o->cache_dir = v;
        else if ((timing = mt_timing_int_option(a, v, &o->warmup, &o->reps, &o->device, &want)) != 1) bad = timing;
        else {
            mt_cli_error("crossover: unknown option '%s' (see --help)", a);
            return 2;
        }
        if (bad) {
            mt_cli_bad_value("crossover", a, v, want);
            return 2;
        }
    }
    return 0;
}

/* The DB to write (opened before any GPU work, so a bad path fails first)
 * or, with --check, its points. */
static mt_status open_db(const xo_opts *o, char *path, size_t size, mt_db **db, mt_crossover_point **points,
                         int *n) {
    char sys[1024];
    if (o->db) snprintf(path, size, "%s", o->db);
    else mt_db_default_paths(path, size, sys, sizeof sys);
    if (o->store) return mt_db_open(path, MT_DB_WRITE, db);
    if (!o->check) return MT_OK;
    mt_status st = mt_db_open(path, MT_DB_READ, db);
    if (st == MT_OK) st = mt_db_load_crossover(*db, NULL, points, n);
    return st;
}

/* What measuring a point needs, and what the measurements come to. */
enum { XO_MAX_POINTS = 64 }; /* sq measured per (heads, context), refinements included */
typedef struct xo_run {
    const xo_opts *o;
    const mt_device_info *info;
    mt_crossover_setup setup;
    mt_db *db;
    int64_t device_id;
    FILE *csv;
    const mt_crossover_point *known;
    int n_known;
    int failures, fatal;
} xo_run;

/* Measures (heads, context, sq), prints its row (with --check, against the
 * DB's answer), writes CSV, stores it; returns the winner (0 MQA, 1 MHA)
 * or -1 when it failed. */
static int measure_point(xo_run *r, int heads, int context, int sq) {
    const xo_opts *o = r->o;
    mt_crossover_point p = {.n_heads = heads, .q_dtype = o->dtype, .kv_dtype = o->dtype, .sq = sq, .context = context};
    mt_status st = mt_crossover_measure(&r->setup, &p);
    if (st != MT_OK) {
        printf("%4d %6d %5d FAILED: %s\n", p.n_heads, p.context, p.sq, mt_last_error());
        r->failures++;
        r->fatal = st == MT_ERR_VENDOR; /* the context may be gone */
        return -1;
    }
    const int mha = p.mha_ms < p.mqa_ms;
    char parts[2][48], answer[96] = "";
    snprintf(parts[0], sizeof parts[0], "(%.3f %.3f %.3f)", p.mqa_absorb_ms, p.mqa_attention_ms, p.mqa_output_ms);
    snprintf(parts[1], sizeof parts[1], "(%.3f %.3f)", p.mha_decompress_ms, p.mha_attention_ms);
    if (o->check) {
        mlt_form_info f;
        mt_crossover_query q = {.arch = r->info->arch, .compute_units = r->info->compute_units, .n_heads = p.n_heads,
                                .q_dtype = p.q_dtype, .kv_dtype = p.kv_dtype, .sq = p.sq, .context = p.context};
        mt_crossover_pick(r->known, r->n_known, &q, &f);
        const double t = f.form == MLT_FORM_MHA ? p.mha_ms : p.mqa_ms, best = mha ? p.mha_ms : p.mqa_ms;
        snprintf(answer, sizeof answer, "  %s%s  %.3f  %.3f", f.form == MLT_FORM_MHA ? "MHA" : "MQA",
                 f.measured ? "" : " (rule)", t / best, t / p.mha_ms);
    }
    printf("%4d %6d %5d %9.3f %24s %9.3f %17s %5s%s\n", p.n_heads, p.context, p.sq, p.mqa_ms, parts[0], p.mha_ms,
           parts[1], mha ? "MHA" : "MQA", answer);
    fflush(stdout);
    if (r->csv)
        fprintf(r->csv, "%s,%d,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,\"%s\",\"%s\",%s\n", r->info->arch,
                p.n_heads, mt_dtype_name(p.q_dtype), p.context, p.sq, p.mqa_ms, p.mqa_absorb_ms, p.mqa_attention_ms,
                p.mqa_output_ms, p.mha_ms, p.mha_decompress_ms, p.mha_attention_ms, p.mqa_variant, p.mha_variant,
                p.blas);
    if (o->store && mt_db_put_crossover(r->db, r->device_id, &p) != MT_OK) {
        printf("     not stored: %s\n", mt_last_error());
        r->failures++;
    }
    return mha;
}

/* Measures sq (unless it is there already) and keeps sqs / wins sorted by sq. */
static void add_point(xo_run *r, int heads, int context, int sq, int *sqs, int *wins, int *n) {
    int at = 0;
    while (at < *n && sqs[at] < sq) at++;
    if ((at < *n && sqs[at] == sq) || *n == XO_MAX_POINTS) return;
    const int win = measure_point(r, heads, context, sq);
    memmove(&sqs[at + 1], &sqs[at], sizeof *sqs * (size_t)(*n - at));
    memmove(&wins[at + 1], &wins[at], sizeof *wins * (size_t)(*n - at));
    sqs[at] = sq, wins[at] = win, (*n)++;
}

int cmd_crossover(int argc, char **argv) {
    xo_opts o = {.heads = {{16, 128}, 2}, .sq = {{1, 4, 16, 32, 64, 128, 256, 512}, 8},
                 .context = {{4096, 16384, 65536}, 3}, .dtype = MT_BF16, .warmup = 2, .reps = 10, .store = 1};
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    char path[1024];
    mt_db *db = NULL;
    mt_crossover_point *known = NULL;
    int n_known = 0;
    if (open_db(&o, path, sizeof path, &db, &known, &n_known) != MT_OK) {
        mt_cli_error("crossover: %s", mt_last_error());
        return 1;
    }
    mlt_runtime_options ro;
    mlt_runtime_options_default(&ro);
    ro.device = o.device, ro.cache_dir = o.cache_dir, ro.log_level = MLT_LOG_QUIET;
    mt_bench_gpu g = {0};
    mt_blaslt lt;
    memset(&lt, 0, sizeof lt);
    mt_status st =
        mlt_runtime_create(&ro, &g.rt) == MLT_OK ? MT_OK : mt_fail(MT_ERR_NO_BACKEND, "%s", mlt_last_error());
    if (st == MT_OK) st = mt_bench_gpu_open(&g, 0);
    const mt_device_info *info = st == MT_OK ? mt_runtime_device(g.rt) : NULL;
    const mt_blaslt_vendor vendor = info && strcmp(info->backend, "hip") == 0 ? MT_BLASLT_HIPBLASLT : MT_BLASLT_CUBLASLT;
    if (st == MT_OK) st = mt_blaslt_open(vendor, &lt);
    int64_t device_id = 0;
    char compiler[128] = "";
    if (st == MT_OK && o.store) st = mt_backend_compiler_version(g.b, compiler, sizeof compiler);
    if (st == MT_OK && o.store) st = mt_db_put_device(db, info, compiler, &device_id);
    FILE *csv = st == MT_OK && o.csv ? fopen(o.csv, "w") : NULL;
    if (st == MT_OK && o.csv && !csv) st = mt_fail(MT_ERR_IO, "cannot write %s", o.csv);
    if (st != MT_OK) {
        mt_cli_error("crossover: %s", mt_last_error());
        mt_bench_gpu_close(&g);
        if (db) mt_db_close(db);
        free(known);
        return 1;
    }
    printf("device: %s (%s, %d CUs); GEMMs: %s; %s\n", info->name, info->arch, info->compute_units, lt.library,
           o.store ? path : o.check ? "checked against the DB's answers" : "not stored");
    printf("# one request: context tokens, then a chunk of sq new tokens (causal); times in ms, medians of %d\n",
           o.reps);
    printf("# MQA = absorb + attention (mla_decode) + output; MHA = decompress + attention (mla_prefill)\n");
    printf("%4s %6s %5s %9s %24s %9s %17s %5s%s\n", "N", "ctx", "sq", "MQA", "(absorb attn output)", "MHA",
           "(decomp attn)", "best", o.check ? "  DB's answer: form  /best  /MHA" : "");
    if (csv)
        fprintf(csv, "arch,heads,dtype,context,sq,mqa_ms,mqa_absorb_ms,mqa_attention_ms,mqa_output_ms,mha_ms,"
                     "mha_decompress_ms,mha_attention_ms,mqa_variant,mha_variant,blas\n");
    xo_run r = {.o = &o, .info = info, .setup = {.g = &g, .lt = &lt, .warmup = o.warmup, .reps = o.reps},
                .db = db, .device_id = device_id, .csv = csv, .known = known, .n_known = n_known};
    for (int h = 0; h < o.heads.n && !r.fatal; h++)
        for (int c = 0; c < o.context.n && !r.fatal; c++) {
            int sqs[XO_MAX_POINTS], wins[XO_MAX_POINTS], n = 0;
            for (int s = 0; s < o.sq.n && !r.fatal; s++)
                add_point(&r, o.heads.v[h], o.context.v[c], o.sq.v[s], sqs, wins, &n);
            /* --refine: the boundary at this context measured, not
             * interpolated (crossover_refine.h) */
            for (int next; o.refine && !r.fatal && n < XO_MAX_POINTS;) {
                if (!(next = mt_crossover_refine_next(sqs, wins, n))) break;
                add_point(&r, o.heads.v[h], o.context.v[c], next, sqs, wins, &n);
            }
        }
    if (csv) fclose(csv);
    mt_blaslt_close(&lt);
    mt_bench_gpu_close(&g);
    if (db) mt_db_close(db);
    free(known);
    return r.failures ? 1 : 0;
}
