/*
 * backend_hip.c - the AMD backend: HIP runtime + hiprtc, both loaded with
 * dlopen, compiled against the HIP headers Debian ships (libamdhip64-dev).
 *
 * STATUS: compiled on every build; not run by the project yet (no AMD GPU is
 * reachable from our machines).  What it does follows the HIP 5.2 API that
 * the headers declare.
 *
 * Version skew: hipDeviceProp_t changed layout in ROCm 6.0, which renamed the
 * entry point of the new layout hipGetDevicePropertiesR0600 and kept the old
 * one as hipGetDevicePropertiesR0000.  We are built against the 5.2 layout,
 * so we ask for the R0000 symbol first and fall back to the plain name that
 * ROCm 5 exports.
 *
 * Where hiprtc lives: ROCm 5 and 6 ship libhiprtc.so.{5,6}, ROCm 7
 * libhiprtc.so.7; Debian builds it into libamdhip64.so.5 itself (no
 * libhiprtc at all).  So the search tries each soname, then the HIP
 * runtime libraries (a library counts when it exports the hiprtc entry
 * points), then the same under /opt/rocm*\/lib; a failure lists every name
 * tried and why it did not do.
 *
 * Environment overrides:
 *   MLA_TUNE_HIP_RUNTIME  path of libamdhip64 to load
 *   MLA_TUNE_HIPRTC       path of the library holding hiprtc
 */
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__ 1
#include "backend.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIP_FN(name) __typeof__(&name) name
typedef struct hip_api {
    HIP_FN(hipInit);
    HIP_FN(hipGetDeviceCount);
    HIP_FN(hipGetDeviceProperties);
    HIP_FN(hipSetDevice);
    HIP_FN(hipDriverGetVersion);
    HIP_FN(hipMalloc);
    HIP_FN(hipFree);
    HIP_FN(hipMemcpyHtoDAsync);
    HIP_FN(hipMemcpyDtoHAsync);
    HIP_FN(hipMemcpyDtoDAsync);
    HIP_FN(hipMemsetD8Async);
    HIP_FN(hipStreamCreateWithFlags);
    HIP_FN(hipStreamDestroy);
    HIP_FN(hipStreamSynchronize);
    HIP_FN(hipEventCreate);
    HIP_FN(hipEventDestroy);
    HIP_FN(hipEventRecord);
    HIP_FN(hipEventSynchronize);
    HIP_FN(hipEventElapsedTime);
    HIP_FN(hipModuleLoadData);
    HIP_FN(hipModuleUnload);
    HIP_FN(hipModuleGetFunction);
    HIP_FN(hipFuncGetAttribute);
    HIP_FN(hipModuleLaunchKernel);
    HIP_FN(hipDeviceSynchronize);
    HIP_FN(hipGetErrorString);
} hip_api;

typedef struct hiprtc_api {
    HIP_FN(hiprtcVersion);
    HIP_FN(hiprtcCreateProgram);
    HIP_FN(hiprtcDestroyProgram);
    HIP_FN(hiprtcCompileProgram);
    HIP_FN(hiprtcGetProgramLogSize);
    HIP_FN(hiprtcGetProgramLog);
    HIP_FN(hiprtcGetCodeSize);
    HIP_FN(hiprtcGetCode);
    HIP_FN(hiprtcGetErrorString);
} hiprtc_api;

typedef struct hip_ctx {
    void *runtime_lib;
    void *rtc_lib;
    hip_api hip;
    hiprtc_api rtc;
    char rtc_name[600];   /* the library hiprtc was found in */
    int device_count;
} hip_ctx;

static hip_ctx *ctx_of(mt_backend *b) { return b->context; }

static mt_status hip_check(mt_backend *b, hipError_t r, const char *what) {
    if (r == hipSuccess) return MT_OK;
    const char *text = ctx_of(b)->hip.hipGetErrorString ? ctx_of(b)->hip.hipGetErrorString(r) : "?";
    return mt_fail(r == hipErrorOutOfMemory ? MT_ERR_OUT_OF_MEMORY : MT_ERR_VENDOR,
                   "%s failed: %s (%d)", what, text, (int)r);
}
#define HIP(b, call) hip_check((b), ctx_of(b)->hip.call, #call)

static void *lookup(void *lib, const char *const *candidates, int n) {
    for (int i = 0; i < n; i++) {
        void *p = dlsym(lib, candidates[i]);
        if (p) return p;
    }
    return NULL;
}

/* The names to try for `stems` (e.g. "libhiprtc.so"): each with the
 * sonames 7, 6, 5 and none, then each under /opt/rocm*\/lib (newest ROCm
 * folder first).  Fills names[] (storage[] holds the text); returns the count. */
enum { MAX_NAMES = 48 };
static int candidate_names(const char *const *stems, int n_stems, char storage[][600], const char *names[]) {
    static const char *const versions[] = {".7", ".6", ".5", ""};
    int n = 0;
    for (int s = 0; s < n_stems; s++)
        for (int v = 0; v < 4 && n < MAX_NAMES; v++) {
            snprintf(storage[n], 600, "%s%s", stems[s], versions[v]);
            names[n] = storage[n];
            n++;
        }
    glob_t g;
    if (glob("/opt/rocm*/lib", 0, NULL, &g) == 0) {
        for (size_t d = g.gl_pathc; d-- > 0;)
            for (int s = 0; s < n_stems; s++)
                for (int v = 0; v < 4 && n < MAX_NAMES; v++) {
                    char path[600];
                    snprintf(path, sizeof path, "%s/%s%s", g.gl_pathv[d], stems[s], versions[v]);
                    if (access(path, F_OK) != 0) continue;
                    snprintf(storage[n], 600, "%s", path);
                    names[n] = storage[n];
                    n++;
                }
        globfree(&g);
    }
    return n;
}

static int load_runtime(mt_backend *b, hip_ctx *c) {
    const char *override = getenv("MLA_TUNE_HIP_RUNTIME");
    static const char *const stems[] = {"libamdhip64.so"};
    char storage[MAX_NAMES][600];
    const char *names[MAX_NAMES];
    int n = override ? (names[0] = override, 1) : candidate_names(stems, 1, storage, names);
    c->runtime_lib = mt_dlopen_first(names, n, b->looked_for, sizeof b->looked_for);
    if (!c->runtime_lib) return 0;
    /* each slot: the names to try, newest-compatible first */
    static const char *const syms[][2] = {
        {"hipInit", NULL}, {"hipGetDeviceCount", NULL},
        {"hipGetDevicePropertiesR0000", "hipGetDeviceProperties"}, {"hipSetDevice", NULL},
        {"hipDriverGetVersion", NULL}, {"hipMalloc", NULL}, {"hipFree", NULL},
        {"hipMemcpyHtoDAsync", NULL}, {"hipMemcpyDtoHAsync", NULL}, {"hipMemcpyDtoDAsync", NULL},
        {"hipMemsetD8Async", NULL}, {"hipStreamCreateWithFlags", NULL}, {"hipStreamDestroy", NULL},
        {"hipStreamSynchronize", NULL}, {"hipEventCreate", NULL}, {"hipEventDestroy", NULL},
        {"hipEventRecord", NULL}, {"hipEventSynchronize", NULL}, {"hipEventElapsedTime", NULL},
        {"hipModuleLoadData", NULL}, {"hipModuleUnload", NULL}, {"hipModuleGetFunction", NULL},
        {"hipFuncGetAttribute", NULL}, {"hipModuleLaunchKernel", NULL},
        {"hipDeviceSynchronize", NULL}, {"hipGetErrorString", NULL}};
    enum { N = sizeof syms / sizeof syms[0] };
    _Static_assert(N == sizeof(hip_api) / sizeof(void *), "symbol list and hip_api disagree");
    void **slots = (void **)&c->hip;
    for (int i = 0; i < N; i++) {
        slots[i] = lookup(c->runtime_lib, syms[i], syms[i][1] ? 2 : 1);
        if (!slots[i]) {
            mt_append(b->looked_for, sizeof b->looked_for, ", libamdhip64 lacks %s", syms[i][0]);
            dlclose(c->runtime_lib);
            c->runtime_lib = NULL;
            return 0;
        }
    }
    hipError_t r = c->hip.hipInit(0);
    if (r == hipSuccess) r = c->hip.hipGetDeviceCount(&c->device_count);
    if (r != hipSuccess) {
        mt_append(b->looked_for, sizeof b->looked_for, ", libamdhip64 loaded but hipInit failed: %s",
                  c->hip.hipGetErrorString(r));
        c->device_count = 0;
    }
    return 1;
}

static int load_hiprtc(mt_backend *b, hip_ctx *c) {
    const char *override = getenv("MLA_TUNE_HIPRTC");
    static const char *const stems[] = {"libhiprtc.so", "libamdhip64.so"};
    char storage[MAX_NAMES][600];
    const char *names[MAX_NAMES];
    int n = override ? (names[0] = override, 1) : candidate_names(stems, 2, storage, names);
    static const char *const syms[] = {"hiprtcVersion", "hiprtcCreateProgram", "hiprtcDestroyProgram",
                                       "hiprtcCompileProgram", "hiprtcGetProgramLogSize",
                                       "hiprtcGetProgramLog", "hiprtcGetCodeSize", "hiprtcGetCode",
                                       "hiprtcGetErrorString"};
    enum { N = sizeof syms / sizeof syms[0] };
    _Static_assert(N == sizeof(hiprtc_api) / sizeof(void *), "symbol list and hiprtc_api disagree");
    mt_append(b->looked_for, sizeof b->looked_for, "%shiprtc in: ", b->looked_for[0] ? "; " : "");
    for (int k = 0; k < n; k++) {
        char why[600] = "";
        void *lib = mt_dlopen_first(&names[k], 1, why, sizeof why);
        if (!lib) {
            mt_append(b->looked_for, sizeof b->looked_for, "%s%s", k ? ", " : "", why);
            continue;
        }
        void **slots = (void **)&c->rtc;
        int i = 0;
        while (i < N && (slots[i] = dlsym(lib, syms[i]))) i++;
        if (i == N) {
            c->rtc_lib = lib;
            snprintf(c->rtc_name, sizeof c->rtc_name, "%s", names[k]);
            return 1;
        }
        mt_append(b->looked_for, sizeof b->looked_for, "%s%s (loads, no %s)", k ? ", " : "", names[k], syms[i]);
        dlclose(lib);
    }
    memset(&c->rtc, 0, sizeof c->rtc);
    return 0;
}

static mt_status hip_device_count(mt_backend *b, int *count) {
    *count = ctx_of(b)->device_count;
    if (*count == 0) return mt_fail(MT_ERR_NO_DEVICE, "HIP runtime loaded but reports 0 devices");
    return MT_OK;
}

static mt_status hip_device_info(mt_backend *b, int ordinal, mt_device_info *info) {
    if (ordinal < 0 || ordinal >= ctx_of(b)->device_count)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "HIP device %d does not exist", ordinal);
    hipDeviceProp_t p;
    memset(&p, 0, sizeof p);
    mt_status st = HIP(b, hipGetDeviceProperties(&p, ordinal));
    if (st != MT_OK) return st;
    info->ordinal = ordinal;
    snprintf(info->backend, sizeof info->backend, "hip");
    snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof info->name - 1, p.name);
    /* gcnArchName reads "gfx942:sramecc+:xnack-": the arch is before ':' */
    snprintf(info->arch, sizeof info->arch, "%.*s", (int)strcspn(p.gcnArchName, ":"), p.gcnArchName);
    info->compute_units = p.multiProcessorCount;
    info->warp_size = p.warpSize;
    info->shared_per_group = p.sharedMemPerBlock;
    info->shared_per_group_max = p.sharedMemPerBlock;  /* AMD has no opt-in beyond this */
    info->total_memory = p.totalGlobalMem;
    info->clock_khz = p.clockRate;
    info->memory_clock_khz = p.memoryClockRate;
    info->memory_bus_bits = p.memoryBusWidth;
    info->l2_bytes = (size_t)p.l2CacheSize;
    int v = 0;
    ctx_of(b)->hip.hipDriverGetVersion(&v);
    snprintf(info->driver_version, sizeof info->driver_version, "%d", v);
    return MT_OK;
}

static mt_status hip_set_device(mt_backend *b, int ordinal) { return HIP(b, hipSetDevice(ordinal)); }

static mt_status hip_mem_alloc(mt_backend *b, size_t bytes, mt_devptr *out) {
    void *p = NULL;
    mt_status st = HIP(b, hipMalloc(&p, bytes));
    *out = (mt_devptr)(uintptr_t)p;
    return st;
}
static mt_status hip_mem_free(mt_backend *b, mt_devptr p) { return HIP(b, hipFree((void *)(uintptr_t)p)); }
static mt_status hip_copy_to_device(mt_backend *b, mt_devptr d, const void *s, size_t n, mt_stream st) {
    return HIP(b, hipMemcpyHtoDAsync((hipDeviceptr_t)(uintptr_t)d, (void *)s, n, (hipStream_t)st));
}
static mt_status hip_copy_to_host(mt_backend *b, void *d, mt_devptr s, size_t n, mt_stream st) {
    mt_status r = HIP(b, hipMemcpyDtoHAsync(d, (hipDeviceptr_t)(uintptr_t)s, n, (hipStream_t)st));
    return r == MT_OK ? HIP(b, hipStreamSynchronize((hipStream_t)st)) : r;
}
static mt_status hip_copy_on_device(mt_backend *b, mt_devptr d, mt_devptr s, size_t n, mt_stream st) {
    return HIP(b, hipMemcpyDtoDAsync((hipDeviceptr_t)(uintptr_t)d, (hipDeviceptr_t)(uintptr_t)s, n,
                                     (hipStream_t)st));
}
static mt_status hip_mem_set(mt_backend *b, mt_devptr d, uint8_t v, size_t n, mt_stream st) {
    return HIP(b, hipMemsetD8Async((hipDeviceptr_t)(uintptr_t)d, v, n, (hipStream_t)st));
}
static mt_status hip_stream_create(mt_backend *b, mt_stream *out) {
    hipStream_t s = NULL;
    mt_status st = HIP(b, hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    *out = (mt_stream)s;
    return st;
}
static mt_status hip_stream_destroy(mt_backend *b, mt_stream s) { return HIP(b, hipStreamDestroy((hipStream_t)s)); }
static mt_status hip_stream_sync(mt_backend *b, mt_stream s) { return HIP(b, hipStreamSynchronize((hipStream_t)s)); }
static mt_status hip_event_create(mt_backend *b, mt_event *out) {
    hipEvent_t e = NULL;
    mt_status st = HIP(b, hipEventCreate(&e));
    *out = (mt_event)e;
    return st;
}
static mt_status hip_event_destroy(mt_backend *b, mt_event e) { return HIP(b, hipEventDestroy((hipEvent_t)e)); }
static mt_status hip_event_record(mt_backend *b, mt_event e, mt_stream s) {
    return HIP(b, hipEventRecord((hipEvent_t)e, (hipStream_t)s));
}
static mt_status hip_event_sync(mt_backend *b, mt_event e) { return HIP(b, hipEventSynchronize((hipEvent_t)e)); }
static mt_status hip_event_elapsed(mt_backend *b, mt_event s, mt_event e, float *ms) {
    return HIP(b, hipEventElapsedTime(ms, (hipEvent_t)s, (hipEvent_t)e));
}

static mt_status hip_compiler_version(mt_backend *b, char *buf, size_t n) {
    int major = 0, minor = 0;
    ctx_of(b)->rtc.hiprtcVersion(&major, &minor);
    snprintf(buf, n, "hiprtc-%d.%d (%s)", major, minor, ctx_of(b)->rtc_name);
    return MT_OK;
}

static mt_status hip_compile(mt_backend *b, const char *source, const char *source_name,
                             const char *arch, const char *const *options, int n_options,
                             mt_compile_result *out) {
    hiprtc_api *rtc = &ctx_of(b)->rtc;
    if (strncmp(arch, "gfx", 3) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "hiprtc cannot compile for '%s' (expected gfxNNN)", arch);
    enum { OWN = 2, MAX_OPTIONS = 256 };
    if (n_options > MAX_OPTIONS - OWN)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "too many compile options (%d)", n_options);
    const char *opts[MAX_OPTIONS];
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", arch);
    opts[0] = arch_opt;
    opts[1] = "-std=c++17";
    for (int i = 0; i < n_options; i++) opts[OWN + i] = options[i];
    hiprtcProgram prog = NULL;
    hiprtcResult r = rtc->hiprtcCreateProgram(&prog, source, source_name, 0, NULL, NULL);
    if (r != HIPRTC_SUCCESS)
        return mt_fail(MT_ERR_COMPILE, "hiprtcCreateProgram: %s", rtc->hiprtcGetErrorString(r));
    hiprtcResult compiled = rtc->hiprtcCompileProgram(prog, OWN + n_options, opts);
    size_t log_size = 0;
    rtc->hiprtcGetProgramLogSize(prog, &log_size);
    out->log = malloc(log_size + 1);
    if (!out->log) {
        rtc->hiprtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    out->log[0] = '\0';
    if (log_size > 0) rtc->hiprtcGetProgramLog(prog, out->log);
    out->log[log_size] = '\0';
    if (compiled != HIPRTC_SUCCESS) {
        rtc->hiprtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_COMPILE, "hiprtc failed to compile %s for %s: %s\n%s", source_name, arch,
                       rtc->hiprtcGetErrorString(compiled), out->log);
    }
    size_t size = 0;
    rtc->hiprtcGetCodeSize(prog, &size);
    out->code = size ? malloc(size) : NULL;
    if (!out->code) {
        rtc->hiprtcDestroyProgram(&prog);
        return mt_fail(MT_ERR_COMPILE, "hiprtc produced no code object for %s", arch);
    }
    rtc->hiprtcGetCode(prog, out->code);
    out->code_size = size;
    rtc->hiprtcDestroyProgram(&prog);
    return MT_OK;
}

static mt_status hip_module_load(mt_backend *b, const void *code, size_t size, mt_module *out) {
    (void)size;
    hipModule_t m = NULL;
    mt_status st = HIP(b, hipModuleLoadData(&m, code));
    *out = (mt_module)m;
    return st;
}
static mt_status hip_module_unload(mt_backend *b, mt_module m) { return HIP(b, hipModuleUnload((hipModule_t)m)); }
static mt_status hip_module_function(mt_backend *b, mt_module m, const char *name, mt_function *out) {
    hipFunction_t f = NULL;
    mt_status st = hip_check(b, ctx_of(b)->hip.hipModuleGetFunction(&f, (hipModule_t)m, name), name);
    if (st != MT_OK) return mt_fail(st, "kernel '%s' not found in module: %s", name, mt_last_error());
    *out = (mt_function)f;
    return MT_OK;
}
static mt_status hip_function_resources(mt_backend *b, mt_function f, mt_kernel_resources *out) {
    hipFunction_t fn = (hipFunction_t)f;
    mt_status st;
    if ((st = HIP(b, hipFuncGetAttribute(&out->registers, HIP_FUNC_ATTRIBUTE_NUM_REGS, fn)))) return st;
    if ((st = HIP(b, hipFuncGetAttribute(&out->shared_bytes, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))))
        return st;
    if ((st = HIP(b, hipFuncGetAttribute(&out->local_bytes, HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn))))
        return st;
    return HIP(b, hipFuncGetAttribute(&out->max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
}
static mt_status hip_launch(mt_backend *b, mt_function f, const unsigned grid[3], const unsigned block[3],
                            size_t shared_bytes, mt_stream s, void **args) {
    return HIP(b, hipModuleLaunchKernel((hipFunction_t)f, grid[0], grid[1], grid[2], block[0], block[1],
                                        block[2], (unsigned)shared_bytes, (hipStream_t)s, args, NULL));
}
static mt_status hip_synchronize(mt_backend *b) { return HIP(b, hipDeviceSynchronize()); }

static void hip_close(mt_backend *b) {
    hip_ctx *c = ctx_of(b);
    if (!c) return;
    /* neither library is dlclosed: the HIP runtime keeps threads that
     * outlive it, and hiprtc may be that same library (libamdhip64 carries
     * it) or load its dependencies, whose constructors' allocations would
     * then be reported as leaks of an unloaded module (test_runtime_db under
     * LeakSanitizer, with the runtime itself never loaded) */
    free(c);
    b->context = NULL;
}

#define HIP_DRIVER_OPS                                                                   \
    .device_count = hip_device_count, .device_info = hip_device_info,                    \
    .set_device = hip_set_device, .mem_alloc = hip_mem_alloc, .mem_free = hip_mem_free,  \
    .copy_to_device = hip_copy_to_device, .copy_to_host = hip_copy_to_host,              \
    .copy_on_device = hip_copy_on_device, .mem_set = hip_mem_set,                        \
    .stream_create = hip_stream_create, .stream_destroy = hip_stream_destroy,            \
    .stream_sync = hip_stream_sync, .event_create = hip_event_create,                    \
    .event_destroy = hip_event_destroy, .event_record = hip_event_record,                \
    .event_sync = hip_event_sync, .event_elapsed = hip_event_elapsed,                    \
    .module_load = hip_module_load, .module_unload = hip_module_unload,                  \
    .module_function = hip_module_function, .function_resources = hip_function_resources, \
    .launch = hip_launch, .synchronize = hip_synchronize
#define HIP_COMPILER_OPS .compiler_version = hip_compiler_version, .compile = hip_compile

static const mt_backend_iface hip_full_iface = {HIP_DRIVER_OPS, HIP_COMPILER_OPS, .close = hip_close};
static const mt_backend_iface hip_driver_only_iface = {HIP_DRIVER_OPS, .close = hip_close};
static const mt_backend_iface hip_compiler_only_iface = {HIP_COMPILER_OPS, .close = hip_close};

mt_status mt_backend_hip_open(mt_backend *b) {
    hip_ctx *c = calloc(1, sizeof *c);
    if (!c) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    b->name = "hip";
    b->context = c;
    b->has_driver = load_runtime(b, c);
    b->has_compiler = load_hiprtc(b, c);
    if (!b->has_driver && !b->has_compiler) {
        mt_status st = mt_fail(MT_ERR_NO_BACKEND, "HIP: neither libamdhip64 nor libhiprtc loaded (tried %s)",
                               b->looked_for);
        free(c);
        b->context = NULL;
        return st;
    }
    b->iface = b->has_driver ? (b->has_compiler ? &hip_full_iface : &hip_driver_only_iface)
                             : &hip_compiler_only_iface;
    return MT_OK;
}
