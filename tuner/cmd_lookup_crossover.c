/*
 * cmd_lookup_crossover.c - `mla-tune lookup --crossover`: which prefill
 * form (MQA, absorbed, or MHA, decompressed) a chunk of sq new tokens
 * after `context` tokens takes, and why, by the runtime's own rule
 * (runtime/api/crossover_pick.h) over the same DBs' crossover points, user
 * over system; needs no GPU when --arch is given.
 *
 * Beside the answer it shows what the answer stands on: both forms' times
 * at sq, the measured points it interpolated between, the boundary at that
 * context, and every point measured there (sq, both times, the winner), so
 * that a person sees the curve and not only one reading of it.  With no
 * point for the arch and dtypes, the flop rule's numbers instead.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "crossover_json.h"
#include "db/crossover.h"
#include "json.h"
#include "lookup_notes.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/crossover_pick.h"

static void usage(FILE *to) {
    fprintf(to, "usage: mla-tune lookup --crossover --heads N --sq S --context C [options]\n\n"
                "Which prefill form a chunk of S new tokens after C tokens of context takes\n"
                "(mlt_prefill_choose_form): MQA (absorbed: attention over the latent cache) or\n"
                "MHA (decompressed: k and v per head), from the crossover points `mla-tune\n"
                "crossover` measured, else by the flop count.\n\n"
                "  --heads N          heads, 1..128 (required)\n"
                "  --sq S             new tokens of the chunk, 1..%d (required)\n"
                "  --context C        tokens before the chunk, >= 0 (required)\n"
                "  --q-dtype T        bf16|fp16 (default bf16)\n"
                "  --kv-dtype T       the latent cache's: bf16|fp16|fp8e4m3|fp8e4m3fnuz (default bf16)\n"
                "  --arch ARCH        target (default: the local GPU's)\n"
                "  --cus N            compute units (default: the device's, or 132)\n"
                "  --json             one JSON object instead of text\n"
                "  --db FILE, --system-db FILE   as the runtime (default paths otherwise)\n",
            MT_DECODE_MAX_SQ);
}

static const char *form_name(mlt_prefill_form f) { return f == MLT_FORM_MHA ? "MHA" : "MQA"; }

/* The points of the curve the pick used (its device, heads, context and
 * dtypes), in sq order (the loader's order); *n of them in out (malloc'd). */
static int curve_points(const mt_crossover_point *all, int n, const mt_crossover_query *q, const mlt_form_info *f,
                        const mt_crossover_point ***out) {
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    int m = 0;
    for (int i = 0; *out && f->measured && i < n; i++) {
        const mt_crossover_point *p = &all[i];
        if (strcmp(p->arch, q->arch) == 0 && p->q_dtype == q->q_dtype && p->kv_dtype == q->kv_dtype &&
            p->compute_units == f->key_compute_units && p->n_heads == f->key_n_heads && p->context == f->key_context)
            (*out)[m++] = p;
    }
    return m;
}

static void print_json(const mt_crossover_query *q, const mlt_form_info *f, const mt_crossover_point *const *curve,
                       int m, int n_read) {
    double mqa_flops, mha_flops;
    mt_crossover_flops(q->n_heads, q->sq, q->context, &mqa_flops, &mha_flops);
    printf("{\"arch\": ");
    mt_json_string(stdout, q->arch);
    printf(", \"compute_units\": %d, \"problem\": {\"heads\": %d, \"sq\": %d, \"context\": %d, \"q_dtype\": \"%s\", "
           "\"kv_dtype\": \"%s\"}, \"form\": \"%s\", \"measured\": %s, \"source\": ",
           q->compute_units, q->n_heads, q->sq, q->context, mt_dtype_name(q->q_dtype), mt_dtype_name(q->kv_dtype),
           form_name(f->form), f->measured ? "true" : "false");
    mt_json_string(stdout, f->source);
    printf(", \"why\": ");
    mt_json_string(stdout, f->why);
    printf(", \"mqa_ms\": ");
    if (f->measured) mt_json_number(stdout, f->mqa_ms);
    else printf("null");
    printf(", \"mha_ms\": ");
    if (f->measured) mt_json_number(stdout, f->mha_ms);
    else printf("null");
    printf(", \"boundary_sq\": ");
    if (f->boundary_sq > 0) printf("%d", f->boundary_sq);
    else printf("null");
    printf(", \"flops\": {\"mqa\": ");
    mt_json_number(stdout, mqa_flops);
    printf(", \"mha\": ");
    mt_json_number(stdout, mha_flops);
    printf("}, \"key\": ");
    if (f->measured)
        printf("{\"compute_units\": %d, \"heads\": %d, \"context\": %d, \"lo_sq\": %d, \"hi_sq\": %d}",
               f->key_compute_units, f->key_n_heads, f->key_context, f->lo_sq, f->hi_sq);
    else
        printf("null");
    printf(", \"points_used\": [");
    int used = 0;
    for (int i = 0; i < m; i++)
        if (curve[i]->sq == f->lo_sq || curve[i]->sq == f->hi_sq) {
            printf("%s", used++ ? ", " : "");
            mt_crossover_json(curve[i]);
        }
    printf("], \"points_at_context\": [");
    for (int i = 0; i < m; i++) {
        printf("%s", i ? ", " : "");
        mt_crossover_json(curve[i]);
    }
    printf("], \"points_read\": %d}\n", n_read);
}

static void print_text(const mt_crossover_query *q, const mlt_form_info *f, const mt_crossover_point *const *curve,
                       int m, int n_read) {
    printf("crossover on %s (%d CUs): %d heads, sq %d after context %d, %s/%s\n", q->arch, q->compute_units,
           q->n_heads, q->sq, q->context, mt_dtype_name(q->q_dtype), mt_dtype_name(q->kv_dtype));
    if (!f->measured) {
        double mqa, mha;
        mt_crossover_flops(q->n_heads, q->sq, q->context, &mqa, &mha);
        printf("  form     %s by the flop rule (%d crossover points read for %s; none for these dtypes)\n",
               form_name(f->form), n_read, q->arch);
        printf("  flops    MQA %.2f GFLOP, MHA %.2f GFLOP at sq %d\n", mqa / 1e9, mha / 1e9, q->sq);
        if (f->boundary_sq > 0)
            printf("  boundary MHA from sq %d at context %d (by the flops)\n", f->boundary_sq, q->context);
        else
            printf("  boundary MQA at every sq up to %d at context %d (by the flops)\n", MT_DECODE_MAX_SQ, q->context);
        printf("  why      %s\n", f->why);
        printf("  measure  `mla-tune crossover` on this GPU stores the points the runtime then uses\n");
        return;
    }
    printf("  form     %s (measured, %s DB)\n", form_name(f->form), f->source);
    printf("  times    MQA %.4f ms, MHA %.4f ms at sq %d\n", f->mqa_ms, f->mha_ms, q->sq);
    printf("  points   %d CUs, %d heads, context %d:", f->key_compute_units, f->key_n_heads, f->key_context);
    for (int i = 0; i < m; i++)
        if (curve[i]->sq == f->lo_sq || curve[i]->sq == f->hi_sq)
            printf(" sq %d (MQA %.4f, MHA %.4f ms, %s)", curve[i]->sq, curve[i]->mqa_ms, curve[i]->mha_ms,
                   curve[i]->source);
    printf("\n");
    if (f->boundary_sq > 0) printf("  boundary MHA from sq %d at context %d\n", f->boundary_sq, f->key_context);
    else printf("  boundary MQA at every sq at context %d\n", f->key_context);
    printf("  why      %s\n", f->why);
    printf("  measured at context %d (%d CUs, %d heads, %s/%s):\n", f->key_context, f->key_compute_units,
           f->key_n_heads, mt_dtype_name(q->q_dtype), mt_dtype_name(q->kv_dtype));
    printf("  %6s %10s %10s  %-6s %s\n", "sq", "MQA ms", "MHA ms", "winner", "db");
    for (int i = 0; i < m; i++)
        printf("  %6d %10.4f %10.4f  %-6s %s\n", curve[i]->sq, curve[i]->mqa_ms, curve[i]->mha_ms,
               mt_crossover_winner(curve[i]), curve[i]->source);
}

/* A number option's value in lo..hi, else a message naming both. */
static int parse_int(const char *option, const char *text, long lo, long hi, int *out) {
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!end || end == text || *end || v < lo || v > hi) {
        mt_cli_error("lookup --crossover: %s wants an integer %ld..%ld, got '%s'", option, lo, hi, text);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int cmd_lookup_crossover(int argc, char **argv) {
    int heads = 0, sq = 0, context = -1, cus = 0, json = 0;
    mt_dtype qt = MT_BF16, kvt = MT_BF16;
    const char *arch = NULL, *user = NULL, *sys = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--crossover") == 0) continue;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (!v) {
            mt_cli_error("lookup --crossover: %s needs a value", a);
            return 2;
        }
        i++;
        int ok = 1;
        if (strcmp(a, "--heads") == 0) ok = parse_int(a, v, 1, 128, &heads);
        else if (strcmp(a, "--sq") == 0) ok = parse_int(a, v, 1, MT_DECODE_MAX_SQ, &sq);
        else if (strcmp(a, "--context") == 0) ok = parse_int(a, v, 0, 0x7fffffff, &context);
        else if (strcmp(a, "--cus") == 0) ok = parse_int(a, v, 1, 1000000, &cus);
        else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            mt_dtype t;
            if (mt_dtype_parse(v, &t) != MT_OK) {
                mt_cli_error("lookup --crossover: %s", mt_last_error());
                return 2;
            }
            if (a[2] == 'q' && t != MT_BF16 && t != MT_FP16) {
                mt_cli_error("lookup --crossover: --q-dtype is bf16 or fp16 (q and out), got '%s'", v);
                return 2;
            }
            *(a[2] == 'q' ? &qt : &kvt) = t;
        } else if (strcmp(a, "--arch") == 0) arch = v;
        else if (strcmp(a, "--db") == 0) user = v;
        else if (strcmp(a, "--system-db") == 0) sys = v;
        else {
            mt_cli_error("lookup --crossover: unknown option '%s' (see lookup --crossover --help)", a);
            return 2;
        }
        if (!ok) return 2;
    }
    if (heads == 0 || sq == 0 || context < 0) {
        mt_cli_error("lookup --crossover: --heads, --sq and --context are required (missing:%s%s%s)",
                     heads ? "" : " --heads", sq ? "" : " --sq", context >= 0 ? "" : " --context");
        return 2;
    }
    mt_target t;
    int rc = mt_lookup_target("lookup --crossover", arch, &t, &cus, NULL);
    if (rc != 0) return rc;
    mt_lookup_dbs dbs;
    mt_lookup_dbs_find(user, sys, &dbs);
    mt_crossover_point *points = NULL;
    int n = 0;
    if (mt_db_load_crossover_overlay(dbs.user, dbs.user_required, dbs.system, dbs.system_required, t.arch, &points,
                                     &n) != MT_OK) {
        mt_cli_error("lookup --crossover: %s", mt_last_error());
        return 1;
    }
    mt_crossover_query q = {.arch = t.arch, .compute_units = cus, .n_heads = heads, .q_dtype = qt, .kv_dtype = kvt,
                            .sq = sq, .context = context};
    mlt_form_info f;
    mt_crossover_pick(points, n, &q, &f);
    const mt_crossover_point **curve = NULL;
    int m = curve_points(points, n, &q, &f, &curve);
    if (!curve) {
        mt_cli_error("lookup --crossover: out of host memory");
        free(points);
        return 1;
    }
    if (json) print_json(&q, &f, curve, m, n);
    else print_text(&q, &f, curve, m, n);
    free(curve);
    free(points);
    return 0;
}
