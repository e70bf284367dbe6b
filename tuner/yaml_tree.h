/*
 * yaml_tree.h - a YAML document read through libyaml into a small tree of
 * scalars, sequences and mappings, each node knowing its line and column,
 * so that config validation can name exactly where a value is wrong.
 *
 * Anchors, aliases and tags are refused (configs do not need them, and
 * aliases make "billion laughs" documents); so are documents nested deeper
 * than 32 levels and files over 1 MiB.
 */
#ifndef MT_YAML_TREE_H
#define MT_YAML_TREE_H

#include <stddef.h>

#include "runtime/base/error.h"

typedef enum yt_kind { YT_SCALAR, YT_SEQUENCE, YT_MAPPING } yt_kind;

typedef struct yt_node {
    yt_kind kind;
    int line, column;          /* 1-based */
    char *scalar;              /* YT_SCALAR */
    struct yt_node **items;    /* YT_SEQUENCE: items; YT_MAPPING: key, value, key, value... */
    int n_items;
} yt_node;

/* Parses `text` (named `file` in messages).  An empty document gives an
 * error.  *out is freed with yt_free. */
mt_status yt_parse(const char *file, const char *text, size_t size, yt_node **out);
mt_status yt_parse_file(const char *path, yt_node **out);
void yt_free(yt_node *n);

/* The value under `key` of a mapping, or NULL. */
const yt_node *yt_get(const yt_node *map, const char *key);

/* Fails (naming file:line:column) unless every key of `map` is in `known`
 * (NULL-terminated). */
mt_status yt_check_keys(const char *file, const yt_node *map, const char *const *known);

/* Reads an integer scalar in [lo, hi]. */
mt_status yt_int(const char *file, const yt_node *n, const char *what, long lo, long hi, long *out);

/* Reads a list of integers (or a single integer) in [lo, hi] into out[max]. */
mt_status yt_int_list(const char *file, const yt_node *n, const char *what, long lo, long hi, int *out, int max,
                      int *count);

/* file:line:column: message */
mt_status yt_error(const char *file, const yt_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
