/*
 * db_query.h - a test's look straight into an SQLite file, past the code
 * under test: the first column of the first row of one query.
 */
#ifndef MT_TESTS_DB_QUERY_H
#define MT_TESTS_DB_QUERY_H

#include <sqlite3.h>

/* The integer that `sql` yields on the database at `path` (opened read-only),
 * or -1 when the file cannot be opened, the query fails or returns no row. */
static inline int db_query_int(const char *path, const char *sql) {
    sqlite3 *h = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            n = sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(h);
    return n;
}

#endif
