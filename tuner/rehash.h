/*
 * rehash.h - measurements kept valid across kernel edits that do not change
 * the code (`mla-tune rehash`).
 *
 * Every measurement records the SHA-256 of the kernel text its variant
 * compiled from, and the runtime ignores a choice whose variant now
 * compiles from other text (runtime/api/validators.h): editing a comment,
 * or adding a branch that only other variants compile, used to discard
 * every row of the files touched, and with them hours of GPU time.  Rehash
 * proves each group of rows unchanged instead: it composes the variant's
 * text from the older kernel tree the rows were measured with (their hash
 * must be that text's), compiles that and today's text with this host's
 * compiler (which must be the one the rows were measured with), and only
 * where the two code objects are byte-identical gives the rows today's
 * hash.  Anything else stays as it was: rows whose code changed, rows of
 * some third text, rows of another compiler.  No GPU is needed.
 */
#ifndef MT_REHASH_H
#define MT_REHASH_H

#include <stdio.h>

#include "runtime/base/error.h"


typedef struct mt_rehash_report {
    int groups;          /* groups of rows with a hash (db/restamp.h) */
    int current;         /* ... already of today's text */
    int restamped;       /* ... proven: the same code, moved to today's hash */
    int rows_restamped;
    int code_changed;    /* ... compiled to other code: left stale */
    int other_text;      /* ... of neither today's text nor the tree's */
    int other_compiler;  /* ... measured with another compiler than this host's */
    int failed;          /* ... that could not be composed or compiled (each printed) */
    int skipped_rows;    /* groups unreadable as choices (db/restamp.c) */
} mt_rehash_report;

/* Rehashes the measurements of the DB at `db_path` against the kernel tree
 * in `old_tree` (a folder laid out like kernels/), compiling on `threads`
 * threads; a line per group that changed code or failed goes to `log`
 * (NULL: none), every group's with `verbose`.  The file is read
 * read-only, and opened for writing only when rows move (unless dry_run):
 * then the choices are derived again (validators.h).  Errors are the DB's;
 * an arch this host cannot compile for is not one (its groups count as
 * other_compiler). */
mt_status mt_rehash(const char *db_path, const char *old_tree, int threads, int dry_run, int verbose, FILE *log,
                    mt_rehash_report *r);

#endif
