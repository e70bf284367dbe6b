/*
 * mla-tune report on a small fixture database (made by a fake-device sweep):
 * the page and the Markdown exist, every chosen variant's row shows the
 * numbers the database holds (median, gain over the built-in heuristic, GB/s, % copy and
 * % matrix against the ceilings the sweep stored), the plots
 * are there, and the page is self-contained (no scripts, no fetches); the
 * plots scale with the page, read their ticks as plain numbers, carry error
 * bars and a labelled ceiling; the lookup-distance section shows 0.0 at a
 * measured key; and, where headless Chromium is installed, nothing is
 * clipped at 1000 and 1600 px (tests/report-screenshot.sh).  The crossover
 * section (issue 29): with points added to the fixture, a chart per device,
 * heads and dtypes (both forms per context, the boundary marked) and a
 * table of every point with its winner and parts; a file of crossover
 * points alone gets its report too; a file with neither is refused.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "db/crossover.h"
#include "db/db.h"
#include "db_query.h"
#include "tuner/heuristic_gain.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

/* Points at 132 CUs, 128 heads, bf16/bf16 (context, sq, MQA ms, MHA ms):
 * at 4096 MHA - MQA is +1 at sq 64 and -0.5 at 128, zero at 106.67: MHA
 * from 107; at 16384 +0.5 at 32 and -1 at 64, zero at 42.67: from 43.  A
 * 16-head group where MQA always wins. */
static const struct { int heads, context, sq; double mqa, mha; } xpoints[] = {
    {128, 4096, 32, 1.0, 2.0},   {128, 4096, 64, 2.0, 3.0},  {128, 4096, 128, 4.0, 3.5}, {128, 4096, 256, 8.0, 5.0},
    {128, 16384, 32, 3.0, 3.5},  {128, 16384, 64, 5.0, 4.0}, {16, 4096, 64, 1.0, 2.0},
};
enum { N_XPOINTS = sizeof xpoints / sizeof xpoints[0] };

static void put_points(const char *path) {
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_device_info d = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(d.arch, sizeof d.arch, "sm_90");
    snprintf(d.name, sizeof d.name, "crossover GPU");
    int64_t id = 0;
    CHECK_OK(mt_db_put_device(db, &d, "nvrtc", &id));
    for (int i = 0; i < N_XPOINTS; i++) {
        mt_crossover_point p = {.n_heads = xpoints[i].heads, .q_dtype = MT_BF16, .kv_dtype = MT_BF16,
                                .sq = xpoints[i].sq, .context = xpoints[i].context, .mqa_ms = xpoints[i].mqa,
                                .mha_ms = xpoints[i].mha, .mqa_absorb_ms = xpoints[i].mqa / 4,
                                .mqa_attention_ms = xpoints[i].mqa / 2, .mqa_output_ms = xpoints[i].mqa / 4,
                                .mha_decompress_ms = xpoints[i].mha / 4, .mha_attention_ms = xpoints[i].mha * 3 / 4};
        snprintf(p.mqa_variant, sizeof p.mqa_variant, "tile_q=64|num_splits=1");  /* a '|' cannot open a column */
        snprintf(p.blas, sizeof p.blas, "cuBLASLt 13.1.0");
        CHECK_OK(mt_db_put_crossover(db, id, &p));
    }
    mt_db_close(db);
}

static void test_crossover(const char *bin, const char *dir, int svgs_before) {
    char cmd[4096], path[600];
    /* the sweep's fixture with points added: its sections as before, then the crossover's */
    snprintf(cmd, sizeof cmd, "cp '%s/fixture.db' '%s/cross.db'", dir, dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/cross.db", dir);
    put_points(path);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' report --db cross.db -o cross > cross.txt", dir, bin);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/cross/report.md", dir);
    char *md = slurp(path);
    snprintf(path, sizeof path, "%s/cross/report.html", dir);
    char *html = slurp(path);
    snprintf(path, sizeof path, "%s/cross/crossover-sm_90-cu132-h128-bf16-bf16.svg", dir);
    char *svg = slurp(path);
    CHECK(md && html && svg);
    if (!md || !html || !svg) return;
    CHECK(strstr(md, "12 chosen variants and 7 crossover points") && strstr(md, "## Winner per problem key"));
    CHECK(strstr(md, "## The crossover: MQA or MHA per prefill chunk"));
    CHECK(strstr(md, "### sm\\_90, 132 CUs, 128 heads, bf16/bf16") && strstr(md, "### sm\\_90, 132 CUs, 16 heads, bf16/bf16"));
    CHECK_MSG(strstr(md, "Context 4096: MHA from sq 107. Context 16384: MHA from sq 43."), "boundaries");
    CHECK(strstr(md, "Context 4096: MQA at every sq."));
    /* every point's row: winner, MHA / MQA, the parts */
    for (int i = 0; i < N_XPOINTS; i++) {
        char row[300];
        const double q = xpoints[i].mqa, h = xpoints[i].mha;
        snprintf(row, sizeof row, "| %d | %d | %.4f | %.4f | %s | %.2f | %.4f | %.4f | %.4f | %.4f | %.4f | ",
                 xpoints[i].context, xpoints[i].sq, q, h, h <= q ? "MHA" : "MQA", h / q, q / 4, q / 2, q / 4, h / 4,
                 h * 3 / 4);
        CHECK_MSG(strstr(md, row) != NULL, "markdown lacks '%s'", row);
    }
    CHECK(strstr(md, "tile\\_q\\=64\\|num\\_splits\\=1") != NULL);
    /* one chart per group, inlined; both forms per context, MHA dashed, the boundaries marked */
    CHECK_MSG(count_of(html, "<svg ") == svgs_before + 2, "%d svgs, %d before", count_of(html, "<svg "), svgs_before);
    CHECK(count_of(svg, "<polyline") == 4 && count_of(svg, "stroke-dasharray=\"7 4\" points=") == 2);
    CHECK(strstr(svg, "MHA from sq 107 (context 4096)") && strstr(svg, "MHA from sq 43 (context 16384)"));
    CHECK(strstr(svg, "MQA, context 4096") && strstr(svg, "MHA, context 16384"));
    CHECK(strstr(svg, ">32</text>") && strstr(svg, ">256</text>") && strstr(svg, "(log2)"));
    CHECK(strstr(svg, "style=\"max-width:100%;height:auto\""));
    free(md), free(html), free(svg);
    /* a file of points alone: the devices, then the crossover */
    snprintf(path, sizeof path, "%s/points-only.db", dir);
    put_points(path);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' report --db points-only.db -o only > only.txt", dir, bin);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/only/report.md", dir);
    md = slurp(path);
    CHECK(md && strstr(md, "0 chosen variants and 7 crossover points") && !strstr(md, "## Winner per problem key") &&
          strstr(md, "Context 4096: MHA from sq 107.") && strstr(md, "crossover GPU"));
    free(md);
    snprintf(path, sizeof path, "%s/only.txt", dir);
    char *said = slurp(path);
    CHECK_MSG(said && strstr(said, "report: 0 keys, 7 crossover points, 2 plots"), "%s", said ? said : "?");
    free(said);
    /* neither: refused; a hostile point: refused naming it */
    snprintf(path, sizeof path, "%s/empty.db", dir);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    mt_db_close(db);
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' -o '%s/e' 2>&1 | grep -q 'holds no chosen variant and no "
             "crossover point'", bin, path, dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "sqlite3 '%s/points-only.db' \"UPDATE crossover SET sq = 0 WHERE sq = 32\" && "
             "'%s' report --db '%s/points-only.db' -o '%s/h' 2>&1 | grep -q 'invalid crossover point .*sq 0 is outside'",
             dir, bin, dir, dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    const char *bin = getenv("MLA_TUNE_BIN");
    if (!bin) {
        printf("SKIP: MLA_TUNE_BIN not set\n");
        return CHECK_SKIP_CODE;
    }
    char dir[] = "/tmp/mla-tune-test-report-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char cmd[4096], path[600];
    snprintf(path, sizeof path, "%s/plan.yaml", dir);
    FILE *f = fopen(path, "w");
    fputs("name: fixture\nproblems:\n  - {heads: 16, batch: [1, 8, 64], seq_len: [1024, 8192], kv_dtype: [bf16, fp8e4m3]}\n"
          "timing: {warmup: 1, reps: 5}\nsearch: {strategy: random, budget: 20, seed: 2}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' sweep --config plan.yaml --db fixture.db --fake-device "
             "'wrong:num_splits=2' >/dev/null 2>&1 && '%s' report --db fixture.db -o out",
             dir, bin, bin);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/out/report.html", dir);
    char *html = slurp(path);
    snprintf(path, sizeof path, "%s/out/report.md", dir);
    char *md = slurp(path);
    CHECK(html && md);
    if (!html || !md) return check_summary("test_report");

    /* every choice in the DB, with its numbers, in both documents */
    snprintf(path, sizeof path, "%s/fixture.db", dir);
    mt_db *db = NULL;
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    CHECK(n == 12);
    int wrong_rule = 0;
    for (int i = 0; i < n; i++) {
        char row_md[512], row_html[512], gain[64];
        double bytes = (double)c[i].key.batch * ((double)c[i].key.seq_len * 576 * (c[i].key.s.kv_dtype == MT_FP8_E4M3 ? 1 : 2) +
                                                 16.0 * (576 + 512) * 2 + 16.0 * 4);
        /* the gain over the built-in heuristic (heuristic_gain.h, tested in
         * test_sweep): known for every key of a new sweep, printed with its
         * range after the heuristic's median, which is the median the
         * database holds for the heuristic's variant on that key */
        mt_gain g;
        CHECK_OK(mt_gain_over_heuristic(db, &c[i], &g));
        char gain_cell[128], sql[1024];
        mt_gain_format(&g, gain, sizeof gain);
        if (strstr(g.heuristic, "num_splits=2,")) {
            /* the fixture's fake device gets every 2-split variant wrong: where
             * the rule splits in two, the untuned runtime is wrong, no gain */
            CHECK_MSG(isnan(g.gain) && strstr(g.missing, "gave wrong-result"), "key %d: %s", i, g.missing);
            wrong_rule++;
            continue;
        }
        CHECK_MSG(isfinite(g.gain) && g.heuristic[0], "key %d: %s", i, g.missing);
        snprintf(gain_cell, sizeof gain_cell, "| %.4f | %s |", g.heuristic_ms, gain);
        CHECK_MSG(strstr(md, gain_cell) != NULL, "markdown lacks '%s'", gain_cell);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN "
                 "problems p ON p.id = m.problem_id WHERE v.params = '%s' AND p.batch = %d AND p.seq_len = %d AND "
                 "p.kv_dtype = '%s' AND abs(m.median_ms - %.9f) < 1e-9", g.heuristic, c[i].key.batch,
                 c[i].key.seq_len, mt_dtype_name(c[i].key.s.kv_dtype), g.heuristic_ms);
        CHECK_MSG(db_query_int(path, sql) == 1, "the heuristic's median is not the stored one: %s", sql);
        /* % copy and % matrix against the ceilings the sweep stored (the fake
         * worker's 3000 GB/s and 700 TFLOP/s): no --matrix-tflops needed */
        double gbs = bytes / (c[i].median_ms * 1e-3) / 1e9;
        double tflops = c[i].key.batch * 16.0 * c[i].key.seq_len * (2.0 * 576 + 2.0 * 512) / (c[i].median_ms * 1e-3) / 1e12;
        snprintf(row_md, sizeof row_md, "| %d | %d | %.4f | %.0f | %.1f%% | %.2f | %.1f%% |", c[i].key.batch,
                 c[i].key.seq_len, c[i].median_ms, gbs, 100 * gbs / 3000, tflops, 100 * tflops / 700);
        snprintf(row_html, sizeof row_html, "<td>%d</td>\n<td>%d</td>\n<td>%.4f</td>\n<td>%.0f</td>", c[i].key.batch,
                 c[i].key.seq_len, c[i].median_ms, bytes / (c[i].median_ms * 1e-3) / 1e9);
        CHECK_MSG(strstr(md, row_md) != NULL, "markdown lacks '%s'", row_md);
        CHECK_MSG(strstr(html, row_html) != NULL, "html lacks '%s'", row_html);
        CHECK_MSG(count_of(md, c[i].params) >= 1 && count_of(html, c[i].params) >= 1, "params %s", c[i].params);
        CHECK(c[i].default_ms > 0); /* the family default: still measured, shown in its own column */
    }
    char note[128];
    snprintf(note, sizeof note, "Gain \"-\" for %d of 12 keys: ", wrong_rule);
    CHECK_MSG(wrong_rule > 0 && strstr(md, note) && strstr(md, "variant gave wrong\\-result on this key"),
              "%d keys with a wrong rule; markdown lacks '%s'", wrong_rule, note);
    free(c);
    mt_db_close(db);
    /* between keys: a row per group of keys (16 heads, bf16 and fp8 KV, 6 keys each) */
    CHECK(strstr(md, "## Between keys: each key held out"));
    CHECK_MSG(strstr(md, "| sm\\_90 | 132 | 16 | 1 | 64 | bf16/bf16 | 6 |") &&
              strstr(md, "| sm\\_90 | 132 | 16 | 1 | 64 | bf16/fp8e4m3 | 6 |"), "between-keys rows");
    /* provenance: the device and the measurement counts */
    CHECK(strstr(html, "fake-gpu") && strstr(html, "<td>240</td>"));
    CHECK(strstr(html, "wrong-result"));
    /* plots: 2 heat maps per group (2 groups), bandwidth, one per parameter
     * (13: the decode family's nine, the schedule's three and wg_schedule),
     * one lookup-distance map per group */
    CHECK_MSG(count_of(html, "<svg ") == 2 * 2 + 1 + 13 + 2, "%d svgs", count_of(html, "<svg "));
    CHECK(strstr(html, "best split count") && strstr(html, "gain over the heuristic"));
    CHECK(strstr(md, "| heuristic ms | gain over heuristic | family default ms |") && !strstr(md, "speedup"));
    CHECK(strstr(html, "ceiling: copy 3000 GB/s"));
    CHECK(strstr(md, "matrix 700 TFLOPS (measured by the sweep)"));
    /* every plot scales down with the page; tables scroll in their box */
    CHECK_MSG(count_of(html, "style=\"max-width:100%;height:auto\"") == count_of(html, "<svg "), "unscaled svg");
    CHECK(count_of(html, "<div class=\"scroll\"><table>") == count_of(html, "<table>"));
    /* ticks as numbers a person reads (no "5e+03"), error bars drawn */
    CHECK_MSG(strstr(html, "e+0") == NULL && strstr(html, "e-0") == NULL, "exponent notation in the page");
    CHECK(count_of(html, "<path d=\"M") > 0);
    /* the lookup section: a measured key (batch 1 x 1024 is one) is at
     * distance 0 on the grid, and graph safety is stated per batch */
    CHECK(strstr(html, "Lookup distance and graph safety") && strstr(html, ">0.0</text>"));
    CHECK(strstr(html, "lengths unknown (graph capture): runs"));
    /* self-contained: no scripts, no fetched resources */
    CHECK(strstr(html, "<script") == NULL);
    CHECK(strstr(html, "src=") == NULL && strstr(html, "<link") == NULL && strstr(html, "url(") == NULL);
    CHECK(count_of(html, "http") == count_of(html, "http://www.w3.org/2000/svg"));
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0 && strstr(html, "</html>"));
    /* hostile text (issue 25): a device name that is a remote image, an
     * escape sequence in a stored reason: shown as text, never fetched or
     * sent raw to the terminal */
    snprintf(cmd, sizeof cmd, "sqlite3 '%s/fixture.db' \"UPDATE devices SET name = '![x](https://evil.example/i.png)'; "
             "UPDATE choices SET reason = 'fastest' || char(27) || '[2J'\" && '%s' report --db '%s/fixture.db' -o '%s/hostile' "
             ">/dev/null && '%s' show --db '%s/fixture.db' --system-db '%s/fixture.db' > '%s/show.txt'", dir, bin, dir, dir,
             bin, dir, dir, dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/hostile/report.html", dir);
    char *hostile = slurp(path);
    CHECK_MSG(hostile && !strstr(hostile, "<img") && !strstr(hostile, "src=") && strstr(hostile, "evil.example"),
              "a remote image in the page");
    CHECK(hostile && count_of(hostile, "\x1b") == 0);
    snprintf(path, sizeof path, "%s/show.txt", dir);
    char *shown = slurp(path);
    CHECK_MSG(shown && !strchr(shown, '\x1b') && strstr(shown, "fastest\\x1b[2J"), "show: %s", shown ? shown : "?");
    free(hostile);
    free(shown);
    test_crossover(bin, dir, count_of(html, "<svg "));
    /* the layout in a browser, where one is installed: at 1000 and 1600 px
     * nothing is clipped (the script fails on a sideways scroll, a figure
     * past the window or a plot's text outside its drawing); the crossover
     * chart's legend included */
    if (system("command -v chromium >/dev/null 2>&1") == 0) {
        char script[1024];
        snprintf(script, sizeof script, "%s", __FILE__);
        char *slash = strrchr(script, '/');
        snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0),
                 "report-screenshot.sh");
        for (int w = 1000; w <= 1600; w += 600) {
            snprintf(cmd, sizeof cmd, "'%s' '%s/out/report.html' '%s/shot-%d.png' %d 4000", script, dir, dir, w, w);
            CHECK_MSG(system(cmd) == 0, "report clipped or logging at %d px", w);
        }
        snprintf(cmd, sizeof cmd, "'%s' '%s/only/report.html' '%s/shot-crossover.png' 1000 2000", script, dir, dir);
        CHECK_MSG(system(cmd) == 0, "the crossover report clipped or logging at 1000 px");
    } else {
        printf("note: no chromium: the layout check in a browser was not run\n");
    }
    /* bad input: a database with nothing chosen, a missing one */
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s/none.db' -o '%s/x' 2>&1 | grep -q 'cannot read database'", bin, dir, dir);
    CHECK(system(cmd) == 0);
    free(html);
    free(md);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_report");
}
