/*
 * lookup_notes.h - what `mla-tune lookup` says beyond the dispatcher's
 * answer, the same way for decode calls (cmd_lookup.c) and prefill calls
 * (cmd_lookup_prefill.c): which part of the problem no DB entry matches
 * when the built-in rule runs, and whether the nearest measured key is too
 * far for its winner to say much; and what every lookup (--crossover too)
 * answers for: the target and the DBs, as the runtime finds them.
 */
#ifndef MT_LOOKUP_NOTES_H
#define MT_LOOKUP_NOTES_H

#include <stddef.h>

#include "db/db.h"

/* The target a lookup answers for: `arch`'s, or with arch NULL the local
 * GPU's; *cus, when 0 (not given), the GPU's compute units, else 132;
 * *memory_gbps (may be NULL), when 0, the GPU's peak memory bandwidth
 * (else it stays 0: not known).  Returns the exit status: 0, 1 (no GPU to
 * ask: give --arch) or 2 (an unknown arch), the message printed, prefixed
 * with `cmd` ("lookup"). */
int mt_lookup_target(const char *cmd, const char *arch, mt_target *t, int *cus, double *memory_gbps);

/* The DBs a lookup reads, as the runtime finds them: --db and
 * --system-db (NULL: not given), else the default paths; a path is
 * required (a missing file an error) when given or set in the
 * environment (MLA_TUNE_DB, MLA_TUNE_SYSTEM_DB). */
typedef struct mt_lookup_dbs {
    char user[1024], system[1024];
    int user_required, system_required;
} mt_lookup_dbs;

void mt_lookup_dbs_find(const char *user, const char *system_db, mt_lookup_dbs *out);

/* The dispatchers' distances (dispatch.h, prefill_dispatch.h) sum |log2|
 * ratios (decode: batch, mean length, spread; prefill: requests, new
 * tokens): 2 is a factor of 4 in one of them.  Beyond it the measured
 * winner says little about this problem. */
#define MT_LOOKUP_MAX_DISTANCE 2.0

/* --max-distance's value: a number from 0 to 1000; else an error naming
 * it (`cmd`: "lookup", "lookup --prefill"). */
mt_status mt_lookup_parse_max_distance(const char *cmd, const char *text, double *out);

/* The fields of a key that the dispatcher matches exactly, in its order. */
typedef enum mt_key_field {
    MT_FIELD_DTYPES,    /* q / kv dtypes */
    MT_FIELD_DIMS,      /* D / Dl */
    MT_FIELD_PAGE_SIZE,
    MT_FIELD_HEADS,
    MT_FIELD_SQ,
    MT_FIELD_MASK       /* prefill: causal / non-causal (the key's lengths) */
} mt_key_field;

/* Which of `fields` no choice of k's kind matches, in that order, with the
 * values the choices that matched so far have: "missing: no entry with
 * page size 1 (the entries that match so far have: 64)"; or that no
 * choice is of k's kind. */
void mt_lookup_missing(const mt_choice *c, int n, const mt_problem_key *k, const mt_key_field *fields, int n_fields,
                       char *buf, size_t size);

#endif
