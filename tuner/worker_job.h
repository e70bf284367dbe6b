/*
 * worker_job.h - what a sweep job does the same way whatever its family
 * (decode jobs in worker.c, prefill jobs in worker_prefill.c): the GPU it
 * runs on, the verdict on its outputs against the reference, and the
 * timing of its launch.
 */
#ifndef MT_WORKER_JOB_H
#define MT_WORKER_JOB_H

#include "protocol.h"
#include "timing.h"
#include "kernels/dtype.h"
#include "kernels/family.h"

/* The worker's GPU, as worker.c set it up. */
typedef struct mt_worker_gpu {
    mt_backend *b;
    mt_jit *jit;
    const mt_device_info *info;
    mt_stream stream;
    const mt_l2_flush *flush;
} mt_worker_gpu;

/* The verdict on a job's outputs, from their relative errors against the
 * reference (`source` names it): out below the tolerance of q's type (1e-2
 * bf16, 5e-3 fp16) and lse below 1e-3, NaN failing.  0 when they pass;
 * otherwise r is MT_MEASURE_WRONG_RESULT with both errors, and 1. */
int mt_job_judge(mt_job_result *r, mt_dtype q_dtype, double e_out, double e_lse, const char *source);

/* Times the variant's launch (its family's launch with `args`, the
 * family's own argument struct): `warmup` runs untimed, then `reps` runs,
 * each behind the L2 flush (mt_time_runs).  r becomes MT_MEASURE_OK with
 * the median, min, max and p90 - p10 of the times, and 0 is returned; or
 * MT_MEASURE_LAUNCH_FAILED with the error, and 1: the worker must exit
 * (its GPU context cannot be trusted after a failed launch). */
int mt_job_time_launch(mt_backend *b, mt_stream s, const mt_l2_flush *flush, const mt_kernels *fns,
                       const mt_variant *v, const mt_problem_static *ps, const void *args, int warmup, int reps,
                       mt_job_result *r);

#endif
