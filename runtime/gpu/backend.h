/*
 * backend.h - the GPU backend interface.
 *
 * A backend is { name, interface, context }: the interface is a table of
 * function pointers, one per operation, filled by each vendor implementation
 * (backend_cuda.c: CUDA driver API + NVRTC; backend_hip.c: HIP + hiprtc;
 * backend_clang.c: a compile-only backend that runs clang's HIP offload
 * compiler, so gfx* code can be checked on a host without ROCm).  Callers
 * never touch the table: each public mt_backend_* function checks its
 * arguments, and an operation a backend leaves NULL fails with
 * MT_ERR_UNSUPPORTED and a message saying which backend lacks what.
 *
 * Vendor libraries are loaded with dlopen when a backend is opened, so one
 * binary starts on AMD, on NVIDIA and on a host with no GPU.  A backend may
 * be half-loaded: NVRTC present without a driver (our CI) gives a backend
 * that compiles for sm_* but enumerates no devices.
 *
 * Threads: the CUDA and HIP backends keep the current device per thread
 * (mt_backend_set_device must be called on each thread that launches).
 * Compilation is thread-safe in both.
 */
#ifndef MT_BACKEND_H
#define MT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/error.h"

typedef uint64_t mt_devptr;             /* a device address */
typedef struct mt_stream_s *mt_stream;  /* NULL is the default stream */
typedef struct mt_event_s *mt_event;
typedef struct mt_module_s *mt_module;
typedef struct mt_function_s *mt_function;
typedef struct mt_graph_s *mt_graph;       /* a captured, instantiated stream graph */

typedef struct mt_backend mt_backend;

typedef struct mt_device_info {
    int ordinal;
    char backend[16];           /* "cuda" or "hip" */
    char arch[32];              /* as the vendor spells it: "sm_90", "gfx942" */
    char name[128];             /* marketing name */
    int compute_units;          /* SMs or CUs */
    int warp_size;              /* 32 or 64 */
    size_t shared_per_group;    /* shared memory / LDS a group gets by default */
    size_t shared_per_group_max;/* ... and with opt-in (>= the default) */
    size_t total_memory;        /* bytes of device memory */
    int clock_khz;              /* peak core clock */
    int memory_clock_khz;
    int memory_bus_bits;
    size_t l2_bytes;
    char driver_version[32];    /* "13.0", "6.2" */
} mt_device_info;

/* What a compiler reports about one kernel.  -1 means "not reported". */
typedef struct mt_kernel_resources {
    int registers;      /* per thread (VGPRs on AMD) */
    int shared_bytes;   /* static shared memory / LDS */
    int local_bytes;    /* stack frame / scratch per thread */
    int spill_stores;   /* bytes (NVIDIA) */
    int spill_loads;
    int max_threads;    /* largest legal block */
    int scalar_registers; /* per wave (SGPRs on AMD; -1 elsewhere) */
    int serialized_mma; /* 1: the compiler says it serialised the kernel's asynchronous matrix-unit
                           instructions (ptxas C7520 on sm_90's wgmma: every product waits for the one
                           before), 0: it does not, -1: not reported */
} mt_kernel_resources;

void mt_kernel_resources_unknown(mt_kernel_resources *r);

typedef struct mt_compile_result {
    void *code;          /* malloc'd code object (cubin / hsaco / ELF) */
    size_t code_size;
    char *log;           /* malloc'd compiler log, NUL-terminated, may be "" */
} mt_compile_result;

void mt_compile_result_free(mt_compile_result *r);

typedef struct mt_backend_iface {
    /* devices */
    mt_status (*device_count)   (mt_backend *b, int *count);
    mt_status (*device_info)    (mt_backend *b, int ordinal, mt_device_info *info);
    mt_status (*set_device)     (mt_backend *b, int ordinal);
    /* memory */
    mt_status (*mem_alloc)      (mt_backend *b, size_t bytes, mt_devptr *out);
    mt_status (*mem_free)       (mt_backend *b, mt_devptr ptr);
    mt_status (*copy_to_device) (mt_backend *b, mt_devptr dst, const void *src, size_t n, mt_stream s);
    mt_status (*copy_to_host)   (mt_backend *b, void *dst, mt_devptr src, size_t n, mt_stream s);
    mt_status (*copy_on_device) (mt_backend *b, mt_devptr dst, mt_devptr src, size_t n, mt_stream s);
    mt_status (*mem_set)        (mt_backend *b, mt_devptr dst, uint8_t byte, size_t n, mt_stream s);
    /* streams and events */
    mt_status (*stream_create)  (mt_backend *b, mt_stream *out);
    mt_status (*stream_destroy) (mt_backend *b, mt_stream s);
    mt_status (*stream_sync)    (mt_backend *b, mt_stream s);
    mt_status (*event_create)   (mt_backend *b, mt_event *out);
    mt_status (*event_destroy)  (mt_backend *b, mt_event e);
    mt_status (*event_record)   (mt_backend *b, mt_event e, mt_stream s);
    mt_status (*event_sync)     (mt_backend *b, mt_event e);
    mt_status (*event_elapsed)  (mt_backend *b, mt_event start, mt_event end, float *ms);
    /* compiler */
    mt_status (*compiler_version)(mt_backend *b, char *buf, size_t n);
    mt_status (*compile)        (mt_backend *b, const char *source, const char *source_name,
                                 const char *arch, const char *const *options, int n_options,
                                 mt_compile_result *out);
    /* (optional) resource use parsed from a compile log, when the compiler writes one */
    void      (*parse_resources)(mt_backend *b, const char *log, const char *kernel,
                                 mt_kernel_resources *out);
    /* modules and launches */
    mt_status (*module_load)    (mt_backend *b, const void *code, size_t size, mt_module *out);
    mt_status (*module_unload)  (mt_backend *b, mt_module m);
    mt_status (*module_function)(mt_backend *b, mt_module m, const char *name, mt_function *out);
    mt_status (*function_resources)(mt_backend *b, mt_function f, mt_kernel_resources *out);
    mt_status (*launch)         (mt_backend *b, mt_function f, const unsigned grid[3],
                                 const unsigned block[3], size_t shared_bytes, mt_stream s,
                                 void **args);
    mt_status (*synchronize)    (mt_backend *b);
    /* (optional) a launch that may begin while the kernel before it in the
     * stream is still running (CUDA's programmatic dependent launch, sm_90+):
     * the kernel must call mt_grid_dependency_wait (kernels/prelude.h)
     * before it reads what that kernel wrote.  Without it, or where the
     * device cannot overlap, an ordinary launch is the same thing, later. */
    mt_status (*launch_dependent)(mt_backend *b, mt_function f, const unsigned grid[3],
                                 const unsigned block[3], size_t shared_bytes, mt_stream s,
                                 void **args);
    /* (optional) a launch whose blocks run in clusters of cluster[0] x
     * cluster[1] x cluster[2] (sm_90+): a cluster's blocks are scheduled
     * together and may read each other's shared memory (kernels/prelude.h,
     * mt_cluster_sync, mt_dsmem_*).  No fallback: a kernel written for
     * clusters cannot run without them. */
    mt_status (*launch_cluster) (mt_backend *b, mt_function f, const unsigned grid[3],
                                 const unsigned block[3], const unsigned cluster[3],
                                 size_t shared_bytes, mt_stream s, void **args);
    /* (optional) do once what a launch with this much dynamic shared memory
     * needs (the opt-in above 48 KiB on NVIDIA), so later launches from any
     * thread change nothing */
    mt_status (*prepare_launch) (mt_backend *b, mt_function f, size_t shared_bytes);
    /* (optional) the descriptor the tensor copy engine reads (CUDA's tensor
     * map, sm_90+; 128 bytes into `out`) for a 2-D array of elem_bytes-wide
     * elements (1 or 2) at `base`: `rows` rows of `cols` elements,
     * `row_bytes` apart; each copy moves a box of box_cols x box_rows into
     * shared memory in the swizzle as wide as a box row, which must be 64
     * or 128 bytes (kernels/prelude.h, mt_swizzle128; kernels/mla_decode/wgmma_common.cuh,
     * t8_swizzle64); like every driver operation it needs the device
     * current on the calling thread */
    mt_status (*tensor_map_2d)  (mt_backend *b, mt_devptr base, unsigned elem_bytes, uint64_t cols, uint64_t rows,
                                 uint64_t row_bytes, unsigned box_cols, unsigned box_rows, void *out);
    /* (optional) the same for a 3-D array: dims[0] contiguous elements,
     * dims[1] and dims[2] outer, strides[0] and strides[1] bytes apart; a
     * box of box[0] x box[1] x box[2] lands as box[1] x box[2] rows of
     * box[0] elements (the prefill family's (column, head, token) views) */
    mt_status (*tensor_map_3d)  (mt_backend *b, mt_devptr base, unsigned elem_bytes, const uint64_t dims[3],
                                 const uint64_t strides[2], const unsigned box[3], void *out);
    /* (optional) stream capture: everything launched on `s` between begin
     * and end is recorded (not run) into a graph, instantiated at end and
     * replayed by graph_launch (CUDA graphs; how engines run decode) */
    mt_status (*graph_begin)    (mt_backend *b, mt_stream s);
    mt_status (*graph_end)      (mt_backend *b, mt_stream s, mt_graph *out);
    mt_status (*graph_launch)   (mt_backend *b, mt_graph g, mt_stream s);
    void      (*graph_destroy)  (mt_backend *b, mt_graph g);
    /* teardown: unloads the vendor libraries and frees the context */
    void      (*close)          (mt_backend *b);
} mt_backend_iface;

struct mt_backend {
    const char *name;               /* "cuda", "hip", "hip-clang" */
    const mt_backend_iface *iface;
    void *context;                  /* the implementation's private state */
    int has_driver;                 /* devices can be enumerated and used */
    int has_compiler;               /* compile() works */
    char looked_for[1024];          /* what was tried when loading, for messages */
};

/* --- opening backends ---------------------------------------------------- */

/* Opens the named backend ("cuda", "hip", "hip-clang", "hip-cpu").  Succeeds when at
 * least its compiler or its driver loaded; fails with MT_ERR_NO_BACKEND and a
 * message naming every library tried when neither did. */
mt_status mt_backend_open(const char *name, mt_backend **out);
void mt_backend_close(mt_backend *b);

/* Finds the first backend with a usable GPU: HIP first, then CUDA.  On a host
 * with none, fails with MT_ERR_NO_BACKEND or MT_ERR_NO_DEVICE and a message
 * naming every library and device query tried. */
mt_status mt_backend_discover(mt_backend **out);

/* The backend that compiles for `arch`: sm_* -> "cuda" (NVRTC); gfx* ->
 * "hip" (hiprtc) when it loads and an AMD device is present, else
 * "hip-clang" (offline clang), else hiprtc without a device.
 * MLA_TUNE_AMD_COMPILER=hiprtc or =clang forces one.  Which one was chosen
 * is b->name: callers print it, nothing is hidden. */
mt_status mt_backend_open_for_arch(const char *arch, mt_backend **out);

/* --- operations (argument-checked wrappers over the interface) ----------- */

mt_status mt_backend_device_count(mt_backend *b, int *count);
mt_status mt_backend_device_info(mt_backend *b, int ordinal, mt_device_info *info);
/* The device's peak memory bandwidth in GB/s from its memory clock and bus
 * width (two transfers a clock), 0 when the driver reports neither.
 * Checked against NVIDIA's figures (H100 SXM 3352, H200 4814: their data
 * sheets' 3.35 and 4.8 TB/s); what HIP reports for AMD's HBM has not been
 * read on an AMD GPU here. */
double mt_device_memory_gbps(const mt_device_info *info);
mt_status mt_backend_set_device(mt_backend *b, int ordinal);
mt_status mt_backend_mem_alloc(mt_backend *b, size_t bytes, mt_devptr *out);
mt_status mt_backend_mem_free(mt_backend *b, mt_devptr ptr);
mt_status mt_backend_copy_to_device(mt_backend *b, mt_devptr dst, const void *src, size_t n, mt_stream s);
mt_status mt_backend_copy_to_host(mt_backend *b, void *dst, mt_devptr src, size_t n, mt_stream s);
mt_status mt_backend_copy_on_device(mt_backend *b, mt_devptr dst, mt_devptr src, size_t n, mt_stream s);
mt_status mt_backend_mem_set(mt_backend *b, mt_devptr dst, uint8_t byte, size_t n, mt_stream s);
mt_status mt_backend_stream_create(mt_backend *b, mt_stream *out);
mt_status mt_backend_stream_destroy(mt_backend *b, mt_stream s);
mt_status mt_backend_stream_sync(mt_backend *b, mt_stream s);
mt_status mt_backend_event_create(mt_backend *b, mt_event *out);
mt_status mt_backend_event_destroy(mt_backend *b, mt_event e);
mt_status mt_backend_event_record(mt_backend *b, mt_event e, mt_stream s);
mt_status mt_backend_event_sync(mt_backend *b, mt_event e);
mt_status mt_backend_event_elapsed(mt_backend *b, mt_event start, mt_event end, float *ms);
mt_status mt_backend_compiler_version(mt_backend *b, char *buf, size_t n);
mt_status mt_backend_compile(mt_backend *b, const char *source, const char *source_name,
                             const char *arch, const char *const *options, int n_options,
                             mt_compile_result *out);
void mt_backend_parse_resources(mt_backend *b, const char *log, const char *kernel,
                                mt_kernel_resources *out);
mt_status mt_backend_module_load(mt_backend *b, const void *code, size_t size, mt_module *out);
mt_status mt_backend_module_unload(mt_backend *b, mt_module m);
mt_status mt_backend_module_function(mt_backend *b, mt_module m, const char *name, mt_function *out);
mt_status mt_backend_function_resources(mt_backend *b, mt_function f, mt_kernel_resources *out);
mt_status mt_backend_launch(mt_backend *b, mt_function f, const unsigned grid[3],
                            const unsigned block[3], size_t shared_bytes, mt_stream s, void **args);
/* launch_dependent where the backend has it, else an ordinary launch */
mt_status mt_backend_launch_dependent(mt_backend *b, mt_function f, const unsigned grid[3],
                                      const unsigned block[3], size_t shared_bytes, mt_stream s, void **args);
/* MT_ERR_UNSUPPORTED where the backend has no cluster launch; the grid
 * must be a whole number of clusters */
mt_status mt_backend_launch_cluster(mt_backend *b, mt_function f, const unsigned grid[3], const unsigned block[3],
                                    const unsigned cluster[3], size_t shared_bytes, mt_stream s, void **args);
mt_status mt_backend_synchronize(mt_backend *b);
mt_status mt_backend_prepare_launch(mt_backend *b, mt_function f, size_t shared_bytes);
/* MT_ERR_UNSUPPORTED where the backend has no tensor copy engine */
#define MT_TENSOR_MAP_BYTES 128
mt_status mt_backend_tensor_map_2d(mt_backend *b, mt_devptr base, unsigned elem_bytes, uint64_t cols, uint64_t rows,
                                   uint64_t row_bytes, unsigned box_cols, unsigned box_rows, void *out);
mt_status mt_backend_tensor_map_3d(mt_backend *b, mt_devptr base, unsigned elem_bytes, const uint64_t dims[3],
                                   const uint64_t strides[2], const unsigned box[3], void *out);

/* MT_ERR_UNSUPPORTED where the backend cannot capture; `s` must not be
 * the default (NULL) stream */
mt_status mt_backend_graph_begin(mt_backend *b, mt_stream s);
mt_status mt_backend_graph_end(mt_backend *b, mt_stream s, mt_graph *out);
mt_status mt_backend_graph_launch(mt_backend *b, mt_graph g, mt_stream s);
void mt_backend_graph_destroy(mt_backend *b, mt_graph g);

/* --- helpers for implementations ----------------------------------------- */

/* dlopen the first of `names` that loads; appends each name tried (and why it
 * failed) to `looked_for`.  Returns the handle or NULL. */
void *mt_dlopen_first(const char *const *names, int n, char *looked_for, size_t looked_for_size);

/* An AMD target name "gfxMMms" (gfx90a, gfx942, gfx950, gfx1100; features
 * after ':' ignored): major version in decimal, minor and stepping one hex
 * digit each.  Fails with MT_ERR_INVALID_ARGUMENT naming the text. */
mt_status mt_parse_gfx_target(const char *arch, int *major, int *minor, int *stepping);

/* For backends that run a compiler as a subprocess (compiler_process.c):
 * mt_run_process runs argv with stdout and stderr into log_path and returns
 * its exit status, or -1 when it could not run or was killed;
 * mt_read_whole_file returns a file's bytes, NUL-terminated, malloc'd (NULL
 * when unreadable), its size in *size when size is not NULL;
 * mt_clang_version runs `cmd --version` (output to log_path) and returns
 * clang's major version, 0 when the command ran but is not a clang, -1 when
 * it did not run, with "X.Y.Z" in version; mt_remove_tree removes a
 * temporary folder and everything in it. */
int mt_run_process(char *const argv[], const char *log_path);
char *mt_read_whole_file(const char *path, size_t *size);
int mt_clang_version(const char *cmd, const char *log_path, char *version, size_t size);
void mt_remove_tree(const char *dir);

/* Appends formatted text to a bounded buffer (no overflow, always NUL-terminated). */
void mt_append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Implementations (each fills *b or fails with a message). */
mt_status mt_backend_cuda_open(mt_backend *b);
mt_status mt_backend_hip_open(mt_backend *b);
mt_status mt_backend_clang_open(mt_backend *b);
mt_status mt_backend_emu_open(mt_backend *b);   /* "hip-cpu": AMD kernels emulated on the CPU (backend_emu.c) */

#endif
