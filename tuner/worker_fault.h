/*
 * worker_fault.h - `--inject-fault PARAM=VALUE` (tests only): the sweep's
 * workers run a faulting kernel instead of any job whose variant has that
 * value, whatever the job's family (decode or prefill), so that the
 * sweep's handling of a variant that kills the GPU context (recorded as
 * launch-failed, the worker restarted, the sweep going on) is tested for
 * every kind of key.  The coordinator checks the spec before starting a
 * worker; the worker checks each job before handing it to its kind.
 */
#ifndef MT_WORKER_FAULT_H
#define MT_WORKER_FAULT_H

#include "protocol.h"
#include "worker_job.h"

typedef struct mt_job_fault {
    char param[32]; /* "": no fault injected */
    int value;
} mt_job_fault;

/* Parses "PARAM=VALUE" (PARAM a parameter of some kernel family, VALUE an
 * integer); NULL or "" is no fault.  A bad spec is an error naming it. */
mt_status mt_job_fault_parse(const char *spec, mt_job_fault *f);

/* 1 when the job's variant has the faulting value. */
int mt_job_fault_hits(const mt_job_fault *f, const mt_variant *v);

/* On the GPU: launches mt_test_oob_write (tuner/kernels/test_kernels.cu),
 * which writes a terabyte past a buffer of the worker's, and waits for it:
 * the context is lost as a buggy variant loses it.  r becomes
 * MT_MEASURE_LAUNCH_FAILED with "injected fault: " and the error.
 * Returns 1: the worker must exit. */
int mt_job_fault_inject(const mt_worker_gpu *g, mt_job_result *r);

/* On the fake device (no GPU to fault): r as mt_job_fault_inject leaves it
 * after a real fault.  Returns 1: the worker must exit, as a real one. */
int mt_job_fault_fake(mt_job_result *r);

#endif
