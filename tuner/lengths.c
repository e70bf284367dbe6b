/*
 * lengths.c - length mixes (see lengths.h).
 */
#define _GNU_SOURCE
#include "lengths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Reads "A-B" at *p (both in 0..MT_LENGTHS_MAX, A <= B). */
static int parse_range(const char **p, int *lo, int *hi) {
    char *end;
    errno = 0;
    long a = strtol(*p, &end, 10);
    if (end == *p || *end != '-' || errno) return -1;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || errno || a < 0 || b < a || b > MT_LENGTHS_MAX) return -1;
    *lo = (int)a, *hi = (int)b, *p = end;
    return 0;
}

static int parse_int(const char **p, int min, int max, int *out) {
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno || v < min || v > max) return -1;
    *out = (int)v, *p = end;
    return 0;
}

mt_status mt_lengths_parse(const char *spec, mt_lengths_mix *m) {
    if (!spec || !m) return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths: null argument");
    memset(m, 0, sizeof *m);
    m->seed = 1;
    char body[512];
    if (strlen(spec) >= sizeof body) return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths: spec longer than %zu bytes",
                                                    sizeof body - 1);
    snprintf(body, sizeof body, "%s", spec);
    char *at = strrchr(body, '@');
    if (at && strncmp(body, "file:", 5) != 0) {
        char *end;
        errno = 0;
        unsigned long s = strtoul(at + 1, &end, 10);
        if (end == at + 1 || *end || errno || s > 0xffffffffu)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths '%s': the seed after @ is not a number", spec);
        m->seed = (unsigned)s;
        *at = '\0';
    }
    const char *p;
    int bad = 0;
    if (strcmp(body, "uniform") == 0) {
        m->kind = MT_LENGTHS_UNIFORM;
        return MT_OK;
    } else if (strncmp(body, "uniform-random", 14) == 0 && (body[14] == '\0' || body[14] == ':')) {
        m->kind = MT_LENGTHS_UNIFORM_RANDOM, m->lo = 256, m->hi = 8192;
        p = body + 14;
        if (*p == ':') p++, bad = parse_range(&p, &m->lo, &m->hi);
    } else if (strncmp(body, "long-tail", 9) == 0 && (body[9] == '\0' || body[9] == ':')) {
        m->kind = MT_LENGTHS_LONG_TAIL, m->lo = 512, m->hi = 2048, m->percent = 10, m->lo2 = 16384, m->hi2 = 32768;
        p = body + 9;
        if (*p == ':') {
            p++;
            bad = parse_range(&p, &m->lo, &m->hi) || *p++ != ':' || parse_int(&p, 1, 100, &m->percent) ||
                  *p++ != ':' || parse_range(&p, &m->lo2, &m->hi2);
        }
    } else if (strncmp(body, "one-long", 8) == 0 && (body[8] == '\0' || body[8] == ':')) {
        m->kind = MT_LENGTHS_ONE_LONG, m->lo2 = 32768, m->lo = 1024;
        p = body + 8;
        if (*p == ':') {
            p++;
            bad = parse_int(&p, 0, MT_LENGTHS_MAX, &m->lo2) || *p++ != ':' || parse_int(&p, 0, MT_LENGTHS_MAX, &m->lo);
        }
    } else if (strncmp(body, "file:", 5) == 0) {
        m->kind = MT_LENGTHS_FILE;
        if (!body[5] || strlen(body + 5) >= sizeof m->path)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths '%s': file: needs a path (under %zu bytes)", spec,
                           sizeof m->path);
        snprintf(m->path, sizeof m->path, "%s", body + 5);
        return MT_OK;
    } else {
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths '%s': unknown mix (uniform, uniform-random[:LO-HI], "
                       "long-tail[:LO-HI:P:LO2-HI2], one-long[:LONG:SHORT], file:PATH; optional @SEED)", spec);
    }
    if (bad || *p)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths '%s': malformed parameters (ranges LO-HI with 0 <= LO <= HI "
                       "<= %d, a percentage 1..100)", spec, MT_LENGTHS_MAX);
    return MT_OK;
}

void mt_lengths_name(const mt_lengths_mix *m, char *buf, size_t size) {
    switch (m->kind) {
    case MT_LENGTHS_UNIFORM: snprintf(buf, size, "uniform"); return;
    case MT_LENGTHS_UNIFORM_RANDOM: snprintf(buf, size, "uniform-random:%d-%d@%u", m->lo, m->hi, m->seed); return;
    case MT_LENGTHS_LONG_TAIL:
        snprintf(buf, size, "long-tail:%d-%d:%d:%d-%d@%u", m->lo, m->hi, m->percent, m->lo2, m->hi2, m->seed);
        return;
    case MT_LENGTHS_ONE_LONG: snprintf(buf, size, "one-long:%d:%d", m->lo2, m->lo); return;
    case MT_LENGTHS_FILE: snprintf(buf, size, "file:%s", m->path); return;
    }
    snprintf(buf, size, "?");
}

/* xorshift64*, seeded from (seed, batch): reproducible, no global state */
static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static int in_range(uint64_t *s, int lo, int hi) { return lo + (int)(next(s) % (uint64_t)(hi - lo + 1)); }

static mt_status from_file(const mt_lengths_mix *m, int batch, int32_t *out) {
    struct stat st;
    if (stat(m->path, &st) != 0) return mt_fail(MT_ERR_IO, "lengths file %s: %s", m->path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return mt_fail(MT_ERR_IO, "lengths file %s is not a regular file", m->path);
    FILE *f = fopen(m->path, "r");
    if (!f) return mt_fail(MT_ERR_IO, "lengths file %s: %s", m->path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int line_no = 0;
    mt_status result = mt_fail(MT_ERR_NOT_FOUND, "lengths file %s has no line of %d lengths", m->path, batch);
    while (getline(&line, &cap, f) >= 0) {
        line_no++;
        int n = 0;
        char *p = line, *end;
        for (;;) {
            while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\r' || *p == '\n') p++;
            if (!*p || *p == '#') break;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > MT_LENGTHS_MAX) {
                result = mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths file %s:%d: '%.20s' is not a length in 0..%d",
                                 m->path, line_no, p, MT_LENGTHS_MAX);
                goto done;
            }
            if (n < batch) out[n] = (int32_t)v;
            n++;
            p = end;
        }
        if (n == batch) {
            result = MT_OK;
            break;
        }
    }
done:
    free(line);
    fclose(f);
    return result;
}

mt_status mt_lengths_make(const mt_lengths_mix *m, int batch, int seq_len, int32_t *out) {
    if (!m || !out || batch < 1) return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths: bad arguments (batch %d)", batch);
    uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)m->seed << 32) ^ (uint64_t)batch;
    for (int i = 0; i < 4; i++) next(&s);
    switch (m->kind) {
    case MT_LENGTHS_UNIFORM:
        if (seq_len < 0 || seq_len > MT_LENGTHS_MAX)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths: seq_len %d outside 0..%d", seq_len, MT_LENGTHS_MAX);
        for (int i = 0; i < batch; i++) out[i] = seq_len;
        return MT_OK;
    case MT_LENGTHS_UNIFORM_RANDOM:
        for (int i = 0; i < batch; i++) out[i] = in_range(&s, m->lo, m->hi);
        return MT_OK;
    case MT_LENGTHS_LONG_TAIL: {
        int n_long = (batch * m->percent + 50) / 100;
        if (n_long < 1) n_long = 1;
        for (int i = 0; i < batch; i++) out[i] = i < n_long ? in_range(&s, m->lo2, m->hi2) : in_range(&s, m->lo, m->hi);
        for (int i = batch - 1; i > 0; i--) { /* the long ones anywhere in the batch */
            int j = (int)(next(&s) % (uint64_t)(i + 1));
            int32_t t = out[i];
            out[i] = out[j], out[j] = t;
        }
        return MT_OK;
    }
    case MT_LENGTHS_ONE_LONG:
        for (int i = 0; i < batch; i++) out[i] = i == 0 ? m->lo2 : m->lo;
        return MT_OK;
    case MT_LENGTHS_FILE: return from_file(m, batch, out);
    }
    return mt_fail(MT_ERR_INVALID_ARGUMENT, "lengths: unknown kind");
}

void mt_lengths_stats(const int32_t *lens, int batch, int *mean, int *longest) {
    int64_t sum = 0;
    int mx = 0;
    for (int i = 0; i < batch; i++) {
        sum += lens[i];
        if (lens[i] > mx) mx = lens[i];
    }
    *mean = batch > 0 ? (int)((sum + batch / 2) / batch) : 0;
    *longest = mx;
}

mt_status mt_lengths_page_table(const int32_t *lens, int batch, int page, uint64_t *rng, int32_t **table,
                                int *max_blocks, size_t *pages) {
    int blocks = 1;
    size_t n = 0;
    for (int i = 0; i < batch; i++) {
        int b = (lens[i] + page - 1) / page;
        n += (size_t)b;
        if (b > blocks) blocks = b;
    }
    if (n == 0) n = 1;
    int32_t *order = malloc(sizeof *order * n), *t = calloc((size_t)batch * (size_t)blocks, sizeof *t);
    if (!order || !t) {
        free(order), free(t);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory for a block table of %zu pages", n);
    }
    for (size_t i = 0; i < n; i++) order[i] = (int32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        size_t j = (size_t)(*rng % (i + 1));
        int32_t x = order[i];
        order[i] = order[j], order[j] = x;
    }
    size_t next = 0;
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < (lens[i] + page - 1) / page; k++) t[(size_t)i * blocks + k] = order[next++];
    free(order);
    *table = t, *max_blocks = blocks, *pages = n;
    return MT_OK;
}
