/*
 * backend_clang.c - a compile-only backend for AMD targets that runs clang's
 * HIP compiler as a subprocess (offloading the device code only).
 *
 * Why it exists: hiprtc comes with a ROCm install, which our CI and
 * development hosts do not have.  Debian 12 ships clang-19 (gfx942) and, in
 * its security suite, clang-22 (gfx942 and gfx950), the HIP 5.2 headers and
 * the ROCm 5.2 device-library bitcode; with those, every kernel variant can
 * be compiled for gfx942 and gfx950 and its register and LDS use read from
 * clang's resource remarks.  This proves the source is valid HIP for the
 * target and what it costs in resources; it does not prove it runs (see
 * ../shared/AMD-COMPILE.md).  On a ROCm host the "hip" backend (hiprtc) is
 * used instead.
 *
 * The newest clang found is used (gfx950 needs LLVM 20+).  clang 22 no
 * longer defines __AMDGCN_WAVEFRONT_SIZE; our kernels do not need it
 * (kernels/prelude.h takes the width from the target macros), but the
 * Debian 5.2 HIP headers' warp functions do, so for such a clang it is
 * defined on the command line (64 for gfx9, 32 for gfx10+).
 *
 * Devices, memory and launches are left NULL: the wrappers report them as
 * unsupported by "hip-clang".
 *
 * Environment:
 *   MLA_TUNE_HIP_CLANG     the clang to run (default: the first of clang-22,
 *                          clang-21, clang-20, clang-19, clang that runs)
 *   MLA_TUNE_HIP_INCLUDE   folder holding hip/hip_runtime.h (default /usr/include)
 *   MLA_TUNE_ROCM_BITCODE  folder of the device-library .bc files
 */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct clang_ctx {
    char clang[256];
    char include_dir[512];
    char bitcode_dir[512];
    char version[128];
    int defines_wavefront;   /* clang defines __AMDGCN_WAVEFRONT_SIZE itself */
} clang_ctx;

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static int find_clang(clang_ctx *c, char *looked_for, size_t size) {
    const char *override = getenv("MLA_TUNE_HIP_CLANG");
    const char *candidates[] = {override ? override : "clang-22", "clang-21", "clang-20", "clang-19", "clang"};
    int n = override ? 1 : 5;
    char tmpdir[] = "/tmp/mla-tune-clang-XXXXXX";
    if (!mkdtemp(tmpdir)) return 0;
    char log[600];
    snprintf(log, sizeof log, "%s/version.txt", tmpdir);
    int found = 0;
    for (int i = 0; i < n && !found; i++) {
        char number[64] = "";
        int major = mt_clang_version(candidates[i], log, number, sizeof number);
        if (major < 0) {
            mt_append(looked_for, size, "%s%s (not runnable)", looked_for[0] ? ", " : "", candidates[i]);
        } else if (major >= 17) { /* clang 14 and older do not know gfx942 */
            snprintf(c->clang, sizeof c->clang, "%s", candidates[i]);
            snprintf(c->version, sizeof c->version, "clang-%s", number);
            found = 1;
        } else {
            mt_append(looked_for, size, "%s%s (version %d too old, need >= 17)", looked_for[0] ? ", " : "",
                      candidates[i], major);
        }
    }
    if (found) {
        /* does this clang still define the wavefront macro the old HIP headers use? */
        char *argv[] = {c->clang, "-x", "hip", "--offload-arch=gfx942", "--cuda-device-only", "-nogpulib",
                        "-nogpuinc", "-dM", "-E", "/dev/null", NULL};
        char *text = mt_run_process(argv, log) == 0 ? mt_read_whole_file(log, NULL) : NULL;
        c->defines_wavefront = text && strstr(text, "#define __AMDGCN_WAVEFRONT_SIZE ") != NULL;
        free(text);
    }
    unlink(log);
    rmdir(tmpdir);
    return found;
}

static int find_dirs(clang_ctx *c, char *looked_for, size_t size) {
    const char *inc = getenv("MLA_TUNE_HIP_INCLUDE");
    const char *incs[] = {inc ? inc : "/usr/include", "/opt/rocm/include"};
    for (int i = 0; i < 2 && !c->include_dir[0]; i++) {
        char probe[600];
        snprintf(probe, sizeof probe, "%s/hip/hip_runtime.h", incs[i]);
        if (file_exists(probe)) snprintf(c->include_dir, sizeof c->include_dir, "%s", incs[i]);
    }
    if (!c->include_dir[0]) {
        mt_append(looked_for, size, "%ship/hip_runtime.h under %s, /opt/rocm/include (install libamdhip64-dev)",
                  looked_for[0] ? ", " : "", incs[0]);
        return 0;
    }
    const char *bc = getenv("MLA_TUNE_ROCM_BITCODE");
    const char *bcs[] = {bc ? bc : "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/opt/rocm/amdgcn/bitcode",
                         "/usr/lib/amdgcn/bitcode"};
    for (int i = 0; i < 3 && !c->bitcode_dir[0]; i++) {
        char probe[600];
        snprintf(probe, sizeof probe, "%s/ocml.bc", bcs[i]);
        if (file_exists(probe)) snprintf(c->bitcode_dir, sizeof c->bitcode_dir, "%s", bcs[i]);
    }
    if (!c->bitcode_dir[0]) {
        mt_append(looked_for, size, "%socml.bc under %s (install rocm-device-libs)", looked_for[0] ? ", " : "",
                  bcs[0]);
        return 0;
    }
    return 1;
}

static mt_status clang_compiler_version(mt_backend *b, char *buf, size_t n) {
    clang_ctx *c = b->context;
    snprintf(buf, n, "%s", c->version);
    return MT_OK;
}

static mt_status clang_compile(mt_backend *b, const char *source, const char *source_name,
                               const char *arch, const char *const *options, int n_options,
                               mt_compile_result *out) {
    clang_ctx *c = b->context;
    if (strncmp(arch, "gfx", 3) != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "clang HIP backend cannot compile for '%s'", arch);
    /* The 5.2 device libraries lack an ISA file for newer chips (gfx942,
     * gfx950); the nearest lower one of the same major version carries the
     * settings that matter to compilation here (see AMD-COMPILE.md). */
    int major, minor, stepping;
    if (mt_parse_gfx_target(arch, &major, &minor, &stepping) != MT_OK) return MT_ERR_INVALID_ARGUMENT;
    char isa_file[700] = "";
    for (int mi = minor; mi >= 0 && !isa_file[0]; mi--)
        for (int st = mi == minor ? stepping : 15; st >= 0; st--) {
            char probe[700];
            snprintf(probe, sizeof probe, "%s/oclc_isa_version_%d%x%x.bc", c->bitcode_dir, major, mi, st);
            if (file_exists(probe)) {
                snprintf(isa_file, sizeof isa_file, "%s", probe);
                break;
            }
        }
    if (!isa_file[0])
        return mt_fail(MT_ERR_COMPILE, "no oclc_isa_version bitcode for gfx%d at or below %s in %s", major, arch,
                       c->bitcode_dir);

    char dir[] = "/tmp/mla-tune-hip-XXXXXX";
    if (!mkdtemp(dir)) return mt_fail(MT_ERR_IO, "cannot make a temporary folder: %s", strerror(errno));
    char src_path[600], obj_path[600], log_path[600], rocm[600], path[700];
    snprintf(src_path, sizeof src_path, "%s/%s", dir, "kernel.hip");
    snprintf(obj_path, sizeof obj_path, "%s/kernel.o", dir);
    snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
    /* a "ROCm path" that clang accepts: include/ and bin/.hipVersion */
    snprintf(rocm, sizeof rocm, "%s/rocm", dir);
    mkdir(rocm, 0700);
    snprintf(path, sizeof path, "%s/include", rocm);
    int ok = symlink(c->include_dir, path) == 0;
    snprintf(path, sizeof path, "%s/bin", rocm);
    ok = ok && mkdir(path, 0700) == 0;
    snprintf(path, sizeof path, "%s/bin/.hipVersion", rocm);
    FILE *f = ok ? fopen(path, "w") : NULL;
    if (f) {
        fputs("HIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=3\n", f);
        fclose(f);
    }
    f = fopen(src_path, "w");
    if (f) {
        fputs(source, f);
        fclose(f);
    }
    mt_status st = MT_OK;
    if (!f) {
        st = mt_fail(MT_ERR_IO, "cannot write %s", src_path);
        goto done;
    }
    {
        const char *const libs[] = {"hip", "ockl", "ocml", "opencl", NULL /* isa */,
                                           "oclc_abi_version_400",
                                           major >= 10 ? "oclc_wavefrontsize64_off" : "oclc_wavefrontsize64_on",
                                           "oclc_daz_opt_off", "oclc_finite_only_off",
                                           "oclc_unsafe_math_off", "oclc_correctly_rounded_sqrt_on"};
        enum { NLIBS = 11, MAXARGS = 64 + 4 * NLIBS };
        _Static_assert(sizeof libs / sizeof libs[0] == NLIBS, "NLIBS");
        if (n_options > 64 - 20) {
            st = mt_fail(MT_ERR_INVALID_ARGUMENT, "too many compile options (%d)", n_options);
            goto done;
        }
        char lib_paths[NLIBS][700];
        char arch_opt[64], rocm_opt[700], wave_opt[64];
        char *argv[MAXARGS];
        int n = 0;
        snprintf(arch_opt, sizeof arch_opt, "--offload-arch=%s", arch);
        snprintf(rocm_opt, sizeof rocm_opt, "--rocm-path=%s", rocm);
        argv[n++] = c->clang;
        argv[n++] = "-x";
        argv[n++] = "hip";
        argv[n++] = arch_opt;
        argv[n++] = "--cuda-device-only";
        argv[n++] = "--no-gpu-bundle-output";
        argv[n++] = rocm_opt;
        argv[n++] = "-nogpulib";
        argv[n++] = "-std=c++17";
        argv[n++] = "-O3";
        argv[n++] = "-Rpass-analysis=kernel-resource-usage";
        if (!c->defines_wavefront) {
            /* for the 5.2 headers' own warp functions only (see the top) */
            snprintf(wave_opt, sizeof wave_opt, "-D__AMDGCN_WAVEFRONT_SIZE=%d", major >= 10 ? 32 : 64);
            argv[n++] = wave_opt;
        }
        for (int i = 0; i < n_options; i++) argv[n++] = (char *)options[i];
        argv[n++] = "-c";
        argv[n++] = src_path;
        argv[n++] = "-o";
        argv[n++] = obj_path;
        for (int i = 0; i < NLIBS; i++) {
            if (libs[i])
                snprintf(lib_paths[i], sizeof lib_paths[i], "%s/%s.bc", c->bitcode_dir, libs[i]);
            else
                snprintf(lib_paths[i], sizeof lib_paths[i], "%s", isa_file);
            argv[n++] = "-Xclang";
            argv[n++] = "-mlink-builtin-bitcode";
            argv[n++] = "-Xclang";
            argv[n++] = lib_paths[i];
        }
        argv[n] = NULL;
        int rc = mt_run_process(argv, log_path);
        out->log = mt_read_whole_file(log_path, NULL);
        if (!out->log) out->log = strdup("");
        if (rc != 0) {
            st = mt_fail(MT_ERR_COMPILE, "%s failed to compile %s for %s (exit %d):\n%s", c->clang,
                         source_name, arch, rc, out->log ? out->log : "");
            goto done;
        }
        out->code = mt_read_whole_file(obj_path, &out->code_size);
        if (!out->code || out->code_size == 0)
            st = mt_fail(MT_ERR_COMPILE, "%s wrote no code object for %s", c->clang, arch);
    }
done:
    mt_remove_tree(dir);
    return st;
}

/* clang -Rpass-analysis=kernel-resource-usage writes, per kernel:
 *   remark: Function Name: NAME
 *   remark:     VGPRs: 7
 *   remark:     SGPRs: 18
 *   remark:     ScratchSize [bytes/lane]: 0
 *   remark:     VGPRs Spill: 0
 *   remark:     LDS Size [bytes/block]: 1024 */
static void clang_parse_resources(mt_backend *b, const char *log, const char *kernel,
                                  mt_kernel_resources *out) {
    (void)b;
    char marker[300];
    snprintf(marker, sizeof marker, "Function Name: %s ", kernel);
    const char *p = strstr(log, marker);
    if (!p) return;
    const char *end = strstr(p + 1, "Function Name:");
    struct { const char *key; int *dst; } fields[] = {
        {"VGPRs: ", &out->registers},
        {"SGPRs: ", &out->scalar_registers},
        {"ScratchSize [bytes/lane]: ", &out->local_bytes},
        {"VGPRs Spill: ", &out->spill_stores},
        {"LDS Size [bytes/block]: ", &out->shared_bytes},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *q = strstr(p, fields[i].key);
        if (q && (!end || q < end)) *fields[i].dst = atoi(q + strlen(fields[i].key));
    }
}

static void clang_close(mt_backend *b) {
    free(b->context);
    b->context = NULL;
}

static const mt_backend_iface clang_iface = {
    .compiler_version = clang_compiler_version,
    .compile = clang_compile,
    .parse_resources = clang_parse_resources,
    .close = clang_close,
};

mt_status mt_backend_clang_open(mt_backend *b) {
    clang_ctx *c = calloc(1, sizeof *c);
    if (!c) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    b->name = "hip-clang";
    if (!find_clang(c, b->looked_for, sizeof b->looked_for) ||
        !find_dirs(c, b->looked_for, sizeof b->looked_for)) {
        mt_status st = mt_fail(MT_ERR_NO_BACKEND, "offline HIP compiler not usable (tried %s)", b->looked_for);
        free(c);
        return st;
    }
    b->context = c;
    b->iface = &clang_iface;
    b->has_compiler = 1;
    return MT_OK;
}
