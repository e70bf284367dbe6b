/*
 * blaslt_gemm.h - one GEMM shape through the vendor's library (blaslt.h):
 * what the MHA/MQA crossover (tuner/cmd_crossover.c) runs around the
 * attention kernels, as an engine would (q absorption and the output
 * projection per head for MQA, the context's decompression for MHA).
 *
 * Row-major and strided-batched, the layouts of torch tensors:
 *   C[i] (m x n, row stride ldc) = A[i] (m x k, lda) x B[i] (k x n, ldb)
 * for i < batch, A[i] at A + i * stride_a elements (and B, C alike); one
 * 16-bit type for A, B and C, fp32 accumulation.  cuBLASLt is column-major,
 * so this asks it for C^T = B^T A^T, which are the same bytes.
 *
 * The enumerations are cuBLASLt's (cublasLt.h of CUDA 12-13: the values
 * are its ABI); hipBLASLt's are not mapped yet and are refused naming it.
 */
#ifndef MT_BLASLT_GEMM_H
#define MT_BLASLT_GEMM_H

#include <stdint.h>

#include "runtime/gpu/backend.h"
#include "runtime/gpu/blaslt.h"

typedef enum mt_gemm_type { MT_GEMM_BF16, MT_GEMM_F16 } mt_gemm_type;

typedef struct mt_gemm_shape {
    int m, n, k, batch;
    int64_t lda, ldb, ldc;                /* row strides, elements */
    int64_t stride_a, stride_b, stride_c; /* between batch entries, elements (any, with batch 1) */
    mt_gemm_type type;                    /* of A, B and C */
} mt_gemm_shape;

typedef struct mt_gemm {
    const mt_blaslt *lt;
    void *handle;                 /* cublasLtHandle_t */
    void *desc, *layout[3];       /* the operation; B^T, A^T and C^T's layouts */
    uint64_t algo[8];             /* cublasLtMatmulAlgo_t: the library's first choice for the shape */
    mt_devptr workspace;
    size_t workspace_bytes;
    mt_gemm_shape shape;
} mt_gemm;

/* Describes shape s and asks the library for its algorithm, allowed
 * workspace_bytes of scratch at `workspace` (32 MiB is plenty on Hopper).
 * The handle is created here (a GPU context must be current).  Errors name
 * the failing call and its status. */
mt_status mt_gemm_create(const mt_blaslt *lt, const mt_gemm_shape *s, mt_devptr workspace, size_t workspace_bytes,
                         mt_gemm *out);

/* Queues C = A x B on stream st. */
mt_status mt_gemm_run(const mt_gemm *g, mt_devptr a, mt_devptr b, mt_devptr c, mt_stream st);

void mt_gemm_destroy(mt_gemm *g);

/* 2 m n k batch */
double mt_gemm_flops(const mt_gemm_shape *s);

#endif
