/*
 * restamp.h - the measurements' validators, grouped and rewritten: what
 * `mla-tune rehash` (tuner/rehash.c) reads and writes.
 *
 * A measurement's source_hash names the kernel text its variant compiled
 * from (runtime/api/validators.h).  Text can change without changing the
 * code (a comment, a branch only other variants compile): rehash proves
 * that by compiling both texts and comparing the code objects, then moves
 * the rows to the new hash here, so they count again without a GPU.
 */
#ifndef MT_RESTAMP_H
#define MT_RESTAMP_H

#include "db/db.h"

/* The rows that share everything a validator depends on: the device's
 * arch and compiler, the variant, the problem's static facts, the hash. */
typedef struct mt_stamp_group {
    char arch[32];
    char compiler_version[64];
    char family[40];
    char params[200];
    mt_problem_static s;     /* views 0: keys do not record it */
    char source_hash[65];
    int rows;
} mt_stamp_group;

/* Every group of measurements that has a source hash, each checked as
 * choices.c checks rows (a row that fails is skipped and counted in
 * *skipped).  *out is malloc'd. */
mt_status mt_db_stamp_groups(mt_db *db, mt_stamp_group **out, int *n, int *skipped);

/* Gives the rows of groups[i] the hash new_hash[i] (those with "" keep
 * theirs), all in one transaction; *rows counts the rows changed. */
mt_status mt_db_restamp(mt_db *db, const mt_stamp_group *groups, const char (*new_hash)[65], int n, int *rows);

#endif
