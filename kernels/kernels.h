/*
 * kernels.h - access to the kernel sources built into the library.
 *
 * The .cu files under kernels/ are embedded at build time (cmake/embed.cmake)
 * so an installed library needs no source tree.  For kernel development, set
 * MLA_TUNE_KERNEL_DIR to a folder holding them and they are read from there
 * instead, every time (and the JIT key changes with their text, so the cache
 * never serves a stale build).
 */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H

#include "../runtime/error.h"

/* The full text to compile for kernel file `name` ("mla_decode.cu"): the
 * prelude, then a #line directive, then the file.  *out is malloc'd. */
mt_status mt_kernel_source(const char *name, char **out);

#endif
