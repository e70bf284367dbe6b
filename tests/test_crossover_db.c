/*
 * The crossover points in the tuning database (db/crossover.h, issue 29):
 *   - a point round-trips with every field, its device's arch, compute
 *     units and name joined in; a put of the same point replaces it;
 *   - each out-of-range field is refused naming it, and nothing is written;
 *   - a schema-5 file is read (migrated in memory, the file untouched) and
 *     opened for writing (migrated in place, its rows kept);
 *   - hostile rows written into a file are refused as corrupt, naming the
 *     file, the row and the field, by the loader and by the copy;
 *   - one point under two device rows of one GPU (a driver update) is read
 *     once, the latest;
 *   - export / merge carry the points with their devices (the newer of two
 *     stays, the arch filter holds, a shippable file keeps them), and the
 *     user DB's points replace the system DB's in the overlay.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sqlite3.h>
#include <unistd.h>

#include "check.h"
#include "db/crossover.h"
#include "db/db.h"
#include "kernels/mla_decode/mla_decode.h"
#include "test_folder.h"

static int64_t put_device(mt_db *db, const char *arch, int cus, const char *driver) {
    mt_device_info d = {.compute_units = cus, .total_memory = 80ull << 30};
    snprintf(d.arch, sizeof d.arch, "%s", arch);
    snprintf(d.name, sizeof d.name, "Test GPU %d", cus);
    snprintf(d.driver_version, sizeof d.driver_version, "%s", driver);
    int64_t id = 0;
    CHECK_OK(mt_db_put_device(db, &d, "nvrtc-13.0", &id));
    return id;
}

/* A valid point: the parts sum to each form's time. */
static mt_crossover_point point(int heads, int sq, int context, double mqa, double mha) {
    mt_crossover_point p = {.n_heads = heads, .q_dtype = MT_BF16, .kv_dtype = MT_BF16, .sq = sq, .context = context,
                            .mqa_ms = mqa, .mha_ms = mha, .mqa_absorb_ms = mqa * 0.2, .mqa_attention_ms = mqa * 0.6,
                            .mqa_output_ms = mqa * 0.2, .mha_decompress_ms = mha * 0.5, .mha_attention_ms = mha * 0.5};
    snprintf(p.mqa_variant, sizeof p.mqa_variant, "tile_q=64,num_splits=1");
    snprintf(p.mha_variant, sizeof p.mha_variant, "mma=2,tile_q=128");
    snprintf(p.blas, sizeof p.blas, "cuBLASLt 13.1.0");
    return p;
}

static mt_db *open_new(const char *name, char *path, size_t size) {
    path_of(path, size, name);
    unlink(path);
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    return db;
}

static void test_round_trip_and_replace(void) {
    char path[512];
    mt_db *db = open_new("round.db", path, sizeof path);
    int64_t dev = put_device(db, "sm_90", 132, "13.0");
    mt_crossover_point p = point(128, 64, 4096, 1.5, 2.5);
    p.kv_dtype = MT_FP8_E4M3;
    CHECK_OK(mt_db_put_crossover(db, dev, &p));
    mt_crossover_point *got = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_crossover(db, "sm_90", &got, &n));
    CHECK(n == 1);
    if (n == 1) {
        const mt_crossover_point *g = &got[0];
        CHECK(strcmp(g->arch, "sm_90") == 0 && g->compute_units == 132 && strcmp(g->device_name, "Test GPU 132") == 0);
        CHECK(g->n_heads == 128 && g->q_dtype == MT_BF16 && g->kv_dtype == MT_FP8_E4M3 && g->sq == 64 &&
              g->context == 4096);
        CHECK(g->mqa_ms == 1.5 && g->mha_ms == 2.5 && g->mqa_absorb_ms == 1.5 * 0.2 && g->mqa_attention_ms == 1.5 * 0.6 &&
              g->mqa_output_ms == 1.5 * 0.2 && g->mha_decompress_ms == 2.5 * 0.5 && g->mha_attention_ms == 2.5 * 0.5);
        CHECK(strcmp(g->mqa_variant, p.mqa_variant) == 0 && strcmp(g->mha_variant, p.mha_variant) == 0 &&
              strcmp(g->blas, "cuBLASLt 13.1.0") == 0);
        CHECK(g->source[0] == '\0' && strncmp(g->measured_at, "20", 2) == 0);
    }
    free(got);
    CHECK(count("round.db", "SELECT count(*) FROM crossover WHERE tool_version LIKE 'mla-tune %'") == 1);
    /* another arch's filter sees nothing; NULL sees all */
    CHECK_OK(mt_db_load_crossover(db, "gfx942", &got, &n));
    CHECK(n == 0 && got == NULL);
    /* the same point again: replaced, not added */
    p.mqa_ms = 3.0, p.mqa_attention_ms = 1.0;
    CHECK_OK(mt_db_put_crossover(db, dev, &p));
    CHECK(count("round.db", "SELECT count(*) FROM crossover") == 1);
    CHECK(count("round.db", "SELECT count(*) FROM crossover WHERE mqa_ms = 3.0 AND mqa_attention_ms = 1.0") == 1);
    /* another sq or context or dtype is another point */
    p.sq = 65;
    CHECK_OK(mt_db_put_crossover(db, dev, &p));
    p.kv_dtype = MT_BF16;
    CHECK_OK(mt_db_put_crossover(db, dev, &p));
    CHECK_OK(mt_db_load_crossover(db, NULL, &got, &n));
    CHECK(n == 3);
    /* ordered by dtypes, then sq (bf16 before fp8e4m3) */
    CHECK(n == 3 && got[0].kv_dtype == MT_BF16 && got[1].sq == 64 && got[2].sq == 65);
    free(got);
    mt_db_close(db);
}

static void test_refused_fields(void) {
    char path[512];
    mt_db *db = open_new("refused.db", path, sizeof path);
    int64_t dev = put_device(db, "sm_90", 132, "13.0");
    mt_crossover_point ok = point(16, 8, 1024, 1, 2);
    CHECK_OK(mt_db_put_crossover(db, dev, &ok));
    struct {
        const char *said;
        mt_crossover_point p;
        int64_t device;
    } bad[32];
    int n = 0;
#define BAD(text, field, value)                                              \
    do {                                                                     \
        bad[n].p = ok, bad[n].p.context = 2048, bad[n].p.field = value;      \
        bad[n].said = text, bad[n++].device = dev;                           \
    } while (0)
    BAD("n_heads 0 is outside 1..128", n_heads, 0);
    BAD("n_heads 129 is outside 1..128", n_heads, 129);
    BAD("q_dtype 2 (fp8e4m3) is not bf16 or fp16", q_dtype, MT_FP8_E4M3);
    BAD("kv_dtype 9 is not a known dtype", kv_dtype, (mt_dtype)9);
    BAD("sq 0 is outside 1..1024", sq, 0);
    BAD("sq 1025 is outside 1..1024", sq, MT_DECODE_MAX_SQ + 1);
    BAD("context -1 is negative", context, -1);
    BAD("mqa_ms 0 is not a positive finite time", mqa_ms, 0);
    BAD("mha_ms -1 is not a positive finite time", mha_ms, -1);
    BAD("mqa_absorb_ms nan is not a positive finite time", mqa_absorb_ms, NAN);
    BAD("mqa_attention_ms inf is not a positive finite time", mqa_attention_ms, INFINITY);
    BAD("mqa_output_ms 0 is not", mqa_output_ms, 0);
    BAD("mha_decompress_ms -0.5 is not", mha_decompress_ms, -0.5);
    BAD("mha_attention_ms -inf is not", mha_attention_ms, -INFINITY);
#undef BAD
    bad[n].p = ok, bad[n].p.context = 2048, snprintf(bad[n].p.mqa_variant, 200, "tile_q=64\x1b[2J");
    bad[n].said = "mqa_variant is not printable text", bad[n++].device = dev;
    bad[n].p = ok, bad[n].p.context = 2048, memset(bad[n].p.mha_variant, 'x', 199), bad[n].p.mha_variant[199] = '\0';
    bad[n].said = "mha_variant is not printable text of at most 198 characters", bad[n++].device = dev;
    bad[n].p = ok, bad[n].p.context = 2048, snprintf(bad[n].p.blas, 64, "cuBLAS\n");
    bad[n].said = "blas is not printable text", bad[n++].device = dev;
    bad[n].p = ok, bad[n].p.context = 2048;
    bad[n].said = "device_id 999 names no device", bad[n++].device = 999;
    for (int i = 0; i < n; i++) {
        mt_clear_error();
        CHECK_STATUS(mt_db_put_crossover(db, bad[i].device, &bad[i].p), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), bad[i].said) && strstr(mt_last_error(), path), "case %d: wanted '%s' in '%s'",
                  i, bad[i].said, mt_last_error());
    }
    /* nothing written: the one good point, as it was */
    CHECK(count("refused.db", "SELECT count(*) FROM crossover") == 1);
    CHECK(count("refused.db", "SELECT count(*) FROM crossover WHERE context = 1024 AND mqa_ms = 1") == 1);
    /* a device of an arch no build knows: refused before anything is written */
    mt_device_info odd = {.compute_units = 8, .total_memory = 1};
    snprintf(odd.arch, sizeof odd.arch, "sm_13");
    int64_t odd_id = 0;
    CHECK_OK(mt_db_put_device(db, &odd, "", &odd_id));
    CHECK_STATUS(mt_db_put_crossover(db, odd_id, &ok), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "is sm_13 with 8 compute units") != NULL);
    CHECK(count("refused.db", "SELECT count(*) FROM crossover") == 1);
    CHECK_STATUS(mt_db_put_crossover(db, dev, NULL), MT_ERR_INVALID_ARGUMENT);
    mt_db_close(db);
    /* a read-only handle writes nothing either */
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK_STATUS(mt_db_put_crossover(db, dev, &ok), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "read-only") != NULL);
    mt_db_close(db);
}

static void test_schema5_file(void) {
    char path[512];
    path_of(path, sizeof path, "v5.db");
    CHECK_OK(mt_db_create_at_version(path, 5));
    sqlite3 *h = NULL;
    sqlite3_open(path, &h);
    CHECK(sqlite3_exec(h, "INSERT INTO devices(id,arch,name,compute_units,memory_bytes,driver_version,compiler_version) "
                          "VALUES(1,'sm_90','Old GPU',132,1,'12.8','nvrtc-12.8');",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    /* read: migrated in memory (the table is there, empty); the file stays at 5 */
    mt_db *db = NULL;
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK(db && mt_db_schema_version(db) == 6);
    mt_crossover_point *got = NULL;
    int n = -1;
    CHECK_OK(mt_db_load_crossover(db, NULL, &got, &n));
    CHECK(n == 0 && got == NULL);
    mt_db_close(db);
    CHECK(db_query_int(path, "PRAGMA user_version") == 5);
    CHECK(db_query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'crossover'") == 0);
    /* write: migrated in place, the device kept and usable for a point */
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &db));
    CHECK(db_query_int(path, "PRAGMA user_version") == 6);
    mt_crossover_point p = point(128, 32, 0, 0.5, 0.25);
    CHECK_OK(mt_db_put_crossover(db, 1, &p));
    CHECK_OK(mt_db_load_crossover(db, "sm_90", &got, &n));
    CHECK(n == 1 && got && strcmp(got[0].device_name, "Old GPU") == 0 && got[0].context == 0);
    free(got);
    mt_db_close(db);
}

/* Rows a hostile (or damaged) file may hold, each written over a good
 * point with SQL: the loader and the copy refuse them, naming the row and
 * what is wrong. */
static void test_hostile_rows(void) {
    static const struct {
        const char *sql, *said;
    } cases[] = {
        {"UPDATE crossover SET n_heads = 0", "n_heads 0 is outside 1..128"},
        {"UPDATE crossover SET sq = 5000", "sq 5000 is outside 1..1024"},
        {"UPDATE crossover SET context = 2147483648", "context 2147483648 is outside 0..2^31-1"},
        {"UPDATE crossover SET context = -5", "context -5 is outside"},
        {"UPDATE crossover SET context = 'lots'", "are not all integers"},
        {"UPDATE crossover SET mqa_ms = 'fast'", "mqa_ms 'fast' is not a positive time"},
        {"UPDATE crossover SET mha_attention_ms = -1", "mha_attention_ms '-1.0' is not a positive time"},
        {"UPDATE crossover SET mha_ms = 9e999", "mha_ms 'Inf' is not a positive time"},
        {"UPDATE crossover SET q_dtype = 'fp4'", "unknown dtype 'fp4'"},
        {"UPDATE crossover SET q_dtype = 'fp8e4m3'", "q_dtype 2 (fp8e4m3) is not bf16 or fp16"},
        {"UPDATE devices SET compute_units = 0", "its device has 0 compute units"},
        {"UPDATE devices SET arch = 'sm_13'", "sm_13"},
        {"UPDATE crossover SET mqa_variant = 'a' || char(27) || '[2J'", "mqa_variant is not printable text"},
        {"UPDATE crossover SET blas = printf('%.300c', 'x')", "blas is not printable text of at most 62 characters"},
    };
    char good[512], path[512], out[512];
    mt_db *db = open_new("hostile-good.db", good, sizeof good);
    int64_t dev = put_device(db, "sm_90", 132, "13.0");
    mt_crossover_point p = point(16, 8, 1024, 1, 2);
    CHECK_OK(mt_db_put_crossover(db, dev, &p));
    mt_db_close(db);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64], cmd[2048];
        snprintf(name, sizeof name, "hostile-%zu.db", i);
        path_of(path, sizeof path, name);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s' && sqlite3 '%s' \"%s\"", good, path, path, cases[i].sql);
        CHECK_MSG(system(cmd) == 0, "%s", cmd);
        CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
        mt_crossover_point *got = NULL;
        int n = 0;
        CHECK_STATUS(mt_db_load_crossover(db, NULL, &got, &n), MT_ERR_CORRUPT);
        CHECK_MSG(n == 0 && got == NULL && strstr(mt_last_error(), path) &&
                  strstr(mt_last_error(), "invalid crossover point 1 (") && strstr(mt_last_error(), cases[i].said),
                  "%s: wanted '%s' in '%s'", cases[i].sql, cases[i].said, mt_last_error());
        /* nor can it spread: the copy fails, the destination holds no point */
        snprintf(name, sizeof name, "hostile-out-%zu.db", i);
        mt_db *dst = open_new(name, out, sizeof out);
        mt_copy_counts copied;
        CHECK_STATUS(mt_db_copy_counted(db, dst, NULL, &copied), MT_ERR_CORRUPT);
        CHECK(strstr(mt_last_error(), cases[i].said) != NULL);
        mt_db_close(dst);
        CHECK(count(name, "SELECT count(*) FROM crossover") == 0);
        mt_db_close(db);
    }
}

/* One GPU under two device rows (the driver changed between two runs):
 * one point, the later one. */
static void test_device_twins(void) {
    char path[512];
    mt_db *db = open_new("twins.db", path, sizeof path);
    int64_t old_dev = put_device(db, "sm_90", 132, "12.8"), new_dev = put_device(db, "sm_90", 132, "13.0");
    int64_t other = put_device(db, "sm_90", 114, "13.0");
    mt_crossover_point p = point(128, 64, 4096, 1, 2);
    CHECK_OK(mt_db_put_crossover(db, new_dev, &p));
    p.mqa_ms = 9;
    CHECK_OK(mt_db_put_crossover(db, old_dev, &p));
    CHECK_OK(mt_db_put_crossover(db, other, &p));
    /* the 13.0 row is the later one, whatever the insertion order says */
    CHECK_OK(mt_db_exec(db, "UPDATE crossover SET measured_at = '2026-01-01T00:00:00.000Z' WHERE mqa_ms = 9;"
                            "UPDATE crossover SET measured_at = '2026-02-01T00:00:00.000Z' WHERE mqa_ms = 1"));
    mt_crossover_point *got = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_crossover(db, "sm_90", &got, &n));
    CHECK_MSG(n == 2, "%d points", n);
    if (n == 2) {
        CHECK(got[0].compute_units == 114 && got[0].mqa_ms == 9);
        CHECK(got[1].compute_units == 132 && got[1].mqa_ms == 1 && strcmp(got[1].measured_at, "2026-02-01T00:00:00.000Z") == 0);
    }
    free(got);
    mt_db_close(db);
}

static void test_transfer_and_overlay(void) {
    char a_path[512], b_path[512], m_path[512], e_path[512];
    mt_db *a = open_new("xa.db", a_path, sizeof a_path), *b = open_new("xb.db", b_path, sizeof b_path);
    int64_t a_dev = put_device(a, "sm_90", 132, "13.0"), a_amd = put_device(a, "gfx942", 304, "6.3");
    int64_t b_dev = put_device(b, "sm_90", 132, "13.0");
    mt_crossover_point p = point(128, 64, 4096, 1, 2);
    CHECK_OK(mt_db_put_crossover(a, a_dev, &p));
    CHECK_OK(mt_db_put_crossover(a, a_amd, &p));
    p.mqa_ms = 7;
    CHECK_OK(mt_db_put_crossover(b, b_dev, &p));  /* the same point, measured later in b */
    p.sq = 128, p.mqa_ms = 3;
    CHECK_OK(mt_db_put_crossover(b, b_dev, &p));
    CHECK_OK(mt_db_exec(a, "UPDATE crossover SET measured_at = '2026-01-01T00:00:00.000Z'"));
    CHECK_OK(mt_db_exec(b, "UPDATE crossover SET measured_at = '2026-03-01T00:00:00.000Z'"));
    /* merge in both orders: the newer of the shared point stays */
    for (int order = 0; order < 2; order++) {
        mt_db *m = open_new("xm.db", m_path, sizeof m_path);
        mt_copy_counts c1, c2;
        CHECK_OK(mt_db_copy_counted(order ? b : a, m, NULL, &c1));
        CHECK_OK(mt_db_copy_counted(order ? a : b, m, NULL, &c2));
        CHECK(c1.measurements == 0 && c2.measurements == 0);
        CHECK_MSG(c1.crossover_points + c2.crossover_points == (order ? 3 : 4), "order %d: %d + %d points", order,
                  c1.crossover_points, c2.crossover_points);
        CHECK(count("xm.db", "SELECT count(*) FROM crossover") == 3);
        CHECK(count("xm.db", "SELECT count(*) FROM crossover WHERE sq = 64 AND mqa_ms = 7") == 1);
        CHECK(count("xm.db", "SELECT count(*) FROM crossover x JOIN devices d ON d.id = x.device_id "
                             "WHERE d.arch = 'gfx942' AND d.compute_units = 304 AND d.driver_version = '6.3'") == 1);
        /* copying again adds nothing */
        CHECK_OK(mt_db_copy_counted(a, m, NULL, &c1));
        CHECK(c1.crossover_points == 0);
        mt_db_close(m);
    }
    /* export of one arch: its points only, and a shippable file keeps them */
    mt_db *e = open_new("xe.db", e_path, sizeof e_path);
    mt_copy_counts c;
    CHECK_OK(mt_db_copy_counted(a, e, "gfx942", &c));
    CHECK(c.crossover_points == 1);
    CHECK_OK(mt_db_make_shippable(e));
    mt_db_close(e);
    CHECK_OK(mt_db_open(e_path, MT_DB_READ, &e));
    mt_crossover_point *got = NULL;
    int n = 0;
    CHECK_OK(mt_db_load_crossover(e, NULL, &got, &n));
    CHECK(n == 1 && got && strcmp(got[0].arch, "gfx942") == 0 && got[0].compute_units == 304);
    free(got);
    mt_db_close(e);
    /* overlay: b (user) over a (system): b's point replaces a's, a's other
     * points stay, each says where it came from */
    mt_db_close(a);
    mt_db_close(b);
    CHECK_OK(mt_db_load_crossover_overlay(b_path, 1, a_path, 1, "sm_90", &got, &n));
    CHECK_MSG(n == 2, "%d points", n);
    if (n == 2) {
        CHECK(got[0].sq == 64 && got[0].mqa_ms == 7 && strcmp(got[0].source, "user") == 0);
        CHECK(got[1].sq == 128 && strcmp(got[1].source, "user") == 0);
    }
    free(got);
    CHECK_OK(mt_db_load_crossover_overlay(b_path, 1, a_path, 1, NULL, &got, &n));
    CHECK(n == 3 && strcmp(got[0].arch, "gfx942") == 0 && strcmp(got[0].source, "system") == 0);
    free(got);
    /* a missing file: nothing when not required, an error naming it when required */
    char missing[512];
    path_of(missing, sizeof missing, "none.db");
    CHECK_OK(mt_db_load_crossover_overlay(missing, 0, a_path, 1, "sm_90", &got, &n));
    CHECK(n == 1 && strcmp(got[0].source, "system") == 0);
    free(got);
    CHECK_STATUS(mt_db_load_crossover_overlay(missing, 1, a_path, 1, "sm_90", &got, &n), MT_ERR_NOT_FOUND);
    CHECK(strstr(mt_last_error(), missing) != NULL && n == 0 && got == NULL);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-crossover-db-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_round_trip_and_replace();
    test_refused_fields();
    test_schema5_file();
    test_hostile_rows();
    test_device_twins();
    test_transfer_and_overlay();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_crossover_db");
}
