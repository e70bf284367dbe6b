/*
 * report.c - `mla-tune report --db FILE -o DIR [--arch ARCH] [--key N]
 *            [--matrix-tflops X]`: what a sweep found, as pages a person
 * reads.
 *
 * Writes into DIR:
 *   report.md     the summary in Markdown (paste into a pull request)
 *   report.html   one self-contained page: the same summary rendered to HTML
 *                 by cmark-gfm, the plots inlined as SVG, the style inline;
 *                 no scripts and no network fetches
 *   *.svg         each plot on its own
 * Library choice: Markdown -> HTML goes through cmark-gfm (the GitHub
 * CommonMark implementation, Debian's libcmark-gfm), which renders and
 * escapes tables exactly as a pull request shows them; the plots are plain
 * SVG written here (svg.c), which needs no library for heat maps and bar
 * charts and keeps the page dependency-free.
 *
 * Figures: GB/s counts the bytes a decode must move (KV read once, q read,
 * out and lse written); TFLOPS counts N * Sq * (2D + 2Dl) flops per key
 * token (docs/DESIGN.md, "The computation"); both from key_work.h.
 * Prefill keys (kind mla_prefill) have their own table in their own words
 * (requests, new tokens, context, keys, mask; TFLOPS as mt_prefill_flops
 * counts them) and stay out of decode's heat maps, bandwidth chart and
 * lookup-distance maps, whose axes are decode's.  The copy ceiling is the one
 * the sweep measured on the device (ceilings table); the matrix ceiling is
 * --matrix-tflops, else the "matrix_tflops" ceiling the sweep stored (sweeps
 * since issue 26), else left out.  Error bars are the measurement's run-to-run spread (p90 -
 * p10 of the timed runs, stored per measurement) centred on its median.
 *
 * The crossover points (which prefill form a chunk takes, db/crossover.h)
 * have their own section, written by report_crossover.c; a file that holds
 * only those gets the devices and that section.
 *
 * Layout: the page fits any width: tables scroll inside their own box and
 * every SVG scales down through its viewBox (tests/report-screenshot.sh
 * checks it in headless Chromium at 1000 and 1600 px).
 */
#define _GNU_SOURCE
#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "db/db.h"
#include "heuristic_gain.h"
#include "key_rows.h"
#include "key_work.h"
#include "prefill_key.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/dispatch.h"
#include "report_internal.h"
#include "svg.h"

/* Every plot, by file name, to inline where the Markdown refers to it
 * (report_internal.h: the sections in files of their own keep theirs too). */
typedef mt_report_plots plot_list;

void mt_report_keep_plot(mt_report_plots *pl, const char *name, const mt_text *svg) {
    if (pl->n == (int)(sizeof pl->svg / sizeof pl->svg[0]) || !svg->buf) return;
    snprintf(pl->name[pl->n], sizeof pl->name[0], "%s", name);
    pl->svg[pl->n++] = strdup(svg->buf);
}

static void keep_plot(plot_list *pl, const char *name, const mt_text *svg) { mt_report_keep_plot(pl, name, svg); }

static int same_group(const mt_choice *a, const mt_choice *b) {
    return strcmp(a->arch, b->arch) == 0 && strcmp(a->key.kind, b->key.kind) == 0 && a->key.n_heads == b->key.n_heads && a->key.sq == b->key.sq &&
           a->key.s.page_size == b->key.s.page_size && a->key.s.q_dtype == b->key.s.q_dtype &&
           a->key.s.kv_dtype == b->key.s.kv_dtype && a->key.s.d == b->key.s.d;
}

/* Text from the database as one Markdown table cell, nothing more: every
 * ASCII punctuation character backslash-escaped (CommonMark allows it for
 * all of them) and control characters dropped, so a device named
 * "![x](https://host/img.png)" is shown as those characters instead of
 * becoming an image the page fetches (issue 25), and a '|' cannot open a
 * column.  Rotates over four buffers: up to four per printf. */
static const char *md_cell(const void *text) {
    static char bufs[4][1024];
    static int next;
    char *out = bufs[next++ % 4];
    size_t n = 0;
    for (const unsigned char *p = text ? text : (const unsigned char *)""; *p && n + 3 < sizeof bufs[0]; p++) {
        if (*p < 0x20 || *p == 0x7f) continue;
        if (*p < 0x80 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", *p)) out[n++] = '\\';
        out[n++] = (char)*p;
    }
    out[n] = '\0';
    return out;
}

const char *mt_report_md_cell(const void *text) { return md_cell(text); }

static int param_of(const mt_choice *c, const char *name) {
    const mt_family *f = mt_family_find(c->family);
    mt_variant v;
    if (!f || mt_variant_parse(f, c->params, &v) != MT_OK) return -1;
    int i = mt_family_param_index(f, name);
    return i >= 0 ? v.values[i] : -1;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static int unique_sorted(int *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i]) v[m++] = v[i];
    return m;
}

mt_status mt_report_write_file(const char *dir, const char *name, const char *text, size_t len) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return mt_fail(MT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t w = fwrite(text, 1, len, f);
    int bad = fclose(f) != 0 || w != len;
    return bad ? mt_fail(MT_ERR_IO, "cannot write %s", path) : MT_OK;
}

static mt_status write_file(const char *dir, const char *name, const char *text, size_t len) {
    return mt_report_write_file(dir, name, text, len);
}

static char *markdown_to_html(const char *md) {
    cmark_gfm_core_extensions_ensure_registered();
    cmark_parser *p = cmark_parser_new(CMARK_OPT_DEFAULT);
    cmark_syntax_extension *table = cmark_find_syntax_extension("table");
    if (table) cmark_parser_attach_syntax_extension(p, table);
    cmark_parser_feed(p, md, strlen(md));
    cmark_node *doc = cmark_parser_finish(p);
    char *html = cmark_render_html(doc, CMARK_OPT_DEFAULT, cmark_parser_get_syntax_extensions(p));
    cmark_node_free(doc);
    cmark_parser_free(p);
    return html;
}

/* Per parameter of the chosen key: the best median among ok measurements
 * (latest per variant) whose variant has each value. */
static void parameter_plots(mt_db *db, const mt_choice *c, plot_list *plots, mt_text *md, const char *dir,
                            int *n_plots) {
    sqlite3_stmt *s = NULL;
    if (mt_key_rows(db, c, &s) != MT_OK) {
        mt_clear_error();
        return;
    }
    const mt_family *f = mt_family_find(c->family);
    double best[MT_MAX_PARAMS][MT_MAX_VALUES], spread[MT_MAX_PARAMS][MT_MAX_VALUES];
    for (int p = 0; p < MT_MAX_PARAMS; p++)
        for (int v = 0; v < MT_MAX_VALUES; v++) best[p][v] = spread[p][v] = NAN;
    while (sqlite3_step(s) == SQLITE_ROW) {
        mt_variant v;
        const unsigned char *params = sqlite3_column_text(s, MT_ROW_PARAMS), *status = sqlite3_column_text(s, MT_ROW_STATUS);
        if (!status || strcmp((const char *)status, "ok") != 0) continue;
        if (!f || !params || mt_variant_parse(f, (const char *)params, &v) != MT_OK) continue;
        double ms = sqlite3_column_double(s, MT_ROW_MEDIAN_MS);
        double sp = sqlite3_column_type(s, MT_ROW_SPREAD_MS) == SQLITE_NULL ? NAN : sqlite3_column_double(s, MT_ROW_SPREAD_MS);
        for (int p = 0; p < f->n_params; p++)
            for (int k = 0; k < f->params[p].n_values; k++)
                if (f->params[p].values[k] == v.values[p] && (isnan(best[p][k]) || ms < best[p][k]))
                    best[p][k] = ms, spread[p][k] = sp;
    }
    sqlite3_finalize(s);
    if (!f) return;
    char key[200];
    if (mt_key_is_prefill(&c->key))
        mt_prefill_key_describe(&c->key, key, sizeof key);
    else
        snprintf(key, sizeof key, "%d heads, Sq %d, batch %d, %d keys, %s/%s", c->key.n_heads, c->key.sq,
                 c->key.batch, c->key.seq_len, mt_dtype_name(c->key.s.q_dtype), mt_dtype_name(c->key.s.kv_dtype));
    mt_text_printf(md, "\n## Time against each tuned parameter\n\nKey: %s, %s. "
                       "Each point: the best median among the measured variants with that value; its bar, that "
                       "measurement's run-to-run spread (p90 - p10) around the median.\n\n",
                   c->arch, key);
    for (int p = 0; p < f->n_params; p++) {
        char labels_buf[MT_MAX_VALUES][16];
        const char *labels[MT_MAX_VALUES];
        double ys[MT_MAX_VALUES], lo[MT_MAX_VALUES], hi[MT_MAX_VALUES];
        int n = 0;
        for (int k = 0; k < f->params[p].n_values; k++) {
            if (isnan(best[p][k])) continue;
            snprintf(labels_buf[n], sizeof labels_buf[n], "%d", f->params[p].values[k]);
            labels[n] = labels_buf[n];
            lo[n] = isnan(spread[p][k]) ? NAN : fmax(best[p][k] - spread[p][k] / 2, best[p][k] * 0.5);
            hi[n] = isnan(spread[p][k]) ? NAN : best[p][k] + spread[p][k] / 2;
            ys[n++] = best[p][k];
        }
        if (n == 0) continue;
        char title[128], name[64];
        snprintf(title, sizeof title, "best time vs %s", f->params[p].name);
        mt_text one = {0};
        mt_svg_points(&one, title, f->params[p].name, "median ms", labels, ys, lo, hi, n);
        snprintf(name, sizeof name, "param-%s.svg", f->params[p].name);
        write_file(dir, name, one.buf, one.len);
        keep_plot(plots, name, &one);
        mt_text_printf(md, "![%s](%s)\n", title, name);
        mt_text_free(&one);
        (*n_plots)++;
    }
}

/* Per group of keys (same kernel shape): how far the runtime's lookups fall
 * from a measured key over a grid of batches and lengths (a heat map of the
 * dispatcher's distance, dispatch.h), and what a call with lengths unknown
 * on the host (CUDA graph capture) runs at each measured batch. */
static void lookup_section(mt_db *db, const mt_choice *choices, int n, plot_list *plots, mt_text *md,
                           const char *dir, int *n_plots) {
    sqlite3 *h = mt_db_handle(db);
    static const int grid_batch[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    static const int grid_len[] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
    enum { NB = 9, NL = 8 };
    mt_text_printf(md, "\n## Lookup distance and graph safety\n\n"
                       "The runtime runs, for a call, the winner of the nearest measured key of the same kernel shape; "
                       "the distance is |log2| of the batch ratio + |log2| of the mean-length ratio + the spread term "
                       "(`runtime/api/dispatch.h`). 0 is a measured key; above 2 (a factor of 4 off) `mla-tune lookup` "
                       "warns that the winner was timed on a very different amount of work.\n\n"
                       "Graph safety: a CUDA graph captured once replays with whatever lengths the requests have then. "
                       "Only the length-aware variants (`groups_per_cu` > 0) read the lengths on the GPU and cut the "
                       "work at every replay; a fixed-split variant keeps the split of the lengths it was captured "
                       "with. A call whose lengths are unknown on the host (`MLT_LENGTHS_UNKNOWN`) therefore runs the "
                       "winner of the nearest batch whose winner is length-aware, else the built-in length-aware "
                       "variant.\n");
    for (int i = 0; i < n; i++)
        if (mt_key_is_prefill(&choices[i].key)) {
            mt_text_printf(md, "\nPrefill keys are not mapped here: a prefill plan's calls go to the nearest key by "
                               "requests and new tokens, one table per mask (`mla-tune lookup --prefill` answers per "
                               "call; docs/prefill.md).\n");
            break;
        }
    int cus = 132;
    sqlite3_stmt *q = NULL;
    int done[4096] = {0};
    for (int i = 0; i < n && i < 4096; i++) {
        if (done[i] || mt_key_is_prefill(&choices[i].key)) continue; /* decode's distance and graphs */
        for (int j = i; j < n && j < 4096; j++)
            if (same_group(&choices[i], &choices[j])) done[j] = 1;
        const mt_choice *g = &choices[i];
        if (sqlite3_prepare_v2(h, "SELECT compute_units FROM devices WHERE arch = ?1 ORDER BY id DESC LIMIT 1", -1, &q,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_text(q, 1, g->arch, -1, SQLITE_STATIC);
            if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0) cus = sqlite3_column_int(q, 0);
        }
        sqlite3_finalize(q);
        mt_target t;
        mt_dispatch_table table;
        /* the device's bandwidth as the DB measured it (holdout's way) */
        mt_dispatch_device device = {.compute_units = cus};
        if (mt_db_get_ceiling(db, g->arch, "copy_gbps", &device.memory_gbps) != MT_OK) mt_clear_error();
        if (mt_target_for_arch(g->arch, &t) != MT_OK ||
            mt_dispatch_build_for(choices, NULL, n, &g->key, &t, &device, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED,
                                  &table) != MT_OK) {
            mt_text_printf(md, "\n(%s: no lookup table: %s)\n", md_cell(g->arch), md_cell(mt_last_error()));
            continue;
        }
        double dist[NB * NL];
        char text[NB * NL][16];
        const char *labels[NB * NL], *rows[NB], *cols[NL];
        char row_buf[NB][16], col_buf[NL][16];
        int far = 0;
        for (int r = 0; r < NB; r++) snprintf(row_buf[r], 16, "%d", grid_batch[r]), rows[r] = row_buf[r];
        for (int c = 0; c < NL; c++) snprintf(col_buf[c], 16, "%d", grid_len[c]), cols[c] = col_buf[c];
        for (int r = 0; r < NB; r++)
            for (int c = 0; c < NL; c++) {
                mt_dispatch_result res;
                mt_dispatch_lookup(&table, grid_batch[r], grid_len[c], 0, &res);
                int k = r * NL + c;
                dist[k] = res.entry ? res.distance : NAN;
                snprintf(text[k], 16, res.entry ? "%.1f" : "heur.", res.distance);
                labels[k] = text[k];
                far += res.entry && res.distance > 2.0;
            }
        char title[200], name[128];
        snprintf(title, sizeof title, "lookup distance: %s, %d heads, Sq %d, page %d, %s/%s", g->arch, g->key.n_heads,
                 g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype), mt_dtype_name(g->key.s.kv_dtype));
        snprintf(name, sizeof name, "distance-%s-h%d-sq%d-p%d-%s-%s.svg", g->arch, g->key.n_heads, g->key.sq,
                 g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype), mt_dtype_name(g->key.s.kv_dtype));
        mt_text one = {0};
        mt_svg_heatmap(&one, title, "batch", rows, NB, "mean keys per request", cols, NL, dist, labels);
        write_file(dir, name, one.buf, one.len);
        keep_plot(plots, name, &one);
        mt_text_free(&one);
        (*n_plots)++;
        mt_text_printf(md, "\n### %s, %d heads, Sq %d, page %d, %s/%s\n\n%d of the %d grid points are farther than 2 "
                           "from a measured key.\n\n![%s](%s)\n\n",
                       md_cell(g->arch), g->key.n_heads, g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype),
                       mt_dtype_name(g->key.s.kv_dtype), far, NB * NL, title, name);
        /* lengths unknown: what runs at each measured batch */
        int batches[256], nb = 0;
        for (int e = 0; e < table.n_entries && nb < 256; e++) batches[nb++] = table.entries[e].batch;
        nb = unique_sorted(batches, nb);
        mt_text_printf(md, "| batch | lengths unknown (graph capture): runs | graph-safe | from |\n|---|---|---|---|\n");
        for (int b = 0; b < nb; b++) {
            mt_dispatch_result res;
            mt_dispatch_lookup(&table, batches[b], -1, 0, &res);
            char variant[256];
            mt_variant_format(&table.variants[res.variant], variant, sizeof variant);
            int aware = res.entry ? res.entry->length_aware : table.aware_fallback >= 0 && res.variant == table.aware_fallback;
            char from[160];
            if (res.entry)
                snprintf(from, sizeof from, "measured key: batch %d, %s, mean %d, longest %d", res.entry->batch,
                         res.entry->lengths, res.entry->seq_len, res.entry->max_len);
            else
                snprintf(from, sizeof from, "%s", aware ? "built-in length-aware variant" : "built-in heuristic");
            mt_text_printf(md, "| %d | `%s` | %s | %s |\n", batches[b], variant, aware ? "yes (length-aware)" : "**no**",
                           md_cell(from));
        }
        mt_dispatch_free(&table);
    }
}

/* A bar per winner of one kind against its ceiling: decode keys' GB/s
 * against the measured copy ceiling (memory-bound), prefill keys'
 * TFLOPS against the matrix ceiling (compute-bound); error bars: the
 * run-to-run spread of the median, as that figure.  Nothing without keys
 * of that kind. */
static void winner_bars(const mt_choice *choices, int n, const mt_gain *gains, int prefill, double ceiling,
                        plot_list *plots, mt_text *md, const char *out_dir, int *n_plots) {
    size_t count = n > 0 && n < 1000000 ? (size_t)n : 1;
    const char **labels = calloc(count, sizeof(char *));
    char (*buf)[48] = calloc(count, 48);
    double *value = calloc(count, sizeof(double)), *lo = calloc(count, sizeof(double)),
           *hi = calloc(count, sizeof(double));
    int m = 0;
    for (int i = 0; labels && buf && value && lo && hi && i < n; i++) {
        const mt_choice *c = &choices[i];
        if (mt_key_is_prefill(&c->key) != prefill) continue;
        if (prefill)
            snprintf(buf[m], 48, "#%d N%d %dx%d K%d %s", i, c->key.n_heads, c->key.batch, c->key.sq, c->key.seq_len,
                     mt_prefill_key_causal(&c->key) ? "causal" : "non-causal");
        else
            snprintf(buf[m], 48, "#%d N%d B%d L%d %s", i, c->key.n_heads, c->key.batch, c->key.seq_len,
                     mt_dtype_name(c->key.s.kv_dtype));
        labels[m] = buf[m];
        double work = prefill ? mt_key_flops(&c->key) / 1e12 : mt_key_bytes(&c->key) / 1e9;
        value[m] = work / (c->median_ms * 1e-3);
        /* the spread in time, as the figure: slower end low, faster end high */
        double half = isnan(gains[i].winner_spread_ms) ? NAN : gains[i].winner_spread_ms / 2;
        lo[m] = isnan(half) ? NAN : work / ((c->median_ms + half) * 1e-3);
        hi[m] = isnan(half) || c->median_ms - half <= 0 ? NAN : work / ((c->median_ms - half) * 1e-3);
        m++;
    }
    if (m > 0) {
        const char *name = prefill ? "prefill-tflops.svg" : "bandwidth.svg";
        char ceiling_label[64];
        if (prefill)
            snprintf(ceiling_label, sizeof ceiling_label, "matrix %.0f TFLOPS", ceiling);
        else
            snprintf(ceiling_label, sizeof ceiling_label, "copy %.0f GB/s (measured)", ceiling);
        mt_text one = {0};
        mt_svg_bars(&one, prefill ? "prefill: achieved TFLOPS of each key's winner" : "achieved bandwidth of each key's winner",
                    prefill ? "TFLOPS" : "GB/s", labels, value, lo, hi, m, ceiling, ceiling_label);
        write_file(out_dir, name, one.buf, one.len);
        keep_plot(plots, name, &one);
        mt_text_printf(md, "\n## %s\n\nBars: the winner's median; error bars: its run-to-run spread (p90 - p10 of "
                           "the timed runs).\n\n![%s](%s)\n",
                       prefill ? "Prefill: achieved TFLOPS against the matrix ceiling"
                               : "Achieved bandwidth against the ceiling",
                       prefill ? "prefill TFLOPS" : "bandwidth", name);
        mt_text_free(&one);
        (*n_plots)++;
    }
    free(labels), free(buf), free(value), free(lo), free(hi);
}

int cmd_report(int argc, char **argv) {
    const char *db_path = NULL, *out_dir = NULL, *arch = NULL;
    double matrix_tflops = 0;
    int key_index = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune report --db FILE -o DIR [--arch ARCH] [--key N] [--matrix-tflops X]\n\n"
                   "Writes DIR/report.html (self-contained), DIR/report.md and the plots as SVG.\n"
                   "--key N picks the problem key (row N of the summary) for the per-parameter plots;\n"
                   "by default the key with the most work.\n");
            return 0;
        } else if (i + 1 < argc && strcmp(argv[i], "--db") == 0) db_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-o") == 0) out_dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--arch") == 0) arch = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--key") == 0) {
            char *end = NULL;
            long k = strtol(argv[++i], &end, 10);
            if (!end || end == argv[i] || *end || k < 0 || k > 1000000) {
                mt_cli_error("report: --key wants a row number of the summary (0, 1, ...), got '%s'", argv[i]);
                return 2;
            }
            key_index = (int)k;
        } else if (i + 1 < argc && strcmp(argv[i], "--matrix-tflops") == 0) {
            char *end = NULL;
            matrix_tflops = strtod(argv[++i], &end);
            if (!end || end == argv[i] || *end || !(matrix_tflops > 0) || matrix_tflops > 1e6) {
                mt_cli_error("report: --matrix-tflops wants a positive number (TFLOP/s), got '%s'", argv[i]);
                return 2;
            }
        }
        else {
            mt_cli_error("report: unexpected argument '%s'", argv[i]);
            return 2;
        }
    }
    if (!db_path || !out_dir) {
        mt_cli_error("report: --db and -o are required");
        return 2;
    }
    mt_db *db = NULL;
    mt_choice *choices = NULL;
    mt_crossover_point *points = NULL;  /* report_crossover.c */
    int n = 0, n_points = 0;
    if (mt_db_open(db_path, MT_DB_READ, &db) != MT_OK || mt_db_load_choices(db, arch, &choices, &n) != MT_OK ||
        mt_db_load_crossover(db, arch, &points, &n_points) != MT_OK) {
        mt_cli_error("report: %s", mt_last_error());
        free(choices);
        mt_db_close(db);
        return 1;
    }
    if (n <= 0 && n_points <= 0) {
        mt_cli_error("report: %s holds no chosen variant and no crossover point%s%s (run a sweep, or mla-tune "
                     "crossover, first)", db_path, arch ? " for " : "", arch ? arch : "");
        mt_db_close(db);
        return 1;
    }
    if (key_index >= n) {  /* a selection beyond the table is a mistake, not "the default key" */
        mt_cli_error("report: --key %d: %s has %d problem keys%s%s (rows 0..%d of the summary)", key_index, db_path, n,
                     arch ? " for " : "", arch ? arch : "", n - 1);
        mt_db_close(db);
        free(choices);
        free(points);
        return 2;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        mt_cli_error("report: cannot create %s: %s", out_dir, strerror(errno));
        mt_db_close(db);
        free(choices);
        free(points);
        return 1;
    }
    sqlite3 *h = mt_db_handle(db);
    mt_text md = {0};
    plot_list plots = {0};
    mt_text_printf(&md, "# mla-tune report\n\nDatabase `%s`, %d chosen variants", db_path, n);
    if (n_points > 0) mt_text_printf(&md, " and %d crossover points", n_points);
    mt_text_printf(&md, "%s%s.\n\n## Devices and provenance\n\n", arch ? " for " : "", arch ? arch : "");
    mt_text_printf(&md, "| arch | device | CUs | memory GiB | driver | compiler | measurements | ok | first | last | "
                        "tool | copy GB/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(h,
                           "SELECT d.arch, d.name, d.compute_units, d.memory_bytes, d.driver_version, d.compiler_version, "
                           "count(m.id), sum(m.status = 'ok'), min(m.measured_at), max(m.measured_at), "
                           "group_concat(DISTINCT m.tool_version), "
                           "(SELECT value FROM ceilings c WHERE c.device_id = d.id AND c.kind = 'copy_gbps' "
                           " ORDER BY measured_at DESC LIMIT 1) "
                           "FROM devices d LEFT JOIN measurements m ON m.device_id = d.id "
                           "WHERE ?1 IS NULL OR d.arch = ?1 GROUP BY d.id ORDER BY d.arch, d.name",
                           -1, &s, NULL) == SQLITE_OK) {
        if (arch) sqlite3_bind_text(s, 1, arch, -1, SQLITE_STATIC);
        while (sqlite3_step(s) == SQLITE_ROW) {
            const unsigned char *t[12];
            for (int c = 0; c < 12; c++) t[c] = sqlite3_column_text(s, c);
            /* every text field came from the file: cells, never Markdown */
            mt_text_printf(&md, "| %s | %s | %d | %.1f | %s | %s | %d | %d | ", md_cell(t[0]), md_cell(t[1]),
                           sqlite3_column_int(s, 2), sqlite3_column_double(s, 3) / 1073741824.0, md_cell(t[4]),
                           md_cell(t[5]), sqlite3_column_int(s, 6), sqlite3_column_int(s, 7));
            mt_text_printf(&md, "%s | %s | %s | %s |\n", t[8] ? md_cell(t[8]) : "-", t[9] ? md_cell(t[9]) : "-",
                           t[10] ? md_cell(t[10]) : "-", t[11] ? md_cell(t[11]) : "not measured");
        }
    }
    sqlite3_finalize(s);
    mt_text_printf(&md, "\nMeasurements by origin (host:process of the sweep that made them):\n\n| origin | count |\n|---|---|\n");
    if (sqlite3_prepare_v2(h, "SELECT origin, count(*) FROM measurements GROUP BY origin ORDER BY 2 DESC", -1, &s,
                           NULL) == SQLITE_OK)
        while (sqlite3_step(s) == SQLITE_ROW)
            mt_text_printf(&md, "| %s | %d |\n", md_cell(sqlite3_column_text(s, 0)), sqlite3_column_int(s, 1));
    sqlite3_finalize(s);
    mt_text_printf(&md, "\nStatus of every measurement:\n\n| status | count |\n|---|---|\n");
    if (sqlite3_prepare_v2(h, "SELECT status, count(*) FROM measurements GROUP BY status ORDER BY 1", -1, &s, NULL) == SQLITE_OK)
        while (sqlite3_step(s) == SQLITE_ROW)
            mt_text_printf(&md, "| %s | %d |\n", md_cell(sqlite3_column_text(s, 0)), sqlite3_column_int(s, 1));
    sqlite3_finalize(s);

    /* per key (a file of crossover points alone has none: its section follows) */
    const char *ceiling_arch = n > 0 ? choices[0].arch : points[0].arch;
    double copy = 0;
    mt_db_get_ceiling(db, ceiling_arch, "copy_gbps", &copy);
    char copy_text[64] = "not measured", matrix_text[160] = "not given";
    if (copy > 0) snprintf(copy_text, sizeof copy_text, "%.0f GB/s (measured by the sweep)", copy);
    if (matrix_tflops > 0) snprintf(matrix_text, sizeof matrix_text, "%.0f TFLOPS (given)", matrix_tflops);
    else if (mt_db_get_ceiling(db, ceiling_arch, "matrix_tflops", &matrix_tflops) == MT_OK && matrix_tflops > 0)
        snprintf(matrix_text, sizeof matrix_text, "%.0f TFLOPS (measured by the sweep)", matrix_tflops);
    else
        snprintf(matrix_text, sizeof matrix_text, "not measured (a database from before the sweep stored it; give "
                 "--matrix-tflops X: %% matrix is then filled)");
    int n_prefill = 0;
    for (int i = 0; i < n; i++) n_prefill += mt_key_is_prefill(&choices[i].key);
    if (n > 0)
        mt_text_printf(&md, "\n## Winner per problem key\n\nGB/s: bytes a decode must move over the winner's median; "
                            "TFLOPS: N x Sq x (2D + 2Dl) flops per key token. Ceilings: copy %s, matrix %s.\n\n",
                       copy_text, matrix_text);
    if (n > 0)
        mt_text_printf(&md, "Spread: the winner's run-to-run p90 - p10. Gain: the median of the built-in heuristic's "
                            "variant (what the runtime runs untuned, measured in the same sweep) over the winner's, and "
                            "in brackets with each median moved by half its spread. Family default: the family's "
                            "reference variant, which the choice rule keeps on a tie (\"tie: default kept\").%s\n\n",
                       n_prefill ? " Prefill keys are in their own table, after this one (row numbers count both, as "
                                   "`--key` does)." : "");
    if (n_prefill < n)
        mt_text_printf(&md, "| # | arch | heads | Sq | page | q/kv | batch | keys | winner ms | GB/s | %% copy | TFLOPS | "
                            "%% matrix | spread ms | heuristic ms | gain over heuristic | family default ms | winner | "
                            "reason |\n"
                            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    /* prefill keys in their own words: a call of requests x new tokens
     * over keys (context + new tokens when causal, a context chunk when
     * not) */
    mt_text pf = {0};
    if (n_prefill)
        mt_text_printf(&pf, "\n## Prefill winners per problem key\n\nA prefill key is a call of `requests` requests of "
                            "`new tokens` each, over `keys` keys per request: its context then its new tokens when "
                            "causal (new token i sees the context and new tokens 0..i), a chunk of context when "
                            "non-causal (every key). TFLOPS: 2 (D + Dl) flops per visible (new token, key) pair and "
                            "head, a causal key's new tokens' square counted half (`mt_prefill_flops`, as `bench "
                            "--prefill`). GB/s: q, k, v read once, out and lse written. Other columns as above.\n\n"
                            "| # | arch | heads | requests | new tokens | context | keys | mask | q/kv | D/Dl | winner ms "
                            "| TFLOPS | %% matrix | GB/s | spread ms | heuristic ms | gain over heuristic | family "
                            "default ms | winner | reason |\n"
                            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int heaviest = 0;
    mt_gain_notes notes = {0};
    mt_gain *gains = calloc((size_t)(n > 0 ? n : 1), sizeof *gains);
    if (!gains) {
        mt_cli_error("report: out of memory");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const mt_choice *c = &choices[i];
        double gbs = mt_key_bytes(&c->key) / (c->median_ms * 1e-3) / 1e9;
        double tf = mt_key_flops(&c->key) / (c->median_ms * 1e-3) / 1e12;
        char pct_copy[16] = "-", pct_mat[16] = "-", dflt[24] = "-", gain[48], heuristic[24] = "-", spread_text[24] = "-";
        if (mt_gain_over_heuristic(db, c, &gains[i]) != MT_OK) {
            mt_cli_error("report: %s", mt_last_error());
            free(gains);
            return 1;
        }
        if (!isnan(gains[i].winner_spread_ms)) snprintf(spread_text, sizeof spread_text, "%.4f", gains[i].winner_spread_ms);
        mt_gain_format(&gains[i], gain, sizeof gain);
        if (isfinite(gains[i].gain)) snprintf(heuristic, sizeof heuristic, "%.4f", gains[i].heuristic_ms);
        mt_gain_note(&notes, &gains[i]);
        if (copy > 0) snprintf(pct_copy, sizeof pct_copy, "%.1f%%", 100 * gbs / copy);
        if (matrix_tflops > 0) snprintf(pct_mat, sizeof pct_mat, "%.1f%%", 100 * tf / matrix_tflops);
        if (c->default_ms > 0) snprintf(dflt, sizeof dflt, "%.4f", c->default_ms);
        if (mt_key_is_prefill(&c->key))
            mt_text_printf(&pf, "| %d | %s | %d | %d | %d | %d | %d | %s | %s/%s | %d/%d | %.4f | %.2f | %s | %.0f | %s | "
                                "%s | %s | %s | `%s` | %s |\n",
                           i, md_cell(c->arch), c->key.n_heads, c->key.batch, c->key.sq, mt_prefill_key_context(&c->key),
                           c->key.seq_len, mt_prefill_key_causal(&c->key) ? "causal" : "non-causal",
                           mt_dtype_name(c->key.s.q_dtype), mt_dtype_name(c->key.s.kv_dtype), c->key.s.d, c->key.s.dl,
                           c->median_ms, tf, pct_mat, gbs, spread_text, heuristic, gain, dflt, c->params,
                           md_cell(c->reason));
        else
            mt_text_printf(&md, "| %d | %s | %d | %d | %d | %s/%s | %d | %d | %.4f | %.0f | %s | %.2f | %s | %s | %s | %s | "
                                "%s | `%s` | %s |\n",
                           i, c->arch, c->key.n_heads, c->key.sq, c->key.s.page_size, mt_dtype_name(c->key.s.q_dtype),
                           mt_dtype_name(c->key.s.kv_dtype), c->key.batch, c->key.seq_len, c->median_ms, gbs, pct_copy,
                           tf, pct_mat, spread_text, heuristic, gain, dflt, c->params, md_cell(c->reason));
        if (mt_key_bytes(&c->key) > mt_key_bytes(&choices[heaviest].key)) heaviest = i;
    }
    if (notes.unknown) {
        char why[700];
        mt_gain_notes_text(&notes, why, sizeof why);
        mt_text_printf(&md, "\nGain \"-\" for %d of %d keys: %s.\n", notes.unknown, n, md_cell(why));
    }
    if (pf.buf) mt_text_printf(&md, "%s", pf.buf);
    mt_text_free(&pf);
    if (key_index < 0) key_index = heaviest;

    /* heat maps per group: best split count, gain over the heuristic */
    int n_plots = 0;
    int done[4096] = {0};
    if (n_prefill < n) /* decode keys' only */
        mt_text_printf(&md, "\n## Heat maps\n\nPer group (architecture, heads, Sq, page, dtypes), over batch x keys per "
                            "request: the winner's split count, and its gain over the built-in heuristic (blank where "
                            "that was not measured).%s\n",
                       n_prefill ? " Decode keys only: prefill has no split count." : "");
    for (int i = 0; i < n && i < 4096; i++) {
        if (done[i] || mt_key_is_prefill(&choices[i].key)) continue; /* no split count; batch x keys is decode's */
        int batches[256], lens[256], nb = 0, nl = 0;
        for (int j = i; j < n && j < 4096; j++)
            if (same_group(&choices[i], &choices[j])) {
                done[j] = 1;
                if (nb < 256) batches[nb++] = choices[j].key.batch;
                if (nl < 256) lens[nl++] = choices[j].key.seq_len;
            }
        nb = unique_sorted(batches, nb);
        nl = unique_sorted(lens, nl);
        double *splits = malloc(sizeof(double) * (size_t)(nb * nl)), *speed = malloc(sizeof(double) * (size_t)(nb * nl));
        char (*split_text)[16] = calloc((size_t)(nb * nl), 16), (*speed_text)[16] = calloc((size_t)(nb * nl), 16);
        const char **split_labels = calloc((size_t)(nb * nl), sizeof(char *)), **speed_labels = calloc((size_t)(nb * nl), sizeof(char *));
        char (*row_buf)[16] = calloc((size_t)nb, 16), (*col_buf)[16] = calloc((size_t)nl, 16);
        const char **rows = calloc((size_t)nb, sizeof(char *)), **cols = calloc((size_t)nl, sizeof(char *));
        for (int r = 0; r < nb; r++) snprintf(row_buf[r], 16, "%d", batches[r]), rows[r] = row_buf[r];
        for (int k = 0; k < nl; k++) snprintf(col_buf[k], 16, "%d", lens[k]), cols[k] = col_buf[k];
        for (int q = 0; q < nb * nl; q++) splits[q] = speed[q] = NAN;
        for (int j = i; j < n; j++) {
            if (!same_group(&choices[i], &choices[j])) continue;
            int r = 0, k = 0;
            while (batches[r] != choices[j].key.batch) r++;
            while (lens[k] != choices[j].key.seq_len) k++;
            int q = r * nl + k;
            splits[q] = param_of(&choices[j], "num_splits");
            snprintf(split_text[q], 16, "%.0f", splits[q]);
            split_labels[q] = split_text[q];
            if (isfinite(gains[j].gain)) {
                speed[q] = gains[j].gain;
                snprintf(speed_text[q], 16, "%.2fx", speed[q]);
                speed_labels[q] = speed_text[q];
            }
        }
        const mt_choice *g = &choices[i];
        char title[200], name[128];
        for (int which = 0; which < 2; which++) {
            snprintf(title, sizeof title, "%s: %s, %d heads, Sq %d, page %d, %s/%s", which ? "gain over the heuristic" : "best split count",
                     g->arch, g->key.n_heads, g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype),
                     mt_dtype_name(g->key.s.kv_dtype));
            mt_text one = {0};
            mt_svg_heatmap(&one, title, "batch", rows, nb, "keys per request", cols, nl, which ? speed : splits,
                           which ? speed_labels : split_labels);
            snprintf(name, sizeof name, "heat-%s-%s-h%d-sq%d-p%d-%s-%s.svg", which ? "gain" : "splits", g->arch,
                     g->key.n_heads, g->key.sq, g->key.s.page_size, mt_dtype_name(g->key.s.q_dtype),
                     mt_dtype_name(g->key.s.kv_dtype));
            write_file(out_dir, name, one.buf, one.len);
            keep_plot(&plots, name, &one);
            mt_text_printf(&md, "\n![%s](%s)\n", title, name);
            mt_text_free(&one);
            n_plots++;
        }
        free(splits), free(speed), free(split_text), free(speed_text), free(split_labels), free(speed_labels);
        free(row_buf), free(col_buf), free(rows), free(cols);
    }

    /* the winners against the ceiling that bounds them: decode's bandwidth
     * against the copy ceiling, prefill's TFLOPS against the matrix one */
    winner_bars(choices, n, gains, 0, copy, &plots, &md, out_dir, &n_plots);
    winner_bars(choices, n, gains, 1, matrix_tflops, &plots, &md, out_dir, &n_plots);
    if (n > 0) parameter_plots(db, &choices[key_index], &plots, &md, out_dir, &n_plots);
    if (n_prefill < n) lookup_section(db, choices, n, &plots, &md, out_dir, &n_plots); /* decode's dispatch */
    if (n_prefill < n) mt_report_holdout(db, arch, &md);                                   /* between its keys */
    free(gains);
    mt_report_crossover(points, n_points, &plots, &md, out_dir, &n_plots);
    free(points);

    /* the page: rendered Markdown with the image references replaced by the inline SVGs */
    mt_text html = {0};
    mt_text_printf(&html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                          "<title>mla-tune report</title>\n<style>\n"
                          "body{font-family:sans-serif;max-width:1400px;margin:24px auto;padding:0 16px;color:#222}\n"
                          "*{box-sizing:border-box}\n"
                          ".scroll{overflow-x:auto;max-width:100%%;margin:8px 0}\n"
                          "table{border-collapse:collapse;font-size:13px}\n"
                          "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}\n"
                          "th{background:#f2f2f2}\ncode{font-size:12px}\n"
                          "figure{display:inline-block;margin:8px 0;max-width:100%%;vertical-align:top}\n"
                          "figure svg{display:block;max-width:100%%;height:auto}\n"
                          "figcaption{font-size:11px;color:#777;text-align:center}\n"
                          "</style></head><body>\n");
    /* An image reference would make the page fetch a file: each "![..](x.svg)"
     * line becomes a marker paragraph for cmark, and the rendered marker is
     * replaced by the SVG itself. */
    mt_text md_page = {0};
    for (const char *line = md.buf; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        const char *open = strstr(line, "](");
        if (strncmp(line, "![", 2) == 0 && open && open < line + len)
            mt_text_printf(&md_page, "\nMTPLOT:%.*s\n\n", (int)(strcspn(open + 2, ")\n")), open + 2);
        else
            mt_text_printf(&md_page, "%.*s", (int)len, line);
        line += len;
    }
    char *body = markdown_to_html(md_page.buf);
    /* every table in its own scrolling box: a wide table scrolls instead of
     * widening the page */
    mt_text boxed = {0};
    for (const char *p = body ? body : ""; *p;) {
        const char *open = strstr(p, "<table>"), *close = open ? strstr(open, "</table>") : NULL;
        if (!open || !close) {
            mt_text_printf(&boxed, "%s", p);
            break;
        }
        mt_text_printf(&boxed, "%.*s<div class=\"scroll\">%.*s</div>", (int)(open - p), p, (int)(close + 8 - open), open);
        p = close + 8;
    }
    free(body);
    body = boxed.buf;
    for (const char *p = body ? body : ""; *p;) {
        const char *mark = strstr(p, "<p>MTPLOT:");
        if (!mark) {
            mt_text_printf(&html, "%s", p);
            break;
        }
        mt_text_printf(&html, "%.*s", (int)(mark - p), p);
        const char *name = mark + 10, *close = strstr(name, "</p>");
        if (!close) break;
        for (int i = 0; i < plots.n; i++)
            if (strlen(plots.name[i]) == (size_t)(close - name) && strncmp(plots.name[i], name, (size_t)(close - name)) == 0)
                mt_text_printf(&html, "<figure>%s<figcaption>%s</figcaption></figure>\n", plots.svg[i], plots.name[i]);
        p = close + 4;
    }
    mt_text_printf(&html, "</body></html>\n");
    free(body);
    mt_status st = write_file(out_dir, "report.md", md.buf, md.len);
    if (st == MT_OK) st = write_file(out_dir, "report.html", html.buf, html.len);
    if (st != MT_OK) mt_cli_error("report: %s", mt_last_error());
    else printf("report: %d keys, %d crossover points, %d plots -> %s/report.html, %s/report.md\n", n, n_points, n_plots,
                out_dir, out_dir);
    mt_text_free(&md), mt_text_free(&md_page), mt_text_free(&html);
    for (int i = 0; i < plots.n; i++) free(plots.svg[i]);
    free(choices);
    mt_db_close(db);
    return st == MT_OK ? 0 : 1;
}
