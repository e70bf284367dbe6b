/*
 * blaslt.c - loading cuBLASLt / hipBLASLt at run time (blaslt.h).
 */
#define _GNU_SOURCE
#include "blaslt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* the entries' names after the vendor's prefix, in the enum's order */
static const char *const suffixes[MT_BLASLT_N_ENTRIES] = {
    "Create", "Destroy", "Matmul", "MatmulDescCreate", "MatmulDescDestroy", "MatmulDescSetAttribute",
    "MatrixLayoutCreate", "MatrixLayoutDestroy", "MatmulPreferenceCreate", "MatmulPreferenceDestroy",
    "MatmulPreferenceSetAttribute", "MatmulAlgoGetHeuristic", "MatrixLayoutSetAttribute"};

const char *mt_blaslt_vendor_name(mt_blaslt_vendor v) { return v == MT_BLASLT_CUBLASLT ? "cuBLASLt" : "hipBLASLt"; }

const char *mt_blaslt_entry_name(mt_blaslt_vendor v, int entry) {
    static _Thread_local char name[64];
    if (entry < 0 || entry >= MT_BLASLT_N_ENTRIES) return "?";
    snprintf(name, sizeof name, "%s%s", v == MT_BLASLT_CUBLASLT ? "cublasLt" : "hipblasLt", suffixes[entry]);
    return name;
}

mt_status mt_blaslt_open(mt_blaslt_vendor v, mt_blaslt *out) {
    memset(out, 0, sizeof *out);
    out->vendor = v;
    const int cuda = v == MT_BLASLT_CUBLASLT;
    const char *override = getenv(cuda ? "MLA_TUNE_CUBLASLT" : "MLA_TUNE_HIPBLASLT");
    const char *cu_names[] = {override ? override : "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                              "/usr/local/cuda/lib64/libcublasLt.so"};
    const char *hip_names[] = {override ? override : "libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so",
                               "/opt/rocm/lib/libhipblaslt.so"};
    const char *const *names = cuda ? cu_names : hip_names;
    char looked[2048] = "";
    /* the first that loads with every entry point: a library of the wrong
     * kind at an earlier name does not hide a good one */
    for (int i = 0; i < (override ? 1 : 4); i++) {
        void *lib = mt_dlopen_first(&names[i], 1, looked, sizeof looked);
        if (!lib) continue;
        int missing = -1;
        for (int e = 0; e < MT_BLASLT_N_ENTRIES && missing < 0; e++)
            if (!(out->fn[e] = dlsym(lib, mt_blaslt_entry_name(v, e)))) missing = e;
        if (missing >= 0) {
            snprintf(looked + strlen(looked), sizeof looked - strlen(looked), "%s%s (loaded, but lacks %s)",
                     looked[0] ? ", " : "", names[i], mt_blaslt_entry_name(v, missing));
            dlclose(lib);
            memset(out->fn, 0, sizeof out->fn);
            continue;
        }
        out->lib = lib;
        snprintf(out->library, sizeof out->library, "%s", names[i]);
        if (cuda) {
            size_t (*get_version)(void) = (size_t (*)(void))dlsym(lib, "cublasLtGetVersion");
            out->version = get_version ? get_version() : 0;
        }
        return MT_OK;
    }
    return mt_fail(MT_ERR_NO_BACKEND, "%s is not available (looked for %s); the MHA/MQA crossover's GEMMs need it%s",
                   mt_blaslt_vendor_name(v), looked,
                   override ? "" : cuda ? " (set MLA_TUNE_CUBLASLT to its path)" : " (set MLA_TUNE_HIPBLASLT to its path)");
}

/* The library is not dlclosed, as the backends keep theirs: its global
 * state (libstdc++'s, loaded with it) outlives any one user, and a later
 * open finds it loaded. */
void mt_blaslt_close(mt_blaslt *lt) {
    if (!lt) return;
    memset(lt, 0, sizeof *lt);
}
