/*
 * int_list.c - comma-separated integer lists (int_list.h).
 */
#define _GNU_SOURCE
#include "int_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_int_list_parse(const char *text, mt_int_list *out, long lo, long hi) {
    out->n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        long n = strtol(tok, &end, 10);
        if (out->n == MT_INT_LIST_MAX || !end || *end || n < lo || n > hi) return -1;
        out->v[out->n++] = (int)n;
    }
    return out->n > 0 ? 0 : -1;
}
