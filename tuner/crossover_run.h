/*
 * crossover_run.h - timing both MLA prefill forms of one chunk on the GPU
 * (db/crossover.h says what the forms are), as `mla-tune crossover` does
 * for each point of its grid.
 *
 * One request: `context` tokens already in the latent cache, then a chunk
 * of `sq` new tokens (their latent rows in the cache too, as an engine
 * writes them before attention).  DeepSeek's shapes: latent 512 + rope 64,
 * q/k nope 128, v 128.  The latent cache's pages lie in token order, so the
 * decompression GEMM reads its rows in place (an engine gathers them from
 * the pages first: a copy of the same bytes that the MQA form reads, which
 * is not timed here, to MHA's advantage).
 *   MQA: absorb  q_nope [sq, N, 128] @ W_UK [N, 128, 512] -> q [sq, N, 576] (nope columns)
 *        attention mlt_plan_run, Sq = sq, over context + sq keys (causal)
 *        output  out_latent [sq, N, 512] @ W_UV [N, 512, 128] -> out [sq, N, 128]
 *   MHA: decompress latent [context + sq, 512] @ [W_UK | W_UV] [512, N * 256] -> k_nope | v per head
 *        attention mlt_prefill_run, causal, k_pe the cache's rope columns shared by the heads
 * Each form is timed end to end (an L2 flush before each run, events
 * around the form's calls, median of `reps`; METHOD.md), and each part
 * alone the same way.  Inputs are random; the outputs are checked for
 * non-finite values.
 */
#ifndef MT_CROSSOVER_RUN_H
#define MT_CROSSOVER_RUN_H

#include "bench_gpu.h"
#include "db/crossover.h"
#include "runtime/gpu/blaslt.h"

typedef struct mt_crossover_setup {
    mt_bench_gpu *g;
    const mt_blaslt *lt;
    int warmup, reps;
} mt_crossover_setup;

/* Times point p (its n_heads, dtypes, sq and context set by the caller)
 * and fills its times, parts, variants and blas. */
mt_status mt_crossover_measure(const mt_crossover_setup *s, mt_crossover_point *p);

#endif
