/*
 * cache.c - the on-disk code-object cache (see cache.h for the format and
 * the concurrency argument).
 */
#define _GNU_SOURCE
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/sha256.h"

#define CACHE_MAGIC "MLTCACHE"
enum {
    CACHE_FORMAT = 1,
    HEADER_SIZE = 8 + 4 + 4 + 8 + 32 + 32, /* magic, format, log_len, code_len, key, digest */
    MAX_ENTRY = 256 << 20                   /* no code object is near this: a bigger size is damage */
};

mt_status mt_cache_default_dir(char *buf, size_t size) {
    const char *dir = getenv("MLA_TUNE_CACHE_DIR");
    if (dir && dir[0]) {
        snprintf(buf, size, "%s", dir);
        return MT_OK;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0]) {
        snprintf(buf, size, "%s/mla-tune", xdg);
        return MT_OK;
    }
    const char *home = getenv("HOME");
    if (home && home[0]) {
        snprintf(buf, size, "%s/.cache/mla-tune", home);
        return MT_OK;
    }
    return mt_fail(MT_ERR_IO, "no cache folder: set MLA_TUNE_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

static mt_status make_dirs(const char *path) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return mt_fail(MT_ERR_IO, "cache path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return mt_fail(MT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return mt_fail(MT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    return MT_OK;
}

mt_status mt_cache_prepare_dir(const char *dir) {
    mt_status st = make_dirs(dir);
    if (st != MT_OK) return st;
    if (access(dir, W_OK | X_OK) != 0)
        return mt_fail(MT_ERR_IO, "cache folder %s is not writable: %s", dir, strerror(errno));
    return MT_OK;
}

void mt_cache_entry_path(const char *dir, const uint8_t key[32], char *buf, size_t size) {
    char hex[65];
    mt_sha256_hex(key, hex);
    snprintf(buf, size, "%s/%.2s/%s.mtc", dir, hex, hex);
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void payload_digest(const char *log, size_t log_len, const void *code, size_t code_len,
                           uint8_t digest[32]) {
    mt_sha256 h;
    mt_sha256_init(&h);
    mt_sha256_update(&h, log, log_len);
    mt_sha256_update(&h, code, code_len);
    mt_sha256_final(&h, digest);
}

static mt_status corrupt(const char *path, const char *why) {
    /* remove it so the next writer replaces it; a racing writer may have
     * renamed a good file in meanwhile, which costs one recompile at worst */
    unlink(path);
    return mt_fail(MT_ERR_CORRUPT, "corrupt cache entry %s (%s); removed", path, why);
}

mt_status mt_cache_read(const char *dir, const uint8_t key[32], void **code, size_t *code_size,
                        char **log) {
    char path[PATH_MAX];
    mt_cache_entry_path(dir, key, path, sizeof path);
    *code = NULL;
    *log = NULL;
    *code_size = 0;
    /* non-blocking, and only a regular file counts: a FIFO in the cache
     * hung the runtime in fopen; as damage, it is removed and rebuilt */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT) return mt_fail(MT_ERR_NOT_FOUND, "no cache entry %s", path);
        return mt_fail(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return corrupt(path, "not a regular file");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return mt_fail(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    uint8_t header[HEADER_SIZE];
    if (fread(header, 1, HEADER_SIZE, f) != HEADER_SIZE) {
        fclose(f);
        return corrupt(path, "shorter than its header");
    }
    if (memcmp(header, CACHE_MAGIC, 8) != 0) {
        fclose(f);
        return corrupt(path, "bad magic");
    }
    if (get_u32(header + 8) != CACHE_FORMAT) {
        fclose(f);
        return corrupt(path, "unknown format version");
    }
    uint64_t log_len = get_u32(header + 12), code_len = get_u64(header + 16);
    if (memcmp(header + 24, key, 32) != 0) {
        fclose(f);
        return corrupt(path, "key does not match its name");
    }
    if (code_len == 0 || code_len > MAX_ENTRY || log_len > MAX_ENTRY ||
        (uint64_t)st.st_size != HEADER_SIZE + log_len + code_len) {
        fclose(f);
        return corrupt(path, "lengths disagree with the file size");
    }
    char *log_buf = malloc(log_len + 1);
    void *code_buf = malloc(code_len);
    if (!log_buf || !code_buf) {
        free(log_buf);
        free(code_buf);
        fclose(f);
        return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory reading %s", path);
    }
    size_t got_log = fread(log_buf, 1, log_len, f);
    size_t got_code = fread(code_buf, 1, code_len, f);
    fclose(f);
    log_buf[log_len] = '\0';
    uint8_t digest[32];
    if (got_log == log_len && got_code == code_len)
        payload_digest(log_buf, log_len, code_buf, code_len, digest);
    if (got_log != log_len || got_code != code_len || memcmp(digest, header + 56, 32) != 0) {
        free(log_buf);
        free(code_buf);
        return corrupt(path, "payload digest mismatch");
    }
    *code = code_buf;
    *code_size = code_len;
    *log = log_buf;
    return MT_OK;
}

mt_status mt_cache_write(const char *dir, const uint8_t key[32], const void *code, size_t code_size,
                         const char *log) {
    if (!code || code_size == 0) return mt_fail(MT_ERR_INVALID_ARGUMENT, "cache write of an empty code object");
    if (!log) log = "";
    size_t log_len = strlen(log);
    if (log_len > MAX_ENTRY || code_size > MAX_ENTRY)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "cache entry too large");
    char path[PATH_MAX], sub[PATH_MAX], tmp[PATH_MAX + 64];
    mt_cache_entry_path(dir, key, path, sizeof path);
    snprintf(sub, sizeof sub, "%s", path);
    *strrchr(sub, '/') = '\0';
    mt_status st = make_dirs(sub);
    if (st != MT_OK) return st;
    /* unique per process and call, so concurrent writers never share a temp file */
    static _Atomic unsigned counter;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u.%ld", path, (long)getpid(), counter++, (long)now.tv_nsec);

    uint8_t header[HEADER_SIZE];
    memcpy(header, CACHE_MAGIC, 8);
    put_u32(header + 8, CACHE_FORMAT);
    put_u32(header + 12, (uint32_t)log_len);
    put_u64(header + 16, code_size);
    memcpy(header + 24, key, 32);
    payload_digest(log, log_len, code, code_size, header + 56);

    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return mt_fail(MT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    const void *parts[3] = {header, log, code};
    size_t sizes[3] = {HEADER_SIZE, log_len, code_size};
    for (int i = 0; i < 3; i++) {
        const uint8_t *p = parts[i];
        size_t left = sizes[i];
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = errno;
                close(fd);
                unlink(tmp);
                return mt_fail(MT_ERR_IO, "cannot write %s: %s", tmp, strerror(e));
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return mt_fail(MT_ERR_IO, "cannot flush %s: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return mt_fail(MT_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return MT_OK;
}
