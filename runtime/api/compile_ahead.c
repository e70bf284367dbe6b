/*
 * compile_ahead.c - a plan's variants compiled side by side (see
 * compile_ahead.h).
 */
#include "compile_ahead.h"

#include <pthread.h>
#include <unistd.h>

#include "runtime/base/error.h"

typedef struct ahead {
    mt_jit *jit;
    const mt_variant *variants;
    int n, next;
    const mt_problem_static *s;
    const mt_target *t;
    pthread_mutex_t lock;
} ahead;

static void *worker(void *arg) {
    ahead *a = arg;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        int i = a->next++;
        pthread_mutex_unlock(&a->lock);
        if (i >= a->n) break;
        const mt_code_object *obj = NULL;
        if (mt_build_compile(a->jit, &a->variants[i], a->s, a->t, &obj, NULL) != MT_OK) mt_clear_error();
    }
    return NULL;
}

void mt_compile_ahead(mt_jit *jit, const mt_variant *variants, int n, const mt_problem_static *s, const mt_target *t) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = n < MT_COMPILE_AHEAD_THREADS ? n : MT_COMPILE_AHEAD_THREADS;
    if (cpus > 0 && threads > cpus) threads = (int)cpus;
    if (threads < 2) return; /* one variant (or one CPU): the plan's own build compiles it */
    ahead a = {.jit = jit, .variants = variants, .n = n, .s = s, .t = t};
    pthread_mutex_init(&a.lock, NULL);
    pthread_t tid[MT_COMPILE_AHEAD_THREADS];
    int started = 0;
    while (started < threads && pthread_create(&tid[started], NULL, worker, &a) == 0) started++;
    if (started == 0) worker(&a); /* no thread could start: compile here */
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&a.lock);
}
