/*
 * backend_emu.c - "hip-cpu": AMD kernels run on the CPU, with no GPU and no
 * ROCm runtime.  A development and CI backend: it proves that the kernel
 * sources' AMD branches compute the right thing under AMD's documented
 * semantics (64-lane waves, barriers, LDS, shuffles, the MFMA operand
 * layouts), through the same launch code as a GPU (kernels/mla_decode/launch.c
 * builds the arguments, the JIT and its cache compile and load).  It says
 * nothing about the GPU compiler's code, timing or occupancy.
 *
 * Its "compiler" is the host's clang++ with the HIP emulation header
 * (runtime/gpu/emu/hip/hip_runtime.h, which the kernels' prelude includes in
 * place of ROCm's): a kernel source becomes a shared object, its "code
 * object".  Two steps, because the emulation has no kernel-launch syntax
 * to hook into:
 *   1. preprocess (the target's macros: __GFX9__, __gfx942__ / __gfx950__;
 *      __global__ and __shared__ become the markers mt_emu_kernel_mark_ and
 *      mt_emu_shared_mark_), then scan the text: each marked function is a
 *      kernel, for which an entry point mt_emu_entry_NAME(void **args) is
 *      appended; `extern __shared__ T name[];` (dynamic LDS) becomes
 *      `T *const name = mt_emu::dynamic_shared();`, other __shared__
 *      variables `static thread_local` (one work-group runs at a time);
 *   2. compile the result into a shared object.
 * module_load writes it to a temporary file and dlopens it; a launch calls
 * the module's mt_emu_launch, which runs the work-groups one after another
 * (the header says how).
 *
 * The device: one, of MLA_TUNE_EMU_ARCH (gfx942 by default; gfx950, gfx90a)
 * with its LDS size, 64-wide waves and 4 compute units; memory is host
 * memory; streams are in order; events read the host clock.
 *
 * Environment:
 *   MLA_TUNE_EMU_ARCH     the emulated target (gfx942)
 *   MLA_TUNE_EMU_CXX      the clang++ to run (default: the first of
 *                         clang++-22, -21, -20, -19, clang++ that runs)
 *   MLA_TUNE_EMU_INCLUDE  folder holding hip/hip_runtime.h (the emulation)
 */
#define _GNU_SOURCE
#include "backend.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/gpu/emu/mt_emu_launch.h"

#ifndef MT_EMU_INCLUDE_DIR
#define MT_EMU_INCLUDE_DIR ""
#endif

typedef struct emu_ctx {
    char cxx[256];
    char version[128];
    char include_dir[512];
    char arch[32];
} emu_ctx;

enum { MAX_FUNCTIONS = 16 };
typedef struct emu_function {
    void (*entry)(void **);
    int (*launch)(mt_emu_launch_desc *);
    char name[64];
} emu_function;
typedef struct emu_module {
    void *handle;
    pthread_mutex_t lock;   /* over functions[]: threads look kernels up at once (jit.h) */
    emu_function functions[MAX_FUNCTIONS];
    int n_functions;
} emu_module;

typedef struct emu_event {
    double seconds;
} emu_event;

static emu_ctx *ctx_of(mt_backend *b) { return b->context; }

/* --- devices, memory, streams, events ------------------------------------- */

static mt_status emu_device_count(mt_backend *b, int *count) {
    (void)b;
    *count = 1;
    return MT_OK;
}

static mt_status emu_device_info(mt_backend *b, int ordinal, mt_device_info *info) {
    if (ordinal != 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "hip-cpu has one device (0), not %d", ordinal);
    memset(info, 0, sizeof *info);
    snprintf(info->backend, sizeof info->backend, "hip-cpu");
    snprintf(info->arch, sizeof info->arch, "%s", ctx_of(b)->arch);
    snprintf(info->name, sizeof info->name, "%s emulated on the CPU", ctx_of(b)->arch);
    info->compute_units = 4;
    info->warp_size = 64;
    info->shared_per_group = info->shared_per_group_max = strcmp(ctx_of(b)->arch, "gfx950") == 0 ? 163840 : 65536;
    info->total_memory = (size_t)4 << 30;
    info->l2_bytes = (size_t)4 << 20;
    snprintf(info->driver_version, sizeof info->driver_version, "emulated");
    return MT_OK;
}

static mt_status emu_set_device(mt_backend *b, int ordinal) {
    (void)b;
    return ordinal == 0 ? MT_OK : mt_fail(MT_ERR_INVALID_ARGUMENT, "hip-cpu has one device (0), not %d", ordinal);
}

static mt_status emu_mem_alloc(mt_backend *b, size_t bytes, mt_devptr *out) {
    (void)b;
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "hip-cpu: cannot allocate %zu bytes", bytes);
    *out = (mt_devptr)(uintptr_t)p;
    return MT_OK;
}
static mt_status emu_mem_free(mt_backend *b, mt_devptr p) {
    (void)b;
    free((void *)(uintptr_t)p);
    return MT_OK;
}
static mt_status emu_copy_to_device(mt_backend *b, mt_devptr d, const void *s, size_t n, mt_stream st) {
    (void)b, (void)st;
    memcpy((void *)(uintptr_t)d, s, n);
    return MT_OK;
}
static mt_status emu_copy_to_host(mt_backend *b, void *d, mt_devptr s, size_t n, mt_stream st) {
    (void)b, (void)st;
    memcpy(d, (const void *)(uintptr_t)s, n);
    return MT_OK;
}
static mt_status emu_copy_on_device(mt_backend *b, mt_devptr d, mt_devptr s, size_t n, mt_stream st) {
    (void)b, (void)st;
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return MT_OK;
}
static mt_status emu_mem_set(mt_backend *b, mt_devptr d, uint8_t v, size_t n, mt_stream st) {
    (void)b, (void)st;
    memset((void *)(uintptr_t)d, v, n);
    return MT_OK;
}
static mt_status emu_stream_create(mt_backend *b, mt_stream *out) {
    (void)b;
    *out = (mt_stream)malloc(1);
    return *out ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
}
static mt_status emu_stream_destroy(mt_backend *b, mt_stream s) {
    (void)b;
    free(s);
    return MT_OK;
}
static mt_status emu_nothing(mt_backend *b) {
    (void)b;
    return MT_OK;
}
static mt_status emu_stream_sync(mt_backend *b, mt_stream s) {
    (void)s;
    return emu_nothing(b);
}
static mt_status emu_event_create(mt_backend *b, mt_event *out) {
    (void)b;
    *out = (mt_event)calloc(1, sizeof(emu_event));
    return *out ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
}
static mt_status emu_event_destroy(mt_backend *b, mt_event e) {
    (void)b;
    free(e);
    return MT_OK;
}
static mt_status emu_event_record(mt_backend *b, mt_event e, mt_stream s) {
    (void)b, (void)s;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    ((emu_event *)e)->seconds = t.tv_sec + t.tv_nsec * 1e-9;
    return MT_OK;
}
static mt_status emu_event_sync(mt_backend *b, mt_event e) {
    (void)e;
    return emu_nothing(b);
}
static mt_status emu_event_elapsed(mt_backend *b, mt_event s, mt_event e, float *ms) {
    (void)b;
    *ms = (float)((((emu_event *)e)->seconds - ((emu_event *)s)->seconds) * 1e3);
    return MT_OK;
}

/* --- the compiler ----------------------------------------------------------- */

static mt_status emu_compiler_version(mt_backend *b, char *buf, size_t n) {
    snprintf(buf, n, "%s (hip-cpu)", ctx_of(b)->version);
    return MT_OK;
}

static int is_ident(int ch) { return isalnum(ch) || ch == '_'; }

/* Appends to a growing buffer. */
typedef struct text {
    char *s;
    size_t n, cap;
} text;
static int text_add(text *t, const char *p, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t cap = (t->n + n + 1) * 2;
        char *grown = realloc(t->s, cap);
        if (!grown) return 0;
        t->s = grown, t->cap = cap;
    }
    memcpy(t->s + t->n, p, n);
    t->n += n;
    t->s[t->n] = '\0';
    return 1;
}
static int text_str(text *t, const char *p) { return text_add(t, p, strlen(p)); }

#define KERNEL_MARK "mt_emu_kernel_mark_"
#define SHARED_MARK "mt_emu_shared_mark_"

/* Step 1's scan (see the top): the preprocessed text `pre` becomes the
 * source of step 2 in *out, with an entry point per kernel appended. */
static mt_status rewrite_preprocessed(const char *pre, text *out) {
    char kernels[MAX_FUNCTIONS][64];
    int n_kernels = 0;
    const char *p = pre;
    for (;;) {
        const char *k = strstr(p, KERNEL_MARK), *s = strstr(p, SHARED_MARK);
        const char *next = k && (!s || k < s) ? k : s;
        if (!next) break;
        if (next == k) {
            /* kernel: the identifier before the first '(' after the mark */
            const char *paren = strchr(k, '(');
            if (!paren) return mt_fail(MT_ERR_COMPILE, "hip-cpu: a __global__ without a parameter list");
            const char *e = paren;
            while (e > k && isspace((unsigned char)e[-1])) e--;
            const char *b = e;
            while (b > k && is_ident((unsigned char)b[-1])) b--;
            int dup = 0;
            for (int i = 0; i < n_kernels; i++) dup |= strlen(kernels[i]) == (size_t)(e - b) && !strncmp(kernels[i], b, e - b);
            if (!dup) {
                if (n_kernels == MAX_FUNCTIONS || e - b >= 64 || e == b)
                    return mt_fail(MT_ERR_COMPILE, "hip-cpu: too many kernels or a bad kernel name");
                snprintf(kernels[n_kernels++], 64, "%.*s", (int)(e - b), b);
            }
            text_add(out, p, (size_t)(k - p));
            p = k + strlen(KERNEL_MARK);
            continue;
        }
        /* shared: `extern MARK decl name[];` -> pointer to dynamic LDS */
        const char *before = s;
        while (before > p && isspace((unsigned char)before[-1])) before--;
        int is_extern = before - p >= 6 && !strncmp(before - 6, "extern", 6) &&
                        (before - 6 == pre || !is_ident((unsigned char)before[-7]));
        if (!is_extern) {
            text_add(out, p, (size_t)(s - p));
            text_str(out, "static thread_local");
            p = s + strlen(SHARED_MARK);
            continue;
        }
        const char *semi = strchr(s, ';');
        const char *open = semi ? memchr(s, '[', (size_t)(semi - s)) : NULL;
        if (!open) return mt_fail(MT_ERR_COMPILE, "hip-cpu: an extern __shared__ that is not an array");
        const char *e = open;
        while (e > s && isspace((unsigned char)e[-1])) e--;
        const char *b = e;
        while (b > s && is_ident((unsigned char)b[-1])) b--;
        const char *decl = s + strlen(SHARED_MARK);
        text_add(out, p, (size_t)(before - 6 - p));
        text_add(out, decl, (size_t)(b - decl));
        text_str(out, " *const ");
        text_add(out, b, (size_t)(e - b));
        text_str(out, " = mt_emu::dynamic_shared();");
        p = semi + 1;
    }
    text_str(out, p);
    text_str(out, "\n/* entry points written by backend_emu.c */\n");
    for (int i = 0; i < n_kernels; i++) {
        char line[400];
        snprintf(line, sizeof line,
                 "extern \"C\" __attribute__((visibility(\"default\"))) void mt_emu_entry_%.63s(void **args) "
                 "{ mt_emu::invoke(%.63s, args); }\n",
                 kernels[i], kernels[i]);
        text_str(out, line);
    }
    return out->s ? MT_OK : mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
}

static mt_status emu_compile(mt_backend *b, const char *source, const char *source_name, const char *arch,
                             const char *const *options, int n_options, mt_compile_result *out) {
    emu_ctx *c = ctx_of(b);
    int major, minor, stepping;
    mt_status st = mt_parse_gfx_target(arch, &major, &minor, &stepping);
    if (st != MT_OK) return st;
    if (major != 9) return mt_fail(MT_ERR_INVALID_ARGUMENT, "hip-cpu emulates 64-wide gfx9 targets, not %s", arch);
    if (n_options > 200) return mt_fail(MT_ERR_INVALID_ARGUMENT, "too many compile options (%d)", n_options);
    char dir[] = "/tmp/mla-tune-emu-XXXXXX";
    if (!mkdtemp(dir)) return mt_fail(MT_ERR_IO, "cannot make a temporary folder: %s", strerror(errno));
    char src[600], pre[600], src2[600], so[600], log1[600], log2[600], inc[600], target[64];
    snprintf(src, sizeof src, "%s/kernel.cpp", dir);
    snprintf(pre, sizeof pre, "%s/kernel.ii", dir);
    snprintf(src2, sizeof src2, "%s/kernel-host.ii", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    snprintf(log1, sizeof log1, "%s/preprocess.log", dir);
    snprintf(log2, sizeof log2, "%s/compile.log", dir);
    snprintf(inc, sizeof inc, "-I%s", c->include_dir);
    snprintf(target, sizeof target, "-D__%.*s__", (int)strcspn(arch, ":"), arch);
    char *pre_text = NULL, *log_text = NULL;
    text host = {0};
    FILE *f = fopen(src, "w");
    if (!f || fputs(source, f) < 0) {
        if (f) fclose(f);
        st = mt_fail(MT_ERR_IO, "cannot write %s", src);
        goto done;
    }
    fclose(f);
    {
        char *argv[240];
        int n = 0;
        argv[n++] = c->cxx;
        argv[n++] = "-x";
        argv[n++] = "c++";
        argv[n++] = "-std=c++17";
        argv[n++] = "-E";
        argv[n++] = inc;
        argv[n++] = "-D__HIP_PLATFORM_AMD__=1";
        argv[n++] = "-D__GFX9__=1";
        argv[n++] = target;
        for (int i = 0; i < n_options; i++) argv[n++] = (char *)options[i];
        argv[n++] = src;
        argv[n++] = "-o";
        argv[n++] = pre;
        argv[n] = NULL;
        int rc = mt_run_process(argv, log1);
        if (rc != 0) {
            log_text = mt_read_whole_file(log1, NULL);
            st = mt_fail(MT_ERR_COMPILE, "%s failed to preprocess %s for %s on the CPU (exit %d):\n%s", c->cxx,
                         source_name, arch, rc, log_text ? log_text : "");
            goto done;
        }
    }
    pre_text = mt_read_whole_file(pre, NULL);
    if (!pre_text) {
        st = mt_fail(MT_ERR_IO, "cannot read %s", pre);
        goto done;
    }
    st = rewrite_preprocessed(pre_text, &host);
    if (st != MT_OK) goto done;
    f = fopen(src2, "w");
    if (!f || fputs(host.s, f) < 0) {
        if (f) fclose(f);
        st = mt_fail(MT_ERR_IO, "cannot write %s", src2);
        goto done;
    }
    fclose(f);
    {
        /* -O1: a variant compiles in ~2 s and runs fast enough; the
         * emulation's own cost (fiber switches) dominates anyway */
        char *argv[] = {c->cxx, "-x", "c++-cpp-output", "-std=c++17", "-O1", "-fPIC", "-shared",
                        "-fvisibility=hidden", "-Wno-everything", src2, "-o", so, NULL};
        int rc = mt_run_process(argv, log2);
        log_text = mt_read_whole_file(log2, NULL);
        if (rc != 0) {
            st = mt_fail(MT_ERR_COMPILE, "%s failed to compile %s for %s on the CPU (exit %d):\n%s", c->cxx,
                         source_name, arch, rc, log_text ? log_text : "");
            goto done;
        }
    }
    out->code = mt_read_whole_file(so, &out->code_size);
    if (!out->code || out->code_size == 0) {
        st = mt_fail(MT_ERR_COMPILE, "%s wrote no shared object for %s", c->cxx, arch);
        goto done;
    }
    out->log = log_text ? log_text : strdup("");
    log_text = NULL;
done:
    free(pre_text);
    free(log_text);
    free(host.s);
    mt_remove_tree(dir);
    return st;
}

/* --- modules and launches --------------------------------------------------- */

static mt_status emu_module_load(mt_backend *b, const void *code, size_t size, mt_module *out) {
    (void)b;
    char path[] = "/tmp/mla-tune-emu-module-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return mt_fail(MT_ERR_IO, "hip-cpu: cannot make a temporary file: %s", strerror(errno));
    int ok = write(fd, code, size) == (ssize_t)size;
    close(fd);
    void *h = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    const char *why = ok ? (h ? NULL : dlerror()) : "short write";
    unlink(path);
    if (!h) return mt_fail(MT_ERR_VENDOR, "hip-cpu: cannot load the module: %s", why ? why : "?");
    emu_module *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(h);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->handle = h;
    pthread_mutex_init(&m->lock, NULL);
    *out = (mt_module)m;
    return MT_OK;
}

static mt_status emu_module_unload(mt_backend *b, mt_module mod) {
    (void)b;
    emu_module *m = (emu_module *)mod;
    if (m->handle) dlclose(m->handle);
    pthread_mutex_destroy(&m->lock);
    free(m);
    return MT_OK;
}

static mt_status emu_module_function(mt_backend *b, mt_module mod, const char *name, mt_function *out) {
    (void)b;
    emu_module *m = (emu_module *)mod;
    mt_status st = MT_OK;
    pthread_mutex_lock(&m->lock);
    emu_function *f = NULL;
    for (int i = 0; i < m->n_functions && !f; i++)
        if (strcmp(m->functions[i].name, name) == 0) f = &m->functions[i];
    if (!f) {
        char symbol[128];
        snprintf(symbol, sizeof symbol, "mt_emu_entry_%s", name);
        void *entry = dlsym(m->handle, symbol), *launch = dlsym(m->handle, "mt_emu_launch");
        if (!entry || !launch) {
            st = mt_fail(MT_ERR_NOT_FOUND, "kernel '%s' not found in module", name);
        } else if (m->n_functions == MAX_FUNCTIONS) {
            st = mt_fail(MT_ERR_UNSUPPORTED, "hip-cpu: too many kernels in a module");
        } else {
            f = &m->functions[m->n_functions++];
            *(void **)&f->entry = entry;
            *(void **)&f->launch = launch;
            snprintf(f->name, sizeof f->name, "%s", name);
        }
    }
    pthread_mutex_unlock(&m->lock);
    if (f) *out = (mt_function)f;
    return st;
}

static mt_status emu_function_resources(mt_backend *b, mt_function f, mt_kernel_resources *out) {
    (void)b, (void)f;
    mt_kernel_resources_unknown(out);
    out->max_threads = 1024;
    return MT_OK;
}

static mt_status emu_launch(mt_backend *b, mt_function fn, const unsigned grid[3], const unsigned block[3],
                            size_t shared_bytes, mt_stream s, void **args) {
    (void)b, (void)s;
    emu_function *f = (emu_function *)fn;
    mt_emu_launch_desc d = {.entry = f->entry, .shared_bytes = shared_bytes, .args = args};
    memcpy(d.grid, grid, sizeof d.grid);
    memcpy(d.block, block, sizeof d.block);
    if (f->launch(&d) != 0)
        return mt_fail(MT_ERR_VENDOR, "hip-cpu: kernel %s, grid (%u,%u,%u) x block (%u,%u,%u): %s", f->name, grid[0],
                       grid[1], grid[2], block[0], block[1], block[2], d.error);
    return MT_OK;
}

static void emu_close(mt_backend *b) {
    free(b->context);
    b->context = NULL;
}

static const mt_backend_iface emu_iface = {
    .device_count = emu_device_count,
    .device_info = emu_device_info,
    .set_device = emu_set_device,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .copy_to_device = emu_copy_to_device,
    .copy_to_host = emu_copy_to_host,
    .copy_on_device = emu_copy_on_device,
    .mem_set = emu_mem_set,
    .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy,
    .stream_sync = emu_stream_sync,
    .event_create = emu_event_create,
    .event_destroy = emu_event_destroy,
    .event_record = emu_event_record,
    .event_sync = emu_event_sync,
    .event_elapsed = emu_event_elapsed,
    .compiler_version = emu_compiler_version,
    .compile = emu_compile,
    .module_load = emu_module_load,
    .module_unload = emu_module_unload,
    .module_function = emu_module_function,
    .function_resources = emu_function_resources,
    .launch = emu_launch,
    .synchronize = emu_nothing,
    .close = emu_close,
};

mt_status mt_backend_emu_open(mt_backend *b) {
    emu_ctx *c = calloc(1, sizeof *c);
    if (!c) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    b->name = "hip-cpu";
    const char *arch = getenv("MLA_TUNE_EMU_ARCH");
    snprintf(c->arch, sizeof c->arch, "%s", arch && arch[0] ? arch : "gfx942");
    int major, minor, stepping;
    if (mt_parse_gfx_target(c->arch, &major, &minor, &stepping) != MT_OK || major != 9) {
        mt_status st = mt_fail(MT_ERR_INVALID_ARGUMENT, "MLA_TUNE_EMU_ARCH='%s': hip-cpu emulates gfx9 targets "
                               "(gfx90a, gfx942, gfx950)", c->arch);
        free(c);
        return st;
    }
    /* the emulation header */
    const char *inc = getenv("MLA_TUNE_EMU_INCLUDE");
    snprintf(c->include_dir, sizeof c->include_dir, "%s", inc && inc[0] ? inc : MT_EMU_INCLUDE_DIR);
    char probe[700];
    snprintf(probe, sizeof probe, "%s/hip/hip_runtime.h", c->include_dir);
    if (access(probe, R_OK) != 0) {
        mt_append(b->looked_for, sizeof b->looked_for, "the HIP emulation header %s (set MLA_TUNE_EMU_INCLUDE)",
                  probe);
        mt_status st = mt_fail(MT_ERR_NO_BACKEND, "hip-cpu not usable: no %s", probe);
        free(c);
        return st;
    }
    /* clang++ (the header needs clang's vector extensions and _Float16) */
    const char *override = getenv("MLA_TUNE_EMU_CXX");
    const char *candidates[] = {override ? override : "clang++-22", "clang++-21", "clang++-20", "clang++-19",
                                "clang++"};
    int n = override ? 1 : 5;
    char dir[] = "/tmp/mla-tune-emu-XXXXXX";
    if (!mkdtemp(dir)) {
        free(c);
        return mt_fail(MT_ERR_IO, "cannot make a temporary folder: %s", strerror(errno));
    }
    char log[600];
    snprintf(log, sizeof log, "%s/version.txt", dir);
    for (int i = 0; i < n && !c->cxx[0]; i++) {
        char number[64] = "";
        int major = mt_clang_version(candidates[i], log, number, sizeof number);
        if (major >= 17) {
            snprintf(c->cxx, sizeof c->cxx, "%s", candidates[i]);
            snprintf(c->version, sizeof c->version, "clang++-%s", number);
        } else {
            mt_append(b->looked_for, sizeof b->looked_for, "%s%s (%s)", b->looked_for[0] ? ", " : "", candidates[i],
                      major >= 0 ? "not clang 17 or newer" : "not runnable");
        }
    }
    unlink(log);
    rmdir(dir);
    if (!c->cxx[0]) {
        mt_status st = mt_fail(MT_ERR_NO_BACKEND, "hip-cpu not usable: no clang++ (tried %s)", b->looked_for);
        free(c);
        return st;
    }
    b->context = c;
    b->iface = &emu_iface;
    b->has_driver = 1;
    b->has_compiler = 1;
    return MT_OK;
}
