/*
 * key_work.h - the work a problem key is, whatever its kind: the bytes a
 * call must move at least and the flops it does, for the sweep's summary,
 * its time estimate and the report's GB/s and TFLOPS.
 *   decode: KV read once (D per key token), q read, out and lse written;
 *           N * Sq * (2D + 2Dl) flops per key token (docs/DESIGN.md);
 *   prefill: mt_prefill_bytes and mt_prefill_flops (prefill_key.h): a
 *           causal call's new tokens' square counted half.
 */
#ifndef MT_KEY_WORK_H
#define MT_KEY_WORK_H

#include "db/db.h"

int mt_key_is_prefill(const mt_problem_key *k);
double mt_key_bytes(const mt_problem_key *k);
double mt_key_flops(const mt_problem_key *k);

#endif
