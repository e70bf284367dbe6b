/*
 * sweep.h - `mla-tune sweep`: plan, compile ahead, measure through isolated
 * workers, record, resume.  See sweep.c for the design; the candidates of
 * a key: sweep_candidates.c; a worker process: worker_proc.h; what a sweep
 * prints: sweep_report.c.
 */
#ifndef MT_SWEEP_H
#define MT_SWEEP_H

#include "config.h"

/* The variants to try first for a key (all of them for exhaustive search, a
 * seeded sample for random and halving), with the default variant and the
 * built-in rule's variant for a device of `compute_units` (what the runtime
 * runs untuned: the gain is over it) in front whenever they are valid, in
 * the space or not.  *heuristic: the rule's variant's index, -1 when it
 * has none.  Deterministic: the same plan and key give the same list, which
 * is what makes resume and compile-ahead agree.  *out is malloc'd. */
int mt_sweep_candidates(const mt_plan *plan, const mt_space *space, const mt_problem_key *key, const mt_target *t,
                        int compute_units, int key_index, mt_variant **out, int *heuristic);

/* Jobs a key will take: n for exhaustive and random; for halving the sum of
 * its rounds. */
int mt_sweep_job_count(const mt_plan *plan, int n_candidates);

/* Successive halving's rounds for n candidates (at most max_rounds): the
 * candidates timed in round i (sizes[i]: n, then the plan's keep fraction
 * of the last, rounded up) and their timed runs (reps[i]: doubling each
 * round to the plan's reps, at least 3).  Returns the count of rounds. */
int mt_sweep_halving_rounds(const mt_plan *plan, int n, int *sizes, int *reps, int max_rounds);

/* The order in which the workers get the keys: the indices 0..n-1 of
 * keys whose estimated cost (seconds[i], mt_plan_key_seconds) is given,
 * written to order costliest first, equal costs in plan order. */
void mt_sweep_handout_order(const double *seconds, int n, int *order);

/* How long `workers` workers take for those keys handed out in that order,
 * each taking the next key when it is free: the --dry-run estimate for
 * several GPUs (at least the costliest key's seconds). */
double mt_sweep_handout_makespan(const double *seconds, int n, int workers);

/* Which of `shards` shards takes each of n keys (owner[i]): costliest
 * first, each to the shard with the least estimated seconds so far (the
 * lowest index on a tie), so that every shard computes the same split from
 * the same estimates.  0, or -1 without memory. */
int mt_sweep_shard_keys(const double *seconds, int n, int shards, int *owner);

int cmd_sweep(int argc, char **argv);

#endif
