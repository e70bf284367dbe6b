/*
 * parallel.c - one loop run on several threads (see parallel.h).
 */
#define _GNU_SOURCE
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct loop {
    int n, next;
    void (*each)(void *ctx, int i);
    void *ctx;
    pthread_mutex_t lock;
} loop;

static void *run(void *arg) {
    loop *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        int i = l->next++;
        pthread_mutex_unlock(&l->lock);
        if (i >= l->n) return NULL;
        l->each(l->ctx, i);
    }
}

void mt_parallel_for(int n, int threads, void (*each)(void *ctx, int i), void *ctx) {
    if (n <= 0) return;
    if (threads > n) threads = n;
    loop l = {.n = n, .each = each, .ctx = ctx};
    pthread_mutex_init(&l.lock, NULL);
    pthread_t *tid = threads > 1 ? malloc((size_t)threads * sizeof *tid) : NULL;
    int started = 0;
    while (tid && started < threads && pthread_create(&tid[started], NULL, run, &l) == 0) started++;
    if (started == 0) run(&l); /* one thread, or none could start: here */
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    free(tid);
    pthread_mutex_destroy(&l.lock);
}

int mt_parallel_cpus(int cap) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > cap ? cap : (int)cpus;
}
