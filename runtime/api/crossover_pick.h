/*
 * crossover_pick.h - which prefill form (MQA or MHA, db/crossover.h) a
 * chunk should take, from the measured points: the one rule the runtime
 * (mlt_prefill_choose_form) and `mla-tune lookup --crossover` both use.
 * Pure: no GPU, no database.
 *
 * The rule, for (arch, compute units, heads, dtypes, sq, context):
 *  1. the points of the arch and dtypes; of those, the compute-unit count
 *     nearest the device's, then the head count nearest (crossover Sq
 *     hardly moves with heads: both forms' work scales with them), then
 *     the measured context nearest by ratio (a tie to the larger);
 *  2. at that context, both forms' times at sq: linear in sq between the
 *     two measured points around it, the nearest point's outside them;
 *  3. the faster form; the boundary at that context is where the
 *     interpolated times cross (the first crossing from MQA to MHA).
 * With no point for the arch and dtypes: the flop rule (MHA when sq >= the
 * chunk length at which both forms do equal flops, about 170 new tokens
 * for DeepSeek's shapes), marked as not measured, `why` saying so.
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

/* Fills *out (mlatune.h's mlt_form_info) for q from points[0..n). */
void mt_crossover_pick(const mt_crossover_point *points, int n, const mt_crossover_query *q, mlt_form_info *out);

/* The flop rule's boundary: the smallest sq at which the MHA form's flops
 * (decompression + attention) are no more than the MQA form's. */
int mt_crossover_flop_boundary(int n_heads, int context);

#endif
