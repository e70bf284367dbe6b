/*
 * attention_row.h - one query row's softmax attention in double precision:
 * the step the CPU references of the decode family (mla_reference.c) and
 * the prefill family (prefill_reference.c) share.
 */
#ifndef MT_ATTENTION_ROW_H
#define MT_ATTENTION_ROW_H

#include <stddef.h>

/* out[0..dl) = sum_j softmax(scale * q . key_j)_j * value_j over the n
 * keys (key j at keys + j * key_stride, d values; value j at values + j *
 * value_stride, dl values); returns lse = max + log(sum of exp), natural
 * log.  n = 0: out = 0 and -inf.  score: scratch of n doubles. */
double mt_attention_row(const double *q, const double *keys, size_t key_stride, const double *values,
                        size_t value_stride, long n, int d, int dl, double scale, double *score, double *out);

#endif
