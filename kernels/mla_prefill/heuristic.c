/*
 * heuristic.c - the prefill family's built-in rule: what a plan runs for
 * a mask with no prefill key in the tuning databases (docs/prefill.md):
 * the default variant, or the valid point nearest to it on targets where
 * the default does not fit.
 */
#include <stdio.h>
#include <string.h>

#include "mla_prefill.h"

mt_status mt_mla_prefill_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set) {
    memset(set, 0, sizeof *set);
    set->aware = -1;
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
