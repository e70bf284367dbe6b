/*
 * sweep_state.h - a sweep's state, shared by the coordinator (sweep.c) and
 * what it prints before and after (sweep_report.c).  Not an interface:
 * the tuner's own files only.
 */
#ifndef MT_SWEEP_STATE_H
#define MT_SWEEP_STATE_H

#include <pthread.h>

#include "config.h"
#include "db/db.h"

typedef struct sweep_key {
    mt_problem_key key;
    const mt_space *space;
    mt_variant *candidates;
    int n_candidates;
    int heuristic;  /* index of the built-in rule's variant in candidates, -1: none */
    int jobs;
} sweep_key;

typedef struct sweep {
    mt_plan plan;
    const char *db_path, *cache_dir, *fake, *inject_fault;
    int force, job_timeout_s, tty;
    mt_space_config spaces;
    mt_target target;
    int compute_units;  /* of the first device: what the built-in rule's split count depends on */
    sweep_key *keys;
    int n_keys;
    int *order;        /* the hand-out order: indices into keys, costliest first (mt_sweep_handout_order) */
    pthread_mutex_t lock;
    int next_key;      /* the next position in order */
    long jobs_total, jobs_done, measured, skipped, failed[5];
    double started;
    int stop;
} sweep;

/* Before: the plan's keys, jobs and the time estimate (--dry-run and the
 * start of a sweep). */
void mt_sweep_print_plan(const sweep *sw);

/* After: the counts, and a row per key of what the DB now chooses with its
 * gain over the built-in rule. */
void mt_sweep_print_summary(sweep *sw, mt_db *db);

#endif
