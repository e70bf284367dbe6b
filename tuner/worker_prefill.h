/*
 * worker_prefill.h - the sweep worker's prefill jobs (kind mla_prefill):
 * inputs, verification against the CPU reference, timing; the decode
 * jobs stay in worker.c, which hands a prefill job here.
 */
#ifndef MT_WORKER_PREFILL_H
#define MT_WORKER_PREFILL_H

#include "protocol.h"
#include "worker_job.h"

/* The current key's inputs and reference, kept between its jobs. */
typedef struct mt_prefill_key_state mt_prefill_key_state;

/* Runs one prefill job into *r; *state is made or replaced as the key
 * changes.  Returns 1 when the worker must exit (its GPU context cannot be
 * trusted after a failed launch). */
int mt_prefill_worker_job(mt_prefill_key_state **state, const mt_worker_gpu *g, const mt_job *job, mt_job_result *r);
void mt_prefill_worker_free(mt_prefill_key_state *state, mt_backend *b);

#endif
