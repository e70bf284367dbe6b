/*
 * worker_proc.h - the coordinator's side of one sweep worker (worker.c):
 * the process started by fork + exec of this binary, driven over two pipes
 * (protocol.h), a job sent and its result read, stopped or killed.  How the
 * coordinator uses them (threads, retries, isolation): sweep.c.
 */
#ifndef MT_WORKER_PROC_H
#define MT_WORKER_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "protocol.h"

typedef struct mt_worker_proc {
    pid_t pid;          /* 0: not running */
    int to_fd, from_fd;
    char buf[8192];     /* what was read past the last line */
    size_t used;
} mt_worker_proc;

/* What a worker is started with (its command line). */
typedef struct mt_worker_options {
    int device;
    const char *fake, *cache_dir, *inject_fault;  /* NULL: not given */
} mt_worker_options;

/* Starts a worker for o->device and reads its DEVICE line into device_line
 * (180 s at most).  The worker asks for SIGKILL when the calling thread
 * ends, and its pipe ends are close-on-exec (sweep.c says why). */
mt_status mt_worker_start(const mt_worker_options *o, mt_worker_proc *w, char *device_line, size_t size);

/* Closes its pipes and waits for it (killing it first with kill_it);
 * *status (if given) gets its wait status.  Nothing when not running. */
void mt_worker_stop(mt_worker_proc *w, int kill_it, int *status);

/* Runs one job: starts the worker first when it is not running, sends
 * the job, waits up to timeout_s for its result.  A worker that dies,
 * hangs (killed here) or answers garbage gives a launch-failed or timeout
 * result naming what happened, and is stopped.  Returns 1 when the worker
 * was ended from outside (SIGKILL or SIGTERM not sent here: the OOM killer,
 * a person), which says nothing about the variant, else 0. */
int mt_worker_run_job(mt_worker_proc *w, const mt_worker_options *o, const mt_job *job, int timeout_s,
                      mt_job_result *r, char *device_line, size_t size);

#endif
