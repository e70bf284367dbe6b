/*
 * cmd_db.c - the database commands: show, export, import, merge.
 *
 *   mla-tune show [--db FILE] [--system-db FILE] [--arch ARCH] [--json] [--stale | --crossover]
 *   mla-tune export --arch ARCH -o FILE [--db FILE]
 *   mla-tune import FILE [--db FILE]
 *   mla-tune merge A B [C ...] -o OUT
 *
 * Files that are read are never written; a file that is to be created by
 * export or merge must not exist yet, and is removed again if anything
 * fails (nothing to copy included), so a failed command leaves nothing
 * behind.  -o has the long form --output everywhere.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "commands.h"
#include "crossover_json.h"
#include "db/crossover.h"
#include "db/db.h"
#include "heuristic_gain.h"
#include "json.h"
#include "key_work.h"
#include "prefill_key.h"
#include "runtime/api/validators.h"
#include "stale.h"

/* Stored text for the terminal: control bytes (an escape sequence in a
 * hostile file would drive the terminal) shown as \xNN.  The arch, family
 * and parameters are validated on load; the reason is free text. */
static const char *printable(const char *s, char *buf, size_t size) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 < size; p++) {
        if (*p < 0x20 || *p == 0x7f) n += (size_t)snprintf(buf + n, size - n, "\\x%02x", *p);
        else buf[n++] = (char)*p;
    }
    buf[n] = '\0';
    return buf;
}

/* The files `show` read, opened again (once, when first needed) for the
 * measurements behind each choice's gain over the built-in heuristic
 * (heuristic_gain.h): the gain is derived, not stored. */
typedef struct gain_source {
    const char *path;
    mt_db *db;
    int tried;
} gain_source;

static void choice_gain(gain_source *from, const mt_choice *c, mt_gain *g) {
    if (!from->tried) {
        from->tried = 1;
        if (mt_db_open(from->path, MT_DB_READ, &from->db) != MT_OK) from->db = NULL;
    }
    if (!from->db || mt_gain_over_heuristic(from->db, c, g) != MT_OK) {
        *g = (mt_gain){.gain = NAN, .gain_low = NAN, .gain_high = NAN, .heuristic_ms = NAN,
                       .heuristic_spread_ms = NAN, .winner_spread_ms = NAN,
                       .missing = "its measurements could not be read"};
        mt_clear_error();
    }
}

/* The gain fields of one element of `show --json`: null where not known,
 * with the reason. */
static void json_gain(const mt_gain *g) {
    printf(", \"heuristic\": ");
    if (g->heuristic[0]) mt_json_params(stdout, g->heuristic);
    else printf("null");
    const double figures[] = {g->heuristic_ms, g->heuristic_spread_ms, g->winner_spread_ms, g->gain, g->gain_low,
                              g->gain_high};
    static const char *const names[] = {"heuristic_ms", "heuristic_spread_ms", "spread_ms", "gain_over_heuristic",
                                        "gain_low", "gain_high"};
    for (int i = 0; i < 6; i++) {
        printf(", \"%s\": ", names[i]);
        mt_json_number(stdout, figures[i]);
    }
    printf(", \"gain_missing\": ");
    if (g->missing[0]) mt_json_string(stdout, g->missing);
    else printf("null");
}

/* show's rows for the choices of one kind: decode's columns, or prefill's
 * (mt_prefill_key_columns, the mask among them). */
static void show_table(const mt_choice *c, const mt_choice_source *src, int n, gain_source *from, int prefill,
                       mt_gain_notes *notes) {
    char columns[96];
    if (prefill) {
        mt_prefill_key_columns(columns, sizeof columns);
        printf("%-7s %-10s %s %-13s %10s %-19s  %s\n", "source", "arch", columns, "q/kv", "ms", "vs heuristic",
               "variant (reason)");
    } else {
        printf("%-7s %-10s %-5s %-3s %-4s %-6s %-7s %-7s %-13s %10s %-19s  %s\n", "source", "arch", "heads", "Sq",
               "page", "batch", "len", "max", "q/kv", "ms", "vs heuristic", "variant (reason) [lengths]");
    }
    for (int i = 0; i < n; i++) {
        if (mt_key_is_prefill(&c[i].key) != prefill) continue;
        char dt[32], gain[48], reason[300];
        snprintf(dt, sizeof dt, "%s/%s", mt_dtype_name(c[i].key.s.q_dtype), mt_dtype_name(c[i].key.s.kv_dtype));
        mt_gain g;
        choice_gain(&from[src[i]], &c[i], &g);
        mt_gain_format(&g, gain, sizeof gain);
        mt_gain_note(notes, &g);
        if (prefill) {
            mt_prefill_key_cells(&c[i].key, columns, sizeof columns);
            printf("%-7s %-10s %s %-13s %10.4f %-19s  %s:%s (%s)\n", src[i] == MT_FROM_USER_DB ? "user" : "system",
                   c[i].arch, columns, dt, c[i].median_ms, gain, c[i].family, c[i].params,
                   printable(c[i].reason, reason, sizeof reason));
            continue;
        }
        char lengths[64] = "";
        if (strcmp(c[i].key.lengths, "uniform") != 0) snprintf(lengths, sizeof lengths, " [%s]", c[i].key.lengths);
        printf("%-7s %-10s %-5d %-3d %-4d %-6d %-7d %-7d %-13s %10.4f %-19s  %s:%s (%s)%s\n",
               src[i] == MT_FROM_USER_DB ? "user" : "system", c[i].arch, c[i].key.n_heads, c[i].key.sq,
               c[i].key.s.page_size, c[i].key.batch, c[i].key.seq_len, c[i].key.max_len, dt, c[i].median_ms, gain,
               c[i].family, c[i].params, printable(c[i].reason, reason, sizeof reason), lengths);
    }
}

/* The crossover points (db/crossover.h), user over system, as a table
 * (after the choices' tables in the text form), or alone as a JSON array
 * (--crossover --json); *n gets how many.  1 when they cannot be read (the
 * message said). */
static int show_crossover(const char *u, int u_required, const char *s, int s_required, const char *arch, int json,
                          int *n) {
    mt_crossover_point *p = NULL;
    *n = 0;
    if (mt_db_load_crossover_overlay(u, u_required, s, s_required, arch, &p, n) != MT_OK) {
        mt_cli_error("show: %s", mt_last_error());
        return 1;
    }
    if (json) {
        printf("[");
        for (int i = 0; i < *n; i++) {
            printf("%s\n  ", i ? "," : "");
            mt_crossover_json(&p[i]);
        }
        printf("%s]\n", *n ? "\n" : "");
    } else if (*n) {
        printf("\ncrossover points (MQA: absorbed, MHA: decompressed; `mla-tune lookup --crossover` answers from "
               "them)\n%-7s %-10s %5s %5s %-13s %8s %5s %10s %10s %-6s  %s\n", "source", "arch", "CUs", "heads",
               "q/kv", "context", "sq", "MQA ms", "MHA ms", "winner",
               "MQA absorb/attention/output, MHA decompress/attention ms");
        for (int i = 0; i < *n; i++) {
            char dt[32];
            snprintf(dt, sizeof dt, "%s/%s", mt_dtype_name(p[i].q_dtype), mt_dtype_name(p[i].kv_dtype));
            printf("%-7s %-10s %5d %5d %-13s %8d %5d %10.4f %10.4f %-6s  %.4f/%.4f/%.4f, %.4f/%.4f\n", p[i].source,
                   p[i].arch, p[i].compute_units, p[i].n_heads, dt, p[i].context, p[i].sq, p[i].mqa_ms, p[i].mha_ms,
                   mt_crossover_winner(&p[i]), p[i].mqa_absorb_ms, p[i].mqa_attention_ms, p[i].mqa_output_ms,
                   p[i].mha_decompress_ms, p[i].mha_attention_ms);
        }
        printf("%d crossover points\n", *n);
    }
    free(p);
    return 0;
}

int cmd_show(int argc, char **argv) {
    const char *user = NULL, *sys = NULL, *arch = NULL;
    int json = 0, stale = 0, crossover = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune show [--db FILE] [--system-db FILE] [--arch ARCH] [--json] [--stale | --crossover]\n\n"
                   "Prints the chosen variant per (architecture, problem key): the user DB over the system DB,\n"
                   "with its gain over the built-in heuristic (what the runtime runs untuned, measured in\n"
                   "the same sweep) and the range its measured spreads allow.\n"
                   "--stale lists instead the choices the runtime ignores: measured from other kernel sources\n"
                   "or with another compiler than this build's (validators; docs/tuning.md).\n"
                   "The text form lists the crossover points (MQA or MHA per prefill chunk, `mla-tune\n"
                   "crossover`) after the choices; --crossover lists them alone (with --json: an array).\n");
            return 0;
        } else if (strcmp(argv[i], "--stale") == 0) stale = 1;
        else if (strcmp(argv[i], "--crossover") == 0) crossover = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--db") == 0) user = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--system-db") == 0) sys = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--arch") == 0) arch = argv[++i];
        else {
            mt_cli_error("show: unexpected argument '%s'", argv[i]);
            return 2;
        }
    }
    mt_target target;
    if (arch && mt_target_for_arch(arch, &target) != MT_OK) {  /* a typo is not "0 choices" */
        mt_cli_error("show: %s", mt_last_error());
        return 2;
    }
    char user_default[1024], sys_default[1024];
    mt_db_default_paths(user_default, sizeof user_default, sys_default, sizeof sys_default);
    const char *u = user ? user : user_default, *s = sys ? sys : sys_default;
    if (!user && !sys && access(u, F_OK) != 0 && access(s, F_OK) != 0) {
        mt_cli_error("show: no tuning database: neither %s nor %s exists (give --db FILE)", u, s);
        return 1;
    }
    mt_choice *c = NULL;
    mt_choice_source *src = NULL;
    int n = 0;
    int env_user = 0, env_sys = 0;  /* a path someone set must exist */
    mt_db_env_required(&env_user, &env_sys);
    if (stale && crossover) {
        mt_cli_error("show: --stale and --crossover are two lists: ask for one");
        return 2;
    }
    if (stale) return mt_show_stale(u, user != NULL || env_user, s, sys != NULL || env_sys, arch, json);
    int n_points = 0;
    if (crossover) {
        int rc = show_crossover(u, user != NULL || env_user, s, sys != NULL || env_sys, arch, json, &n_points);
        if (rc == 0 && !json && n_points == 0) printf("0 crossover points (user DB %s, system DB %s)\n", u, s);
        return rc;
    }
    if (mt_db_load_overlay(u, user != NULL || env_user, s, sys != NULL || env_sys, arch, &c, &src, &n) != MT_OK) {
        mt_cli_error("show: %s", mt_last_error());
        return 1;
    }
    gain_source from[2] = {{.path = s}, {.path = u}}; /* by mt_choice_source */
    if (json) {
        printf("[");
        for (int i = 0; i < n; i++) {
            const mt_choice *ci = &c[i];
            printf("%s\n  {\"arch\": ", i ? "," : "");
            mt_json_string(stdout, ci->arch);
            printf(", \"kind\": ");
            mt_json_string(stdout, ci->key.kind);
            printf(", \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"heads\": %d, \"sq\": %d, \"d\": %d, \"dl\": %d, "
                   "\"page_size\": %d, \"batch\": %d, \"seq_len\": %d, \"max_len\": %d, \"lengths\": ",
                   mt_dtype_name(ci->key.s.q_dtype), mt_dtype_name(ci->key.s.kv_dtype), ci->key.n_heads, ci->key.sq,
                   ci->key.s.d, ci->key.s.dl, ci->key.s.page_size, ci->key.batch, ci->key.seq_len, ci->key.max_len);
            mt_json_string(stdout, ci->key.lengths);
            printf(", \"family\": ");
            mt_json_string(stdout, ci->family);
            printf(", \"params\": ");
            mt_json_params(stdout, ci->params);
            printf(", \"median_ms\": ");
            mt_json_number(stdout, ci->median_ms);
            printf(", \"default_ms\": ");
            if (ci->default_ms > 0) mt_json_number(stdout, ci->default_ms);
            else printf("null");
            mt_gain g;
            choice_gain(&from[src[i]], ci, &g);
            json_gain(&g);
            printf(", \"reason\": ");
            mt_json_string(stdout, ci->reason);
            printf(", \"source\": \"%s\"}", src[i] == MT_FROM_USER_DB ? "user" : "system");
        }
        printf("%s]\n", n ? "\n" : "");
    } else {
        int n_prefill = 0;
        for (int i = 0; i < n; i++) n_prefill += mt_key_is_prefill(&c[i].key);
        mt_gain_notes notes = {0};
        /* decode's table as it always was (also for no choices), then
         * prefill keys in their own columns */
        if (n_prefill < n || n_prefill == 0) show_table(c, src, n, from, 0, &notes);
        if (n_prefill) {
            if (n_prefill < n) printf("\n");
            show_table(c, src, n, from, 1, &notes);
            printf("%s\n", mt_prefill_key_columns_note());
        }
        printf("vs heuristic: the built-in heuristic's median (what the runtime runs untuned) over the winner's, "
               "both measured in the sweep; in brackets, with each median moved by half its p90-p10 spread\n");
        char why[700];
        mt_gain_notes_text(&notes, why, sizeof why);
        if (notes.unknown) printf("'-' for %d choice(s): %s\n", notes.unknown, why);
        /* the last line stays the choices' count (scripts read it) */
        if (show_crossover(u, user != NULL || env_user, s, sys != NULL || env_sys, arch, 0, &n_points) != 0) {
            mt_db_close(from[0].db);
            mt_db_close(from[1].db);
            free(c);
            free(src);
            return 1;
        }
        printf("%d choices (user DB %s, system DB %s)\n", n, u, s);
    }
    mt_db_close(from[0].db);
    mt_db_close(from[1].db);
    free(c);
    free(src);
    return 0;
}

/* Appends the architectures `db` has measurements or crossover points for
 * to `list` ("sm_90, gfx942"), each once. */
static void list_archs(mt_db *db, char *list, size_t size) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(mt_db_handle(db), "SELECT d.arch FROM measurements m JOIN devices d ON d.id = m.device_id "
                           "UNION SELECT d.arch FROM crossover x JOIN devices d ON d.id = x.device_id ORDER BY 1",
                           -1, &q, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(q, 0);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "%s", a ? a : "?");
        if (strstr(list, quoted)) continue;
        size_t n = strlen(list);
        snprintf(list + n, size - n, "%s%s", n ? ", " : "", quoted);
    }
    sqlite3_finalize(q);
}

/* " and 4 crossover points" when there are any (files without them are
 * described as they always were). */
static const char *points_text(int points, char *buf, size_t size) {
    buf[0] = '\0';
    if (points > 0) snprintf(buf, size, " and %d crossover point%s", points, points == 1 ? "" : "s");
    return buf;
}

/* Copies `arch` (NULL = all) of each source into `out`, which must not
 * exist; removes `out` again on failure. */
static int copy_to_new(const char *const *sources, int n_sources, const char *arch, const char *out, const char *cmd) {
    if (access(out, F_OK) == 0) {
        mt_cli_error("%s: %s already exists; choose a new file (or use import to add to a database)", cmd, out);
        return 1;
    }
    mt_db **src = calloc((size_t)n_sources, sizeof *src);
    if (!src) {
        mt_cli_error("%s: out of memory", cmd);
        return 1;
    }
    for (int i = 0; i < n_sources; i++)
        if (mt_db_open(sources[i], MT_DB_READ, &src[i]) != MT_OK) {
            mt_cli_error("%s: %s", cmd, mt_last_error());
            for (int j = 0; j < i; j++) mt_db_close(src[j]);
            free(src);
            return 1;
        }
    mt_db *dst = NULL;
    int rc = 0, total = 0, total_points = 0;
    char points[64];
    if (mt_db_open(out, MT_DB_WRITE, &dst) != MT_OK) {
        mt_cli_error("%s: %s", cmd, mt_last_error());
        rc = 1;
    }
    for (int i = 0; i < n_sources && rc == 0; i++) {
        mt_copy_counts copied;
        if (mt_db_copy_counted(src[i], dst, arch, &copied) != MT_OK) {
            mt_cli_error("%s: %s", cmd, mt_last_error());
            rc = 1;
            break;  /* nothing is said about a file that was not copied */
        }
        printf("%s: %d measurements%s from %s\n", cmd, copied.measurements,
               points_text(copied.crossover_points, points, sizeof points), sources[i]);
        total += copied.measurements;
        total_points += copied.crossover_points;
    }
    /* an empty file would install as a system DB that silently answers
     * nothing: say what the sources do hold instead */
    if (rc == 0 && total == 0 && total_points == 0) {
        char held[512] = "";
        for (int i = 0; i < n_sources; i++) list_archs(src[i], held, sizeof held);
        mt_cli_error("%s: nothing to write: %s would hold no measurements%s%s and no crossover points (%s%s)", cmd,
                     out, arch ? " for " : "", arch ? arch : "",
                     held[0] ? (n_sources > 1 ? "the inputs hold measurements or crossover points for: "
                                              : "it holds measurements or crossover points for: ")
                             : "the input holds no measurements or crossover points at all", held);
        rc = 1;
    }
    /* choices from the rows this build's kernels would run (validators.h) */
    if (rc == 0 && mt_validator_recompute_choices(dst) != MT_OK) {
        mt_cli_error("%s: %s", cmd, mt_last_error());
        rc = 1;
    }
    /* the new file is read where it is installed, often read-only */
    if (rc == 0 && mt_db_make_shippable(dst) != MT_OK) {
        mt_cli_error("%s: %s", cmd, mt_last_error());
        rc = 1;
    }
    mt_db_close(dst);
    for (int i = 0; i < n_sources; i++) mt_db_close(src[i]);
    free(src);
    if (rc != 0) {
        char path[1100];
        unlink(out);
        snprintf(path, sizeof path, "%s-wal", out);
        unlink(path);
        snprintf(path, sizeof path, "%s-shm", out);
        unlink(path);
    } else {
        printf("%s: wrote %s (%d measurements%s%s%s)\n", cmd, out, total,
               points_text(total_points, points, sizeof points), arch ? " for " : "", arch ? arch : "");
    }
    return rc;
}

int cmd_export(int argc, char **argv) {
    const char *arch = NULL, *out = NULL, *user = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune export --arch ARCH -o|--output FILE [--db FILE]\n\n"
                   "Writes a new database holding what the user DB measured on ARCH (measurements and\n"
                   "crossover points), ready to ship.  Fails, writing nothing, when the user DB holds\n"
                   "neither for ARCH.\n");
            return 0;
        } else if (i + 1 < argc && strcmp(argv[i], "--arch") == 0) arch = argv[++i];
        else if (i + 1 < argc && (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0)) out = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--db") == 0) user = argv[++i];
        else {
            mt_cli_error("export: unexpected argument '%s'", argv[i]);
            return 2;
        }
    }
    if (!arch || !out) {
        mt_cli_error("export: --arch and -o are required");
        return 2;
    }
    mt_target t;
    if (mt_target_for_arch(arch, &t) != MT_OK) {
        mt_cli_error("export: %s", mt_last_error());
        return 2;
    }
    char user_default[1024];
    mt_db_default_paths(user_default, sizeof user_default, NULL, 0);
    const char *src = user ? user : user_default;
    return copy_to_new(&src, 1, arch, out, "export");
}

int cmd_import(int argc, char **argv) {
    const char *file = NULL, *user = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune import FILE [--db FILE]\n\n"
                   "Adds FILE's measurements to the user DB (no duplicates; choices recomputed), and its\n"
                   "crossover points (where both hold a point, the newer measurement stays).\n");
            return 0;
        } else if (i + 1 < argc && strcmp(argv[i], "--db") == 0) user = argv[++i];
        else if (!file && argv[i][0] != '-') file = argv[i];
        else {
            mt_cli_error("import: unexpected argument '%s'", argv[i]);
            return 2;
        }
    }
    if (!file) {
        mt_cli_error("import: which file?");
        return 2;
    }
    char user_default[1024];
    mt_db_default_paths(user_default, sizeof user_default, NULL, 0);
    const char *dst_path = user ? user : user_default;
    mt_db *src = NULL, *dst = NULL;
    if (mt_db_open(file, MT_DB_READ, &src) != MT_OK) {
        mt_cli_error("import: %s", mt_last_error());
        return 1;
    }
    mt_copy_counts copied;
    char points[64];
    int rc = 0;
    if (mt_db_open(dst_path, MT_DB_WRITE, &dst) != MT_OK || mt_db_copy_counted(src, dst, NULL, &copied) != MT_OK ||
        mt_validator_recompute_choices(dst) != MT_OK) {
        mt_cli_error("import: %s", mt_last_error());
        rc = 1;
    } else {
        printf("import: %d new measurements%s from %s into %s\n", copied.measurements,
               points_text(copied.crossover_points, points, sizeof points), file, dst_path);
    }
    mt_db_close(src);
    mt_db_close(dst);
    return rc;
}

int cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    const char **in = calloc((size_t)argc, sizeof *in);
    int n_in = 0;
    if (!in) return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune merge A B [C ...] -o|--output OUT\n\n"
                   "Writes a new database OUT with every measurement of the inputs (the shards of a\n"
                   "sweep, several hosts' results), each once, provenance kept; choices recomputed\n"
                   "from the union.  Crossover points too: of one point in two inputs, the newer.\n");
            free(in);
            return 0;
        } else if (i + 1 < argc && (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0)) out = argv[++i];
        else if (argv[i][0] != '-') in[n_in++] = argv[i];
        else {
            mt_cli_error("merge: unexpected argument '%s'", argv[i]);
            free(in);
            return 2;
        }
    }
    if (n_in < 2 || !out) {
        mt_cli_error("merge: usage: mla-tune merge A B [C ...] -o OUT (two or more inputs, %d given%s)", n_in,
                     out ? "" : ", and no -o");
        free(in);
        return 2;
    }
    int rc = copy_to_new(in, n_in, NULL, out, "merge");
    free(in);
    return rc;
}
