/*
 * heuristic_gain.h - what tuning gains over the untuned runtime.
 *
 * A runtime with no tuning entry for a shape runs the family's built-in
 * rule (family.h: heuristic_set + heuristic_pick).  The gain a user wants
 * to see is the winner's over that, not over the family default (the slow
 * SIMT variant, a strawman: issue 26 found "16x-310x gains" against it).
 * So every sweep measures the rule's variant for each key
 * (mt_sweep_candidates), and `show`, the sweep's summary and the report
 * derive the gain when they read, from that measurement: no column in the
 * database, so a database of any schema that has the measurement shows it
 * and one from an older sweep says why it cannot.
 */
#ifndef MT_HEURISTIC_GAIN_H
#define MT_HEURISTIC_GAIN_H

#include "db/db.h"

/* The variant the untuned runtime runs for `key` on a device of target `t`
 * with `compute_units`: the family's rule for the key's shape, batch, mean
 * and longest request.  Fails when the rule has nothing for the target. */
mt_status mt_untuned_variant(const mt_family *f, const mt_problem_key *key, const mt_target *t, int compute_units,
                             mt_variant *out);

typedef struct mt_gain {
    double winner_spread_ms;     /* the winner's latest ok measurement on the key: p90 - p10; NAN: none */
    double heuristic_ms;         /* the rule's variant's latest ok median on the key; NAN: not measured */
    double heuristic_spread_ms;  /* its p90 - p10; NAN: not measured */
    double gain;                 /* heuristic_ms / the winner's median; NAN: not known (see missing) */
    double gain_low, gain_high;  /* the gain with each median moved by half its spread against it; NAN: not known */
    char heuristic[200];         /* the rule's variant ("tile_q=16,..."); "" when none was found */
    char missing[200];           /* why gain is NAN; "" when it is known */
} mt_gain;

/* The gain of choice `c` over the built-in rule, from the measurements in
 * `db` (the file the choice was read from) made on c's device (its
 * architecture and compute units): the rule's variant is worked out for
 * those compute units, as the runtime would, and its latest measurement on
 * the key counts (a failed one is why there is no gain: the untuned
 * runtime fails there).  Fails only when the database cannot be read; a
 * gain that cannot be known is NAN with the reason in out->missing. */
mt_status mt_gain_over_heuristic(mt_db *db, const mt_choice *c, mt_gain *out);

/* "1.23x (1.18-1.30)": the gain and its range; "-" when not known. */
void mt_gain_format(const mt_gain *g, char *buf, size_t size);

/* A footnote for the gains a table shows as "-": how many, and why (the
 * first few distinct reasons). */
typedef struct mt_gain_notes {
    int unknown;
    int n;
    char reason[3][200];
} mt_gain_notes;

/* Counts g when its gain is unknown and keeps its reason if new. */
void mt_gain_note(mt_gain_notes *notes, const mt_gain *g);
/* "reason one; reason two" into buf ("" when every gain is known). */
void mt_gain_notes_text(const mt_gain_notes *notes, char *buf, size_t size);

#endif
