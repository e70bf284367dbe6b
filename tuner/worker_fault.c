/*
 * worker_fault.c - the injected fault of the sweep's isolation tests
 * (worker_fault.h).
 */
#include "worker_fault.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/sources.h"
#include "runtime/gpu/jit.h"
#include "tuner/kernels/tuner_kernels.h"

mt_status mt_job_fault_parse(const char *spec, mt_job_fault *f) {
    memset(f, 0, sizeof *f);
    if (!spec || !spec[0]) return MT_OK;
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof f->param)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "--inject-fault '%s': expected PARAM=VALUE (e.g. tile_q=32)", spec);
    char *end = NULL;
    errno = 0;
    long value = strtol(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || value < INT_MIN || value > INT_MAX)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "--inject-fault '%s': the value '%s' is not an integer", spec, eq + 1);
    memcpy(f->param, spec, (size_t)(eq - spec));
    f->value = (int)value;
    /* a name no family has would inject nothing: the test would pass
     * without testing anything */
    for (int i = 0; i < mt_family_count(); i++)
        if (mt_family_param_index(mt_family_at(i), f->param) >= 0) return MT_OK;
    mt_status st = mt_fail(MT_ERR_INVALID_ARGUMENT, "--inject-fault '%s': no kernel family has a parameter '%s'",
                           spec, f->param);
    memset(f, 0, sizeof *f);
    return st;
}

int mt_job_fault_hits(const mt_job_fault *f, const mt_variant *v) {
    if (!f->param[0]) return 0;
    int p = mt_family_param_index(v->family, f->param);
    return p >= 0 && v->values[p] == f->value;
}

int mt_job_fault_inject(const mt_worker_gpu *g, mt_job_result *r) {
    memset(r, 0, sizeof *r);
    char *src = NULL;
    const mt_code_object *obj = NULL;
    mt_function oob = NULL;
    mt_status st = mt_kernel_source(mt_tuner_kernel_files, "test_kernels.cu", &src);
    mt_jit_request req = {.source = src, .source_name = "test_kernels.cu", .arch = g->info->arch};
    if (st == MT_OK) st = mt_jit_compile(g->jit, &req, &obj, NULL);
    if (st == MT_OK) st = mt_jit_function(g->jit, obj, "mt_test_oob_write", &oob);
    free(src);
    /* the L2 flush's buffer: the worker's, there before any job */
    mt_devptr buf = g->flush->buf;
    long long offset = 1ll << 40; /* a terabyte past it */
    void *args[] = {&buf, &offset};
    unsigned one[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    if (st == MT_OK) st = mt_backend_launch(g->b, oob, one, block, 0, g->stream, args);
    if (st == MT_OK) st = mt_backend_stream_sync(g->b, g->stream);
    r->status = MT_MEASURE_LAUNCH_FAILED;
    snprintf(r->error, sizeof r->error, "injected fault: %s", st == MT_OK ? "no fault happened" : mt_last_error());
    return 1;
}

int mt_job_fault_fake(mt_job_result *r) {
    memset(r, 0, sizeof *r);
    r->status = MT_MEASURE_LAUNCH_FAILED;
    snprintf(r->error, sizeof r->error, "injected fault: an illegal memory access (fake device)");
    return 1;
}
