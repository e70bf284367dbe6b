/*
 * launch.c - the prefill family's host side of a call: the argument
 * checks (each failure names the argument and the rule), the kernels'
 * argument structs (params.h) with the contiguous strides filled in, the
 * grids, and the launches of mla_prefill and mla_prefill_merge.
 */
#include <math.h>
#include <string.h>

#include "mla_prefill.h"
#include "params.h"

/* A row view's strides, or the contiguous layout's when the caller gave
 * none (both 0). */
static mt_prefill_rows rows_of(const mt_prefill_view *v, long long t_contig, long long h_contig) {
    int contiguous = v->t_stride == 0 && v->h_stride == 0;
    return (mt_prefill_rows){.ptr = v->ptr, .t_stride = contiguous ? t_contig : v->t_stride,
                             .h_stride = contiguous ? h_contig : v->h_stride};
}

/* Non-null, aligned to its element, strides not negative; `written`
 * tensors may not have a zero stride (rows of two heads or two tokens
 * would be the same memory) unless both are zero (contiguous). */
static mt_status check_view(const char *name, const mt_prefill_view *v, size_t elem, int written) {
    if (!v->ptr) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: %s is NULL", name);
    if (v->ptr % elem != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: %s is not aligned to its %zu-byte elements", name, elem);
    if (v->t_stride < 0 || v->h_stride < 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: %s has a negative stride (%lld, %lld)", name,
                       v->t_stride, v->h_stride);
    if (written && (v->t_stride == 0) != (v->h_stride == 0))
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: %s has a zero %s stride: its rows would overlap (give both strides, or neither "
                       "for the contiguous layout)", name, v->t_stride == 0 ? "token" : "head");
    return MT_OK;
}

static mt_status check_scale(float scale) {
    if (!(scale > 0.0f) || !isfinite(scale))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: softmax scale %g is not a positive finite number",
                       (double)scale);
    return MT_OK;
}

mt_status mt_mla_prefill_check_args(const mt_problem_static *s, const mt_mla_prefill_args *a) {
    if (!a) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: arguments are NULL");
    mt_status st = mt_mla_prefill_check_static(s);
    if (st != MT_OK) return st;
    if (a->batch < 1 || a->batch > 65535)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: batch %d outside 1..65535", a->batch);
    if (a->n_heads < 1 || a->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: head count %d outside 1..128", a->n_heads);
    if (a->max_q < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: max_q %d: the longest request's new tokens must be >= 1",
                       a->max_q);
    if (a->nope < 1 || a->nope > s->d)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: nope %d outside 1..%d (the qk head dim)", a->nope, s->d);
    if (a->causal != 0 && a->causal != 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: causal %d is neither 0 nor 1", a->causal);
    if ((st = check_scale(a->scale)) != MT_OK) return st;
    if (!a->cu_q || !a->cu_k || a->cu_q % 4 || a->cu_k % 4)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: cu_seqlens_%s is NULL or not 4-byte aligned",
                       !a->cu_q || a->cu_q % 4 ? "q" : "k");
    size_t qe = mt_dtype_size(s->q_dtype), ke = mt_dtype_size(s->kv_dtype),
           oe = mt_dtype_size(mt_mla_prefill_out_dtype(s));
    if ((st = check_view("q", &a->q, qe, 0)) != MT_OK || (st = check_view("k", &a->k, ke, 0)) != MT_OK ||
        (st = check_view("v", &a->v, ke, 0)) != MT_OK || (st = check_view("out", &a->out, oe, 1)) != MT_OK ||
        (st = check_view("lse", &a->lse, 4, 1)) != MT_OK)
        return st;
    if (a->nope < s->d) {
        if (!a->k_pe.ptr)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_prefill: nope %d < D %d: k holds the first %d columns and k_pe the other %d, but k_pe "
                           "is NULL", a->nope, s->d, a->nope, s->d - a->nope);
        if ((st = check_view("k_pe", &a->k_pe, ke, 0)) != MT_OK) return st;
    } else if (a->k_pe.ptr) {
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: k_pe is given but nope = D = %d leaves it no columns",
                       s->d);
    }
    if (mt_dtype_is_fp8(s->kv_dtype)) {
        if (a->max_k < 1)
            return mt_fail(MT_ERR_INVALID_ARGUMENT,
                           "mla_prefill: fp8 needs max_k (the most keys of any request, >= 1; got %d): it sizes the "
                           "workspace v is transposed into", a->max_k);
        if (!(a->v_scale > 0.0f) || !isfinite(a->v_scale))
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: fp8 v scale %g is not a positive finite number",
                           (double)a->v_scale);
    }
    return MT_OK;
}

/* fp8's workspace (v^T), for the variant that runs. */
static mt_status check_workspace(const int *values, const mt_problem_static *s, const mt_mla_prefill_args *a) {
    size_t need = mt_mla_prefill_workspace_bytes(values, s, a->batch, a->n_heads, a->max_k);
    if (need == 0) return MT_OK;
    if (!a->workspace || a->workspace % 16 != 0 || a->workspace_bytes < need)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: fp8 needs a 16-byte aligned workspace of %zu bytes (batch %d x %d heads x Dl %d "
                       "x %d keys); got %zu bytes at 0x%llx", need, a->batch, a->n_heads, s->dl,
                       mt_mla_prefill_vt_keys(a->max_k), a->workspace_bytes, (unsigned long long)a->workspace);
    return MT_OK;
}

/* The wgmma path (mma=2) copies q, k, k_pe and v in 16-byte pieces and
 * stores out two elements at a time: each row must start on such a
 * boundary (its address and both strides), and k's split at nope too. */
static mt_status check_rows_aligned(const char *name, const mt_prefill_rows *r, int bytes, int elem) {
    const long long per = bytes / elem;
    if (r->ptr % (mt_devptr)bytes != 0 || r->t_stride % per != 0 || r->h_stride % per != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: the wgmma variant (mma=2) needs %s's rows %d-byte aligned: its address and "
                       "strides (%lld, %lld elements) must be multiples of %d bytes", name, bytes, r->t_stride,
                       r->h_stride, bytes);
    return MT_OK;
}

static mt_status check_wgmma_rows(const mt_prefill_params *p, const mt_problem_static *s) {
    mt_status st;
    const int e = (int)mt_dtype_size(s->kv_dtype), oe = (int)mt_dtype_size(mt_mla_prefill_out_dtype(s));
    if (p->nope % 64 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: the wgmma variant (mma=2) copies k in 64-column blocks: nope %d must be a "
                       "multiple of 64", p->nope);
    if ((st = check_rows_aligned("q", &p->q, 16, e)) != MT_OK ||
        (st = check_rows_aligned("k", &p->k, 16, e)) != MT_OK ||
        (st = check_rows_aligned("k_pe", &p->k_pe, 16, e)) != MT_OK ||
        (st = check_rows_aligned("v", &p->v, 16, e)) != MT_OK ||
        (st = check_rows_aligned("out", &p->out, 4, oe)) != MT_OK)
        return st;
    return MT_OK;
}

/* The wgmma path's tensor maps: each tensor as (column, head, token),
 * boxes of 64 columns of one head over kv_tile tokens.  The call does not
 * say how many rows k and v have, so the token extent is 2^31: the kernel
 * asks for a box only when it ends inside the batch's keys.  k's map holds
 * its first nope columns; k_pe's the rest (one row for all heads when its
 * head stride is 0: a head extent of 1, any stride). */
static mt_status wgmma_maps(mt_backend *b, const mt_problem_static *s, const mt_mla_prefill_args *a,
                            const mt_prefill_params *p, int kv_tile,
                            unsigned char maps[3][MT_TENSOR_MAP_BYTES]) {
    const uint64_t tokens = 1ull << 31, heads = (uint64_t)a->n_heads;
    const unsigned box[3] = {64, 1, (unsigned)kv_tile};
    const unsigned elem = (unsigned)mt_dtype_size(s->kv_dtype);
    const mt_prefill_rows *r[3] = {&p->k, &p->k_pe, &p->v};
    const uint64_t cols[3] = {(uint64_t)a->nope, (uint64_t)(s->d - a->nope), (uint64_t)s->dl};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && p->vt) { /* fp8: v^T, (key, column, request x head), boxes of 64 keys x Dl columns */
            const uint64_t vt_dims[3] = {(uint64_t)p->vt_keys, (uint64_t)s->dl, (uint64_t)a->batch * heads};
            const uint64_t vt_strides[2] = {(uint64_t)p->vt_keys, (uint64_t)p->vt_keys * (uint64_t)s->dl};
            const unsigned vt_box[3] = {64, (unsigned)s->dl, 1};
            mt_status st = mt_backend_tensor_map_3d(b, p->vt, 1, vt_dims, vt_strides, vt_box, maps[i]);
            if (st != MT_OK) return st;
            continue;
        }
        if (cols[i] == 0) { /* k holds every column: k_pe's map is never read */
            memcpy(maps[i], maps[0], MT_TENSOR_MAP_BYTES);
            continue;
        }
        const int shared_row = r[i]->h_stride == 0;
        const uint64_t dims[3] = {cols[i], shared_row ? 1 : heads, tokens};
        const uint64_t row_bytes = (cols[i] * elem + 15) / 16 * 16; /* the unused head stride of a shared row */
        const uint64_t strides[2] = {shared_row ? row_bytes : (uint64_t)r[i]->h_stride * elem,
                                     (uint64_t)r[i]->t_stride * elem};
        mt_status st = mt_backend_tensor_map_3d(b, r[i]->ptr, elem, dims, strides, box, maps[i]);
        if (st != MT_OK) return st;
    }
    return MT_OK;
}

/* The persistent form's work-group (wgmma_persistent.cu): block_threads
 * consumers and a producer warpgroup. */
static int persistent_threads(const mt_variant *v) {
    return v->values[MT_PF_BLOCK_THREADS] + MT_PREFILL_PRODUCER_THREADS;
}

/* The persistent form's grid: one work-group per SM (its launch bounds
 * give one work-group the whole register file, which setmaxnreg then
 * moves from the producer to the consumers; session 29's form, without a
 * producer of its own, ran two of the 64-row ones an SM), at most one per
 * tile the grid form would launch; the kernel numbers the tiles in an int. */
static mt_status persistent_grid(const mt_mla_prefill_args *a, unsigned grid[3]) {
    if (a->compute_units < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: the persistent variant (persistent=1) sizes its grid by the GPU's SMs: "
                       "compute_units must be >= 1 (got %d)", a->compute_units);
    const long long tiles = (long long)grid[0] * grid[1] * grid[2], groups = a->compute_units;
    if (tiles + groups > 0x7fffffffLL)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "mla_prefill: %lld tiles (%u per request and head x %d heads x %d requests) are too many for "
                       "the persistent variant, which numbers them in 31 bits: use persistent=0", tiles, grid[0],
                       a->n_heads, a->batch);
    grid[0] = (unsigned)(tiles < groups ? tiles : groups), grid[1] = grid[2] = 1;
    return MT_OK;
}

mt_status mt_mla_prefill_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                                const mt_mla_prefill_args *a, mt_stream stream) {
    mt_status st = mt_mla_prefill_check_args(s, a);
    if (st != MT_OK) return st;
    if (!k || !k->fn[MT_PREFILL_FN])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: the variant's kernel was not loaded");
    if ((st = check_workspace(v->values, s, a)) != MT_OK) return st;
    const long long n = a->n_heads, d = s->d, dl = s->dl, rope = s->d - a->nope;
    const int fp8 = mt_dtype_is_fp8(s->kv_dtype);
    mt_prefill_params p = {.batch = a->batch, .n_heads = a->n_heads, .nope = a->nope, .causal = a->causal,
                           .scale = a->scale, .v_scale = fp8 ? a->v_scale : 1.0f, .cu_q = a->cu_q, .cu_k = a->cu_k};
    if (fp8) p.vt = a->workspace, p.vt_keys = mt_mla_prefill_vt_keys(a->max_k);
    p.q = rows_of(&a->q, n * d, d);
    p.v = rows_of(&a->v, n * dl, dl);
    p.out = rows_of(&a->out, n * dl, dl);
    p.lse = rows_of(&a->lse, n, 1);
    if (a->k_pe.ptr) {
        /* k: [total_k, N, nope]; k_pe: [total_k, rope], one row for all heads */
        p.k = rows_of(&a->k, n * a->nope, a->nope);
        p.k_pe = rows_of(&a->k_pe, rope, 0);
    } else {
        /* one k of D columns: its rope part is k_pe, `nope` elements in */
        p.k = rows_of(&a->k, n * d, d);
        p.k_pe = p.k;
        p.k_pe.ptr += (mt_devptr)a->nope * mt_dtype_size(s->kv_dtype);
    }
    if (v->values[MT_PF_MMA] == 2 && (st = check_wgmma_rows(&p, s)) != MT_OK) return st;
    const int tile_q = v->values[MT_PF_TILE_Q];
    unsigned grid[3] = {(unsigned)((a->max_q + tile_q - 1) / tile_q), (unsigned)a->n_heads, (unsigned)a->batch};
    unsigned block[3] = {(unsigned)v->values[MT_PF_BLOCK_THREADS], 1, 1};
    if (v->values[MT_PF_PERSISTENT]) {
        if ((st = persistent_grid(a, grid)) != MT_OK) return st;
        block[0] = (unsigned)persistent_threads(v);
    }
    /* mma=2 also takes the tensor maps of k, k_pe and v (wgmma.cu); the
     * other paths declare the struct alone (a launch passes a kernel only
     * what it declares) */
    _Alignas(64) unsigned char maps[3][MT_TENSOR_MAP_BYTES];
    void *kargs[] = {&p, maps[0], maps[1], maps[2]};
    if (v->values[MT_PF_MMA] == 2) {
        if ((st = wgmma_maps(b, s, a, &p, v->values[MT_PF_KV_TILE], maps)) != MT_OK) return st;
    }
    if (p.vt) { /* fp8: v transposed into the workspace first (wgmma_fp8.cuh) */
        if (!k->fn[MT_PREFILL_VT_FN])
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill: the variant's v transpose kernel was not loaded");
        unsigned vt_grid[3] = {(unsigned)(p.vt_keys / 64), (unsigned)a->n_heads, (unsigned)a->batch};
        unsigned vt_block[3] = {256, 1, 1};
        void *vt_args[] = {&p};
        if ((st = mt_backend_launch(b, k->fn[MT_PREFILL_VT_FN], vt_grid, vt_block, 0, stream, vt_args)) != MT_OK)
            return st;
    }
    return mt_backend_launch(b, k->fn[MT_PREFILL_FN], grid, block, mt_mla_prefill_shared_bytes(v->values, s), stream,
                             kargs);
}

mt_status mt_mla_prefill_check_merge_args(const mt_problem_static *s, const mt_mla_prefill_merge_args *a) {
    if (!a) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: arguments are NULL");
    mt_status st = mt_mla_prefill_check_static(s);
    if (st != MT_OK) return st;
    if (a->tokens < 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: tokens %d < 0", a->tokens);
    if (a->n_heads < 1 || a->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: head count %d outside 1..128", a->n_heads);
    if ((long long)a->tokens * a->n_heads * s->dl > (long long)MT_PREFILL_MERGE_THREADS * 0x7fffffffLL)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: %d tokens x %d heads is too many for one grid",
                       a->tokens, a->n_heads);
    size_t qe = mt_dtype_size(mt_mla_prefill_out_dtype(s));
    if ((st = check_view("out_a", &a->out_a, qe, 0)) != MT_OK || (st = check_view("lse_a", &a->lse_a, 4, 0)) != MT_OK ||
        (st = check_view("out_b", &a->out_b, qe, 0)) != MT_OK || (st = check_view("lse_b", &a->lse_b, 4, 0)) != MT_OK ||
        (st = check_view("out", &a->out, qe, 1)) != MT_OK || (st = check_view("lse", &a->lse, 4, 1)) != MT_OK)
        return st;
    /* every thread of a row reads the input lse; the row's first writes
     * the merged one: in place, the others could read the new value */
    if (a->lse.ptr == a->lse_a.ptr || a->lse.ptr == a->lse_b.ptr)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: lse is lse_%s: the merged lse needs memory of its own",
                       a->lse.ptr == a->lse_a.ptr ? "a" : "b");
    return MT_OK;
}

mt_status mt_mla_prefill_merge_launch(mt_backend *b, const mt_kernels *k, const mt_problem_static *s,
                                      const mt_mla_prefill_merge_args *a, mt_stream stream) {
    mt_status st = mt_mla_prefill_check_merge_args(s, a);
    if (st != MT_OK) return st;
    if (!k || !k->fn[MT_PREFILL_MERGE_FN])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_prefill merge: the variant's merge kernel was not loaded");
    if (a->tokens == 0) return MT_OK; /* nothing to merge */
    const long long n = a->n_heads, dl = s->dl;
    mt_prefill_merge_params p = {.out_a = rows_of(&a->out_a, n * dl, dl), .lse_a = rows_of(&a->lse_a, n, 1),
                                 .out_b = rows_of(&a->out_b, n * dl, dl), .lse_b = rows_of(&a->lse_b, n, 1),
                                 .out = rows_of(&a->out, n * dl, dl), .lse = rows_of(&a->lse, n, 1),
                                 .tokens = a->tokens, .n_heads = a->n_heads};
    long long elements = (long long)a->tokens * n * dl;
    unsigned grid[3] = {(unsigned)((elements + MT_PREFILL_MERGE_THREADS - 1) / MT_PREFILL_MERGE_THREADS), 1, 1};
    unsigned block[3] = {MT_PREFILL_MERGE_THREADS, 1, 1};
    void *kargs[] = {&p};
    return mt_backend_launch(b, k->fn[MT_PREFILL_MERGE_FN], grid, block, 0, stream, kargs);
}
