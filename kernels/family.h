/*
 * family.h - the interface of a kernel family, and the registry of families.
 *
 * A family is one kind of kernel (MLA decode; later prefill) with its
 * tunable parameters.  Everything outside the family's folder reaches it
 * through this struct: the runtime's plans, the dispatcher's built-in rule,
 * the sweep's workers, `mla-tune compile` and the tests.  Building a
 * variant (sources -> defines -> JIT -> entry points) is one recipe for all
 * of them: kernels/build.h.
 *
 * A family folder (kernels/<family>/) holds its device sources, a header
 * for the structs its host and device code share, and its host side: the
 * parameters and their constraints, which source files a variant compiles,
 * resource sizes, the launch, and the built-in heuristic.  The registry
 * (kernels/registry.c) lists the library's families; tests and tools may
 * add their own at run time (mt_family_register).
 */
#ifndef MT_FAMILY_H
#define MT_FAMILY_H

#include <stddef.h>

#include "kernels/sources.h"
#include "kernels/variant.h"
#include "runtime/gpu/backend.h"

/* MT_MAX_SOURCES bounds the array a family's sources() fills: the most a
 * variant names (8 today: the 64-row length-aware path with its reduce) and
 * room */
enum { MT_MAX_ENTRIES = 3, MT_MAX_SOURCES = 12, MT_MAX_HEURISTIC = 24 };

/* A built variant's entry points, in the order of the family's entries();
 * 0 where the variant has none. */
typedef struct mt_kernels {
    mt_function fn[MT_MAX_ENTRIES];
} mt_kernels;

/* The problem a plan is made for, apart from batch and lengths. */
typedef struct mt_shape {
    mt_problem_static s;
    int n_heads, sq;
} mt_shape;

/* One call as the dispatcher sees it: batch, mean keys per request (< 0:
 * unknown, a graph being captured), the longest request (0: the mean). */
typedef struct mt_call {
    int batch, seq_len, max_len;
} mt_call;

/* What a key's winner is rescaled for (family.h's rescale): the key it
 * won, the call's batch, and the device that runs it. */
typedef struct mt_rescale_call {
    int key_batch, key_len; /* the key (batch, mean keys per request) */
    int batch;              /* the call's */
    int compute_units;      /* the device's */
    double memory_gbps;     /* its memory bandwidth, GB/s (peak, or a measured copy); 0: not known */
} mt_rescale_call;

/* A call is ragged when its longest request has at least 1.5x the mean
 * keys (MT_RAGGED_SPREAD): split counts fitted to uniform batches then
 * leave the longest request's few work-groups running on alone (issue 22),
 * so the built-in rule and the dispatcher send it to length-aware
 * variants.  On the H100 (reports/PERFLOG.md session 21) those cost
 * 1.14-1.30x the fixed splits on uniform lengths, while fixed splits on
 * 256..8192 keys at random (longest 1.94x the mean) took 1.09-1.23x the
 * length-aware time at 64 and 128 heads, B=128: 1.5 is about where they
 * cross. */
#define MT_RAGGED_SPREAD 1.5
static inline int mt_call_is_ragged(int mean, int longest) { return longest >= MT_RAGGED_SPREAD * mean; }

/* What the built-in rule may run for a shape, all compiled with a plan
 * that has no tuning entry (or needs a length-aware fallback). */
typedef struct mt_heuristic_set {
    mt_variant variants[MT_MAX_HEURISTIC];
    int n;
    int aware;   /* index of the one that is length-aware (right and balanced for any lengths), -1 if none fits */
} mt_heuristic_set;

struct mt_family {
    const char *name;                 /* as configs and databases spell it: "mla_decode" */
    const char *const *aliases;       /* older names still read (NULL-terminated, or NULL) */
    const char *kind;                 /* the problem kind it serves, as DB keys spell it */
    const mt_param_desc *params;
    int n_params;
    const mt_source_file *files;      /* where sources() are found: NULL for the library's kernels/ */

    /* MT_OK when `values` may run for problem `s` on target `t`; else a
     * message saying which constraint fails. */
    mt_status (*check)(const int *values, const mt_problem_static *s, const mt_target *t);
    /* The files variant v compiles for problem `s` (its types may choose
     * the path: fp8 KV has paths of its own) on a target of this warp
     * width, in order, after the prelude; returns how many. */
    int (*sources)(const mt_variant *v, const mt_problem_static *s, int warp_size, const char *names[MT_MAX_SOURCES]);
    /* Its entry points' names, in mt_kernels order (NULL: none). */
    void (*entries)(const mt_variant *v, const char *names[MT_MAX_ENTRIES]);
    /* Dynamic shared memory (LDS) of a work-group of entry 0. */
    size_t (*shared_bytes)(const mt_variant *v, const mt_problem_static *s, int warp_size);
    /* Device workspace one call needs (0: none). */
    size_t (*workspace_bytes)(const mt_variant *v, const mt_shape *shape, int batch, int compute_units);
    /* Checks the arguments (the family's own struct) and launches. */
    mt_status (*launch)(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                        const void *args, mt_stream stream);

    /* Optional (NULL when the family has none): per-step state built on
     * the GPU from the call's lengths, shared by every call of the step. */
    size_t (*schedule_bytes)(const mt_variant *v, int compute_units);
    mt_status (*schedule)(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                          const void *args, mt_devptr dst, mt_stream stream);

    /* 1 when v cuts its work by the lengths on the GPU: the only kind a
     * call with unknown lengths (graph capture) may run. */
    int (*length_aware)(const mt_variant *v);
    /* Optional (NULL: every variant runs as measured at any batch).  The
     * variant a call of c->batch requests runs on c's device where v won
     * c's key: v with its grid rescaled to the call's batch (the decode
     * family's splits: kernels/mla_decode/family.c says how).  Returns 1
     * and fills *out when that differs from v, else 0.  For one key and
     * device its answer must change monotonically with the batch (the
     * dispatcher finds the batches where it changes by bisection); the
     * dispatcher validates *out for the shape and compiles it with the
     * plan. */
    int (*rescale)(const mt_variant *v, const mt_shape *shape, const mt_rescale_call *c, mt_variant *out);
    /* The built-in rule for a shape with no tuning entry: what it may run
     * (fails only when nothing fits the target), and which of those for a
     * call (an index into set->variants). */
    mt_status (*heuristic_set)(const mt_shape *shape, const mt_target *t, mt_heuristic_set *set);
    int (*heuristic_pick)(const mt_heuristic_set *set, const mt_shape *shape, const mt_call *call,
                          int compute_units);
    /* One line on what the rule does, for explain (`pick` is what it chose). */
    void (*heuristic_explain)(const mt_heuristic_set *set, int pick, char *buf, size_t size);
    /* Optional (NULL: any batch): the largest batch at which the rule may
     * pick set->variants[i] on a device of compute_units, 0 for any.  What
     * the plan's workspace is sized for (many splits are picked for small
     * batches only; sized at max_batch they took GBs). */
    int (*heuristic_batch_cap)(const mt_heuristic_set *set, int i, const mt_shape *shape, int compute_units);
};

/* The registered families, in registration order (the library's first). */
int mt_family_count(void);
const mt_family *mt_family_at(int i);
/* By name or alias; NULL when unknown. */
const mt_family *mt_family_find(const char *name);
/* The family serving a problem kind ("mla_decode"); NULL when none. */
const mt_family *mt_family_for_kind(const char *kind);
/* Adds a family (a test's, a tool's): its name must be new and every hook
 * but the optional ones set.  Thread-safe; families are never removed. */
mt_status mt_family_register(const mt_family *f);

#endif
