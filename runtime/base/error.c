/*
 * error.c - per-thread error messages (see error.h).
 *
 * The message lives in thread-local storage so that plans running on several
 * threads never read each other's errors.  Formatting goes through a scratch
 * buffer first so that a message may include the previous one ("%s",
 * mt_last_error()) without overlapping reads and writes.
 */
#include "error.h"

#include <stdio.h>
#include <string.h>

enum { MT_ERROR_MAX = 4096 };

static _Thread_local char last_message[MT_ERROR_MAX];

mt_status mt_failv(mt_status code, const char *fmt, va_list ap) {
    char scratch[MT_ERROR_MAX];
    vsnprintf(scratch, sizeof scratch, fmt, ap);
    memcpy(last_message, scratch, sizeof scratch);
    return code;
}

mt_status mt_fail(mt_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    mt_failv(code, fmt, ap);
    va_end(ap);
    return code;
}

const char *mt_last_error(void) { return last_message; }

void mt_clear_error(void) { last_message[0] = '\0'; }

const char *mt_status_name(mt_status code) {
    switch (code) {
    case MT_OK: return "MT_OK";
    case MT_ERR_INVALID_ARGUMENT: return "MT_ERR_INVALID_ARGUMENT";
    case MT_ERR_NO_BACKEND: return "MT_ERR_NO_BACKEND";
    case MT_ERR_NO_DEVICE: return "MT_ERR_NO_DEVICE";
    case MT_ERR_UNSUPPORTED: return "MT_ERR_UNSUPPORTED";
    case MT_ERR_OUT_OF_MEMORY: return "MT_ERR_OUT_OF_MEMORY";
    case MT_ERR_COMPILE: return "MT_ERR_COMPILE";
    case MT_ERR_VENDOR: return "MT_ERR_VENDOR";
    case MT_ERR_IO: return "MT_ERR_IO";
    case MT_ERR_CORRUPT: return "MT_ERR_CORRUPT";
    case MT_ERR_NOT_FOUND: return "MT_ERR_NOT_FOUND";
    case MT_ERR_TIMEOUT: return "MT_ERR_TIMEOUT";
    case MT_ERR_DATABASE: return "MT_ERR_DATABASE";
    case MT_ERR_CONFIG: return "MT_ERR_CONFIG";
    case MT_ERR_WRONG_RESULT: return "MT_ERR_WRONG_RESULT";
    }
    return "MT_ERR_UNKNOWN";
}
