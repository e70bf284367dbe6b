/*
 * int_list.c - integers and comma-separated lists of them (int_list.h).
 */
#define _GNU_SOURCE
#include "int_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_int_parse(const char *text, long lo, long hi, int *out) {
    char *end = NULL;
    long n = strtol(text, &end, 10);
    if (!end || end == text || *end || n < lo || n > hi) return -1;
    *out = (int)n;
    return 0;
}

int mt_int_list_parse(const char *text, mt_int_list *out, long lo, long hi) {
    out->n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (out->n == MT_INT_LIST_MAX || mt_int_parse(tok, lo, hi, &out->v[out->n++]) != 0) return -1;
    return out->n > 0 ? 0 : -1;
}

int mt_timing_int_option(const char *opt, const char *value, int *warmup, int *reps, int *device,
                         const char **want) {
    if (strcmp(opt, "--warmup") == 0) {
        *want = "a whole number, 0..10000";
        return mt_int_parse(value, 0, 10000, warmup);
    }
    if (strcmp(opt, "--reps") == 0) {
        *want = "a whole number, 3..10000";
        return mt_int_parse(value, 3, 10000, reps);
    }
    if (strcmp(opt, "--device") == 0) {
        *want = "a GPU ordinal: 0, 1, ...";
        return mt_int_parse(value, 0, 1023, device);
    }
    return 1;
}
