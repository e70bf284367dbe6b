/*
 * variant.c - generic handling of variant descriptions (see variant.h):
 * validation, formatting, parsing, defines and space enumeration.
 */
#define _GNU_SOURCE
#include "variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "runtime/gpu/backend.h"

const char *mt_dtype_name(mt_dtype t) {
    switch (t) {
    case MT_BF16: return "bf16";
    case MT_FP16: return "fp16";
    case MT_FP8_E4M3: return "fp8e4m3";
    case MT_FP8_E4M3_FNUZ: return "fp8e4m3fnuz";
    }
    return "?";
}

int mt_dtype_is_fp8(mt_dtype t) { return t == MT_FP8_E4M3 || t == MT_FP8_E4M3_FNUZ; }

size_t mt_dtype_size(mt_dtype t) { return mt_dtype_is_fp8(t) ? 1 : 2; }

mt_status mt_dtype_parse(const char *s, mt_dtype *out) {
    if (!s) return mt_fail(MT_ERR_INVALID_ARGUMENT, "no dtype given");
    if (strcmp(s, "bf16") == 0) *out = MT_BF16;
    else if (strcmp(s, "fp16") == 0) *out = MT_FP16;
    else if (strcmp(s, "fp8e4m3") == 0 || strcmp(s, "fp8") == 0) *out = MT_FP8_E4M3;
    else if (strcmp(s, "fp8e4m3fnuz") == 0) *out = MT_FP8_E4M3_FNUZ;
    else
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "unknown dtype '%s' (expected bf16, fp16, fp8e4m3 or fp8e4m3fnuz)", s);
    return MT_OK;
}

mt_status mt_target_for_arch(const char *arch, mt_target *t) {
    /* shared_max: the most one group can use (NVIDIA: the opt-in limit) */
    static const struct { const char *arch; int warp; size_t shared; } table[] = {
        {"sm_80", 32, 166912}, {"sm_86", 32, 101376}, {"sm_89", 32, 101376},
        {"sm_90", 32, 232448}, {"sm_90a", 32, 232448}, {"sm_100", 32, 232448},
        {"gfx90a", 64, 65536}, {"gfx942", 64, 65536}, {"gfx950", 64, 163840},
    };
    if (!arch) return mt_fail(MT_ERR_INVALID_ARGUMENT, "no architecture given");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].arch, arch) == 0) {
            snprintf(t->arch, sizeof t->arch, "%s", arch);
            t->warp_size = table[i].warp;
            t->shared_max = table[i].shared;
            return MT_OK;
        }
    return mt_fail(MT_ERR_INVALID_ARGUMENT,
                   "unknown architecture '%s' (known: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, gfx90a, "
                   "gfx942, gfx950)", arch);
}

void mt_variant_default(const mt_family *f, mt_variant *v) {
    memset(v, 0, sizeof *v);
    v->family = f;
    for (int i = 0; i < f->n_params; i++) v->values[i] = f->params[i].default_value;
}

int mt_family_param_index(const mt_family *f, const char *name) {
    for (int i = 0; i < f->n_params; i++)
        if (strcmp(f->params[i].name, name) == 0) return i;
    return -1;
}

static int allowed(const mt_param_desc *p, int value) {
    for (int i = 0; i < p->n_values; i++)
        if (p->values[i] == value) return 1;
    return 0;
}

static void format_allowed(const mt_param_desc *p, char *buf, size_t size) {
    buf[0] = '\0';
    for (int i = 0; i < p->n_values; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%d", i ? ", " : "", p->values[i]);
    }
}

mt_status mt_variant_validate(const mt_variant *v, const mt_problem_static *s, const mt_target *t) {
    if (!v || !v->family) return mt_fail(MT_ERR_INVALID_ARGUMENT, "variant has no family");
    const mt_family *f = v->family;
    for (int i = 0; i < f->n_params; i++)
        if (!allowed(&f->params[i], v->values[i])) {
            char list[256];
            format_allowed(&f->params[i], list, sizeof list);
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: %s=%d is not an allowed value (allowed: %s)", f->name,
                           f->params[i].name, v->values[i], list);
        }
    return f->check(v->values, s, t);
}

int mt_variant_same(const mt_variant *a, const mt_variant *b) {
    return a->family == b->family && memcmp(a->values, b->values, sizeof a->values) == 0;
}

void mt_variant_format(const mt_variant *v, char *buf, size_t size) {
    buf[0] = '\0';
    for (int i = 0; i < v->family->n_params; i++) {
        size_t used = strlen(buf);
        if (used >= size) return;
        const mt_param_desc *p = &v->family->params[i];
        if (p->omitted_at_default && v->values[i] == p->default_value) continue;
        snprintf(buf + used, size - used, "%s%s=%d", used ? "," : "", p->name, v->values[i]);
    }
}

mt_status mt_variant_parse(const mt_family *f, const char *text, mt_variant *v) {
    memset(v, 0, sizeof *v);
    v->family = f;
    int seen[MT_MAX_PARAMS] = {0};
    char *copy = strdup(text ? text : "");
    if (!copy) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st = MT_OK;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && st == MT_OK; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: '%s' is not NAME=VALUE", f->name, item);
            break;
        }
        *eq = '\0';
        int idx = mt_family_param_index(f, item);
        char *end = NULL;
        long value = strtol(eq + 1, &end, 10);
        if (idx < 0)
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s has no parameter '%s'", f->name, item);
        else if (seen[idx])
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: parameter '%s' given twice", f->name, item);
        else if (!end || *end != '\0' || end == eq + 1 || value < -1000000 || value > 1000000)
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: %s='%s' is not an integer", f->name, item, eq + 1);
        else {
            seen[idx] = 1;
            v->values[idx] = (int)value;
        }
    }
    free(copy);
    if (st != MT_OK) return st;
    for (int i = 0; i < f->n_params; i++) {
        if (seen[i]) continue;
        if (!f->params[i].added_later)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: parameter '%s' missing", f->name, f->params[i].name);
        v->values[i] = f->params[i].default_value;
    }
    return MT_OK;
}

int mt_variant_defines(const mt_variant *v, const mt_problem_static *s, char storage[][48],
                       const char *defines[], int n_max) {
    int n = 0;
    if (n_max < 6 + v->family->n_params) return 0;
    snprintf(storage[n], 48, "D=%d", s->d), defines[n] = storage[n], n++;
    snprintf(storage[n], 48, "DL=%d", s->dl), defines[n] = storage[n], n++;
    snprintf(storage[n], 48, "PAGE_SIZE=%d", s->page_size), defines[n] = storage[n], n++;
    snprintf(storage[n], 48, "Q_DTYPE=%d", (int)s->q_dtype), defines[n] = storage[n], n++;
    snprintf(storage[n], 48, "KV_DTYPE=%d", (int)s->kv_dtype), defines[n] = storage[n], n++;
    snprintf(storage[n], 48, "VIEWS=%d", s->views ? 1 : 0), defines[n] = storage[n], n++;
    for (int i = 0; i < v->family->n_params; i++) {
        const mt_param_desc *p = &v->family->params[i];
        snprintf(storage[n], 48, "%s=%d", p->define, p->define_as_flag ? v->values[i] != 0 : v->values[i]);
        defines[n] = storage[n];
        n++;
    }
    return n;
}

void mt_space_full(const mt_family *f, mt_space *sp) {
    memset(sp, 0, sizeof *sp);
    sp->family = f;
    for (int i = 0; i < f->n_params; i++) {
        if (f->params[i].omitted_at_default) { /* see variant.h */
            sp->n_values[i] = 1, sp->values[i][0] = f->params[i].default_value;
            continue;
        }
        sp->n_values[i] = f->params[i].n_values;
        memcpy(sp->values[i], f->params[i].values, sizeof(int) * (size_t)f->params[i].n_values);
    }
}

int mt_space_enumerate(const mt_space *sp, const mt_problem_static *s, const mt_target *t,
                       int (*visit)(const mt_variant *v, void *user), void *user, int *rejected) {
    const mt_family *f = sp->family;
    int idx[MT_MAX_PARAMS] = {0};
    int visited = 0, pruned = 0;
    for (int i = 0; i < f->n_params; i++)
        if (sp->n_values[i] == 0) goto done;
    for (;;) {
        mt_variant v = {.family = f};
        for (int i = 0; i < f->n_params; i++) v.values[i] = sp->values[i][idx[i]];
        if (mt_variant_validate(&v, s, t) == MT_OK) {
            visited++;
            if (visit && visit(&v, user)) goto done;
        } else {
            pruned++;
        }
        int i = f->n_params - 1;  /* odometer: last parameter changes fastest */
        while (i >= 0 && ++idx[i] == sp->n_values[i]) idx[i--] = 0;
        if (i < 0) break;
    }
done:
    if (rejected) *rejected = pruned;
    mt_clear_error();
    return visited;
}

typedef struct variant_list {
    mt_variant *items;
    int n, cap, out_of_memory;
} variant_list;

static int append_variant(const mt_variant *v, void *user) {
    variant_list *l = user;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 128;
        mt_variant *grown = realloc(l->items, sizeof *grown * (size_t)cap);
        if (!grown) return l->out_of_memory = 1;
        l->items = grown, l->cap = cap;
    }
    l->items[l->n++] = *v;
    return 0;
}

mt_status mt_space_list(const mt_space *sp, const mt_problem_static *s, const mt_target *t, mt_variant **out, int *n,
                        int *rejected) {
    variant_list l = {0};
    mt_space_enumerate(sp, s, t, append_variant, &l, rejected);
    if (l.out_of_memory) {
        free(l.items);
        *out = NULL, *n = 0;
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory listing a search space");
    }
    *out = l.items, *n = l.n;
    return MT_OK;
}

typedef struct nearest_ctx {
    const mt_variant *want;
    mt_variant best;
    int best_distance;
} nearest_ctx;

static int value_index(const mt_param_desc *p, int value) {
    for (int i = 0; i < p->n_values; i++)
        if (p->values[i] == value) return i;
    return 0;
}

static int visit_nearest(const mt_variant *v, void *user) {
    nearest_ctx *c = user;
    int d = 0;
    for (int i = 0; i < v->family->n_params; i++) {
        int a = value_index(&v->family->params[i], v->values[i]);
        int b = value_index(&v->family->params[i], c->want->values[i]);
        d += a > b ? a - b : b - a;
    }
    if (c->best_distance < 0 || d < c->best_distance) c->best = *v, c->best_distance = d;
    return 0;
}

mt_status mt_variant_default_for(const mt_family *f, const mt_problem_static *s, const mt_target *t, mt_variant *v) {
    mt_variant_default(f, v);
    if (mt_variant_validate(v, s, t) == MT_OK) return MT_OK;
    nearest_ctx c = {.want = v, .best_distance = -1};
    mt_space sp;
    mt_space_full(f, &sp);
    mt_space_enumerate(&sp, s, t, visit_nearest, &c, NULL);
    if (c.best_distance < 0)
        return mt_fail(MT_ERR_UNSUPPORTED, "%s: no variant fits D=%d Dl=%d page %d on %s", f->name, s->d, s->dl,
                       s->page_size, t->arch);
    *v = c.best;
    return MT_OK;
}

void mt_target_from_device(const mt_device_info *info, mt_target *t) {
    memset(t, 0, sizeof *t);
    snprintf(t->arch, sizeof t->arch, "%s", info->arch);
    t->warp_size = info->warp_size;
    t->shared_max = info->shared_per_group_max;
}
