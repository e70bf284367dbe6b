/*
 * key_rows.h - every measurement of a chosen key on its device: what the
 * tools that look around a choice read (the gain over the built-in
 * heuristic, the report's time against each parameter).  One query, so
 * that they agree on what "the key" and "the device" are.
 */
#ifndef MT_KEY_ROWS_H
#define MT_KEY_ROWS_H

#include "db/db.h"

struct sqlite3_stmt;

/* Columns of each row, oldest first (by measured_at, then id: the last row
 * of a variant is its latest, as the choice rule counts). */
enum { MT_ROW_FAMILY, MT_ROW_PARAMS, MT_ROW_STATUS, MT_ROW_MEDIAN_MS, MT_ROW_SPREAD_MS, MT_ROW_COMPUTE_UNITS };

/* Prepares the query of every measurement of c's key (all its facts: kind,
 * dtypes, heads, Sq, D/Dl, page, batch, mean and lengths) on c's device
 * (its architecture and compute units; a choice that does not know its
 * compute units, 0, takes every device of the architecture), any status.
 * The caller steps it and finalizes it. */
mt_status mt_key_rows(mt_db *db, const mt_choice *c, struct sqlite3_stmt **out);

/* The variant of the row `s` is on (its family and params as this build
 * reads them) and its status ("ok", ...); 0 when this build cannot read
 * the row (an unknown family, params it refuses, NULLs): no variant it
 * runs. */
int mt_key_row_variant(struct sqlite3_stmt *s, mt_variant *v, const char **status);

#endif
