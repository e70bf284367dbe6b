/*
 * GPU test (label "gpu"): the crossover's GEMMs (runtime/gpu/blaslt_gemm.h)
 * through cuBLASLt against a CPU product, on the layouts the crossover
 * uses: per-head batches interleaved in the rows (q [sq, N, 128] times a
 * weight per head, written into a wider row), and one plain product
 * reading a column slice of wider rows (the latent cache's first 512 of
 * 576 columns).  A layout mapped wrong (row- for column-major, a stride
 * in bytes for elements, the operands swapped) fails here.  Also the
 * shape checks, which need no GPU.  Skipped without a GPU or cuBLASLt.
 *
 * Pass: every element within 1e-2 relative (of the row's largest) of the
 * fp32 product of the same bf16 / fp16 inputs, and the padding columns
 * of C untouched.
 */
#define _GNU_SOURCE
#include <math.h>

#include "check.h"
#include "kernels/dtype.h"
#include "runtime/gpu/backend.h"
#include "runtime/gpu/blaslt_gemm.h"

static uint64_t rng = 88172645463325252ull;
static float rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static uint16_t to16(float f, mt_gemm_type t) { return t == MT_GEMM_BF16 ? mt_host_f32_to_bf16(f) : mt_host_f32_to_f16(f); }
static float from16(uint16_t h, mt_gemm_type t) { return t == MT_GEMM_BF16 ? mt_host_bf16_to_f32(h) : mt_host_f16_to_f32(h); }

/* A, B, C as the shape lays them out (C's unwritten elements 0x7777). */
static void one_shape(mt_backend *b, const mt_blaslt *lt, const mt_gemm_shape *s, const char *name) {
    const size_t na = (size_t)(s->batch - 1) * s->stride_a + (size_t)(s->m - 1) * s->lda + s->k;
    const size_t nb = (size_t)(s->batch - 1) * s->stride_b + (size_t)(s->k - 1) * s->ldb + s->n;
    const size_t nc = (size_t)(s->batch - 1) * s->stride_c + (size_t)(s->m - 1) * s->ldc + s->n;
    uint16_t *a = malloc(na * 2), *bb = malloc(nb * 2), *c = malloc(nc * 2);
    for (size_t i = 0; i < na; i++) a[i] = to16(rnd(), s->type);
    for (size_t i = 0; i < nb; i++) bb[i] = to16(rnd(), s->type);
    for (size_t i = 0; i < nc; i++) c[i] = 0x7777;
    mt_devptr da = 0, db = 0, dc = 0, ws = 0;
    CHECK_OK(mt_backend_mem_alloc(b, na * 2, &da));
    CHECK_OK(mt_backend_mem_alloc(b, nb * 2, &db));
    CHECK_OK(mt_backend_mem_alloc(b, nc * 2, &dc));
    CHECK_OK(mt_backend_mem_alloc(b, (size_t)4 << 20, &ws));
    CHECK_OK(mt_backend_copy_to_device(b, da, a, na * 2, NULL));
    CHECK_OK(mt_backend_copy_to_device(b, db, bb, nb * 2, NULL));
    CHECK_OK(mt_backend_copy_to_device(b, dc, c, nc * 2, NULL));
    mt_gemm g;
    CHECK_OK(mt_gemm_create(lt, s, ws, (size_t)4 << 20, &g));
    CHECK_OK(mt_gemm_run(&g, da, db, dc, NULL));
    CHECK_OK(mt_backend_stream_sync(b, NULL));
    CHECK_OK(mt_backend_copy_to_host(b, c, dc, nc * 2, NULL));
    size_t bad = 0, pad_changed = 0;
    char *written = calloc(nc, 1);
    for (int e = 0; e < s->batch; e++)
        for (int i = 0; i < s->m; i++) {
            double row_max = 1e-6;
            double *ref = calloc((size_t)s->n, sizeof *ref);
            for (int j = 0; j < s->n; j++) {
                for (int k = 0; k < s->k; k++)
                    ref[j] += (double)from16(a[e * s->stride_a + (size_t)i * s->lda + k], s->type) *
                              from16(bb[e * s->stride_b + (size_t)k * s->ldb + j], s->type);
                row_max = fmax(row_max, fabs(ref[j]));
            }
            for (int j = 0; j < s->n; j++) {
                const size_t at = e * s->stride_c + (size_t)i * s->ldc + j;
                written[at] = 1;
                bad += fabs(from16(c[at], s->type) - ref[j]) > 1e-2 * row_max;
            }
            free(ref);
        }
    for (size_t i = 0; i < nc; i++) pad_changed += !written[i] && c[i] != 0x7777;
    CHECK_MSG(bad == 0 && pad_changed == 0, "%s: %zu elements off, %zu padding elements written", name, bad,
              pad_changed);
    printf("%s: m %d n %d k %d batch %d: %s\n", name, s->m, s->n, s->k, s->batch, bad || pad_changed ? "FAIL" : "ok");
    mt_gemm_destroy(&g);
    mt_backend_mem_free(b, da), mt_backend_mem_free(b, db), mt_backend_mem_free(b, dc), mt_backend_mem_free(b, ws);
    free(a), free(bb), free(c), free(written);
}

/* Shapes refused before the library is asked anything. */
static void refusals(const mt_blaslt *lt) {
    mt_gemm g;
    mt_gemm_shape s = {.m = 4, .n = 8, .k = 16, .batch = 1, .lda = 16, .ldb = 8, .ldc = 8, .type = MT_GEMM_BF16};
    mt_gemm_shape bad = s;
    bad.k = 0;
    CHECK_STATUS(mt_gemm_create(lt, &bad, 0, 0, &g), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "k 0") != NULL);
    bad = s, bad.lda = 15;
    CHECK_STATUS(mt_gemm_create(lt, &bad, 0, 0, &g), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "lda 15") != NULL);
    bad = s, bad.type = (mt_gemm_type)7;
    CHECK_STATUS(mt_gemm_create(lt, &bad, 0, 0, &g), MT_ERR_INVALID_ARGUMENT);
    mt_blaslt hip = *lt;
    hip.vendor = MT_BLASLT_HIPBLASLT;
    CHECK_STATUS(mt_gemm_create(&hip, &s, 0, 0, &g), MT_ERR_UNSUPPORTED);
    CHECK(strstr(mt_last_error(), "hipBLASLt") != NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    mt_blaslt lt;
    if (mt_blaslt_open(MT_BLASLT_CUBLASLT, &lt) != MT_OK) {
        printf("SKIP: %s\n", mt_last_error());
        return CHECK_SKIP_CODE;
    }
    refusals(&lt);
    mt_backend *b = NULL;
    if (mt_backend_discover(&b) != MT_OK) {
        printf("SKIP (%d shape checks done, %d failed): %s\n", check_count, check_failures, mt_last_error());
        return check_failures ? check_summary("test_gpu_gemm") : CHECK_SKIP_CODE;
    }
    CHECK_OK(mt_backend_set_device(b, 0));
    /* the absorption's layout: 3 heads interleaved in q's rows, written into rows 8 wider */
    mt_gemm_shape absorb = {.m = 5, .n = 64, .k = 32, .batch = 3, .lda = 3 * 32, .ldb = 64, .ldc = 3 * 72,
                            .stride_a = 32, .stride_b = 32 * 64, .stride_c = 72, .type = MT_GEMM_BF16};
    one_shape(b, &lt, &absorb, "per-head batches");
    /* the decompression's: a 48-column slice of 56-column rows times [48, 96] */
    mt_gemm_shape decompress = {.m = 70, .n = 96, .k = 48, .batch = 1, .lda = 56, .ldb = 96, .ldc = 96,
                                .type = MT_GEMM_F16};
    one_shape(b, &lt, &decompress, "column slice, fp16");
    mt_backend_close(b);
    return check_summary("test_gpu_gemm");
}
