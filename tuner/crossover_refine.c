/*
 * crossover_refine.c - see crossover_refine.h.
 */
#include "crossover_refine.h"

int mt_crossover_refine_next(const int *sqs, const int *wins, int n) {
    for (int k = 0; k + 1 < n; k++)
        if (wins[k] >= 0 && wins[k + 1] >= 0 && wins[k] != wins[k + 1] && sqs[k + 1] - sqs[k] > 1)
            return sqs[k] + (sqs[k + 1] - sqs[k]) / 2;
    return 0;
}
