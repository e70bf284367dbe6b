/*
 * kernels.c - the embedded kernel sources and the development override
 * (see kernels.h).
 */
#define _GNU_SOURCE
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mt_embedded_source { const char *name; const char *text; size_t size; } mt_embedded_source;
extern const mt_embedded_source mt_embedded_sources[];

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Returns a malloc'd copy of the named file: from MLA_TUNE_KERNEL_DIR when
 * set, else from the embedded table. */
static mt_status load(const char *name, char **out) {
    const char *dir = getenv("MLA_TUNE_KERNEL_DIR");
    if (dir && dir[0]) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        *out = read_file(path);
        if (!*out) return mt_fail(MT_ERR_IO, "cannot read kernel source %s (MLA_TUNE_KERNEL_DIR)", path);
        return MT_OK;
    }
    for (const mt_embedded_source *s = mt_embedded_sources; s->name; s++)
        if (strcmp(s->name, name) == 0) {
            *out = strdup(s->text);
            return *out ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    return mt_fail(MT_ERR_NOT_FOUND, "no kernel source named '%s' is built in", name);
}

mt_status mt_kernel_source(const char *name, char **out) {
    if (!name || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_kernel_source: null argument");
    *out = NULL;
    char *prelude = NULL, *body = NULL;
    mt_status st = load("prelude.h", &prelude);
    if (st == MT_OK) st = load(name, &body);
    if (st == MT_OK) {
        size_t n = strlen(prelude) + strlen(body) + strlen(name) + 64;
        *out = malloc(n);
        if (*out)
            snprintf(*out, n, "%s\n#line 1 \"%s\"\n%s", prelude, name, body);
        else
            st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    free(prelude);
    free(body);
    return st;
}
