/*
 * crossover_refine.h - where `mla-tune crossover --refine` measures next:
 * the boundary between the prefill forms at one heads and context, found
 * by halving the intervals of sq whose ends have different winners.  A
 * form's time steps where its grid crosses a wave, so a line drawn between
 * two measured sq misses the step; halving measures it.
 */
#ifndef MT_CROSSOVER_REFINE_H
#define MT_CROSSOVER_REFINE_H

/* sqs[0..n) ascending, wins[i] the faster form at sqs[i] (0 MQA, 1 MHA,
 * -1 not measured).  The sq to measure next: the middle of the first
 * interval whose ends were both measured, with different winners, and
 * more than one token apart; 0 when there is none. */
int mt_crossover_refine_next(const int *sqs, const int *wins, int n);

#endif
