/*
 * int_list.h - integers on the command line, one (`--reps 30`) or a
 * comma-separated list (`bench --heads 16,128 --batch 8,32`).
 */
#ifndef MT_INT_LIST_H
#define MT_INT_LIST_H

enum { MT_INT_LIST_MAX = 16 };

typedef struct mt_int_list {
    int v[MT_INT_LIST_MAX];
    int n;
} mt_int_list;

/* Parses "a,b,c" into out: 0, or -1 when an entry is not a whole number
 * in lo..hi, when there are more than MT_INT_LIST_MAX entries, or none. */
int mt_int_list_parse(const char *text, mt_int_list *out, long lo, long hi);

/* Parses one whole number in lo..hi into *out: 0, or -1 (out untouched)
 * when text is empty, has anything after the digits ("30x", "1e3"), or is
 * out of range: atoi() would have read "30x" as 30 and "x" as 0. */
int mt_int_parse(const char *text, long lo, long hi, int *out);

/* The integer options every timing command takes (bench, bench --prefill,
 * crossover): --warmup (0..10000), --reps (3..10000: a median and its
 * p10-p90 need a few) and --device (a GPU ordinal).  When opt is one of
 * them, parses value into its field and returns 0, or -1 with *want set to
 * what the value should be (for the error); 1 when opt is none of them. */
int mt_timing_int_option(const char *opt, const char *value, int *warmup, int *reps, int *device,
                         const char **want);

#endif
