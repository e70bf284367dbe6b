/*
 * dispatch.h - mapping a call's (batch, length) to a variant, from the
 * choices read out of the tuning databases.  Pure host code, no GPU: used by
 * the runtime's plans and by `mla-tune lookup`.
 *
 * A call is described by what sets its work: the batch b, the mean keys
 * per request L (so the total keys b x L) and the longest request M, whose
 * spread over the mean is what leaves a fixed-split schedule idle.  The
 * distance to a measured key (kb, kl, km):
 *   |log2(b / kb)| + |log2(L / kl)| + |log2(M / L) - log2(km / kl)|
 * (a uniform key and call have M = L: the last term is 0); the nearest key
 * wins, ties going to the first in (batch, length, longest) order.  Only
 * keys of the same architecture, kind, dtypes, D, Dl, page size, head count
 * and Sq are candidates: those change the kernel itself.  With none, the
 * family's built-in rule (its heuristic hooks, kernels/family.h) is used.
 *
 * Choices are per device (arch and compute units, issue 25): the table
 * takes the keys of one measured device, this one's when it was measured,
 * else the nearest by |log2| of the compute-unit ratio (an H100 PCIe with
 * 114 SMs uses the 132-SM SXM's keys, not a mix of both), and explain says
 * so.
 *
 * A call whose lengths are unknown on the host (L < 0: a CUDA graph being
 * captured) runs a length-aware variant (groups_per_cu > 0, which cuts the
 * work from the lengths on the GPU at every replay): the one chosen for the
 * measured key nearest in batch whose winner is length-aware (the most
 * ragged such key on a tie), else the rule's length-aware variant.
 *
 * A key's winner runs at other batches with its grid rescaled where its
 * family says how (family.h's rescale: the decode family's splits, so
 * that batch x splits stays near the key's): a winner's split count
 * fills the GPU for its key's batch only.  The rescaled variants a plan
 * may need are worked out when the table is built, for the batches up to
 * the plan's largest at which each key can be the nearest (a bound from
 * the distances: entry_batches in dispatch.c), and compiled with the plan; the hot
 * path only looks the call's batch up among its key's ranges.
 *
 * The dispatcher knows no family's parameters: it asks the family that
 * serves the shape's kind whether a variant is length-aware, how it
 * rescales and what its rule runs.
 */
#ifndef MT_DISPATCH_H
#define MT_DISPATCH_H

#include "db/db.h"
#include "kernels/family.h"

/* MT_DISPATCH_MAX_BATCH: the largest batch the runtime takes (mlatune.h) */
enum { MT_DISPATCH_MAX_VARIANTS = 128, MT_DISPATCH_MAX_BATCH = 65535 };

/* Calls of batch first.. up to the next range's first (or the entry's
 * last_batch) run `variant`: the entry's winner rescaled. */
typedef struct mt_dispatch_range {
    int first;
    int variant;
} mt_dispatch_range;

typedef struct mt_dispatch_entry {
    int batch, seq_len, max_len;
    float log_batch, log_len, log_spread;  /* log2(max_len / seq_len) */
    int variant;              /* index into the table's variants: the key's winner */
    int length_aware;         /* that variant is */
    double median_ms;
    mt_choice_source source;
    char lengths[48];         /* the key's length mix */
    /* the batches at which a call can take this key (a superset, within
     * the table's max_batch; none when first_batch > last_batch), and
     * where its winner runs rescaled: ranges[range0 .. range0 + n_ranges)
     * of the table, in order of batch, the last ending at last_batch (0
     * ranges: the winner runs as measured at all of them) */
    int first_batch, last_batch;
    int range0, n_ranges;
} mt_dispatch_entry;

typedef struct mt_dispatch_table {
    mt_problem_key shape;     /* batch and lengths unused */
    mt_dispatch_entry *entries;
    int n_entries;
    mt_variant variants[MT_DISPATCH_MAX_VARIANTS];
    int n_variants;
    const mt_family *family;  /* the family serving shape.kind */
    int heuristic;            /* 1: no entries; variants are the rule's */
    mt_heuristic_set heur;    /* what the family's rule may run for this shape */
    int heur_variant[MT_MAX_HEURISTIC];  /* index in variants of each of heur's (-1: not in the table) */
    int aware_fallback;       /* index of the rule's length-aware variant, -1 if none fits or not needed */
    int compute_units;        /* this device's */
    double memory_gbps;       /* its memory bandwidth, GB/s; 0: not known (the rescale's device) */
    int key_compute_units;    /* the measured device the entries come from (nearest_device), -1: none */
    /* that device's name as the entries' rows give it ("NVIDIA H100 80GB
     * HBM3"; several in order of first use, ", " between them: a user DB
     * over the system DB may hold another model's keys), "" with no
     * entries.  Devices of one arch and SM count are one device here (an
     * H200 takes an H100's keys), so plans and lookup say whose keys they
     * use. */
    char key_device[160];
    int max_batch;            /* the largest batch looked up (the plan's) */
    mt_dispatch_range *ranges;
    int n_ranges;
    /* per variant, the largest batch a call may run it at when that is
     * less than max_batch, else 0: what its workspace is sized for (a
     * winner's many splits for a small batch, sized at max_batch, took
     * GBs) */
    int batch_cap[MT_DISPATCH_MAX_VARIANTS];
} mt_dispatch_table;

/* How a table runs a key's winner at other batches. */
typedef enum mt_dispatch_mode {
    MT_DISPATCH_RESCALED,    /* rescaled where its family says how (plans) */
    MT_DISPATCH_AS_MEASURED  /* as measured (a pinned plan: one variant for every call) */
} mt_dispatch_mode;

/* Builds the table for `shape` on `t` from overlaid choices (sources may be
 * NULL: all "user"), for calls of batch 1..max_batch.  Every variant is
 * validated for this shape and target; a choice that fails validation is
 * an error naming it.  A rescaled variant that fails validation, or finds
 * the table full, is left out: its calls run the key's winner as measured. */
mt_status mt_dispatch_build(const mt_choice *choices, const mt_choice_source *sources, int n,
                            const mt_problem_key *shape, const mt_target *t, int compute_units, int max_batch,
                            mt_dispatch_mode mode, mt_dispatch_table *out);

/* The device a table is built for: its compute units and, where known, its
 * memory bandwidth (some families rescale a key's grid by it:
 * kernels/mla_decode/family.c). */
typedef struct mt_dispatch_device {
    int compute_units;
    double memory_gbps; /* peak (mt_device_memory_gbps) or a measured copy, GB/s; 0: not known */
} mt_dispatch_device;

/* mt_dispatch_build for a device whose bandwidth may be known (the plain
 * form above: not known). */
mt_status mt_dispatch_build_for(const mt_choice *choices, const mt_choice_source *sources, int n,
                                const mt_problem_key *shape, const mt_target *t, const mt_dispatch_device *device,
                                int max_batch, mt_dispatch_mode mode, mt_dispatch_table *out);
void mt_dispatch_free(mt_dispatch_table *table);

typedef struct mt_dispatch_result {
    int variant;              /* index into table->variants */
    int rescaled;             /* variant is entry's winner rescaled for the call's batch */
    int exact;                /* the key itself was measured */
    int unknown_lengths;      /* chosen for a call whose lengths are unknown */
    const mt_dispatch_entry *entry;  /* NULL for the heuristic */
    double distance;
    int heuristic_pick;       /* which of the rule's variants (entry NULL), else -1 */
    int batch;                /* the call's */
} mt_dispatch_result;

/* The device workspace a call of any batch up to max_batch may need: each
 * variant's at the largest batch it runs at (batch_cap, else max_batch). */
size_t mt_dispatch_workspace_bytes(const mt_dispatch_table *table);

/* The hot path: no allocation, no I/O.  seq_len: mean keys per request, or
 * < 0 when unknown; max_len: the longest, or 0 (= seq_len). */
void mt_dispatch_lookup(const mt_dispatch_table *table, int batch, int seq_len, int max_len, mt_dispatch_result *out);

/* "num_splits 16->8, kv_granularity 64->16": how r's variant differs from
 * its key's winner ("" when it runs as measured). */
void mt_dispatch_rescaling(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size);

/* One line saying why `r` was chosen (for explain and lookup). */
void mt_dispatch_explain(const mt_dispatch_table *table, const mt_dispatch_result *r, char *buf, size_t size);

#endif
