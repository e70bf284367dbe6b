/*
 * stub_libcuda.c - a CUDA driver with one make-believe H100 and nothing
 * behind it, loaded through MLA_TUNE_CUDA_DRIVER so that mlt_runtime_create
 * runs on a host with no GPU (test_runtime_db: how the runtime reads its
 * databases).  Device queries and context calls succeed; everything that
 * would touch a GPU (memory, streams, modules, launches) fails with
 * CUDA_ERROR_NOT_SUPPORTED.  The exported names are the ones backend_cuda.c
 * looks up (the _v2 names cuda.h's macros map to); arguments are ints and
 * pointers, so the prototypes are written out plainly instead of including
 * cuda.h.
 */
#include <stddef.h>
#include <stdio.h>

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
UNSUPPORTED(cuModuleLoadData)
UNSUPPORTED(cuModuleUnload)
UNSUPPORTED(cuModuleGetFunction)
UNSUPPORTED(cuFuncGetAttribute)
UNSUPPORTED(cuFuncSetAttribute)
UNSUPPORTED(cuLaunchKernel)
