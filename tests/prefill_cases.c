/*
 * prefill_cases.c - see prefill_cases.h.  The data is random in [-1, 1]
 * (q and k scaled so scores spread over a few units), stored in the
 * problem's dtypes; the same storage goes to the device and to the
 * reference, so only the kernels' arithmetic is compared.
 */
#define _GNU_SOURCE
#include "prefill_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/mla_decode/mla_reference.h"
#include "kernels/mla_prefill/prefill_reference.h"
#include "runtime/include/mlatune.h"

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}
/* distinct states for nearby seeds (cases use seed, seed + 1, ...) */
static uint64_t state_of(uint64_t seed) { return (seed + 1) * 0x9e3779b97f4a7c15ull | 1; }
static double unit(uint64_t *s) { return (double)(next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

void pf_draw_lengths(pf_case *c, int max_new, int max_ctx) {
    uint64_t s = state_of(c->seed);
    for (int b = 0; b < c->batch; b++) {
        c->n_new[b] = 1 + (int)(next(&s) % (uint64_t)max_new);
        c->n_ctx[b] = b == 0 ? 0 : (int)(next(&s) % (uint64_t)(max_ctx + 1));
    }
}

void pf_describe(const pf_case *c, char *buf, size_t size) {
    static const char *const forms[] = {"whole", "chunked", "non-causal"};
    char pad[24] = "";
    if (c->out_pad > 0) snprintf(pad, sizeof pad, " out rows +%d", c->out_pad);
    int n = snprintf(buf, size, "%s N=%d D=%d(nope %d) Dl=%d q=%s kv=%s%s%s lens(new+ctx)=", forms[c->form],
                     c->n_heads, c->s.d, c->nope, c->s.dl, mt_dtype_name(c->s.q_dtype), mt_dtype_name(c->s.kv_dtype),
                     c->lse_head_major ? " lse[N,T]" : "", pad);
    for (int b = 0; b < c->batch && n > 0 && (size_t)n < size; b++)
        n += snprintf(buf + n, size - (size_t)n, "%s%d+%d", b ? "," : "", c->n_new[b], c->n_ctx[b]);
}

static void fill(uint64_t *s, mt_dtype t, void *dst, size_t n, double amplitude) {
    for (size_t i = 0; i < n; i++) mt_host_store(t, dst, i, (float)(amplitude * unit(s)));
}

/* Device buffers of one case, freed together. */
typedef struct pf_buffers {
    mt_backend *b;
    mt_devptr p[24];
    int n, failed;
} pf_buffers;

static mt_devptr upload(pf_buffers *bufs, const void *src, size_t bytes) {
    mt_devptr d = 0;
    if (bufs->n == 24 || mt_backend_mem_alloc(bufs->b, bytes ? bytes : 16, &d) != MT_OK) {
        bufs->failed = 1;
        return 0;
    }
    bufs->p[bufs->n++] = d;
    if (src && bytes) mt_backend_copy_to_device(bufs->b, d, src, bytes, NULL);
    else mt_backend_mem_set(bufs->b, d, 0xff, bytes ? bytes : 16, NULL); /* NaN in bf16, fp16 and fp32 */
    return d;
}

/* the keys of rows [first, first + count) of each request, gathered */
static void gather(const int32_t *cu_k, const int *skip, const int *take, int batch, const void *src, size_t row_bytes,
                   void *dst, int32_t *cu_out) {
    size_t at = 0;
    cu_out[0] = 0;
    for (int b = 0; b < batch; b++) {
        memcpy((char *)dst + at * row_bytes, (const char *)src + (size_t)(cu_k[b] + skip[b]) * row_bytes,
               (size_t)take[b] * row_bytes);
        at += (size_t)take[b];
        cu_out[b + 1] = (int32_t)at;
    }
}

pf_result pf_run_case(mt_backend *b, const pf_launcher *l, const pf_case *c) {
    pf_result r = {.ok = 0};
    const mt_problem_static *s = &c->s;
    const int n = c->n_heads, d = s->d, dl = s->dl, rope = d - c->nope, split = c->nope < d;
    const size_t qe = mt_dtype_size(s->q_dtype), ke = mt_dtype_size(s->kv_dtype);
    const mt_dtype out_t = mt_mla_prefill_out_dtype(s);
    const size_t oe = mt_dtype_size(out_t);
    const int fp8 = mt_dtype_is_fp8(s->kv_dtype);
    const double q_scale = c->q_scale > 0 ? c->q_scale : 1, k_scale = c->k_scale > 0 ? c->k_scale : 1;
    int32_t cu_q[PF_MAX_BATCH + 1] = {0}, cu_k[PF_MAX_BATCH + 1] = {0};
    int max_q = 0, max_k = 1, zero[PF_MAX_BATCH] = {0};
    for (int i = 0; i < c->batch; i++) {
        cu_q[i + 1] = cu_q[i] + c->n_new[i];
        cu_k[i + 1] = cu_k[i] + c->n_ctx[i] + c->n_new[i];
        if (c->n_new[i] > max_q) max_q = c->n_new[i];
        if (c->n_ctx[i] + c->n_new[i] > max_k) max_k = c->n_ctx[i] + c->n_new[i];
    }
    const size_t tq = (size_t)cu_q[c->batch], tk = (size_t)cu_k[c->batch];
    const size_t k_row = (size_t)n * (split ? c->nope : d) * ke, kpe_row = (size_t)rope * ke, v_row = (size_t)n * dl * ke;
    void *q = malloc(tq * n * d * qe), *k = malloc(tk * k_row + 1), *k_pe = malloc(tk * kpe_row + 1);
    void *v = malloc(tk * v_row + 1);
    uint64_t seed = state_of(c->seed ^ 0x5bd1e995);
    fill(&seed, s->q_dtype, q, tq * n * d, 1.0);
    fill(&seed, s->kv_dtype, k, tk * k_row / ke, 1.0);
    fill(&seed, s->kv_dtype, k_pe, tk * kpe_row / ke, 1.0);
    fill(&seed, s->kv_dtype, v, tk * v_row / ke, 1.0);

    /* the reference, contiguous [total_q, N, Dl] and [total_q, N] */
    double *ref = malloc(sizeof(double) * tq * n * dl), *ref_lse = malloc(sizeof(double) * tq * n);
    mt_prefill_host_problem hp = {.s = *s, .batch = c->batch, .n_heads = n, .nope = c->nope,
                                  .causal = c->form != PF_NONCAUSAL, .scale = (float)(c->scale * q_scale * k_scale),
                                  .v_scale = c->v_scale, .cu_q = cu_q, .cu_k = cu_k, .q = q, .k = k,
                                  .k_pe = split ? k_pe : NULL, .v = v};
    mt_prefill_reference(&hp, ref, ref_lse);
    for (size_t i = 0; i < tq * n; i++) r.empty_rows += ref_lse[i] == -INFINITY;

    pf_buffers bufs = {.b = b};
    const size_t orow = (size_t)(dl + c->out_pad); /* out's row stride in elements */
    const size_t out_bytes = tq * n * orow * oe, lse_bytes = tq * n * 4;
    mt_devptr dq = upload(&bufs, q, tq * n * d * qe), dout = upload(&bufs, NULL, out_bytes);
    mt_devptr dlse = upload(&bufs, NULL, lse_bytes);
    mt_prefill_view lse_view = {.ptr = dlse}, out_view = {.ptr = dout};
    if (c->lse_head_major) lse_view.t_stride = 1, lse_view.h_stride = (long long)tq;
    if (c->out_pad > 0) out_view.t_stride = (long long)(n * orow), out_view.h_stride = (long long)orow;
    mt_mla_prefill_args a = {.batch = c->batch, .n_heads = n, .max_q = max_q, .nope = c->nope,
                             .scale = (float)(c->scale * q_scale * k_scale), .q = {.ptr = dq}, .out = out_view,
                             .lse = lse_view, .v_scale = c->v_scale > 0 ? (float)c->v_scale : 1.0f};
    if (fp8) { /* v^T's room: as the family sizes it for the case's longest request */
        a.max_k = max_k;
        a.workspace_bytes = (size_t)c->batch * n * dl * mt_mla_prefill_vt_keys(max_k);
        a.workspace = upload(&bufs, NULL, a.workspace_bytes);
    }
    mt_status st = MT_OK;
    if (c->form != PF_CHUNKED) {
        a.causal = c->form == PF_WHOLE;
        a.cu_q = upload(&bufs, cu_q, sizeof(int32_t) * (c->batch + 1));
        a.cu_k = upload(&bufs, cu_k, sizeof(int32_t) * (c->batch + 1));
        a.k.ptr = upload(&bufs, k, tk * k_row);
        a.k_pe.ptr = split ? upload(&bufs, k_pe, tk * kpe_row) : 0;
        a.v.ptr = upload(&bufs, v, tk * v_row);
        st = l->run(l->ctx, &a);
    } else {
        /* the context keys and the new tokens' keys, each gathered apart */
        int32_t cu_ctx[PF_MAX_BATCH + 1], cu_new[PF_MAX_BATCH + 1];
        char *kc = malloc(tk * k_row + 1), *kpc = malloc(tk * kpe_row + 1), *vc = malloc(tk * v_row + 1);
        char *kn = malloc(tk * k_row + 1), *kpn = malloc(tk * kpe_row + 1), *vn = malloc(tk * v_row + 1);
        gather(cu_k, zero, c->n_ctx, c->batch, k, k_row, kc, cu_ctx);
        gather(cu_k, zero, c->n_ctx, c->batch, k_pe, kpe_row, kpc, cu_ctx);
        gather(cu_k, zero, c->n_ctx, c->batch, v, v_row, vc, cu_ctx);
        gather(cu_k, c->n_ctx, c->n_new, c->batch, k, k_row, kn, cu_new);
        gather(cu_k, c->n_ctx, c->n_new, c->batch, k_pe, kpe_row, kpn, cu_new);
        gather(cu_k, c->n_ctx, c->n_new, c->batch, v, v_row, vn, cu_new);
        const size_t tc = (size_t)cu_ctx[c->batch], tn = (size_t)cu_new[c->batch];
        mt_devptr dcu_q = upload(&bufs, cu_q, sizeof(int32_t) * (c->batch + 1));
        mt_devptr ctx_out = upload(&bufs, NULL, out_bytes), ctx_lse = upload(&bufs, NULL, lse_bytes);
        mt_devptr new_out = upload(&bufs, NULL, out_bytes), new_lse = upload(&bufs, NULL, lse_bytes);
        mt_mla_prefill_args ac = a, an = a;
        ac.causal = 0, ac.cu_q = dcu_q, ac.cu_k = upload(&bufs, cu_ctx, sizeof(int32_t) * (c->batch + 1));
        ac.k.ptr = upload(&bufs, kc, tc * k_row), ac.v.ptr = upload(&bufs, vc, tc * v_row);
        ac.k_pe.ptr = split ? upload(&bufs, kpc, tc * kpe_row) : 0;
        ac.out.ptr = ctx_out, ac.lse.ptr = ctx_lse;
        an.causal = 1, an.cu_q = dcu_q, an.cu_k = upload(&bufs, cu_new, sizeof(int32_t) * (c->batch + 1));
        an.k.ptr = upload(&bufs, kn, tn * k_row), an.v.ptr = upload(&bufs, vn, tn * v_row);
        an.k_pe.ptr = split ? upload(&bufs, kpn, tn * kpe_row) : 0;
        an.out.ptr = new_out, an.lse.ptr = new_lse;
        st = l->run(l->ctx, &ac);
        if (st == MT_OK) st = l->run(l->ctx, &an);
        mt_mla_prefill_merge_args m = {.tokens = (int)tq, .n_heads = n, .out_a = out_view, .lse_a = lse_view,
                                       .out_b = out_view, .lse_b = lse_view, .out = out_view, .lse = lse_view};
        m.out_a.ptr = ctx_out, m.out_b.ptr = new_out, m.lse_a.ptr = ctx_lse, m.lse_b.ptr = new_lse;
        if (st == MT_OK) st = l->merge(l->ctx, &m);
        free(kc), free(kpc), free(vc), free(kn), free(kpn), free(vn);
    }
    if (bufs.failed || st != MT_OK) {
        snprintf(r.error, sizeof r.error, "%s", bufs.failed ? "device allocation failed" : mt_last_error());
    } else if (mt_backend_synchronize(b) != MT_OK) {
        snprintf(r.error, sizeof r.error, "synchronize: %s", mt_last_error());
    } else {
        void *out_h = malloc(out_bytes);
        float *lse_h = malloc(lse_bytes);
        mt_backend_copy_to_host(b, out_h, dout, out_bytes, NULL);
        mt_backend_copy_to_host(b, lse_h, dlse, lse_bytes, NULL);
        double *got = malloc(sizeof(double) * tq * n * dl), *got_lse = malloc(sizeof(double) * tq * n);
        for (size_t i = 0; i < tq * n * dl; i++) /* row i / dl of out, at orow elements a row */
            r.has_nan |= isnan(got[i] = mt_host_load(out_t, out_h, i / (size_t)dl * orow + i % (size_t)dl));
        for (size_t t = 0; t < tq; t++)
            for (int h = 0; h < n; h++) {
                const double x = lse_h[c->lse_head_major ? (size_t)h * tq + t : t * n + h];
                r.has_nan |= isnan(got_lse[t * n + h] = x);
            }
        r.e_out = mt_relative_error(got, ref, (long)(tq * n * dl));
        r.e_lse = mt_relative_error(got_lse, ref_lse, (long)(tq * n));
        const double tol = fp8 ? 4e-2 : s->q_dtype == MT_BF16 ? 1e-2 : 5e-3;
        r.ok = !r.has_nan && r.e_out < tol && r.e_lse < (fp8 ? 2e-3 : 1e-3);
        free(out_h), free(lse_h), free(got), free(got_lse);
    }
    for (int i = 0; i < bufs.n; i++) mt_backend_mem_free(b, bufs.p[i]);
    free(q), free(k), free(k_pe), free(v), free(ref), free(ref_lse);
    return r;
}

/* ---- the public API as a launcher ---- */

static void strides_of(const mt_prefill_view *v, int64_t out[2]) { out[0] = v->t_stride, out[1] = v->h_stride; }
static void *ptr_of(const mt_prefill_view *v) { return (void *)(uintptr_t)v->ptr; }

static mt_status api_run(void *ctx, const mt_mla_prefill_args *a) {
    mlt_prefill_args p = {.batch = a->batch, .max_seqlen_q = a->max_q, .causal = a->causal,
                          .cu_seqlens_q = (const int32_t *)(uintptr_t)a->cu_q,
                          .cu_seqlens_k = (const int32_t *)(uintptr_t)a->cu_k, .q = ptr_of(&a->q), .k = ptr_of(&a->k),
                          .k_pe = ptr_of(&a->k_pe), .v = ptr_of(&a->v), .out = ptr_of(&a->out),
                          .lse = ptr_of(&a->lse), .max_seqlen_k = a->max_k, .workspace = (void *)(uintptr_t)a->workspace,
                          .workspace_size = a->workspace_bytes};
    strides_of(&a->q, p.q_strides), strides_of(&a->k, p.k_strides), strides_of(&a->k_pe, p.k_pe_strides);
    strides_of(&a->v, p.v_strides), strides_of(&a->out, p.out_strides), strides_of(&a->lse, p.lse_strides);
    return mlt_prefill_run(ctx, &p, NULL) == MLT_OK ? MT_OK : MT_ERR_INVALID_ARGUMENT;
}

static mt_status api_merge(void *ctx, const mt_mla_prefill_merge_args *a) {
    mlt_prefill_merge_args m = {.tokens = a->tokens, .out_a = ptr_of(&a->out_a), .lse_a = ptr_of(&a->lse_a),
                                .out_b = ptr_of(&a->out_b), .lse_b = ptr_of(&a->lse_b), .out = ptr_of(&a->out),
                                .lse = ptr_of(&a->lse)};
    strides_of(&a->out_a, m.out_a_strides), strides_of(&a->lse_a, m.lse_a_strides);
    strides_of(&a->out_b, m.out_b_strides), strides_of(&a->lse_b, m.lse_b_strides);
    strides_of(&a->out, m.out_strides), strides_of(&a->lse, m.lse_strides);
    return mlt_prefill_merge(ctx, &m, NULL) == MLT_OK ? MT_OK : MT_ERR_INVALID_ARGUMENT;
}

pf_launcher pf_api_launcher(mlt_prefill_plan *plan) {
    return (pf_launcher){.ctx = plan, .run = api_run, .merge = api_merge};
}
