/*
 * crossover_pick.h - which prefill form (MQA or MHA, db/crossover.h) a
 * chunk should take, from the measured points: the one rule the runtime
 * (mlt_prefill_choose_form) and `mla-tune lookup --crossover` both use.
 * Pure: no GPU, no database.
 *
 * The rule, for (arch, compute units, heads, dtypes, sq, context):
 *  1. the points of the arch and dtypes; of those, the compute-unit count
 *     nearest the device's (0 compute units: the largest measured), then
 *     the head count nearest (crossover Sq hardly moves with heads: both
 *     forms' work scales with them), then the measured context nearest;
 *     each nearest by ratio, an exact match first, a tie to the larger,
 *     a context of 0 counted as 1;
 *  2. at that context, both forms' times at sq: linear in sq between the
 *     two measured points around it, the nearest point's outside them;
 *  3. the faster form, MHA when its time is no more than MQA's; the
 *     boundary at that context is the smallest sq (1..MT_DECODE_MAX_SQ) at
 *     which step 2 gives MHA, 0 when it never does (where noise makes MHA
 *     win, lose and win again, the pick follows the times, not the
 *     boundary).
 * With no point for the arch and dtypes: the flop rule (MHA when sq >= the
 * chunk length from which MHA does no more flops than MQA: 168 new tokens
 * at context 4096, about 170 for any long context; every sq at context 0),
 * marked as not measured, `why` saying so.
 *
 * The flop model (DeepSeek's shapes: latent 512, rope 64, no-rope 128,
 * v 128 per head; pairs = sq x context + sq (sq + 1) / 2, causal):
 *   MQA = 2 N pairs (576 + 512)          attention over the latent cache
 *       + 2 sq N 128 x 512               absorb (q_nope @ W_UK^T)
 *       + 2 sq N 512 x 128               output (out @ W_UV)
 *   MHA = 2 (context + sq) 512 x N 256   decompression (k_nope and v)
 *       + 2 N pairs (192 + 128)          attention
 */
#ifndef MT_CROSSOVER_PICK_H
#define MT_CROSSOVER_PICK_H

#include "db/crossover.h"
#include "runtime/include/mlatune.h"

typedef struct mt_crossover_query {
    const char *arch;
    int compute_units;
    int n_heads;
    mt_dtype q_dtype, kv_dtype;
    int sq, context;
} mt_crossover_query;

/* Fills *out (mlatune.h's mlt_form_info) for q from points[0..n), which
 * may be in any order and of any arch; each point's source (its DB) is
 * copied to out->source ("user+system" when the two points interpolated
 * between differ).  q's values are the caller's to check (heads 1..128,
 * sq 1..MT_DECODE_MAX_SQ, context >= 0). */
void mt_crossover_pick(const mt_crossover_point *points, int n, const mt_crossover_query *q, mlt_form_info *out);

/* The flop rule's boundary: the smallest sq (1..MT_DECODE_MAX_SQ) at which
 * the MHA form's flops (decompression + attention) are no more than the MQA
 * form's (compared exactly); 0 if none. */
int mt_crossover_flop_boundary(int n_heads, int context);

/* Each form's flops by the model above. */
void mt_crossover_flops(int n_heads, int sq, int context, double *mqa, double *mha);

#endif
