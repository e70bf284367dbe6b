/*
 * plan-workspace.c - session 27's record: what a plan on the shipped H100
 * DBs compiles and the workspace it asks for, before (every variant sized
 * at max_batch, the winners run as measured) and after (winners rescaled
 * between keys, each variant sized for the batches it runs at).  No GPU.
 *
 *   gcc -std=c11 -O1 -I. -Iruntime/include -Ibuild reports/h100/session27/plan-workspace.c \
 *       build/libmlatune_core.a -lsqlite3 -lm -ldl -lpthread -o /tmp/plan-workspace
 *   build/mla-tune merge reports/h100/{fast-decode,ragged,broad,crossover,prefill}/tuning.db -o /tmp/sys.db
 *   /tmp/plan-workspace /tmp/sys.db
 *
 * (`mla-tune lookup ... --max-batch N` prints the "after" of one shape.)
 */
#include <stdio.h>

#include "db/db.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/api/dispatch.h"

/* Every variant at max_batch: the sizing before session 27. */
static size_t at_max_batch(const mt_dispatch_table *t) {
    size_t most = 0;
    for (int i = 0; i < t->n_variants; i++) {
        size_t w = mt_mla_decode_workspace_bytes(&t->variants[i], &t->shape.s, t->max_batch, t->shape.n_heads, 1,
                                                 t->compute_units);
        if (w > most) most = w;
    }
    return most;
}

int main(int argc, char **argv) {
    mt_choice *c;
    mt_choice_source *src;
    int n;
    mt_target t;
    if (argc != 2 || mt_db_load_overlay(NULL, 0, argv[1], 1, "sm_90", &c, &src, &n) != MT_OK ||
        mt_target_for_arch("sm_90", &t) != MT_OK) {
        fprintf(stderr, "usage: plan-workspace SYSTEM_DB (%s)\n", mt_last_error());
        return 1;
    }
    static const int heads[] = {16, 64, 128}, max_batch[] = {64, 256, 1024}, pages[] = {64, 1};
    static const mt_dtype kv[] = {MT_BF16, MT_FP8_E4M3};
    for (int p = 0; p < 2; p++)
        for (int h = 0; h < 3; h++)
            for (int k = 0; k < 2 - p; k++)
                for (int m = 0; m < 3; m++) {
                    mt_problem_key key = {.kind = "mla_decode",
                                          .s = {.d = 576, .dl = 512, .page_size = pages[p], .q_dtype = MT_BF16,
                                                .kv_dtype = kv[k]},
                                          .n_heads = heads[h], .sq = 1};
                    mt_dispatch_table before, after;
                    if (mt_dispatch_build(c, src, n, &key, &t, 132, max_batch[m], MT_DISPATCH_AS_MEASURED,
                                          &before) != MT_OK ||
                        mt_dispatch_build(c, src, n, &key, &t, 132, max_batch[m], MT_DISPATCH_RESCALED, &after) !=
                            MT_OK) {
                        fprintf(stderr, "%s\n", mt_last_error());
                        return 1;
                    }
                    printf("%3d heads, page %2d, %-8s KV, max_batch %4d: %2d keys; variants %2d -> %2d; workspace "
                           "%8.1f -> %6.1f MiB\n",
                           heads[h], pages[p], mt_dtype_name(kv[k]), max_batch[m], before.n_entries,
                           before.n_variants, after.n_variants, at_max_batch(&before) / 1048576.0,
                           mt_dispatch_workspace_bytes(&after) / 1048576.0);
                    mt_dispatch_free(&before);
                    mt_dispatch_free(&after);
                }
    return 0;
}
