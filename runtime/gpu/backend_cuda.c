/*
 * backend_cuda.c - the NVIDIA backend: CUDA driver API + NVRTC, both loaded
 * with dlopen.
 *
 * We compile against the CUDA 13 headers for the types and prototypes, but
 * never link libcuda or libnvrtc: every entry point is looked up by its
 * exported (versioned) name.  That is what lets one mla-tune binary start on
 * a host with no NVIDIA driver (CI) and still compile sm_* code with NVRTC.
 *
 * Environment overrides (tests use the first to simulate a missing driver on
 * any machine):
 *   MLA_TUNE_CUDA_DRIVER  path of libcuda to load instead of libcuda.so.1
 *   MLA_TUNE_NVRTC        path of libnvrtc to load instead of libnvrtc.so.*
 *
 * Contexts: we use each device's primary context (the one the CUDA runtime
 * and PyTorch share), made current per thread by set_device.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Function pointer types come from the header's own prototypes. */
#define CU_FN(name) __typeof__(&name) name
typedef struct cuda_api {
    CU_FN(cuInit);
    CU_FN(cuDriverGetVersion);
    CU_FN(cuDeviceGetCount);
    CU_FN(cuDeviceGet);
    CU_FN(cuDeviceGetName);
    CU_FN(cuDeviceGetAttribute);
    CU_FN(cuDeviceTotalMem);
    CU_FN(cuDevicePrimaryCtxRetain);
    CU_FN(cuDevicePrimaryCtxRelease);
    CU_FN(cuCtxSetCurrent);
    CU_FN(cuCtxSynchronize);
    CU_FN(cuMemAlloc);
    CU_FN(cuMemFree);
    CU_FN(cuMemcpyHtoDAsync);
    CU_FN(cuMemcpyDtoHAsync);
    CU_FN(cuMemcpyDtoDAsync);
    CU_FN(cuMemsetD8Async);
    CU_FN(cuStreamCreate);
    CU_FN(cuStreamDestroy);
    CU_FN(cuStreamSynchronize);
    CU_FN(cuEventCreate);
    CU_FN(cuEventDestroy);
    CU_FN(cuEventRecord);
    CU_FN(cuEventSynchronize);
    CU_FN(cuEventElapsedTime);
    CU_FN(cuModuleLoadData);
    CU_FN(cuModuleUnload);
    CU_FN(cuModuleGetFunction);
    CU_FN(cuFuncGetAttribute);
    CU_FN(cuFuncSetAttribute);
    CU_FN(cuLaunchKernel);
    CU_FN(cuGetErrorString);
    CU_FN(cuGetErrorName);
} cuda_api;

/* Entry points newer than the baseline above, looked up separately: a
 * driver without one still runs everything else (NULL: not there). */
typedef struct cuda_api_optional {
    CU_FN(cuLaunchKernelEx); /* CUDA 12.0: programmatic dependent launch */
    CU_FN(cuTensorMapEncodeTiled); /* CUDA 12.0: descriptors for the tensor copy engine */
    CU_FN(cuStreamBeginCapture);   /* graphs (CUDA 10+; the _v2 names) */
    CU_FN(cuStreamEndCapture);
    CU_FN(cuGraphInstantiateWithFlags);
    CU_FN(cuGraphLaunch);
    CU_FN(cuGraphExecDestroy);
    CU_FN(cuGraphDestroy);
} cuda_api_optional;

typedef struct nvrtc_api {
    CU_FN(nvrtcVersion);
    CU_FN(nvrtcCreateProgram);
    CU_FN(nvrtcDestroyProgram);
    CU_FN(nvrtcCompileProgram);
    CU_FN(nvrtcGetProgramLogSize);
    CU_FN(nvrtcGetProgramLog);
    CU_FN(nvrtcGetCUBINSize);
    CU_FN(nvrtcGetCUBIN);
    CU_FN(nvrtcGetErrorString);
} nvrtc_api;

/* A function handle remembers how much dynamic shared memory it has been
 * allowed, so the opt-in attribute is set once, not on every launch. */
struct mt_function_s {
    CUfunction fn;
    size_t dynamic_shared_allowed;
    int binary_version; /* the code's target, 10 * major + minor (90: sm_90) */
    int non_portable_clusters; /* clusters of more than 8 blocks allowed */
};

/* A module owns the function wrappers handed out for it; unloading frees them. */
struct mt_module_s {
    CUmodule mod;
    struct mt_function_s **fns;
    int n_fns;
};

typedef struct cuda_ctx {
    void *driver_lib;
    void *nvrtc_lib;
    cuda_api cu;
    cuda_api_optional cu_opt;
    nvrtc_api rtc;
    int device_count;
    CUcontext *primary;  /* per device, retained lazily */
    pthread_mutex_t lock;
} cuda_ctx;

static cuda_ctx *ctx_of(mt_backend *b) { return b->context; }

/* Turns a driver result into an mt_status with a message naming the call. */
static mt_status cu_check(mt_backend *b, CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return MT_OK;
    const char *name = "?", *text = "?";
    cuda_ctx *c = ctx_of(b);
    if (c->cu.cuGetErrorName) c->cu.cuGetErrorName(r, &name);
    if (c->cu.cuGetErrorString) c->cu.cuGetErrorString(r, &text);
    mt_status code = (r == CUDA_ERROR_OUT_OF_MEMORY) ? MT_ERR_OUT_OF_MEMORY : MT_ERR_VENDOR;
    return mt_fail(code, "%s failed: %s (%s, %d)", what, text, name, (int)r);
}
#define CU(b, call) cu_check((b), ctx_of(b)->cu.call, #call)

static int load_symbols(void *lib, const char *const *names, void **slots, int n,
                        char *looked_for, size_t size, const char *libname) {
    for (int i = 0; i < n; i++) {
        slots[i] = dlsym(lib, names[i]);
        if (!slots[i]) {
            mt_append(looked_for, size, "%s%s lacks %s", looked_for[0] ? ", " : "", libname, names[i]);
            return 0;
        }
    }
    return 1;
}

static int load_driver(mt_backend *b, cuda_ctx *c) {
    const char *override = getenv("MLA_TUNE_CUDA_DRIVER");
    const char *names[] = {override ? override : "libcuda.so.1", "libcuda.so"};
    c->driver_lib = mt_dlopen_first(names, override ? 1 : 2, b->looked_for, sizeof b->looked_for);
    if (!c->driver_lib) return 0;
    /* exported names: the _v2 suffixes are what cuda.h's macros map to */
    static const char *const syms[] = {
        "cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
        "cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain",
        "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2",
        "cuMemFree_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2",
        "cuMemsetD8Async", "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
        "cuEventCreate", "cuEventDestroy_v2", "cuEventRecord", "cuEventSynchronize",
        "cuEventElapsedTime_v2", "cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
        "cuFuncGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel", "cuGetErrorString",
        "cuGetErrorName"};
    _Static_assert(sizeof syms / sizeof syms[0] == sizeof(cuda_api) / sizeof(void *),
                   "symbol list and cuda_api disagree");
    if (!load_symbols(c->driver_lib, syms, (void **)&c->cu, (int)(sizeof syms / sizeof syms[0]),
                      b->looked_for, sizeof b->looked_for, "libcuda")) {
        dlclose(c->driver_lib);
        c->driver_lib = NULL;
        return 0;
    }
    c->cu_opt.cuLaunchKernelEx = (__typeof__(c->cu_opt.cuLaunchKernelEx))dlsym(c->driver_lib, "cuLaunchKernelEx");
    c->cu_opt.cuTensorMapEncodeTiled =
        (__typeof__(c->cu_opt.cuTensorMapEncodeTiled))dlsym(c->driver_lib, "cuTensorMapEncodeTiled");
#define CU_OPTIONAL(field, symbol) c->cu_opt.field = (__typeof__(c->cu_opt.field))dlsym(c->driver_lib, symbol)
    CU_OPTIONAL(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    CU_OPTIONAL(cuStreamEndCapture, "cuStreamEndCapture");
    CU_OPTIONAL(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    CU_OPTIONAL(cuGraphLaunch, "cuGraphLaunch");
    CU_OPTIONAL(cuGraphExecDestroy, "cuGraphExecDestroy");
    CU_OPTIONAL(cuGraphDestroy, "cuGraphDestroy");
#undef CU_OPTIONAL
    CUresult r = c->cu.cuInit(0);
    if (r == CUDA_SUCCESS) r = c->cu.cuDeviceGetCount(&c->device_count);
    if (r != CUDA_SUCCESS) {
        const char *text = "?";
        c->cu.cuGetErrorString(r, &text);
        mt_append(b->looked_for, sizeof b->looked_for, "%slibcuda loaded but cuInit failed: %s",
                  b->looked_for[0] ? ", " : "", text);
        c->device_count = 0;
    }
    return 1;
}

static int load_nvrtc(mt_backend *b, cuda_ctx *c) {
    const char *override = getenv("MLA_TUNE_NVRTC");
    const char *names[] = {override ? override : "libnvrtc.so.13", "libnvrtc.so.12",
                           "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"};
    c->nvrtc_lib = mt_dlopen_first(names, override ? 1 : 4, b->looked_for, sizeof b->looked_for);
    if (!c->nvrtc_lib) return 0;
    static const char *const syms[] = {"nvrtcVersion", "nvrtcCreateProgram", "nvrtcDestroyProgram",
                                       "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                                       "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
                                       "nvrtcGetErrorString"};
    _Static_assert(sizeof syms / sizeof syms[0] == sizeof(nvrtc_api) / sizeof(void *),
                   "symbol list and nvrtc_api disagree");
    if (!load_symbols(c->nvrtc_lib, syms, (void **)&c->rtc, (int)(sizeof syms / sizeof syms[0]),
                      b->looked_for, sizeof b->looked_for, "libnvrtc")) {
        dlclose(c->nvrtc_lib);
        c->nvrtc_lib = NULL;
        return 0;
    }
    return 1;
}

/* --- devices ------------------------------------------------------------- */

static mt_status cuda_device_count(mt_backend *b, int *count) {
    *count = ctx_of(b)->device_count;
    if (*count == 0) return mt_fail(MT_ERR_NO_DEVICE, "CUDA driver loaded but reports 0 devices (%s)",
                                    b->looked_for[0] ? b->looked_for : "cuDeviceGetCount = 0");
    return MT_OK;
}

static mt_status check_ordinal(mt_backend *b, int ordinal) {
    int n = ctx_of(b)->device_count;
    if (ordinal < 0 || ordinal >= n)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist (%d devices)", ordinal, n);
    return MT_OK;
}

static mt_status cuda_device_info(mt_backend *b, int ordinal, mt_device_info *info) {
    mt_status st = check_ordinal(b, ordinal);
    if (st != MT_OK) return st;
    cuda_ctx *c = ctx_of(b);
    CUdevice dev;
    if ((st = CU(b, cuDeviceGet(&dev, ordinal))) != MT_OK) return st;
    int major = 0, minor = 0, v = 0;
    size_t mem = 0;
    info->ordinal = ordinal;
    snprintf(info->backend, sizeof info->backend, "cuda");
    if ((st = CU(b, cuDeviceGetName(info->name, (int)sizeof info->name, dev))) != MT_OK) return st;
    if ((st = CU(b, cuDeviceTotalMem(&mem, dev))) != MT_OK) return st;
    info->total_memory = mem;
    struct { CUdevice_attribute attr; int *dst; } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info->compute_units},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &info->warp_size},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info->clock_khz},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info->memory_clock_khz},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &info->memory_bus_bits},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if ((st = CU(b, cuDeviceGetAttribute(attrs[i].dst, attrs[i].attr, dev))) != MT_OK) return st;
    if ((st = CU(b, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev))))
        return st;
    info->shared_per_group = (size_t)v;
    if ((st = CU(b, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev))))
        return st;
    info->shared_per_group_max = (size_t)v;
    if ((st = CU(b, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)))) return st;
    info->l2_bytes = (size_t)v;
    snprintf(info->arch, sizeof info->arch, "sm_%d%d", major, minor);
    int driver = 0;
    c->cu.cuDriverGetVersion(&driver);
    snprintf(info->driver_version, sizeof info->driver_version, "%d.%d", driver / 1000,
             (driver % 1000) / 10);
    return MT_OK;
}

static mt_status cuda_set_device(mt_backend *b, int ordinal) {
    mt_status st = check_ordinal(b, ordinal);
    if (st != MT_OK) return st;
    cuda_ctx *c = ctx_of(b);
    pthread_mutex_lock(&c->lock);
    if (!c->primary[ordinal]) {
        CUdevice dev;
        st = CU(b, cuDeviceGet(&dev, ordinal));
        if (st == MT_OK) st = CU(b, cuDevicePrimaryCtxRetain(&c->primary[ordinal], dev));
    }
    CUcontext ctx = c->primary[ordinal];
    pthread_mutex_unlock(&c->lock);
    if (st != MT_OK) return st;
    return CU(b, cuCtxSetCurrent(ctx));
}

/* --- memory, streams, events ----------------------------------------------- */

static mt_status cuda_mem_alloc(mt_backend *b, size_t bytes, mt_devptr *out) {
    CUdeviceptr p = 0;
    mt_status st = CU(b, cuMemAlloc(&p, bytes));
    *out = (mt_devptr)p;
    return st;
}
static mt_status cuda_mem_free(mt_backend *b, mt_devptr p) { return CU(b, cuMemFree((CUdeviceptr)p)); }
static mt_status cuda_copy_to_device(mt_backend *b, mt_devptr d, const void *s, size_t n, mt_stream st) {
    return CU(b, cuMemcpyHtoDAsync((CUdeviceptr)d, s, n, (CUstream)st));
}
static mt_status cuda_copy_to_host(mt_backend *b, void *d, mt_devptr s, size_t n, mt_stream st) {
    mt_status r = CU(b, cuMemcpyDtoHAsync(d, (CUdeviceptr)s, n, (CUstream)st));
    /* the host buffer is pageable and the caller reads it next: finish here */
    return r == MT_OK ? CU(b, cuStreamSynchronize((CUstream)st)) : r;
}
static mt_status cuda_copy_on_device(mt_backend *b, mt_devptr d, mt_devptr s, size_t n, mt_stream st) {
    return CU(b, cuMemcpyDtoDAsync((CUdeviceptr)d, (CUdeviceptr)s, n, (CUstream)st));
}
static mt_status cuda_mem_set(mt_backend *b, mt_devptr d, uint8_t v, size_t n, mt_stream st) {
    return CU(b, cuMemsetD8Async((CUdeviceptr)d, v, n, (CUstream)st));
}
static mt_status cuda_stream_create(mt_backend *b, mt_stream *out) {
    CUstream s = NULL;
    mt_status st = CU(b, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    *out = (mt_stream)s;
    return st;
}
static mt_status cuda_stream_destroy(mt_backend *b, mt_stream s) { return CU(b, cuStreamDestroy((CUstream)s)); }
static mt_status cuda_stream_sync(mt_backend *b, mt_stream s) { return CU(b, cuStreamSynchronize((CUstream)s)); }
static mt_status cuda_event_create(mt_backend *b, mt_event *out) {
    CUevent e = NULL;
    mt_status st = CU(b, cuEventCreate(&e, CU_EVENT_DEFAULT));
    *out = (mt_event)e;
    return st;
}
static mt_status cuda_event_destroy(mt_backend *b, mt_event e) { return CU(b, cuEventDestroy((CUevent)e)); }
static mt_status cuda_event_record(mt_backend *b, mt_event e, mt_stream s) {
    return CU(b, cuEventRecord((CUevent)e, (CUstream)s));
}
static mt_status cuda_event_sync(mt_backend *b, mt_event e) { return CU(b, cuEventSynchronize((CUevent)e)); }
static mt_status cuda_event_elapsed(mt_backend *b, mt_event s, mt_event e, float *ms) {
    return CU(b, cuEventElapsedTime(ms, (CUevent)s, (CUevent)e));
}

/* --- compiler -------------------------------------------------------------- */

static mt_status cuda_compiler_version(mt_backend *b, char *buf, size_t n) {
    int major = 0, minor = 0;
    ctx_of(b)->rtc.nvrtcVersion(&major, &minor);
    snprintf(buf, n, "nvrtc-%d.%d", major, minor);
    return MT_OK;
}

static mt_status cuda_compile(mt_backend *b, const char *source, const char *source_name,
                              const char *arch, const char *const *options, int n_options,
                              mt_compile_result *out) {
    nvrtc_api *rtc = &ctx_of(b)->rtc;
    if (strncmp(arch, "sm_", 3) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "NVRTC cannot compile for '%s' (expected sm_NN)", arch);
    /* our options, then the caller's: a real architecture so NVRTC emits a
     * cubin (not PTX), and ptxas -v so the log carries register/spill use */
    enum { OWN = 3, MAX_OPTIONS = 256 };
    if (n_options > MAX_OPTIONS - OWN)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "too many compile options (%d)", n_options);
    const char *opts[MAX_OPTIONS];
    char arch_opt[64];
    /* Hopper code is built for sm_90a, the architecture-specific target:
     * the warpgroup instructions (wgmma) exist only there, and the code
     * runs on every sm_90 device (it is not forward compatible, which a
     * JIT for the device at hand does not need). */
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s%s", arch, strcmp(arch, "sm_90") == 0 ? "a" : "");
    opts[0] = arch_opt;
    opts[1] = "--ptxas-options=-v";
    opts[2] = "--std=c++17";
    for (int i = 0; i < n_options; i++) opts[OWN + i] = options[i];

    nvrtcProgram prog = NULL;
    nvrtcResult r = rtc->nvrtcCreateProgram(&prog, source, source_name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return mt_fail(MT_ERR_COMPILE, "nvrtcCreateProgram: %s", rtc->nvrtcGetErrorString(r));
    nvrtcResult compiled = rtc->nvrtcCompileProgram(prog, OWN + n_options, opts);
    size_t log_size = 0;
    rtc->nvrtcGetProgramLogSize(prog, &log_size);
    out->log = malloc(log_size + 1);
    if (!out->log) {
        rtc->nvrtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    out->log[0] = '\0';
    if (log_size > 0) rtc->nvrtcGetProgramLog(prog, out->log);
    out->log[log_size] = '\0';
    if (compiled != NVRTC_SUCCESS) {
        rtc->nvrtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_COMPILE, "NVRTC failed to compile %s for %s: %s\n%s", source_name, arch,
                       rtc->nvrtcGetErrorString(compiled), out->log);
    }
    size_t size = 0;
    r = rtc->nvrtcGetCUBINSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
        rtc->nvrtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_COMPILE, "NVRTC produced no cubin for %s (%s)", arch,
                       rtc->nvrtcGetErrorString(r));
    }
    out->code = malloc(size);
    if (!out->code) {
        rtc->nvrtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    rtc->nvrtcGetCUBIN(prog, out->code);
    out->code_size = size;
    rtc->nvrtcDestroyProgram(&prog);
    return MT_OK;
}

/* The integer that ends just before `at` (skipping spaces), or -1. */
static int number_before(const char *start, const char *at) {
    const char *end = at;
    while (end > start && end[-1] == ' ') end--;
    const char *num = end;
    while (num > start && num[-1] >= '0' && num[-1] <= '9') num--;
    return num < end ? atoi(num) : -1;
}

/* ptxas -v writes, per entry function:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas info    : Function properties for NAME
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 30 registers, used 1 barriers, 4096 bytes smem, ...
 * We find the block for `kernel` and read the numbers that follow. */
static void cuda_parse_resources(mt_backend *b, const char *log, const char *kernel,
                                 mt_kernel_resources *out) {
    (void)b;
    char marker[300];
    snprintf(marker, sizeof marker, "Compiling entry function '%s'", kernel);
    const char *p = strstr(log, marker);
    if (!p) return;
    const char *next = strstr(p + 1, "Compiling entry function");
    const char *q;
    if ((q = strstr(p, "bytes stack frame")) && (!next || q < next)) {
        out->local_bytes = number_before(p, q);
        const char *stores = strstr(q, "bytes spill stores"), *loads = strstr(q, "bytes spill loads");
        if (stores) out->spill_stores = number_before(q, stores);
        if (loads) out->spill_loads = number_before(q, loads);
    }
    /* ptxas names the kernel at the end of the line, outside its block:
     *   ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async
     *   instructions are serialized due to ... in the function 'NAME' */
    char named[300];
    snprintf(named, sizeof named, "in the function '%s'", kernel);
    out->serialized_mma = 0;
    for (const char *s = strstr(log, "instructions are serialized"); s; s = strstr(s + 1, "instructions are serialized")) {
        const char *eol = strchr(s, '\n'), *at = strstr(s, named);
        if (at && (!eol || at < eol)) out->serialized_mma = 1;
    }
    if ((q = strstr(p, "Used ")) && (!next || q < next)) {
        sscanf(q, "Used %d registers", &out->registers);
        const char *smem = strstr(q, "bytes smem");
        const char *eol = strchr(q, '\n');
        if (smem && (!eol || smem < eol)) {
            out->shared_bytes = number_before(q, smem);
        } else {
            out->shared_bytes = 0;
        }
    }
}

/* --- modules and launches ---------------------------------------------------- */

static mt_status cuda_module_load(mt_backend *b, const void *code, size_t size, mt_module *out) {
    (void)size;
    struct mt_module_s *w = calloc(1, sizeof *w);
    if (!w) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st = CU(b, cuModuleLoadData(&w->mod, code));
    if (st != MT_OK) {
        free(w);
        return st;
    }
    *out = w;
    return MT_OK;
}

static mt_status cuda_module_unload(mt_backend *b, mt_module m) {
    mt_status st = CU(b, cuModuleUnload(m->mod));
    for (int i = 0; i < m->n_fns; i++) free(m->fns[i]);
    free(m->fns);
    free(m);
    return st;
}

static mt_status cuda_module_function(mt_backend *b, mt_module m, const char *name, mt_function *out) {
    CUfunction f = NULL;
    mt_status st = cu_check(b, ctx_of(b)->cu.cuModuleGetFunction(&f, m->mod, name), name);
    if (st != MT_OK)
        return mt_fail(st, "kernel '%s' not found in module: %s", name, mt_last_error());
    struct mt_function_s *w = calloc(1, sizeof *w);
    struct mt_function_s **grown = realloc(m->fns, (size_t)(m->n_fns + 1) * sizeof *grown);
    if (!w || !grown) {
        free(w);
        if (grown) m->fns = grown;
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->fns = grown;
    m->fns[m->n_fns++] = w;
    w->fn = f;
    st = CU(b, cuFuncGetAttribute(&w->binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
    if (st != MT_OK) return st;
    *out = w;
    return MT_OK;
}

static mt_status cuda_function_resources(mt_backend *b, mt_function f, mt_kernel_resources *out) {
    mt_status st;
    if ((st = CU(b, cuFuncGetAttribute(&out->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f->fn)))) return st;
    if ((st = CU(b, cuFuncGetAttribute(&out->shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f->fn))))
        return st;
    if ((st = CU(b, cuFuncGetAttribute(&out->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f->fn))))
        return st;
    return CU(b, cuFuncGetAttribute(&out->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->fn));
}

static mt_status cuda_prepare_launch(mt_backend *b, mt_function f, size_t shared_bytes) {
    /* above 48 KiB, dynamic shared memory must be allowed per function */
    if (shared_bytes > 48 * 1024 && shared_bytes > f->dynamic_shared_allowed) {
        mt_status st = CU(b, cuFuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                (int)shared_bytes));
        if (st != MT_OK) return st;
        f->dynamic_shared_allowed = shared_bytes;
    }
    /* clusters of more than 8 blocks are not portable; sm_90 code may use
     * them (launch_cluster) once the function allows it */
    if (f->binary_version >= 90 && !f->non_portable_clusters) {
        mt_status st = CU(b, cuFuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
        if (st != MT_OK) return st;
        f->non_portable_clusters = 1;
    }
    return MT_OK;
}

static mt_status cuda_launch(mt_backend *b, mt_function f, const unsigned grid[3],
                             const unsigned block[3], size_t shared_bytes, mt_stream s, void **args) {
    mt_status st = cuda_prepare_launch(b, f, shared_bytes);
    if (st != MT_OK) return st;
    return CU(b, cuLaunchKernel(f->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                (unsigned)shared_bytes, (CUstream)s, args, NULL));
}

/* cuLaunchKernelEx with one launch attribute (the caller has checked that
 * the driver has it and the code is sm_90+). */
static mt_status launch_with_attribute(mt_backend *b, mt_function f, const unsigned grid[3], const unsigned block[3],
                                       size_t shared_bytes, mt_stream s, void **args, CUlaunchAttribute *attr) {
    mt_status st = cuda_prepare_launch(b, f, shared_bytes);
    if (st != MT_OK) return st;
    CUlaunchConfig cfg = {.gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
                          .blockDimX = block[0], .blockDimY = block[1], .blockDimZ = block[2],
                          .sharedMemBytes = (unsigned)shared_bytes, .hStream = (CUstream)s,
                          .attrs = attr, .numAttrs = 1};
    return cu_check(b, ctx_of(b)->cu_opt.cuLaunchKernelEx(&cfg, f->fn, args, NULL), "cuLaunchKernelEx");
}

/* Programmatic dependent launch: the kernel may be scheduled while the one
 * before it in the stream still runs (its blocks then wait in
 * griddepcontrol.wait, see mt_grid_dependency_wait in kernels/prelude.h).
 * Only code built for sm_90 or newer has that wait, so anything older, or a
 * driver without cuLaunchKernelEx, gets the ordinary launch: the same
 * result, without the overlap. */
static mt_status cuda_launch_dependent(mt_backend *b, mt_function f, const unsigned grid[3],
                                       const unsigned block[3], size_t shared_bytes, mt_stream s, void **args) {
    if (!ctx_of(b)->cu_opt.cuLaunchKernelEx || f->binary_version < 90)
        return cuda_launch(b, f, grid, block, shared_bytes, s, args);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    return launch_with_attribute(b, f, grid, block, shared_bytes, s, args, &attr);
}

/* (Clusters of more than 8 blocks, up to 16 on H100, were allowed in
 * cuda_prepare_launch.) */
static mt_status cuda_launch_cluster(mt_backend *b, mt_function f, const unsigned grid[3], const unsigned block[3],
                                     const unsigned cluster[3], size_t shared_bytes, mt_stream s, void **args) {
    if (!ctx_of(b)->cu_opt.cuLaunchKernelEx || f->binary_version < 90)
        return mt_fail(MT_ERR_UNSUPPORTED, "cluster launch needs sm_90 code and a driver with cuLaunchKernelEx "
                                           "(code for sm_%d)", f->binary_version);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster[0], attr.value.clusterDim.y = cluster[1], attr.value.clusterDim.z = cluster[2];
    return launch_with_attribute(b, f, grid, block, shared_bytes, s, args, &attr);
}

/* A host-side encoding (no device work): 8- or 16-bit elements, no
 * interleave, the swizzle as wide as a box row (64 or 128 bytes), L2 lines
 * fetched 256 bytes at a time, no fill beyond the array (callers never ask
 * for rows outside it). */
static mt_status encode_tensor_map(mt_backend *b, unsigned rank, mt_devptr base, unsigned elem_bytes,
                                   const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                   void *out) {
    cuda_ctx *c = ctx_of(b);
    if (!c->cu_opt.cuTensorMapEncodeTiled)
        return mt_fail(MT_ERR_UNSUPPORTED, "this CUDA driver has no cuTensorMapEncodeTiled (needs CUDA 12.0+)");
    _Static_assert(sizeof(CUtensorMap) == MT_TENSOR_MAP_BYTES, "CUtensorMap size");
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    CUtensorMap map;
    /* the swizzle is as wide as a box row (checked: 64 or 128 bytes) */
    CUtensorMapDataType type = elem_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
    CUtensorMapSwizzle swizzle = box[0] * elem_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
    mt_status st = cu_check(b, c->cu_opt.cuTensorMapEncodeTiled(&map, type, rank, (void *)base, dims, strides, box,
                                                                elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                            "cuTensorMapEncodeTiled");
    if (st == MT_OK) memcpy(out, &map, sizeof map);
    return st;
}

static mt_status cuda_tensor_map_2d(mt_backend *b, mt_devptr base, unsigned elem_bytes, uint64_t cols, uint64_t rows,
                                    uint64_t row_bytes, unsigned box_cols, unsigned box_rows, void *out) {
    const cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_bytes};
    const cuuint32_t box[2] = {box_cols, box_rows};
    return encode_tensor_map(b, 2, base, elem_bytes, dims, strides, box, out);
}

static mt_status cuda_tensor_map_3d(mt_backend *b, mt_devptr base, unsigned elem_bytes, const uint64_t dims[3],
                                    const uint64_t strides[2], const unsigned box[3], void *out) {
    const cuuint64_t d[3] = {dims[0], dims[1], dims[2]}, st[2] = {strides[0], strides[1]};
    const cuuint32_t bx[3] = {box[0], box[1], box[2]};
    return encode_tensor_map(b, 3, base, elem_bytes, d, st, bx, out);
}

static mt_status cuda_synchronize(mt_backend *b) { return CU(b, cuCtxSynchronize()); }

static void cuda_close(mt_backend *b) {
    cuda_ctx *c = ctx_of(b);
    if (!c) return;
    if (c->primary) {
        for (int i = 0; i < c->device_count; i++)
            if (c->primary[i]) {
                CUdevice dev;
                if (c->cu.cuDeviceGet(&dev, i) == CUDA_SUCCESS) c->cu.cuDevicePrimaryCtxRelease(dev);
            }
        free(c->primary);
    }
    /* neither library is dlclosed: the driver keeps threads that outlive
     * it, and NVRTC keeps global state that it never frees (unloading it
     * would turn that into a leak on every open/close) */
    pthread_mutex_destroy(&c->lock);
    free(c);
    b->context = NULL;
}

/* Graphs: capture on the caller's stream (thread-local mode: other
 * threads' unrelated CUDA calls do not break it), instantiate at the end. */
struct mt_graph_s {
    CUgraph graph;
    CUgraphExec exec;
};

static mt_status graph_ops_present(mt_backend *b) {
    const cuda_api_optional *o = &ctx_of(b)->cu_opt;
    if (!o->cuStreamBeginCapture || !o->cuStreamEndCapture || !o->cuGraphInstantiateWithFlags || !o->cuGraphLaunch ||
        !o->cuGraphExecDestroy || !o->cuGraphDestroy)
        return mt_fail(MT_ERR_UNSUPPORTED, "this CUDA driver lacks the stream-capture entry points");
    return MT_OK;
}

static mt_status cuda_graph_begin(mt_backend *b, mt_stream s) {
    mt_status st = graph_ops_present(b);
    if (st != MT_OK) return st;
    return cu_check(b, ctx_of(b)->cu_opt.cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                    "cuStreamBeginCapture");
}

static mt_status cuda_graph_end(mt_backend *b, mt_stream s, mt_graph *out) {
    mt_status st = graph_ops_present(b);
    if (st != MT_OK) return st;
    const cuda_api_optional *o = &ctx_of(b)->cu_opt;
    struct mt_graph_s *g = calloc(1, sizeof *g);
    if (!g) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    st = cu_check(b, o->cuStreamEndCapture((CUstream)s, &g->graph), "cuStreamEndCapture");
    if (st == MT_OK) st = cu_check(b, o->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0), "cuGraphInstantiate");
    if (st != MT_OK) {
        if (g->graph) o->cuGraphDestroy(g->graph);
        free(g);
        return st;
    }
    *out = g;
    return MT_OK;
}

static mt_status cuda_graph_launch(mt_backend *b, mt_graph g, mt_stream s) {
    return cu_check(b, ctx_of(b)->cu_opt.cuGraphLaunch(g->exec, (CUstream)s), "cuGraphLaunch");
}

static void cuda_graph_destroy(mt_backend *b, mt_graph g) {
    const cuda_api_optional *o = &ctx_of(b)->cu_opt;
    if (g->exec && o->cuGraphExecDestroy) o->cuGraphExecDestroy(g->exec);
    if (g->graph && o->cuGraphDestroy) o->cuGraphDestroy(g->graph);
    free(g);
}

/* The operations that need the driver, and those that need NVRTC.  A
 * backend with only one half loaded gets a table with the other half NULL,
 * so the wrappers in backend.c say what is missing. */
#define CUDA_DRIVER_OPS                                                            \
    .device_count = cuda_device_count, .device_info = cuda_device_info,            \
    .set_device = cuda_set_device, .mem_alloc = cuda_mem_alloc,                    \
    .mem_free = cuda_mem_free, .copy_to_device = cuda_copy_to_device,              \
    .copy_to_host = cuda_copy_to_host, .copy_on_device = cuda_copy_on_device,      \
    .mem_set = cuda_mem_set, .stream_create = cuda_stream_create,                  \
    .stream_destroy = cuda_stream_destroy, .stream_sync = cuda_stream_sync,        \
    .event_create = cuda_event_create, .event_destroy = cuda_event_destroy,        \
    .event_record = cuda_event_record, .event_sync = cuda_event_sync,              \
    .event_elapsed = cuda_event_elapsed, .module_load = cuda_module_load,          \
    .module_unload = cuda_module_unload, .module_function = cuda_module_function,  \
    .function_resources = cuda_function_resources, .launch = cuda_launch,          \
    .launch_dependent = cuda_launch_dependent, .tensor_map_2d = cuda_tensor_map_2d, \
    .tensor_map_3d = cuda_tensor_map_3d, .launch_cluster = cuda_launch_cluster,    \
    .graph_begin = cuda_graph_begin,                                               \
    .graph_end = cuda_graph_end, .graph_launch = cuda_graph_launch,                \
    .graph_destroy = cuda_graph_destroy,                                           \
    .synchronize = cuda_synchronize, .prepare_launch = cuda_prepare_launch
#define CUDA_COMPILER_OPS                                                          \
    .compiler_version = cuda_compiler_version, .compile = cuda_compile,            \
    .parse_resources = cuda_parse_resources

static const mt_backend_iface cuda_full_iface = {CUDA_DRIVER_OPS, CUDA_COMPILER_OPS, .close = cuda_close};
static const mt_backend_iface cuda_driver_only_iface = {CUDA_DRIVER_OPS, .close = cuda_close};
static const mt_backend_iface cuda_compiler_only_iface = {CUDA_COMPILER_OPS, .close = cuda_close};

mt_status mt_backend_cuda_open(mt_backend *b) {
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_init(&c->lock, NULL);
    b->name = "cuda";
    b->context = c;
    b->has_driver = load_driver(b, c);
    b->has_compiler = load_nvrtc(b, c);
    if (!b->has_driver && !b->has_compiler) {
        mt_status st = mt_fail(MT_ERR_NO_BACKEND, "CUDA: neither the driver nor NVRTC loaded (tried %s)",
                               b->looked_for);
        pthread_mutex_destroy(&c->lock);
        free(c);
        b->context = NULL;
        return st;
    }
    if (b->has_driver && c->device_count > 0) {
        c->primary = calloc((size_t)c->device_count, sizeof *c->primary);
        if (!c->primary) {
            b->iface = &cuda_full_iface;
            cuda_close(b);
            return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    b->iface = b->has_driver ? (b->has_compiler ? &cuda_full_iface : &cuda_driver_only_iface)
                             : &cuda_compiler_only_iface;
    return MT_OK;
}
