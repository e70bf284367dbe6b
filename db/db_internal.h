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

/* A text column, "" for NULL: a hostile file may hold NULLs anywhere. */
static inline const char *col_text(sqlite3_stmt *s, int i) {
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? (const char *)t : "";
}

#endif
