/*
 * Backend discovery on a host with no GPU runtime: a clear error naming what
 * was looked for, no crash, and a half-loaded backend (compiler without
 * driver) that refuses device operations with a message instead of
 * crashing.  The vendor libraries are pointed at paths that do not exist,
 * so this behaves the same on a GPU host.
 */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "check.h"
#include "runtime/gpu/backend.h"

int main(void) {
    setenv("MLA_TUNE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    setenv("MLA_TUNE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
    setenv("MLA_TUNE_HIPRTC", "/nonexistent/libhiprtc.so", 1);

    mt_backend *b = (mt_backend *)0x1;
    mt_status st = mt_backend_discover(&b);
    CHECK(st == MT_ERR_NO_BACKEND || st == MT_ERR_NO_DEVICE);
    CHECK(b == NULL);
    const char *msg = mt_last_error();
    CHECK_MSG(strstr(msg, "no GPU found") != NULL, "message: %s", msg);
    CHECK_MSG(strstr(msg, "/nonexistent/libcuda.so.1") != NULL, "message names libcuda: %s", msg);
    CHECK_MSG(strstr(msg, "/nonexistent/libamdhip64.so") != NULL, "message names libamdhip64: %s", msg);

    /* HIP with nothing loadable at all: the open itself fails, naming both */
    CHECK_STATUS(mt_backend_open("hip", &b), MT_ERR_NO_BACKEND);
    CHECK(strstr(mt_last_error(), "libhiprtc") != NULL);
    CHECK_STATUS(mt_backend_open("vulkan", &b), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "unknown backend 'vulkan'") != NULL);

    /* CUDA with NVRTC but no driver: compiles, but every device operation
     * says the runtime is missing */
    if (mt_backend_open("cuda", &b) == MT_OK) {
        CHECK(b->has_driver == 0);
        int n = -1;
        CHECK_STATUS(mt_backend_device_count(b, &n), MT_ERR_UNSUPPORTED);
        CHECK(strstr(mt_last_error(), "no GPU runtime loaded") != NULL);
        mt_devptr p = 0;
        CHECK_STATUS(mt_backend_mem_alloc(b, 64, &p), MT_ERR_UNSUPPORTED);
        unsigned g[3] = {1, 1, 1};
        CHECK_STATUS(mt_backend_launch(b, (mt_function)0x1, g, g, 0, NULL, NULL), MT_ERR_UNSUPPORTED);
        CHECK_STATUS(mt_backend_synchronize(b), MT_ERR_UNSUPPORTED);
        mt_backend_close(b);
    } else {
        printf("(NVRTC not loadable here: %s)\n", mt_last_error());
    }
    /* NULL backends are rejected, not dereferenced */
    CHECK_STATUS(mt_backend_synchronize(NULL), MT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(mt_backend_open_for_arch("tpu_v5", &b), MT_ERR_INVALID_ARGUMENT);

    /* AMD target names: hex minor and stepping (gfx90a), features ignored */
    int major = 0, minor = 0, stepping = 0;
    CHECK_OK(mt_parse_gfx_target("gfx90a", &major, &minor, &stepping));
    CHECK(major == 9 && minor == 0 && stepping == 10);
    CHECK_OK(mt_parse_gfx_target("gfx942:sramecc+:xnack-", &major, &minor, &stepping));
    CHECK(major == 9 && minor == 4 && stepping == 2);
    CHECK_OK(mt_parse_gfx_target("gfx950", &major, &minor, &stepping));
    CHECK(major == 9 && minor == 5 && stepping == 0);
    CHECK_OK(mt_parse_gfx_target("gfx1100", &major, &minor, &stepping));
    CHECK(major == 11 && minor == 0 && stepping == 0);
    static const char *const bad_targets[] = {"gfx", "gfx9", "gfx94", "gfx94z", "gfxa42", "sm_90", "gfx94200"};
    for (size_t i = 0; i < sizeof bad_targets / sizeof bad_targets[0]; i++) {
        CHECK_STATUS(mt_parse_gfx_target(bad_targets[i], &major, &minor, &stepping), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), bad_targets[i]) != NULL, "message names '%s': %s", bad_targets[i],
                  mt_last_error());
    }
    CHECK_STATUS(mt_backend_open_for_arch("gfx9zz", &b), MT_ERR_INVALID_ARGUMENT);

    /* the command line says the same and exits non-zero */
    const char *bin = getenv("MLA_TUNE_BIN");
    if (bin) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' devices 2>&1", bin);
        FILE *p = popen(cmd, "r");
        char out[4096] = "";
        size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[n] = '\0';
        int status = p ? pclose(p) : -1;
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d", status);
        CHECK_MSG(strstr(out, "no GPU found") && strstr(out, "libcuda"), "output: %s", out);
    }
    /* MLA_TUNE_BACKEND picks one backend, and an unusable one is an
     * error naming it, not a fall-back to another */
    setenv("MLA_TUNE_BACKEND", "bogus", 1);
    CHECK_STATUS(mt_backend_discover(&b), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "MLA_TUNE_BACKEND=bogus: unknown backend 'bogus'") != NULL, "%s",
              mt_last_error());
    setenv("MLA_TUNE_BACKEND", "cuda", 1);
    CHECK_STATUS(mt_backend_discover(&b), MT_ERR_NO_BACKEND);
    CHECK_MSG(strstr(mt_last_error(), "/nonexistent/libcuda.so.1") != NULL, "%s", mt_last_error());
    setenv("MLA_TUNE_BACKEND", "hip-cpu", 1); /* the CPU emulation: needs clang++ (CI installs it) */
    setenv("MLA_TUNE_EMU_ARCH", "gfx942", 1);
    b = NULL;
    CHECK_OK(mt_backend_discover(&b));
    mt_device_info info;
    CHECK(b && mt_backend_device_info(b, 0, &info) == MT_OK && strcmp(info.arch, "gfx942") == 0);
    mt_backend_close(b);
    unsetenv("MLA_TUNE_BACKEND");
    return check_summary("test_discovery");
}
