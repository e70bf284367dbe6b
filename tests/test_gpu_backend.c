/*
 * GPU test (label "gpu"): through the backend interface, compile the test
 * kernel with the JIT into a fresh cache, load it, launch it on random data,
 * check every output element, time it with events; then build a second JIT
 * on the same cache folder and check the code object comes from disk.
 * Prints cold (compile) and warm (disk cache) times.  Exit 77 (skipped) when
 * no GPU is found.
 */
#define _GNU_SOURCE
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "kernels/sources.h"
#include "tuner/kernels/tuner_kernels.h"
#include "runtime/gpu/jit.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

int main(void) {
    mt_backend *b = NULL;
    if (mt_backend_discover(&b) != MT_OK) {
        printf("SKIP: %s\n", mt_last_error());
        return CHECK_SKIP_CODE;
    }
    mt_device_info info;
    CHECK_OK(mt_backend_device_info(b, 0, &info));
    printf("device 0: %s %s, %d CUs, warp %d, %.1f GiB\n", info.backend, info.arch, info.compute_units,
           info.warp_size, info.total_memory / 1073741824.0);
    CHECK(info.compute_units > 0 && (info.warp_size == 32 || info.warp_size == 64));
    CHECK_OK(mt_backend_set_device(b, 0));

    char dir[] = "/tmp/mla-tune-gpu-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *source = NULL;
    CHECK_OK(mt_kernel_source(mt_tuner_kernel_files, "test_kernels.cu", &source));
    const char *defines[] = {"TEST_BLOCK=256"};
    mt_jit_request req = {.source = source, .source_name = "test_kernels.cu", .arch = info.arch,
                          .defines = defines, .n_defines = 1};

    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(b, dir, &jit));
    const mt_code_object *obj = NULL;
    mt_jit_origin origin;
    double t0 = now_ms();
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    double cold = now_ms() - t0;
    CHECK(origin == MT_JIT_COMPILED);
    mt_function fn = NULL;
    CHECK_OK(mt_jit_function(jit, obj, "mt_test_axpy", &fn));
    mt_kernel_resources res;
    CHECK_OK(mt_backend_function_resources(b, fn, &res));
    printf("mt_test_axpy: %d registers, %d bytes static shared, %d bytes local\n", res.registers, res.shared_bytes,
           res.local_bytes);
    CHECK(res.shared_bytes == 256 * 4);

    enum { N = 1 << 24 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = uniform(), y[i] = uniform();
    mt_devptr dx = 0, dy = 0;
    CHECK_OK(mt_backend_mem_alloc(b, N * sizeof(float), &dx));
    CHECK_OK(mt_backend_mem_alloc(b, N * sizeof(float), &dy));
    mt_stream s = NULL;
    CHECK_OK(mt_backend_stream_create(b, &s));
    CHECK_OK(mt_backend_copy_to_device(b, dx, x, N * sizeof(float), s));
    CHECK_OK(mt_backend_copy_to_device(b, dy, y, N * sizeof(float), s));
    float a = 1.5f;
    int n = N;
    void *args[] = {&a, &dx, &dy, &n};
    unsigned grid[3] = {(N + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    CHECK_OK(mt_backend_launch(b, fn, grid, block, 0, s, args));
    CHECK_OK(mt_backend_copy_to_host(b, out, dy, N * sizeof(float), s));
    long wrong = 0;
    for (int i = 0; i < N; i++)
        if (fabsf(out[i] - (a * x[i] + y[i])) > 1e-6f * (1.0f + fabsf(out[i]))) wrong++;
    CHECK_MSG(wrong == 0, "%ld of %d elements wrong", wrong, N);

    /* events: median of 20 launches after 3 warm-ups */
    mt_event e0, e1;
    CHECK_OK(mt_backend_event_create(b, &e0));
    CHECK_OK(mt_backend_event_create(b, &e1));
    float times[20];
    for (int i = 0; i < 23; i++) {
        CHECK_OK(mt_backend_event_record(b, e0, s));
        CHECK_OK(mt_backend_launch(b, fn, grid, block, 0, s, args));
        CHECK_OK(mt_backend_event_record(b, e1, s));
        CHECK_OK(mt_backend_event_sync(b, e1));
        if (i >= 3) CHECK_OK(mt_backend_event_elapsed(b, e0, e1, &times[i - 3]));
    }
    for (int i = 1; i < 20; i++)
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            float t = times[j];
            times[j] = times[j - 1];
            times[j - 1] = t;
        }
    double gbs = 3.0 * N * sizeof(float) / (times[10] * 1e-3) / 1e9;
    printf("axpy over %d floats: median %.3f ms, %.0f GB/s (read x, y; write y)\n", N, times[10], gbs);
    CHECK(times[10] > 0.0f);
    mt_jit_destroy(jit);

    /* a second JIT on the same folder (as a second process would) hits the disk */
    CHECK_OK(mt_jit_create(b, dir, &jit));
    t0 = now_ms();
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    double warm = now_ms() - t0;
    CHECK(origin == MT_JIT_FROM_DISK);
    CHECK_OK(mt_jit_function(jit, obj, "mt_test_axpy", &fn));
    CHECK_OK(mt_backend_launch(b, fn, grid, block, 0, s, args));
    CHECK_OK(mt_backend_stream_sync(b, s));
    printf("JIT compile: cold %.1f ms (compiler), warm %.2f ms (disk cache)\n", cold, warm);
    CHECK(warm < cold);

    mt_jit_destroy(jit);
    mt_backend_event_destroy(b, e0);
    mt_backend_event_destroy(b, e1);
    mt_backend_stream_destroy(b, s);
    mt_backend_mem_free(b, dx);
    mt_backend_mem_free(b, dy);
    mt_backend_close(b);
    free(x), free(y), free(out), free(source);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return check_summary("test_gpu_backend");
}
