/*
 * cmd_bench_prefill.c - `mla-tune bench --prefill`: prefill attention
 * through the runtime (mlt_prefill_run, as an engine calls it) for a grid
 * of shapes, with the matrix-unit ceiling measured in the same run.
 *
 * A shape is heads x new tokens of the call, split evenly over the
 * requests (--tokens 8192 --requests 1,8: one request of 8192, eight of
 * 1024), each after `context` keys of its own, causal or not (non-causal:
 * the context chunk alone is the keys, as in a chunked prefill's context
 * call).  Per shape: the median time of one call (events around
 * mlt_prefill_run, an L2 flush by reads before each, random data made on
 * the GPU, warm-up first; timing.h and METHOD.md), p10-p90, TFLOP/s (2 (D +
 * Dl) flops per visible (token, key) pair and head, a causal call's new
 * tokens' square counted half: tuner/prefill_key.h) and % of the matrix
 * ceiling, and the variant with the reason (DB key, nearest key, the
 * built-in rule, or --variant).  Outputs are checked for non-finite
 * values; correctness is the sweep's job (and test_gpu_prefill's).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"
#include "ceilings.h"
#include "int_list.h"
#include "commands.h"
#include "prefill_key.h"
#include "timing.h"
#include "kernels/dtype.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "runtime/api/api_internal.h"

typedef struct pf_opts {
    mt_int_list heads, tokens, requests, context;
    int masks[2], n_masks;  /* 1: causal, 0: non-causal */
    mt_dtype q_dtype, kv_dtype;
    int warmup, reps, device, ceilings, flush_write;
    const char *user_db, *system_db, *cache_dir, *variant, *csv;
} pf_opts;

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune bench --prefill [options]\n\n"
            "Times MLA prefill attention (the MHA form: qk 192 = 128 + 64, v 128) through\n"
            "the runtime for every combination of the lists below and prints time,\n"
            "TFLOP/s (a causal call's new tokens' square counted half) against the\n"
            "measured matrix-unit ceiling, and the variant used.\n\n"
            "  --heads LIST       heads (default 128)\n"
            "  --tokens LIST      new tokens of the call, split evenly over the requests\n"
            "                     (default 8192)\n"
            "  --requests LIST    requests of the call (default 1)\n"
            "  --context LIST     keys of each request before its new tokens (default 0);\n"
            "                     non-causal: the chunk of context that is the keys\n"
            "  --causal           causal over context + new tokens (the default)\n"
            "  --non-causal       every token sees the context chunk (with --causal: both)\n"
            "  --q-dtype T, --kv-dtype T   bf16|fp16|fp8e4m3 (default bf16; fp8: both, out bf16,\n"
            "                     scales 1, the time includes v's transpose into the workspace)\n"
            "  --variant SPEC     time this mla_prefill variant instead of the DB's choice\n"
            "                     (\"tile_q=64,kv_tile=64,block_threads=128,mma=1\")\n"
            "  --db FILE, --system-db FILE   tuning databases (as the runtime)\n"
            "  --warmup N         calls before timing (default 3)\n"
            "  --reps N           timed calls, median reported (default 20)\n"
            "  --flush MODE       read (the default) or write: the L2 flush before each call\n"
            "  --no-ceilings      skip the matrix-unit measurement\n"
            "  --csv FILE         also write the rows as CSV\n"
            "  --device N         GPU ordinal (default 0)\n"
            "  --cache-dir DIR    code-object cache (default as the runtime)\n");
}

typedef struct pf_call { mlt_prefill_plan *plan; const mlt_prefill_args *a; } pf_call;
static mt_status run_call(void *arg, mt_stream s) {
    pf_call *c = arg;
    (void)s; /* the default stream, as the events */
    return mlt_prefill_run(c->plan, c->a, NULL) == MLT_OK ? MT_OK
                                                          : mt_fail(MT_ERR_VENDOR, "run: %s", mlt_last_error());
}

typedef struct pf_result {
    double median_us, p10_us, p90_us, tflops;
    long non_finite;
    mlt_choice_info choice;
} pf_result;

static mt_status bench_one(mt_bench_gpu *g, const pf_opts *o, const mt_problem_key *k, pf_result *r) {
    mlt_prefill_problem p;
    mlt_prefill_problem_default(&p);
    p.n_heads = k->n_heads, p.q_dtype = (mlt_dtype)o->q_dtype, p.kv_dtype = (mlt_dtype)o->kv_dtype;
    mlt_prefill_plan *plan = NULL;
    mlt_status ps;
    if (o->variant) {
        mt_variant v;
        mt_status st = mt_variant_parse(&mt_family_mla_prefill, o->variant, &v);
        if (st != MT_OK) return st;
        ps = mt_prefill_plan_create_pinned(g->rt, &p, &v, &plan);
    } else {
        ps = mlt_prefill_plan_create(g->rt, &p, &plan);
    }
    if (ps != MLT_OK) return mt_fail(MT_ERR_INVALID_ARGUMENT, "plan: %s", mlt_last_error());
    const int causal = mt_prefill_key_causal(k), B = k->batch;
    mlt_prefill_plan_explain_call(plan, B, k->sq, causal, &r->choice);
    const size_t total_q = (size_t)B * k->sq, total_k = (size_t)B * k->seq_len, N = (size_t)k->n_heads;
    const size_t d = (size_t)k->s.d, dl = (size_t)k->s.dl, e = mt_dtype_size(o->kv_dtype);
    const size_t q_bytes = total_q * N * d * e, k_bytes = total_k * N * d * e, v_bytes = total_k * N * dl * e;
    const size_t out_bytes = total_q * N * dl * 2, lse_bytes = total_q * N * 4, cu_bytes = sizeof(int32_t) * (B + 1);
    const size_t ws_bytes = mlt_prefill_workspace_size(plan, B, k->seq_len); /* fp8: v^T */
    int32_t *cu_q = malloc(cu_bytes), *cu_k = malloc(cu_bytes);
    uint16_t *host_out = malloc(out_bytes);
    double *ms = calloc((size_t)o->reps, sizeof *ms);
    mt_status st = cu_q && cu_k && host_out && ms ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int b = 0; st == MT_OK && b <= B; b++) cu_q[b] = b * k->sq, cu_k[b] = b * k->seq_len;
    mt_devptr dq = 0, dk = 0, dv = 0, dout = 0, dlse = 0, dcq = 0, dck = 0, dws = 0;
    if (st == MT_OK && ws_bytes) st = mt_backend_mem_alloc(g->b, ws_bytes, &dws);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, q_bytes, &dq);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, k_bytes, &dk);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, v_bytes, &dv);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, out_bytes, &dout);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, lse_bytes, &dlse);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, cu_bytes, &dcq);
    if (st == MT_OK) st = mt_backend_mem_alloc(g->b, cu_bytes, &dck);
    if (st == MT_OK) st = mt_bench_gpu_fill(g, dq, q_bytes / e, o->q_dtype, 1);
    if (st == MT_OK) st = mt_bench_gpu_fill(g, dk, k_bytes / e, o->kv_dtype, 2);
    if (st == MT_OK) st = mt_bench_gpu_fill(g, dv, v_bytes / e, o->kv_dtype, 3);
    if (st == MT_OK) st = mt_backend_copy_to_device(g->b, dcq, cu_q, cu_bytes, NULL);
    if (st == MT_OK) st = mt_backend_copy_to_device(g->b, dck, cu_k, cu_bytes, NULL);
    if (st == MT_OK) st = mt_backend_mem_set(g->b, dout, 0xff, out_bytes, NULL);  /* NaN: unwritten shows */
    mlt_prefill_args a = {.batch = B, .max_seqlen_q = k->sq, .causal = causal,
                          .cu_seqlens_q = (const int32_t *)(uintptr_t)dcq,
                          .cu_seqlens_k = (const int32_t *)(uintptr_t)dck, .q = (const void *)(uintptr_t)dq,
                          .k = (const void *)(uintptr_t)dk, .v = (const void *)(uintptr_t)dv,
                          .out = (void *)(uintptr_t)dout, .lse = (float *)(uintptr_t)dlse,
                          .max_seqlen_k = k->seq_len, .workspace = (void *)(uintptr_t)dws, .workspace_size = ws_bytes};
    pf_call call = {plan, &a};
    if (st == MT_OK) st = mt_time_runs(g->b, NULL, &g->flush, o->warmup, o->reps, run_call, &call, ms);
    if (st == MT_OK) st = mt_backend_copy_to_host(g->b, host_out, dout, out_bytes, NULL);
    if (st == MT_OK) {
        r->median_us = 1e3 * mt_sorted_median(ms, o->reps);
        r->p10_us = 1e3 * mt_sorted_percentile(ms, o->reps, 10);
        r->p90_us = 1e3 * mt_sorted_percentile(ms, o->reps, 90);
        r->tflops = mt_prefill_flops(k) / (r->median_us * 1e-6) / 1e12;
        r->non_finite = mt_bench_count_non_finite(host_out, out_bytes / 2, mt_mla_prefill_out_dtype(&k->s));
    }
    free(cu_q), free(cu_k), free(host_out), free(ms);
    mt_backend_mem_free(g->b, dq), mt_backend_mem_free(g->b, dk), mt_backend_mem_free(g->b, dv);
    mt_backend_mem_free(g->b, dout), mt_backend_mem_free(g->b, dlse), mt_backend_mem_free(g->b, dcq);
    mt_backend_mem_free(g->b, dck), mt_backend_mem_free(g->b, dws);
    mlt_prefill_plan_destroy(plan);
    return st;
}

static const char *reason_text(const mlt_choice_info *c, int pinned, char *buf, size_t n) {
    if (pinned) snprintf(buf, n, "--variant");
    else snprintf(buf, n, "%s", c->why);
    return buf;
}

/* Options, checked before any GPU work: 0, or the exit status. */
static int parse_opts(int argc, char **argv, pf_opts *o) {
    int causal_flag = 0, non_causal_flag = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--prefill") == 0) continue;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(a, "--no-ceilings") == 0) { o->ceilings = 0; continue; }
        if (strcmp(a, "--causal") == 0) { causal_flag = 1; continue; }
        if (strcmp(a, "--non-causal") == 0) { non_causal_flag = 1; continue; }
        if (!v) {
            mt_cli_error("bench --prefill: %s needs a value", a);
            return 2;
        }
        i++;
        int bad = 0, timing;
        const char *want = NULL; /* what a bad value should be, for the error */
        if (strcmp(a, "--heads") == 0) bad = mt_int_list_parse(v, &o->heads, 1, 128);
        else if (strcmp(a, "--tokens") == 0) bad = mt_int_list_parse(v, &o->tokens, 1, MT_PREFILL_MAX_TOKENS);
        else if (strcmp(a, "--requests") == 0) bad = mt_int_list_parse(v, &o->requests, 1, MT_PREFILL_MAX_TOKENS);
        else if (strcmp(a, "--context") == 0) bad = mt_int_list_parse(v, &o->context, 0, MT_PREFILL_MAX_TOKENS);
        else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            mt_dtype t;
            bad = mt_dtype_parse(v, &t) != MT_OK || (t != MT_BF16 && t != MT_FP16 && t != MT_FP8_E4M3);
            *(a[2] == 'q' ? &o->q_dtype : &o->kv_dtype) = t;
        } else if (strcmp(a, "--variant") == 0) o->variant = v;
        else if (strcmp(a, "--db") == 0) o->user_db = v;
        else if (strcmp(a, "--system-db") == 0) o->system_db = v;
        else if (strcmp(a, "--cache-dir") == 0) o->cache_dir = v;
        else if (strcmp(a, "--csv") == 0) o->csv = v;
        else if ((timing = mt_timing_int_option(a, v, &o->warmup, &o->reps, &o->device, &want)) != 1) bad = timing;
        else if (strcmp(a, "--flush") == 0) {
            o->flush_write = strcmp(v, "write") == 0;
            bad = !o->flush_write && strcmp(v, "read") != 0;
        } else {
            mt_cli_error("bench --prefill: unknown option '%s' (see --prefill --help)", a);
            return 2;
        }
        if (bad) {
            mt_cli_bad_value("bench --prefill", a, v, want);
            return 2;
        }
    }
    for (int c = 1; c >= 0; c--)
        if ((c && (causal_flag || !non_causal_flag)) || (!c && non_causal_flag)) o->masks[o->n_masks++] = c;
    for (int t = 0; t < o->tokens.n; t++)
        for (int r = 0; r < o->requests.n; r++)
            if (o->tokens.v[t] % o->requests.v[r] != 0) {
                mt_cli_error("bench --prefill: --tokens %d do not split evenly over --requests %d", o->tokens.v[t],
                             o->requests.v[r]);
                return 2;
            }
    if ((o->q_dtype == MT_FP8_E4M3) != (o->kv_dtype == MT_FP8_E4M3)) {
        mt_cli_error("bench --prefill: fp8 prefill takes q and k/v both fp8e4m3 (--q-dtype and --kv-dtype)");
        return 2;
    }
    for (int m = 0; m < o->n_masks; m++)
        for (int x = 0; x < o->context.n; x++)
            if (!o->masks[m] && o->context.v[x] == 0) {
                mt_cli_error("bench --prefill: --non-causal attends to a chunk of context: --context must be >= 1");
                return 2;
            }
    if (o->variant) {
        mt_variant v;
        if (mt_variant_parse(&mt_family_mla_prefill, o->variant, &v) != MT_OK) {
            mt_cli_error("bench --prefill: --variant: %s", mt_last_error());
            return 2;
        }
    }
    return 0;
}

int cmd_bench_prefill(int argc, char **argv) {
    pf_opts o = {.heads = {{128}, 1}, .tokens = {{8192}, 1}, .requests = {{1}, 1}, .context = {{0}, 1},
                 .q_dtype = MT_BF16, .kv_dtype = MT_BF16, .warmup = 3, .reps = 20, .ceilings = 1};
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    mlt_runtime_options ro;
    mlt_runtime_options_default(&ro);
    ro.device = o.device, ro.user_db = o.user_db, ro.system_db = o.system_db, ro.cache_dir = o.cache_dir;
    ro.log_level = MLT_LOG_QUIET;
    mt_bench_gpu g = {0};
    if (mlt_runtime_create(&ro, &g.rt) != MLT_OK) {
        mt_cli_error("bench --prefill: %s", mlt_last_error());
        return 1;
    }
    mt_status st = mt_bench_gpu_open(&g, o.flush_write);
    const mt_device_info *info = mt_runtime_device(g.rt);
    FILE *csv = st == MT_OK && o.csv ? fopen(o.csv, "w") : NULL;
    if (st == MT_OK && o.csv && !csv) st = mt_fail(MT_ERR_IO, "cannot write %s", o.csv);
    if (st != MT_OK) {
        mt_cli_error("bench --prefill: %s", mt_last_error());
        mt_bench_gpu_close(&g);
        return 1;
    }
    printf("device: %s (%s, %d CUs)\n", info->name, info->arch, info->compute_units);
    double mma = 0;
    if (o.ceilings) {
        double mma_sync = mt_ceiling_mma_tflops(g.b, mt_runtime_jit(g.rt), info->arch, info->compute_units, NULL);
        double wgmma = mt_ceiling_wgmma_tflops(g.b, mt_runtime_jit(g.rt), info->arch, info->compute_units, NULL);
        mma = wgmma > mma_sync ? wgmma : mma_sync;
        const int fp8 = o.q_dtype == MT_FP8_E4M3;
        double wgmma8 = fp8 ? mt_ceiling_wgmma_fp8_tflops(g.b, mt_runtime_jit(g.rt), info->arch, info->compute_units,
                                                          NULL) : 0;
        mt_clear_error();
        if (fp8 && wgmma8 > 0)
            printf("matrix ceiling: %.0f TFLOP/s (wgmma m64n256k32 e4m3; bf16's %.0f); %%mma uses the fp8 one\n",
                   wgmma8, wgmma);
        if (fp8 && wgmma8 > 0) mma = wgmma8;
        else if (mma > 0)
            printf("matrix ceiling: %.0f TFLOP/s (%s); %%mma uses it\n", mma,
                   wgmma > mma_sync ? "wgmma m64n256k16 bf16" : "mma.sync m16n8k16 bf16");
        else printf("matrix ceiling: not measured on %s (no probe for this architecture)\n", info->arch);
    }
    if (csv)
        fprintf(csv, "arch,heads,requests,tokens_per_request,context,keys,mask,q_dtype,kv_dtype,median_us,p10_us,"
                     "p90_us,tflops,mma_tflops,variant,reason\n");
    printf("# flops: 2 (D + Dl) per visible (token, key) pair and head; causal: the new tokens' square counted half\n");
    printf("%4s %5s %7s %7s %-10s %-9s %10s %13s %8s %6s  %s\n", "N", "reqs", "tokens", "context", "mask", "q/kv",
           "time_us", "(p10-p90)", "TFLOP/s", "%mma", "variant [reason]");
    int failures = 0;
    for (int ih = 0; ih < o.heads.n; ih++)
        for (int m = 0; m < o.n_masks; m++)
            for (int it = 0; it < o.tokens.n; it++)
                for (int ir = 0; ir < o.requests.n; ir++)
                    for (int ix = 0; ix < o.context.n; ix++) {
                        int B = o.requests.v[ir], per = o.tokens.v[it] / B, ctx = o.context.v[ix];
                        mt_problem_key k;
                        mt_prefill_key_make(&k, o.heads.v[ih], 192, 128, o.q_dtype, o.kv_dtype, B, per, ctx,
                                            o.masks[m]);
                        char dt[24];
                        snprintf(dt, sizeof dt, "%s/%s", mt_dtype_name(o.q_dtype), mt_dtype_name(o.kv_dtype));
                        pf_result r;
                        memset(&r, 0, sizeof r);
                        st = bench_one(&g, &o, &k, &r);
                        if (st != MT_OK) {
                            printf("%4d %5d %7d %7d %-10s %-9s FAILED: %s\n", k.n_heads, B, per, ctx, k.lengths, dt,
                                   mt_last_error());
                            failures++;
                            if (st == MT_ERR_VENDOR) goto done; /* the context may be gone */
                            continue;
                        }
                        char why[200], spread[40], pm[16] = "-";
                        reason_text(&r.choice, o.variant != NULL, why, sizeof why);
                        if (r.non_finite) {
                            printf("%4d %5d %7d %7d %-10s %-9s NaN: %ld non-finite outputs  %s [%s]\n", k.n_heads, B,
                                   per, ctx, k.lengths, dt, r.non_finite, r.choice.variant, why);
                            failures++;
                            continue;
                        }
                        snprintf(spread, sizeof spread, "%.0f-%.0f", r.p10_us, r.p90_us);
                        if (mma > 0) snprintf(pm, sizeof pm, "%.0f%%", 100.0 * r.tflops / mma);
                        printf("%4d %5d %7d %7d %-10s %-9s %10.1f %13s %8.1f %6s  %s [%s]\n", k.n_heads, B, per, ctx,
                               k.lengths, dt, r.median_us, spread, r.tflops, pm, r.choice.variant, why);
                        fflush(stdout);
                        if (csv)
                            fprintf(csv, "%s,%d,%d,%d,%d,%d,%s,%s,%s,%.2f,%.2f,%.2f,%.2f,%.1f,\"%s\",\"%s\"\n",
                                    info->arch, k.n_heads, B, per, ctx, k.seq_len, k.lengths,
                                    mt_dtype_name(o.q_dtype), mt_dtype_name(o.kv_dtype), r.median_us, r.p10_us,
                                    r.p90_us, r.tflops, mma, r.choice.variant, why);
                    }
done:
    if (csv) fclose(csv);
    mt_bench_gpu_close(&g);
    return failures ? 1 : 0;
}
