/*
 * recorder.h - counting, in memory, the calls a plan dispatched without an
 * exact key (issue 25, "recorded misses"; opt-in: mlatune.h), and handing
 * the counts to the user DB at a safe point (plan destroy).
 *
 * The hot path may not allocate, lock or touch the DB, and plans run from
 * several threads at once: the counts live in a fixed table of atomic slots
 * made at plan creation.  A call is counted under its bucket: batch, mean
 * and longest/mean each rounded to the nearest power of two (the
 * dispatcher's distance is in log2 units, and engines' exact lengths change
 * every step: recording them exactly would record every step).  A slot is
 * claimed by one compare-and-swap; a table full of other buckets counts the
 * call as dropped (reported when flushed), never blocks.
 */
#ifndef MT_RECORDER_H
#define MT_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "db/db.h"

enum { MT_RECORDER_SLOTS = 256, MT_RECORDER_PROBES = 16 };

typedef struct mt_recorder {
    _Atomic uint32_t bucket[MT_RECORDER_SLOTS];  /* 0: free; else the packed bucket + 1 */
    _Atomic uint64_t calls[MT_RECORDER_SLOTS];
    _Atomic uint64_t dropped;
} mt_recorder;

/* Counts one call of `batch`, mean `seq_len` (>= 0) and longest `max_len`
 * (0: the mean); heuristic: dispatched by the built-in rule, else by the
 * nearest key.  Lock-free, no allocation. */
void mt_recorder_count(mt_recorder *r, int batch, int seq_len, int max_len, int heuristic);

/* The counted buckets as recorded calls of `shape` on (arch, compute
 * units); *out is malloc'd (NULL and 0 when nothing was counted). */
mt_status mt_recorder_collect(const mt_recorder *r, const char *arch, int compute_units, const mt_problem_key *shape,
                              mt_recorded_call **out, int *n);

/* Adds what was counted to the DB at `path` (created, with its folder, when
 * missing), in one transaction. */
mt_status mt_recorder_flush(const mt_recorder *r, const char *path, const char *arch, int compute_units,
                            const mt_problem_key *shape);

#endif
