/*
 * yaml_tree.c - libyaml events -> yt_node tree (see yaml_tree.h).
 */
#define _GNU_SOURCE
#include "yaml_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

enum { MAX_DEPTH = 32, MAX_FILE = 1 << 20 };

mt_status yt_error(const char *file, const yt_node *n, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n) return mt_fail(MT_ERR_CONFIG, "%s:%d:%d: %s", file, n->line, n->column, msg);
    return mt_fail(MT_ERR_CONFIG, "%s: %s", file, msg);
}

void yt_free(yt_node *n) {
    if (!n) return;
    for (int i = 0; i < n->n_items; i++) yt_free(n->items[i]);
    free(n->items);
    free(n->scalar);
    free(n);
}

static yt_node *new_node(yt_kind kind, const yaml_event_t *e) {
    yt_node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->line = (int)e->start_mark.line + 1;
    n->column = (int)e->start_mark.column + 1;
    return n;
}

static int add_item(yt_node *parent, yt_node *child) {
    yt_node **grown = realloc(parent->items, sizeof *grown * (size_t)(parent->n_items + 1));
    if (!grown) return 0;
    parent->items = grown;
    parent->items[parent->n_items++] = child;
    return 1;
}

mt_status yt_parse(const char *file, const char *text, size_t size, yt_node **out) {
    *out = NULL;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return mt_fail(MT_ERR_OUT_OF_MEMORY, "cannot start the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, size);
    yt_node *stack[MAX_DEPTH + 1];
    int depth = 0, documents = 0;
    yt_node *root = NULL;
    mt_status st = MT_OK;
    for (int done = 0; !done && st == MT_OK;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e)) {
            st = mt_fail(MT_ERR_CONFIG, "%s:%d:%d: malformed YAML: %s%s%s", file, (int)parser.problem_mark.line + 1,
                         (int)parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        yt_node *n = NULL;
        yt_node pos = {.line = (int)e.start_mark.line + 1, .column = (int)e.start_mark.column + 1};
        switch (e.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) st = yt_error(file, &pos, "only one YAML document per file");
            break;
        case YAML_ALIAS_EVENT: st = yt_error(file, &pos, "YAML aliases are not accepted in configs"); break;
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            const yaml_char_t *anchor = e.type == YAML_SCALAR_EVENT ? e.data.scalar.anchor
                                        : e.type == YAML_SEQUENCE_START_EVENT ? e.data.sequence_start.anchor
                                                                             : e.data.mapping_start.anchor;
            if (anchor) {
                st = yt_error(file, &pos, "YAML anchors are not accepted in configs");
                break;
            }
            n = new_node(e.type == YAML_SCALAR_EVENT ? YT_SCALAR
                         : e.type == YAML_SEQUENCE_START_EVENT ? YT_SEQUENCE : YT_MAPPING, &e);
            if (!n) {
                st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            if (e.type == YAML_SCALAR_EVENT) {
                n->scalar = strndup((const char *)e.data.scalar.value, e.data.scalar.length);
                if (!n->scalar || strlen(n->scalar) != e.data.scalar.length) {
                    yt_free(n);
                    st = yt_error(file, &pos, "scalar with an embedded NUL");
                    break;
                }
            }
            if (depth > 0) {
                if (!add_item(stack[depth - 1], n)) {
                    yt_free(n);
                    st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
                    break;
                }
            } else if (!root) {
                root = n;
            } else {
                yt_free(n);
                st = yt_error(file, &pos, "more than one top-level value");
                break;
            }
            if (e.type != YAML_SCALAR_EVENT) {
                if (depth == MAX_DEPTH) {
                    st = yt_error(file, &pos, "nested deeper than %d levels", MAX_DEPTH);
                    break;
                }
                stack[depth++] = n;
            }
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) depth--;
            break;
        default: break;
        }
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&parser);
    if (st == MT_OK && !root) st = mt_fail(MT_ERR_CONFIG, "%s: empty YAML document", file);
    if (st != MT_OK) {
        yt_free(root);
        return st;
    }
    *out = root;
    return MT_OK;
}

mt_status yt_parse_file(const char *path, yt_node **out) {
    /* non-blocking, then only a regular file: a FIFO named as a config
     * hung the command forever in fopen */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return mt_fail(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        close(fd);
        return mt_fail(MT_ERR_CONFIG, "%s is %s, not a config file", path,
                       S_ISFIFO(info.st_mode) ? "a FIFO" : S_ISDIR(info.st_mode) ? "a folder" : "not a regular file");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return mt_fail(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    mt_status st;
    if (!buf) st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    else if (err) st = mt_fail(MT_ERR_IO, "cannot read %s", path);
    else if (n > MAX_FILE) st = mt_fail(MT_ERR_CONFIG, "%s: larger than %d bytes", path, MAX_FILE);
    else st = yt_parse(path, buf, n, out);
    free(buf);
    return st;
}

const yt_node *yt_get(const yt_node *map, const char *key) {
    if (!map || map->kind != YT_MAPPING) return NULL;
    for (int i = 0; i + 1 < map->n_items; i += 2)
        if (map->items[i]->kind == YT_SCALAR && strcmp(map->items[i]->scalar, key) == 0) return map->items[i + 1];
    return NULL;
}

mt_status yt_check_keys(const char *file, const yt_node *map, const char *const *known) {
    if (!map || map->kind != YT_MAPPING) return yt_error(file, map, "expected a mapping");
    for (int i = 0; i + 1 < map->n_items; i += 2) {
        const yt_node *k = map->items[i];
        if (k->kind != YT_SCALAR) return yt_error(file, k, "keys must be plain scalars");
        int ok = 0;
        for (int j = 0; known[j]; j++) ok |= strcmp(known[j], k->scalar) == 0;
        if (!ok) {
            char list[512] = "";
            for (int j = 0; known[j]; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", known[j]);
            return yt_error(file, k, "unknown key '%s' (known: %s)", k->scalar, list);
        }
        for (int j = 0; j < i; j += 2)
            if (strcmp(map->items[j]->scalar, k->scalar) == 0) return yt_error(file, k, "key '%s' given twice", k->scalar);
    }
    return MT_OK;
}

mt_status yt_int(const char *file, const yt_node *n, const char *what, long lo, long hi, long *out) {
    if (!n || n->kind != YT_SCALAR) return yt_error(file, n, "%s: expected an integer", what);
    char *end = NULL;
    errno = 0;
    long v = strtol(n->scalar, &end, 10);
    if (errno || !end || end == n->scalar || *end)
        return yt_error(file, n, "%s: '%s' is not an integer", what, n->scalar);
    if (v < lo || v > hi) return yt_error(file, n, "%s: %ld is out of range [%ld, %ld]", what, v, lo, hi);
    *out = v;
    return MT_OK;
}

mt_status yt_int_list(const char *file, const yt_node *n, const char *what, long lo, long hi, int *out, int max,
                      int *count) {
    *count = 0;
    if (n && n->kind == YT_SCALAR) {
        long v;
        mt_status st = yt_int(file, n, what, lo, hi, &v);
        if (st == MT_OK) out[(*count)++] = (int)v;
        return st;
    }
    if (!n || n->kind != YT_SEQUENCE) return yt_error(file, n, "%s: expected an integer or a list of integers", what);
    if (n->n_items == 0) return yt_error(file, n, "%s: empty list", what);
    if (n->n_items > max) return yt_error(file, n, "%s: more than %d values", what, max);
    for (int i = 0; i < n->n_items; i++) {
        long v;
        mt_status st = yt_int(file, n->items[i], what, lo, hi, &v);
        if (st != MT_OK) return st;
        for (int j = 0; j < *count; j++)
            if (out[j] == v) return yt_error(file, n->items[i], "%s: %ld listed twice", what, v);
        out[(*count)++] = (int)v;
    }
    return MT_OK;
}
