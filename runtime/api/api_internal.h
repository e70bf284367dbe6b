/*
 * api_internal.h - hooks into the public runtime for mla-tune's own tools
 * (not exported from the shared library: exports.map keeps mlt_* only).
 *
 * `mla-tune bench` times decode through mlt_plan_run, exactly as an engine
 * calls it, and needs the runtime's GPU objects for its own buffers, events
 * and ceiling probes, and a way to time one named variant.
 */
#ifndef MT_API_INTERNAL_H
#define MT_API_INTERNAL_H

#include "crossover_store.h"
#include "db/db.h"
#include "kernels/variant.h"
#include "runtime/gpu/backend.h"
#include "runtime/include/mlatune.h"
#include "runtime/gpu/jit.h"

/* The public code of an internal status (error.h's list says which). */
mlt_status mt_to_public(mt_status st);

mt_backend *mt_runtime_backend(mlt_runtime *rt);
mt_jit *mt_runtime_jit(mlt_runtime *rt);
const mt_device_info *mt_runtime_device(const mlt_runtime *rt);

/* The tuning choices the runtime read at creation (user over system, the
 * stale ones dropped) and where each came from, for plans of other
 * families (prefill.c). */
void mt_runtime_choices(const mlt_runtime *rt, const mt_choice **choices, const mt_choice_source **sources, int *n);
const mt_target *mt_runtime_target(const mlt_runtime *rt);

/* The runtime's crossover points (mlt_prefill_choose_form, crossover.c). */
mt_crossover_store *mt_runtime_crossover(mlt_runtime *rt);

/* A plan that dispatches every call to `v` (validated for the problem and
 * this GPU like a DB entry); its explain() reports the key (1, 1) as "user". */
mlt_status mt_plan_create_pinned(mlt_runtime *rt, const mlt_decode_problem *problem, const mt_variant *v,
                                 mlt_plan **out);

/* A prefill plan that runs `v` for every call of either mask (validated
 * for the problem and this GPU like a DB entry): bench --prefill --variant. */
mlt_status mt_prefill_plan_create_pinned(mlt_runtime *rt, const mlt_prefill_problem *problem, const mt_variant *v,
                                         mlt_prefill_plan **out);

#endif
