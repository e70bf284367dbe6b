/*
 * blaslt.h - the vendor's matrix-multiply library, loaded at run time like
 * the other vendor libraries (dlopen, never linked): cuBLASLt on NVIDIA,
 * hipBLASLt on AMD.  Issue 29's crossover measures the MLA forms end to
 * end, and both have GEMMs around the attention (q absorption and the
 * output projection for MQA, the context decompression for MHA); those go
 * through the vendor's library, found here.
 *
 * This file is the loader: which library, from where, with every entry
 * point the GEMMs will call present.  A host without it gets a clear
 * MT_ERR_NO_BACKEND naming the library and every place looked, and the
 * rest of mla-tune runs as before (the crossover cannot be measured there).
 *
 * Looked for, in order (the first that loads with every entry point):
 *   cuBLASLt   $MLA_TUNE_CUBLASLT (alone when set), libcublasLt.so.13,
 *              libcublasLt.so.12, libcublasLt.so,
 *              /usr/local/cuda/lib64/libcublasLt.so
 *   hipBLASLt  $MLA_TUNE_HIPBLASLT (alone when set), libhipblaslt.so.1,
 *              libhipblaslt.so.0, libhipblaslt.so, /opt/rocm/lib/libhipblaslt.so
 */
#ifndef MT_BLASLT_H
#define MT_BLASLT_H

#include <stddef.h>

#include "runtime/base/error.h"

typedef enum mt_blaslt_vendor { MT_BLASLT_CUBLASLT, MT_BLASLT_HIPBLASLT } mt_blaslt_vendor;

/* The entry points a GEMM needs, in the vendors' shared order (hipBLASLt
 * mirrors cuBLASLt's API name for name: cublasLt* / hipblasLt*). */
enum {
    MT_BLASLT_CREATE,
    MT_BLASLT_DESTROY,
    MT_BLASLT_MATMUL,
    MT_BLASLT_MATMUL_DESC_CREATE,
    MT_BLASLT_MATMUL_DESC_DESTROY,
    MT_BLASLT_MATMUL_DESC_SET_ATTRIBUTE,
    MT_BLASLT_MATRIX_LAYOUT_CREATE,
    MT_BLASLT_MATRIX_LAYOUT_DESTROY,
    MT_BLASLT_PREFERENCE_CREATE,
    MT_BLASLT_PREFERENCE_DESTROY,
    MT_BLASLT_PREFERENCE_SET_ATTRIBUTE,
    MT_BLASLT_ALGO_GET_HEURISTIC,
    MT_BLASLT_MATRIX_LAYOUT_SET_ATTRIBUTE,
    MT_BLASLT_N_ENTRIES
};

typedef struct mt_blaslt {
    mt_blaslt_vendor vendor;
    void *lib;
    char library[256];                   /* the name or path that loaded */
    void *fn[MT_BLASLT_N_ENTRIES];       /* cast to the vendor's prototypes by the caller */
    size_t version;                      /* cublasLtGetVersion() (130100: 13.1.0); 0 where the vendor needs a
                                            GPU handle to say (hipBLASLt) */
} mt_blaslt;

/* "cuBLASLt" / "hipBLASLt" */
const char *mt_blaslt_vendor_name(mt_blaslt_vendor v);

/* The entry point's name for a vendor ("cublasLtMatmul"). */
const char *mt_blaslt_entry_name(mt_blaslt_vendor v, int entry);

/* Loads the vendor's library into *out (see the list above).  Absent, or
 * lacking an entry point: MT_ERR_NO_BACKEND, the message naming the
 * library, every name tried and why each failed, and that the crossover
 * needs it; *out is left closed. */
mt_status mt_blaslt_open(mt_blaslt_vendor v, mt_blaslt *out);
/* Forgets *lt; the library stays loaded for the process (blaslt.c). */
void mt_blaslt_close(mt_blaslt *lt);

#endif
