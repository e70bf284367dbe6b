/*
 * bench_gpu.h - what `mla-tune bench` (decode, cmd_bench.c) and `bench
 * --prefill` (cmd_bench_prefill.c) time with: the runtime the calls go
 * through, the random-fill kernel for their inputs and the L2 flush run
 * before each timed call (reports/.. METHOD: random data, caches flushed).
 */
#ifndef MT_BENCH_GPU_H
#define MT_BENCH_GPU_H

#include <stddef.h>

#include "timing.h"
#include "kernels/dtype.h"
#include "runtime/api/api_internal.h"

typedef struct mt_bench_gpu {
    mlt_runtime *rt;
    mt_backend *b;
    mt_function fill;
    mt_l2_flush flush;
} mt_bench_gpu;

/* With g->rt created: the backend, the fill kernel (compiled for the
 * runtime's device) and a flush over 256 MiB, by writes or by reads. */
mt_status mt_bench_gpu_open(mt_bench_gpu *g, int flush_write);

/* Fills n elements of type t at p with random values of that type (seed
 * picks the stream), on the default stream. */
mt_status mt_bench_gpu_fill(const mt_bench_gpu *g, mt_devptr p, size_t n, mt_dtype t, unsigned seed);

/* How many of the n elements of type t at host are not finite (NaN or
 * inf): a bench's check that a kernel wrote every output (the outputs are
 * poisoned with NaN before the runs). */
long mt_bench_count_non_finite(const void *host, size_t n, mt_dtype t);

/* The flush and the runtime (either may be unset). */
void mt_bench_gpu_close(mt_bench_gpu *g);

#endif
