/*
 * crossover_json.h - a crossover point (db/crossover.h) as the read
 * commands' --json print it (show --crossover, lookup --crossover): one
 * object, every stored field, the winner and the parts by name.
 */
#ifndef MT_CROSSOVER_JSON_H
#define MT_CROSSOVER_JSON_H

#include "db/crossover.h"

/* The faster form of a measured point: MHA on a tie, as the rule says. */
const char *mt_crossover_winner(const mt_crossover_point *p);

/* p as one JSON object on stdout (no newline). */
void mt_crossover_json(const mt_crossover_point *p);

#endif
