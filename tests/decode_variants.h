/*
 * decode_variants.h - how the GPU test and the CPU emulation of the AMD
 * kernels draw decode variants: the length-aware schedule's two costs
 * (request_cost, snap_keys) share a code object, and a full space lists
 * them at their defaults (mt_space_full), so a length-aware draw then takes
 * its costs at random.
 */
#ifndef MT_TEST_DECODE_VARIANTS_H
#define MT_TEST_DECODE_VARIANTS_H

#include <stdint.h>

#include "kernels/mla_decode/mla_decode.h"

/* Any of the family's values of both (every one is valid on a length-aware variant). */
static inline void decode_draw_schedule_costs(mt_variant *v, uint64_t r) {
    const mt_param_desc *cost = &mt_family_mla_decode.params[MT_P_REQUEST_COST];
    const mt_param_desc *snap = &mt_family_mla_decode.params[MT_P_SNAP_KEYS];
    v->values[MT_P_REQUEST_COST] = cost->values[r % (uint64_t)cost->n_values];
    v->values[MT_P_SNAP_KEYS] = snap->values[(r / 16) % (uint64_t)snap->n_values];
}

#endif
