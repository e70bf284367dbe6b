/*
 * int_list.h - comma-separated lists of integers on the command line
 * (`bench --heads 16,128 --batch 8,32`, `bench --prefill --tokens ...`).
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

#endif
