/*
 * stub_libcuda.c - a CUDA driver with one make-believe H100 and nothing
 * behind it, loaded through MLA_TUNE_CUDA_DRIVER so that mlt_runtime_create
 * runs on a host with no GPU (test_runtime_db: how the runtime reads its
 * databases).  Device queries, context calls, modules and launches succeed
 * (launches do nothing); what would touch GPU memory (allocations, copies,
 * streams, events) fails with CUDA_ERROR_NOT_SUPPORTED.  It is also an
 * NVRTC (MLA_TUNE_NVRTC), so that plans are made without compiling.  The
 * exported names are the ones backend_cuda.c looks up (the _v2 names
 * cuda.h's macros map to); arguments are ints and pointers, so the
 * prototypes are written out plainly instead of including cuda.h.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

enum { OK = 0, NOT_SUPPORTED = 801 };

int cuInit(unsigned flags) { return (int)(flags & 0); }
int cuDriverGetVersion(int *v) { return *v = 13000, OK; }
int cuDeviceGetCount(int *n) { return *n = 1, OK; }
int cuDeviceGet(int *dev, int ordinal) { return *dev = ordinal, ordinal == 0 ? OK : 101; }
int cuDeviceGetName(char *name, int len, int dev) { return snprintf(name, (size_t)len, "Stub H100 %d", dev), OK; }
int cuDeviceTotalMem_v2(size_t *bytes, int dev) { return *bytes = (size_t)80 << 30, (void)dev, OK; }

/* the attributes device_info asks for, by their cuda.h numbers */
int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    switch (attr) {
    case 75: *v = 9; break;          /* compute capability major */
    case 76: *v = 0; break;          /* minor */
    case 16: *v = 132; break;        /* multiprocessors */
    case 10: *v = 32; break;         /* warp size */
    case 8: *v = 49152; break;       /* shared memory per block */
    case 97: *v = 232448; break;     /* ... opt-in */
    case 38: *v = 50 << 20; break;   /* L2 bytes */
    /* memory clock (kHz) and bus width: an H100 SXM's (3352 GB/s), or what
     * MLA_TUNE_STUB_MEMORY_KHZ / _BUS_BITS say (a test's other device) */
    case 36: *v = getenv("MLA_TUNE_STUB_MEMORY_KHZ") ? atoi(getenv("MLA_TUNE_STUB_MEMORY_KHZ")) : 2619000; break;
    case 37: *v = getenv("MLA_TUNE_STUB_BUS_BITS") ? atoi(getenv("MLA_TUNE_STUB_BUS_BITS")) : 5120; break;
    default: *v = 1; break;
    }
    return OK;
}

static int context_token;
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { return *ctx = &context_token, (void)dev, OK; }
int cuDevicePrimaryCtxRelease_v2(int dev) { return (void)dev, OK; }
int cuCtxSetCurrent(void *ctx) { return (void)ctx, OK; }
int cuCtxSynchronize(void) { return OK; }

int cuGetErrorString(int r, const char **s) { return *s = r ? "not supported by the stub driver" : "no error", OK; }
int cuGetErrorName(int r, const char **s) { return *s = r ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_SUCCESS", OK; }

/* no GPU behind it */
#define UNSUPPORTED(name) \
    int name(void);       \
    int name(void) { return NOT_SUPPORTED; }
UNSUPPORTED(cuMemAlloc_v2)
UNSUPPORTED(cuMemFree_v2)
UNSUPPORTED(cuMemcpyHtoDAsync_v2)
UNSUPPORTED(cuMemcpyDtoHAsync_v2)
UNSUPPORTED(cuMemcpyDtoDAsync_v2)
UNSUPPORTED(cuMemsetD8Async)
UNSUPPORTED(cuStreamCreate)
UNSUPPORTED(cuStreamDestroy_v2)
UNSUPPORTED(cuStreamSynchronize)
UNSUPPORTED(cuEventCreate)
UNSUPPORTED(cuEventDestroy_v2)
UNSUPPORTED(cuEventRecord)
UNSUPPORTED(cuEventSynchronize)
UNSUPPORTED(cuEventElapsedTime_v2)

/* Modules and launches succeed and do nothing (with the NVRTC below, a plan
 * can be created and run: what the recorded-calls test needs). */
static int module_token, function_token;
int cuModuleLoadData(void **module, const void *image) { return *module = &module_token, (void)image, OK; }
int cuModuleUnload(void *module) { return (void)module, OK; }
int cuModuleGetFunction(void **fn, void *module, const char *name) {
    return *fn = &function_token, (void)module, (void)name, OK;
}
/* CU_FUNC_ATTRIBUTE_BINARY_VERSION (6): 90, as for the sm_90a code a
 * Hopper plan loads (the backend refuses cluster launches of older code);
 * every other attribute 0 */
int cuFuncGetAttribute(int *v, int attr, void *fn) { return *v = attr == 6 ? 90 : 0, (void)fn, OK; }
int cuFuncSetAttribute(void *fn, int attr, int v) { return (void)fn, (void)attr, (void)v, OK; }
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **args, void **extra) {
    (void)fn, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)args;
    return (void)extra, OK;
}
int cuLaunchKernelEx(const void *config, void *fn, void **args, void **extra) {
    return (void)config, (void)fn, (void)args, (void)extra, OK;
}
int cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *base, const void *dims, const void *strides,
                           const void *box, const void *elem_strides, int interleave, int swizzle, int promotion,
                           int fill) {
    (void)map, (void)type, (void)rank, (void)base, (void)dims, (void)strides, (void)box, (void)elem_strides;
    return (void)interleave, (void)swizzle, (void)promotion, (void)fill, OK;
}

/* An NVRTC that compiles nothing in no time (MLA_TUNE_NVRTC names this
 * file): every program "compiles" to 16 bytes, version 99.0. */
int nvrtcVersion(int *major, int *minor) { return *major = 99, *minor = 0, OK; }
int nvrtcCreateProgram(void **prog, const char *src, const char *name, int n, const char *const *h,
                       const char *const *names) {
    return *prog = &module_token, (void)src, (void)name, (void)n, (void)h, (void)names, OK;
}
int nvrtcDestroyProgram(void **prog) { return *prog = NULL, OK; }
int nvrtcCompileProgram(void *prog, int n, const char *const *options) { return (void)prog, (void)n, (void)options, OK; }
int nvrtcGetProgramLogSize(void *prog, size_t *n) { return *n = 1, (void)prog, OK; }
int nvrtcGetProgramLog(void *prog, char *log) { return log[0] = '\0', (void)prog, OK; }
int nvrtcGetCUBINSize(void *prog, size_t *n) { return *n = 16, (void)prog, OK; }
int nvrtcGetCUBIN(void *prog, char *cubin) {
    for (int i = 0; i < 16; i++) cubin[i] = (char)i;
    return (void)prog, OK;
}
const char *nvrtcGetErrorString(int r) { return r ? "stub NVRTC error" : "NVRTC_SUCCESS"; }
