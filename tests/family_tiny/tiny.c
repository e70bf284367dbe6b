/*
 * tiny.c - the test family's host side: its parameters, constraints,
 * sources (embedded from this folder into mt_tiny_files), launch and
 * built-in rule.  See tiny.h.
 */
#include "tiny.h"

#include <stdio.h>
#include <string.h>

#include "tiny_params.h"

extern const mt_source_file mt_tiny_files[];

static const mt_param_desc tiny_param_list[] = {
    {"block", "BLOCK", {32, 64, 128, 256}, 4, 64, "threads per work-group", 0, 0, 0},
    {"items", "ITEMS", {1, 2, 4, 8}, 4, 1, "elements per thread", 0, 0, 0},
};

/* a work-group covers at most 512 elements, and whole warps */
static mt_status tiny_check(const int *values, const mt_problem_static *s, const mt_target *t) {
    (void)s;
    if (t->warp_size > 0 && values[TINY_P_BLOCK] % t->warp_size != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "test_tiny: block=%d is not a multiple of %s's warp (%d)",
                       values[TINY_P_BLOCK], t->arch, t->warp_size);
    if (values[TINY_P_BLOCK] * values[TINY_P_ITEMS] > 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "test_tiny: block x items = %d > 512",
                       values[TINY_P_BLOCK] * values[TINY_P_ITEMS]);
    return MT_OK;
}

static int tiny_sources(const mt_variant *v, const mt_problem_static *s, int warp_size,
                        const char *names[MT_MAX_SOURCES]) {
    (void)v, (void)s, (void)warp_size;
    names[0] = "tiny_params.h", names[1] = "tiny.cu";
    return 2;
}

static void tiny_entries(const mt_variant *v, const char *names[MT_MAX_ENTRIES]) {
    (void)v;
    names[0] = "tiny_axpb", names[1] = names[2] = NULL;
}

static size_t tiny_shared(const mt_variant *v, const mt_problem_static *s, int warp_size) {
    (void)v, (void)s, (void)warp_size;
    return 0;
}

static size_t tiny_workspace(const mt_variant *v, const mt_shape *shape, int batch, int compute_units) {
    (void)v, (void)shape, (void)batch, (void)compute_units;
    return 0;
}

static mt_status tiny_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                             const void *args, mt_stream stream) {
    (void)s;
    const tiny_args *a = args;
    if (!k || !k->fn[0]) return mt_fail(MT_ERR_INVALID_ARGUMENT, "test_tiny: kernel function missing");
    if (a->n < 1 || !a->x || !a->y) return mt_fail(MT_ERR_INVALID_ARGUMENT, "test_tiny: n=%d or a null pointer", a->n);
    tiny_params p = {.x = a->x, .y = a->y, .n = a->n, .a = a->a, .b = a->b};
    int per_group = v->values[TINY_P_BLOCK] * v->values[TINY_P_ITEMS];
    unsigned grid[3] = {(unsigned)((a->n + per_group - 1) / per_group), 1, 1};
    unsigned block[3] = {(unsigned)v->values[TINY_P_BLOCK], 1, 1};
    void *kargs[] = {&p};
    return mt_backend_launch(b, k->fn[0], grid, block, 0, stream, kargs);
}

static int tiny_length_aware(const mt_variant *v) {
    (void)v;
    return 0;
}

/* the rule: the default (or the nearest valid point), whatever the call */
static mt_status tiny_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set) {
    memset(set, 0, sizeof *set);
    set->aware = -1;
    set->n = 1;
    return mt_variant_default_for(&mt_family_tiny, &shape->s, t, &set->variants[0]);
}

static int tiny_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                               int compute_units) {
    (void)set, (void)shape, (void)call, (void)compute_units;
    return 0;
}

static void tiny_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size) {
    (void)set, (void)pick;
    snprintf(buf, size, "test_tiny: the default variant");
}

const mt_family mt_family_tiny = {
    .name = "test_tiny",
    .kind = "tiny",
    .params = tiny_param_list,
    .n_params = 2,
    .files = mt_tiny_files,
    .check = tiny_check,
    .sources = tiny_sources,
    .entries = tiny_entries,
    .shared_bytes = tiny_shared,
    .workspace_bytes = tiny_workspace,
    .launch = tiny_launch,
    .length_aware = tiny_length_aware,
    .heuristic_set = tiny_heuristic_set,
    .heuristic_pick = tiny_heuristic_pick,
    .heuristic_explain = tiny_heuristic_explain,
};
