/*
 * cmd_lookup_prefill.c - `mla-tune lookup --prefill`: what a prefill plan
 * would run for a call, and why (a matching or nearest prefill key of the
 * DBs, or the family's built-in rule), through the plans' own dispatch
 * (runtime/api/prefill_dispatch.h); needs no GPU when --arch is given.
 * As the runtime, it leaves out entries measured for other code.
 *
 * What decode's lookup says beside the answer, in prefill's words
 * (lookup_notes.h): the measured key (requests, new tokens, keys, its
 * context, the mask) with its time and TFLOP/s, a nearest key too far to
 * say much (--max-distance), and when the rule runs, which part of the
 * call no prefill key matches (dtypes, dims, heads, mask); --json.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "lookup_notes.h"
#include "prefill_key.h"
#include "runtime/api/prefill_dispatch.h"
#include "runtime/api/validators.h"

static void usage(FILE *to) {
    fprintf(to, "usage: mla-tune lookup --prefill --tokens T [--requests R] [options]\n\n"
                "What a prefill plan (mlt_prefill_plan_create) runs for a call, and why.\n\n"
                "  --tokens T         the call's new tokens, split evenly over the requests (required)\n"
                "  --requests R       requests of the call (default 1)\n"
                "  --heads N          heads, 1..128 (default 128)\n"
                "  --causal           (the default) or --non-causal (a context chunk)\n"
                "  --q-dtype T, --kv-dtype T   bf16|fp16 (default bf16)\n"
                "  --d N, --dl N      qk and v head dims (default 192, 128)\n"
                "  --arch ARCH        target (default: the local GPU's)\n"
                "  --cus N            compute units (default: the device's, or 132)\n"
                "  --max-distance X   warn when the nearest measured key is farther (default %.1f:\n"
                "                     the sum of |log2| ratios of requests and new tokens)\n"
                "  --json             one JSON object instead of text\n"
                "  --db FILE, --system-db FILE   as the runtime (default paths otherwise)\n\n"
                "A call's keys (its context) are on the GPU only: of the keys that differ only in\n"
                "their context, the one with the least context stands for them (docs/prefill.md).\n",
            MT_LOOKUP_MAX_DISTANCE);
}

/* The measured key behind a table entry, as a prefill key. */
static void entry_key(const mt_prefill_dispatch *d, int causal, const mt_dispatch_entry *e, const mt_problem_key *shape,
                      mt_problem_key *k) {
    int keys = mt_prefill_dispatch_entry_keys(d, causal, e);
    mt_prefill_key_make(k, shape->n_heads, shape->s.d, shape->s.dl, shape->s.q_dtype, shape->s.kv_dtype, e->batch,
                        e->seq_len, causal ? keys - e->seq_len : keys, causal);
}

static void print_json(const mt_target *t, const mt_problem_key *call, int tokens, const mt_prefill_dispatch *d,
                       const mt_dispatch_result *r, const char *name, const char *why, const char *missing,
                       double max_distance, int far, int n, int cus, int stale) {
    int causal = mt_prefill_key_causal(call);
    printf("{\"arch\": ");
    mt_json_string(stdout, t->arch);
    printf(", \"problem\": {\"kind\": \"mla_prefill\", \"heads\": %d, \"requests\": %d, \"new_tokens\": %d, "
           "\"new_tokens_per_request\": %d, \"causal\": %s, \"d\": %d, \"dl\": %d, \"q_dtype\": \"%s\", "
           "\"kv_dtype\": \"%s\"}",
           call->n_heads, call->batch, tokens, call->sq, causal ? "true" : "false", call->s.d, call->s.dl,
           mt_dtype_name(call->s.q_dtype), mt_dtype_name(call->s.kv_dtype));
    printf(", \"family\": \"mla_prefill\", \"params\": ");
    mt_json_params(stdout, name);
    printf(", \"source\": \"%s\", \"why\": ", !r->entry ? "heuristic" : r->exact ? "exact" : "nearest");
    mt_json_string(stdout, why);
    printf(", \"missing\": ");
    if (missing[0]) mt_json_string(stdout, missing);
    else printf("null");
    printf(", \"distance\": ");
    if (r->entry) mt_json_number(stdout, r->distance);
    else printf("null");
    printf(", \"max_distance\": ");
    mt_json_number(stdout, max_distance);
    printf(", \"far\": %s, \"nearest_key\": ", far ? "true" : "false");
    if (r->entry) {
        mt_problem_key k;
        entry_key(d, causal, r->entry, call, &k);
        printf("{\"requests\": %d, \"new_tokens_per_request\": %d, \"keys_per_request\": %d, \"context\": %d, "
               "\"mask\": \"%s\", "
               "\"db\": \"%s\", \"median_ms\": ",
               k.batch, k.sq, k.seq_len, mt_prefill_key_context(&k), k.lengths,
               r->entry->source == MT_FROM_USER_DB ? "user" : "system");
        mt_json_number(stdout, r->entry->median_ms);
        printf(", \"tflops\": ");
        mt_json_number(stdout, mt_prefill_flops(&k) / (r->entry->median_ms * 1e-3) / 1e12);
        printf("}");
    } else {
        printf("null");
    }
    printf(", \"entries_read\": %d, \"compute_units\": %d, \"stale_ignored\": %d}\n", n, cus, stale);
}

static void print_text(const mt_target *t, const mt_problem_key *call, const mt_prefill_dispatch *d,
                       const mt_dispatch_result *r, const char *name, const char *why, const char *missing,
                       double max_distance, int far, int n, int cus, int stale) {
    int causal = mt_prefill_key_causal(call);
    printf("prefill on %s (%d CUs): %d heads, %d requests x %d new tokens, %s, %s/%s (qk %d, v %d)\n", t->arch, cus,
           call->n_heads, call->batch, call->sq, causal ? "causal" : "non-causal", mt_dtype_name(call->s.q_dtype),
           mt_dtype_name(call->s.kv_dtype), call->s.d, call->s.dl);
    printf("  runs   mla_prefill:%s\n", name);
    if (!r->entry) {
        printf("  why    %s (%d entries read for %s; %d compute units)\n         %s\n", why, n, t->arch, cus, missing);
    } else {
        mt_problem_key k;
        entry_key(d, causal, r->entry, call, &k);
        printf("  why    %s\n", why);
        printf("  key    %d requests x %d new tokens over %d keys (%s %d), %s: measured %.4f ms, %.1f TFLOP/s\n",
               k.batch, k.sq, k.seq_len, causal ? "context" : "a chunk of", mt_prefill_key_context(&k), k.lengths,
               r->entry->median_ms, mt_prefill_flops(&k) / (r->entry->median_ms * 1e-3) / 1e12);
    }
    if (stale)
        printf("  STALE  %d entries for %s ignored: measured for other code (kernel sources or compiler);\n"
               "         `mla-tune show --stale` lists them\n", stale, t->arch);
    if (far)
        printf("  FAR    the nearest measured key (%d requests x %d new tokens) is at distance %.2f, beyond %.2f:\n"
               "         its winner was timed on a very different amount of work; sweep this shape to know\n",
               r->entry->batch, r->entry->seq_len, r->distance, max_distance);
}

int cmd_lookup_prefill(int argc, char **argv) {
    int heads = 128, tokens = 0, requests = 1, causal = 1, cus = 0, d = 192, dl = 128, json = 0;
    double max_distance = MT_LOOKUP_MAX_DISTANCE;
    mt_dtype qt = MT_BF16, kvt = MT_BF16;
    const char *arch = NULL, *user = NULL, *sys = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--prefill") == 0) continue;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--causal") == 0 || strcmp(a, "--non-causal") == 0) {
            causal = a[2] == 'c';
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (!v) {
            mt_cli_error("lookup --prefill: %s needs a value", a);
            return 2;
        }
        i++;
        char *end = NULL;
        long n = strtol(v, &end, 10);
        int number = end && end != v && !*end && n >= 1 && n <= MT_PREFILL_MAX_TOKENS, bad = 0;
        if (strcmp(a, "--heads") == 0) bad = !number || n > 128, heads = (int)n;
        else if (strcmp(a, "--tokens") == 0) bad = !number, tokens = (int)n;
        else if (strcmp(a, "--requests") == 0) bad = !number || n > 65535, requests = (int)n;
        else if (strcmp(a, "--cus") == 0) bad = !number, cus = (int)n;
        else if (strcmp(a, "--d") == 0) bad = !number || n > 512, d = (int)n;
        else if (strcmp(a, "--dl") == 0) bad = !number || n > 512, dl = (int)n;
        else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            mt_dtype t;
            bad = mt_dtype_parse(v, &t) != MT_OK || (t != MT_BF16 && t != MT_FP16);
            *(a[2] == 'q' ? &qt : &kvt) = t;
        } else if (strcmp(a, "--max-distance") == 0) {
            if (mt_lookup_parse_max_distance("lookup --prefill", v, &max_distance) != MT_OK) {
                mt_cli_error("%s", mt_last_error());
                return 2;
            }
        } else if (strcmp(a, "--arch") == 0) arch = v;
        else if (strcmp(a, "--db") == 0) user = v;
        else if (strcmp(a, "--system-db") == 0) sys = v;
        else {
            mt_cli_error("lookup --prefill: unknown option '%s' (see --prefill --help)", a);
            return 2;
        }
        if (bad) {
            mt_cli_error("lookup --prefill: bad value '%s' for %s", v, a);
            return 2;
        }
    }
    if (tokens == 0 || tokens % requests != 0) {
        mt_cli_error("lookup --prefill: %s", tokens ? "--tokens do not split evenly over --requests"
                                                    : "--tokens (the call's new tokens) is required");
        return 2;
    }
    mt_target t;
    int rc = mt_lookup_target("lookup --prefill", arch, &t, &cus, NULL);
    if (rc != 0) return rc;
    mt_lookup_dbs dbs;
    mt_lookup_dbs_find(user, sys, &dbs);
    mt_validator *validator = calloc(1, sizeof *validator);
    if (!validator) {
        mt_cli_error("lookup --prefill: out of host memory");
        return 1;
    }
    mt_validator_init(validator);
    mt_validator_learn_compiler(validator, t.arch);
    mt_choice *choices = NULL;
    mt_choice_source *sources = NULL;
    int n = 0;
    /* the call as a key (no context: the host does not know it), and the
     * plan's shape, as mlt_prefill_plan_create makes it */
    mt_problem_key call, shape;
    mt_prefill_key_make(&call, heads, d, dl, qt, kvt, requests, tokens / requests, 0, causal);
    shape = call;
    shape.sq = 1, shape.batch = shape.seq_len = shape.max_len = 0, shape.lengths[0] = '\0';
    mt_prefill_dispatch pd;
    if (mt_db_load_overlay_kept(dbs.user, dbs.user_required, dbs.system, dbs.system_required, t.arch,
                                mt_validator_keep, validator, &choices, &sources, &n) != MT_OK ||
        mt_prefill_dispatch_build(choices, sources, n, &shape, &t, cus, &pd) != MT_OK) {
        mt_cli_error("lookup --prefill: %s", mt_last_error());
        rc = 1;
    } else {
        mt_dispatch_result r;
        mt_prefill_dispatch_lookup(&pd, requests, tokens / requests, causal, &r);
        char name[256], why[300], missing[400] = "";
        mt_variant_format(&pd.table[causal].variants[r.variant], name, sizeof name);
        mt_prefill_dispatch_explain(&pd, causal, &r, why, sizeof why);
        static const mt_key_field prefill_fields[] = {MT_FIELD_DTYPES, MT_FIELD_DIMS, MT_FIELD_HEADS, MT_FIELD_MASK};
        if (!r.entry) mt_lookup_missing(choices, n, &call, prefill_fields, 4, missing, sizeof missing);
        int far = r.entry && !r.exact && r.distance > max_distance;
        int stale = validator->stale_sources + validator->stale_compiler;
        if (json)
            print_json(&t, &call, tokens, &pd, &r, name, why, missing, max_distance, far, n, cus, stale);
        else
            print_text(&t, &call, &pd, &r, name, why, missing, max_distance, far, n, cus, stale);
        mt_prefill_dispatch_free(&pd);
    }
    free(choices), free(sources), free(validator);
    return rc;
}
