/*
 * db.h - the tuning database: an SQLite file that records devices, problem
 * keys, variants, every measurement, and the variant chosen per
 * (architecture, problem key), derived from the measurements.
 *
 * Schema versions live in PRAGMA user_version and move forward only, through
 * the migrations in db.c.  Opening for writing migrates the file in place,
 * inside one transaction.  Opening for reading never writes: a file of an
 * older version is copied into memory (sqlite3 backup API) and migrated
 * there.  A file of a newer version than this build knows is refused.
 *
 * Concurrency: WAL mode, a busy timeout, and a retry loop around every write
 * transaction, so that readers and one writer in other processes (eight
 * tensor-parallel ranks reading while a sweep writes) never see
 * SQLITE_BUSY.  Every measurement is its own transaction: a writer killed at
 * any point loses at most the row it was writing.
 *
 * Paths (mt_db_default_paths): the user DB is --db, else $MLA_TUNE_DB, else
 * $XDG_DATA_HOME/mla-tune/tuning.db (or ~/.local/share/...); the system DB is
 * --system-db, else $MLA_TUNE_SYSTEM_DB, else the first existing file of
 * $MLA_TUNE_SYSTEM_DB_PATH (colon-separated), else
 * <install prefix>/share/mla-tune/tuning.db.  Where both name a variant for
 * the same key and architecture, the user DB wins.
 */
#ifndef MT_DB_H
#define MT_DB_H

#include <stdint.h>

#include "kernels/family.h"
#include "runtime/gpu/backend.h"

enum { MT_DB_SCHEMA_VERSION = 6 };

typedef struct mt_db mt_db;

typedef enum mt_db_mode { MT_DB_READ, MT_DB_WRITE } mt_db_mode;

/* What a measurement is for. */
typedef struct mt_problem_key {
    char kind[16];          /* "mla_decode" */
    mt_problem_static s;     /* D, Dl, page size, dtypes */
    int n_heads, sq, batch, seq_len; /* seq_len: the mean keys per request */
    int max_len;            /* the longest request (uniform: seq_len; 0 read as seq_len) */
    char lengths[48];       /* how the lengths were made: "uniform" or a mix (tuner/lengths.h) */
} mt_problem_key;

typedef enum mt_measure_status {
    MT_MEASURE_OK,
    MT_MEASURE_WRONG_RESULT,
    MT_MEASURE_COMPILE_FAILED,
    MT_MEASURE_LAUNCH_FAILED,
    MT_MEASURE_TIMEOUT
} mt_measure_status;

const char *mt_measure_status_name(mt_measure_status s);   /* "ok", "wrong-result", ... */

typedef struct mt_measurement {
    int64_t problem_id, variant_id, device_id;
    mt_measure_status status;
    double median_ms, min_ms, max_ms, spread_ms;  /* spread: (p90 - p10) of the timed runs */
    int reps;
    const char *error;                            /* NULL when ok */
    const char *source_hash;                      /* validator: mt_build_source_hash of the variant, NULL unknown */
} mt_measurement;

/* The variant chosen for a key on a device, as the runtime and `show` read
 * it.  Choices are per device (arch and compute units), and carry the
 * validators of the measurement they picked: what the runtime compares with
 * the code it runs (runtime/api/validators.h). */
typedef struct mt_choice {
    char arch[32];
    int compute_units;      /* of the device measured; 0: unknown (a schema-4 choice with no ok measurement) */
    mt_problem_key key;
    char family[40];
    char params[200];
    double median_ms;
    double default_ms;      /* the family default's median on the same key, 0 if not measured */
    char reason[64];        /* "fastest", "tie: default kept", ... */
    char device_name[64];   /* the measured device's name */
    char source_hash[65];   /* hex SHA-256 of the kernel text it was measured with; "" unknown (before schema 5) */
    char compiler_version[64];
    char driver_version[32];
} mt_choice;

mt_status mt_db_open(const char *path, mt_db_mode mode, mt_db **out);
void mt_db_close(mt_db *db);
const char *mt_db_path(const mt_db *db);
int mt_db_schema_version(mt_db *db);   /* of the open (possibly migrated) database */

/* Builds a database of an earlier schema version (tests of migrations). */
mt_status mt_db_create_at_version(const char *path, int version);

mt_status mt_db_put_device(mt_db *db, const mt_device_info *dev, const char *compiler_version, int64_t *id);
mt_status mt_db_put_problem(mt_db *db, const mt_problem_key *key, int64_t *id);
mt_status mt_db_put_variant(mt_db *db, const mt_variant *v, int64_t *id);

/* Writes one measurement in its own transaction. */
mt_status mt_db_record(mt_db *db, const mt_measurement *m);

/* How many measurements exist for (problem, variant, device): the sweep's
 * resume test. */
mt_status mt_db_count_measurements(mt_db *db, int64_t problem_id, int64_t variant_id, int64_t device_id,
                                   int *count);

/* The latest measurement of (problem, variant, device) that settles a job
 * timed with `reps` runs: an ok one with exactly that many runs, or any
 * failure (a variant that failed is not retried without --force).  With a
 * source_hash, only a row measured from that kernel text settles it (one
 * measured before validators, or from other sources, is measured again).
 * *found = 0 when there is none. */
mt_status mt_db_find_measurement(mt_db *db, int64_t problem_id, int64_t variant_id, int64_t device_id, int reps,
                                 const char *source_hash, mt_measurement *out, int *found);

/* Derives the choices for every (arch, problem) from the measurements (see
 * choices.c for the rule), replacing the old ones, in one transaction. */
mt_status mt_db_recompute_choices(mt_db *db);

/* Whether a measurement row with a source hash may count when choices are
 * derived (ctx: the caller's; rows without one, written before validators,
 * always count).  The tools pass the validators' check
 * (runtime/api/validators.h, mt_validator_row_usable): a row measured from
 * other kernel text than its variant compiles from now must not win a key,
 * since the runtime ignores such a choice and the key would lose its
 * valid runner-up with it (session 22: a ragged key kept a session-13 row
 * of a variant its plan's space no longer listed). */
typedef int (*mt_row_usable_fn)(const char *arch, const mt_problem_static *s, const mt_variant *v,
                                const char *source_hash, void *ctx);

/* mt_db_recompute_choices over the rows `usable` keeps (NULL: every row). */
mt_status mt_db_recompute_choices_of(mt_db *db, mt_row_usable_fn usable, void *ctx);

/* Loads the choices of `arch` (NULL: all), each validated against its
 * family's declared parameters; an invalid row fails the load with a message
 * naming the file, key and value.  *out is malloc'd. */
mt_status mt_db_load_choices(mt_db *db, const char *arch, mt_choice **out, int *n);

/* Which database a choice came from, after overlaying. */
typedef enum mt_choice_source { MT_FROM_SYSTEM_DB, MT_FROM_USER_DB } mt_choice_source;

/* Loads the choices of `arch` (NULL: all) from the system DB, then the user
 * DB over it: where both have the same (arch, key), the user DB's wins.
 * A path that is NULL or names no file is skipped when `required` is 0 for
 * it, an error when 1.  sources[i] (malloc'd, may be NULL) says where each
 * choice came from. */
mt_status mt_db_load_overlay(const char *user_path, int user_required, const char *system_path, int system_required,
                             const char *arch, mt_choice **out, mt_choice_source **sources, int *n);

/* Keeps a loaded choice (1) or drops it (0): mt_db_load_overlay_kept
 * applies it to each file before the user DB overlays the system DB, so
 * that a dropped user choice leaves the system DB's for the same key. */
typedef int (*mt_choice_keep_fn)(const mt_choice *c, mt_choice_source from, void *ctx);

/* mt_db_load_overlay with every loaded choice passed through keep (NULL:
 * keep all). */
mt_status mt_db_load_overlay_kept(const char *user_path, int user_required, const char *system_path,
                                  int system_required, const char *arch, mt_choice_keep_fn keep, void *ctx,
                                  mt_choice **out, mt_choice_source **sources, int *n);

/* Same key, architecture and device (compute units)? */
int mt_choice_same_key(const mt_choice *a, const mt_choice *b);

/* A call shape the runtime dispatched without an exact key (recording is
 * opt-in: mlatune.h), with how often; db/recorded.c. */
typedef struct mt_recorded_call {
    char arch[32];
    int compute_units;
    mt_problem_key key;     /* kind, static facts, heads, Sq, batch, seq_len (mean), max_len; lengths "uniform" */
    char how[16];           /* "nearest" or "heuristic" */
    int64_t calls;
} mt_recorded_call;

/* Adds calls[0..n) to the recorded calls, in one transaction: a shape
 * recorded before gets its calls added. */
mt_status mt_db_add_recorded(mt_db *db, const mt_recorded_call *calls, int n);
/* The recorded calls of `arch` (NULL: all), most called first, each
 * checked like any stored key.  *out is malloc'd. */
mt_status mt_db_load_recorded(mt_db *db, const char *arch, mt_recorded_call **out, int *n);

/* Measured ceilings ("copy_gbps": device-to-device copy counting bytes read
 * and written; "matrix_tflops"), per device; get returns the latest for an
 * arch, 0 when none was measured. */
mt_status mt_db_put_ceiling(mt_db *db, int64_t device_id, const char *kind, double value);
mt_status mt_db_get_ceiling(mt_db *db, const char *arch, const char *kind, double *value);

/* Runs `sql` (no results) inside a retried write transaction. */
mt_status mt_db_exec(mt_db *db, const char *sql);

/* The default user and system DB paths (see the comment above). */
void mt_db_default_paths(char *user, size_t user_size, char *system_db, size_t system_size);

/* Copies what belongs to `arch` (NULL: everything) from `src` into `dst`
 * (created when missing), skipping rows already there; provenance (the
 * measurement's origin) is kept.  Used by export, import and merge.  The
 * crossover points (db/crossover.h) travel too, each with its device: the
 * same point in both files stays as the newer measurement.  *copied
 * counts the measurements added. */
mt_status mt_db_copy_into(mt_db *src, mt_db *dst, const char *arch, int *copied);

/* What mt_db_copy_counted copied: measurements added, crossover points
 * added or replaced by newer ones. */
typedef struct mt_copy_counts {
    int measurements;
    int crossover_points;
} mt_copy_counts;

/* mt_db_copy_into, counting both (export, import and merge say both). */
mt_status mt_db_copy_counted(mt_db *src, mt_db *dst, const char *arch, mt_copy_counts *counts);

/* Turns a file just written by export or merge into one that readers can
 * open where they cannot write (rollback-journal mode, WAL folded in): the
 * installed system DB.  Opening it for writing later turns WAL on again. */
mt_status mt_db_make_shippable(mt_db *db);

/* Whether MLA_TUNE_DB / MLA_TUNE_SYSTEM_DB name a file: a path a person
 * set must exist (a typo is an error, not a silent fall-back to the
 * built-in heuristic). */
void mt_db_env_required(int *user, int *system_db);

/* The underlying handle (tests, tools). */
struct sqlite3 *mt_db_handle(mt_db *db);

#endif
