/*
 * backend.c - opening backends and the argument-checked wrappers over the
 * backend interface (see backend.h for the contract).
 */
#define _GNU_SOURCE
#include "backend.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_append(char *buf, size_t size, const char *fmt, ...) {
    size_t used = strnlen(buf, size);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

static int hex_digit(char ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

mt_status mt_parse_gfx_target(const char *arch, int *major, int *minor, int *stepping) {
    size_t n = arch ? strcspn(arch, ":") : 0;
    int ok = arch && strncmp(arch, "gfx", 3) == 0 && (n == 6 || n == 7);
    int mj = 0;
    for (size_t i = 3; ok && i + 2 < n; i++) {
        ok = arch[i] >= '0' && arch[i] <= '9';
        mj = mj * 10 + (arch[i] - '0');
    }
    int mi = ok ? hex_digit(arch[n - 2]) : -1, st = ok ? hex_digit(arch[n - 1]) : -1;
    if (!ok || mj < 6 || mi < 0 || st < 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "'%s' is not an AMD target name (gfx, a major version, then a minor and a stepping digit: "
                       "gfx90a, gfx942, gfx950, gfx1100)", arch ? arch : "(null)");
    *major = mj, *minor = mi, *stepping = st;
    return MT_OK;
}

void *mt_dlopen_first(const char *const *names, int n, char *looked_for, size_t size) {
    for (int i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        const char *why = dlerror();
        /* dlerror repeats the name; keep only the reason after ": " */
        const char *reason = why ? strrchr(why, ':') : NULL;
        mt_append(looked_for, size, "%s%s (%s)", looked_for[0] ? ", " : "", names[i],
                  reason ? reason + 2 : "not found");
    }
    return NULL;
}

void mt_kernel_resources_unknown(mt_kernel_resources *r) {
    r->registers = r->shared_bytes = r->local_bytes = -1;
    r->spill_stores = r->spill_loads = r->max_threads = -1;
    r->serialized_mma = -1;
    r->scalar_registers = -1;
}

void mt_compile_result_free(mt_compile_result *r) {
    if (!r) return;
    free(r->code);
    free(r->log);
    r->code = NULL;
    r->log = NULL;
    r->code_size = 0;
}

mt_status mt_backend_open(const char *name, mt_backend **out) {
    if (!name || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_backend_open: null argument");
    *out = NULL;
    mt_backend *b = calloc(1, sizeof *b);
    if (!b) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st;
    if (strcmp(name, "cuda") == 0)
        st = mt_backend_cuda_open(b);
    else if (strcmp(name, "hip") == 0)
        st = mt_backend_hip_open(b);
    else if (strcmp(name, "hip-clang") == 0)
        st = mt_backend_clang_open(b);
    else if (strcmp(name, "hip-cpu") == 0)
        st = mt_backend_emu_open(b);
    else
        st = mt_fail(MT_ERR_INVALID_ARGUMENT,
                     "unknown backend '%s' (known: cuda, hip, hip-clang, hip-cpu)", name);
    if (st != MT_OK) {
        free(b);
        return st;
    }
    *out = b;
    return MT_OK;
}

void mt_backend_close(mt_backend *b) {
    if (!b) return;
    if (b->iface && b->iface->close) b->iface->close(b);
    free(b);
}

/* MLA_TUNE_BACKEND names the one backend to use ("hip-cpu" runs kernels on
 * the CPU: tests and the Python binding use it on hosts without a GPU); a
 * backend so named that cannot run is an error, never a fall-back. */
static mt_status discover_named(const char *name, mt_backend **out) {
    mt_backend *b = NULL;
    mt_status st = mt_backend_open(name, &b);
    if (st != MT_OK) return mt_fail(st, "MLA_TUNE_BACKEND=%s: %s", name, mt_last_error());
    int count = 0;
    if (!b->has_driver || mt_backend_device_count(b, &count) != MT_OK || count == 0) {
        st = mt_fail(b->has_driver ? MT_ERR_NO_DEVICE : MT_ERR_NO_BACKEND,
                     "MLA_TUNE_BACKEND=%s: the backend loaded but cannot run kernels (%s)", name,
                     b->has_driver ? "no device" : b->looked_for);
        mt_backend_close(b);
        return st;
    }
    *out = b;
    return MT_OK;
}

mt_status mt_backend_discover(mt_backend **out) {
    static const char *const order[] = {"hip", "cuda"};
    char report[2048] = "";
    mt_status worst = MT_ERR_NO_BACKEND;
    *out = NULL;
    const char *named = getenv("MLA_TUNE_BACKEND");
    if (named && named[0]) return discover_named(named, out);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        mt_backend *b = NULL;
        if (mt_backend_open(order[i], &b) != MT_OK) {
            mt_append(report, sizeof report, "\n  %s: %s", order[i], mt_last_error());
            continue;
        }
        if (!b->has_driver) {
            mt_append(report, sizeof report, "\n  %s: no GPU runtime library loaded (tried %s)",
                      order[i], b->looked_for);
            mt_backend_close(b);
            continue;
        }
        int count = 0;
        if (mt_backend_device_count(b, &count) != MT_OK || count == 0) {
            mt_append(report, sizeof report, "\n  %s: runtime loaded but no device: %s", order[i],
                      count == 0 && mt_last_error()[0] == '\0' ? "0 devices" : mt_last_error());
            worst = MT_ERR_NO_DEVICE;
            mt_backend_close(b);
            continue;
        }
        *out = b;
        return MT_OK;
    }
    return mt_fail(worst, "no GPU found; looked for:%s", report);
}

mt_status mt_backend_open_for_arch(const char *arch, mt_backend **out) {
    if (!arch) return mt_fail(MT_ERR_INVALID_ARGUMENT, "no architecture given");
    if (strncmp(arch, "sm_", 3) == 0) {
        mt_status st = mt_backend_open("cuda", out);
        if (st != MT_OK) return st;
        if (!(*out)->has_compiler) {
            mt_status e = mt_fail(MT_ERR_NO_BACKEND, "cannot compile for %s: NVRTC not found (tried %s)",
                                  arch, (*out)->looked_for);
            mt_backend_close(*out);
            *out = NULL;
            return e;
        }
        return MT_OK;
    }
    if (strncmp(arch, "gfx", 3) == 0) {
        int major, minor, stepping;
        mt_status st = mt_parse_gfx_target(arch, &major, &minor, &stepping);
        if (st != MT_OK) return st;
        const char *want = getenv("MLA_TUNE_AMD_COMPILER");
        if (want && strcmp(want, "hiprtc") != 0 && strcmp(want, "clang") != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "MLA_TUNE_AMD_COMPILER='%s': expected hiprtc or clang", want);
        char tried[1024] = "";
        mt_backend *b = NULL;
        if (!want || strcmp(want, "hiprtc") == 0) {
            if (mt_backend_open("hip", &b) == MT_OK && b->has_compiler) {
                /* hiprtc where it will also run (a device), or where asked
                 * for; with no AMD device the offline clang goes first: the
                 * hiprtc Debian builds into libamdhip64.so.5 aborts inside
                 * itself for gfx940+ (AMD-COMPILE.md) */
                int count = 0;
                if (want || (b->has_driver && mt_backend_device_count(b, &count) == MT_OK && count > 0)) {
                    *out = b;
                    return MT_OK;
                }
            } else {
                snprintf(tried, sizeof tried, "%s", b ? b->looked_for : mt_last_error());
                mt_backend_close(b);
                b = NULL;
                if (want)
                    return mt_fail(MT_ERR_NO_BACKEND, "cannot compile for %s: hiprtc not found (tried %s)", arch, tried);
            }
        }
        st = mt_backend_open("hip-clang", out);
        if (st == MT_OK) {
            mt_backend_close(b);
            return MT_OK;
        }
        if (b) { /* hiprtc without a device, and no offline clang */
            *out = b;
            return MT_OK;
        }
        return mt_fail(st, "cannot compile for %s: hiprtc not found (tried %s) and %s", arch, tried,
                       mt_last_error());
    }
    return mt_fail(MT_ERR_INVALID_ARGUMENT,
                   "unknown architecture '%s' (expected sm_NN for NVIDIA or gfxNNN for AMD)", arch);
}

/* Each wrapper: reject a NULL backend, fail clearly when the operation is
 * not implemented, then forward. */
#define CHECK_OP(b, op)                                                                      \
    do {                                                                                     \
        if (!(b)) return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: backend is NULL", #op);      \
        if (!(b)->iface->op)                                                                 \
            return mt_fail(MT_ERR_UNSUPPORTED, "backend '%s' does not support %s%s", (b)->name, \
                           #op, (b)->has_driver ? "" : " (no GPU runtime loaded)");         \
    } while (0)

mt_status mt_backend_device_count(mt_backend *b, int *count) {
    CHECK_OP(b, device_count);
    if (!count) return mt_fail(MT_ERR_INVALID_ARGUMENT, "device_count: null output");
    *count = 0;
    return b->iface->device_count(b, count);
}

double mt_device_memory_gbps(const mt_device_info *info) {
    if (info->memory_clock_khz <= 0 || info->memory_bus_bits <= 0) return 0;
    return 2.0 * info->memory_clock_khz * 1e3 * (info->memory_bus_bits / 8.0) / 1e9;
}

mt_status mt_backend_device_info(mt_backend *b, int ordinal, mt_device_info *info) {
    CHECK_OP(b, device_info);
    if (!info) return mt_fail(MT_ERR_INVALID_ARGUMENT, "device_info: null output");
    memset(info, 0, sizeof *info);
    return b->iface->device_info(b, ordinal, info);
}

mt_status mt_backend_set_device(mt_backend *b, int ordinal) {
    CHECK_OP(b, set_device);
    return b->iface->set_device(b, ordinal);
}

mt_status mt_backend_mem_alloc(mt_backend *b, size_t bytes, mt_devptr *out) {
    CHECK_OP(b, mem_alloc);
    if (!out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mem_alloc: null output");
    if (bytes == 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mem_alloc: zero bytes requested");
    return b->iface->mem_alloc(b, bytes, out);
}

mt_status mt_backend_mem_free(mt_backend *b, mt_devptr ptr) {
    CHECK_OP(b, mem_free);
    if (ptr == 0) return MT_OK;
    return b->iface->mem_free(b, ptr);
}

mt_status mt_backend_copy_to_device(mt_backend *b, mt_devptr dst, const void *src, size_t n,
                                    mt_stream s) {
    CHECK_OP(b, copy_to_device);
    if (n == 0) return MT_OK;
    if (!dst || !src) return mt_fail(MT_ERR_INVALID_ARGUMENT, "copy_to_device: null pointer");
    return b->iface->copy_to_device(b, dst, src, n, s);
}

mt_status mt_backend_copy_to_host(mt_backend *b, void *dst, mt_devptr src, size_t n, mt_stream s) {
    CHECK_OP(b, copy_to_host);
    if (n == 0) return MT_OK;
    if (!dst || !src) return mt_fail(MT_ERR_INVALID_ARGUMENT, "copy_to_host: null pointer");
    return b->iface->copy_to_host(b, dst, src, n, s);
}

mt_status mt_backend_copy_on_device(mt_backend *b, mt_devptr dst, mt_devptr src, size_t n,
                                    mt_stream s) {
    CHECK_OP(b, copy_on_device);
    if (n == 0) return MT_OK;
    if (!dst || !src) return mt_fail(MT_ERR_INVALID_ARGUMENT, "copy_on_device: null pointer");
    return b->iface->copy_on_device(b, dst, src, n, s);
}

mt_status mt_backend_mem_set(mt_backend *b, mt_devptr dst, uint8_t byte, size_t n, mt_stream s) {
    CHECK_OP(b, mem_set);
    if (n == 0) return MT_OK;
    if (!dst) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mem_set: null pointer");
    return b->iface->mem_set(b, dst, byte, n, s);
}

mt_status mt_backend_stream_create(mt_backend *b, mt_stream *out) {
    CHECK_OP(b, stream_create);
    if (!out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "stream_create: null output");
    return b->iface->stream_create(b, out);
}

mt_status mt_backend_stream_destroy(mt_backend *b, mt_stream s) {
    CHECK_OP(b, stream_destroy);
    if (!s) return MT_OK;
    return b->iface->stream_destroy(b, s);
}

mt_status mt_backend_stream_sync(mt_backend *b, mt_stream s) {
    CHECK_OP(b, stream_sync);
    return b->iface->stream_sync(b, s);
}

mt_status mt_backend_event_create(mt_backend *b, mt_event *out) {
    CHECK_OP(b, event_create);
    if (!out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "event_create: null output");
    return b->iface->event_create(b, out);
}

mt_status mt_backend_event_destroy(mt_backend *b, mt_event e) {
    CHECK_OP(b, event_destroy);
    if (!e) return MT_OK;
    return b->iface->event_destroy(b, e);
}

mt_status mt_backend_event_record(mt_backend *b, mt_event e, mt_stream s) {
    CHECK_OP(b, event_record);
    if (!e) return mt_fail(MT_ERR_INVALID_ARGUMENT, "event_record: null event");
    return b->iface->event_record(b, e, s);
}

mt_status mt_backend_event_sync(mt_backend *b, mt_event e) {
    CHECK_OP(b, event_sync);
    if (!e) return mt_fail(MT_ERR_INVALID_ARGUMENT, "event_sync: null event");
    return b->iface->event_sync(b, e);
}

mt_status mt_backend_event_elapsed(mt_backend *b, mt_event start, mt_event end, float *ms) {
    CHECK_OP(b, event_elapsed);
    if (!start || !end || !ms) return mt_fail(MT_ERR_INVALID_ARGUMENT, "event_elapsed: null argument");
    return b->iface->event_elapsed(b, start, end, ms);
}

mt_status mt_backend_compiler_version(mt_backend *b, char *buf, size_t n) {
    CHECK_OP(b, compiler_version);
    if (!buf || n == 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "compiler_version: no buffer");
    buf[0] = '\0';
    return b->iface->compiler_version(b, buf, n);
}

mt_status mt_backend_compile(mt_backend *b, const char *source, const char *source_name,
                             const char *arch, const char *const *options, int n_options,
                             mt_compile_result *out) {
    CHECK_OP(b, compile);
    if (!source || !arch || !out || (n_options > 0 && !options))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "compile: null argument");
    memset(out, 0, sizeof *out);
    return b->iface->compile(b, source, source_name ? source_name : "kernel.cu", arch, options,
                             n_options, out);
}

void mt_backend_parse_resources(mt_backend *b, const char *log, const char *kernel,
                                mt_kernel_resources *out) {
    mt_kernel_resources_unknown(out);
    if (b && b->iface->parse_resources && log && kernel) b->iface->parse_resources(b, log, kernel, out);
}

mt_status mt_backend_module_load(mt_backend *b, const void *code, size_t size, mt_module *out) {
    CHECK_OP(b, module_load);
    if (!code || size == 0 || !out)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "module_load: empty code object");
    return b->iface->module_load(b, code, size, out);
}

mt_status mt_backend_module_unload(mt_backend *b, mt_module m) {
    CHECK_OP(b, module_unload);
    if (!m) return MT_OK;
    return b->iface->module_unload(b, m);
}

mt_status mt_backend_module_function(mt_backend *b, mt_module m, const char *name,
                                     mt_function *out) {
    CHECK_OP(b, module_function);
    if (!m || !name || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "module_function: null argument");
    return b->iface->module_function(b, m, name, out);
}

mt_status mt_backend_function_resources(mt_backend *b, mt_function f, mt_kernel_resources *out) {
    CHECK_OP(b, function_resources);
    if (!f || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "function_resources: null argument");
    mt_kernel_resources_unknown(out);
    return b->iface->function_resources(b, f, out);
}

static mt_status check_launch(mt_function f, const unsigned grid[3], const unsigned block[3]) {
    if (!f || !grid || !block) return mt_fail(MT_ERR_INVALID_ARGUMENT, "launch: null argument");
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "launch: zero-sized grid or block (dimension %d)", i);
    return MT_OK;
}

mt_status mt_backend_launch(mt_backend *b, mt_function f, const unsigned grid[3],
                            const unsigned block[3], size_t shared_bytes, mt_stream s, void **args) {
    CHECK_OP(b, launch);
    mt_status st = check_launch(f, grid, block);
    return st != MT_OK ? st : b->iface->launch(b, f, grid, block, shared_bytes, s, args);
}

mt_status mt_backend_launch_dependent(mt_backend *b, mt_function f, const unsigned grid[3],
                                      const unsigned block[3], size_t shared_bytes, mt_stream s, void **args) {
    if (!b || !b->iface || !b->iface->launch_dependent)
        return mt_backend_launch(b, f, grid, block, shared_bytes, s, args);
    mt_status st = check_launch(f, grid, block);
    return st != MT_OK ? st : b->iface->launch_dependent(b, f, grid, block, shared_bytes, s, args);
}

mt_status mt_backend_launch_cluster(mt_backend *b, mt_function f, const unsigned grid[3], const unsigned block[3],
                                    const unsigned cluster[3], size_t shared_bytes, mt_stream s, void **args) {
    CHECK_OP(b, launch_cluster);
    mt_status st = check_launch(f, grid, block);
    if (st != MT_OK) return st;
    for (int i = 0; i < 3; i++)
        if (cluster[i] == 0 || grid[i] % cluster[i] != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "launch: grid dimension %d (%u) is not a multiple of the cluster's (%u)",
                           i, grid[i], cluster[i]);
    return b->iface->launch_cluster(b, f, grid, block, cluster, shared_bytes, s, args);
}

/* What both tensor-map encoders take: 8- or 16-bit elements, a box row of
 * 64 or 128 bytes (the swizzle is as wide). */
static mt_status check_box_row(const char *op, unsigned elem_bytes, unsigned box_cols) {
    if ((elem_bytes != 1 && elem_bytes != 2) || (box_cols * elem_bytes != 64 && box_cols * elem_bytes != 128))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "%s: %u-byte elements in boxes of %u columns (1 or 2 bytes, 64- or 128-byte rows)", op,
                       elem_bytes, box_cols);
    return MT_OK;
}

mt_status mt_backend_tensor_map_2d(mt_backend *b, mt_devptr base, unsigned elem_bytes, uint64_t cols, uint64_t rows,
                                   uint64_t row_bytes, unsigned box_cols, unsigned box_rows, void *out) {
    CHECK_OP(b, tensor_map_2d);
    if (!base || !out || cols == 0 || rows == 0 || box_cols == 0 || box_rows == 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "tensor_map_2d: null pointer or empty shape");
    mt_status st = check_box_row("tensor_map_2d", elem_bytes, box_cols);
    if (st != MT_OK) return st;
    return b->iface->tensor_map_2d(b, base, elem_bytes, cols, rows, row_bytes, box_cols, box_rows, out);
}

mt_status mt_backend_tensor_map_3d(mt_backend *b, mt_devptr base, unsigned elem_bytes, const uint64_t dims[3],
                                   const uint64_t strides[2], const unsigned box[3], void *out) {
    CHECK_OP(b, tensor_map_3d);
    if (!base || !out || !dims[0] || !dims[1] || !dims[2] || !box[0] || !box[1] || !box[2])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "tensor_map_3d: null pointer or empty shape");
    mt_status st = check_box_row("tensor_map_3d", elem_bytes, box[0]);
    if (st != MT_OK) return st;
    if (base % 16 || strides[0] % 16 || strides[1] % 16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "tensor_map_3d: the base and the strides (%llu, %llu bytes) must be multiples of 16 bytes",
                       (unsigned long long)strides[0], (unsigned long long)strides[1]);
    return b->iface->tensor_map_3d(b, base, elem_bytes, dims, strides, box, out);
}

mt_status mt_backend_graph_begin(mt_backend *b, mt_stream s) {
    CHECK_OP(b, graph_begin);
    if (!s) return mt_fail(MT_ERR_INVALID_ARGUMENT, "graph capture needs a stream of its own, not the default one");
    return b->iface->graph_begin(b, s);
}

mt_status mt_backend_graph_end(mt_backend *b, mt_stream s, mt_graph *out) {
    CHECK_OP(b, graph_end);
    if (!s || !out) return mt_fail(MT_ERR_INVALID_ARGUMENT, "graph_end: null stream or output");
    return b->iface->graph_end(b, s, out);
}

mt_status mt_backend_graph_launch(mt_backend *b, mt_graph g, mt_stream s) {
    CHECK_OP(b, graph_launch);
    if (!g) return mt_fail(MT_ERR_INVALID_ARGUMENT, "graph_launch: null graph");
    return b->iface->graph_launch(b, g, s);
}

void mt_backend_graph_destroy(mt_backend *b, mt_graph g) {
    if (b && b->iface && b->iface->graph_destroy && g) b->iface->graph_destroy(b, g);
}

mt_status mt_backend_synchronize(mt_backend *b) {
    CHECK_OP(b, synchronize);
    return b->iface->synchronize(b);
}

mt_status mt_backend_prepare_launch(mt_backend *b, mt_function f, size_t shared_bytes) {
    if (!b || !f) return mt_fail(MT_ERR_INVALID_ARGUMENT, "prepare_launch: null argument");
    return b->iface->prepare_launch ? b->iface->prepare_launch(b, f, shared_bytes) : MT_OK;
}
