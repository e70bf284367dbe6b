/*
 * worker_job.c - a sweep job's verdict and timing (worker_job.h).
 */
#include "worker_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int mt_job_judge(mt_job_result *r, mt_dtype q_dtype, double e_out, double e_lse, const char *source) {
    double tol = q_dtype == MT_BF16 ? 1e-2 : 5e-3;
    if (e_out < tol && e_lse < 1e-3) return 0;
    r->status = MT_MEASURE_WRONG_RESULT;
    snprintf(r->error, sizeof r->error, "against the %s: out error %.3e (limit %.0e), lse error %.3e%s", source,
             e_out, tol, e_lse, isinf(e_out) || isinf(e_lse) ? " (NaN or unwritten output)" : "");
    return 1;
}

/* One timed run: the launch as the runtime makes it. */
typedef struct family_launch {
    mt_backend *b;
    const mt_kernels *fns;
    const mt_variant *v;
    const mt_problem_static *s;
    const void *args;
} family_launch;

static mt_status run_family_launch(void *arg, mt_stream s) {
    family_launch *l = arg;
    return l->v->family->launch(l->b, l->fns, l->v, l->s, l->args, s);
}

int mt_job_time_launch(mt_backend *b, mt_stream s, const mt_l2_flush *flush, const mt_kernels *fns,
                       const mt_variant *v, const mt_problem_static *ps, const void *args, int warmup, int reps,
                       mt_job_result *r) {
    family_launch l = {b, fns, v, ps, args};
    double *ms = calloc((size_t)reps, sizeof *ms);
    mt_status st = ms ? mt_time_runs(b, s, flush, warmup, reps, run_family_launch, &l, ms)
                      : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st != MT_OK) {
        free(ms);
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "while timing: %s", mt_last_error());
        return 1;
    }
    r->status = MT_MEASURE_OK;
    r->reps = reps;
    r->median_ms = mt_sorted_median(ms, reps);
    r->min_ms = ms[0];
    r->max_ms = ms[reps - 1];
    r->spread_ms = mt_sorted_percentile(ms, reps, 90) - mt_sorted_percentile(ms, reps, 10);
    free(ms);
    return 0;
}
