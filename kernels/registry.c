/*
 * registry.c - the families the library is built with, and those added at
 * run time (see family.h).  This file and each family's folder are all a
 * new family touches.
 */
#include <pthread.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_prefill/mla_prefill.h"

enum { MT_MAX_FAMILIES = 16 };

static const mt_family *families[MT_MAX_FAMILIES] = {&mt_family_mla_decode, &mt_family_mla_prefill};
static int n_families = 2;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int mt_family_count(void) {
    pthread_mutex_lock(&lock);
    int n = n_families;
    pthread_mutex_unlock(&lock);
    return n;
}

const mt_family *mt_family_at(int i) {
    pthread_mutex_lock(&lock);
    const mt_family *f = i >= 0 && i < n_families ? families[i] : NULL;
    pthread_mutex_unlock(&lock);
    return f;
}

static int answers_to(const mt_family *f, const char *name) {
    if (strcmp(f->name, name) == 0) return 1;
    for (const char *const *a = f->aliases; a && *a; a++)
        if (strcmp(*a, name) == 0) return 1;
    return 0;
}

const mt_family *mt_family_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0, n = mt_family_count(); i < n; i++)
        if (answers_to(mt_family_at(i), name)) return mt_family_at(i);
    return NULL;
}

const mt_family *mt_family_for_kind(const char *kind) {
    if (!kind) return NULL;
    for (int i = 0, n = mt_family_count(); i < n; i++)
        if (strcmp(mt_family_at(i)->kind, kind) == 0) return mt_family_at(i);
    return NULL;
}

mt_status mt_family_register(const mt_family *f) {
    if (!f || !f->name || !f->kind || !f->params || f->n_params < 1 || f->n_params > MT_MAX_PARAMS || !f->check ||
        !f->sources || !f->entries || !f->shared_bytes || !f->workspace_bytes || !f->launch || !f->length_aware ||
        !f->heuristic_set || !f->heuristic_pick || !f->heuristic_explain)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "family '%s' lacks a required part (name, kind, 1..%d parameters, "
                       "or a hook)", f && f->name ? f->name : "?", MT_MAX_PARAMS);
    if ((f->schedule == NULL) != (f->schedule_bytes == NULL))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "family '%s': schedule and schedule_bytes come together", f->name);
    pthread_mutex_lock(&lock);
    mt_status st = MT_OK;
    for (int i = 0; i < n_families && st == MT_OK; i++)
        if (answers_to(families[i], f->name))
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "a family named '%s' is already registered", f->name);
    if (st == MT_OK && n_families == MT_MAX_FAMILIES)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "no room for family '%s': %d are registered", f->name, n_families);
    if (st == MT_OK) families[n_families++] = f;
    pthread_mutex_unlock(&lock);
    return st;
}
