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

/* The measured choices (reports/PERFLOG.md, sessions 18, 19 and 29;
 * docs/prefill.md): sm_90: the wgmma path, 128-token tiles over 128-key
 * tiles, fastest of the four wgmma points on every shape of issue 29 on
 * the H100 and 16-100x the SIMT default; as the persistent form
 * (wgmma_persistent.cu) for requests of up to PERSISTENT_MAX_TOKENS new
 * tokens, which won the H200 sweep of configs/plans/prefill-h200.yaml at
 * every such key (1.01-1.14x: a tile there has few key tiles, and the next
 * tile's copies under the current one's end are most of its gain) and lost
 * at 4096 and 8192 (a work-group's share of the tiles fixed at launch:
 * 1.4x slower at 16 heads x 8192).  Other NVIDIA sm_80+: mma.sync, the
 * winner of the first prefill sweep (an H200, reports/h200/prefill-small/).
 * AMD's MFMA path has only run on the CPU emulation, so AMD keeps the
 * default.  fp8 on sm_90: 64-token tiles over 64-key tiles, fastest or
 * within 1% of it of the four wgmma points on the four shapes
 * (PERFLOG session 19; the persistent form lost on all but one there,
 * session 29).  Every sm_90 choice stores out 16 bytes at a time
 * (out_stores=16): on the H200 it was as fast or faster in every form and
 * shape timed (session 32: 128 heads x 8 x 1024 913 -> 861 us in the
 * persistent form, 920 -> 875 in the grid form, 32 x 256 484 -> 425; fp8
 * 8 x 1024 796 -> 728).  Since the persistent form has a producer
 * warpgroup of its own (session 32), fp8 takes its 128 x 128 point from
 * FP8_PERSISTENT_MIN_TOKENS new tokens per request, up to
 * PERSISTENT_MAX_TOKENS or at any length from FP8_PERSISTENT_MIN_HEADS
 * heads (H200, against the grid 64 x 64: 128 heads x 1 x 8192 3781 ->
 * 3101 us, 8 x 1024 729 -> 674; 16 heads x 8 x 1024 110 -> 97; but 16
 * heads x 1 x 8192 499 -> 543 and 256-token requests 405 -> 414 and 62 ->
 * 66: the grid 64 x 64 keeps those). */
enum { PERSISTENT_MAX_TOKENS = 1024, FP8_PERSISTENT_MIN_TOKENS = 512, FP8_PERSISTENT_MIN_HEADS = 64 };
static int measured_choices(const mt_target *t, const mt_problem_static *s, const char *out[2]) {
    if (strcmp(t->arch, "sm_90") == 0 && mt_dtype_is_fp8(s->kv_dtype)) {
        out[0] = "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=16";
        out[1] = "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16";
        return 2;
    }
    if (strcmp(t->arch, "sm_90") == 0) {
        out[0] = "tile_q=128,kv_tile=128,block_threads=256,mma=2,out_stores=16";
        out[1] = "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16";
        return 2;
    }
    if (strncmp(t->arch, "sm_", 3) == 0) {
        out[0] = "tile_q=64,kv_tile=32,block_threads=128,mma=1";
        return 1;
    }
    return 0;
}

mt_status mt_mla_prefill_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set) {
    memset(set, 0, sizeof *set);
    set->aware = -1;
    const char *choices[2];
    const int n = measured_choices(t, &shape->s, choices);
    for (int i = 0; i < n; i++) {
        if (mt_variant_parse(&mt_family_mla_prefill, choices[i], &set->variants[set->n]) == MT_OK &&
            mt_variant_validate(&set->variants[set->n], &shape->s, t) == MT_OK)
            set->n++;
        else
            break; /* the first must fit for the second to mean anything */
    }
    mt_clear_error();
    if (set->n > 0) return MT_OK;
    mt_status st = mt_variant_default_for(&mt_family_mla_prefill, &shape->s, t, &set->variants[0]);
    set->n = st == MT_OK ? 1 : 0;
    return st;
}

/* The dispatcher's call for prefill: batch = requests, seq_len = the
 * longest request's new tokens (prefill_dispatch.c). */
int mt_mla_prefill_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                                  int compute_units) {
    (void)compute_units;
    if (set->n != 2 || !call) return 0;
    if (mt_dtype_is_fp8(shape->s.kv_dtype))
        return call->seq_len >= FP8_PERSISTENT_MIN_TOKENS &&
               (call->seq_len <= PERSISTENT_MAX_TOKENS || shape->n_heads >= FP8_PERSISTENT_MIN_HEADS);
    return call->seq_len <= PERSISTENT_MAX_TOKENS;
}

void mt_mla_prefill_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size) {
    char name[160] = "?";
    if (pick >= 0 && pick < set->n) mt_variant_format(&set->variants[pick], name, sizeof name);
    /* fp8's pair is the one whose grid point has 64-row tiles (measured_choices) */
    const int fp8 = set->n == 2 && set->variants[0].values[MT_PF_TILE_Q] == 64;
    const char *why = set->n != 2 ? ""
                      : fp8       ? pick == 1 ? "; fp8, the persistent form: 512-1024 new tokens per request, or more "
                                                "at 64 heads or more"
                                              : "; fp8, the grid form: under 512 new tokens per request, or over 1024 "
                                                "at under 64 heads"
                      : pick == 1 ? "; the persistent form: <= 1024 new tokens per request"
                                  : "; the grid form: > 1024 new tokens per request";
    snprintf(buf, size, "mla_prefill: the built-in default %s (untuned%s)", name, why);
}
