/*
 * jit.c - run-time compilation with a memory and a disk cache (see jit.h).
 */
#define _GNU_SOURCE
#include "jit.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "runtime/base/sha256.h"

enum { BUCKETS = 256 };

typedef struct jit_entry {
    mt_code_object obj;
    mt_module module;               /* loaded lazily by mt_jit_function */
    struct jit_entry *next;
} jit_entry;

/* A key some thread is building now (reading from disk or compiling):
 * another thread asking for it waits for that result instead of compiling
 * the same code again (variants that differ only in a parameter the kernel
 * treats as a flag share a key, and the compile-ahead threads meet them side
 * by side). */
typedef struct in_flight {
    uint8_t key[32];
    struct in_flight *next;
} in_flight;

struct mt_jit {
    mt_backend *backend;
    char compiler_version[128];
    char cache_dir[PATH_MAX];       /* "" = no disk cache */
    pthread_mutex_t lock;
    pthread_cond_t built;           /* signalled when an in_flight key is done */
    in_flight *building;
    jit_entry *buckets[BUCKETS];
    mt_jit_stats stats;
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

mt_status mt_jit_create(mt_backend *b, const char *cache_dir, mt_jit **out) {
    if (!b || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_jit_create: null argument");
    *out = NULL;
    mt_jit *j = calloc(1, sizeof *j);
    if (!j) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    j->backend = b;
    mt_status st = mt_backend_compiler_version(b, j->compiler_version, sizeof j->compiler_version);
    if (st != MT_OK) {
        free(j);
        return mt_fail(st, "JIT needs a compiler: %s", mt_last_error());
    }
    if (!cache_dir) st = mt_cache_default_dir(j->cache_dir, sizeof j->cache_dir);
    else snprintf(j->cache_dir, sizeof j->cache_dir, "%s", cache_dir);
    if (st == MT_OK && j->cache_dir[0]) st = mt_cache_prepare_dir(j->cache_dir);
    if (st != MT_OK) {
        /* a cache folder that cannot be made or written (a read-only HOME,
         * a full disk) costs compile time, never correctness: run without
         * the disk cache and say so here, once, instead of at every compile
         * or by failing the runtime */
        fprintf(stderr, "mla-tune: warning: %s; running without a disk cache (kernels are compiled every run)\n",
                mt_last_error());
        mt_clear_error();
        j->cache_dir[0] = '\0';
    }
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->built, NULL);
    *out = j;
    return MT_OK;
}

void mt_jit_destroy(mt_jit *j) {
    if (!j) return;
    for (int i = 0; i < BUCKETS; i++) {
        jit_entry *e = j->buckets[i];
        while (e) {
            jit_entry *next = e->next;
            if (e->module) mt_backend_module_unload(j->backend, e->module);
            free(e->obj.code);
            free(e->obj.log);
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->built);
    free(j);
}

/* Each field is hashed with its length first, so no two different
 * requests can produce the same byte stream. */
static void hash_field(mt_sha256 *h, const char *s) {
    uint64_t n = strlen(s);
    mt_sha256_update(h, &n, sizeof n);
    mt_sha256_update(h, s, n);
}

mt_status mt_jit_key(mt_jit *j, const mt_jit_request *req, uint8_t key[32]) {
    if (!j || !req || !req->source || !req->arch)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "JIT request lacks a source or an architecture");
    mt_sha256 h;
    mt_sha256_init(&h);
    hash_field(&h, "mla-tune-jit-1");
    hash_field(&h, j->backend->name);
    hash_field(&h, j->compiler_version);
    hash_field(&h, req->arch);
    for (int i = 0; i < req->n_defines; i++) {
        hash_field(&h, "-D");
        hash_field(&h, req->defines[i]);
    }
    for (int i = 0; i < req->n_options; i++) hash_field(&h, req->options[i]);
    hash_field(&h, req->source);
    mt_sha256_final(&h, key);
    return MT_OK;
}

static jit_entry *find_locked(mt_jit *j, const uint8_t key[32]) {
    for (jit_entry *e = j->buckets[key[0]]; e; e = e->next)
        if (memcmp(e->obj.key, key, 32) == 0) return e;
    return NULL;
}

/* Inserts a new entry unless another thread got there first; returns the
 * entry that is in the table. */
static jit_entry *insert(mt_jit *j, jit_entry *fresh) {
    pthread_mutex_lock(&j->lock);
    jit_entry *have = find_locked(j, fresh->obj.key);
    if (!have) {
        fresh->next = j->buckets[fresh->obj.key[0]];
        j->buckets[fresh->obj.key[0]] = fresh;
        have = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&j->lock);
    if (fresh) {
        free(fresh->obj.code);
        free(fresh->obj.log);
        free(fresh);
    }
    return have;
}

static int building_locked(const mt_jit *j, const uint8_t key[32]) {
    for (const in_flight *f = j->building; f; f = f->next)
        if (memcmp(f->key, key, 32) == 0) return 1;
    return 0;
}

/* Reads the code object of `key` from the disk cache, or compiles it, and
 * puts it in the memory cache. */
static mt_status build(mt_jit *j, const mt_jit_request *req, const uint8_t key[32], jit_entry **out,
                       mt_jit_origin *origin) {
    mt_status st;
    jit_entry *e = NULL;
    mt_jit_origin where = MT_JIT_FROM_MEMORY;
    jit_entry *fresh = calloc(1, sizeof *fresh);
    if (!fresh) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(fresh->obj.key, key, 32);

    if (j->cache_dir[0]) {
        st = mt_cache_read(j->cache_dir, key, &fresh->obj.code, &fresh->obj.size, &fresh->obj.log);
        if (st == MT_OK) {
            where = MT_JIT_FROM_DISK;
            pthread_mutex_lock(&j->lock);
            j->stats.disk_hits++;
            pthread_mutex_unlock(&j->lock);
            e = insert(j, fresh);
            goto found;
        }
        if (st == MT_ERR_CORRUPT) {
            pthread_mutex_lock(&j->lock);
            j->stats.corrupt_rebuilt++;
            pthread_mutex_unlock(&j->lock);
        } else if (st != MT_ERR_NOT_FOUND) {
            /* unreadable cache: compiling still gives a right answer */
            fprintf(stderr, "mla-tune: warning: %s; compiling instead\n", mt_last_error());
        }
    }

    /* compile: defines become -D options ahead of the caller's options */
    int n_opts = req->n_defines + req->n_options;
    const char **opts = calloc((size_t)n_opts + 1, sizeof *opts);
    char **owned = calloc((size_t)req->n_defines + 1, sizeof *owned);
    if (!opts || !owned) {
        free(opts);
        free(owned);
        free(fresh);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < req->n_defines; i++) {
        size_t len = strlen(req->defines[i]) + 3;
        owned[i] = malloc(len);
        if (owned[i]) snprintf(owned[i], len, "-D%s", req->defines[i]);
        opts[i] = owned[i] ? owned[i] : "";
    }
    for (int i = 0; i < req->n_options; i++) opts[req->n_defines + i] = req->options[i];
    mt_compile_result result;
    double t0 = now_ms();
    st = mt_backend_compile(j->backend, req->source, req->source_name, req->arch, opts, n_opts, &result);
    double t1 = now_ms();
    for (int i = 0; i < req->n_defines; i++) free(owned[i]);
    free(owned);
    free(opts);
    if (st != MT_OK) {
        mt_compile_result_free(&result);
        free(fresh);
        return st;
    }
    fresh->obj.code = result.code;
    fresh->obj.size = result.code_size;
    fresh->obj.log = result.log ? result.log : strdup("");
    fresh->obj.compile_ms = t1 - t0;
    where = MT_JIT_COMPILED;
    pthread_mutex_lock(&j->lock);
    j->stats.compiles++;
    pthread_mutex_unlock(&j->lock);
    if (j->cache_dir[0] &&
        mt_cache_write(j->cache_dir, key, fresh->obj.code, fresh->obj.size, fresh->obj.log) != MT_OK) {
        /* the code object is still good; say once per failure why it is not kept */
        fprintf(stderr, "mla-tune: warning: %s\n", mt_last_error());
        pthread_mutex_lock(&j->lock);
        j->stats.disk_write_errors++;
        pthread_mutex_unlock(&j->lock);
    }
    e = insert(j, fresh);

found:
    *out = e;
    *origin = where;
    return MT_OK;
}

mt_status mt_jit_compile(mt_jit *j, const mt_jit_request *req, const mt_code_object **out,
                         mt_jit_origin *origin) {
    if (!out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_jit_compile: null output");
    *out = NULL;
    uint8_t key[32];
    mt_status st = mt_jit_key(j, req, key);
    if (st != MT_OK) return st;
    mt_jit_origin where = MT_JIT_FROM_MEMORY;
    jit_entry *e;
    pthread_mutex_lock(&j->lock);
    while (!(e = find_locked(j, key)) && building_locked(j, key)) pthread_cond_wait(&j->built, &j->lock);
    if (e) {
        j->stats.memory_hits++;
        pthread_mutex_unlock(&j->lock);
    } else {
        in_flight mine;
        memcpy(mine.key, key, 32);
        mine.next = j->building, j->building = &mine;
        pthread_mutex_unlock(&j->lock);
        st = build(j, req, key, &e, &where);
        pthread_mutex_lock(&j->lock);
        for (in_flight **f = &j->building; *f; f = &(*f)->next)
            if (*f == &mine) {
                *f = mine.next;
                break;
            }
        pthread_cond_broadcast(&j->built);
        pthread_mutex_unlock(&j->lock);
        if (st != MT_OK) return st;
    }
    *out = &e->obj;
    if (origin) *origin = where;
    return MT_OK;
}

mt_status mt_jit_function(mt_jit *j, const mt_code_object *obj, const char *kernel, mt_function *out) {
    if (!j || !obj || !kernel || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_jit_function: null argument");
    jit_entry *e = (jit_entry *)((char *)obj - offsetof(jit_entry, obj));
    pthread_mutex_lock(&j->lock);
    mt_status st = MT_OK;
    if (!e->module) st = mt_backend_module_load(j->backend, obj->code, obj->size, &e->module);
    mt_module m = e->module;
    pthread_mutex_unlock(&j->lock);
    if (st != MT_OK) return st;
    return mt_backend_module_function(j->backend, m, kernel, out);
}

mt_jit_stats mt_jit_get_stats(mt_jit *j) {
    pthread_mutex_lock(&j->lock);
    mt_jit_stats s = j->stats;
    pthread_mutex_unlock(&j->lock);
    return s;
}

const char *mt_jit_cache_dir(const mt_jit *j) { return j->cache_dir; }
mt_backend *mt_jit_backend(const mt_jit *j) { return j->backend; }
