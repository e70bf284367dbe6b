/*
 * crossover.c - mlt_prefill_choose_form (mlatune.h): which prefill form a
 * chunk takes on the runtime's GPU, by the rule of crossover_pick.h over
 * the crossover points of the runtime's user and system DBs.
 *
 * When the points are read, and why: at the first call, not at
 * mlt_runtime_create.  Most runtimes never ask (decode-only engines), and
 * creation already reads the choices; a call after a failed read (a
 * damaged file) reads again, so that a fixed file is seen without a new
 * runtime.  The store's mutex covers the read; once read, the points are
 * never changed until the runtime is destroyed, so each call picks from
 * them outside the lock and calls from several threads run side by side.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "crossover_pick.h"
#include "crossover_store.h"
#include "kernels/mla_decode/mla_decode.h"

struct mt_crossover_store {
    pthread_mutex_t lock;
    int loaded;                   /* under lock: points / n are final */
    char user[1024], system[1024];
    int user_required, system_required;
    char arch[32];
    mt_crossover_point *points;   /* of arch, user over system */
    int n;
};

mt_status mt_crossover_store_create(const char *user_db, int user_required, const char *system_db, int system_required,
                                    const char *arch, mt_crossover_store **out) {
    mt_crossover_store *s = calloc(1, sizeof *s);
    if (!s) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->user, sizeof s->user, "%s", user_db ? user_db : "");
    snprintf(s->system, sizeof s->system, "%s", system_db ? system_db : "");
    s->user_required = user_required, s->system_required = system_required;
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    *out = s;
    return MT_OK;
}

void mt_crossover_store_destroy(mt_crossover_store *s) {
    if (!s) return;
    pthread_mutex_destroy(&s->lock);
    free(s->points);
    free(s);
}

/* The points, read at the first call that needs them. */
static mt_status store_points(mt_crossover_store *s, const mt_crossover_point **points, int *n) {
    pthread_mutex_lock(&s->lock);
    mt_status st = MT_OK;
    if (!s->loaded) {
        st = mt_db_load_crossover_overlay(s->user, s->user_required, s->system, s->system_required, s->arch,
                                          &s->points, &s->n);
        s->loaded = st == MT_OK;
    }
    *points = s->points;
    *n = s->n;
    pthread_mutex_unlock(&s->lock);
    return st;
}

mlt_status mlt_prefill_choose_form(mlt_runtime *rt, int n_heads, mlt_dtype q_dtype, mlt_dtype kv_dtype, int sq,
                                   int context, mlt_form_info *out) {
    mt_status st = MT_OK;
    if (!rt || !out)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_choose_form: %s is NULL", !rt ? "runtime" : "out");
    else if (n_heads < 1 || n_heads > 128)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "head count %d outside 1..128", n_heads);
    else if (sq < 1 || sq > MT_DECODE_MAX_SQ)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "sq %d outside 1..%d (the new tokens of the chunk)", sq,
                     MT_DECODE_MAX_SQ);
    else if (context < 0)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "context %d is negative (the tokens before the chunk)", context);
    else if (q_dtype != MLT_BF16 && q_dtype != MLT_FP16)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "q_dtype must be MLT_BF16 or MLT_FP16 (got %d)", (int)q_dtype);
    else if ((int)kv_dtype < 0 || kv_dtype > MLT_FP8_E4M3_FNUZ)
        st = mt_fail(MT_ERR_INVALID_ARGUMENT, "kv_dtype %d is not a known dtype", (int)kv_dtype);
    if (st != MT_OK) return mt_to_public(st);
    const mt_crossover_point *points = NULL;
    int n = 0;
    if ((st = store_points(mt_runtime_crossover(rt), &points, &n)) != MT_OK) return mt_to_public(st);
    const mt_device_info *dev = mt_runtime_device(rt);
    mt_crossover_query q = {.arch = dev->arch, .compute_units = dev->compute_units, .n_heads = n_heads,
                            .q_dtype = (mt_dtype)q_dtype, .kv_dtype = (mt_dtype)kv_dtype, .sq = sq,
                            .context = context};
    mt_crossover_pick(points, n, &q, out);
    return MLT_OK;
}
