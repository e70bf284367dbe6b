/*
 * sweep_report.c - what `mla-tune sweep` prints (sweep_state.h): the plan
 * before (keys, jobs, the time estimate on one GPU and on several), the
 * summary after (counts, and per key the winner and its gain over the
 * built-in rule).
 */
#define _GNU_SOURCE
#include "sweep_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "estimate.h"
#include "heuristic_gain.h"
#include "key_work.h"
#include "prefill_key.h"
#include "sweep.h"
#include "timing.h"

/* The dry run's rows for the keys of one kind (# counts all keys, in the
 * plan's order): decode's columns, or prefill's (mt_prefill_key_columns). */
static void plan_table(const sweep *sw, int prefill) {
    char columns[96];
    if (prefill) {
        mt_prefill_key_columns(columns, sizeof columns);
        printf("%-4s %s %-9s %-10s %s\n", "#", columns, "q/kv", "variants", "jobs");
    } else {
        printf("%-4s %-5s %-3s %-5s %-6s %-5s %-6s %-9s %-10s %-6s %s\n", "#", "heads", "Sq", "page", "batch", "len",
               "max", "q/kv", "variants", "jobs", "lengths");
    }
    for (int k = 0; k < sw->n_keys; k++) {
        const sweep_key *sk = &sw->keys[k];
        if (mt_key_is_prefill(&sk->key) != prefill) continue;
        char dt[24];
        snprintf(dt, sizeof dt, "%s/%s", mt_dtype_name(sk->key.s.q_dtype), mt_dtype_name(sk->key.s.kv_dtype));
        if (prefill) {
            mt_prefill_key_cells(&sk->key, columns, sizeof columns);
            printf("%-4d %s %-9s %-10d %d\n", k, columns, dt, sk->n_candidates, sk->jobs);
        } else {
            printf("%-4d %-5d %-3d %-5d %-6d %-5d %-6d %-9s %-10d %-6d %s\n", k, sk->key.n_heads, sk->key.sq,
                   sk->key.s.page_size, sk->key.batch, sk->key.seq_len, sk->key.max_len, dt, sk->n_candidates,
                   sk->jobs, sk->key.lengths[0] ? sk->key.lengths : "uniform");
        }
    }
}

void mt_sweep_print_plan(const sweep *sw) {
    printf("plan %s (%s), arch %s, search %s, %d keys\n", sw->plan.name, sw->plan.path, sw->target.arch,
           mt_search_strategy_name(sw->plan.strategy), sw->n_keys);
    int prefill_keys = 0;
    for (int k = 0; k < sw->n_keys; k++) prefill_keys += mt_key_is_prefill(&sw->keys[k].key);
    /* decode's table as it always was (also for no keys), then prefill
     * keys in their own columns */
    if (prefill_keys < sw->n_keys || prefill_keys == 0) plan_table(sw, 0);
    if (prefill_keys) {
        if (prefill_keys < sw->n_keys) printf("\n");
        plan_table(sw, 1);
        printf("%s\n", mt_prefill_key_columns_note());
    }
    int compiles = 0;
    double seconds = 0;     /* the estimate (mt_plan_key_seconds) */
    double compiler_s = 0;  /* of one CPU thread (mt_plan_compile_seconds) */
    double *key_seconds = calloc((size_t)(sw->n_keys > 0 ? sw->n_keys : 1), sizeof *key_seconds);
    /* distinct (static facts, variant) pairs are what gets compiled */
    for (int k = 0; k < sw->n_keys; k++) {
        const sweep_key *sk = &sw->keys[k];
        double one = mt_plan_key_seconds(&sw->plan, &sk->key, &sw->target, sk->candidates, sk->n_candidates, sk->jobs);
        seconds += one;
        if (key_seconds) key_seconds[k] = one;
        for (int c = 0; c < sk->n_candidates; c++) {
            int seen = 0;
            for (int j = 0; j < k && !seen; j++) {
                const sweep_key *o = &sw->keys[j];
                if (memcmp(&o->key.s, &sk->key.s, sizeof sk->key.s) != 0) continue;
                for (int i = 0; i < o->n_candidates && !seen; i++)
                    seen = memcmp(o->candidates[i].values, sk->candidates[c].values, sizeof o->candidates[i].values) == 0;
            }
            if (!seen) compiles++, compiler_s += mt_plan_compile_seconds(&sk->candidates[c], &sw->target);
        }
    }
    printf("total: %d keys, %ld jobs, %d distinct compiles (about %.0f s of compiler)\n", sw->n_keys, sw->jobs_total,
           compiles, compiler_s);
    if (prefill_keys) {
        char speeds[160];
        mt_prefill_speeds_describe(speeds, sizeof speeds);
        printf("prefill launches timed at an average candidate's assumed speed per path: %s (rough; "
               "tuner/estimate.c)\n", speeds);
    }
    /* compiles run ahead on every CPU thread while the GPU measures (a
     * second or a few each), so they bound the time only when many */
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double compile_s = compiler_s / (double)(threads > 0 ? threads : 1);
    if (compile_s > seconds) seconds = compile_s;
    printf("estimate: about %.0f s (%.1f min) on one GPU, good to a factor of ~2 on an H100; keys already in the "
           "database are skipped\n", seconds, seconds / 60);
    if (key_seconds) {
        /* several GPUs: the keys go out costliest first, one at a time, so
         * the end is the busiest worker's, never before the costliest key's */
        printf("on several GPUs (--devices):");
        for (int gpus = 2; gpus <= 8; gpus *= 2) {
            double end = mt_sweep_handout_makespan(key_seconds, sw->n_keys, gpus);
            printf(" %d: about %.0f s (%.2fx);", gpus, end > compile_s ? end : compile_s,
                   seconds / (end > compile_s ? end : compile_s));
        }
        printf(" the costliest key alone takes about %.0f s\n", mt_sweep_handout_makespan(key_seconds, sw->n_keys,
                                                                                         sw->n_keys > 0 ? sw->n_keys : 1));
    }
    free(key_seconds);
}

/* The summary's rows for the keys of one kind: decode's columns, or
 * prefill's (mt_prefill_key_columns) with TFLOP/s, what bounds a prefill
 * call, in place of GB/s. */
static void summary_table(sweep *sw, mt_db *db, const mt_choice *choices, int n, int prefill, mt_gain_notes *notes) {
    char columns[96];
    if (prefill) {
        mt_prefill_key_columns(columns, sizeof columns);
        printf("%s %-9s %10s %8s %10s %-19s  %s\n", columns, "q/kv", "winner ms", "TFLOP/s", "heur. ms",
               "gain (range)", "winner (reason)");
    } else {
        printf("%-5s %-3s %-6s %-6s %-9s %10s %8s %10s %-19s  %s\n", "heads", "Sq", "batch", "len", "q/kv", "winner ms",
               "GB/s", "heur. ms", "gain (range)", "winner (reason)");
    }
    for (int k = 0; k < sw->n_keys; k++) {
        const mt_problem_key *key = &sw->keys[k].key;
        if (mt_key_is_prefill(key) != prefill) continue;
        for (int i = 0; i < n; i++) {
            const mt_choice *c = &choices[i];
            if (c->key.n_heads != key->n_heads || c->key.sq != key->sq || c->key.batch != key->batch ||
                c->key.seq_len != key->seq_len || strcmp(c->key.lengths, key->lengths) != 0 ||
                c->key.s.page_size != key->s.page_size ||
                c->key.s.q_dtype != key->s.q_dtype || c->key.s.kv_dtype != key->s.kv_dtype || c->key.s.d != key->s.d ||
                mt_key_is_prefill(&c->key) != prefill)
                continue;
            char dt[24], gain_text[48] = "-", heuristic_text[16] = "-";
            snprintf(dt, sizeof dt, "%s/%s", mt_dtype_name(key->s.q_dtype), mt_dtype_name(key->s.kv_dtype));
            mt_gain gain;
            if (mt_gain_over_heuristic(db, c, &gain) != MT_OK) {
                mt_cli_error("%s", mt_last_error());
                gain.gain = NAN;
                snprintf(gain.missing, sizeof gain.missing, "the database could not be read");
            }
            mt_gain_format(&gain, gain_text, sizeof gain_text);
            if (isfinite(gain.gain)) snprintf(heuristic_text, sizeof heuristic_text, "%.4f", gain.heuristic_ms);
            mt_gain_note(notes, &gain);
            if (prefill) {
                mt_prefill_key_cells(key, columns, sizeof columns);
                printf("%s %-9s %10.4f %8.1f %10s %-19s  %s (%s)\n", columns, dt, c->median_ms,
                       mt_key_flops(key) / (c->median_ms * 1e-3) / 1e12, heuristic_text, gain_text, c->params,
                       c->reason);
                continue;
            }
            printf("%-5d %-3d %-6d %-6d %-9s %10.4f %8.0f %10s %-19s  %s (%s)%s%s\n", key->n_heads, key->sq,
                   key->batch, key->seq_len, dt, c->median_ms, mt_key_bytes(key) / (c->median_ms * 1e-3) / 1e9,
                   heuristic_text, gain_text, c->params,
                   c->reason, strcmp(key->lengths, "uniform") != 0 ? " lengths " : "",
                   strcmp(key->lengths, "uniform") != 0 ? key->lengths : "");
        }
    }
}

void mt_sweep_print_summary(sweep *sw, mt_db *db) {
    double took = mt_now_s() - sw->started;
    long failed = 0;
    for (int i = 1; i < 5; i++) failed += sw->failed[i];
    printf("\nsweep %s: %ld measured, %ld skipped (already in %s), %ld failed (wrong-result %ld, compile-failed %ld, "
           "launch-failed %ld, timeout %ld), %.1f s\n",
           sw->plan.name, sw->measured, sw->skipped, sw->db_path, failed, sw->failed[MT_MEASURE_WRONG_RESULT],
           sw->failed[MT_MEASURE_COMPILE_FAILED], sw->failed[MT_MEASURE_LAUNCH_FAILED], sw->failed[MT_MEASURE_TIMEOUT],
           took);
    mt_choice *choices = NULL;
    int n = 0;
    if (mt_db_load_choices(db, sw->target.arch, &choices, &n) != MT_OK) {
        mt_cli_error("%s", mt_last_error());
        return;
    }
    int n_prefill = 0;
    for (int k = 0; k < sw->n_keys; k++) n_prefill += mt_key_is_prefill(&sw->keys[k].key);
    mt_gain_notes notes = {0};
    /* decode's table as it always was (also when there is no key at all),
     * then prefill keys in their own columns */
    if (n_prefill < sw->n_keys || n_prefill == 0) summary_table(sw, db, choices, n, 0, &notes);
    if (n_prefill) {
        if (n_prefill < sw->n_keys) printf("\n");
        summary_table(sw, db, choices, n, 1, &notes);
        printf("%s; TFLOP/s as mt_prefill_flops counts them\n", mt_prefill_key_columns_note());
    }
    printf("gain: the built-in heuristic's median (what the runtime runs untuned, measured in the sweep) over the "
           "winner's; range: each median moved by half its p90-p10 spread\n");
    char why[700];
    mt_gain_notes_text(&notes, why, sizeof why);
    if (notes.unknown) printf("gain '-' for %d key(s): %s\n", notes.unknown, why);
    free(choices);
}

