/*
 * attention_row.c - one query row's softmax attention in double
 * (attention_row.h): the scores, their maximum, the exponentials' sum, the
 * weighted values, in two passes over the keys.
 */
#include "attention_row.h"

#include <math.h>
#include <string.h>

double mt_attention_row(const double *q, const double *keys, size_t key_stride, const double *values,
                        size_t value_stride, long n, int d, int dl, double scale, double *score, double *out) {
    memset(out, 0, sizeof(double) * (size_t)dl);
    if (n <= 0) return -INFINITY;
    double m = -INFINITY;
    for (long j = 0; j < n; j++) {
        const double *k = keys + (size_t)j * key_stride;
        double s = 0.0;
        for (int c = 0; c < d; c++) s += q[c] * k[c];
        score[j] = s * scale;
        if (score[j] > m) m = score[j];
    }
    double sum = 0.0;
    for (long j = 0; j < n; j++) sum += (score[j] = exp(score[j] - m));
    for (long j = 0; j < n; j++) {
        const double w = score[j] / sum, *v = values + (size_t)j * value_stride;
        for (int c = 0; c < dl; c++) out[c] += w * v[c];
    }
    return m + log(sum);
}
