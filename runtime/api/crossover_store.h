/*
 * crossover_store.h - a runtime's crossover points (db/crossover.h): where
 * they are read from, read once at the first mlt_prefill_choose_form that
 * needs them (crossover.c says why then), kept until the runtime goes.
 */
#ifndef MT_CROSSOVER_STORE_H
#define MT_CROSSOVER_STORE_H

#include "db/crossover.h"

typedef struct mt_crossover_store mt_crossover_store;

/* Remembers the DBs (as mt_db_load_crossover_overlay takes them) and the
 * device's arch; reads nothing yet. */
mt_status mt_crossover_store_create(const char *user_db, int user_required, const char *system_db, int system_required,
                                    const char *arch, mt_crossover_store **out);
void mt_crossover_store_destroy(mt_crossover_store *s);

#endif
