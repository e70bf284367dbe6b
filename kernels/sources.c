/*
 * sources.c - the embedded kernel sources, the development override and
 * composing a compilable text (see sources.h).
 */
#define _GNU_SOURCE
#include "sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A malloc'd copy of the named file: read from folder `dir` when given
 * (`why` says in errors where the folder came from), else from `table`. */
static mt_status load_from(const mt_source_file *table, const char *dir, const char *why, const char *name,
                           char **out) {
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        *out = read_file(path);
        if (!*out) return mt_fail(MT_ERR_IO, "cannot read kernel source %s (%s)", path, why);
        return MT_OK;
    }
    for (const mt_source_file *s = table; s->name; s++)
        if (strcmp(s->name, name) == 0) {
            *out = strdup(s->text);
            return *out ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    return mt_fail(MT_ERR_NOT_FOUND, "no kernel source named '%s' is built in", name);
}

/* Appends "#line 1 "name"\n" and the text to *buf (of *len bytes). */
static mt_status append(char **buf, size_t *len, const char *name, const char *text) {
    size_t add = strlen(name) + strlen(text) + 32;
    char *grown = realloc(*buf, *len + add);
    if (!grown) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    *buf = grown;
    *len += (size_t)snprintf(grown + *len, add, "\n#line 1 \"%s\"\n%s", name, text);
    return MT_OK;
}

/* prelude.h (the library's, from `prelude_dir` when given) and
 * names[0..n) (from `dir` when given, else from `table`). */
static mt_status compose(const mt_source_file *table, const char *dir, const char *prelude_dir, const char *why,
                         const char *const *names, int n, char **out) {
    if (!names || n < 1 || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_source_compose: no files named");
    *out = NULL;
    char *text = NULL, *buf = NULL;
    size_t len = 0;
    mt_status st = load_from(mt_kernel_files, prelude_dir, why, "prelude.h", &text);
    if (st == MT_OK) st = append(&buf, &len, "prelude.h", text);
    for (int i = 0; st == MT_OK && i < n; i++) {
        free(text);
        text = NULL;
        st = load_from(table, dir, why, names[i], &text);
        if (st == MT_OK) st = append(&buf, &len, names[i], text);
    }
    free(text);
    if (st != MT_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return MT_OK;
}

mt_status mt_source_compose(const mt_source_file *table, const char *const *names, int n, char **out) {
    if (!table) table = mt_kernel_files;
    const char *dir = getenv("MLA_TUNE_KERNEL_DIR");
    if (dir && !dir[0]) dir = NULL;
    /* the override replaces the library's files, the prelude included (a
     * tuner table's own files are its own) */
    return compose(table, table == mt_kernel_files ? dir : NULL, dir, "MLA_TUNE_KERNEL_DIR", names, n, out);
}

mt_status mt_source_compose_dir(const char *dir, const char *const *names, int n, char **out) {
    if (!dir || !dir[0]) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_source_compose_dir: no folder given");
    return compose(mt_kernel_files, dir, dir, "a kernel tree", names, n, out);
}

mt_status mt_kernel_source(const mt_source_file *table, const char *name, char **out) {
    return mt_source_compose(table, &name, 1, out);
}
