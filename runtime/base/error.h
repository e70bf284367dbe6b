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

typedef enum mt_status {
    MT_OK = 0,
    MT_ERR_INVALID_ARGUMENT,  /* a caller passed a value that cannot be used */
    MT_ERR_NO_BACKEND,        /* no vendor runtime library could be loaded */
    MT_ERR_NO_DEVICE,         /* a runtime loaded but reports no GPU */
    MT_ERR_UNSUPPORTED,       /* the backend does not implement this operation */
    MT_ERR_OUT_OF_MEMORY,     /* host or device allocation failed */
    MT_ERR_COMPILE,           /* the kernel compiler rejected a source */
    MT_ERR_VENDOR,            /* a vendor API call failed (message has details) */
    MT_ERR_IO,                /* a file could not be read or written */
    MT_ERR_CORRUPT,           /* stored data failed its integrity check */
    MT_ERR_NOT_FOUND,         /* a looked-up item does not exist */
    MT_ERR_TIMEOUT,           /* a wait ran past its limit */
    MT_ERR_DATABASE,          /* SQLite reported an error */
    MT_ERR_CONFIG,            /* a configuration file is malformed */
    MT_ERR_WRONG_RESULT       /* a kernel's output did not match the reference */
} mt_status;

/* Records a formatted message for this thread and returns `code`. */
mt_status mt_fail(mt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
mt_status mt_failv(mt_status code, const char *fmt, va_list ap);

/* The message of the most recent failure on this thread ("" if none). */
const char *mt_last_error(void);

/* A short constant name for a status code ("MT_ERR_COMPILE"). */
const char *mt_status_name(mt_status code);

/* Forget the message (tests use this to check that a call set one). */
void mt_clear_error(void);

#endif
