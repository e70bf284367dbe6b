/*
 * cmd_lookup.c - `mla-tune lookup`: what the runtime would run for a
 * problem, and why (exact key, nearest key with its distance, or the
 * built-in heuristic).  Reads the same databases as the runtime, through the
 * same dispatcher; needs no GPU when --arch is given.
 *
 * Like the runtime, it leaves out entries measured for other code (the
 * validators, runtime/api/validators.h) and says how many.
 *
 * `lookup --prefill` (cmd_lookup_prefill.c) and `lookup --crossover`
 * (cmd_lookup_crossover.c) answer their own questions with their own
 * options.
 *
 * Two things the dispatcher does silently are said here: a nearest key far
 * from the problem (distance above --max-distance: the variant was timed
 * on a very different amount of work), and, when the heuristic runs, which
 * part of the problem no entry matches (page size, head count, ...).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kernels/mla_decode/mla_decode.h"
#include "json.h"
#include "lookup_notes.h"
#include "runtime/api/dispatch.h"
#include "runtime/api/validators.h"

static void usage(FILE *to) {
    fprintf(to, "usage: mla-tune lookup --heads N --batch B --seq-len L|unknown [options]\n\n"
                "  --seq-len L        mean keys per request; 'unknown': lengths unknown on the host\n"
                "                     (as under CUDA-graph capture: a length-aware variant runs)\n"
                "  --max-len M        the longest request (default: the mean, a uniform batch)\n"
                "  --arch ARCH        target (default: the local GPU's)\n"
                "  --sq N             query tokens per request (default 1)\n"
                "  --q-dtype T        bf16|fp16 (default bf16)\n"
                "  --kv-dtype T       bf16|fp16|fp8e4m3|fp8e4m3fnuz (default bf16)\n"
                "  --page-size N      (default 64)\n"
                "  --d N, --dl N      (default 576, 512)\n"
                "  --cus N            compute units for the heuristic (default: the device's, or 132)\n"
                "  --memory-gbps X    the device's memory bandwidth, GB/s, which the rescaling of a\n"
                "                     key's splits to the batch weighs (default: the local GPU's\n"
                "                     peak; with --arch, not known)\n"
                "  --max-batch N      also what a plan of this max_batch compiles and the device\n"
                "                     workspace it asks for (mlt_plan_workspace_size)\n"
                "  --max-distance X   warn when the nearest measured key is farther (default %.1f:\n"
                "                     the sum of |log2| ratios of batch, mean and spread)\n"
                "  --json             one JSON object instead of text\n"
                "  --db FILE, --system-db FILE   as the runtime (default paths otherwise)\n"
                "  --prefill          a prefill call instead (mla-tune lookup --prefill --help)\n"
                "  --crossover        which prefill form, MQA or MHA (mla-tune lookup --crossover --help)\n",
            MT_LOOKUP_MAX_DISTANCE);
}

int cmd_lookup(int argc, char **argv) {
    int prefill = 0, crossover = 0;
    for (int i = 1; i < argc; i++)
        prefill |= strcmp(argv[i], "--prefill") == 0, crossover |= strcmp(argv[i], "--crossover") == 0;
    if (prefill && crossover) {
        mt_cli_error("lookup: --prefill (which kernel a prefill call runs) and --crossover (which form a chunk "
                     "takes) are two questions: ask one");
        return 2;
    }
    if (prefill) return cmd_lookup_prefill(argc, argv);
    if (crossover) return cmd_lookup_crossover(argc, argv);
    mt_problem_key k = {.kind = "mla_decode", .s = {.d = 576, .dl = 512, .page_size = 64}, .sq = 1};
    const char *arch = NULL, *user = NULL, *sys = NULL;
    int batch = 0, len = -2, max_len = 0, cus = 0, json = 0, max_batch = 0;
    double max_distance = MT_LOOKUP_MAX_DISTANCE, memory_gbps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (!v) {
            mt_cli_error("lookup: %s needs a value", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--arch") == 0) arch = v;
        else if (strcmp(a, "--seq-len") == 0 && strcmp(v, "unknown") == 0) len = -1;
        else if (strcmp(a, "--db") == 0) user = v;
        else if (strcmp(a, "--system-db") == 0) sys = v;
        else if (strcmp(a, "--memory-gbps") == 0) {
            char *end = NULL;
            memory_gbps = strtod(v, &end);
            if (!end || end == v || *end || !(memory_gbps > 0 && memory_gbps < 1e6)) {
                mt_cli_error("lookup: --memory-gbps wants a bandwidth in GB/s (above 0), got '%s'", v);
                return 2;
            }
        } else if (strcmp(a, "--max-distance") == 0) {
            if (mt_lookup_parse_max_distance("lookup", v, &max_distance) != MT_OK) {
                mt_cli_error("%s", mt_last_error());
                return 2;
            }
        }
        else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            if (mt_dtype_parse(v, a[2] == 'q' ? &k.s.q_dtype : &k.s.kv_dtype) != MT_OK) {
                mt_cli_error("lookup: %s", mt_last_error());
                return 2;
            }
        } else {
            char *end = NULL;
            long n = strtol(v, &end, 10);
            if (!end || *end || n < 0 || n > 10000000) {
                mt_cli_error("lookup: %s wants a non-negative integer, got '%s'", a, v);
                return 2;
            }
            if (strcmp(a, "--heads") == 0) k.n_heads = (int)n;
            else if (strcmp(a, "--sq") == 0) k.sq = (int)n;
            else if (strcmp(a, "--batch") == 0) batch = (int)n;
            else if (strcmp(a, "--seq-len") == 0) len = (int)n;
            else if (strcmp(a, "--max-len") == 0) max_len = (int)n;
            else if (strcmp(a, "--page-size") == 0) k.s.page_size = (int)n;
            else if (strcmp(a, "--d") == 0) k.s.d = (int)n;
            else if (strcmp(a, "--dl") == 0) k.s.dl = (int)n;
            else if (strcmp(a, "--cus") == 0) cus = (int)n;
            else if (strcmp(a, "--max-batch") == 0) max_batch = (int)n;
            else {
                mt_cli_error("lookup: unknown option '%s'", a);
                usage(stderr);
                return 2;
            }
        }
    }
    if (k.n_heads < 1 || k.n_heads > 128 || k.sq < 1 || k.sq > MT_DECODE_MAX_SQ || batch < 1 || len < -1) {
        mt_cli_error("lookup: --heads (1..128), --batch (>= 1) and --seq-len (>= 0 or 'unknown') are required; "
                     "--sq is 1..%d", MT_DECODE_MAX_SQ);
        return 2;
    }
    if (max_batch && (max_batch < batch || max_batch > MT_DISPATCH_MAX_BATCH)) {
        mt_cli_error("lookup: --max-batch %d must be at least --batch (%d) and at most %d", max_batch, batch,
                     MT_DISPATCH_MAX_BATCH);
        return 2;
    }
    if (max_len > 0 && max_len < len) {
        mt_cli_error("lookup: --max-len %d is below the mean (--seq-len %d)", max_len, len);
        return 2;
    }
    mt_target t;
    int rc = mt_lookup_target("lookup", arch, &t, &cus, &memory_gbps);
    if (rc != 0) return rc;
    mt_lookup_dbs dbs;
    mt_lookup_dbs_find(user, sys, &dbs);
    mt_choice *choices = NULL;
    mt_choice_source *sources = NULL;
    int n = 0;
    mt_dispatch_table table;
    /* as the runtime: what was measured for other code is left out */
    mt_validator *validator = calloc(1, sizeof *validator);
    if (!validator) {
        mt_cli_error("lookup: out of host memory");
        return 1;
    }
    mt_validator_init(validator);
    mt_validator_learn_compiler(validator, t.arch);
    if (mt_db_load_overlay_kept(dbs.user, dbs.user_required, dbs.system, dbs.system_required, t.arch,
                                mt_validator_keep, validator, &choices, &sources, &n) != MT_OK ||
        mt_dispatch_build_for(choices, sources, n, &k, &t, &(mt_dispatch_device){cus, memory_gbps},
                              max_batch ? max_batch : batch, MT_DISPATCH_RESCALED, &table) != MT_OK) {
        mt_cli_error("lookup: %s", mt_last_error());
        free(choices);
        free(sources);
        free(validator);
        return 1;
    }
    int stale = validator->stale_sources + validator->stale_compiler;
    mt_dispatch_result r;
    mt_dispatch_lookup(&table, batch, len, max_len, &r);
    char name[256], why[256], lens[64], missing[400] = "";
    mt_variant_format(&table.variants[r.variant], name, sizeof name);
    mt_dispatch_explain(&table, &r, why, sizeof why);
    static const mt_key_field decode_fields[] = {MT_FIELD_DTYPES, MT_FIELD_DIMS, MT_FIELD_PAGE_SIZE, MT_FIELD_HEADS,
                                                 MT_FIELD_SQ};
    if (!r.entry) mt_lookup_missing(choices, n, &k, decode_fields, 5, missing, sizeof missing);
    int far = r.entry && !r.exact && !r.unknown_lengths && r.distance > max_distance;
    const char *source = r.unknown_lengths ? "unknown-lengths" : !r.entry ? "heuristic" : r.exact ? "exact" : "nearest";
    if (json) {
        printf("{\"arch\": ");
        mt_json_string(stdout, t.arch);
        printf(", \"problem\": {\"kind\": \"%s\", \"heads\": %d, \"sq\": %d, \"d\": %d, \"dl\": %d, "
               "\"page_size\": %d, \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"batch\": %d, ",
               k.kind, k.n_heads, k.sq, k.s.d, k.s.dl, k.s.page_size, mt_dtype_name(k.s.q_dtype),
               mt_dtype_name(k.s.kv_dtype), batch);
        if (len < 0) printf("\"seq_len\": null, \"max_len\": null}");
        else printf("\"seq_len\": %d, \"max_len\": %d}", len, max_len > 0 ? max_len : len);
        printf(", \"family\": ");
        mt_json_string(stdout, table.variants[r.variant].family->name);
        printf(", \"params\": ");
        mt_json_params(stdout, name);
        printf(", \"source\": \"%s\", \"why\": ", source);
        mt_json_string(stdout, why);
        printf(", \"missing\": ");
        if (missing[0]) mt_json_string(stdout, missing);
        else printf("null");
        printf(", \"distance\": ");
        if (r.entry) mt_json_number(stdout, r.distance);
        else printf("null");
        printf(", \"max_distance\": ");
        mt_json_number(stdout, max_distance);
        printf(", \"far\": %s, \"nearest_key\": ", far ? "true" : "false");
        if (r.entry) {
            printf("{\"batch\": %d, \"seq_len\": %d, \"max_len\": %d, \"lengths\": ", r.entry->batch,
                   r.entry->seq_len, r.entry->max_len);
            mt_json_string(stdout, r.entry->lengths);
            printf(", \"db\": \"%s\", \"median_ms\": ", r.entry->source == MT_FROM_USER_DB ? "user" : "system");
            mt_json_number(stdout, r.entry->median_ms);
            printf("}");
        } else {
            printf("null");
        }
        printf(", \"entries_read\": %d, \"compute_units\": %d, \"memory_gbps\": ", n, cus);
        if (memory_gbps > 0) printf("%.0f", memory_gbps);
        else printf("null");
        printf(", \"key_compute_units\": ");
        if (table.key_compute_units > 0) printf("%d", table.key_compute_units);
        else printf("null");
        printf(", \"key_device\": ");
        if (table.key_device[0]) mt_json_string(stdout, table.key_device);
        else printf("null");
        printf(", \"stale_ignored\": %d, \"plan\": ", stale);
        if (max_batch)
            printf("{\"max_batch\": %d, \"variants\": %d, \"workspace_bytes\": %zu}}\n", max_batch, table.n_variants,
                   mt_dispatch_workspace_bytes(&table));
        else printf("null}\n");
    } else {
        if (len < 0) snprintf(lens, sizeof lens, "lengths unknown");
        else snprintf(lens, sizeof lens, "seq_len=%d max_len=%d", len, max_len > 0 ? max_len : len);
        printf("%s N=%d Sq=%d D=%d/%d page=%d %s/%s batch=%d %s\n", t.arch, k.n_heads, k.sq, k.s.d, k.s.dl,
               k.s.page_size, mt_dtype_name(k.s.q_dtype), mt_dtype_name(k.s.kv_dtype), batch, lens);
        printf("  runs   %s:%s\n", table.variants[r.variant].family->name, name);
        if (!r.entry)
            printf("  why    %s (%d entries read for %s; %d compute units)\n         %s\n", why, n, t.arch, cus,
                   missing);
        else
            printf("  why    %s, measured %.4f ms\n", why, r.entry->median_ms);
        if (r.entry && table.key_device[0]) printf("  on     %s (%d CUs)\n", table.key_device, table.key_compute_units);
        if (r.entry && !r.exact) { /* what a key's winner was rescaled for */
            if (memory_gbps > 0) printf("  for    %d CUs, %.0f GB/s of memory bandwidth\n", cus, memory_gbps);
            else printf("  for    %d CUs, memory bandwidth not known (--memory-gbps)\n", cus);
        }
        if (max_batch)
            printf("  plan   max_batch %d: %d variants compiled, %.1f MiB of device workspace\n", max_batch,
                   table.n_variants, mt_dispatch_workspace_bytes(&table) / 1048576.0);
        if (stale)
            printf("  STALE  %d entries for %s ignored: measured for other code (kernel sources or compiler);\n"
                   "         `mla-tune show --stale` lists them\n", stale, t.arch);
        if (far)
            printf("  FAR    the nearest measured key (batch %d, mean %d, longest %d) is at distance %.2f, beyond %.2f:\n"
                   "         its winner was timed on a very different amount of work; sweep this shape to know\n",
                   r.entry->batch, r.entry->seq_len, r.entry->max_len, r.distance, max_distance);
    }
    mt_dispatch_free(&table);
    free(choices);
    free(sources);
    free(validator);
    return 0;
}
