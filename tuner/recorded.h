/*
 * recorded.h - `mla-tune sweep --recorded`: a plan whose keys are the calls
 * the runtime recorded in a user DB (opt-in recording: mlatune.h,
 * mlt_runtime_record_calls), so that a sweep tunes exactly the shapes an
 * engine ran without an exact key.
 */
#ifndef MT_RECORDED_H
#define MT_RECORDED_H

#include "config.h"

/* Replaces plan->keys with one key per distinct shape recorded in the DB
 * at `db_path` for `arch` (any device of it): a uniform key where the
 * longest call was the mean, else the one-long mix (one request of the
 * longest, the rest as short as keeps the mean; tuner/lengths.h) of that
 * batch.  The plan keeps its search and timing settings.  *n_recorded gets
 * how many recorded rows were read (0: the plan has no keys). */
mt_status mt_plan_from_recorded(const char *db_path, const char *arch, mt_plan *plan, int *n_recorded);

#endif
