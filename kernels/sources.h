/*
 * sources.h - the kernel source files built into a library, and how a
 * compilable text is put together from them.
 *
 * The .cu/.cuh files of every kernel family (and prelude.h) are embedded at
 * build time by cmake/embed.cmake into the table mt_kernel_files, named by
 * their path under kernels/ ("mla_decode/simt.cu"), so an installed library
 * needs no source tree.  The tuner embeds its own probe kernels the same way
 * (tuner/kernels).  For kernel development, MLA_TUNE_KERNEL_DIR names a
 * folder laid out like kernels/: the library's files are then read from
 * there, every time (the JIT key hashes the text, so the cache never serves
 * a stale build).
 */
#ifndef MT_SOURCES_H
#define MT_SOURCES_H

#include <stddef.h>

#include "runtime/base/error.h"

typedef struct mt_source_file {
    const char *name;   /* path under the table's folder */
    const char *text;   /* NUL-terminated */
    size_t size;
} mt_source_file;

/* The library's kernel files, ended by a NULL name (generated). */
extern const mt_source_file mt_kernel_files[];

/* One text to compile: prelude.h, then each of names[0..n) in order, each
 * after a #line directive naming it (so compiler messages point at the
 * file).  Files come from `table` (NULL: mt_kernel_files).  *out is
 * malloc'd. */
mt_status mt_source_compose(const mt_source_file *table, const char *const *names, int n, char **out);

/* mt_source_compose with every file, the prelude included, read from the
 * folder `dir`, laid out like kernels/ (an older tree: what `mla-tune
 * rehash` compares the current text with). */
mt_status mt_source_compose_dir(const char *dir, const char *const *names, int n, char **out);

/* The prelude and one file: mt_source_compose with n = 1. */
mt_status mt_kernel_source(const mt_source_file *table, const char *name, char **out);

#endif
