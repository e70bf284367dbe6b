/*
 * libFuzzer target: the database loader on arbitrary files.  The input is
 * written to a file and opened the way the runtime and `mla-tune show` open
 * databases (read-only: inspection, migration of a copy in memory, loading
 * and validating the choices and the crossover points), then the way
 * import reads a source.  Any
 * input must give MT_OK or a clean error.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "db/crossover.h"
#include "db/db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64], out_path[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/mla-tune-fuzz-%d.db", (int)getpid());
        snprintf(out_path, sizeof out_path, "/tmp/mla-tune-fuzz-out-%d.db", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    mt_db *db = NULL;
    if (mt_db_open(path, MT_DB_READ, &db) == MT_OK) {
        mt_choice *c = NULL;
        int n = 0;
        if (mt_db_load_choices(db, NULL, &c, &n) == MT_OK) free(c);
        mt_crossover_point *points = NULL;
        if (mt_db_load_crossover(db, NULL, &points, &n) == MT_OK) free(points);
        mt_db *dst = NULL;
        unlink(out_path);
        if (mt_db_open(out_path, MT_DB_WRITE, &dst) == MT_OK) {
            int copied = 0;
            mt_db_copy_into(db, dst, NULL, &copied);
            mt_db_close(dst);
        }
        mt_db_close(db);
    }
    unlink(path);
    return 0;
}
