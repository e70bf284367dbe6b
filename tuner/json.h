/*
 * json.h - the few JSON writers the read commands' --json output needs
 * (show, lookup, devices, compile, bench): strings escaped, non-finite
 * numbers as null, and a variant's "k=v,k=v" parameters as an object.
 * Header-only: each command prints straight to stdout.
 */
#ifndef MT_JSON_H
#define MT_JSON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void mt_json_string(FILE *to, const char *s) {
    fputc('"', to);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(to, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", to);
        else if (*p == '\t') fputs("\\t", to);
        else if (*p < 0x20 || *p == 0x7f) fprintf(to, "\\u%04x", *p);
        else fputc(*p, to);
    }
    fputc('"', to);
}

/* JSON has no NaN or infinity: an unmeasured figure is null. */
static inline void mt_json_number(FILE *to, double v) {
    if (isfinite(v)) fprintf(to, "%.6g", v);
    else fputs("null", to);
}

/* A count the tool may not know (registers a compiler did not report,
 * kept as -1): null when negative. */
static inline void mt_json_count(FILE *to, long v) {
    if (v >= 0) fprintf(to, "%ld", v);
    else fputs("null", to);
}

/* "tile_q=16,mma=2" -> {"tile_q": 16, "mma": 2}; a value that is not a
 * whole number stays a string. */
static inline void mt_json_params(FILE *to, const char *params) {
    fputc('{', to);
    const char *p = params ? params : "";
    int first = 1;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        char name[64], value[128];
        size_t nlen = eq ? (size_t)(eq - p) : len;
        snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), p);
        if (eq) snprintf(value, sizeof value, "%.*s", (int)(len - nlen - 1), eq + 1);
        else value[0] = '\0';
        fputs(first ? "" : ", ", to);
        first = 0;
        mt_json_string(to, name);
        fputs(": ", to);
        char *end = NULL;
        long v = strtol(value, &end, 10);
        if (value[0] && end && !*end) fprintf(to, "%ld", v);
        else mt_json_string(to, value);
        p += len;
        if (*p == ',') p++;
    }
    fputc('}', to);
}

#endif
