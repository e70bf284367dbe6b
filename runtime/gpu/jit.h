/*
 * jit.h - compile kernel sources at run time, through a memory cache and the
 * disk cache.
 *
 * A request is a source, a target architecture, parameter defines
 * (NAME=VALUE, turned into -D options) and extra compiler options.  Its key
 * is the SHA-256 of all of those plus the backend's name and its compiler's
 * version, so a new compiler never reuses an old code object.
 *
 * Lookup order: memory (this process), disk (all processes of this user),
 * compile.  A disk entry that fails verification is removed, counted in
 * stats.corrupt_rebuilt, and rebuilt.  Code objects returned stay valid
 * until mt_jit_destroy.  All functions are thread-safe; two threads asking
 * for the same new key may both compile it (the second result is dropped).
 */
#ifndef MT_JIT_H
#define MT_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef struct mt_jit mt_jit;

typedef struct mt_jit_request {
    const char *source;
    const char *source_name;          /* for compiler messages */
    const char *arch;
    const char *const *defines;       /* "NAME=VALUE" */
    int n_defines;
    const char *const *options;       /* passed to the compiler as given */
    int n_options;
} mt_jit_request;

typedef enum mt_jit_origin { MT_JIT_COMPILED, MT_JIT_FROM_MEMORY, MT_JIT_FROM_DISK } mt_jit_origin;

typedef struct mt_code_object {
    uint8_t key[32];
    void *code;
    size_t size;
    char *log;             /* the compiler's log (resource report), never NULL */
    double compile_ms;     /* time the compiler took when it was built here; 0 when from disk */
} mt_code_object;

typedef struct mt_jit_stats {
    long memory_hits, disk_hits, compiles, corrupt_rebuilt, disk_write_errors;
} mt_jit_stats;

/* cache_dir: NULL for the default (cache.h); "" to use no disk cache. */
mt_status mt_jit_create(mt_backend *b, const char *cache_dir, mt_jit **out);
void mt_jit_destroy(mt_jit *j);

/* The key a request would have (for tests and the tuner's records). */
mt_status mt_jit_key(mt_jit *j, const mt_jit_request *req, uint8_t key[32]);

/* Returns the code object for `req`; *origin says where it came from. */
mt_status mt_jit_compile(mt_jit *j, const mt_jit_request *req, const mt_code_object **out,
                         mt_jit_origin *origin);

/* Loads the code object's module on the calling thread's current device
 * (once per jit) and returns the named kernel. */
mt_status mt_jit_function(mt_jit *j, const mt_code_object *obj, const char *kernel, mt_function *out);

mt_jit_stats mt_jit_get_stats(mt_jit *j);
const char *mt_jit_cache_dir(const mt_jit *j);   /* "" when disabled */
mt_backend *mt_jit_backend(const mt_jit *j);

#endif
