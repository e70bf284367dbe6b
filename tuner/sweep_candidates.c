/*
 * sweep_candidates.c - which variants a sweep measures for a key, and in
 * how many jobs (sweep.h): the space's points with the family default and
 * the built-in rule's variant in front, a seeded sample for random and
 * halving search, and successive halving's rounds.
 */
#define _GNU_SOURCE
#include "sweep.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heuristic_gain.h"

static uint64_t mix(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull, x ^= x >> 33;
    return x;
}

/* Adds v to the list unless it is there; 0 when memory ran out. */
static int add_if_missing(mt_variant **items, int *n, const mt_variant *v) {
    for (int i = 0; i < *n; i++)
        if (memcmp((*items)[i].values, v->values, sizeof v->values) == 0) return 1;
    mt_variant *grown = realloc(*items, sizeof *grown * (size_t)(*n + 1));
    if (!grown) return 0;
    *items = grown;
    grown[(*n)++] = *v;
    return 1;
}

/* Moves the entry equal to v (if any) to position `to`. */
static void move_to(mt_variant *items, int n, const mt_variant *v, int to) {
    for (int i = 0; i < n; i++)
        if (memcmp(items[i].values, v->values, sizeof v->values) == 0) {
            mt_variant tmp = items[to];
            items[to] = items[i], items[i] = tmp;
            return;
        }
}

int mt_sweep_candidates(const mt_plan *plan, const mt_space *space, const mt_problem_key *key, const mt_target *t,
                        int compute_units, int key_index, mt_variant **out, int *heuristic) {
    struct { mt_variant *items; int n; } all = {NULL, 0};
    if (mt_space_list(space, &key->s, t, &all.items, &all.n, NULL) != MT_OK) mt_clear_error();
    /* measured whether or not the space holds them: the default (the
     * choice rule keeps it on a tie) and the built-in rule's variant (what
     * the runtime runs untuned: the gain is over it, heuristic_gain.h) */
    mt_variant dflt, rule;
    int default_valid = mt_variant_default_for(space->family, &key->s, t, &dflt) == MT_OK;
    mt_clear_error();
    int rule_valid = mt_untuned_variant(space->family, key, t, compute_units, &rule) == MT_OK;
    mt_clear_error();
    if (default_valid && !add_if_missing(&all.items, &all.n, &dflt)) default_valid = 0;
    if (rule_valid && !add_if_missing(&all.items, &all.n, &rule)) rule_valid = 0;
    int front = 0; /* kept in front of the sample: the default, then the rule's variant */
    if (default_valid) move_to(all.items, all.n, &dflt, front++);
    if (rule_valid && !(default_valid && memcmp(rule.values, dflt.values, sizeof rule.values) == 0))
        move_to(all.items, all.n, &rule, front++);
    if (plan->strategy != MT_SEARCH_EXHAUSTIVE && plan->budget < all.n) {
        /* seeded Fisher-Yates over the points behind the front ones */
        uint64_t state = mix(plan->seed * 0x9e3779b97f4a7c15ull + (uint64_t)key_index + 1);
        for (int i = all.n - 1; i > front; i--) {
            state = mix(state + (uint64_t)i);
            int j = front + (int)(state % (uint64_t)(i - front + 1));
            mt_variant tmp = all.items[i];
            all.items[i] = all.items[j], all.items[j] = tmp;
        }
        all.n = plan->budget > front ? plan->budget : front;
    }
    *heuristic = -1;
    for (int i = 0; rule_valid && i < all.n && *heuristic < 0; i++)
        if (memcmp(all.items[i].values, rule.values, sizeof rule.values) == 0) *heuristic = i;
    *out = all.items;
    return all.n;
}

int mt_sweep_halving_rounds(const mt_plan *plan, int n, int *sizes, int *reps, int max_rounds) {
    int rounds = 0, r = plan->reps;
    /* runs double each round and end at the plan's reps: count rounds first */
    int k = n, count = 1;
    while (k > 1 && count < max_rounds) k = (int)ceil(k * plan->keep), count++;
    for (int i = 0; i < count; i++) {
        int shift = count - 1 - i;
        r = plan->reps >> shift;
        reps[i] = r < 3 ? 3 : r;
        sizes[i] = i == 0 ? n : (int)ceil(sizes[i - 1] * plan->keep);
        rounds++;
    }
    return rounds;
}

int mt_sweep_job_count(const mt_plan *plan, int n_candidates) {
    if (plan->strategy != MT_SEARCH_HALVING) return n_candidates;
    int sizes[16], reps[16], total = 0;
    int rounds = mt_sweep_halving_rounds(plan, n_candidates, sizes, reps, 16);
    for (int i = 0; i < rounds; i++) total += sizes[i];
    return total;
}

