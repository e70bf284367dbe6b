/*
 * parallel.h - one loop run on several threads: the plan's compile-ahead
 * (runtime/api/compile_ahead.c), `mla-tune compile`, the CPU reference
 * (kernels/mla_decode/mla_reference.c) and the kernel tests' compile and
 * run loops share it.
 */
#ifndef MT_PARALLEL_H
#define MT_PARALLEL_H

/* Calls each(ctx, i) once for every i in [0, n), on up to `threads`
 * threads (no more than n).  The calls take indices in order from a shared
 * counter, so a slow one holds up no other; `each` must be safe to run
 * concurrently with itself.  Returns when every call has returned.  With
 * one thread, or when no thread can be started, the calls run on the
 * caller's. */
void mt_parallel_for(int n, int threads, void (*each)(void *ctx, int i), void *ctx);

/* The host's online CPUs, at least 1 and at most `cap`: a loop's threads
 * when it should use every core (the CPU references). */
int mt_parallel_cpus(int cap);

#endif
