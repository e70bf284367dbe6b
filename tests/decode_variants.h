/*
 * decode_variants.h - how the GPU test and the CPU emulation of the AMD
 * kernels draw decode variants: the length-aware schedule's two costs
 * (request_cost, snap_keys) share a code object, and a full space lists
 * them at their defaults (mt_space_full), so a length-aware draw then takes
 * its costs at random; likewise the 64-row path's wg_schedule.
 */
#ifndef MT_TEST_DECODE_VARIANTS_H
#define MT_TEST_DECODE_VARIANTS_H

#include <stdint.h>

#include "kernels/mla_decode/mla_decode.h"

/* Any of the family's values of the schedule's three (every one is valid on
 * a length-aware variant).  request_cost and snap_keys are read at run
 * time, snap_cap is compiled in: draw before the variant is compiled, or
 * keep the code object's cap (test_amd_emu's schedules). */
static inline void decode_draw_schedule_costs(mt_variant *v, uint64_t r) {
    const mt_param_desc *cost = &mt_family_mla_decode.params[MT_P_REQUEST_COST];
    const mt_param_desc *snap = &mt_family_mla_decode.params[MT_P_SNAP_KEYS];
    v->values[MT_P_REQUEST_COST] = cost->values[r % (uint64_t)cost->n_values];
    v->values[MT_P_SNAP_KEYS] = snap->values[(r / 16) % (uint64_t)snap->n_values];
    v->values[MT_P_SNAP_CAP] = (r / 256) % 2 ? 2 : 4;
}

/* wg_schedule (a later parameter, which mt_space_full keeps at 0): a
 * 64-row warpgroup variant takes 1 in every other case (by the case's
 * number, so no draw of the random sequence moves), where it is valid. */
static inline void decode_draw_wg_schedule(mt_variant *v, const mt_problem_static *s, const mt_target *t, int i) {
    if (v->values[MT_P_MMA] != 2 || v->values[MT_P_TILE_Q] != 64 || (i / 4) % 2 == 0) return;
    mt_variant w = *v;
    w.values[MT_P_WG_SCHEDULE] = 1;
    if (mt_variant_validate(&w, s, t) == MT_OK) *v = w;
    else mt_clear_error();
}

/* The warpgroup (mma 2) points of tile_q `tile_q` among items[0..n): one
 * drawn by r into *out; returns 0 (and leaves *out) where there is none. */
static inline int decode_pick_mma2_tile(const mt_variant *items, int n, int tile_q, uint64_t r, mt_variant *out) {
    int count = 0;
    for (int k = 0; k < n; k++) count += items[k].values[MT_P_MMA] == 2 && items[k].values[MT_P_TILE_Q] == tile_q;
    if (count == 0) return 0;
    int pick = (int)(r % (uint64_t)count);
    for (int k = 0; k < n; k++)
        if (items[k].values[MT_P_MMA] == 2 && items[k].values[MT_P_TILE_Q] == tile_q && pick-- == 0) *out = items[k];
    return 1;
}

/* MLA_TUNE_TEST_FOCUS=wgmma64: a case whose shape the 64-row warpgroup
 * path serves draws its variant from that path's points, so a GPU run
 * checks it (and, by the rule above, wg_schedule 0 and 1) on many shapes. */
static inline int decode_pick_wgmma64(const mt_variant *items, int n, uint64_t r, mt_variant *out) {
    return decode_pick_mma2_tile(items, n, 64, r, out);
}

/* A case with fp8 KV on Hopper, one in 8 (i % 8 == 5), draws its variant
 * from the wide fp8 tiles: the transposed path's 32-row points (tile_q 32)
 * in cases 0..31, 64..95, ... and the 64-row path's, which converts each
 * chunk once (tile_q 64, wgmma64_fp8.cu), in the others (by i / 32, so
 * both meet both fp8 encodings), so every GPU run checks those forms on
 * several head counts (128: 2-4 tiles; 3 and 16: one, mostly empty) and
 * lengths.  Returns 0 (and leaves *out) for 16-bit KV. */
static inline int decode_pick_fp8_wide(const mt_variant *items, int n, const mt_problem_static *s, int i, uint64_t r,
                                       mt_variant *out) {
    if (!mt_dtype_is_fp8(s->kv_dtype)) return 0;
    return decode_pick_mma2_tile(items, n, (i / 32) % 2 ? 64 : 32, r, out);
}

#endif
