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
#define MT_STATUS_NAME(name, text, public_code) \
    case name: return #name;
        MT_STATUS_LIST(MT_STATUS_NAME)
#undef MT_STATUS_NAME
    }
    return "MT_ERR_UNKNOWN";
}

const char *mt_status_text(mt_status code) {
    switch (code) {
#define MT_STATUS_TEXT(name, text, public_code) \
    case name: return text;
        MT_STATUS_LIST(MT_STATUS_TEXT)
#undef MT_STATUS_TEXT
    }
    return "unknown status";
}
