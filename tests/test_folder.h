/*
 * test_folder.h - for tests that work in a temporary folder of their own
 * (`dir`, made by the test with mkdtemp): paths in it, files written into
 * it, a number read from a database in it, and shell commands run with
 * their output captured.
 */
#ifndef MT_TESTS_TEST_FOLDER_H
#define MT_TESTS_TEST_FOLDER_H

#include <stdio.h>
#include <sys/wait.h>

#include "db_query.h"

static char dir[256];

static inline void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static inline void write_file(const char *name, const char *text) {
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* One value from the database file `db` in the folder (db_query_int). */
static inline int count(const char *db, const char *sql) {
    char path[512];
    path_of(path, sizeof path, db);
    return db_query_int(path, sql);
}

/* Runs `cmd` through the shell; its stdout (callers add 2>&1 for stderr)
 * into `out`, cut to fit; returns its exit status, -1 when it was killed
 * or could not run. */
static inline int run_capture(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, size - 1, p) : 0;
    out[n] = '\0';
    int status = p ? pclose(p) : -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
