/*
 * check.h - the tests' assertion macros.  A failed CHECK prints where and
 * why and marks the test failed; the test goes on so one run shows every
 * failure.  Each test's main returns check_summary().
 */
#ifndef MT_CHECK_H
#define MT_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures = 0, check_count = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        check_count++;                                                              \
        if (!(cond)) {                                                              \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

#define CHECK_MSG(cond, ...)                                                        \
    do {                                                                            \
        check_count++;                                                              \
        if (!(cond)) {                                                              \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
        }                                                                           \
    } while (0)

/* a status call that must succeed; prints mt_last_error() when it does not */
#define CHECK_OK(call)                                                              \
    do {                                                                            \
        mt_status check_st_ = (call);                                               \
        check_count++;                                                              \
        if (check_st_ != MT_OK) {                                                   \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,     \
                    mt_status_name(check_st_), mt_last_error());                    \
        }                                                                           \
    } while (0)

#define CHECK_STATUS(call, expected)                                                \
    do {                                                                            \
        mt_status check_st_ = (call);                                               \
        check_count++;                                                              \
        if (check_st_ != (expected)) {                                              \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s -> %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #call, mt_status_name(check_st_), mt_status_name(expected),     \
                    mt_last_error());                                               \
        }                                                                           \
    } while (0)

/* exit code that ctest reports as "skipped" */
#define CHECK_SKIP_CODE 77

static int check_summary(const char *name) {
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
