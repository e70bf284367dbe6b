/*
 * heuristic.c - the decode family's built-in rule, for a shape no tuning
 * database covers: a base variant measured best on the H100 where it fits
 * the target (else the family default), its split count chosen per call,
 * and a length-aware form of it for ragged calls and graph capture.
 */
#include <stdio.h>
#include <string.h>

#include "mla_decode.h"

/* The mma.sync variant that won most of its keys in the H100 fast-decode
 * sweep (reports/h100/fast-decode): the base where wgmma is not there. */
static const char mma_base[] =
    "tile_q=16,kv_granularity=16,num_splits=1,block_threads=128,kv_chunk=32,mma=1,kv_stages=2";
/* 16-bit KV on Hopper: the 64-row wgmma path at any row count (but calls
 * of one or two row tiles: wgmma_t16_base below).  It won every key of 64+
 * rows of that sweep (128 heads: 2.5x the mma.sync path), and with 8..32
 * heads it is within 2% of the best of the broad sweep at batch 32..128
 * (1.0-1.3x at batch 8) where the mma.sync base ran 1.02-1.8x the best
 * (32 heads, B=128 x 16384: 0.805 ms against 1.276, 63% of the copy
 * ceiling; reports/h100/broad, reports/PERFLOG.md session 20). */
static const char wgmma_base[] =
    "tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2";
/* fp8 KV on Hopper: the transposed wgmma path (1.40x the mma.sync path's
 * best at 16 heads, B=128, L=16384; reports/PERFLOG.md, session 6). */
static const char fp8_base[] =
    "tile_q=16,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=4";
/* ... with 32+ rows, its 32-row form: each chunk is read and converted once
 * per 32 heads instead of 16 (H100, B=128 x 16384: 128 heads 1.92 ms
 * against 3.04, 64 heads 0.96 against 1.52; at B=1 it runs 1.25x the
 * 16-row form, a few microseconds; reports/PERFLOG.md session 20).  It has
 * no length-aware form (shared memory): ragged calls keep the 16-row one. */
static const char fp8_base32[] =
    "tile_q=32,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=4";
/* ... and with 64+ rows and OCP e4m3 KV, where the batch gives it at
 * least FP8_WIDE_MIN_TILES row tiles, the 64-row path that converts each
 * chunk once to fp16 in shared memory beside the score products
 * (wgmma64_fp8.cu; H100, B=128 x 16384: 128 heads 1.29 ms against 1.90
 * for 32-row tiles, 64 heads 0.70 against 0.97 - faster than bf16 KV's
 * 0.81 -; reports/PERFLOG.md session 21).  With fewer tiles its first
 * chunk's load and conversion, which nothing hides, cost more than the
 * conversions it saves (page 16, no DB key: 64 heads B=8 x 1024 39 us
 * against 29, B=32 x 4096 78 against 104; 128 heads B=8 x 4096 63 against
 * 62, B=32 x 4096 117 against 178), so it takes 1, 2 or 4 splits only.
 * Not for fnuz KV, whose conversion has no instruction on NVIDIA: done in
 * software by one warpgroup it ran 5x slower there. */
static const char fp8_base64[] =
    "tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2";
#define FP8_WIDE_MIN_TILES 32
static const int fp8_wide_splits[] = {1, 2, 4};

/* 16-bit KV on Hopper, for a call of at most T16_MAX_TILES 64-row tiles
 * (B=1 at 65-128 heads, B=1-2 up to 64): the transposed 16-row variant,
 * which fills the GPU with splits of a quarter of the products (broad
 * sweep, 128 heads B=1 x 4096: 18.7 us against 25.2 for the best 64-row
 * split count). */
static const char wgmma_t16_base[] =
    "tile_q=16,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2";
#define T16_MAX_TILES 2
/* ... and on the 64-row path, half the splits merged in a cluster
 * (split_reduce 1) where the fp32 partials' round trip through memory is
 * at least this fraction of a tile's KV bytes: the reduce kernel's bytes
 * then cost more than the cluster's lost occupancy (128 heads B=8 x 1024:
 * 4 splits in clusters 21.2 us against 39.0 for 8 through the reduce
 * kernel).  Fitted on the broad sweep's 52 16-bit keys (reports/PERFLOG.md
 * session 21): with the 16-row base above, 1.017x the winner in geometric
 * mean and 1.16x at worst, against 1.10x and 1.90x for the 64-row base
 * with the reduce kernel alone; 0.15-0.35 all give 1.017-1.019x. */
#define CLUSTER_PARTIALS 0.25
static const int cluster_splits[] = {2, 4, 8, 16};

int mt_mla_decode_cluster_pays(const mt_problem_static *s, int tile_rows, int splits, int len) {
    double partials = (double)splits * tile_rows * s->dl * 4 * 2;
    double kv = (double)(len > 0 ? len : 1) * s->d * mt_dtype_size(s->kv_dtype);
    return partials >= CLUSTER_PARTIALS * kv;
}

static const int split_counts[] = {1, 2, 4, 8, 16, 32, 64, 128};

/* Appends `base` with each of `splits` (merge `reduce`) that validates. */
static void add_splits(mt_heuristic_set *set, const mt_variant *base, const int *splits, size_t n, int reduce,
                       const mt_shape *shape, const mt_target *t) {
    for (size_t i = 0; i < n && set->n < MT_MAX_HEURISTIC; i++) {
        mt_variant v = *base;
        v.values[MT_P_NUM_SPLITS] = splits[i];
        v.values[MT_P_SPLIT_REDUCE] = reduce;
        if (splits[i] == 1) v.values[MT_P_KV_GRANULARITY] = 16;
        if (mt_variant_validate(&v, &shape->s, t) == MT_OK) set->variants[set->n++] = v;
    }
    mt_clear_error();
}

/* Parses and validates a built-in base; 0 when it does not fit. */
static int base_fits(const char *spec, const mt_shape *shape, const mt_target *t, mt_variant *out) {
    int ok = mt_variant_parse(&mt_family_mla_decode, spec, out) == MT_OK &&
             mt_variant_validate(out, &shape->s, t) == MT_OK;
    if (!ok) mt_clear_error();
    return ok;
}

mt_status mt_mla_decode_heuristic_set(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set) {
    memset(set, 0, sizeof *set);
    set->aware = -1;
    /* the base, the first of these that fits: the Hopper one for the KV
     * type (fp8: the 64-row path from 64 rows (OCP e4m3), the transposed
     * one's 32-row tiles from 32, else - or where those need more shared
     * memory than there is - its 16-row ones; 16-bit: the 64-row variant);
     * the measured mma.sync variant (NVIDIA; its 32-key chunk never fits
     * the MFMA path, which has not run on an AMD GPU yet); else the family
     * default.  mt_mla_decode_heuristic_pick chooses among the bases. */
    int fp8 = mt_dtype_is_fp8(shape->s.kv_dtype), rows = shape->sq * shape->n_heads;
    const int n_splits = (int)(sizeof split_counts / sizeof split_counts[0]);
    /* fp8 e4m3 at 64+ rows: first the 64-row path's few splits, for
     * batches of many row tiles */
    mt_variant wide;
    int has_wide = fp8 && rows >= 64 && shape->s.kv_dtype == MT_FP8_E4M3 && base_fits(fp8_base64, shape, t, &wide);
    if (has_wide) add_splits(set, &wide, fp8_wide_splits, sizeof fp8_wide_splits / sizeof fp8_wide_splits[0], 0, shape, t);
    const char *hopper = !fp8 ? wgmma_base : rows >= 32 ? fp8_base32 : fp8_base;
    /* 16-bit KV in pages under 16 keys: the 64-row path gathers the rows
     * by cp.async (wgmma_common.cuh), 1.5-2.2x faster than the mma.sync
     * base at 128 heads but 1.1-1.2x slower with one 16-row tile's worth
     * (H100, page 1, 16 heads B=8 / 32 / 128 x 16384: 87 / 304 / 1151 us
     * against 73 / 262 / 1049; reports/PERFLOG.md session 26) */
    if (!fp8 && shape->s.page_size < 16 && rows < 64) hopper = NULL;
    mt_variant base;
    if (!(hopper && base_fits(hopper, shape, t, &base)) && !(hopper == fp8_base32 && base_fits(fp8_base, shape, t, &base)) &&
        !base_fits(mma_base, shape, t, &base) &&
        mt_variant_default_for(&mt_family_mla_decode, &shape->s, t, &base) != MT_OK)
        return mt_fail(MT_ERR_UNSUPPORTED, "no built-in variant fits: %s", mt_last_error());
    add_splits(set, &base, split_counts, (size_t)n_splits, 0, shape, t);
    if (set->n == 0) set->variants[set->n++] = base;
    /* 16-bit KV on the 64-row base: its cluster merges, and the 16-row
     * base for calls of few row tiles */
    mt_variant t16;
    if (!fp8 && base.values[MT_P_MMA] == 2 && base.values[MT_P_TILE_Q] == 64) {
        add_splits(set, &base, cluster_splits, sizeof cluster_splits / sizeof cluster_splits[0], 1, shape, t);
        if ((rows + 63) / 64 <= T16_MAX_TILES && base_fits(wgmma_t16_base, shape, t, &t16))
            add_splits(set, &t16, split_counts, (size_t)n_splits, 0, shape, t);
    }
    /* the length-aware form: one work-group per compute unit, cutting on
     * the chunk (64 keys on the warpgroup paths, 16 elsewhere); fp8's
     * 64-row one where there is one (128 heads, B=32, long-tail / one-long:
     * 157 / 112 us against 215 / 132 for the 16-row one) */
    mt_variant v = has_wide ? wide : base;
    v.values[MT_P_NUM_SPLITS] = 1;
    v.values[MT_P_SPLIT_REDUCE] = 0;
    v.values[MT_P_GROUPS_PER_CU] = 1;
    v.values[MT_P_KV_GRANULARITY] = v.values[MT_P_MMA] == 2 ? 64 : 16;
    /* the 32-row fp8 tile has no length-aware form: the 16-row one's */
    if (v.values[MT_P_MMA] == 2 && v.values[MT_P_TILE_Q] == 32) v.values[MT_P_TILE_Q] = 16;
    if (set->n < MT_MAX_HEURISTIC && mt_variant_validate(&v, &shape->s, t) == MT_OK) {
        set->aware = set->n;
        set->variants[set->n++] = v;
    }
    mt_clear_error();
    return MT_OK;
}

/* The set's variant of tile tile_q and merge `reduce` with the most
 * splits up to `splits` (the fewest when none is that small); -1 if the
 * set has no such variant. */
static int with_splits(const mt_heuristic_set *set, int tile_q, int reduce, int splits) {
    int pick = -1;
    for (int i = 0; i < set->n; i++) {
        const int *x = set->variants[i].values;
        if (i == set->aware || x[MT_P_TILE_Q] != tile_q || x[MT_P_SPLIT_REDUCE] != reduce) continue;
        if (pick < 0 || (x[MT_P_NUM_SPLITS] <= splits &&
                         (set->variants[pick].values[MT_P_NUM_SPLITS] > splits ||
                          x[MT_P_NUM_SPLITS] > set->variants[pick].values[MT_P_NUM_SPLITS])))
            pick = i;
    }
    return pick;
}

int mt_mla_decode_heuristic_pick(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                                 int compute_units) {
    int len = call->seq_len > 0 ? call->seq_len : 1, longest = call->max_len > len ? call->max_len : len;
    if (call->seq_len < 0 || mt_call_is_ragged(len, longest)) return set->aware >= 0 ? set->aware : 0;
    int rows = shape->sq * shape->n_heads, batch = call->batch > 0 ? call->batch : 1;
    long tiles64 = (long)((rows + 63) / 64) * batch;
    /* the base: the first variant's (the 64-row one where there is one),
     * or, fp8 below FP8_WIDE_MIN_TILES row tiles, the transposed one
     * after it; 16-bit KV at up to T16_MAX_TILES, the 16-row one */
    int tile_q = set->variants[0].values[MT_P_TILE_Q];
    int fp8 = mt_dtype_is_fp8(shape->s.kv_dtype);
    if (fp8 && tile_q == 64 && tiles64 < FP8_WIDE_MIN_TILES) {
        int last = set->n - 1 == set->aware ? set->n - 2 : set->n - 1;
        if (last > 0) tile_q = set->variants[last].values[MT_P_TILE_Q];
    }
    if (!fp8 && tiles64 <= T16_MAX_TILES && with_splits(set, 16, 0, 1) >= 0) tile_q = 16;
    /* the most splits that still fit one wave of work-groups, each split
     * keeping at least one 64-key chunk (before session 21 the whole rule;
     * reports/h100/broad) */
    long tiles = (long)((rows + tile_q - 1) / tile_q) * batch;
    int splits = 1;
    while (splits < 128 && tiles * splits * 2 <= compute_units && call->seq_len / (splits * 2) >= 64) splits *= 2;
    int pick = with_splits(set, tile_q, 0, splits);
    /* 16-bit, 64-row: half the splits merged in a cluster when the
     * partials' round trip (fp32, written and read) is at least
     * CLUSTER_PARTIALS of a tile's KV bytes; else two splits in a cluster
     * rather than through the reduce kernel, as the rescale of a DB's
     * winner does (family.c says why; `mla-tune holdout`'s rule column,
     * session 31: broad 1.051x -> 1.049x, fast-decode 1.014x -> 1.012x,
     * the H200 between-heads sweep 1.039x -> 1.012x, its ragged DB 1.062x
     * -> 1.057x) */
    if (!fp8 && tile_q == 64 && splits >= 2) {
        const int merged = with_splits(set, 64, 1, splits / 2), pair = splits == 2 ? with_splits(set, 64, 1, 2) : -1;
        if (merged >= 0 && mt_mla_decode_cluster_pays(&shape->s, rows < 64 ? rows : 64, splits, len)) pick = merged;
        else if (pair >= 0) pick = pair;
    }
    return pick >= 0 ? pick : 0;
}

/* The rule picks splits s > 1 only while the batch's row tiles times s
 * fit the compute units (the loop above: tiles x splits x 2 <= units
 * before each doubling, and with_splits takes no more than that), so a
 * variant of s splits merged by the reduce runs at batches up to units /
 * (tiles per request x s); one split, a cluster merge (no workspace) and
 * the length-aware form at any.  Variant 0 is also the fallback of a pick
 * that found nothing: any batch. */
int mt_mla_decode_heuristic_batch_cap(const mt_heuristic_set *set, int i, const mt_shape *shape, int compute_units) {
    const int *x = set->variants[i].values;
    if (i == 0 || i == set->aware || x[MT_P_NUM_SPLITS] <= 1 || x[MT_P_SPLIT_REDUCE]) return 0;
    /* with_splits takes the most splits at or below the loop's, when the
     * set has one split of this tile (else it may hand out more) */
    int one = with_splits(set, x[MT_P_TILE_Q], 0, 1);
    if (one < 0 || set->variants[one].values[MT_P_NUM_SPLITS] != 1) return 0;
    long per_request = (shape->sq * shape->n_heads + x[MT_P_TILE_Q] - 1) / x[MT_P_TILE_Q];
    long cap = (compute_units > 0 ? compute_units : 1) / (per_request * x[MT_P_NUM_SPLITS]);
    return cap > 0 ? (int)cap : 1;
}

void mt_mla_decode_heuristic_explain(const mt_heuristic_set *set, int pick, char *buf, size_t size) {
    if (pick == set->aware)
        snprintf(buf, size, "heuristic: a ragged call (longest >= %gx the mean) or unknown lengths run the built-in "
                 "length-aware variant", MT_RAGGED_SPREAD);
    else
        snprintf(buf, size, "heuristic: no tuning entry for this arch, dtypes, head count and Sq; %d split(s) for "
                 "this batch and length", set->variants[pick].values[MT_P_NUM_SPLITS]);
}
