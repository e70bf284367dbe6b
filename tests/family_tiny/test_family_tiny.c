/*
 * test_family_tiny.c - a second kernel family, defined only in this folder,
 * goes through every part of the library a family meets: registration,
 * its space and constraints, variant strings, the dispatcher (DB entries
 * and the built-in rule), the build recipe (its own embedded sources, the
 * JIT) and its launch, run on the CPU emulation of an AMD GPU (the
 * "hip-cpu" backend, so this runs on hosts without a GPU).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/dispatch.h"
#include "tiny.h"

/* what the registry refuses: a second family of a known name, one without hooks */
static void registration(void) {
    CHECK_OK(mt_family_register(&mt_family_tiny));
    CHECK(mt_family_find("test_tiny") == &mt_family_tiny);
    CHECK(mt_family_for_kind("tiny") == &mt_family_tiny);
    CHECK(mt_family_for_kind("mla_decode") == &mt_family_mla_decode); /* the library's own stays */
    CHECK_STATUS(mt_family_register(&mt_family_tiny), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "already registered") != NULL, "%s", mt_last_error());
    mt_family same_alias = mt_family_tiny;
    same_alias.name = "mla_decode_simt"; /* the decode family's old name */
    CHECK_STATUS(mt_family_register(&same_alias), MT_ERR_INVALID_ARGUMENT);
    mt_family no_launch = mt_family_tiny;
    no_launch.name = "test_tiny_broken", no_launch.launch = NULL;
    CHECK_STATUS(mt_family_register(&no_launch), MT_ERR_INVALID_ARGUMENT);
    CHECK(mt_family_find("test_tiny_broken") == NULL);
}

/* the space, pruned by the family's own check; strings round-trip */
static int space(const mt_target *t, mt_variant **points) {
    mt_space sp;
    mt_space_full(&mt_family_tiny, &sp);
    int n = 0, rejected = 0;
    mt_problem_static s = {.d = 1, .dl = 1, .page_size = 1};
    CHECK_OK(mt_space_list(&sp, &s, t, points, &n, &rejected));
    /* warp 64: block 32 is out (4 points); 128 x 8, 256 x 4 and 256 x 8 exceed 512 */
    CHECK_MSG(n == 16 - 4 - 3 && rejected == 7, "%d points, %d rejected", n, rejected);
    char text[200];
    mt_variant back;
    mt_variant_format(&(*points)[0], text, sizeof text);
    CHECK_MSG(strcmp(text, "block=64,items=1") == 0, "%s", text);
    CHECK_OK(mt_variant_parse(&mt_family_tiny, text, &back));
    CHECK(memcmp(back.values, (*points)[0].values, sizeof back.values) == 0);
    CHECK_STATUS(mt_variant_parse(&mt_family_tiny, "block=64,itms=1", &back), MT_ERR_INVALID_ARGUMENT);
    CHECK_OK(mt_variant_parse(&mt_family_tiny, "block=64,items=3", &back));
    CHECK_STATUS(mt_variant_validate(&back, &s, t), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "items=3 is not an allowed value") != NULL, "%s", mt_last_error());
    return n;
}

/* the dispatcher, knowing nothing of this family, serves it from DB
 * entries and from its rule */
static void dispatch(const mt_target *t) {
    mt_problem_key shape;
    memset(&shape, 0, sizeof shape);
    snprintf(shape.kind, sizeof shape.kind, "tiny");
    shape.s = (mt_problem_static){.d = 1, .dl = 1, .page_size = 1};
    shape.n_heads = 1, shape.sq = 1;
    mt_choice c[2];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 2; i++) {
        snprintf(c[i].arch, sizeof c[i].arch, "%s", t->arch);
        c[i].key = shape;
        c[i].key.batch = i ? 64 : 1, c[i].key.seq_len = 1024, c[i].key.max_len = 1024;
        snprintf(c[i].family, sizeof c[i].family, "test_tiny");
        c[i].median_ms = 0.01;
    }
    snprintf(c[0].params, sizeof c[0].params, "block=128,items=2");
    snprintf(c[1].params, sizeof c[1].params, "block=256,items=1");
    mt_dispatch_table table;
    CHECK_OK(mt_dispatch_build(c, NULL, 2, &shape, t, 304, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    CHECK(!table.heuristic && table.n_variants == 2 && table.family == &mt_family_tiny);
    mt_dispatch_result r;
    mt_dispatch_lookup(&table, 48, 1024, 0, &r);
    CHECK_MSG(r.entry && r.entry->batch == 64 && table.variants[r.variant].values[TINY_P_BLOCK] == 256,
              "batch 48 went to variant %d", r.variant);
    mt_dispatch_free(&table);
    /* a DB entry the family's check refuses is an error naming it */
    snprintf(c[0].params, sizeof c[0].params, "block=256,items=8");
    CHECK_STATUS(mt_dispatch_build(c, NULL, 1, &shape, t, 304,
                                   MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table), MT_ERR_CORRUPT);
    CHECK_MSG(strstr(mt_last_error(), "block x items") != NULL, "%s", mt_last_error());
    mt_dispatch_free(&table);
    /* no entry: the family's rule, and its explanation */
    CHECK_OK(mt_dispatch_build(NULL, NULL, 0, &shape, t, 304, MT_DISPATCH_MAX_BATCH, MT_DISPATCH_RESCALED, &table));
    mt_dispatch_lookup(&table, 7, 100, 0, &r);
    char why[160];
    mt_dispatch_explain(&table, &r, why, sizeof why);
    CHECK(table.heuristic && table.n_variants == 1 && !r.entry && table.variants[r.variant].values[TINY_P_BLOCK] == 64);
    CHECK_MSG(strcmp(why, "test_tiny: the default variant") == 0, "%s", why);
    mt_dispatch_free(&table);
}

/* every valid variant built by the one recipe and launched through the
 * family: y = 2x + 1 exactly, for an n no work-group size divides */
static void build_and_run(mt_backend *b, const mt_target *t, const mt_variant *points, int n_points) {
    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(b, "", &jit));
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) - 40.0f;
    mt_devptr dx = 0, dy = 0;
    CHECK_OK(mt_backend_mem_alloc(b, sizeof x, &dx));
    CHECK_OK(mt_backend_mem_alloc(b, sizeof y, &dy));
    CHECK_OK(mt_backend_copy_to_device(b, dx, x, sizeof x, NULL));
    mt_problem_static s = {.d = 1, .dl = 1, .page_size = 1};
    uint8_t first_key[32];
    for (int v = 0; v < n_points; v++) {
        mt_kernels k;
        const mt_code_object *obj = NULL;
        CHECK_OK(mt_build_compile(jit, &points[v], &s, t, &obj, NULL));
        CHECK_OK(mt_build_load(jit, obj, &points[v], &s, t, &k));
        if (v == 0) memcpy(first_key, obj->key, 32);
        else CHECK(memcmp(first_key, obj->key, 32) != 0); /* each variant its own code object */
        memset(y, 0, sizeof y);
        CHECK_OK(mt_backend_copy_to_device(b, dy, y, sizeof y, NULL));
        tiny_args a = {.x = dx, .y = dy, .n = N - 3, .a = 2.0f, .b = 1.0f};
        CHECK_OK(mt_family_tiny.launch(b, &k, &points[v], &s, &a, NULL));
        CHECK_OK(mt_backend_synchronize(b));
        CHECK_OK(mt_backend_copy_to_host(b, y, dy, sizeof y, NULL));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += y[i] != (i < N - 3 ? 2.0f * x[i] + 1.0f : 0.0f);
        char name[64];
        mt_variant_format(&points[v], name, sizeof name);
        CHECK_MSG(bad == 0, "%s: %d wrong elements", name, bad);
    }
    /* a call the family refuses launches nothing */
    mt_kernels none = {{0}};
    tiny_args empty = {.x = dx, .y = dy, .n = 0};
    CHECK_STATUS(mt_family_tiny.launch(b, &none, &points[0], &s, &empty, NULL), MT_ERR_INVALID_ARGUMENT);
    mt_backend_mem_free(b, dx);
    mt_backend_mem_free(b, dy);
    mt_jit_stats st = mt_jit_get_stats(jit);
    CHECK_MSG(st.compiles == n_points, "%ld compiles for %d variants", st.compiles, n_points);
    mt_jit_destroy(jit);
}

int main(void) {
    registration();
    setenv("MLA_TUNE_EMU_ARCH", "gfx942", 1);
    mt_backend *b = NULL;
    mt_status st = mt_backend_open("hip-cpu", &b);
    /* no skip: CI installs clang (tests/setup-deps.sh); a missing one fails */
    CHECK_MSG(st == MT_OK, "hip-cpu backend: %s", mt_last_error());
    if (st != MT_OK) return check_summary("test_family_tiny");
    mt_device_info info;
    CHECK_OK(mt_backend_device_info(b, 0, &info));
    mt_target t;
    mt_target_from_device(&info, &t);
    mt_variant *points = NULL;
    int n = space(&t, &points);
    dispatch(&t);
    build_and_run(b, &t, points, n);
    free(points);
    mt_backend_close(b);
    return check_summary("test_family_tiny");
}
