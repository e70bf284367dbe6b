/*
 * backend_hip_absent.c - stands in for backend_hip.c in a build configured
 * with -DMLA_TUNE_HIP=OFF (no HIP headers), so that asking for the HIP
 * backend says why it is not there instead of failing to link.
 */
#include "backend.h"

mt_status mt_backend_hip_open(mt_backend *b) {
    (void)b;
    return mt_fail(MT_ERR_NO_BACKEND, "HIP backend not built (configured with MLA_TUNE_HIP=OFF)");
}
