/*
 * merge.cu - the merge of two attention states of the same rows, as if
 * their keys had been one set (the chunked form: one call over a context
 * chunk, one over the new tokens; or two context chunks):
 *   m = max(lse_a, lse_b), w_a = e^(lse_a - m), w_b = e^(lse_b - m)
 *   out = (w_a out_a + w_b out_b) / (w_a + w_b),  lse = m + log(w_a + w_b)
 * An lse of -inf (our kernels' empty row) or +inf (FlashAttention 2's) is
 * an empty state: weight 0; two empty states give out = 0, lse = -inf.
 * A thread per output element (memory-bound: the weights are recomputed
 * per element rather than shared); MT_PREFILL_MERGE_THREADS per group.
 */
__device__ __forceinline__ float pf_state_lse(float lse) { return lse == -MT_NEG_INF ? MT_NEG_INF : lse; }

extern "C" __global__ void __launch_bounds__(MT_PREFILL_MERGE_THREADS)
    mla_prefill_merge(const mt_prefill_merge_params p) {
    const long long o = (long long)blockIdx.x * MT_PREFILL_MERGE_THREADS + threadIdx.x;
    const long long row = o / DL;
    if (row >= (long long)p.tokens * p.n_heads) return;
    const int c = (int)(o - row * DL);
    const long long t = row / p.n_heads;
    const int h = (int)(row - t * p.n_heads);
    const float la = pf_state_lse(*pf_row<const float>(p.lse_a, t, h));
    const float lb = pf_state_lse(*pf_row<const float>(p.lse_b, t, h));
    const float m = fmaxf(la, lb);
    if (m == MT_NEG_INF) {
        pf_row<mt_u16>(p.out, t, h)[c] = pf_store_out(0.0f);
        if (c == 0) *pf_row<float>(p.lse, t, h) = MT_NEG_INF;
        return;
    }
    const float wa = la == MT_NEG_INF ? 0.0f : expf(la - m), wb = lb == MT_NEG_INF ? 0.0f : expf(lb - m);
    const float sum = wa + wb;
    /* an empty state's out is not read: it may be anything, even NaN */
    float x = 0.0f;
    if (wa > 0.0f) x += wa * pf_load_out(pf_row<const mt_u16>(p.out_a, t, h)[c]);
    if (wb > 0.0f) x += wb * pf_load_out(pf_row<const mt_u16>(p.out_b, t, h)[c]);
    pf_row<mt_u16>(p.out, t, h)[c] = pf_store_out(x / sum);
    if (c == 0) *pf_row<float>(p.lse, t, h) = m + logf(sum);
}
