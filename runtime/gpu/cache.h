/*
 * cache.h - the on-disk code-object cache.
 *
 * One file per entry, named by the hex of its 32-byte key (the JIT's SHA-256
 * of source, options, architecture and compiler version) under a two-letter
 * fan-out folder: DIR/ab/abcdef...0123.mtc.  A file holds a fixed header
 * (magic, format version, lengths, the key, and the SHA-256 of the payload),
 * then the compiler's log and the code object.
 *
 * Writers write a private temporary file in the same folder, fsync it and
 * rename() it over the final name; rename is atomic on POSIX filesystems, so
 * a reader in another process sees the old file, the new file or none,
 * never half of one.  Two processes writing the same key both succeed and
 * the last rename wins; since the key fixes the content, either is right.
 *
 * A reader verifies everything (magic, version, key, lengths against the file
 * size, payload digest).  A file that fails is reported as MT_ERR_CORRUPT and
 * removed, so the caller recompiles and writes a good one.
 */
#ifndef MT_CACHE_H
#define MT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/error.h"

/* The folder used when none is given: $MLA_TUNE_CACHE_DIR, else
 * $XDG_CACHE_HOME/mla-tune, else $HOME/.cache/mla-tune. */
mt_status mt_cache_default_dir(char *buf, size_t size);

/* Creates `dir` (and parents) if needed and checks it is writable. */
mt_status mt_cache_prepare_dir(const char *dir);

/* Where the entry for `key` lives (for tests and messages). */
void mt_cache_entry_path(const char *dir, const uint8_t key[32], char *buf, size_t size);

/* Reads an entry.  MT_ERR_NOT_FOUND on a miss; MT_ERR_CORRUPT (file
 * removed) when it fails verification.  On success *code and *log are
 * malloc'd (log NUL-terminated). */
mt_status mt_cache_read(const char *dir, const uint8_t key[32], void **code, size_t *code_size,
                        char **log);

/* Writes an entry atomically (temp file + fsync + rename). */
mt_status mt_cache_write(const char *dir, const uint8_t key[32], const void *code, size_t code_size,
                         const char *log);

#endif
