/*
 * protocol.h - how `mla-tune sweep` talks to its measurement workers.
 *
 * Each worker is a separate process (`mla-tune __worker --device N`, started
 * with fork + exec so it begins with no inherited GPU state).  A variant
 * that faults poisons the GPU context of the process it runs in; running it
 * in a worker means the sweep only loses that worker, records the variant
 * as launch-failed, and starts a fresh one.  A variant that hangs is caught
 * by the coordinator's watchdog, which kills the worker (timeout).
 *
 * Lines, tab-separated, one request and one reply at a time:
 *   worker -> coordinator at start:
 *     DEVICE  arch name compute_units memory_bytes driver compiler shared_max warp device_count copy_gbps
 *             matrix_tflops         (the ceilings, tuner/ceilings.h; 0: not measured)
 *     ERROR   message                      (no device: the worker exits)
 *   coordinator -> worker:
 *     JOB     q_dtype kv_dtype d dl page heads sq batch seq_len family params warmup reps verify_cpu_macs seed
 *             max_len kind lengths
 *   worker -> coordinator:
 *     RESULT  status median_ms min_ms max_ms spread_ms reps error
 * After a launch failure the worker replies, then exits: its context is not
 * to be trusted with another variant.
 */
#ifndef MT_PROTOCOL_H
#define MT_PROTOCOL_H

#include "db/db.h"

typedef struct mt_job {
    mt_problem_key key;
    mt_variant variant;
    int warmup, reps;
    double verify_cpu_macs;
    unsigned seed;
} mt_job;

typedef struct mt_job_result {
    mt_measure_status status;
    double median_ms, min_ms, max_ms, spread_ms;
    int reps;
    char error[512];
} mt_job_result;

/* `mla-tune __worker`: the worker's main loop. */
int cmd_worker(int argc, char **argv);

#endif
