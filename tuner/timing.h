/*
 * timing.h - timing GPU work the one way the tuner and the bench do it
 * (METHOD.md): per timed run an optional L2 flush, then events around the
 * run only; all runs queued, one synchronisation, times sorted so the
 * caller takes the median and percentiles.
 *
 * The flush evicts the L2 by reading a buffer several times its size.  A
 * memset would do the eviction too, but it leaves the cache full of dirty
 * lines whose write-back then lands inside the timed call: on the H100
 * that charged a 16-head decode call 8-10 us of traffic that was the
 * flush's own (reports/PERFLOG.md, session 6).  The write flush stays
 * selectable so the two can be compared.
 */
#ifndef MT_TIMING_H
#define MT_TIMING_H

#include <stddef.h>

#include "runtime/gpu/backend.h"
#include "runtime/gpu/jit.h"

typedef enum mt_flush_mode { MT_FLUSH_READ, MT_FLUSH_WRITE } mt_flush_mode;

typedef struct mt_l2_flush {
    mt_backend *b;
    mt_flush_mode mode;
    mt_function evict; /* mt_l2_evict_read of bench_kernels.cu */
    mt_devptr buf, sink;
    size_t bytes;
} mt_l2_flush;

/* Compiles the eviction kernel for `arch` and allocates a zeroed buffer
 * of `bytes` (a few times the L2).  On failure everything is released. */
mt_status mt_l2_flush_create(mt_backend *b, mt_jit *jit, const char *arch, size_t bytes, mt_flush_mode mode,
                             mt_l2_flush *f);
void mt_l2_flush_destroy(mt_l2_flush *f);
/* Queues one flush on stream s; `i` varies the memset's byte. */
mt_status mt_l2_flush_run(const mt_l2_flush *f, int i, mt_stream s);

/* One unit of timed work: queues it on stream s. */
typedef mt_status (*mt_timed_fn)(void *arg, mt_stream s);

/* Runs fn `warmup` times untimed, then times `reps` runs of fn on stream
 * s, each between its own pair of events and preceded by a flush when
 * `flush` is not NULL; waits for them and fills ms[0..reps) in
 * milliseconds, sorted ascending. */
mt_status mt_time_runs(mt_backend *b, mt_stream s, const mt_l2_flush *flush, int warmup, int reps, mt_timed_fn fn,
                       void *arg, double *ms);

/* Median of n sorted values; the pct-th percentile (the value at index
 * n * pct / 100, the last one at most). */
double mt_sorted_median(const double *v, int n);
double mt_sorted_percentile(const double *v, int n, int pct);

/* Host wall time: seconds on the monotonic clock (a sweep's elapsed time,
 * a worker's deadline). */
double mt_now_s(void);

#endif
