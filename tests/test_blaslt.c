/*
 * The vendor BLAS loader (runtime/gpu/blaslt.h), with no GPU: cuBLASLt
 * from where CUDA installs it (this host has the toolkit: loaded, every
 * entry point found, its version read; skipped where absent), an override
 * naming a missing file or a library without the entry points (the stub
 * driver) refused with a message naming the vendor, each name tried and
 * why, and hipBLASLt reported absent the same way where it is not
 * installed.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "runtime/gpu/blaslt.h"

int main(void) {
    mt_blaslt lt;
    unsetenv("MLA_TUNE_CUBLASLT");
    unsetenv("MLA_TUNE_HIPBLASLT");
    CHECK(strcmp(mt_blaslt_entry_name(MT_BLASLT_CUBLASLT, MT_BLASLT_MATMUL), "cublasLtMatmul") == 0);
    CHECK(strcmp(mt_blaslt_entry_name(MT_BLASLT_HIPBLASLT, MT_BLASLT_ALGO_GET_HEURISTIC),
                 "hipblasLtMatmulAlgoGetHeuristic") == 0);
    mt_status st = mt_blaslt_open(MT_BLASLT_CUBLASLT, &lt);
    if (st == MT_OK) {
        printf("cuBLASLt: %s, version %zu\n", lt.library, lt.version);
        CHECK(lt.lib && lt.library[0] && lt.version >= 11000);
        for (int e = 0; e < MT_BLASLT_N_ENTRIES; e++) CHECK(lt.fn[e] != NULL);
        mt_blaslt_close(&lt);
        CHECK(lt.lib == NULL);
    } else {
        printf("cuBLASLt absent here: %s\n", mt_last_error());
        CHECK(st == MT_ERR_NO_BACKEND && strstr(mt_last_error(), "cuBLASLt is not available") &&
              strstr(mt_last_error(), "libcublasLt.so.13") && strstr(mt_last_error(), "MLA_TUNE_CUBLASLT"));
    }
    /* an override is the only place looked */
    setenv("MLA_TUNE_CUBLASLT", "/nonexistent/libcublasLt.so", 1);
    st = mt_blaslt_open(MT_BLASLT_CUBLASLT, &lt);
    CHECK_MSG(st == MT_ERR_NO_BACKEND && strstr(mt_last_error(), "cuBLASLt is not available") &&
                  strstr(mt_last_error(), "/nonexistent/libcublasLt.so") && !strstr(mt_last_error(), "so.13"),
              "%s", mt_last_error());
    CHECK(lt.lib == NULL);
    /* a library that loads but is not cuBLASLt */
    const char *stub = getenv("MLA_TUNE_STUB_CUDA");
    if (stub) {
        setenv("MLA_TUNE_CUBLASLT", stub, 1);
        st = mt_blaslt_open(MT_BLASLT_CUBLASLT, &lt);
        CHECK_MSG(st == MT_ERR_NO_BACKEND && strstr(mt_last_error(), "lacks cublasLtCreate"), "%s", mt_last_error());
    }
    unsetenv("MLA_TUNE_CUBLASLT");
    st = mt_blaslt_open(MT_BLASLT_HIPBLASLT, &lt);
    if (st == MT_OK) {
        printf("hipBLASLt: %s\n", lt.library);
        mt_blaslt_close(&lt);
    } else {
        CHECK_MSG(st == MT_ERR_NO_BACKEND && strstr(mt_last_error(), "hipBLASLt is not available") &&
                      strstr(mt_last_error(), "libhipblaslt.so.1") && strstr(mt_last_error(), "/opt/rocm/lib"),
                  "%s", mt_last_error());
    }
    return check_summary("test_blaslt");
}
