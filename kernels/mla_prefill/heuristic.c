/*
 * heuristic.c - the prefill family's built-in rule: what a plan runs for
 * a mask with no prefill key in the tuning databases (docs/prefill.md).
 * Per target, the variant measured fastest where it has run, when it fits
 * the problem; otherwise the declared default, or the valid point nearest
 * to it on targets where the default does not fit.
 */
#include <stdio.h>
#include <string.h>

#include "mla_prefill.h"

/* The measured choices (reports/PERFLOG.md, session 18; docs/prefill.md):
 * sm_90: the wgmma path, 128-token tiles over 128-key tiles, fastest of
 * the four wgmma points on every shape of issue 29 on the H100 and 16-100x
 * the SIMT default; other NVIDIA sm_80+: mma.sync, the winner of the first
 * prefill sweep (an H200, reports/h200/prefill-small/).  AMD's MFMA path
 * has only run on the CPU emulation, so AMD keeps the default.  fp8 on
 * sm_90: 64-token tiles over 64-key tiles, fastest or within 1% of it of
 * the four wgmma points on the four shapes (PERFLOG session 19). */
static const char *measured_choice(const mt_target *t, const mt_problem_static *s) {
    if (strcmp(t->arch, "sm_90") == 0 && mt_dtype_is_fp8(s->kv_dtype))
        return "tile_q=64,kv_tile=64,block_threads=128,mma=2";
    if (strcmp(t->arch, "sm_90") == 0) return "tile_q=128,kv_tile=128,block_threads=256,mma=2";
    if (strncmp(t->arch, "sm_", 3) == 0) return "tile_q=64,kv_tile=32,block_threads=128,mma=1";
    return NULL;
}

mt_status mt_mla_prefill_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set) {
    memset(set, 0, sizeof *set);
    set->aware = -1;
    const char *choice = measured_choice(t, &shape->s);
    if (choice && mt_variant_parse(&mt_family_mla_prefill, choice, &set->variants[0]) == MT_OK &&
        mt_variant_validate(&set->variants[0], &shape->s, t) == MT_OK) {
        set->n = 1;
        return MT_OK;
    }
    mt_status st = mt_variant_default_for(&mt_family_mla_prefill, &shape->s, t, &set->variants[0]);
    set->n = st == MT_OK ? 1 : 0;
    return st;
}

int mt_mla_prefill_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                                  int compute_units) {
    (void)set, (void)shape, (void)call, (void)compute_units;
    return 0;
}

void mt_mla_prefill_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size) {
    char name[160] = "?";
    if (pick >= 0 && pick < set->n) mt_variant_format(&set->variants[pick], name, sizeof name);
    snprintf(buf, size, "mla_prefill: the built-in default %s (untuned)", name);
}
