/*
 * views.c - the call's tensor views: q given whole or as its two parts
 * (vLLM's ql_nope [.., Dl] and q_pe [.., D - Dl]), and strides for q, out
 * and lse (views into larger buffers).  The rules, each refused with a
 * message naming the tensor and the rule:
 *   - strides are in elements, per request, token and head; all three 0
 *     means the contiguous layout [B, Sq, N, width];
 *   - none is negative (a dimension of one index may have any stride: it
 *     never moves a pointer);
 *   - the 16-bit tensors (q, q_pe, out) are read and written in 16-byte
 *     pieces: their strides are multiples of 8 elements;
 *   - q_pe apart from q needs D > Dl and Dl a multiple of 8 (a piece never
 *     straddles the two);
 *   - the written tensors (out, lse) may not overlap themselves: sorted by
 *     stride, each dimension starts past the end of the ones inside it.
 * The kernels place every row through the strides (common.cuh, q_at).
 */
#include <stdlib.h>

#include "mla_decode.h"
#include "params.h"

typedef struct view {
    const char *name;
    const long long *strides;  /* b, t, n as the caller gave them */
    int width;                 /* elements of one row */
    int piece;                 /* strides must be multiples of this (elements) */
    int written;               /* must not overlap itself */
} view;

static int all_zero(const long long *s) { return s[0] == 0 && s[1] == 0 && s[2] == 0; }

/* Strides a tensor of `width`-element rows has when contiguous. */
static mt_row_strides contiguous(const mt_mla_decode_args *a, int width) {
    return (mt_row_strides){.b = (long long)a->sq * a->n_heads * width, .t = (long long)a->n_heads * width,
                            .n = width};
}

/* The kernels' form: when rows are evenly spaced (a token's N rows follow
 * the previous token's, or there is one token) and the last row's offset
 * within a request fits 32 bits, t is -1 and a row is at row x n (no
 * division on the GPU: common.cuh, row_offset). */
static mt_row_strides strides_of(const mt_mla_decode_args *a, const long long *given, int width) {
    mt_row_strides s = all_zero(given) ? contiguous(a, width)
                                       : (mt_row_strides){.b = given[0], .t = given[1], .n = given[2]};
    long long rows = (long long)a->sq * a->n_heads;
    if ((a->sq == 1 || s.t == a->n_heads * s.n) && (rows - 1) * s.n < (1ll << 31)) s.t = -1;
    return s;
}

static int by_stride(const void *x, const void *y) {
    const long long *a = x, *b = y;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

static mt_status check_view(const view *w, const mt_mla_decode_args *a) {
    if (all_zero(w->strides)) return MT_OK;
    static const char *const dims[3] = {"request", "token", "head"};
    int extent[3] = {a->batch, a->sq, a->n_heads};
    for (int i = 0; i < 3; i++) {
        if (extent[i] <= 1) continue; /* a stride that never moves: anything goes (torch reports any) */
        if (w->strides[i] < 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s stride per %s is %lld: negative strides are not "
                           "supported", w->name, dims[i], w->strides[i]);
        if (w->strides[i] % w->piece != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s stride per %s is %lld elements, not a multiple of "
                           "%d (rows are moved in 16-byte pieces)", w->name, dims[i], w->strides[i], w->piece);
    }
    if (!w->written) return MT_OK;
    /* (stride, extent) of the dimensions that have more than one index,
     * innermost first: each must start past the end of those inside it */
    long long d[3][2];
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (extent[i] > 1) d[n][0] = w->strides[i], d[n][1] = extent[i], n++;
    qsort(d, (size_t)n, sizeof d[0], by_stride);
    long long end = w->width;  /* elements one index of the dimensions inside spans */
    for (int i = 0; i < n; i++) {
        if (d[i][0] < end)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s strides (%lld, %lld, %lld per request, token, head) "
                           "make rows overlap: a stride of %lld elements where %lld are needed", w->name,
                           w->strides[0], w->strides[1], w->strides[2], d[i][0], end);
        end = d[i][0] * (d[i][1] - 1) + end;
    }
    return MT_OK;
}

mt_status mt_mla_decode_check_views(const mt_problem_static *s, const mt_mla_decode_args *a) {
    int any = a->q_pe || a->kv_scale_ptr || !all_zero(a->q_strides) || !all_zero(a->q_pe_strides) ||
              !all_zero(a->out_strides) || !all_zero(a->lse_strides);
    if (any && !s->views)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: this call passes views (q in two parts, strides or a "
                       "device kv scale) but its kernels were built for contiguous tensors only: create the plan "
                       "with views = 1");
    if (a->q_pe) {
        if (s->d <= s->dl || s->dl % 8 != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: q in two parts needs D > Dl and Dl a multiple of 8 "
                           "(D=%d, Dl=%d)", s->d, s->dl);
        if (a->q_pe % 16 != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: q_pe pointer 0x%llx is not 16-byte aligned",
                           (unsigned long long)a->q_pe);
    } else if (!all_zero(a->q_pe_strides)) {
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: q_pe strides given without q_pe");
    }
    if (a->kv_scale_ptr % 4 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kv scale pointer 0x%llx is not 4-byte aligned",
                       (unsigned long long)a->kv_scale_ptr);
    const view views[] = {
        {"q", a->q_strides, a->q_pe ? s->dl : s->d, 8, 0},
        {"q_pe", a->q_pe_strides, s->d - s->dl, 8, 0},
        {"out", a->out_strides, s->dl, 8, 1},
        {"lse", a->lse_strides, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
        mt_status st = check_view(&views[i], a);
        if (st != MT_OK) return st;
    }
    return MT_OK;
}

void mt_mla_decode_fill_views(const mt_problem_static *s, const mt_mla_decode_args *a, mt_decode_params *p) {
    p->q_str = strides_of(a, a->q_strides, a->q_pe ? s->dl : s->d);
    if (a->q_pe) {
        p->q_pe = a->q_pe;
        p->q_pe_str = strides_of(a, a->q_pe_strides, s->d - s->dl);
    } else {
        p->q_pe = a->q + (mt_devptr)s->dl * 2; /* one tensor: its rope part is columns Dl.. of the same rows */
        p->q_pe_str = p->q_str;
    }
    p->out_str = strides_of(a, a->out_strides, s->dl);
    p->lse_str = strides_of(a, a->lse_strides, 1);
    p->kv_scale_ptr = a->kv_scale_ptr;
}
