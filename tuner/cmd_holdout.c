/*
 * cmd_holdout.c - `mla-tune holdout --db FILE`: each decode key held out
 * and looked up from the others, timed by the key's own measurements
 * (tuner/holdout.h says what that measures and what it does not).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "holdout.h"
#include "json.h"

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune holdout --db FILE [--arch ARCH] [--heads N] [--json]\n\n"
            "How well the runtime serves calls between the database's keys, from the database\n"
            "alone (no GPU): each decode key is held out in turn, the runtime's dispatcher picks\n"
            "from the other keys what a call of its batch, mean and longest request runs, and\n"
            "the held-out key's own measurements time that against the key's choice.  Three\n"
            "figures per key: the nearest key's winner as measured; as the runtime runs it\n"
            "(rescaled to the call's batch: the decode family's split count, so that batch x\n"
            "splits stays near the nearest key's); and, for scale, what the built-in rule runs\n"
            "with no database.  '-' where that variant was not timed on the key (or its latest\n"
            "run there failed).  Keys lie farther from their neighbours than most calls lie\n"
            "from a key: the figures bound what calls between keys lose.\n\n"
            "  --db FILE     the database (required; read only)\n"
            "  --arch ARCH   that architecture's keys only (default: all)\n"
            "  --heads N     that head count's keys only\n"
            "  --json        one JSON object instead of text\n");
}

static void print_ratio(double r) {
    if (isfinite(r)) printf(" %7.2fx", r);
    else printf(" %8s", "-");
}

static void print_text(const char *db, const mt_holdout_row *rows, int n) {
    printf("%s: each decode key held out and looked up from the others; times against the key's choice\n", db);
    printf("%-6s %5s %3s %4s %-8s %6s %6s %7s  %-24s %6s %8s %8s %8s  %s\n", "arch", "heads", "Sq", "page", "kv",
           "batch", "mean", "longest", "lengths -> nearest key", "dist", "measured", "runs", "rule", "rescaled");
    for (int i = 0; i < n; i++) {
        const mt_holdout_row *r = &rows[i];
        const mt_problem_key *k = &r->key.key;
        char to[64];
        if (r->nearest) snprintf(to, sizeof to, "%d x %d", r->nearest_batch, r->nearest_seq_len);
        else snprintf(to, sizeof to, "the built-in rule");
        char lens[40];
        snprintf(lens, sizeof lens, "%.12s", k->lengths);
        printf("%-6s %5d %3d %4d %-8s %6d %6d %7d  %-12s %-11s ", r->key.arch, k->n_heads, k->sq, k->s.page_size,
               mt_dtype_name(k->s.kv_dtype), k->batch, k->seq_len, k->max_len > 0 ? k->max_len : k->seq_len, lens,
               to);
        if (r->nearest) printf("%6.2f", r->distance);
        else printf("%6s", "-");
        print_ratio(mt_holdout_ratio(r->as_measured_ms, r->key.median_ms));
        print_ratio(mt_holdout_ratio(r->runs_ms, r->key.median_ms));
        print_ratio(mt_holdout_ratio(r->rule_ms, r->key.median_ms));
        printf("  %s\n", r->rescaled ? r->change : "");
    }
    mt_holdout_summary s = mt_holdout_summarise(rows, n);
    printf("%d keys held out; %d rescaled; %d with a variant not timed on its key.\n", s.keys, s.rescaled, s.untimed);
    if (s.both)
        printf("On the %d keys where both were timed, against each key's choice: the nearest winner as measured "
               "%.3fx (geometric mean; worst %.2fx), as the runtime runs it %.3fx (worst %.2fx).\n",
               s.both, exp(s.log_measured / s.both), s.worst_measured, exp(s.log_runs / s.both), s.worst_runs);
    if (s.rule_timed)
        printf("On the %d of them where the built-in rule's variant was timed too: the runtime %.3fx, the rule "
               "(what runs with no database) %.3fx.\n",
               s.rule_timed, exp(s.log_rule_runs / s.rule_timed), exp(s.log_rule / s.rule_timed));
}

static void print_json(const char *db, const mt_holdout_row *rows, int n) {
    printf("{\"db\": ");
    mt_json_string(stdout, db);
    printf(", \"keys\": [");
    for (int i = 0; i < n; i++) {
        const mt_holdout_row *r = &rows[i];
        const mt_problem_key *k = &r->key.key;
        printf("%s\n  {\"arch\": ", i ? "," : "");
        mt_json_string(stdout, r->key.arch);
        printf(", \"heads\": %d, \"sq\": %d, \"page_size\": %d, \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", "
               "\"batch\": %d, \"seq_len\": %d, \"max_len\": %d, \"lengths\": ",
               k->n_heads, k->sq, k->s.page_size, mt_dtype_name(k->s.q_dtype), mt_dtype_name(k->s.kv_dtype), k->batch,
               k->seq_len, k->max_len > 0 ? k->max_len : k->seq_len);
        mt_json_string(stdout, k->lengths);
        printf(", \"choice_ms\": ");
        mt_json_number(stdout, r->key.median_ms);
        if (r->nearest)
            printf(", \"nearest\": {\"batch\": %d, \"seq_len\": %d, \"max_len\": %d, \"distance\": %.4f}",
                   r->nearest_batch, r->nearest_seq_len, r->nearest_max_len, r->distance);
        else printf(", \"nearest\": null");
        printf(", \"as_measured\": ");
        mt_json_params(stdout, r->as_measured);
        printf(", \"as_measured_ms\": ");
        mt_json_number(stdout, r->as_measured_ms);
        printf(", \"runs\": ");
        mt_json_params(stdout, r->runs);
        printf(", \"runs_ms\": ");
        mt_json_number(stdout, r->runs_ms);
        printf(", \"rule\": ");
        if (r->rule[0]) mt_json_params(stdout, r->rule);
        else printf("null");
        printf(", \"rule_ms\": ");
        mt_json_number(stdout, r->rule_ms);
        printf(", \"rescaled\": %s}", r->rescaled ? "true" : "false");
    }
    mt_holdout_summary s = mt_holdout_summarise(rows, n);
    printf("],\n \"summary\": {\"keys\": %d, \"rescaled\": %d, \"untimed\": %d, \"both_timed\": %d, "
           "\"as_measured_geomean\": ", s.keys, s.rescaled, s.untimed, s.both);
    mt_json_number(stdout, s.both ? exp(s.log_measured / s.both) : NAN);
    printf(", \"as_measured_worst\": ");
    mt_json_number(stdout, s.both ? s.worst_measured : NAN);
    printf(", \"runs_geomean\": ");
    mt_json_number(stdout, s.both ? exp(s.log_runs / s.both) : NAN);
    printf(", \"runs_worst\": ");
    mt_json_number(stdout, s.both ? s.worst_runs : NAN);
    printf(", \"rule_timed\": %d, \"rule_geomean\": ", s.rule_timed);
    mt_json_number(stdout, s.rule_timed ? exp(s.log_rule / s.rule_timed) : NAN);
    printf(", \"runs_geomean_where_rule_timed\": ");
    mt_json_number(stdout, s.rule_timed ? exp(s.log_rule_runs / s.rule_timed) : NAN);
    printf("}}\n");
}

int cmd_holdout(int argc, char **argv) {
    const char *db_path = NULL, *arch = NULL;
    int heads = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) json = 1;
        else if (i + 1 < argc && strcmp(a, "--db") == 0) db_path = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--arch") == 0) arch = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--heads") == 0) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || v < 1 || v > 128) {
                mt_cli_error("holdout: --heads takes 1..128, not '%s'", argv[i]);
                return 2;
            }
            heads = (int)v;
        } else {
            mt_cli_error("holdout: unknown or incomplete argument '%s' (mla-tune holdout --help)", a);
            return 2;
        }
    }
    if (!db_path) {
        mt_cli_error("holdout: --db FILE is required (mla-tune holdout --help)");
        return 2;
    }
    if (access(db_path, F_OK) != 0) {
        mt_cli_error("holdout: %s: no such file", db_path);
        return 1;
    }
    mt_db *db = NULL;
    mt_holdout_row *rows = NULL;
    int n = 0;
    mt_status st = mt_db_open(db_path, MT_DB_READ, &db);
    if (st == MT_OK) st = mt_holdout(db, arch, heads, &rows, &n);
    mt_db_close(db);
    if (st != MT_OK) {
        mt_cli_error("holdout: %s", mt_last_error());
        return 1;
    }
    if (n == 0) {
        char of_arch[48] = "", of_heads[32] = "";
        if (arch) snprintf(of_arch, sizeof of_arch, " for %s", arch);
        if (heads) snprintf(of_heads, sizeof of_heads, " of %d heads", heads);
        mt_cli_error("holdout: %s has no decode key%s%s to hold out", db_path, of_heads, of_arch);
        free(rows);
        return 1;
    }
    if (json) print_json(db_path, rows, n);
    else print_text(db_path, rows, n);
    free(rows);
    return 0;
}
