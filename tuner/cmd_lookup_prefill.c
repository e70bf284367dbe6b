/*
 * cmd_lookup_prefill.c - `mla-tune lookup --prefill`: what a prefill plan
 * would run for a call, and why (a matching or nearest prefill key of the
 * DBs, or the family's built-in rule), through the plans' own dispatch
 * (runtime/api/prefill_dispatch.h); needs no GPU when --arch is given.
 * As the runtime, it leaves out entries measured for other code.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "runtime/api/prefill_dispatch.h"
#include "runtime/api/validators.h"

static void usage(FILE *to) {
    fprintf(to, "usage: mla-tune lookup --prefill --heads N --tokens T --requests R [options]\n\n"
                "What a prefill plan (mlt_prefill_plan_create) runs for a call, and why.\n\n"
                "  --heads N          heads (default 128)\n"
                "  --tokens T         the call's new tokens, split evenly over the requests\n"
                "  --requests R       requests of the call (default 1)\n"
                "  --causal           (the default) or --non-causal\n"
                "  --q-dtype T, --kv-dtype T   bf16|fp16 (default bf16)\n"
                "  --arch ARCH        target (default: the local GPU's)\n"
                "  --cus N            compute units (default: the device's, or 132)\n"
                "  --db FILE, --system-db FILE   as the runtime (default paths otherwise)\n");
}

int cmd_lookup_prefill(int argc, char **argv) {
    int heads = 128, tokens = 0, requests = 1, causal = 1, cus = 0;
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
        if (!v) {
            mt_cli_error("lookup --prefill: %s needs a value", a);
            return 2;
        }
        i++;
        char *end = NULL;
        long n = strtol(v, &end, 10);
        int number = end && !*end && n >= 1 && n <= MT_PREFILL_MAX_TOKENS, bad = 0;
        if (strcmp(a, "--heads") == 0) bad = !number || n > 128, heads = (int)n;
        else if (strcmp(a, "--tokens") == 0) bad = !number, tokens = (int)n;
        else if (strcmp(a, "--requests") == 0) bad = !number || n > 65535, requests = (int)n;
        else if (strcmp(a, "--cus") == 0) bad = !number, cus = (int)n;
        else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            mt_dtype t;
            bad = mt_dtype_parse(v, &t) != MT_OK || (t != MT_BF16 && t != MT_FP16);
            *(a[2] == 'q' ? &qt : &kvt) = t;
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
    if (!arch) {
        mt_backend *b = NULL;
        mt_device_info info = {0};
        if (mt_backend_discover(&b) != MT_OK || mt_backend_device_info(b, 0, &info) != MT_OK) {
            mt_cli_error("lookup --prefill: give --arch (no GPU to ask: %s)", mt_last_error());
            mt_backend_close(b);
            return 1;
        }
        mt_backend_close(b);
        mt_target_from_device(&info, &t);
        if (!cus) cus = info.compute_units;
    } else if (mt_target_for_arch(arch, &t) != MT_OK) {
        mt_cli_error("lookup --prefill: %s", mt_last_error());
        return 2;
    }
    if (!cus) cus = 132;
    char user_default[1024], sys_default[1024];
    mt_db_default_paths(user_default, sizeof user_default, sys_default, sizeof sys_default);
    int env_user = 0, env_sys = 0;
    mt_db_env_required(&env_user, &env_sys);
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
    mt_problem_key shape = {.kind = "mla_prefill", .s = {.d = 192, .dl = 128, .page_size = 1, .q_dtype = qt,
                                                         .kv_dtype = kvt},
                            .n_heads = heads, .sq = 1};
    mt_prefill_dispatch d;
    int rc = 0;
    if (mt_db_load_overlay_kept(user ? user : user_default, user != NULL || env_user, sys ? sys : sys_default,
                                sys != NULL || env_sys, t.arch, mt_validator_keep, validator, &choices, &sources,
                                &n) != MT_OK ||
        mt_prefill_dispatch_build(choices, sources, n, &shape, &t, cus, &d) != MT_OK) {
        mt_cli_error("lookup --prefill: %s", mt_last_error());
        rc = 1;
    } else {
        mt_dispatch_result r;
        mt_prefill_dispatch_lookup(&d, requests, tokens / requests, causal, &r);
        char name[256], why[300];
        mt_variant_format(&d.table[causal].variants[r.variant], name, sizeof name);
        mt_prefill_dispatch_explain(&d, causal, &r, why, sizeof why);
        printf("prefill on %s (%d CUs): %d heads, %d requests x %d new tokens, %s, %s/%s (qk 192, v 128)\n", t.arch,
               cus, heads, requests, tokens / requests, causal ? "causal" : "non-causal", mt_dtype_name(qt),
               mt_dtype_name(kvt));
        printf("  runs   mla_prefill:%s\n  why    %s\n", name, why);
        int stale = validator->stale_sources + validator->stale_compiler;
        if (stale) printf("  note   %d DB entries measured for other code were left out (mla-tune show --stale)\n",
                          stale);
        mt_prefill_dispatch_free(&d);
    }
    free(choices), free(sources), free(validator);
    return rc;
}
