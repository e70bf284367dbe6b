/*
 * YAML configs: every shipped space and plan loads and validates; bad files
 * fail with a message naming the file, line and column, and what is wrong;
 * the command line refuses them with a non-zero status and writes nothing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tuner/config.h"
#include "tuner/lengths.h"
#include "tuner/yaml_tree.h"

static char dir[256];

static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Loads every .yaml file in folder (and, with into_folders, in its
 * folders one level down) as a plan or a space; returns how many. */
static int check_shipped(const char *folder, int plans, int into_folders) {
    DIR *d = opendir(folder);
    CHECK_MSG(d != NULL, "cannot list %s", folder);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[1536];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (into_folders) n += check_shipped(path, plans, 0);
            continue;
        }
        const size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".yaml") != 0) continue;
        if (plans) {
            mt_plan p;
            const mt_status st = mt_load_plan(path, &p);
            CHECK_MSG(st == MT_OK, "%s: %s", path, mt_last_error());
            if (st == MT_OK) {
                CHECK_MSG(p.n_keys > 0, "%s: no keys", path);
                mt_plan_free(&p);
            }
        } else {
            mt_space_config sc;
            const mt_status st = mt_load_space(path, &sc);
            CHECK_MSG(st == MT_OK, "%s: %s", path, mt_last_error());
            if (st == MT_OK) CHECK_MSG(sc.n_spaces == 1, "%s: %d spaces", path, sc.n_spaces);
        }
        n++;
    }
    closedir(d);
    return n;
}

static void expect_plan_error(const char *name, const char *text, const char *where, const char *what) {
    const char *path = write_file(name, text);
    mt_plan p;
    mt_status st = mt_load_plan(path, &p);
    CHECK_MSG(st != MT_OK, "%s loaded", name);
    CHECK_MSG(strstr(mt_last_error(), path) && strstr(mt_last_error(), where) && strstr(mt_last_error(), what),
              "%s: message '%s' lacks '%s' / '%s'", name, mt_last_error(), where, what);
}

static void expect_space_error(const char *name, const char *text, const char *where, const char *what) {
    const char *path = write_file(name, text);
    mt_space_config sc;
    mt_status st = mt_load_space(path, &sc);
    CHECK_MSG(st != MT_OK, "%s loaded", name);
    CHECK_MSG(strstr(mt_last_error(), path) && strstr(mt_last_error(), where) && strstr(mt_last_error(), what),
              "%s: message '%s' lacks '%s' / '%s'", name, mt_last_error(), where, what);
}

static const char *good_plan =
    "name: t\n"
    "problems:\n"
    "  - kind: mla_decode\n"
    "    heads: [8, 16]\n"
    "    sq: [1, 2]\n"
    "    kv_dtype: [bf16, fp8e4m3]\n"
    "    batch: [1, 32]\n"
    "    seq_len: 4096\n"
    "timing: {warmup: 2, reps: 10}\n"
    "search: {strategy: halving, budget: 16, keep_percent: 50, seed: 3}\n";

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-config-XXXXXX");
    if (!mkdtemp(dir)) return 1;

    /* the shipped configs: every space (configs/spaces and its folders)
     * and every plan (configs/plans), found by listing the folders, so a
     * file added or edited there is checked without naming it here */
    char spaces_dir[1024], plans_dir[1024];
    CHECK_OK(mt_config_file("spaces/sm_90.yaml", spaces_dir, sizeof spaces_dir));
    CHECK_OK(mt_config_file("plans/quick.yaml", plans_dir, sizeof plans_dir));
    *strrchr(spaces_dir, '/') = '\0', *strrchr(plans_dir, '/') = '\0';
    const int n_spaces = check_shipped(spaces_dir, 0, 1), n_plans = check_shipped(plans_dir, 1, 0);
    CHECK_MSG(n_spaces >= 15 && n_plans >= 11, "%d spaces, %d plans checked", n_spaces, n_plans);

    /* a good plan expands to the product of its lists */
    mt_plan p;
    CHECK_OK(mt_load_plan(write_file("good.yaml", good_plan), &p));
    CHECK(p.n_keys == 2 * 2 * 2 * 2 * 1);
    CHECK(p.warmup == 2 && p.reps == 10 && p.strategy == MT_SEARCH_HALVING && p.budget == 16 && p.keep == 0.5);
    CHECK(p.keys[0].s.d == 576 && p.keys[0].s.page_size == 64 && p.keys[0].s.q_dtype == MT_BF16);
    mt_plan_free(&p);

    /* bad plans: each names file:line:column and the problem */
    expect_plan_error("empty.yaml", "", "empty.yaml", "empty YAML document");
    expect_plan_error("comment.yaml", "# nothing here\n", "comment.yaml", "empty YAML document");
    expect_plan_error("malformed.yaml", "name: t\nproblems: [\n  - kind: x\n", ":", "malformed YAML");
    expect_plan_error("tabs.yaml", "name: t\n\tproblems: 1\n", ":2:", "malformed YAML");
    expect_plan_error("unknown.yaml", "name: t\nproblemz: []\n", ":2:1:", "unknown key 'problemz'");
    expect_plan_error("heads.yaml",
                      "name: t\nproblems:\n  - heads: 129\n    batch: 1\n    seq_len: 1\n", ":3:12:",
                      "heads: 129 is out of range [1, 128]");
    expect_plan_error("sq.yaml", "name: t\nproblems:\n  - heads: 16\n    sq: [1, 1025]\n    batch: 1\n    seq_len: 1\n",
                      ":4:13:", "sq: 1025 is out of range");
    expect_plan_error("page.yaml",
                      "name: t\nproblems:\n  - heads: 16\n    page_size: [48]\n    batch: 1\n    seq_len: 1\n",
                      ":4:17:", "not a power of two");
    expect_plan_error("dtype.yaml",
                      "name: t\nproblems:\n  - heads: 16\n    q_dtype: fp8e4m3\n    batch: 1\n    seq_len: 1\n",
                      ":4:14:", "fp8 is supported for KV only");
    expect_plan_error("dtype_fnuz.yaml",
                      "name: t\nproblems:\n  - heads: 16\n    q_dtype: fp8e4m3fnuz\n    batch: 1\n    seq_len: 1\n",
                      ":4:14:", "fp8 is supported for KV only");
    expect_plan_error("dtype_unknown.yaml",
                      "name: t\nproblems:\n  - heads: 16\n    kv_dtype: fp8e4m3fn\n    batch: 1\n    seq_len: 1\n",
                      ":4:15:", "expected bf16, fp16, fp8e4m3 or fp8e4m3fnuz");
    {
        /* all four KV dtypes in one list (the list held three before fnuz),
         * each its own key, in the order listed */
        mt_plan p4;
        CHECK_OK(mt_load_plan(write_file("four_kv.yaml", "name: t\nproblems:\n  - heads: 16\n    batch: 1\n"
                                                         "    seq_len: 1\n    kv_dtype: [fp8e4m3fnuz, bf16, fp8e4m3, fp16]\n"),
                              &p4));
        CHECK(p4.n_keys == 4);
        if (p4.n_keys == 4) {
            CHECK(p4.keys[0].s.kv_dtype == MT_FP8_E4M3_FNUZ && p4.keys[1].s.kv_dtype == MT_BF16);
            CHECK(p4.keys[2].s.kv_dtype == MT_FP8_E4M3 && p4.keys[3].s.kv_dtype == MT_FP16);
            CHECK(strcmp(mt_dtype_name(p4.keys[0].s.kv_dtype), "fp8e4m3fnuz") == 0);
        }
        mt_plan_free(&p4);
    }
    expect_plan_error("int.yaml", "name: t\nproblems:\n  - heads: sixteen\n    batch: 1\n    seq_len: 1\n", ":3:12:",
                      "'sixteen' is not an integer");
    expect_plan_error("missing.yaml", "name: t\nproblems:\n  - heads: 16\n    batch: 1\n", ":3:5:", "lacks 'seq_len'");
    expect_plan_error("strategy.yaml", "name: t\nproblems:\n  - {heads: 1, batch: 1, seq_len: 1}\nsearch: {strategy: best}\n",
                      ":4:20:", "strategy: expected exhaustive, random or halving");
    expect_plan_error("alias.yaml", "name: &n t\nproblems: []\n", ":1:7:", "anchors are not accepted");
    expect_plan_error("twice.yaml", "name: t\nname: u\nproblems: []\n", ":2:1:", "given twice");
    expect_plan_error("open.yaml", "x: [", ":", "malformed YAML");

    /* bad spaces */
    expect_space_error("s_arch.yaml", "arch: sm_91\nfamilies: {mla_decode_simt: {}}\n", ":1:7:", "unknown architecture");
    expect_space_error("s_family.yaml", "arch: sm_90\nfamilies:\n  mla_fast: {}\n", ":3:3:", "unknown kernel family");
    expect_space_error("s_param.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt: {tile_k: [1]}\n", ":3:21:",
                       "unknown key 'tile_k'");
    expect_space_error("s_value.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt:\n    tile_q: [16, 12]\n", ":4:18:",
                       "tile_q=12 is not a value mla_decode supports");
    expect_space_error("s_empty.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt:\n    tile_q: []\n", ":4:13:",
                       "empty list");

    /* issue 25: one short entry must not expand to a million keys (the
     * attack's 400-byte entry); duplicate keys, dtypes and families */
    expect_plan_error("explode.yaml",
                      "name: t\nproblems:\n  - heads: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n"
                      "    sq: [1, 2, 3, 4, 5, 6, 7, 8]\n    page_size: [1, 16, 64, 256]\n    q_dtype: [bf16, fp16]\n"
                      "    kv_dtype: [bf16, fp16, fp8e4m3]\n"
                      "    batch: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n"
                      "    seq_len: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n",
                      ":3:5:", "this entry makes 786432 problem keys");
    expect_plan_error("dup_dtype.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: 1, seq_len: 1, q_dtype: [bf16, fp16, bf16]}\n",
                      ":3:61:", "q_dtype: bf16 listed twice");
    expect_plan_error("dup_key.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: [1, 8], seq_len: 4096}\n"
                      "  - {heads: [8, 16], batch: 8, seq_len: 4096}\n",
                      ":3:3:", "heads=16 sq=1 page_size=64 bf16/bf16 batch=8 seq_len=4096 (uniform) is listed by more "
                      "than one");

    /* issue 22: length mixes.  A mix makes one key per batch, recorded by
     * its canonical name with the batch's mean and longest request */
    {
        const char *path = write_file("mixes.yaml", "name: t\nproblems:\n  - heads: 16\n    batch: [8, 32]\n"
                                      "    seq_len: [1024, 4096]\n"
                                      "    lengths: [uniform, long-tail, 'one-long:32768:1024', 'uniform-random@7']\n");
        mt_plan p, again;
        CHECK_OK(mt_load_plan(path, &p));
        CHECK_MSG(p.n_keys == 2 * (2 + 3), "%d keys", p.n_keys);
        int uniform = 0, tails = 0;
        for (int i = 0; i < p.n_keys; i++) {
            const mt_problem_key *k = &p.keys[i];
            if (strcmp(k->lengths, "uniform") == 0) {
                uniform++;
                CHECK(k->max_len == k->seq_len && (k->seq_len == 1024 || k->seq_len == 4096));
            } else if (strncmp(k->lengths, "long-tail:512-2048:10:16384-32768@1", 40) == 0) {
                tails++;
                CHECK_MSG(k->max_len >= 16384 && k->max_len <= 32768 && k->seq_len > 512 && k->seq_len < k->max_len,
                          "long-tail B=%d: mean %d, longest %d", k->batch, k->seq_len, k->max_len);
            } else if (strcmp(k->lengths, "one-long:32768:1024") == 0) {
                CHECK(k->max_len == 32768 && k->seq_len == (32768 + 1024 * (k->batch - 1) + k->batch / 2) / k->batch);
            } else {
                CHECK_MSG(strcmp(k->lengths, "uniform-random:256-8192@7") == 0, "lengths '%s'", k->lengths);
            }
        }
        CHECK(uniform == 4 && tails == 2);
        CHECK_OK(mt_load_plan(path, &again)); /* the same lengths every time */
        CHECK(again.n_keys == p.n_keys && memcmp(again.keys, p.keys, sizeof *p.keys * (size_t)p.n_keys) == 0);
        mt_plan_free(&p);
        mt_plan_free(&again);
    }
    expect_plan_error("mix_bad.yaml", "name: t\nproblems:\n  - {heads: 16, batch: 8, lengths: [spiky]}\n", ":3:37:",
                      "unknown mix");
    expect_plan_error("mix_range.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: 8, lengths: 'uniform-random:900-3'}\n", ":3:36:",
                      "malformed parameters");
    expect_plan_error("mix_nolen.yaml", "name: t\nproblems:\n  - {heads: 16, batch: 8, lengths: [uniform]}\n", ":3:5:",
                      "lacks 'seq_len'");
    expect_plan_error("mix_extra.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: 8, seq_len: 64, lengths: one-long}\n", ":3:36:",
                      "no uniform mix");
    expect_plan_error("mix_twice.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: 8, lengths: [one-long, 'one-long:32768:1024']}\n",
                      ":3:47:", "listed twice");
    expect_plan_error("mix_file.yaml",
                      "name: t\nproblems:\n  - {heads: 16, batch: 3, lengths: 'file:/nonexistent/lens.txt'}\n", ":3:5:",
                      "/nonexistent/lens.txt");
    /* the mixes themselves */
    {
        mt_lengths_mix m;
        int32_t a[64], b[64];
        char name[96];
        CHECK_OK(mt_lengths_parse("uniform-random:100-200@9", &m));
        CHECK_OK(mt_lengths_make(&m, 64, 0, a));
        CHECK_OK(mt_lengths_make(&m, 64, 0, b));
        int in_range = 1;
        for (int i = 0; i < 64; i++) in_range &= a[i] >= 100 && a[i] <= 200 && a[i] == b[i];
        CHECK(in_range);
        mt_lengths_name(&m, name, sizeof name);
        CHECK_MSG(strcmp(name, "uniform-random:100-200@9") == 0, "%s", name);
        CHECK_OK(mt_lengths_parse("long-tail:1-2:25:1000-1000", &m));
        CHECK_OK(mt_lengths_make(&m, 40, 0, a));
        int longs = 0;
        for (int i = 0; i < 40; i++) longs += a[i] == 1000;
        CHECK_MSG(longs == 10, "%d long of 40 at 25%%", longs);
        CHECK_STATUS(mt_lengths_parse("uniform@x", &m), MT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(mt_lengths_parse("long-tail:1-2:0:3-4", &m), MT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(mt_lengths_parse("one-long:-5:3", &m), MT_ERR_INVALID_ARGUMENT);
        const char *lens = write_file("lens.txt", "# two batches\n5, 6, 7\n1 2 3 4\n");
        char spec[600];
        snprintf(spec, sizeof spec, "file:%s", lens);
        CHECK_OK(mt_lengths_parse(spec, &m));
        CHECK_OK(mt_lengths_make(&m, 4, 0, a));
        CHECK(a[0] == 1 && a[3] == 4);
        CHECK_STATUS(mt_lengths_make(&m, 5, 0, a), MT_ERR_NOT_FOUND);
        const char *bad = write_file("lens_bad.txt", "1 2 x\n");
        snprintf(spec, sizeof spec, "file:%s", bad);
        CHECK_OK(mt_lengths_parse(spec, &m));
        CHECK_STATUS(mt_lengths_make(&m, 3, 0, a), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "lens_bad.txt:1") != NULL, "%s", mt_last_error());
        /* the block table: each request its own pages, every page once */
        int32_t lens4[4] = {130, 0, 64, 1}, *table = NULL;
        int blocks = 0, seen[8] = {0}, once = 1;
        size_t pages = 0;
        uint64_t rng = 7;
        CHECK_OK(mt_lengths_page_table(lens4, 4, 64, &rng, &table, &blocks, &pages));
        CHECK(blocks == 3 && pages == 5 && table);
        for (int r = 0; table && r < 4; r++)
            for (int c = 0; c < (lens4[r] + 63) / 64; c++) {
                int32_t pg = table[r * blocks + c];
                once &= pg >= 0 && pg < 5 && !seen[pg]++;
            }
        CHECK(once && table && table[1 * blocks] == 0 && table[0 * blocks + 2] != table[0 * blocks + 1]);
        free(table);
    }
    expect_space_error("s_twice.yaml", "arch: sm_90\nfamilies:\n  mla_decode_simt: {tile_q: [16]}\n"
                       "  mla_decode_simt: {tile_q: [8]}\n", ":4:3:", "family 'mla_decode' listed twice");
    /* a FIFO named as a config is refused, not waited on */
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo.yaml", dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    alarm(60);  /* a hang fails the test */
    CHECK_STATUS(mt_load_plan(fifo, &p), MT_ERR_CONFIG);
    CHECK(strstr(mt_last_error(), "FIFO") && strstr(mt_last_error(), fifo));
    mt_space_config fifo_space;
    CHECK_STATUS(mt_load_space(fifo, &fifo_space), MT_ERR_CONFIG);
    alarm(0);

    /* the command line: bad plan, non-zero exit, no database written */
    const char *bin = getenv("MLA_TUNE_BIN");
    if (bin) {
        char cmd[2048], db[512];
        snprintf(db, sizeof db, "%s/never.db", dir);
        snprintf(cmd, sizeof cmd, "'%s' sweep --config '%s/heads.yaml' --db '%s' --fake-device '' >/dev/null 2>&1", bin,
                 dir, db);
        int status = system(cmd);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
        CHECK(access(db, F_OK) != 0);
        snprintf(cmd, sizeof cmd, "'%s' sweep --config '%s/good.yaml' --dry-run --arch gfx942 2>&1", bin, dir);
        FILE *out = popen(cmd, "r");
        char text[8192] = "";
        size_t n = fread(text, 1, sizeof text - 1, out);
        text[n] = '\0';
        status = pclose(out);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(text, "16 keys"), "%s", text);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_config");
}
