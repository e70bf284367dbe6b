/*
 * recorder.c - the in-memory counts of calls dispatched without an exact
 * key, and their hand-over to the user DB (see recorder.h).
 */
#define _GNU_SOURCE
#include "recorder.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* log2 rounded to the nearest integer, of n >= 1, clamped to 0..30 (so
 * that 1 << it is an int). */
static unsigned nearest_log2(double n) {
    if (!(n > 1)) return 0;
    double l = round(log2(n));
    return l > 30 ? 30u : (unsigned)l;
}

/* The bucket, + 1 (0 marks a free slot): log2 of batch, mean and
 * longest/mean in 5 bits each, the rule in 1. */
static uint32_t pack(int batch, int seq_len, int max_len, int heuristic) {
    int len = seq_len > 0 ? seq_len : 1, longest = max_len > len ? max_len : len;
    unsigned lb = nearest_log2(batch), ll = nearest_log2(len), ls = nearest_log2((double)longest / len);
    if (ll + ls > 30) ls = 30 - ll;
    return (lb | ll << 5 | ls << 10 | (heuristic ? 1u : 0u) << 15) + 1u;
}

void mt_recorder_count(mt_recorder *r, int batch, int seq_len, int max_len, int heuristic) {
    uint32_t b = pack(batch, seq_len, max_len, heuristic);
    unsigned slot = (b * 2654435761u) >> 24;  /* Knuth's multiplicative hash, 8 bits: 256 slots */
    for (int probe = 0; probe < MT_RECORDER_PROBES; probe++, slot = (slot + 1) % MT_RECORDER_SLOTS) {
        uint32_t seen = atomic_load_explicit(&r->bucket[slot], memory_order_relaxed);
        if (seen == 0) {
            uint32_t expected = 0;
            if (atomic_compare_exchange_strong(&r->bucket[slot], &expected, b)) seen = b;
            else seen = expected;  /* another thread claimed it first: for this bucket or another */
        }
        if (seen == b) {
            atomic_fetch_add_explicit(&r->calls[slot], 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
}

_Static_assert(MT_RECORDER_SLOTS == 256, "the hash above yields 8 bits");

mt_status mt_recorder_collect(const mt_recorder *r, const char *arch, int compute_units, const mt_problem_key *shape,
                              mt_recorded_call **out, int *n) {
    *out = NULL;
    *n = 0;
    int count = 0;
    for (int i = 0; i < MT_RECORDER_SLOTS; i++) count += atomic_load(&r->calls[i]) > 0;
    if (count == 0) return MT_OK;
    mt_recorded_call *list = calloc((size_t)count, sizeof *list);
    if (!list) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    int k = 0;
    for (int i = 0; i < MT_RECORDER_SLOTS && k < count; i++) {
        uint64_t calls = atomic_load(&r->calls[i]);
        if (calls == 0) continue;
        uint32_t b = atomic_load(&r->bucket[i]) - 1u;
        mt_recorded_call *c = &list[k++];
        snprintf(c->arch, sizeof c->arch, "%s", arch);
        c->compute_units = compute_units;
        c->key = *shape;
        c->key.batch = 1 << (b & 31);
        if (c->key.batch > 65535) c->key.batch = 65535;  /* 2^16 rounds a batch above 46340 up */
        c->key.seq_len = 1 << (b >> 5 & 31);
        c->key.max_len = 1 << ((b >> 5 & 31) + (b >> 10 & 31));
        snprintf(c->key.lengths, sizeof c->key.lengths, "uniform");
        snprintf(c->how, sizeof c->how, "%s", b >> 15 & 1 ? "heuristic" : "nearest");
        c->calls = (int64_t)calls;
    }
    *out = list;
    *n = k;
    return MT_OK;
}

/* mkdir -p of the folder holding `path`. */
static mt_status make_parent(const char *path) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return MT_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return mt_fail(MT_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return mt_fail(MT_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    return MT_OK;
}

mt_status mt_recorder_flush(const mt_recorder *r, const char *path, const char *arch, int compute_units,
                            const mt_problem_key *shape) {
    mt_recorded_call *calls = NULL;
    int n = 0;
    mt_status st = mt_recorder_collect(r, arch, compute_units, shape, &calls, &n);
    if (st != MT_OK || n == 0) return st;
    mt_db *db = NULL;
    if ((st = make_parent(path)) == MT_OK && (st = mt_db_open(path, MT_DB_WRITE, &db)) == MT_OK)
        st = mt_db_add_recorded(db, calls, n);
    mt_db_close(db);
    free(calls);
    return st;
}
