/*
 * compile_ahead.c - a plan's variants compiled side by side (see
 * compile_ahead.h).
 */
#include "compile_ahead.h"

#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/base/parallel.h"

typedef struct ahead {
    mt_jit *jit;
    const mt_variant *variants;
    const mt_problem_static *s;
    const mt_target *t;
} ahead;

static void compile_one(void *ctx, int i) {
    const ahead *a = ctx;
    const mt_code_object *obj = NULL;
    if (mt_build_compile(a->jit, &a->variants[i], a->s, a->t, &obj, NULL) != MT_OK) mt_clear_error();
}

void mt_compile_ahead(mt_jit *jit, const mt_variant *variants, int n, const mt_problem_static *s, const mt_target *t) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = n < MT_COMPILE_AHEAD_THREADS ? n : MT_COMPILE_AHEAD_THREADS;
    if (cpus > 0 && threads > cpus) threads = (int)cpus;
    if (threads < 2) return; /* one variant (or one CPU): the plan's own build compiles it */
    ahead a = {.jit = jit, .variants = variants, .s = s, .t = t};
    mt_parallel_for(n, threads, compile_one, &a);
}
