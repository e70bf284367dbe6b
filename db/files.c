/*
 * files.c - what a database path names, checked before SQLite opens it, and
 * how a reader opens it.
 *
 * Why these checks live outside SQLite:
 *   - SQLite open()s the path with a plain blocking open: a FIFO (or a
 *     character device) named as a database hangs the command forever.  We
 *     look first, with O_NONBLOCK, and refuse anything but a regular file;
 *   - SQLite reads a file cut short by less than a page as if the missing
 *     bytes were zeros, and PRAGMA quick_check does not look inside records,
 *     so a file that lost its last ~100 bytes passed and export copied its
 *     damaged rows.  A database file is always a whole number of pages, and
 *     (with no journal or WAL beside it, so nothing is half-written) at
 *     least as long as its header says;
 *   - a WAL-mode file needs a -shm file beside it even to be read.  In a
 *     folder the reader cannot write (a root-owned PREFIX/share/mla-tune)
 *     SQLite cannot create it and every read fails with "attempt to write
 *     a readonly database".  Such a file is opened immutable: no writer is
 *     active (a writer makes the -shm), and an installed DB is replaced by
 *     installing a new file, not written in place while it is read;
 *   - a reader that opens a WAL-mode file read-only leaves an empty -wal and
 *     -shm beside it when it closes (a read-only connection may not remove
 *     them).  Where the reader may write the file and its folder, it opens
 *     read-write with query_only on, so that SQLite's last connection
 *     cleans up as a writer's does.  It still never changes the content.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_internal.h"

static int exists(const char *path, const char *suffix) {
    char p[1100];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }
static unsigned long be32(const unsigned char *p) {
    return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

mt_status db_check_file(const char *path, int *wal) {
    *wal = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        struct stat st;
        /* a FIFO with no writer opens fine non-blocking; what fails here is
         * left to SQLite, whose message names the reason */
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s is not a regular file: a database must be one", path);
        return MT_OK;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const char *what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a regular file";
        close(fd);
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s is %s, not a database file", path, what);
    }
    unsigned char h[100];
    ssize_t got = pread(fd, h, sizeof h, 0);
    close(fd);
    if (got != (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0) return MT_OK;  /* SQLite says what it is */
    unsigned long page = be16(h + 16) == 1 ? 65536 : be16(h + 16);
    if (page < 512 || (page & (page - 1))) return MT_OK;  /* a damaged header: SQLite reports it */
    *wal = h[18] == 2;
    if (st.st_size % (off_t)page != 0)
        return mt_fail(MT_ERR_CORRUPT, "%s is damaged: truncated (%lld bytes, not a whole number of %lu-byte pages)",
                       path, (long long)st.st_size, page);
    /* the header's page count is valid when its two change counters agree;
     * a journal or WAL beside the file may hold pages not yet in it */
    unsigned long pages = be32(h + 28);
    if (be32(h + 92) == be32(h + 24) && pages > 0 && !exists(path, "-wal") && !exists(path, "-journal") &&
        (unsigned long long)st.st_size < (unsigned long long)pages * page)
        return mt_fail(MT_ERR_CORRUPT, "%s is damaged: truncated (%lld bytes, its header says %lu pages of %lu)", path,
                       (long long)st.st_size, pages, page);
    return MT_OK;
}

/* Whether the folder holding `path` is writable by this process. */
static int folder_writable(const char *path) {
    char *copy = strdup(path);
    if (!copy) return 0;
    int ok = access(dirname(copy), W_OK | X_OK) == 0;
    free(copy);
    return ok;
}

int db_reader_flags(const char *path, int wal, char *uri, size_t size, int *query_only) {
    snprintf(uri, size, "%s", path);
    *query_only = 0;
    if (!wal) return SQLITE_OPEN_READONLY;
    int dir_ok = folder_writable(path);
    if (dir_ok && access(path, W_OK) == 0) {
        *query_only = 1;
        return SQLITE_OPEN_READWRITE;
    }
    if (dir_ok || exists(path, "-shm")) return SQLITE_OPEN_READONLY;
    /* file:PATH?immutable=1, with the characters a URI gives meaning to escaped */
    size_t n = (size_t)snprintf(uri, size, "file:");
    for (const char *p = path; *p && n + 4 < size; p++) {
        if (*p == '%' || *p == '?' || *p == '#') n += (size_t)snprintf(uri + n, size - n, "%%%02X", (unsigned char)*p);
        else uri[n++] = *p;
    }
    uri[n] = '\0';
    snprintf(uri + n, size - n, "?immutable=1");
    return SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
}
