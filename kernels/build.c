/*
 * build.c - variant -> sources -> defines -> JIT -> entry points (see
 * build.h).
 */
#include "build.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/sha256.h"

mt_status mt_build_source_in(const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                             const char *kernel_dir, char **out) {
    const char *names[MT_MAX_SOURCES];
    int n = v->family->sources(v, s, t->warp_size, names);
    if (n < 1 || n > MT_MAX_SOURCES)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "family %s named %d source files (1..%d)", v->family->name, n,
                       MT_MAX_SOURCES);
    if (kernel_dir) {
        if (v->family->files)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "family %s keeps its sources apart from kernels/",
                           v->family->name);
        return mt_source_compose_dir(kernel_dir, names, n, out);
    }
    return mt_source_compose(v->family->files, names, n, out);
}

mt_status mt_build_source(const mt_variant *v, const mt_problem_static *s, const mt_target *t, char **out) {
    return mt_build_source_in(v, s, t, NULL, out);
}

mt_status mt_build_compile_text(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                                const char *text, const char *const *options, int n_options,
                                const mt_code_object **obj, mt_jit_origin *origin) {
    char storage[MT_MAX_PARAMS + 8][48];
    const char *defines[MT_MAX_PARAMS + 8];
    int n = mt_variant_defines(v, s, storage, defines, MT_MAX_PARAMS + 8);
    mt_jit_request req = {.source = text, .source_name = v->family->name, .arch = t->arch, .defines = defines,
                          .n_defines = n, .options = options, .n_options = n_options};
    return mt_jit_compile(jit, &req, obj, origin);
}

mt_status mt_build_compile_with(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                                const char *const *options, int n_options, const mt_code_object **obj,
                                mt_jit_origin *origin) {
    char *text = NULL;
    mt_status st = mt_build_source(v, s, t, &text);
    if (st == MT_OK) st = mt_build_compile_text(jit, v, s, t, text, options, n_options, obj, origin);
    free(text);
    return st;
}

mt_status mt_build_compile(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                           const mt_code_object **obj, mt_jit_origin *origin) {
    return mt_build_compile_with(jit, v, s, t, NULL, 0, obj, origin);
}

mt_status mt_build_load(mt_jit *jit, const mt_code_object *obj, const mt_variant *v, const mt_problem_static *s,
                        const mt_target *t, mt_kernels *out) {
    memset(out, 0, sizeof *out);
    const char *names[MT_MAX_ENTRIES];
    v->family->entries(v, names);
    mt_status st = MT_OK;
    for (int i = 0; i < MT_MAX_ENTRIES && st == MT_OK; i++)
        if (names[i]) st = mt_jit_function(jit, obj, names[i], &out->fn[i]);
    if (st == MT_OK && out->fn[0])
        st = mt_backend_prepare_launch(mt_jit_backend(jit), out->fn[0], v->family->shared_bytes(v, s, t->warp_size));
    return st;
}

mt_status mt_build_variant(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                           mt_kernels *out) {
    const mt_code_object *obj = NULL;
    mt_status st = mt_build_compile(jit, v, s, t, &obj, NULL);
    return st == MT_OK ? mt_build_load(jit, obj, v, s, t, out) : st;
}

mt_status mt_build_source_hash(const mt_variant *v, const mt_problem_static *s, const mt_target *t, char hex[65]) {
    char *text = NULL;
    mt_status st = mt_build_source(v, s, t, &text);
    if (st != MT_OK) return st;
    uint8_t digest[32];
    mt_sha256_digest(text, strlen(text), digest);
    mt_sha256_hex(digest, hex);
    free(text);
    return MT_OK;
}
