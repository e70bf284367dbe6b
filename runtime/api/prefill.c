/*
 * prefill.c - the public prefill API (mlatune.h, "MLA prefill") over the
 * prefill family (kernels/mla_prefill/), the dispatcher and the JIT.
 *
 *   mlt_prefill_plan_create: the problem's checks, the dispatch tables
 *     (prefill_dispatch.h: one per mask, from the tuning databases'
 *     prefill keys, else the family's built-in rule), every variant they
 *     may run compiled or loaded (each carries the merge kernel too);
 *   mlt_prefill_run / mlt_prefill_merge: argument checks, table lookup,
 *     launch.  No allocation, no lock, no I/O.
 */
#define _GNU_SOURCE
#include "runtime/include/mlatune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "prefill_dispatch.h"
#include "kernels/build.h"
#include "kernels/mla_prefill/mla_prefill.h"

struct mlt_prefill_plan {
    mlt_runtime *rt;
    mt_problem_key shape;
    int nope;
    float scale, v_scale;   /* scale: softmax x q's x k's (fp8; else their 1s) */
    mt_prefill_dispatch dispatch;
    /* the variants of both tables, once each, built; index[m][i]: where
     * table m's variant i is */
    mt_variant variants[2 * MT_DISPATCH_MAX_VARIANTS];
    mt_kernels kernels[2 * MT_DISPATCH_MAX_VARIANTS];
    int n_variants;
    int index[2][MT_DISPATCH_MAX_VARIANTS];
};

void mlt_prefill_problem_default(mlt_prefill_problem *p) {
    if (!p) return;
    *p = (mlt_prefill_problem){.n_heads = 128, .qk_nope_dim = 128, .qk_rope_dim = 64, .v_dim = 128,
                               .q_dtype = MLT_BF16, .kv_dtype = MLT_BF16, .softmax_scale = 1.0f / sqrtf(192.0f),
                               .q_scale = 1.0f, .k_scale = 1.0f, .v_scale = 1.0f};
}

static mt_status problem_to_shape(const mlt_prefill_problem *p, mt_problem_key *k) {
    memset(k, 0, sizeof *k);
    snprintf(k->kind, sizeof k->kind, "mla_prefill");
    if (p->n_heads < 1 || p->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: n_heads %d outside 1..128", p->n_heads);
    if (p->qk_nope_dim < 1 || p->qk_rope_dim < 0 || p->qk_nope_dim + p->qk_rope_dim > 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "prefill: qk_nope_dim %d and qk_rope_dim %d: need nope >= 1, rope >= 0, nope + rope <= 512",
                       p->qk_nope_dim, p->qk_rope_dim);
    if (p->v_dim < 1 || p->v_dim > 512)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: v_dim %d outside 1..512", p->v_dim);
    if (p->q_dtype != MLT_BF16 && p->q_dtype != MLT_FP16 && p->q_dtype != MLT_FP8_E4M3)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: q_dtype must be MLT_BF16, MLT_FP16 or MLT_FP8_E4M3 (got %d)",
                       (int)p->q_dtype);
    if (p->kv_dtype != MLT_BF16 && p->kv_dtype != MLT_FP16 && p->kv_dtype != MLT_FP8_E4M3)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: kv_dtype must be MLT_BF16, MLT_FP16 or MLT_FP8_E4M3 (got %d)",
                       (int)p->kv_dtype);
    const int fp8 = p->q_dtype == MLT_FP8_E4M3 || p->kv_dtype == MLT_FP8_E4M3;
    if (fp8 && p->q_dtype != p->kv_dtype)
        return mt_fail(MT_ERR_INVALID_ARGUMENT,
                       "prefill: fp8 takes q, k and v all MLT_FP8_E4M3 (got q_dtype %d, kv_dtype %d)", (int)p->q_dtype,
                       (int)p->kv_dtype);
    const float scales[3] = {p->q_scale, p->k_scale, p->v_scale};
    static const char *const scale_names[3] = {"q_scale", "k_scale", "v_scale"};
    for (int i = 0; i < 3; i++) {
        if (!fp8 && scales[i] != 1.0f && scales[i] != 0.0f)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: %s %g: the scales are fp8's; 16-bit types take 1 (or 0)",
                           scale_names[i], (double)scales[i]);
        if (fp8 && (!(scales[i] > 0.0f) || !isfinite(scales[i])))
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: %s %g is not a positive finite number", scale_names[i],
                           (double)scales[i]);
    }
    if (!(p->softmax_scale > 0.0f) || !isfinite(p->softmax_scale))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "prefill: softmax_scale %g is not a positive finite number",
                       (double)p->softmax_scale);
    k->s = (mt_problem_static){.d = p->qk_nope_dim + p->qk_rope_dim, .dl = p->v_dim, .page_size = 1,
                              .q_dtype = (mt_dtype)p->q_dtype, .kv_dtype = (mt_dtype)p->kv_dtype};
    k->n_heads = p->n_heads;
    k->sq = 1;
    return MT_OK;
}

void mlt_prefill_plan_destroy(mlt_prefill_plan *plan) {
    if (!plan) return;
    mt_prefill_dispatch_free(&plan->dispatch);
    free(plan);
}

/* A plan whose tables come from `choices` (the runtime's, or one pinned
 * variant's); pinned (a variant, not NULL) is checked for this problem
 * and GPU first. */
static mlt_status plan_create(mlt_runtime *rt, const mlt_prefill_problem *problem, const mt_variant *pinned,
                              mlt_prefill_plan **out) {
    if (!rt || !problem || !out)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_plan_create: null argument (%s)",
                                     !rt ? "rt" : !problem ? "problem" : "out"));
    *out = NULL;
    mlt_prefill_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return mt_to_public(mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory"));
    plan->rt = rt;
    plan->nope = problem->qk_nope_dim;
    const int fp8 = problem->q_dtype == MLT_FP8_E4M3;  /* its scales; 16-bit types have none */
    plan->scale = problem->softmax_scale * (fp8 ? problem->q_scale * problem->k_scale : 1.0f);
    plan->v_scale = fp8 ? problem->v_scale : 1.0f;
    const mt_device_info *info = mt_runtime_device(rt);
    const mt_target *target = mt_runtime_target(rt);
    const mt_choice *choices;
    const mt_choice_source *sources;
    int n_choices;
    mt_runtime_choices(rt, &choices, &sources, &n_choices);
    mt_status st = problem_to_shape(problem, &plan->shape);
    mt_choice one[2];
    if (st == MT_OK && pinned) {
        /* every call of either mask to the one variant: a key per mask */
        st = mt_variant_validate(pinned, &plan->shape.s, target);
        for (int m = 0; m < 2; m++) {
            memset(&one[m], 0, sizeof one[m]);
            snprintf(one[m].arch, sizeof one[m].arch, "%s", target->arch);
            one[m].compute_units = info->compute_units;
            one[m].key = plan->shape;
            one[m].key.batch = one[m].key.sq = one[m].key.seq_len = one[m].key.max_len = 1;
            snprintf(one[m].key.lengths, sizeof one[m].key.lengths, "%s", m ? MT_PREFILL_CAUSAL : MT_PREFILL_NON_CAUSAL);
            snprintf(one[m].family, sizeof one[m].family, "%s", pinned->family->name);
            mt_variant_format(pinned, one[m].params, sizeof one[m].params);
        }
        choices = one, sources = NULL, n_choices = 2;
    }
    if (st == MT_OK)
        st = mt_prefill_dispatch_build(choices, sources, n_choices, &plan->shape, target, info->compute_units,
                                       &plan->dispatch);
    for (int m = 0; st == MT_OK && m < 2; m++) {
        const mt_dispatch_table *t = &plan->dispatch.table[m];
        for (int i = 0; st == MT_OK && i < t->n_variants; i++) {
            int j = 0;
            while (j < plan->n_variants && memcmp(plan->variants[j].values, t->variants[i].values,
                                                  sizeof t->variants[i].values) != 0)
                j++;
            plan->index[m][i] = j;
            if (j < plan->n_variants) continue;
            plan->variants[plan->n_variants++] = t->variants[i];
            st = mt_build_variant(mt_runtime_jit(rt), &t->variants[i], &plan->shape.s, target, &plan->kernels[j]);
        }
    }
    if (st != MT_OK) {
        mlt_prefill_plan_destroy(plan);
        return mt_to_public(st);
    }
    *out = plan;
    return MLT_OK;
}

mlt_status mlt_prefill_plan_create(mlt_runtime *rt, const mlt_prefill_problem *problem, mlt_prefill_plan **out) {
    return plan_create(rt, problem, NULL, out);
}

mlt_status mt_prefill_plan_create_pinned(mlt_runtime *rt, const mlt_prefill_problem *problem, const mt_variant *v,
                                         mlt_prefill_plan **out) {
    if (!v) return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mt_prefill_plan_create_pinned: null variant"));
    return plan_create(rt, problem, v, out);
}

static mt_prefill_view view_of(const void *p, const int64_t strides[2]) {
    return (mt_prefill_view){.ptr = (mt_devptr)(uintptr_t)p, .t_stride = strides[0], .h_stride = strides[1]};
}

mlt_status mlt_prefill_run(mlt_prefill_plan *plan, const mlt_prefill_args *a, void *stream) {
    if (!plan || !a)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_run: null %s", !plan ? "plan" : "args"));
    mt_dispatch_result r;
    mt_prefill_dispatch_lookup(&plan->dispatch, a->batch, a->max_seqlen_q, a->causal, &r);
    int at = plan->index[a->causal != 0][r.variant];
    const mt_variant *v = &plan->variants[at];
    mt_mla_prefill_args k = {.batch = a->batch, .n_heads = plan->shape.n_heads, .max_q = a->max_seqlen_q,
                             /* without k_pe, k holds all D columns: the split is not the kernel's concern */
                             .nope = a->k_pe ? plan->nope : plan->shape.s.d, .causal = a->causal, .scale = plan->scale,
                             .cu_q = (mt_devptr)(uintptr_t)a->cu_seqlens_q,
                             .cu_k = (mt_devptr)(uintptr_t)a->cu_seqlens_k,
                             .q = view_of(a->q, a->q_strides), .k = view_of(a->k, a->k_strides),
                             .k_pe = view_of(a->k_pe, a->k_pe_strides), .v = view_of(a->v, a->v_strides),
                             .out = view_of(a->out, a->out_strides), .lse = view_of(a->lse, a->lse_strides),
                             .max_k = a->max_seqlen_k, .v_scale = plan->v_scale,
                             .compute_units = mt_runtime_device(plan->rt)->compute_units,
                             .workspace = (mt_devptr)(uintptr_t)a->workspace, .workspace_bytes = a->workspace_size};
    return mt_to_public(mt_mla_prefill_launch(mt_runtime_backend(plan->rt), &plan->kernels[at], v,
                                               &plan->shape.s, &k, (mt_stream)stream));
}

size_t mlt_prefill_workspace_size(const mlt_prefill_plan *plan, int batch, int max_seqlen_k) {
    size_t most = 0;
    for (int i = 0; plan && i < plan->n_variants; i++) { /* whichever the dispatch picks */
        size_t n = mt_mla_prefill_workspace_bytes(plan->variants[i].values, &plan->shape.s, batch,
                                                  plan->shape.n_heads, max_seqlen_k);
        if (n > most) most = n;
    }
    return most;
}

mlt_status mlt_prefill_merge(mlt_prefill_plan *plan, const mlt_prefill_merge_args *a, void *stream) {
    if (!plan || !a)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_merge: null %s", !plan ? "plan" : "args"));
    /* every variant carries the merge: the first one's serves */
    mt_mla_prefill_merge_args k = {.tokens = a->tokens, .n_heads = plan->shape.n_heads,
                                   .out_a = view_of(a->out_a, a->out_a_strides),
                                   .lse_a = view_of(a->lse_a, a->lse_a_strides),
                                   .out_b = view_of(a->out_b, a->out_b_strides),
                                   .lse_b = view_of(a->lse_b, a->lse_b_strides),
                                   .out = view_of(a->out, a->out_strides), .lse = view_of(a->lse, a->lse_strides)};
    return mt_to_public(mt_mla_prefill_merge_launch(mt_runtime_backend(plan->rt), &plan->kernels[0], &plan->shape.s,
                                                     &k, (mt_stream)stream));
}

mlt_status mlt_prefill_plan_explain_call(const mlt_prefill_plan *plan, int batch, int max_seqlen_q, int causal,
                                         mlt_choice_info *out) {
    if (!plan || !out)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_plan_explain_call: null %s",
                                     !plan ? "plan" : "out"));
    mt_dispatch_result r;
    mt_prefill_dispatch_lookup(&plan->dispatch, batch, max_seqlen_q, causal, &r);
    const mt_dispatch_entry *e = r.entry;
    const mt_variant *v = &plan->variants[plan->index[causal != 0][r.variant]];
    memset(out, 0, sizeof *out);
    out->reason = !e ? MLT_CHOICE_HEURISTIC : r.exact ? MLT_CHOICE_EXACT_KEY : MLT_CHOICE_NEAREST_KEY;
    snprintf(out->family, sizeof out->family, "%s", v->family->name);
    mt_variant_format(v, out->variant, sizeof out->variant);
    snprintf(out->source, sizeof out->source, "%s",
             !e ? "heuristic" : e->source == MT_FROM_USER_DB ? "user" : "system");
    if (e) {
        /* requests, new tokens per request, keys per request */
        out->key_batch = e->batch;
        out->key_seq_len = e->seq_len;
        out->key_max_seq_len = mt_prefill_dispatch_entry_keys(&plan->dispatch, causal, e);
        out->distance = r.distance;
        out->measured_ms = e->median_ms;
        snprintf(out->key_lengths, sizeof out->key_lengths, "%s", e->lengths);
    }
    mt_prefill_dispatch_explain(&plan->dispatch, causal, &r, out->why, sizeof out->why);
    return MLT_OK;
}

mlt_status mlt_prefill_plan_explain(const mlt_prefill_plan *plan, mlt_choice_info *out) {
    if (!plan || !out)
        return mt_to_public(mt_fail(MT_ERR_INVALID_ARGUMENT, "mlt_prefill_plan_explain: null %s",
                                     !plan ? "plan" : "out"));
    return mlt_prefill_plan_explain_call(plan, 1, 1, 1, out);
}
