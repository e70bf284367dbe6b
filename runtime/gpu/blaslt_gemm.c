/*
 * blaslt_gemm.c - a row-major strided-batched GEMM through cuBLASLt
 * (blaslt_gemm.h), called through the loader's pointers with prototypes
 * written here: no vendor header is needed to build.
 */
#include "blaslt_gemm.h"

#include <string.h>

/* cuBLASLt's values (cublasLt.h, cublas_api.h, library_types.h) */
enum {
    CUDA_R_16F = 2,
    CUDA_R_16BF = 14,
    CUDA_R_32F = 0,
    COMPUTE_32F = 68,                    /* CUBLAS_COMPUTE_32F */
    LAYOUT_BATCH_COUNT = 5,              /* CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: int32 */
    LAYOUT_STRIDED_BATCH_OFFSET = 6,     /* CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: int64 */
    PREF_MAX_WORKSPACE_BYTES = 1,        /* CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: uint64 */
};

typedef struct heuristic_result { /* cublasLtMatmulHeuristicResult_t */
    uint64_t algo[8];
    size_t workspace_size;
    int state;
    float waves;
    int reserved[4];
} heuristic_result;

typedef int (*create_fn)(void **handle);
typedef int (*destroy_fn)(void *handle);
typedef int (*desc_create_fn)(void **desc, int compute, int scale_type);
typedef int (*desc_destroy_fn)(void *desc);
typedef int (*layout_create_fn)(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
typedef int (*layout_destroy_fn)(void *layout);
typedef int (*layout_set_fn)(void *layout, int attr, const void *buf, size_t size);
typedef int (*pref_create_fn)(void **pref);
typedef int (*pref_destroy_fn)(void *pref);
typedef int (*pref_set_fn)(void *pref, int attr, const void *buf, size_t size);
typedef int (*heuristic_fn)(void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref, int requested,
                            heuristic_result *results, int *returned);
typedef int (*matmul_fn)(void *handle, void *desc, const void *alpha, const void *a, void *la, const void *b, void *lb,
                         const void *beta, const void *c, void *lc, void *d, void *ld, const void *algo,
                         void *workspace, size_t workspace_bytes, void *stream);

#define FN(g, type, entry) ((type)(g)->lt->fn[entry])

static mt_status vendor(const mt_gemm *g, int entry, int status) {
    return mt_fail(MT_ERR_VENDOR, "%s failed: status %d (%s)", mt_blaslt_entry_name(g->lt->vendor, entry), status,
                   g->lt->library);
}

static mt_status check_shape(const mt_gemm_shape *s) {
    if (s->m < 1 || s->n < 1 || s->k < 1 || s->batch < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "gemm: m %d, n %d, k %d, batch %d: each must be >= 1", s->m, s->n,
                       s->k, s->batch);
    if (s->lda < s->k || s->ldb < s->n || s->ldc < s->n)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "gemm: row strides lda %lld, ldb %lld, ldc %lld shorter than the rows (k %d, n %d, n %d)",
                       (long long)s->lda, (long long)s->ldb, (long long)s->ldc, s->k, s->n, s->n);
    if (s->type != MT_GEMM_BF16 && s->type != MT_GEMM_F16)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "gemm: element type %d (bf16 or fp16 only)", (int)s->type);
    return MT_OK;
}

/* A column-major layout of rows x cols, leading dimension ld, batched. */
static mt_status make_layout(mt_gemm *g, int type, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride,
                             void **out) {
    int rc = FN(g, layout_create_fn, MT_BLASLT_MATRIX_LAYOUT_CREATE)(out, type, rows, cols, ld);
    if (rc) return *out = NULL, vendor(g, MT_BLASLT_MATRIX_LAYOUT_CREATE, rc);
    if (g->shape.batch == 1) return MT_OK;
    int32_t count = g->shape.batch;
    rc = FN(g, layout_set_fn, MT_BLASLT_MATRIX_LAYOUT_SET_ATTRIBUTE)(*out, LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (!rc)
        rc = FN(g, layout_set_fn, MT_BLASLT_MATRIX_LAYOUT_SET_ATTRIBUTE)(*out, LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                                          sizeof stride);
    return rc ? vendor(g, MT_BLASLT_MATRIX_LAYOUT_SET_ATTRIBUTE, rc) : MT_OK;
}

mt_status mt_gemm_create(const mt_blaslt *lt, const mt_gemm_shape *s, mt_devptr workspace, size_t workspace_bytes,
                         mt_gemm *out) {
    memset(out, 0, sizeof *out);
    if (!lt || !lt->lib) return mt_fail(MT_ERR_INVALID_ARGUMENT, "gemm: the BLAS library is not open");
    if (lt->vendor != MT_BLASLT_CUBLASLT)
        return mt_fail(MT_ERR_UNSUPPORTED, "gemm: %s's enumerations are not mapped yet (blaslt_gemm.h)",
                       mt_blaslt_vendor_name(lt->vendor));
    mt_status st = check_shape(s);
    if (st != MT_OK) return st;
    out->lt = lt, out->shape = *s, out->workspace = workspace, out->workspace_bytes = workspace_bytes;
    int rc = FN(out, create_fn, MT_BLASLT_CREATE)(&out->handle);
    if (rc) return out->handle = NULL, vendor(out, MT_BLASLT_CREATE, rc);
    rc = FN(out, desc_create_fn, MT_BLASLT_MATMUL_DESC_CREATE)(&out->desc, COMPUTE_32F, CUDA_R_32F);
    if (rc) {
        out->desc = NULL;
        st = vendor(out, MT_BLASLT_MATMUL_DESC_CREATE, rc);
    }
    /* C^T (n x m) = B^T (n x k) A^T (k x m), each the row-major matrix's own bytes */
    const int type = s->type == MT_GEMM_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    if (st == MT_OK) st = make_layout(out, type, (uint64_t)s->n, (uint64_t)s->k, s->ldb, s->stride_b, &out->layout[0]);
    if (st == MT_OK) st = make_layout(out, type, (uint64_t)s->k, (uint64_t)s->m, s->lda, s->stride_a, &out->layout[1]);
    if (st == MT_OK) st = make_layout(out, type, (uint64_t)s->n, (uint64_t)s->m, s->ldc, s->stride_c, &out->layout[2]);
    void *pref = NULL;
    if (st == MT_OK && (rc = FN(out, pref_create_fn, MT_BLASLT_PREFERENCE_CREATE)(&pref)) != 0)
        pref = NULL, st = vendor(out, MT_BLASLT_PREFERENCE_CREATE, rc);
    uint64_t ws = workspace_bytes;
    if (st == MT_OK &&
        (rc = FN(out, pref_set_fn, MT_BLASLT_PREFERENCE_SET_ATTRIBUTE)(pref, PREF_MAX_WORKSPACE_BYTES, &ws,
                                                                        sizeof ws)) != 0)
        st = vendor(out, MT_BLASLT_PREFERENCE_SET_ATTRIBUTE, rc);
    heuristic_result r;
    int found = 0;
    memset(&r, 0, sizeof r);
    if (st == MT_OK) {
        rc = FN(out, heuristic_fn, MT_BLASLT_ALGO_GET_HEURISTIC)(out->handle, out->desc, out->layout[0],
                                                                out->layout[1], out->layout[2], out->layout[2], pref,
                                                                1, &r, &found);
        if (rc) st = vendor(out, MT_BLASLT_ALGO_GET_HEURISTIC, rc);
        else if (found < 1 || r.state != 0)
            st = mt_fail(MT_ERR_UNSUPPORTED, "gemm: %s has no algorithm for m %d n %d k %d batch %d %s (state %d)",
                         lt->library, s->m, s->n, s->k, s->batch, s->type == MT_GEMM_BF16 ? "bf16" : "fp16", r.state);
    }
    if (pref) FN(out, pref_destroy_fn, MT_BLASLT_PREFERENCE_DESTROY)(pref);
    if (st != MT_OK) {
        mt_gemm_destroy(out);
        return st;
    }
    memcpy(out->algo, r.algo, sizeof out->algo);
    return MT_OK;
}

mt_status mt_gemm_run(const mt_gemm *g, mt_devptr a, mt_devptr b, mt_devptr c, mt_stream st) {
    const float one = 1.0f, zero = 0.0f;
    int rc = FN(g, matmul_fn, MT_BLASLT_MATMUL)(g->handle, g->desc, &one, (const void *)(uintptr_t)b, g->layout[0],
                                                (const void *)(uintptr_t)a, g->layout[1], &zero,
                                                (const void *)(uintptr_t)c, g->layout[2], (void *)(uintptr_t)c,
                                                g->layout[2], g->algo, (void *)(uintptr_t)g->workspace,
                                                g->workspace_bytes, (void *)st);
    return rc ? vendor(g, MT_BLASLT_MATMUL, rc) : MT_OK;
}

void mt_gemm_destroy(mt_gemm *g) {
    if (!g || !g->lt) return;
    for (int i = 0; i < 3; i++)
        if (g->layout[i]) FN(g, layout_destroy_fn, MT_BLASLT_MATRIX_LAYOUT_DESTROY)(g->layout[i]);
    if (g->desc) FN(g, desc_destroy_fn, MT_BLASLT_MATMUL_DESC_DESTROY)(g->desc);
    if (g->handle) FN(g, destroy_fn, MT_BLASLT_DESTROY)(g->handle);
    memset(g, 0, sizeof *g);
}

double mt_gemm_flops(const mt_gemm_shape *s) { return 2.0 * s->m * s->n * s->k * s->batch; }
