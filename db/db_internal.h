/*
 * db_internal.h - what the files of db/ share and nothing else sees.
 */
#ifndef MT_DB_INTERNAL_H
#define MT_DB_INTERNAL_H

#include <sqlite3.h>

#include "db.h"

struct mt_db {
    sqlite3 *h;
    char path[1024];
    mt_db_mode mode;
    char origin[300];   /* provenance stamped on measurements written here: host:pid */
};

mt_status db_error(mt_db *db, const char *what);  /* message naming the file and SQLite's reason */
mt_status begin_write(mt_db *db);                 /* BEGIN IMMEDIATE, retried while busy */
mt_status commit(mt_db *db);
void rollback(mt_db *db);
int step(sqlite3_stmt *stmt);                     /* sqlite3_step, retried while busy */

/* files.c: refuses what is not a regular file or is cut short (message
 * names the file); *wal: the header says WAL mode. */
mt_status db_check_file(const char *path, int *wal);
/* files.c: the sqlite3_open_v2 flags and name (a URI when immutable) with
 * which a reader opens `path`; *query_only: set PRAGMA query_only. */
int db_reader_flags(const char *path, int wal, char *name, size_t size, int *query_only);

/* validate.c: the checks every stored row passes before it is used or
 * copied (the runtime's own); the message names the file, key and value.
 * *v gets the parsed variant. */
mt_status db_check_row(const mt_db *db, const char *arch, const mt_problem_key *key, const char *family,
                       const char *params, mt_variant *v);
/* validate.c: the key part of db_check_row alone (recorded calls name no
 * variant). */
mt_status db_check_key(const mt_db *db, const char *arch, const mt_problem_key *key);
/* validate.c: a stored time that can be one: a number (not NULL, not
 * text), finite and > 0; a spread: NULL or a finite number >= 0. */
int db_time_usable(sqlite3_stmt *s, int col);
int db_spread_usable(sqlite3_stmt *s, int col);
/* validate.c: a stored validator is "" (unknown, before schema 5) or 64
 * lower-case hex digits: it is compared and printed, never more. */
int db_source_hash_ok(const char *hash);

/* validate.c: text a file holds that is printed and compared (a length
 * mix, a crossover point's variant names): printable ASCII only (a hostile
 * name cannot reach a terminal), and whole in a field of `size` bytes (a
 * longer one was cut on reading). */
int db_text_fits(const char *text, size_t size);

/* crossover.c: copies the crossover points of `arch` (NULL: all) from src
 * into dst inside dst's open write transaction (mt_db_copy_counted), each
 * with its device and checked as the loader checks it; the same point in
 * both stays as the newer measurement.  *copied: points added or
 * replaced. */
mt_status db_copy_crossover(mt_db *src, mt_db *dst, const char *arch, int *copied);

/* choices.c: one file of an overlay (user or system DB) opened for
 * reading; a path that is NULL or names no file is *db = NULL and MT_OK
 * when not required, an error when required. */
mt_status db_open_overlaid(const char *path, int required, mt_db **db);

/* What wrote a row (measurements, crossover points). */
#define DB_TOOL_VERSION "mla-tune 0.1.0"

/* A text column, "" for NULL: a hostile file may hold NULLs anywhere. */
static inline const char *col_text(sqlite3_stmt *s, int i) {
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? (const char *)t : "";
}

#endif
