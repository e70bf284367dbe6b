/*
 * worker_proc.c - the coordinator's side of a sweep worker (worker_proc.h).
 */
#define _GNU_SOURCE
#include "worker_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/variant.h"
#include "timing.h"

void mt_worker_stop(mt_worker_proc *w, int kill_it, int *status) {
    if (w->pid <= 0) return;
    if (kill_it) kill(w->pid, SIGKILL);
    close(w->to_fd);
    close(w->from_fd);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {}
    if (status) *status = st;
    w->pid = 0;
    w->used = 0;
}

/* 1: a line; 0: timeout; -1: the worker closed its end.  The timeout is
 * in seconds as a double: --job-timeout 3000000 in milliseconds overflows
 * an int (every job was recorded as timeout). */
static int worker_read_line(mt_worker_proc *w, char *line, size_t size, double timeout_s) {
    double deadline = mt_now_s() + timeout_s;
    for (;;) {
        char *nl = memchr(w->buf, '\n', w->used);
        if (nl) {
            size_t len = (size_t)(nl - w->buf) + 1;
            size_t copy = len < size ? len : size - 1;
            memcpy(line, w->buf, copy);
            line[copy] = '\0';
            memmove(w->buf, w->buf + len, w->used - len);
            w->used -= len;
            return 1;
        }
        if (w->used == sizeof w->buf) w->used = 0;  /* an absurd line: drop it */
        double left_ms = (deadline - mt_now_s()) * 1000;
        if (left_ms <= 0) return 0;
        int left = left_ms > INT_MAX ? INT_MAX : (int)left_ms + 1;
        struct pollfd p = {.fd = w->from_fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return 0;
        ssize_t got = read(w->from_fd, w->buf + w->used, sizeof w->buf - w->used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        w->used += (size_t)got;
    }
}

mt_status mt_worker_start(const mt_worker_options *o, mt_worker_proc *w, char *device_line, size_t size) {
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
        mt_status st = mt_fail(MT_ERR_IO, "pipe: %s", strerror(errno));
        close(to[0]), close(to[1]);
        return st;
    }
    pid_t coordinator = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        return mt_fail(MT_ERR_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* die with the coordinator (see the top of this file); it may have
         * died already, before the request */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != coordinator) _exit(126);
        dup2(to[0], 0);  /* the copies on 0 and 1 are not close-on-exec */
        dup2(from[1], 1);
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        char dev[16];
        snprintf(dev, sizeof dev, "%d", o->device);
        char *argv[12];
        int n = 0;
        argv[n++] = "mla-tune";
        argv[n++] = "__worker";
        argv[n++] = "--device";
        argv[n++] = dev;
        if (o->fake) argv[n++] = "--fake", argv[n++] = (char *)o->fake;
        if (o->cache_dir) argv[n++] = "--cache-dir", argv[n++] = (char *)o->cache_dir;
        if (o->inject_fault) argv[n++] = "--inject-fault", argv[n++] = (char *)o->inject_fault;
        argv[n] = NULL;
        execv("/proc/self/exe", argv);
        fprintf(stderr, "mla-tune: cannot start a worker: %s\n", strerror(errno));
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->to_fd = to[1];
    w->from_fd = from[0];
    char line[1024];
    int r = worker_read_line(w, line, sizeof line, 180);
    if (r == 1 && strncmp(line, "DEVICE\t", 7) == 0) {
        snprintf(device_line, size, "%s", line);
        return MT_OK;
    }
    int status = 0;
    mt_worker_stop(w, 1, &status);
    if (r == 1 && strncmp(line, "ERROR\t", 6) == 0) {
        line[strcspn(line, "\n")] = '\0';
        return mt_fail(MT_ERR_NO_DEVICE, "%s", line + 6);
    }
    return mt_fail(MT_ERR_NO_DEVICE, "worker for device %d did not start (%s)", o->device,
                   r == 0 ? "no answer in 180 s" : "it exited");
}

static void describe_exit(int status, char *buf, size_t size) {
    if (WIFSIGNALED(status))
        snprintf(buf, size, "worker died: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, size, "worker exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, size, "worker ended");
}

/* A worker ended by SIGKILL or SIGTERM that it did not get from us: the
 * OOM killer or a person, not the variant (a faulting variant ends its
 * worker by SIGSEGV, SIGABRT or an exit status). */
static int killed_from_outside(int status) {
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGKILL || WTERMSIG(status) == SIGTERM);
}

int mt_worker_run_job(mt_worker_proc *w, const mt_worker_options *o, const mt_job *job, int timeout_s,
                      mt_job_result *r, char *device_line, size_t size) {
    memset(r, 0, sizeof *r);
    if (w->pid <= 0 && mt_worker_start(o, w, device_line, size) != MT_OK) {
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "cannot restart the worker: %s", mt_last_error());
        return 0;
    }
    char params[256], line[4096];
    mt_variant_format(&job->variant, params, sizeof params);
    /* the lengths last: the mix name is the one free-text field (config.c
     * keeps it printable, without tabs) */
    int n = snprintf(line, sizeof line, "JOB\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%.0f\t%u\t%d\t%s\t%s\n",
                     mt_dtype_name(job->key.s.q_dtype), mt_dtype_name(job->key.s.kv_dtype), job->key.s.d,
                     job->key.s.dl, job->key.s.page_size, job->key.n_heads, job->key.sq, job->key.batch,
                     job->key.seq_len, job->variant.family->name, params, job->warmup, job->reps,
                     job->verify_cpu_macs, job->seed, job->key.max_len, job->key.kind,
                     job->key.lengths[0] ? job->key.lengths : "uniform");
    if (write(w->to_fd, line, (size_t)n) != n) {  /* it died between jobs */
        int status = 0;
        mt_worker_stop(w, 1, &status);
        r->status = MT_MEASURE_LAUNCH_FAILED;
        describe_exit(status, r->error, sizeof r->error);
        return killed_from_outside(status);
    }
    int got = worker_read_line(w, line, sizeof line, timeout_s);
    if (got == 0) {
        mt_worker_stop(w, 1, NULL);
        r->status = MT_MEASURE_TIMEOUT;
        snprintf(r->error, sizeof r->error, "no result within %d s: worker killed", timeout_s);
        return 0;
    }
    if (got < 0) {
        int status = 0;
        mt_worker_stop(w, 0, &status);
        r->status = MT_MEASURE_LAUNCH_FAILED;
        describe_exit(status, r->error, sizeof r->error);
        return killed_from_outside(status);
    }
    char *f[10];
    int nf = 0;
    char *save = NULL;
    line[strcspn(line, "\n")] = '\0';
    for (char *p = strtok_r(line, "\t", &save); p && nf < 10; p = strtok_r(NULL, "\t", &save)) f[nf++] = p;
    if (nf != 8 || strcmp(f[0], "RESULT") != 0) {
        mt_worker_stop(w, 1, NULL);
        r->status = MT_MEASURE_LAUNCH_FAILED;
        snprintf(r->error, sizeof r->error, "worker sent a malformed reply");
        return 0;
    }
    r->status = MT_MEASURE_LAUNCH_FAILED;
    for (int i = 0; i < 5; i++)
        if (strcmp(f[1], mt_measure_status_name((mt_measure_status)i)) == 0) r->status = (mt_measure_status)i;
    r->median_ms = atof(f[2]), r->min_ms = atof(f[3]), r->max_ms = atof(f[4]), r->spread_ms = atof(f[5]);
    r->reps = atoi(f[6]);
    snprintf(r->error, sizeof r->error, "%s", strcmp(f[7], "-") == 0 ? "" : f[7]);
    if (r->status == MT_MEASURE_LAUNCH_FAILED) mt_worker_stop(w, 0, NULL);  /* it exits by itself */
    return 0;
}
