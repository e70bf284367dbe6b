/*
 * stub_driver.h - for tests that create a runtime on a host with no GPU:
 * the stub CUDA driver (stub_libcuda.c, an sm_90 with 132 SMs) that ctest
 * names in MLA_TUNE_STUB_CUDA becomes the driver the runtime loads, HIP is
 * kept out (so that no AMD runtime answers first), and the DB variables
 * of the caller's shell are cleared.
 */
#ifndef MT_TESTS_STUB_DRIVER_H
#define MT_TESTS_STUB_DRIVER_H

#include <stdio.h>
#include <stdlib.h>

/* 1 when the stub driver is in place; 0 (having said SKIP) when ctest did
 * not name one: the test then exits with CHECK_SKIP_CODE. */
static inline int stub_driver_use(void) {
    const char *stub = getenv("MLA_TUNE_STUB_CUDA");
    if (!stub) {
        printf("SKIP: MLA_TUNE_STUB_CUDA not set\n");
        return 0;
    }
    setenv("MLA_TUNE_CUDA_DRIVER", stub, 1);
    setenv("MLA_TUNE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
    unsetenv("MLA_TUNE_DB");
    unsetenv("MLA_TUNE_SYSTEM_DB");
    return 1;
}

#endif
