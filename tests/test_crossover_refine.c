/*
 * mla-tune crossover --refine's choice of the next sq
 * (tuner/crossover_refine.h), with winners from a function instead of the
 * GPU: from a coarse grid, halving must end with every boundary measured
 * one token wide (the last MQA sq and the first MHA sq both in the set), in
 * about log2 of the interval's width measurements each, never measure
 * what it has, and leave intervals with a failed end alone.
 */
#include "check.h"
#include "tuner/crossover_refine.h"

/* MHA wins on [lo1, hi1) and from lo2 on: two boundaries and a step back */
static int winner(int sq) { return (sq >= 133 && sq < 141) || sq >= 265; }

/* sqs/wins grown by refinement from the grid; returns the measurements made */
static int refine(int *sqs, int *wins, int *n, int max) {
    int made = 0;
    for (int next; *n < max && (next = mt_crossover_refine_next(sqs, wins, *n));) {
        int at = 0;
        while (at < *n && sqs[at] < next) at++;
        CHECK_MSG(at == *n || sqs[at] != next, "sq %d asked for twice", next);
        for (int k = *n; k > at; k--) sqs[k] = sqs[k - 1], wins[k] = wins[k - 1];
        sqs[at] = next, wins[at] = winner(next), (*n)++, made++;
    }
    return made;
}

static int has(const int *sqs, int n, int sq) {
    for (int i = 0; i < n; i++)
        if (sqs[i] == sq) return 1;
    return 0;
}

int main(void) {
    int sqs[64] = {1, 16, 64, 128, 256, 512}, wins[64], n = 6;
    for (int i = 0; i < n; i++) wins[i] = winner(sqs[i]);
    const int made = refine(sqs, wins, &n, 64);
    /* 128 (MQA) -> 256 (MQA): no flip seen at the ends, left alone; 256 (MQA) -> 512 (MHA): halved down to 264 | 265 */
    CHECK_MSG(has(sqs, n, 264) && has(sqs, n, 265), "the boundary 264 | 265 not measured (%d made)", made);
    CHECK_MSG(made <= 8, "%d measurements for one 256-wide interval (log2: 8)", made);
    for (int i = 0; i + 1 < n; i++) CHECK(sqs[i] < sqs[i + 1]);
    CHECK(mt_crossover_refine_next(sqs, wins, n) == 0);
    /* a grid that sees both flips of the MHA window finds both edges */
    int s2[64] = {128, 136, 144}, w2[64], n2 = 3;
    for (int i = 0; i < n2; i++) w2[i] = winner(s2[i]);
    refine(s2, w2, &n2, 64);
    CHECK(has(s2, n2, 132) && has(s2, n2, 133) && has(s2, n2, 140) && has(s2, n2, 141));
    /* a failed end (-1) is not an interval to halve; one token apart is done */
    const int s3[3] = {100, 200, 201}, w3[3] = {0, -1, 1};
    CHECK(mt_crossover_refine_next(s3, w3, 3) == 0);
    const int s4[2] = {264, 265}, w4[2] = {0, 1};
    CHECK(mt_crossover_refine_next(s4, w4, 2) == 0);
    const int s5[2] = {10, 20}, w5[2] = {1, 0}; /* MHA then MQA: a boundary too */
    CHECK(mt_crossover_refine_next(s5, w5, 2) == 15);
    /* the cap: refinement stops when the table is full */
    int s6[64] = {1, 1000}, w6[64] = {0, 1}, n6 = 2;
    CHECK(refine(s6, w6, &n6, 5) == 3 && n6 == 5);
    return check_summary("test_crossover_refine");
}
