/*
 * error.h - the one status code space used inside mla-tune, and the
 * per-thread message that says what went wrong.
 *
 * Every fallible function returns an mt_status.  When it returns anything but
 * MT_OK it has also written a human-readable message (naming the file, value
 * or vendor call at fault) that mt_last_error() returns until the next
 * failure on the same thread.  Callers that add context use mt_fail() again,
 * prefixing the previous message, so the final text reads outside-in.
 */
#ifndef MT_ERROR_H
#define MT_ERROR_H

#include <stdarg.h>

/* Every status, once: its name, what it means, and the public code
 * (runtime/include/mlatune.h) it becomes where the API returns it.  The
 * enum, mt_status_name, mt_status_text and the API's mapping are all made
 * from this list. */
#define MT_STATUS_LIST(X)                                                                                    \
    X(MT_OK, "ok", MLT_OK)                                                                                   \
    X(MT_ERR_INVALID_ARGUMENT, "a caller passed a value that cannot be used", MLT_ERR_INVALID_ARGUMENT)     \
    X(MT_ERR_NO_BACKEND, "no vendor runtime library could be loaded", MLT_ERR_NO_BACKEND)                   \
    X(MT_ERR_NO_DEVICE, "a runtime loaded but reports no GPU", MLT_ERR_NO_DEVICE)                           \
    X(MT_ERR_UNSUPPORTED, "the backend does not implement this operation", MLT_ERR_INTERNAL)               \
    X(MT_ERR_OUT_OF_MEMORY, "host or device allocation failed", MLT_ERR_OUT_OF_MEMORY)                     \
    X(MT_ERR_COMPILE, "the kernel compiler rejected a source", MLT_ERR_COMPILE)                            \
    X(MT_ERR_VENDOR, "a vendor API call failed", MLT_ERR_LAUNCH)                                           \
    X(MT_ERR_IO, "a file could not be read or written", MLT_ERR_IO)                                        \
    X(MT_ERR_CORRUPT, "stored data failed its integrity check", MLT_ERR_DATABASE)                          \
    X(MT_ERR_NOT_FOUND, "a looked-up item does not exist", MLT_ERR_DATABASE)                               \
    X(MT_ERR_TIMEOUT, "a wait ran past its limit", MLT_ERR_INTERNAL)                                       \
    X(MT_ERR_DATABASE, "SQLite reported an error", MLT_ERR_DATABASE)                                       \
    X(MT_ERR_CONFIG, "a configuration file is malformed", MLT_ERR_INVALID_ARGUMENT)                        \
    X(MT_ERR_WRONG_RESULT, "a kernel's output did not match the reference", MLT_ERR_INTERNAL)

typedef enum mt_status {
#define MT_STATUS_ENUM(name, text, public_code) name,
    MT_STATUS_LIST(MT_STATUS_ENUM)
#undef MT_STATUS_ENUM
} mt_status;

/* Records a formatted message for this thread and returns `code`. */
mt_status mt_fail(mt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
mt_status mt_failv(mt_status code, const char *fmt, va_list ap);

/* The message of the most recent failure on this thread ("" if none). */
const char *mt_last_error(void);

/* A short constant name for a status code ("MT_ERR_COMPILE"). */
const char *mt_status_name(mt_status code);
/* What it means ("the kernel compiler rejected a source"). */
const char *mt_status_text(mt_status code);

/* Forget the message (tests use this to check that a call set one). */
void mt_clear_error(void);

#endif
