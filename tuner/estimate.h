/*
 * estimate.h - how long a sweep will take, before it runs: what `sweep
 * --dry-run` prints, and what orders the keys' hand-out and splits the
 * shards (sweep.h).  Per key: the CPU reference once, then per job a fixed
 * cost and warmup + reps launches, each behind an L2 flush, at the speed
 * of an average candidate rather than the winner's; per distinct variant:
 * its compile, which runs ahead on every CPU thread while the GPU
 * measures.  Good to a factor of ~2: enough to rank keys that differ by
 * orders of magnitude, and to tell minutes from hours.
 *
 * Decode launches are bound by memory (bytes at an average candidate's
 * GB/s); prefill launches by the matrix units (the key's flops at the
 * assumed speed of each candidate's path: SIMT, mma.sync, MFMA, wgmma).
 */
#ifndef MT_ESTIMATE_H
#define MT_ESTIMATE_H

#include "config.h"
#include "kernels/variant.h"

/* Seconds (one GPU, compiles excluded) of sweeping `jobs` jobs of key `k`
 * under plan `p`, the key's candidates being candidates[0..n_candidates)
 * on target `t` (prefill: their paths set the launch's speed, the slowest
 * path when none is given; decode ignores them). */
double mt_plan_key_seconds(const mt_plan *p, const mt_problem_key *k, const mt_target *t,
                           const mt_variant *candidates, int n_candidates, long jobs);

/* Seconds of compiler for variant v on target t (one CPU thread). */
double mt_plan_compile_seconds(const mt_variant *v, const mt_target *t);

/* A prefill path's assumptions (the table in estimate.c). */
typedef struct mt_prefill_path_speed {
    const char *path;       /* "SIMT", "mma.sync", "MFMA", "wgmma" */
    double tflops;          /* an average candidate's TFLOP/s */
    double compile_seconds; /* per variant, one CPU thread */
} mt_prefill_path_speed;

/* The path of prefill variant v on target t (by its mma value and the
 * target's warp width). */
const mt_prefill_path_speed *mt_prefill_path_speed_of(const mt_variant *v, const mt_target *t);

/* "SIMT 3.4, mma.sync 9, MFMA 9, wgmma 400 TFLOP/s": the table, for the
 * dry run to say what it assumed. */
void mt_prefill_speeds_describe(char *buf, size_t size);

#endif
