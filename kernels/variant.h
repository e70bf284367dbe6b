/*
 * variant.h - how a kernel family describes its variants.
 *
 * A variant is a family (kernels/family.h) plus one value for each of its
 * parameters.  A family declares each parameter's name (as configs and the
 * database spell it), the -D define it becomes, its allowed values and its
 * default, and a constraint check that knows the problem's static facts and
 * the target's limits.  The tuner prunes with the check before compiling anything; the
 * runtime validates every variant read from a database with the same check
 * before it is used for a launch.
 */
#ifndef MT_VARIANT_H
#define MT_VARIANT_H

#include <stddef.h>

#include "runtime/base/error.h"

enum { MT_MAX_PARAMS = 16, MT_MAX_VALUES = 16 };

/* The same numbers as the public mlt_dtype (runtime/include/mlatune.h):
 * MT_FP8_E4M3 is OCP e4m3 "fn", MT_FP8_E4M3_FNUZ e4m3 "fnuz" (kernels/dtype.h). */
typedef enum mt_dtype { MT_BF16 = 0, MT_FP16 = 1, MT_FP8_E4M3 = 2, MT_FP8_E4M3_FNUZ = 3 } mt_dtype;
enum { MT_DTYPE_COUNT = 4 };

const char *mt_dtype_name(mt_dtype t);            /* "bf16", "fp16", "fp8e4m3", "fp8e4m3fnuz" */
mt_status mt_dtype_parse(const char *s, mt_dtype *out);
size_t mt_dtype_size(mt_dtype t);
int mt_dtype_is_fp8(mt_dtype t);                  /* either fp8 encoding (1 byte, scaled by kv_scale) */

/* The facts a variant is compiled against (they become defines too), for
 * any family: the decode family reads D as q/k's head dim and Dl as the
 * value dim; a family without pages takes page_size 1. */
typedef struct mt_problem_static {
    int d;            /* head dim of q and k (decode: Dl + rope dim, 576) */
    int dl;           /* value / output dim (decode: the latent dim, 512) */
    int page_size;    /* tokens per KV page */
    mt_dtype q_dtype; /* also the output dtype */
    mt_dtype kv_dtype;
    int views;        /* 1: calls may pass strided / split tensors (the decode family's VIEWS) */
} mt_problem_static;

/* What a target allows: from a device when there is one, else from the
 * built-in table for the architecture. */
typedef struct mt_target {
    char arch[32];
    int warp_size;
    size_t shared_max;    /* bytes of shared memory / LDS one group may use */
} mt_target;

/* Fills *t for a known architecture name (sm_80, sm_90, gfx942, gfx950...). */
mt_status mt_target_for_arch(const char *arch, mt_target *t);

/* The target a device is (its arch, warp width and shared-memory limit). */
struct mt_device_info;
void mt_target_from_device(const struct mt_device_info *info, mt_target *t);

typedef struct mt_param_desc {
    const char *name;       /* "tile_q" */
    const char *define;     /* "TILE_Q" */
    int values[MT_MAX_VALUES];
    int n_values;
    int default_value;
    const char *doc;
    /* 1 for a parameter added after databases were written: a stored
     * variant without it takes the default, which must be what the kernel
     * did before the parameter existed */
    int added_later;
    /* 1 when the kernel only asks whether the value is non-zero (the host
     * uses the value itself): its define is 0 or 1, so variants that differ
     * in it alone compile to one code object */
    int define_as_flag;
    /* 1 when a variant at the default is written without it (an
     * added_later parameter): the text of every variant that existed before
     * it stays as it was, so databases keep one row per variant across the
     * change */
    int omitted_at_default;
} mt_param_desc;

/* A kernel family (kernels/family.h has the interface). */
typedef struct mt_family mt_family;

typedef struct mt_variant {
    const mt_family *family;
    int values[MT_MAX_PARAMS];
} mt_variant;

/* The family's default variant (each parameter's default). */
void mt_variant_default(const mt_family *f, mt_variant *v);

/* The default for a problem on a target: the declared default when it
 * passes the constraints there, else the valid point of the full space
 * nearest to it (fewest steps along each parameter's value list; ties to the
 * first in enumeration order).  Fails only when no point is valid. */
mt_status mt_variant_default_for(const mt_family *f, const mt_problem_static *s, const mt_target *t, mt_variant *v);

/* Index of a parameter by name, or -1. */
int mt_family_param_index(const mt_family *f, const char *name);

/* Checks every value against its parameter's allowed set, then the family's
 * constraints; the message names the parameter and value at fault. */
mt_status mt_variant_validate(const mt_variant *v, const mt_problem_static *s, const mt_target *t);

/* "tile_q=16,kv_granularity=64,..." in declaration order. */
void mt_variant_format(const mt_variant *v, char *buf, size_t size);
/* 1 when a and b are one point of one family's space. */
int mt_variant_same(const mt_variant *a, const mt_variant *b);

/* Parses the format above: every parameter given once, except that one
 * marked added_later may be absent (it takes its default). */
mt_status mt_variant_parse(const mt_family *f, const char *text, mt_variant *v);

/* Defines for compiling: the problem's facts then the parameters, as
 * "NAME=VALUE" strings in `storage` (n_max entries of 48 bytes), pointed at
 * by `defines`.  Returns the count. */
int mt_variant_defines(const mt_variant *v, const mt_problem_static *s, char storage[][48],
                       const char *defines[], int n_max);

/* A search space: for each parameter, the subset of its values to try. */
typedef struct mt_space {
    const mt_family *family;
    int values[MT_MAX_PARAMS][MT_MAX_VALUES];
    int n_values[MT_MAX_PARAMS];
} mt_space;

/* The full space: every allowed value of every parameter, but a parameter
 * written only when not at its default (omitted_at_default: one added
 * later, which older spaces and variants never named) keeps its default -
 * list it to search it.  Its values would multiply every enumeration (the
 * decode family's two schedule costs: thirty-fold, seconds per key in a
 * sweep's plan) though most points only repeat another's code. */
void mt_space_full(const mt_family *f, mt_space *sp);

/* Calls `visit` for each point of the space that passes validation;
 * returns the number visited (stops early if visit returns non-zero).
 * `rejected` (optional) counts the pruned points. */
int mt_space_enumerate(const mt_space *sp, const mt_problem_static *s, const mt_target *t,
                       int (*visit)(const mt_variant *v, void *user), void *user, int *rejected);

/* The points mt_space_enumerate visits, in its order, as a malloc'd array
 * (*out, *n; the caller frees it; NULL and 0 when none is valid).
 * `rejected` (optional) counts the pruned points.  Fails only when out of
 * memory, with nothing allocated. */
mt_status mt_space_list(const mt_space *sp, const mt_problem_static *s, const mt_target *t, mt_variant **out, int *n,
                        int *rejected);

#endif
