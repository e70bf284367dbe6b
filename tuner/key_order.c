/*
 * key_order.c - the order in which the sweep hands its keys to the
 * workers (see sweep.h).
 *
 * Longest processing time first: with several workers each taking the
 * next key when it is free, a costly key handed out last runs alone while
 * the others idle (issue 30: 1.65x on 2 GPUs, with the plan's costliest
 * key at its end).  Handing the keys out costliest first leaves the cheap
 * ones to fill the gaps at the end; the estimate is mt_plan_key_seconds,
 * good to a factor of ~2, which is plenty to rank keys that differ by
 * orders of magnitude.  Equal estimates keep the plan order, so the order
 * is deterministic.
 *
 * Shards (--shard I/N, one process per host) get their keys the same way:
 * costliest first, each to the shard with the least estimated work so far
 * (longest processing time first, within 4/3 of the best split), computed
 * alike by every shard from the plan alone.  By index (k % N) both
 * costliest keys of a 12-key plan fell in one of two shards: 21.7 s
 * against 46.8 (reports/h200/two-gpu/session17).
 */
#include <stdlib.h>

#include "sweep.h"

typedef struct costed_key { int index; double seconds; } costed_key;

static int costliest_first(const void *a, const void *b) {
    const costed_key *x = a, *y = b;
    if (x->seconds != y->seconds) return x->seconds > y->seconds ? -1 : 1;
    return x->index - y->index;
}

void mt_sweep_handout_order(const double *seconds, int n, int *order) {
    costed_key *c = calloc((size_t)(n > 0 ? n : 1), sizeof *c);
    if (!c) {  /* no memory for the sort: the plan order, still every key once */
        for (int i = 0; i < n; i++) order[i] = i;
        return;
    }
    for (int i = 0; i < n; i++) c[i] = (costed_key){.index = i, .seconds = seconds[i]};
    qsort(c, (size_t)n, sizeof *c, costliest_first);
    for (int i = 0; i < n; i++) order[i] = c[i].index;
    free(c);
}

double mt_sweep_handout_makespan(const double *seconds, int n, int workers) {
    if (workers < 1) workers = 1;
    int *owner = calloc((size_t)(n > 0 ? n : 1), sizeof *owner);
    double *busy = calloc((size_t)workers, sizeof *busy);
    double end = 0;
    /* each key, in hand-out order, goes to the worker free first: the
     * shards' split, with workers for shards */
    if (owner && busy && mt_sweep_shard_keys(seconds, n, workers, owner) == 0) {
        for (int i = 0; i < n; i++) busy[owner[i]] += seconds[i];
        for (int w = 0; w < workers; w++)
            if (busy[w] > end) end = busy[w];
    } else { /* no memory to simulate: the total, as one worker */
        for (int i = 0; i < n; i++) end += seconds[i];
    }
    free(owner);
    free(busy);
    return end;
}

int mt_sweep_shard_keys(const double *seconds, int n, int shards, int *owner) {
    if (shards < 1) return -1;
    int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order);
    double *load = calloc((size_t)shards, sizeof *load);
    if (!order || !load) {
        free(order);
        free(load);
        return -1;
    }
    mt_sweep_handout_order(seconds, n, order);
    for (int i = 0; i < n; i++) {
        int s = 0; /* the least loaded shard, the lowest index on a tie */
        for (int j = 1; j < shards; j++)
            if (load[j] < load[s]) s = j;
        owner[order[i]] = s;
        load[s] += seconds[order[i]];
    }
    free(order);
    free(load);
    return 0;
}
