/*
 * `mla-tune rehash` (tuner/rehash.c, db/restamp.c): measurements of an
 * older kernel tree keep counting only when today's text compiles to the
 * same code.  Trees are written from the built-in sources into the test's
 * folder: "comment" differs from today's text by a comment in simt.cu (the
 * code is the same), "changed" by one more kernel in simt.cu (other code).
 * Rows stamped with each tree's hash, today's, and an unknown one:
 *   - dry run: every verdict counted, nothing written;
 *   - rehash against "comment": its rows move to today's hash and the
 *     choice of their key goes back to its fastest row (ignored before);
 *   - rehash against "changed": its rows stay stale, the choice stays;
 *   - rows of another compiler, or of a third text, are left alone;
 *   - a file with nothing to move is left untouched; a DB opened
 *     read-only is refused by the restamp;
 *   - the CLI: missing arguments, a folder that is not a kernel tree.
 * Needs this host's NVRTC (CI has it): exits 77 (skipped) without it.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "db/restamp.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/sources.h"
#include "runtime/api/validators.h"
#include "runtime/base/sha256.h"
#include "test_folder.h"
#include "tuner/rehash.h"

#define OTHER_HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char compiler[64];

/* The built-in kernel files into folder `tree` of the test's folder, with
 * `extra` put before (at_start) or after the text of mla_decode/simt.cu. */
static void write_tree(const char *tree, const char *extra, int at_start) {
    for (const mt_source_file *f = mt_kernel_files; f->name; f++) {
        char path[1024], cmd[1200];
        snprintf(path, sizeof path, "%s/%s/%s", dir, tree, f->name);
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
        CHECK(system(cmd) == 0);
        FILE *out = fopen(path, "w");
        CHECK(out != NULL);
        if (!out) return;
        int edit = strcmp(f->name, "mla_decode/simt.cu") == 0;
        if (edit && at_start) fputs(extra, out);
        fputs(f->text, out);
        if (edit && !at_start) fputs(extra, out);
        fclose(out);
    }
}

static mt_problem_key key_of(int batch) {
    return (mt_problem_key){.kind = "mla_decode",
                            .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                            .n_heads = 16, .sq = 1, .batch = batch, .seq_len = 1024};
}

/* The SIMT path (simt.cu), `splits` key ranges. */
static mt_variant simt_variant(int splits) {
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    v.values[MT_P_MMA] = 0;
    v.values[MT_P_NUM_SPLITS] = splits;
    return v;
}

/* The hash of v's text composed from `tree` (NULL: today's built-in text). */
static void hash_of(const char *tree, const mt_variant *v, char hex[65]) {
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    mt_problem_key k = key_of(1);
    char *text = NULL, path[512];
    path_of(path, sizeof path, tree ? tree : "");
    CHECK_OK(mt_build_source_in(v, &k.s, &t, tree ? path : NULL, &text));
    uint8_t d[32];
    mt_sha256_digest(text ? text : "", text ? strlen(text) : 0, d);
    mt_sha256_hex(d, hex);
    free(text);
}

static void put(mt_db *db, const char *compiler_version, int batch, mt_variant v, double ms, const char *hash) {
    mt_device_info dev = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    snprintf(dev.name, sizeof dev.name, "H100");
    snprintf(dev.driver_version, sizeof dev.driver_version, "13.0");
    int64_t d = 0, p = 0, var = 0;
    mt_problem_key k = key_of(batch);
    CHECK_OK(mt_db_put_device(db, &dev, compiler_version, &d));
    CHECK_OK(mt_db_put_problem(db, &k, &p));
    CHECK_OK(mt_db_put_variant(db, &v, &var));
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = d, .status = MT_MEASURE_OK,
                        .median_ms = ms, .min_ms = ms, .max_ms = ms, .reps = 20, .source_hash = hash};
    CHECK_OK(mt_db_record(db, &m));
}

/* The params text of the choice for batch `batch`, "" when none. */
static void choice_of(const char *db_name, int batch, char *params, size_t size) {
    char path[512];
    path_of(path, sizeof path, db_name);
    mt_db *db = NULL;
    params[0] = '\0';
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    mt_choice *c = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    for (int i = 0; i < n; i++)
        if (c[i].key.batch == batch) snprintf(params, size, "%s", c[i].params);
    free(c);
    mt_db_close(db);
}

static int rows_with(const char *hash) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM measurements WHERE source_hash = '%s'", hash);
    return count("r.db", sql);
}

static void test_rehash(void) {
    char now[65], comment[65], changed[65], tree[512], path[512];
    mt_variant fast = simt_variant(2), slow = simt_variant(4);
    hash_of(NULL, &fast, now);
    hash_of("comment", &fast, comment);
    hash_of("changed", &fast, changed);
    CHECK(strcmp(now, comment) != 0 && strcmp(now, changed) != 0 && strcmp(comment, changed) != 0);

    path_of(path, sizeof path, "r.db");
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    /* batch 1: the fast row of the comment tree, the slow one of today */
    put(db, compiler, 1, fast, 1.0, comment);
    put(db, compiler, 1, slow, 2.0, now);
    /* batch 2: the same with the changed tree */
    put(db, compiler, 2, fast, 1.0, changed);
    put(db, compiler, 2, slow, 2.0, now);
    /* batch 3: another compiler's row of the comment tree; a third text */
    put(db, "nvrtc-0.1", 3, fast, 1.0, comment);
    put(db, compiler, 3, slow, 1.5, OTHER_HASH);
    CHECK_OK(mt_validator_recompute_choices(db));
    mt_db_close(db);
    char before1[200], before2[200], after[200];
    choice_of("r.db", 1, before1, sizeof before1);
    choice_of("r.db", 2, before2, sizeof before2);
    CHECK_MSG(strstr(before1, "num_splits=4") != NULL, "before: batch 1 chose %s (its stale fast row counted)", before1);

    /* a dry run counts every verdict and writes nothing */
    path_of(tree, sizeof tree, "comment");
    mt_rehash_report r;
    CHECK_OK(mt_rehash(path, tree, 2, 1, 0, NULL, &r));
    /* groups: the two rows of today's slow variant are one */
    CHECK_MSG(r.groups == 5 && r.current == 1 && r.restamped == 1 && r.other_text == 2 && r.other_compiler == 1 &&
                  r.code_changed == 0,
              "dry run: %d groups, %d current, %d same code, %d other text, %d other compiler, %d changed", r.groups,
              r.current, r.restamped, r.other_text, r.other_compiler, r.code_changed);
    CHECK(rows_with(comment) == 2 && rows_with(now) == 2);
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    int moved = 0;
    CHECK(mt_db_restamp(db, NULL, NULL, 0, &moved) != MT_OK); /* read-only: refused */
    mt_clear_error();
    mt_db_close(db);

    /* against the comment tree: its rows of this compiler move, and batch 1
     * takes its fast row again */
    CHECK_OK(mt_rehash(path, tree, 2, 0, 0, NULL, &r));
    CHECK(r.restamped == 1 && r.rows_restamped == 1);
    CHECK_MSG(rows_with(comment) == 1 && rows_with(now) == 3, "%d comment rows, %d of today", rows_with(comment),
              rows_with(now));
    choice_of("r.db", 1, after, sizeof after);
    CHECK_MSG(strstr(after, "num_splits=2") != NULL, "after: batch 1 chose %s", after);

    /* against the changed tree: the code differs, its row stays stale,
     * and a file with nothing to move is not written at all */
    path_of(tree, sizeof tree, "changed");
    struct stat before, after_st;
    CHECK(stat(path, &before) == 0);
    sleep(1); /* a write would show in the modification time */
    CHECK_OK(mt_rehash(path, tree, 1, 0, 0, NULL, &r));
    CHECK(stat(path, &after_st) == 0 && after_st.st_mtime == before.st_mtime && after_st.st_size == before.st_size);
    CHECK_MSG(r.code_changed == 1 && r.restamped == 0, "changed tree: %d changed, %d same", r.code_changed,
              r.restamped);
    CHECK(rows_with(changed) == 1 && rows_with(OTHER_HASH) == 1);
    choice_of("r.db", 2, after, sizeof after);
    CHECK_MSG(strcmp(after, before2) == 0, "batch 2 chose %s, before %s", after, before2);
}

static void test_cli(void) {
    const char *bin = getenv("MLA_TUNE_BIN");
    if (!bin) return;
    char cmd[1400], out[4096], db[512], tree[512];
    path_of(db, sizeof db, "r.db");
    path_of(tree, sizeof tree, "comment");
    snprintf(cmd, sizeof cmd, "'%s' rehash --db '%s' 2>&1", bin, db);
    CHECK(run_capture(cmd, out, sizeof out) == 2 && strstr(out, "--from-kernels DIR") != NULL);
    snprintf(cmd, sizeof cmd, "'%s' rehash --db '%s' --from-kernels '%s' 2>&1", bin, db, dir);
    CHECK_MSG(run_capture(cmd, out, sizeof out) == 2 && strstr(out, "not a kernel tree") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' rehash --db '%s/none.db' --from-kernels '%s' 2>&1", bin, dir, tree);
    CHECK_MSG(run_capture(cmd, out, sizeof out) == 1 && strstr(out, "no such file") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' rehash --db '%s' --from-kernels '%s' --jobs 0 2>&1", bin, db, tree);
    CHECK(run_capture(cmd, out, sizeof out) == 2 && strstr(out, "--jobs") != NULL);
    snprintf(cmd, sizeof cmd, "'%s' rehash --db '%s' --from-kernels '%s' --dry-run 2>&1", bin, db, tree);
    CHECK_MSG(run_capture(cmd, out, sizeof out) == 0 && strstr(out, "5 groups") != NULL &&
                  strstr(out, "0 proven the same code") != NULL,
              "%s", out);
}

int main(void) {
    unsetenv("MLA_TUNE_KERNEL_DIR"); /* today's text is the built-in one */
    if (!mt_host_compiler_version("sm_90", compiler, sizeof compiler)) {
        printf("test_rehash: skipped (no NVRTC on this host to compile sm_90)\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-rehash-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    write_tree("comment", "/* a comment the code does not see */\n", 1);
    write_tree("changed", "\nextern \"C\" __global__ void mt_rehash_probe(float *x) { x[0] = 1.0f; }\n", 0);
    test_rehash();
    test_cli();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_rehash");
}
